//! Blind, normalized, shuffled presentation of a run's findings to a judge.
//!
//! A [`BlindItem`] holds what a judge may see of one finding: where it points, what it says,
//! and the diff around that place. The type has no field for the reviewer, its model, the
//! cell, the repeat or the subject, so none of them can reach a judge's prompt. Items are
//! shuffled with a recorded seed and numbered after the shuffle (`item-1`, `item-2`, …), so
//! neither ids nor order reveal which run or reviewer a finding came from.
//!
//! Normalization (version [`BLIND_VERSION`], part of every judge's fingerprint):
//! - `file`: trimmed, at most [`FILE_MAX_CHARS`] characters;
//! - `message` and `suggestion`: trimmed, runs of white space collapsed to one space (stet's
//!   rule, [`crate::finding::collapse_whitespace`]), at most [`MESSAGE_MAX_CHARS`] characters
//!   (cut at a character boundary, ending `…`); an empty suggestion is none;
//! - `line`: the finding's anchor line (range start, else line, else 1);
//! - `context`: the hunks of the finding's file whose new-side span, widened by
//!   [`CONTEXT_SLACK`] lines, holds the line (the file's nearest hunk when none does), each
//!   as `File `path`:` and its lines numbered on the new side (the LLM reviewer's format); a
//!   hunk longer than [`CONTEXT_MAX_LINES`] lines is cut to that many around the line; the
//!   whole at most [`CONTEXT_MAX_CHARS`] characters. A file not in the diff gives a one-line
//!   note saying so.

use crate::finding::{collapse_whitespace, Finding};
use crate::reviewer::llm::prompt::numbered;
use crate::subject::diff::Hunk;
use crate::subject::Subject;
use rand::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// Version of the normalization and context rules above.
pub const BLIND_VERSION: &str = "blind-2";
pub(crate) const FILE_MAX_CHARS: usize = 300;
pub(crate) const MESSAGE_MAX_CHARS: usize = 1000;
/// Lines either side of a hunk's new-side span that still count as "around" it.
pub(crate) const CONTEXT_SLACK: u32 = 3;
pub(crate) const CONTEXT_MAX_LINES: usize = 24;
pub(crate) const CONTEXT_MAX_CHARS: usize = 2400;

/// One finding as a judge sees it. Nothing here names who or what produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlindItem {
    /// Anonymous, assigned after the shuffle (`item-7`); never shown to the judge.
    pub id: String,
    pub file: String,
    pub line: u32,
    pub message: String,
    pub suggestion: Option<String>,
    /// The diff hunk(s) around the line.
    pub context: String,
}

impl BlindItem {
    /// blake3 over what reaches a judge's prompt (everything but `id`), for cache keys: the
    /// same finding judged again under another shuffle hits the cache.
    pub fn content_hash(&self) -> String {
        let text = serde_json::json!([BLIND_VERSION, self.file, self.line, self.message, self.suggestion, self.context]).to_string();
        blake3::hash(text.as_bytes()).to_hex().to_string()
    }
}

/// Trims, collapses white space and caps `text` at `max` characters (ending `…` when cut).
pub(crate) fn normalize_text(text: &str, max: usize) -> String {
    cap(&collapse_whitespace(text), max)
}

fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The blind items of a run's findings over `subject`, in a shuffle seeded by `seed`, each
/// with the index of its finding in `findings` so that verdicts map back.
pub fn blind_items(findings: &[Finding], subject: &Subject, seed: u64) -> Vec<(usize, BlindItem)> {
    let mut items: Vec<(usize, BlindItem)> = findings.iter().enumerate().map(|(i, f)| (i, blind_item(f, subject))).collect();
    shuffle(&mut items, seed);
    for (n, (_, item)) in items.iter_mut().enumerate() {
        item.id = format!("item-{}", n + 1);
    }
    items
}

/// Fisher–Yates over ChaCha8 seeded with `seed`, drawing `next_u64() % (i + 1)`: written out
/// here so the order depends only on the seed and ChaCha's stream, not on how a `rand`
/// release implements `shuffle`.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for i in (1..items.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn blind_item(f: &Finding, subject: &Subject) -> BlindItem {
    let file = cap(f.file.trim(), FILE_MAX_CHARS);
    let line = f.anchor_line();
    let suggestion = f.suggestion.as_deref().map(|s| normalize_text(s, MESSAGE_MAX_CHARS)).filter(|s| !s.is_empty());
    BlindItem {
        id: String::new(),
        context: context(subject, f.file.trim(), line),
        file,
        line,
        message: normalize_text(&f.message, MESSAGE_MAX_CHARS),
        suggestion,
    }
}

/// The diff around `file:line` (see the module's rules).
pub fn context(subject: &Subject, file: &str, line: u32) -> String {
    let Some(diff) = subject.files.iter().find(|d| d.path == file) else {
        return format!("(the file `{}` is not part of this change)", cap(file, FILE_MAX_CHARS));
    };
    let near = |h: &Hunk| {
        let (a, b) = h.new_span();
        line + CONTEXT_SLACK >= a && line <= b + CONTEXT_SLACK
    };
    let mut hunks: Vec<&Hunk> = diff.hunks.iter().filter(|h| near(h)).collect();
    if hunks.is_empty() {
        let distance = |h: &&Hunk| {
            let (a, b) = h.new_span();
            if line < a {
                a - line
            } else {
                line.saturating_sub(b)
            }
        };
        hunks.extend(diff.hunks.iter().min_by_key(distance));
    }
    if hunks.is_empty() {
        return format!("(the change to `{}` has no hunks to show)", cap(file, FILE_MAX_CHARS));
    }
    let mut out = format!("File `{}`:\n", cap(file, FILE_MAX_CHARS));
    for h in hunks {
        out.push_str(h.text.lines().next().unwrap_or_default());
        out.push('\n');
        out.push_str(&window(&numbered(h), line));
        out.push('\n');
    }
    cap(out.trim_end(), CONTEXT_MAX_CHARS)
}

/// At most [`CONTEXT_MAX_LINES`] of a numbered hunk, centred on the row showing `line`.
fn window(numbered: &str, line: u32) -> String {
    let rows: Vec<&str> = numbered.lines().collect();
    if rows.len() <= CONTEXT_MAX_LINES {
        return numbered.to_string();
    }
    let number = |row: &str| row.get(..5).and_then(|n| n.trim().parse::<u32>().ok());
    let at = rows.iter().position(|r| number(r).is_some_and(|n| n >= line)).unwrap_or(rows.len() - 1);
    let start = at.saturating_sub(CONTEXT_MAX_LINES / 2).min(rows.len() - CONTEXT_MAX_LINES);
    let end = start + CONTEXT_MAX_LINES;
    let mut out = Vec::new();
    if start > 0 {
        out.push("      …");
    }
    out.extend(&rows[start..end]);
    if end < rows.len() {
        out.push("      …");
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Category, Severity};
    use crate::subject::diff::parse_unified_diff;
    use std::path::PathBuf;

    const DIFF: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n@@ -40,1 +44,2 @@\n x = 1\n+y = 2\n";

    pub(crate) fn subject() -> Subject {
        Subject {
            id: "case-01".into(),
            repo_dir: PathBuf::from("/r"),
            base_sha: "a".into(),
            head_sha: "b".into(),
            diff: DIFF.into(),
            files: parse_unified_diff(DIFF),
            stet_error: None,
            review_task: None,
            spec: None,
        }
    }

    fn finding(file: &str, line: u32, message: &str) -> Finding {
        Finding {
            id: "f".into(),
            file: file.into(),
            line,
            range: None,
            severity: Severity::Error,
            category: Category::Bug,
            confidence: 1.0,
            message: message.into(),
            suggestion: Some("  ".into()),
            cursor_uri: None,
            evidence_lines: None,
        }
    }

    #[test]
    fn items_are_normalized_with_the_hunk_around_the_line() {
        let s = subject();
        let items = blind_items(&[finding(" calc.py ", 10, "  avg   divides\n by zero  ")], &s, 1);
        let (index, item) = &items[0];
        assert_eq!((*index, item.id.as_str(), item.file.as_str(), item.line), (0, "item-1", "calc.py", 10));
        assert_eq!(item.message, "avg divides by zero");
        assert_eq!(item.suggestion, None, "a blank suggestion is none");
        assert!(item.context.starts_with("File `calc.py`:\n@@ -4,3 +4,7 @@ def add(a, b):\n"), "{}", item.context);
        assert!(item.context.contains("   10 +     return sum(xs) / len(xs)"), "{}", item.context);
        assert!(!item.context.contains("y = 2"), "only the hunk around the line: {}", item.context);
        // A line between hunks gets the nearest one; a file outside the diff says so.
        assert!(context(&s, "calc.py", 20).contains("return sum(xs)"));
        assert!(context(&s, "calc.py", 41).contains("y = 2"));
        assert_eq!(context(&s, "other.py", 1), "(the file `other.py` is not part of this change)");
        assert_eq!(normalize_text(&"x".repeat(MESSAGE_MAX_CHARS + 5), MESSAGE_MAX_CHARS).chars().count(), MESSAGE_MAX_CHARS);
    }

    #[test]
    fn the_shuffle_is_seeded_and_ids_follow_it() {
        let s = subject();
        let findings: Vec<Finding> = (0..12).map(|i| finding("calc.py", 4 + i, &format!("finding {i}"))).collect();
        let a = blind_items(&findings, &s, 7);
        assert_eq!(a, blind_items(&findings, &s, 7), "same seed, same order");
        let b = blind_items(&findings, &s, 8);
        let order = |v: &[(usize, BlindItem)]| v.iter().map(|(i, _)| *i).collect::<Vec<_>>();
        assert_ne!(order(&a), order(&b), "another seed, another order");
        assert_ne!(order(&a), (0..12).collect::<Vec<_>>(), "shuffled");
        let mut sorted = order(&a);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..12).collect::<Vec<_>>(), "a permutation");
        for (n, (i, item)) in a.iter().enumerate() {
            assert_eq!(item.id, format!("item-{}", n + 1));
            assert_eq!(item.message, format!("finding {i}"), "each item maps back to its finding");
        }
        // The order is pinned: a change to the shuffle would re-key every judge call's inputs.
        assert_eq!(order(&a), vec![2, 4, 6, 9, 7, 1, 8, 0, 11, 10, 5, 3]);
        assert_eq!(a[0].1.content_hash(), blind_items(&findings, &s, 8).iter().find(|(i, _)| *i == a[0].0).expect("same finding").1.content_hash());
    }

    #[test]
    fn long_hunks_are_windowed_around_the_line() {
        let mut diff = String::from("diff --git a/big.py b/big.py\n--- a/big.py\n+++ b/big.py\n@@ -0,0 +1,200 @@\n");
        for i in 1..=200 {
            diff.push_str(&format!("+line_{i} = {i}\n"));
        }
        let mut s = subject();
        s.files = parse_unified_diff(&diff);
        let text = context(&s, "big.py", 150);
        assert!(text.contains("line_150 = 150") && !text.contains("line_100 = 100") && !text.contains("line_190 = 190"), "{text}");
        assert_eq!(text.lines().filter(|l| l.contains(" + line_")).count(), CONTEXT_MAX_LINES);
    }
}
