//! The matching rules' vocabulary, with nothing of the matching itself: how two texts are
//! compared (normalized Levenshtein, content-word Dice), what counts as evidence, the rules
//! between reports (`MatchRule`) and against an oracle (`OracleRule`), where their thresholds
//! came from, and the rules in words. `matching` applies them; `spec` reads them from a
//! manifest; `match_calibration` chooses them.

use serde::{Deserialize, Serialize};

/// Lowercased words of a message, punctuation dropped, for similarity.
pub fn normalize_message(message: &str) -> String {
    message.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Similarity of two messages in 0..1 (normalized Levenshtein over normalized text).
pub fn message_similarity(a: &str, b: &str) -> f64 {
    strsim::normalized_levenshtein(&normalize_message(a), &normalize_message(b))
}

/// How two texts are compared: findings between runs, or a finding with an oracle description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SimilarityMeasure {
    /// Dice coefficient over content-word stems (stop words and words under three letters
    /// dropped, the rest cut to five letters).
    Tokens,
    /// Normalized Levenshtein over the normalized texts (as A1/A4 use between runs).
    Levenshtein,
}

impl SimilarityMeasure {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "tokens" => Some(Self::Tokens),
            "levenshtein" => Some(Self::Levenshtein),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tokens => "tokens",
            Self::Levenshtein => "levenshtein",
        }
    }

    /// The measure in words, for printed rules.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Tokens => "content-word Dice similarity",
            Self::Levenshtein => "normalized-Levenshtein similarity",
        }
    }

    pub(crate) fn similarity(self, a: &str, b: &str) -> f64 {
        match self {
            Self::Tokens => token_similarity(a, b),
            Self::Levenshtein => message_similarity(a, b),
        }
    }
}

/// Words too common to say anything about which defect a text names.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was", "one", "our", "out", "has", "have", "its", "into", "this",
    "that", "with", "from", "then", "than", "when", "which", "will", "would", "there", "their", "these", "those", "such", "may", "might", "could", "should",
    "does", "did", "each", "every", "also", "only", "instead", "here", "where", "what", "while", "being", "been", "them", "they", "line", "code", "change",
    "changed",
];

/// Content words are cut to this many letters, a crude stemmer (`injection`, `injects` → `injec`).
pub const STEM_LETTERS: usize = 5;

/// The distinct content-word stems of a text: normalized words of three letters or more, stop
/// words dropped, each cut to its first [`STEM_LETTERS`] letters.
pub fn content_words(text: &str) -> std::collections::BTreeSet<String> {
    normalize_message(text).split(' ').filter(|w| w.chars().count() >= 3 && !STOP_WORDS.contains(w)).map(|w| w.chars().take(STEM_LETTERS).collect()).collect()
}

/// Dice coefficient of two texts' content-word stem sets, in 0..1: how much vocabulary a short
/// report shares with a long oracle description, where edit distance says little.
pub fn token_similarity(a: &str, b: &str) -> f64 {
    let (wa, wb) = (content_words(a), content_words(b));
    if wa.is_empty() || wb.is_empty() {
        return 0.0;
    }
    let shared = wa.intersection(&wb).count();
    2.0 * shared as f64 / (wa.len() + wb.len()) as f64
}

/// What a located report needs besides its place to count as `found`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    /// Similarity ≥ threshold, or the same category as the oracle finding.
    SimilarityOrCategory,
    /// Similarity ≥ threshold.
    Similarity,
    /// The same category as the oracle finding.
    Category,
    /// The place alone.
    Location,
    /// Similarity ≥ threshold, or a majority of the manifest's judges say the two texts describe
    /// the same issue (asked, blind, about located pairs that text does not settle whose
    /// similarity is at least the rule's `judge_floor`).
    Judge,
}

impl Evidence {
    pub(crate) const ALL: [Evidence; 5] = [Self::SimilarityOrCategory, Self::Similarity, Self::Category, Self::Location, Self::Judge];

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == text)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::SimilarityOrCategory => "similarity-or-category",
            Self::Similarity => "similarity",
            Self::Category => "category",
            Self::Location => "location",
            Self::Judge => "judge",
        }
    }
}

/// How two findings are judged the same (A1 fuzzy overlap, A4, A8).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MatchRule {
    /// Lines may differ by at most this much.
    pub line_tolerance: u32,
    /// Message similarity (0..1) must reach this.
    pub similarity: f64,
    /// How messages are compared (normalized Levenshtein unless the manifest says otherwise).
    pub measure: SimilarityMeasure,
}

impl Default for MatchRule {
    fn default() -> Self {
        Self { line_tolerance: 1, similarity: 0.6, measure: SimilarityMeasure::Levenshtein }
    }
}

/// Where a matching rule's thresholds came from and how well they agreed with the labels they
/// were chosen on (`runner matching calibrate`): printed beside every score the rule produced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibrated {
    /// Labelled golden-comment cells (PR × tool × golden comment) the thresholds were chosen on.
    pub cells: u32,
    /// Judges (label files) those cells came from.
    pub judges: u32,
    /// Cohen's κ of the rule against the labels, cross-validated over pull requests: the mean
    /// over the judges.
    pub kappa: f64,
    /// The lowest of the judges' cross-validated κ.
    pub kappa_min: f64,
}

/// The default rule's calibration: `results/matching/calibration.json`, written by `runner
/// matching calibrate` on the three judges of the code-review benchmark (sentry, grafana and
/// keycloak); a test checks that the two agree.
pub const DEFAULT_CALIBRATION: Calibrated = Calibrated { cells: 2808, judges: 3, kappa: 0.829, kappa_min: 0.814 };

/// The default rule's similarity threshold (content-word Dice), from the same calibration.
pub const DEFAULT_SIMILARITY: f64 = 0.22;

/// The rule with embeddings (`runner matching evaluate` with an embedder):
/// `results/matching/calibration-embedding.json`, calibrated on the same judges with
/// all-MiniLM-L6-v2 embeddings; a test checks that the two agree.
pub const DEFAULT_EMBEDDING_CALIBRATION: Calibrated = Calibrated { cells: 2808, judges: 3, kappa: 0.844, kappa_min: 0.831 };
/// The similarity threshold of the rule with embeddings.
pub const DEFAULT_EMBEDDING_RULE_SIMILARITY: f64 = 0.24;
/// The embedding-cosine threshold of the rule with embeddings.
pub const DEFAULT_EMBEDDING_SIMILARITY: f64 = 0.65;

/// The automatic matching rule, configured per analysis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OracleRule {
    /// Lines between the reported span and the oracle line or range, at most.
    pub line_tolerance: u32,
    /// Similarity that counts as evidence of the same defect.
    pub similarity: f64,
    /// Similarity that makes a located report `partial` when it is not `found`.
    pub partial_similarity: f64,
    pub measure: SimilarityMeasure,
    pub evidence: Evidence,
    /// Cosine similarity of the two texts' embeddings that also counts as evidence, where the
    /// embeddings are at hand (`runner matching evaluate` with an embedder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_similarity: Option<f64>,
    /// Where the thresholds came from, when a calibration chose them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated: Option<Calibrated>,
    /// With [`Evidence::Judge`]: the least similarity of a pair the judges are asked about
    /// (`judge-floor`; [`DEFAULT_JUDGE_FLOOR`] when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_floor: Option<f64>,
}

/// The least similarity of a pair the judges are asked about, unless `judge-floor` says.
pub const DEFAULT_JUDGE_FLOOR: f64 = 0.05;

/// How a rule's description names the jury until the judges' names are at hand
/// (`matching::with_jury` names them).
pub const JURY_PLACEHOLDER: &str = "the manifest's judges";

impl Default for OracleRule {
    fn default() -> Self {
        Self {
            line_tolerance: 1,
            similarity: DEFAULT_SIMILARITY,
            partial_similarity: 0.15,
            measure: SimilarityMeasure::Tokens,
            evidence: Evidence::Similarity,
            embedding_similarity: None,
            calibrated: Some(DEFAULT_CALIBRATION),
            judge_floor: None,
        }
    }
}

impl OracleRule {
    /// The default rule where embeddings are at hand: content-word Dice or embedding cosine,
    /// each at its calibrated threshold.
    pub fn default_with_embeddings() -> Self {
        Self {
            similarity: DEFAULT_EMBEDDING_RULE_SIMILARITY,
            embedding_similarity: Some(DEFAULT_EMBEDDING_SIMILARITY),
            calibrated: Some(DEFAULT_EMBEDDING_CALIBRATION),
            ..Self::default()
        }
    }

    /// The least similarity of a pair the judges are asked about.
    pub(crate) fn judge_floor(&self) -> f64 {
        self.judge_floor.unwrap_or(DEFAULT_JUDGE_FLOOR)
    }

    /// The text evidence in words: the measure and threshold, the embedding threshold, and
    /// the judges where the rule asks them.
    pub(crate) fn describe_text_evidence(&self) -> String {
        let lexical = format!("{} (message and suggestion vs. the oracle description) ≥ {:.2}", self.measure.describe(), self.similarity);
        let text = match self.embedding_similarity {
            Some(e) => format!("{lexical} or embedding cosine ≥ {e:.2}"),
            None => lexical,
        };
        if self.evidence == Evidence::Judge {
            format!(
                "{text}, or a majority of {JURY_PLACEHOLDER} say the two describe the same issue (asked blind about pairs with similarity ≥ {:.2} that text does not settle; a tie is not a find)",
                self.judge_floor()
            )
        } else {
            text
        }
    }

    /// Where the thresholds came from, in words.
    pub(crate) fn describe_source(&self) -> String {
        match self.calibrated {
            Some(c) => format!(
                "thresholds calibrated on {} golden-comment cells of {} judges, κ {:.2} cross-validated over pull requests (lowest judge {:.2})",
                group_thousands(u64::from(c.cells)),
                c.judges,
                c.kappa,
                c.kappa_min
            ),
            None => "thresholds set by hand, not calibrated against labels".to_string(),
        }
    }

    /// The rule as it applies at change level (oracle findings without a file), in words.
    pub fn describe_change_level(&self) -> String {
        format!(
            "found = {}, by text alone; one candidate per golden comment, one to one, the strongest pair first; {}",
            self.describe_text_evidence(),
            self.describe_source()
        )
    }

    /// The rule in words, printed beside every score it produced.
    pub fn describe(&self) -> String {
        let evidence = match self.evidence {
            Evidence::SimilarityOrCategory => format!("{} or the same category", self.describe_text_evidence()),
            Evidence::Similarity | Evidence::Judge => self.describe_text_evidence(),
            Evidence::Category => "the same category as the oracle finding".to_string(),
            Evidence::Location => "nothing more".to_string(),
        };
        let partial = if self.evidence == Evidence::Location {
            String::new()
        } else {
            format!("; partial = located with similarity ≥ {:.2} but without that evidence", self.partial_similarity)
        };
        format!(
            "automatic matching: found = same file, reported lines within {} of the oracle line or range, and {evidence}{partial}; one report per oracle finding (best first); unmatched reports are extras, rejected (noise) unless adjudicated real; {}",
            self.line_tolerance,
            self.describe_source()
        )
    }
}

/// `2808` → `2,808`.
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
