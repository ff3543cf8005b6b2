//! A8, multi-run aggregation: per cell, the union of its N repeats' findings on each subject
//! (deduplicated by fuzzy match) against the average single run, with precision, recall and F1
//! of both against the oracle when there is one.
//!
//! Union: repeats in order, each finding kept unless it fuzzy-matches one already kept (same
//! file, lines within the tolerance, message similarity ≥ `dedup-similarity`). Both the union
//! and each single run are matched to the oracle by the analysis's oracle rule; the single-run
//! figures are the mean over repeats of each repeat's precision, recall and F1 (each repeat's
//! counts summed over the subjects).

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::matching::matcher::fuzzy_match;
use crate::analysis::{model::fmt_num, model::fmt_ratio, model::AnalysisInput, model::AnalysisResult, model::RunView, model::Table};
use crate::analysis::matching::matcher::{match_case_judged, with_jury, Prf};
use crate::analysis::spec::{AnalysisSpec, MatchRule};
use crate::finding::Finding;
use std::collections::BTreeMap;

pub(crate) const TEST_ID: &str = "A8";

/// Findings of several runs with fuzzy duplicates dropped, first occurrence kept.
pub(crate) fn union(runs: &[&[Finding]], rule: &MatchRule) -> Vec<Finding> {
    let mut merged: Vec<Finding> = Vec::new();
    for findings in runs {
        for f in findings.iter() {
            if !merged.iter().any(|m| fuzzy_match(m, f, rule)) {
                merged.push(f.clone());
            }
        }
    }
    merged
}

/// One cell's A8 result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellAggregation {
    pub runs: usize,
    pub merged_count: usize,
    pub single_run_avg_count: f64,
    /// Union against the oracle; `None` without one.
    pub union: Option<Prf>,
    /// Each repeat against the oracle, in repeat order.
    pub single: Vec<Prf>,
}

fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let defined: Vec<f64> = values.flatten().collect();
    (!defined.is_empty()).then(|| defined.iter().sum::<f64>() / defined.len() as f64)
}

impl CellAggregation {
    pub(crate) fn single_precision(&self) -> Option<f64> {
        mean(self.single.iter().map(Prf::precision))
    }

    pub(crate) fn single_recall(&self) -> Option<f64> {
        mean(self.single.iter().map(Prf::recall))
    }

    pub(crate) fn single_f1(&self) -> Option<f64> {
        mean(self.single.iter().map(Prf::f1))
    }
}

/// Aggregates one cell's runs.
pub(crate) fn aggregate(
    runs: &[&RunView<'_>],
    oracle: Option<&crate::ground_truth::oracle::Oracle>,
    spec: &AnalysisSpec,
    votes: Option<&crate::analysis::matching::matcher::MatchVotes>,
) -> CellAggregation {
    let mut by_subject: BTreeMap<&str, Vec<&RunView<'_>>> = BTreeMap::new();
    let mut by_repeat: BTreeMap<u32, Vec<&RunView<'_>>> = BTreeMap::new();
    for r in runs {
        by_subject.entry(r.subject).or_default().push(r);
        by_repeat.entry(r.repeat).or_default().push(r);
    }
    let mut merged_count = 0;
    let mut union_prf = oracle.map(|_| Prf::default());
    for (subject, mut rs) in by_subject {
        rs.sort_by_key(|r| r.repeat);
        let sets: Vec<&[Finding]> = rs.iter().map(|r| r.findings).collect();
        let merged = union(&sets, &spec.matching);
        merged_count += merged.len();
        if let (Some(o), Some(acc)) = (oracle, union_prf.as_mut()) {
            if o.case(subject).is_some() {
                *acc += match_case_judged(&merged, &o.expected_for(subject), &spec.oracle_rule, votes).counts().prf();
            }
        }
    }
    let mut single = Vec::new();
    let mut counts = Vec::new();
    for rs in by_repeat.values() {
        counts.push(rs.iter().map(|r| r.findings.len()).sum::<usize>());
        if let Some(o) = oracle {
            let mut prf = Prf::default();
            for r in rs.iter().filter(|r| o.case(r.subject).is_some()) {
                prf += match_case_judged(r.findings, &o.expected_for(r.subject), &spec.oracle_rule, votes).counts().prf();
            }
            single.push(prf);
        }
    }
    let single_run_avg_count = if counts.is_empty() { 0.0 } else { counts.iter().sum::<usize>() as f64 / counts.len() as f64 };
    CellAggregation { runs: by_repeat.len(), merged_count, single_run_avg_count, union: union_prf, single }
}

/// `aggregation` (A8): the union of a cell's repeats against the average single run.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::AGGREGATION, compute);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let oracle = input.oracle;
    let mut table = Table::with_columns(
        "",
        [
            "Cell",
            "Repeats",
            "Merged findings",
            "Single-run avg findings",
            "Union precision",
            "Union recall",
            "Union F1",
            "Single-run precision",
            "Single-run recall",
            "Single-run F1",
        ]
        .map(String::from)
        .to_vec(),
    );
    let mut cells_json = Vec::new();
    for cell in input.cells {
        let runs: Vec<&RunView<'_>> = crate::analysis::model::runs_of(input, cell).collect();
        if runs.is_empty() {
            continue;
        }
        let a = aggregate(&runs, oracle, spec, input.match_votes());
        let union = a.union.as_ref();
        table.rows.push(vec![
            format!("`{}`", cell.id).into(),
            a.runs.into(),
            a.merged_count.into(),
            fmt_num(Some(a.single_run_avg_count), 2),
            fmt_ratio(union.and_then(Prf::precision)),
            fmt_ratio(union.and_then(Prf::recall)),
            fmt_ratio(union.and_then(Prf::f1)),
            fmt_ratio(a.single_precision()),
            fmt_ratio(a.single_recall()),
            fmt_ratio(a.single_f1()),
        ]);
        cells_json.push(serde_json::json!({
            "cell": cell.id,
            "runs": a.runs,
            "merged_findings_count": a.merged_count,
            "single_run_avg_count": a.single_run_avg_count,
            "ground_truth_provided": oracle.is_some(),
            "precision": union.and_then(Prf::precision),
            "recall": union.and_then(Prf::recall),
            "f1": union.and_then(Prf::f1),
            "single_run_precision": a.single_precision(),
            "single_run_recall": a.single_recall(),
            "single_run_f1": a.single_f1(),
            "union": union.copied().map(Prf::to_json),
            "single_runs": a.single.iter().copied().map(Prf::to_json).collect::<Vec<_>>(),
        }));
    }
    let dedup = format!(
        "union deduplicated by fuzzy match (same file, lines within {}, normalized-Levenshtein message similarity ≥ {:.2})",
        spec.matching.line_tolerance, spec.matching.similarity
    );
    let mut notes = Vec::new();
    let rule = match oracle {
        Some(_) => {
            notes.push("Method: automatic matching by the rule above (no adjudication).".into());
            format!("{dedup}; oracle: {}", with_jury(spec.oracle_rule.describe(), input.match_votes()))
        }
        None => {
            notes.push("No oracle: only counts are reported (`ground_truth_provided`: false).".into());
            dedup
        }
    };
    if !input.missing.is_empty() {
        notes.push(format!("{} planned runs have no result and are left out.", input.missing.len()));
    }
    AnalysisResult {
        kind: spec.kind,
        test_id: TEST_ID.into(),
        title: spec.title.clone().unwrap_or_else(|| "Merging repeats: the union of runs against a single run".to_string()),
        description: "Per cell, the union of its repeats' findings on each subject against the average single run: does merging N runs raise recall, and what does it cost in precision? Single-run figures are the mean over repeats.".to_string(),
        rule: Some(rule),
        tables: vec![table],
        data: serde_json::json!({ "cells": cells_json }).into(),
        notes,
        headline: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::matching::matcher::tests::{oracle as ofinding, record, reported};
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::spec::OracleRule;
    use crate::finding::Category;
    use crate::ground_truth::oracle::{Oracle, OracleCase};

    fn spec() -> AnalysisSpec {
        AnalysisSpec {
            kind: AnalysisKind::AGGREGATION,
            title: None,
            axis: None,
            matching: MatchRule::default(),
            oracle_rule: OracleRule::default(),
            adjudication: None,
            options: Default::default(),
        }
    }

    #[test]
    fn the_union_raises_recall_over_the_average_run() {
        let oracle = Oracle {
            version: 1,
            findings: vec![
                ofinding("F1", "a.py", 10, Category::Bug, "off by one in the page count"),
                ofinding("F2", "a.py", 30, Category::Security, "path escapes the root"),
            ],
            cases: vec![OracleCase {
                id: "c1".into(),
                expected_finding_ids: vec!["F1".into(), "F2".into()],
                rationale: String::new(),
                split: None,
                interpreter: None,
                ground_truth: Default::default(),
            }],
            skipped: Vec::new(),
        };
        let cell = crate::matrix::Cell { id: "m=a".into(), values: Default::default() };
        let rec = record(&cell, None);
        // Repeat 1 finds F1 and makes one false alarm; repeat 2 finds F2 and repeats the false alarm.
        let r1 = vec![reported("a", "a.py", 10, Category::Bug, "page count is off by one"), reported("n", "a.py", 20, Category::Style, "unused import")];
        let r2 = vec![reported("b", "a.py", 30, Category::Security, "path can escape root"), reported("n", "a.py", 20, Category::Style, "unused import")];
        let v1 = RunView { cell: &cell, repeat: 1, subject: "c1", record: &rec, findings: &r1, order: 0 };
        let v2 = RunView { cell: &cell, repeat: 2, subject: "c1", record: &rec, findings: &r2, order: 0 };
        let a = aggregate(&[&v1, &v2], Some(&oracle), &spec(), None);
        assert_eq!(a.runs, 2);
        // Union: a, n, b (the second `n` is a duplicate).
        assert_eq!(a.merged_count, 3);
        assert_eq!(a.single_run_avg_count, 2.0);
        assert_eq!(a.union, Some(Prf { tp: 2, fp: 1, fn_: 0 }));
        assert_eq!(a.union.and_then(|p| p.recall()), Some(1.0));
        // Each run: TP 1, FP 1, FN 1 → P = R = F1 = 0.5.
        assert_eq!(a.single, vec![Prf { tp: 1, fp: 1, fn_: 1 }; 2]);
        assert_eq!(a.single_recall(), Some(0.5));
        assert_eq!(a.single_precision(), Some(0.5));
        let f1 = a.union.and_then(|p| p.f1()).expect("defined");
        assert!((f1 - 0.8).abs() < 1e-12, "{f1}");
    }

    #[test]
    fn without_an_oracle_only_counts() {
        let cell = crate::matrix::Cell { id: "m=a".into(), values: Default::default() };
        let rec = record(&cell, None);
        let r1 = vec![reported("a", "a.py", 10, Category::Bug, "x")];
        let v1 = RunView { cell: &cell, repeat: 1, subject: "s", record: &rec, findings: &r1, order: 0 };
        let a = aggregate(&[&v1], None, &spec(), None);
        assert_eq!((a.merged_count, a.union, a.single.len()), (1, None, 0));
    }
}
