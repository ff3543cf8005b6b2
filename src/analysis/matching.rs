//! Matching findings to one another: exact (same file and line or overlapping range) and
//! fuzzy (same file, lines within a tolerance, similar normalized messages).

use crate::finding::Finding;
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

/// Same file, spans within `line_tolerance`, and messages at least `similarity` alike.
pub fn fuzzy_match(a: &Finding, b: &Finding, rule: &MatchRule) -> bool {
    a.file == b.file && span_gap(a.span(), b.span()) <= rule.line_tolerance && message_similarity(&a.message, &b.message) >= rule.similarity
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

/// Greedy one-to-one matching: pairs (i in a, j in b) in order of best similarity first.
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
    let mut used_a = vec![false; a.len()];
    let mut used_b = vec![false; b.len()];
    let mut out = Vec::new();
    for (_, i, j) in candidates {
        if !used_a[i] && !used_b[j] {
            used_a[i] = true;
            used_b[j] = true;
            out.push((i, j));
        }
    }
    out.sort_unstable();
    out
}

/// A short text stating the rule, printed beside results.
pub fn describe_rule(rule: &MatchRule) -> String {
    format!(
        "exact: same file and same line or overlapping range; fuzzy: same file, lines within {} and normalized-Levenshtein message similarity ≥ {:.2}",
        rule.line_tolerance, rule.similarity
    )
}
