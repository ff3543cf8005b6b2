//! A9, context-level tagging: the context each finding needed, by seed 000's heuristic —
//! `repo` when its file is not among the changed files, `file` when it is in a changed file
//! but outside every hunk the reviewer was shown, `diff` when it falls inside a hunk. A finding
//! without a usable line in a changed file is `file` (the seed's default when unclear).

use crate::analysis::definition::{Definition, Needs};
use crate::analysis::spec::AnalysisKind;
use crate::analysis::{model::AnalysisInput, model::AnalysisResult, model::Table};
use crate::analysis::spec::AnalysisSpec;
use crate::finding::Finding;
use crate::subject::diff::FileDiff;
use serde::Serialize;
use std::collections::BTreeMap;

pub(crate) const TEST_ID: &str = "A9";

pub(crate) const LIMITATION: &str = "Heuristic; actual context level may differ";

/// What a subject's diff showed: changed files and the new-side line spans of their hunks
/// (context lines included, as the reviewer saw them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DiffScope {
    pub files: BTreeMap<String, Vec<(u32, u32)>>,
}

impl DiffScope {
    pub fn from_files(files: &[FileDiff]) -> Self {
        let mut scope = DiffScope::default();
        for f in files {
            scope.files.entry(f.path.clone()).or_default().extend(f.hunks.iter().map(|h| h.new_span()));
        }
        scope
    }
}

/// A finding's context level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Diff,
    File,
    Repo,
}

impl Level {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Diff => "diff",
            Self::File => "file",
            Self::Repo => "repo",
        }
    }
}

/// Tags one finding.
pub(crate) fn level(finding: &Finding, scope: &DiffScope) -> Level {
    let Some(spans) = scope.files.get(finding.file.trim_start_matches("./")) else { return Level::Repo };
    if finding.line == 0 && finding.range.is_none() {
        return Level::File;
    }
    let (a, b) = finding.span();
    if spans.iter().any(|&(s, e)| a <= e && s <= b) {
        Level::Diff
    } else {
        Level::File
    }
}

/// `context-level` (A9): the diff, file or repository context of each finding.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::CONTEXT_LEVEL, compute).needing(Needs::SUBJECTS);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut table = Table::with_columns("", ["Cell", "Findings", "diff", "file", "repo", "diff share", "file share", "repo share"].map(String::from).to_vec());
    let mut cells_json = Vec::new();
    let mut unscoped: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let mut total: BTreeMap<Level, usize> = BTreeMap::new();
    for cell in input.cells {
        let runs: Vec<_> = crate::analysis::model::runs_of(input, cell).collect();
        if runs.is_empty() {
            continue;
        }
        let mut counts: BTreeMap<Level, usize> = [(Level::Diff, 0), (Level::File, 0), (Level::Repo, 0)].into();
        for r in runs {
            let Some(scope) = input.scopes().and_then(|s| s.get(r.subject)) else {
                unscoped.insert(r.subject);
                continue;
            };
            for f in r.findings {
                *counts.entry(level(f, scope)).or_default() += 1;
            }
        }
        let n: usize = counts.values().sum();
        let share = |l: Level| crate::analysis::model::fmt_ratio((n > 0).then(|| counts[&l] as f64 / n as f64));
        table.rows.push(vec![
            format!("`{}`", cell.id).into(),
            n.into(),
            counts[&Level::Diff].into(),
            counts[&Level::File].into(),
            counts[&Level::Repo].into(),
            share(Level::Diff),
            share(Level::File),
            share(Level::Repo),
        ]);
        for (l, c) in &counts {
            *total.entry(*l).or_default() += c;
        }
        cells_json.push(serde_json::json!({
            "cell": cell.id,
            "by_context_level": counts.iter().map(|(l, c)| (l.as_str().to_string(), serde_json::json!(c))).collect::<serde_json::Map<_, _>>(),
            "limitation": LIMITATION,
        }));
    }
    let mut notes = vec![format!(
        "Limitation: {LIMITATION}. A finding inside a hunk may still have needed the rest of the file or other files, and one outside may only restate a changed line; findings are tagged by place only, their messages are not parsed."
    )];
    if !unscoped.is_empty() {
        notes.push(format!(
            "The diffs of these subjects could not be read, so their findings are not tagged: {}.",
            unscoped.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    AnalysisResult {
        kind: spec.kind,
        test_id: TEST_ID.into(),
        title: spec.title.clone().unwrap_or_else(|| "How much context each finding needed".to_string()),
        description: "Each finding tagged with the context it needed: `diff` inside a hunk the reviewer was shown (context lines included), `file` in a changed file outside every hunk (or without a line), `repo` in a file the change did not touch. Counts over all runs of each cell.".to_string(),
        rule: None,
        tables: vec![table],
        data: serde_json::json!({
            "cells": cells_json,
            "by_context_level": total.iter().map(|(l, c)| (l.as_str().to_string(), serde_json::json!(c))).collect::<serde_json::Map<_, _>>(),
            "limitation": LIMITATION,
        }).into(),
        notes,
        headline: Vec::new(),
    }
}

impl<'a> crate::analysis::model::AnalysisInput<'a> {
    /// Changed files and hunk spans per subject, for context-level tagging (A9); subjects whose diff could not be read are absent.
    pub(crate) fn scopes(&self) -> Option<&'a std::collections::BTreeMap<String, DiffScope>> {
        self.extras.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::matching::matcher::tests::reported;
    use crate::finding::Category;
    use crate::subject::diff::parse_unified_diff;

    #[test]
    fn diff_file_and_repo_levels() {
        // One hunk in calc.py covering new lines 4..=10.
        let diff = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n";
        let scope = DiffScope::from_files(&parse_unified_diff(diff));
        assert_eq!(scope.files["calc.py"], vec![(4, 10)]);
        let at = |file: &str, line: u32| level(&reported("r", file, line, Category::Bug, "m"), &scope);
        assert_eq!(at("calc.py", 4), Level::Diff);
        assert_eq!(at("calc.py", 10), Level::Diff);
        assert_eq!(at("./calc.py", 7), Level::Diff);
        assert_eq!(at("calc.py", 11), Level::File);
        assert_eq!(at("calc.py", 1), Level::File);
        assert_eq!(at("calc.py", 0), Level::File);
        assert_eq!(at("util.py", 5), Level::Repo);
        let mut ranged = reported("r", "calc.py", 1, Category::Bug, "m");
        ranged.range = Some(crate::finding::LineRange { start: 2, end: 4 });
        assert_eq!(level(&ranged, &scope), Level::Diff);
    }
}
