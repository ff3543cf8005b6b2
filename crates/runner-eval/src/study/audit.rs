//! Seed 000's H6 false-positive audit: the findings people labelled `false_positive` or
//! `wrong_suggestion` in H1, clustered by message similarity, as candidate patterns a reviewer
//! could learn to suppress — a CSV of `category, message_pattern, reason, note` (with how many
//! findings and which sheet items each pattern stands for).
//!
//! Clustering: findings are taken in item order; within one (category, reason) a finding joins
//! the first cluster whose first message is at least `similarity` alike (normalized Levenshtein
//! over lowercased words, as A1 and A4 compare messages), else it starts a cluster. A cluster's
//! `message_pattern` is the words every member shares, in order, with `*` where any member has
//! other words (`line: 12`, `line: 13` → `line *`).

use super::adjudication::AdjudicationError;
use super::findings::{self, RowText};
use crate::analysis::matching::matcher::{message_similarity, normalize_message};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The H1 labels H6 audits.
pub const AUDITED: [&str; 2] = ["false_positive", "wrong_suggestion"];
/// The default similarity for two messages to share a pattern (A1/A4's default).
pub const DEFAULT_SIMILARITY: f64 = 0.6;
/// The CSV's columns.
pub const COLUMNS: [&str; 6] = ["category", "message_pattern", "reason", "note", "findings", "items"];

/// One audited finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Audited {
    pub item: String,
    pub category: String,
    pub message: String,
    /// Its H1 label after aggregation: `false_positive` or `wrong_suggestion`.
    pub reason: String,
    pub notes: Vec<String>,
}

/// A candidate pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pattern {
    pub category: String,
    pub message_pattern: String,
    pub reason: String,
    /// The raters' most frequent note among the members (the first such, in item order).
    pub note: String,
    pub items: Vec<String>,
}

/// Clusters `audited` (in its order) into patterns, largest first (ties in first-item order).
pub fn cluster(audited: &[Audited], similarity: f64) -> Vec<Pattern> {
    let mut clusters: Vec<Vec<&Audited>> = Vec::new();
    for a in audited {
        let home =
            clusters.iter_mut().find(|c| c[0].category == a.category && c[0].reason == a.reason && message_similarity(&c[0].message, &a.message) >= similarity);
        match home {
            Some(c) => c.push(a),
            None => clusters.push(vec![a]),
        }
    }
    let mut patterns: Vec<Pattern> = clusters
        .iter()
        .map(|c| {
            let messages: Vec<&str> = c.iter().map(|a| a.message.as_str()).collect();
            let mut counts: Vec<(&str, usize)> = Vec::new();
            for n in c.iter().flat_map(|a| a.notes.iter()) {
                match counts.iter_mut().find(|(x, _)| *x == n.as_str()) {
                    Some(e) => e.1 += 1,
                    None => counts.push((n, 1)),
                }
            }
            let top = counts.iter().map(|(_, k)| *k).max().unwrap_or(0);
            let note = counts.iter().find(|(_, k)| *k == top).map(|(n, _)| n.to_string()).unwrap_or_default();
            Pattern {
                category: c[0].category.clone(),
                message_pattern: pattern_of(&messages),
                reason: c[0].reason.clone(),
                note,
                items: c.iter().map(|a| a.item.clone()).collect(),
            }
        })
        .collect();
    patterns.sort_by_key(|p| std::cmp::Reverse(p.items.len()));
    patterns
}

/// The words every message shares, in order, with `*` for any other words between, before or
/// after them; `*` alone when they share none.
pub fn pattern_of(messages: &[&str]) -> String {
    let words: Vec<Vec<String>> = messages.iter().map(|m| normalize_message(m).split(' ').filter(|w| !w.is_empty()).map(str::to_string).collect()).collect();
    let Some(first) = words.first() else { return String::new() };
    let common = words[1..].iter().fold(first.clone(), |acc, w| lcs(&acc, w));
    if common.is_empty() {
        return "*".into();
    }
    // gap[i]: some message has words before common[0] (i = 0), between common[i−1] and
    // common[i], or after the last (i = len).
    let mut gap = vec![false; common.len() + 1];
    for w in &words {
        let mut at = 0;
        let mut previous: Option<usize> = None;
        for (i, c) in common.iter().enumerate() {
            let Some(found) = w[at..].iter().position(|x| x == c).map(|p| p + at) else { break };
            let start = previous.map_or(0, |p| p + 1);
            if found > start {
                gap[i] = true;
            }
            previous = Some(found);
            at = found + 1;
        }
        if previous.is_some_and(|p| p + 1 < w.len()) {
            gap[common.len()] = true;
        }
    }
    let mut out: Vec<&str> = Vec::new();
    for (i, c) in common.iter().enumerate() {
        if gap[i] {
            out.push("*");
        }
        out.push(c);
    }
    if gap[common.len()] {
        out.push("*");
    }
    out.join(" ")
}

/// A longest common subsequence of two word lists (the earliest in `a` among equals).
fn lcs(a: &[String], b: &[String]) -> Vec<String> {
    let (n, m) = (a.len(), b.len());
    let mut t = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i][j] = if a[i] == b[j] { t[i + 1][j + 1] + 1 } else { t[i + 1][j].max(t[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        if a[i] == b[j] {
            out.push(a[i].clone());
            i += 1;
            j += 1;
        } else if t[i + 1][j] >= t[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The audited findings of H1 sheets: those whose aggregated label is one of [`AUDITED`].
pub fn audited(decided: &BTreeMap<String, String>, text: &BTreeMap<String, RowText>) -> Vec<Audited> {
    decided
        .iter()
        .filter(|(_, label)| AUDITED.contains(&label.as_str()))
        .map(|(item, label)| {
            let t = text.get(item).cloned().unwrap_or_default();
            Audited { item: item.clone(), category: t.category, message: t.message, reason: label.clone(), notes: t.notes }
        })
        .collect()
}

/// Reads H1 sheets with their key and clusters the audited findings.
pub fn audit(sheets: &[PathBuf], key: &Path, similarity: f64) -> Result<(Vec<Pattern>, usize), AdjudicationError> {
    let (k, result, text) = findings::import_with_text(sheets, key)?;
    if k.study != findings::Study::H1 {
        return Err(AdjudicationError::Invalid {
            path: key.to_path_buf(),
            problems: vec![format!("`{}` is not the key of an H1 sheet: H6 audits H1's false_positive and wrong_suggestion labels", key.display())],
        });
    }
    let audited = audited(&result.decided, &text);
    Ok((cluster(&audited, similarity), audited.len()))
}

/// The patterns as CSV (the `csv` crate; items joined with spaces).
pub fn to_csv(patterns: &[Pattern]) -> Result<String, csv::Error> {
    let rows: Vec<Vec<String>> = patterns
        .iter()
        .map(|p| vec![p.category.clone(), p.message_pattern.clone(), p.reason.clone(), p.note.clone(), p.items.len().to_string(), p.items.join(" ")])
        .collect();
    super::sheet::write(&COLUMNS, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(item: &str, category: &str, message: &str, reason: &str, note: &str) -> Audited {
        Audited { item: item.into(), category: category.into(), message: message.into(), reason: reason.into(), notes: vec![note.into()] }
    }

    #[test]
    fn patterns_keep_the_shared_words_in_order() {
        assert_eq!(pattern_of(&["line: 12", "line: 13", "line: 14"]), "line *");
        assert_eq!(pattern_of(&["the line is invalid", "The line is invalid."]), "the line is invalid");
        assert_eq!(pattern_of(&["No valid name for 'root'", "No valid name for 'base'"]), "no valid name for *");
        assert_eq!(pattern_of(&["the problem was a bug", "the problem was a security issue"]), "the problem was a *");
        assert_eq!(pattern_of(&["a b c", "x a c y"]), "* a * c *");
        assert_eq!(pattern_of(&["one", "two"]), "*");
        assert_eq!(pattern_of(&["just one message"]), "just one message");
    }

    #[test]
    fn findings_cluster_within_category_and_reason_by_similarity() {
        let audited = [
            a("S1", "bug", "line: 12", "false_positive", "names nothing"),
            a("S2", "bug", "line: 13", "false_positive", "names nothing"),
            a("S3", "security", "line: 14", "false_positive", "other category"),
            a("S4", "bug", "line: 15", "wrong_suggestion", "other reason"),
            a("S5", "bug", "Errors are caught broadly and may be swallowed.", "false_positive", "re-raises"),
            a("S6", "bug", "line: 16", "false_positive", "says nothing"),
        ];
        let patterns = cluster(&audited, DEFAULT_SIMILARITY);
        // "line 12" vs "line 13": Levenshtein 1 of 7 characters → 0.857 ≥ 0.6.
        assert_eq!(patterns.len(), 4, "{patterns:#?}");
        assert_eq!(patterns[0].items, ["S1", "S2", "S6"]);
        assert_eq!((patterns[0].message_pattern.as_str(), patterns[0].note.as_str()), ("line *", "names nothing"));
        assert_eq!(patterns.iter().map(|p| p.items.join(",")).collect::<Vec<_>>(), ["S1,S2,S6", "S3", "S4", "S5"]);
        let csv = to_csv(&patterns).expect("csv");
        assert_eq!(csv.lines().next(), Some("category,message_pattern,reason,note,findings,items"));
        assert_eq!(csv.lines().nth(1), Some("bug,line *,false_positive,names nothing,3,S1 S2 S6"));
    }

    #[test]
    fn only_false_positives_and_wrong_suggestions_are_audited() {
        let decided = BTreeMap::from([
            ("S1".to_string(), "actionable".to_string()),
            ("S2".to_string(), "false_positive".to_string()),
            ("S3".to_string(), "tied".to_string()),
            ("S4".to_string(), "wrong_suggestion".to_string()),
            ("S5".to_string(), "out_of_scope".to_string()),
        ]);
        let text = BTreeMap::from([("S2".to_string(), RowText { category: "bug".into(), message: "m".into(), notes: vec!["n".into()] })]);
        let got = audited(&decided, &text);
        assert_eq!(got.iter().map(|a| a.item.as_str()).collect::<Vec<_>>(), ["S2", "S4"]);
        assert_eq!((got[0].category.as_str(), got[0].notes.len()), ("bug", 1));
    }
}
