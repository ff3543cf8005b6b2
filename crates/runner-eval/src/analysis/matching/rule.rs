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
    // Equal texts are equal after normalizing: 1 without the quadratic distance.
    if a == b {
        return 1.0;
    }
    normalized_similarity(&normalize_message(a), &normalize_message(b))
}

/// [`message_similarity`] of two texts already normalized ([`normalize_message`]): strsim's
/// normalized Levenshtein, `1 - distance / longer length` in characters.
pub fn normalized_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    match ascii_levenshtein(a, b) {
        // Both ASCII, so characters are bytes; not both empty, since they differ.
        Some(distance) => 1.0 - (distance as f64) / (a.len().max(b.len()) as f64),
        None => strsim::normalized_levenshtein(a, b),
    }
}

/// The Levenshtein distance of two ASCII texts, the shorter of them at most 64 bytes, by
/// Myers' bit-parallel algorithm (Hyyrö's formulation: one machine word holds a column of the
/// distance table, so the cost is linear in the longer text); `None` for any other pair, which
/// the caller measures the usual way. Equal to `strsim::levenshtein` wherever it answers
/// (tested against it).
fn ascii_levenshtein(a: &str, b: &str) -> Option<usize> {
    let (pattern, text) = if a.len() <= b.len() { (a.as_bytes(), b.as_bytes()) } else { (b.as_bytes(), a.as_bytes()) };
    if pattern.len() > 64 || !pattern.is_ascii() || !text.is_ascii() {
        return None;
    }
    let m = pattern.len();
    if m == 0 {
        return Some(text.len());
    }
    let mut peq = [0u64; 128];
    for (i, &c) in pattern.iter().enumerate() {
        peq[usize::from(c)] |= 1 << i;
    }
    let last = 1u64 << (m - 1);
    let (mut pv, mut mv, mut score) = (!0u64, 0u64, m);
    for &c in text {
        let eq = peq[usize::from(c)];
        let xv = eq | mv;
        let xh = ((eq & pv).wrapping_add(pv) ^ pv) | eq;
        let mut ph = mv | !(xh | pv);
        let mut mh = pv & xh;
        if ph & last != 0 {
            score += 1;
        } else if mh & last != 0 {
            score -= 1;
        }
        ph = (ph << 1) | 1;
        mh <<= 1;
        pv = mh | !(xv | ph);
        mv = ph & xv;
    }
    Some(score)
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
    /// How the rule agreed with judges on projects the calibration never saw, where that was
    /// measured (the calibration file's `held_out`).
    #[serde(skip)]
    pub unseen: Option<Unseen>,
    /// How sure each decision is: the calibration file's `probability` model.
    #[serde(skip)]
    pub decisions: Option<DecisionModel>,
}

/// A rule's agreement with judges on projects its thresholds were not chosen on (the
/// calibration file's `held_out`, figures measured where the judgements are not distributed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Unseen {
    /// Projects measured.
    pub projects: u32,
    /// Golden-comment cells per judge.
    pub cells: u32,
    /// The lowest and highest of the rule's κ against each judge there.
    pub kappa_low: f64,
    pub kappa_high: f64,
    /// The lowest and highest κ between two judges there, where measured.
    pub judges_low: Option<f64>,
    pub judges_high: Option<f64>,
    /// How much higher per-tool recall came out under the rule than under the judges, where
    /// measured (positive: the rule matches more than the judges).
    pub recall_bias: Option<f64>,
    /// The lowest and highest Spearman ρ between per-tool recall under the rule and under each
    /// judge, where measured.
    pub rho_low: Option<f64>,
    pub rho_high: Option<f64>,
}

impl Unseen {
    /// The figures in words, for the rule line.
    fn describe(&self) -> String {
        let judges = match (self.judges_low, self.judges_high) {
            (Some(l), Some(h)) => format!("; the judges among themselves {}", range(l, h)),
            _ => String::new(),
        };
        let mut out = format!(
            "on {} project{} calibration never saw, κ {} against each judge ({} cells each{judges})",
            self.projects,
            if self.projects == 1 { "" } else { "s" },
            range(self.kappa_low, self.kappa_high),
            group_thousands(u64::from(self.cells))
        );
        if let Some(bias) = self.recall_bias.filter(|b| *b > 0.0) {
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!(": there it finds more than the judges, per-tool recall about {bias:.2} high"));
        }
        if let (Some(l), Some(h)) = (self.rho_low, self.rho_high) {
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!(", while tools rank alike (Spearman ρ {})", range(l, h)));
        }
        out
    }
}

/// `0.753` and `0.779` → `0.75–0.78`; one value when both round alike.
fn range(low: f64, high: f64) -> String {
    let (l, h) = (format!("{low:.2}"), format!("{high:.2}"));
    if l == h {
        l
    } else {
        format!("{l}–{h}")
    }
}

/// The features a decision's probability is read from (`probability::features`): the
/// similarity of the report the one-to-one pass gave the oracle finding, whether it has one
/// at its place, that similarity's margin over the oracle finding's next most similar report,
/// and the report's rank among the oracle finding's reports (1: its most similar one; more
/// where a more similar one went to another oracle finding).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecisionFeatures {
    pub similarity: f64,
    pub located: bool,
    pub margin: f64,
    pub rank: u32,
}

impl DecisionFeatures {
    /// An oracle finding with no report at its place.
    pub const UNLOCATED: Self = Self { similarity: 0.0, located: false, margin: 0.0, rank: 0 };

    /// The model's inputs: 1, similarity, margin, ln rank.
    pub fn vector(&self) -> [f64; DECISION_TERMS] {
        [1.0, self.similarity, self.margin, libm::log(f64::from(self.rank.max(1)))]
    }
}

/// Terms of the decision model: intercept, similarity, margin, ln rank.
pub const DECISION_TERMS: usize = 4;

/// Bins of a calibration curve (predicted probability in tenths).
pub const CURVE_BINS: usize = 10;

/// One bin of a calibration curve: the located decisions whose predicted probability fell in
/// it, their mean prediction and the share the judges' majority found.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CurveBin {
    pub cells: u32,
    pub predicted: Option<f64>,
    pub observed: Option<f64>,
}

/// How sure a matching decision is: the probability that the judges' majority calls an oracle
/// finding found, a logistic model of its [`DecisionFeatures`] fitted by `runner matching
/// calibrate` on the labelled cells (an oracle finding without a report at its place is not
/// found, certainly), with its out-of-fold accuracy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DecisionModel {
    /// Intercept, similarity, margin, ln rank.
    pub coefficients: [f64; DECISION_TERMS],
    /// Located cells the model was fitted on.
    pub cells: u32,
    /// Brier score of the out-of-fold probabilities on those cells.
    pub brier: f64,
    /// Brier score of the rule's own found / not found on the same cells (as 1 and 0).
    pub brier_decisions: f64,
    /// The out-of-fold calibration curve, in tenths of predicted probability.
    pub curve: [CurveBin; CURVE_BINS],
}

impl DecisionModel {
    /// The probability that the judges' majority calls the oracle finding found.
    pub fn probability(&self, f: &DecisionFeatures) -> f64 {
        if !f.located {
            return 0.0;
        }
        let z: f64 = self.coefficients.iter().zip(f.vector()).map(|(c, x)| c * x).sum();
        logistic(z)
    }
}

/// 1 / (1 + e^−z), without overflow.
pub fn logistic(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + libm::exp(-z))
    } else {
        let e = libm::exp(z);
        e / (1.0 + e)
    }
}

/// The default rule's calibration: `results/matching/calibration.json`, written by `runner
/// matching calibrate` on the three judges of the code-review benchmark (sentry, grafana and
/// keycloak); a test checks that the two agree.
pub const DEFAULT_CALIBRATION: Calibrated =
    Calibrated { cells: 2808, judges: 3, kappa: 0.829, kappa_min: 0.814, unseen: Some(DEFAULT_UNSEEN), decisions: Some(DEFAULT_DECISIONS) };

/// The default rule on the two projects of the code-review benchmark its calibration never
/// saw (discourse and cal.com, 708 golden-comment cells per judge): `results/matching/held-out.json`.
pub const DEFAULT_UNSEEN: Unseen = Unseen {
    projects: 2,
    cells: 708,
    kappa_low: 0.753,
    kappa_high: 0.779,
    judges_low: Some(0.888),
    judges_high: Some(0.918),
    recall_bias: Some(0.05),
    rho_low: Some(0.95),
    rho_high: Some(0.97),
};

/// The default rule's decision model, from the same calibration file.
pub const DEFAULT_DECISIONS: DecisionModel = DecisionModel {
    coefficients: [-4.628413, 20.819511, -1.950133, 0.839224],
    cells: 1864,
    brier: 0.0862,
    brier_decisions: 0.1068,
    curve: [
        CurveBin { cells: 516, predicted: Some(0.04), observed: Some(0.056) },
        CurveBin { cells: 190, predicted: Some(0.142), observed: Some(0.111) },
        CurveBin { cells: 103, predicted: Some(0.246), observed: Some(0.165) },
        CurveBin { cells: 71, predicted: Some(0.35), observed: Some(0.324) },
        CurveBin { cells: 57, predicted: Some(0.447), observed: Some(0.404) },
        CurveBin { cells: 62, predicted: Some(0.553), observed: Some(0.677) },
        CurveBin { cells: 54, predicted: Some(0.656), observed: Some(0.759) },
        CurveBin { cells: 76, predicted: Some(0.751), observed: Some(0.829) },
        CurveBin { cells: 123, predicted: Some(0.853), observed: Some(0.846) },
        CurveBin { cells: 612, predicted: Some(0.975), observed: Some(0.969) },
    ],
};

/// The default rule's similarity threshold (content-word Dice), from the same calibration.
pub const DEFAULT_SIMILARITY: f64 = 0.22;

/// The rule with embeddings (`runner matching evaluate` with an embedder):
/// `results/matching/calibration-embedding.json`, calibrated on the same judges with
/// all-MiniLM-L6-v2 embeddings; a test checks that the two agree.
pub const DEFAULT_EMBEDDING_CALIBRATION: Calibrated =
    Calibrated { cells: 2808, judges: 3, kappa: 0.844, kappa_min: 0.831, unseen: Some(DEFAULT_EMBEDDING_UNSEEN), decisions: None };

/// The rule with embeddings on the projects its calibration never saw: lower than the default
/// rule's there (`results/matching/held-out-embedding.json`).
pub const DEFAULT_EMBEDDING_UNSEEN: Unseen = Unseen {
    projects: 2,
    cells: 708,
    kappa_low: 0.725,
    kappa_high: 0.737,
    judges_low: Some(0.888),
    judges_high: Some(0.918),
    recall_bias: None,
    rho_low: None,
    rho_high: None,
};
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
    /// With [`Evidence::Judge`]: the judges are asked only about the borderline decisions
    /// (`judge-pairs = "borderline"`: each oracle finding's one-to-one pair whose probability
    /// under the calibration's decision model is borderline), and their majority settles
    /// them either way; the words settle the rest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judge_borderline: bool,
}

/// A decision is borderline when its probability lies in [BORDERLINE, 1 − BORDERLINE]: the
/// decisions a verdict's fragility counts, and those `judge-pairs = "borderline"` sends to
/// the judges.
pub const BORDERLINE: f64 = 0.2;

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
            judge_borderline: false,
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
        if self.evidence == Evidence::Judge && self.judge_borderline {
            format!(
                "{text}, except where the decision is borderline (probability {:.1}–{:.1} under the calibration's decision model, for each oracle finding's one-to-one report): there a majority of {JURY_PLACEHOLDER} decide whether the two describe the same issue (asked blind; a tie is not a find)",
                BORDERLINE,
                1.0 - BORDERLINE
            )
        } else if self.evidence == Evidence::Judge {
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
            Some(c) => {
                let mut out = format!(
                    "thresholds calibrated on {} golden-comment cells of {} judges, κ {:.2} cross-validated over pull requests (lowest judge {:.2})",
                    group_thousands(u64::from(c.cells)),
                    c.judges,
                    c.kappa,
                    c.kappa_min
                );
                if let Some(unseen) = &c.unseen {
                    out.push_str("; ");
                    out.push_str(&unseen.describe());
                }
                out
            }
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

/// What a calibration's cross-validation holds out together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FoldBy {
    /// Five folds of pull requests (`calibration::FOLDS`).
    PullRequest,
    /// One fold per project (leave one project out): how well thresholds carry to a project
    /// they were not chosen on.
    Project,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_bit_parallel_distance_equals_strsims_on_random_texts() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut answered = 0;
        for _ in 0..20_000 {
            // A small alphabet, so texts share letters and runs; lengths across the 64-byte edge.
            let text = |rng: &mut rand_chacha::ChaCha8Rng| -> String {
                let len = rng.random_range(0..90);
                (0..len).map(|_| b"abcd e"[rng.random_range(0..6)] as char).collect()
            };
            let (a, b) = (text(&mut rng), text(&mut rng));
            if let Some(distance) = ascii_levenshtein(&a, &b) {
                answered += 1;
                assert_eq!(distance, strsim::levenshtein(&a, &b), "{a:?} {b:?}");
            }
            assert_eq!(normalized_similarity(&a, &b).to_bits(), strsim::normalized_levenshtein(&a, &b).to_bits(), "{a:?} {b:?}");
        }
        assert!(answered > 10_000, "most pairs have a side of at most 64 bytes: {answered}");
        // Outside ASCII the usual measure answers, in characters.
        assert_eq!(ascii_levenshtein("naïve", "naive"), None);
        assert_eq!(normalized_similarity("naïve", "naive"), strsim::normalized_levenshtein("naïve", "naive"));
        assert_eq!(ascii_levenshtein("", "abc"), Some(3));
        assert_eq!(ascii_levenshtein("kitten", "sitting"), Some(3));
    }
}
