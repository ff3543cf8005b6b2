//! Matching findings to one another: exact (same file and line or overlapping range) and
//! fuzzy (same file, lines within a tolerance, similar normalized messages).

use crate::finding::Finding;
use serde::{Deserialize, Serialize};
use crate::manifest::MatchRule;

/// Lowercased words of a message, punctuation dropped, for similarity.
pub fn normalize_message(message: &str) -> String {
    message
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
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

    pub fn similarity(self, a: &str, b: &str) -> f64 {
        match self {
            Self::Tokens => token_similarity(a, b),
            Self::Levenshtein => message_similarity(a, b),
        }
    }
}

/// Same file, and the same line or overlapping ranges.
pub fn exact_match(a: &Finding, b: &Finding) -> bool {
    let (a0, a1) = a.span();
    let (b0, b1) = b.span();
    a.file == b.file && a0 <= b1 && b0 <= a1
}

/// Lines between two inclusive spans: 0 when they overlap.
pub fn span_gap((a0, a1): (u32, u32), (b0, b1): (u32, u32)) -> u32 {
    b0.saturating_sub(a1).max(a0.saturating_sub(b1))
}

/// Same file, spans within `line_tolerance`, and messages at least `similarity` alike by the
/// rule's measure.
pub fn fuzzy_match(a: &Finding, b: &Finding, rule: &MatchRule) -> bool {
    a.file == b.file && span_gap(a.span(), b.span()) <= rule.line_tolerance && rule.measure.similarity(&a.message, &b.message) >= rule.similarity
}

/// Words too common to say anything about which defect a text names.
const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was", "one", "our", "out", "has", "have", "its",
    "into", "this", "that", "with", "from", "then", "than", "when", "which", "will", "would", "there", "their", "these", "those", "such",
    "may", "might", "could", "should", "does", "did", "each", "every", "also", "only", "instead", "here", "where", "what", "while", "being",
    "been", "them", "they", "line", "code", "change", "changed",
];

/// Content words are cut to this many letters, a crude stemmer (`injection`, `injects` → `injec`).
pub const STEM_LETTERS: usize = 5;

/// The distinct content-word stems of a text: normalized words of three letters or more, stop
/// words dropped, each cut to its first [`STEM_LETTERS`] letters.
pub fn content_words(text: &str) -> std::collections::BTreeSet<String> {
    normalize_message(text)
        .split(' ')
        .filter(|w| w.chars().count() >= 3 && !STOP_WORDS.contains(w))
        .map(|w| w.chars().take(STEM_LETTERS).collect())
        .collect()
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

/// One-to-one matching: pairs (i in a, j in b), taken greedily in order of best similarity
/// first, then extended along augmenting paths until no more pairs fit. The number of pairs
/// is therefore the maximum possible, and the same whichever side is passed first.
pub fn match_pairs(a: &[Finding], b: &[Finding], matches: impl Fn(&Finding, &Finding) -> bool) -> Vec<(usize, usize)> {
    let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
    for (i, fa) in a.iter().enumerate() {
        for (j, fb) in b.iter().enumerate() {
            if matches(fa, fb) {
                candidates.push((message_similarity(&fa.message, &fb.message), i, j));
            }
        }
    }
    candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut partner_of_a: Vec<Option<usize>> = vec![None; a.len()];
    let mut partner_of_b: Vec<Option<usize>> = vec![None; b.len()];
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); a.len()];
    for &(_, i, j) in &candidates {
        edges[i].push(j);
        if partner_of_a[i].is_none() && partner_of_b[j].is_none() {
            partner_of_a[i] = Some(j);
            partner_of_b[j] = Some(i);
        }
    }
    for i in 0..a.len() {
        if partner_of_a[i].is_none() {
            let mut seen = vec![false; b.len()];
            augment(i, &edges, &mut seen, &mut partner_of_a, &mut partner_of_b);
        }
    }
    partner_of_a.iter().enumerate().filter_map(|(i, j)| j.map(|j| (i, j))).collect()
}

/// Kuhn's augmenting-path step: tries to give `i` a partner, re-pairing others as needed.
fn augment(i: usize, edges: &[Vec<usize>], seen: &mut [bool], partner_of_a: &mut [Option<usize>], partner_of_b: &mut [Option<usize>]) -> bool {
    for &j in &edges[i] {
        if seen[j] {
            continue;
        }
        seen[j] = true;
        let free = match partner_of_b[j] {
            None => true,
            Some(k) => augment(k, edges, seen, partner_of_a, partner_of_b),
        };
        if free {
            partner_of_a[i] = Some(j);
            partner_of_b[j] = Some(i);
            return true;
        }
    }
    false
}

/// A short text stating the rule, printed beside results.
pub fn describe_rule(rule: &MatchRule) -> String {
    format!(
        "exact: same file and same line or overlapping range; fuzzy: same file, lines within {} and {} of messages ≥ {:.2}",
        rule.line_tolerance,
        rule.measure.describe(),
        rule.similarity
    )
}

/// The fuzzy half of [`describe_rule`], for analyses that match fuzzily only.
pub fn describe_fuzzy_rule(rule: &MatchRule) -> String {
    format!(
        "fuzzy: same file, lines within {} and {} of messages ≥ {:.2}, matched one to one",
        rule.line_tolerance,
        rule.measure.describe(),
        rule.similarity
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::test_support::finding;

    #[test]
    fn matching_is_maximum_where_greedy_falls_short() {
        // a0 (line 5) fits b0 (4) and b1 (6); a1 (line 3) fits only b0. Greedy takes a0–b0 and
        // leaves a1 alone; the augmenting step re-pairs a0 with b1.
        let a = [finding("f", 5, "same text"), finding("f", 3, "same text")];
        let b = [finding("f", 4, "same text"), finding("f", 6, "same text")];
        let rule = MatchRule::default();
        assert_eq!(match_pairs(&a, &b, |x, y| fuzzy_match(x, y, &rule)), vec![(0, 1), (1, 0)]);
        assert_eq!(match_pairs(&b, &a, |x, y| fuzzy_match(x, y, &rule)).len(), 2);
    }

    #[test]
    fn best_similarity_pairs_first() {
        let a = [finding("f", 1, "null pointer dereference here")];
        let b = [finding("f", 1, "unrelated style nit about names"), finding("f", 1, "null pointer dereference")];
        assert_eq!(match_pairs(&a, &b, exact_match), vec![(0, 1)]);
    }
}
