//! H2, the fixture benchmark: each cell's reports against the oracle as TP, FP and FN, with
//! precision, recall and F1 per case, per category and overall.
//!
//! TP = reports matched as `found` (and extras an adjudication found `real`: H2 adds them to
//! the ground truth as found); FP = every other report (partial matches and rejected extras);
//! FN = oracle findings not found. Counts are summed over a cell's repeats (micro-average).
//! Per category, TP and FN count under the oracle finding's category, FP under the reported
//! finding's. An oracle whose findings name their own severity levels (`severityLabel`, e.g. a
//! benchmark's Critical / High / Medium / Low) also gets recall per level, most severe first
//! (by runner's `severity` and `blocking`); `rank-by` adds a ranking of the cells.

use crate::analysis::definition::{Definition, OptionsContext};
use crate::analysis::spec::{AnalysisKind, AnalysisOptions};
use crate::config::TableReader;
use crate::analysis::matching::adjudication::adjudicate_described;
use crate::analysis::matching::matcher::{describe_rule_for, score_runs_judged, with_jury, ExtraVerdict, Prf, ScoredRun, Verdict};
use crate::analysis::spec::{AnalysisSpec, RankBy};
use crate::analysis::{model::fmt_ratio, model::AnalysisInput, model::AnalysisResult, model::Table, model::TableCell};
use crate::finding::Severity;
use crate::ground_truth::oracle::{Oracle, OracleFinding};
use std::collections::BTreeMap;

pub(crate) const TEST_ID: &str = "H2";

/// Per-cell H2 counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CellFixture {
    pub runs: usize,
    pub overall: Prf,
    pub by_category: BTreeMap<String, Prf>,
    pub by_case: BTreeMap<String, Prf>,
    /// Oracle findings found / expected per severity level, most severe first.
    pub by_severity: BTreeMap<SeverityLevel, (usize, usize)>,
}

/// An oracle finding's severity level: ordered by runner's severity (blocking first), then by
/// the oracle's own label.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeverityLevel {
    rank: (u8, bool),
    pub label: String,
}

impl SeverityLevel {
    pub(crate) fn of(f: &OracleFinding) -> Self {
        let severity = f.severity.map_or(Severity::ALL.len() as u8, |s| Severity::ALL.iter().position(|x| *x == s).unwrap_or(0) as u8);
        let label = match (&f.severity_label, f.severity) {
            (Some(label), _) => label.clone(),
            (None, Some(s)) if f.blocking => format!("{} (blocking)", s.as_str()),
            (None, Some(s)) => s.as_str().to_string(),
            (None, None) => "unlabelled".to_string(),
        };
        Self { rank: (severity, !f.blocking), label }
    }
}

/// Sums one cell's scored runs.
pub(crate) fn cell_fixture(oracle: &Oracle, runs: &[&ScoredRun<'_>]) -> CellFixture {
    let mut out = CellFixture { runs: runs.len(), ..CellFixture::default() };
    for run in runs {
        let prf = run.case.counts().prf();
        out.overall += prf;
        *out.by_case.entry(run.view.subject.to_string()).or_default() += prf;
        let mut matched = vec![false; run.view.findings.len()];
        for v in &run.case.verdicts {
            if let Some(f) = oracle.finding(&v.finding) {
                let level = out.by_severity.entry(SeverityLevel::of(f)).or_default();
                level.0 += usize::from(v.verdict == Verdict::Found);
                level.1 += 1;
            }
            let category = oracle.finding(&v.finding).and_then(|f| f.category).map(|c| c.as_str().to_string()).unwrap_or_else(|| "uncategorized".into());
            let entry = out.by_category.entry(category).or_default();
            if v.verdict == Verdict::Found {
                entry.tp += 1;
                if let Some(ri) = v.reported {
                    matched[ri] = true;
                }
            } else {
                entry.fn_ += 1;
            }
        }
        let real: Vec<usize> = run.case.extras.iter().filter(|e| e.verdict == ExtraVerdict::Real).map(|e| e.reported).collect();
        for (ri, f) in run.view.findings.iter().enumerate().filter(|(ri, _)| !matched[*ri]) {
            let entry = out.by_category.entry(f.category.as_str().to_string()).or_default();
            if real.contains(&ri) {
                entry.tp += 1;
            } else {
                entry.fp += 1;
            }
        }
    }
    out
}

fn prf_cells(p: &Prf) -> Vec<TableCell> {
    vec![p.tp.into(), p.fp.into(), p.fn_.into(), fmt_ratio(p.precision()), fmt_ratio(p.recall()), fmt_ratio(p.f1())]
}

fn base_result(spec: &AnalysisSpec) -> AnalysisResult {
    AnalysisResult {
        kind: spec.kind,
        test_id: TEST_ID.into(),
        title: spec.title.clone().unwrap_or_else(|| "Precision, recall and F1 against the oracle".to_string()),
        description: "Each run's reported findings matched to the oracle: TP = reports matched as found (plus extras an adjudication calls real), FP = every other report (partial matches and rejected extras), FN = oracle findings not found; precision = TP/(TP+FP), recall = TP/(TP+FN), F1 = 2PR/(P+R). Counts are summed over each cell's repeats.".to_string(),
        rule: Some(spec.oracle_rule.describe()),
        tables: Vec::new(),
        data: crate::analysis::data::Data::null(),
        notes: Vec::new(),
        headline: Vec::new(),
    }
}

/// `fixture` (H2): precision, recall and F1 against the oracle, ranked by `rank-by`; people's
/// adjudications may decide its runs.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::FIXTURE, compute).with_options(&["rank-by"], read_options).taking_adjudication();

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = base_result(spec);
    let Some(oracle) = input.oracle else {
        result.notes.push("No oracle: the target is neither a corpus with `oracle.json` nor an eval set, so nothing can be scored.".into());
        result.data = serde_json::json!({ "ground_truth_provided": false }).into();
        return result;
    };
    let (mut scored, unknown) = score_runs_judged(&input.runs, oracle, &spec.oracle_rule, input.match_votes());
    let (method, method_notes) =
        adjudicate_described(&mut scored, input.adjudication(spec), with_jury(describe_rule_for(&spec.oracle_rule, oracle), input.match_votes()));
    result.rule = Some(method.describe());
    let mut overall = Table::with_columns("Overall", ["Cell", "Runs", "TP", "FP", "FN", "Precision", "Recall", "F1"].map(String::from).to_vec());
    let mut by_category = Table::with_columns("Per category", ["Cell", "Category", "TP", "FP", "FN", "Precision", "Recall", "F1"].map(String::from).to_vec());
    let mut by_case = Table::with_columns("Per case", ["Cell", "Case", "TP", "FP", "FN", "Precision", "Recall", "F1"].map(String::from).to_vec());
    let labelled = oracle.findings.iter().any(|f| f.severity_label.is_some());
    let mut by_severity = Table::with_columns("Recall by severity", ["Cell", "Severity", "Oracle findings", "Found", "Recall"].map(String::from).to_vec());
    let mut ranked: Vec<(String, Prf)> = Vec::new();
    let mut cells_json = Vec::new();
    for cell in input.cells {
        let runs: Vec<&ScoredRun<'_>> = scored.iter().filter(|r| r.view.cell.id == cell.id).collect();
        if runs.is_empty() {
            continue;
        }
        let fx = cell_fixture(oracle, &runs);
        ranked.push((cell.id.clone(), fx.overall));
        for (level, (found, total)) in fx.by_severity.iter().filter(|_| labelled) {
            by_severity.rows.push(vec![
                format!("`{}`", cell.id).into(),
                level.label.clone().into(),
                (*total).into(),
                (*found).into(),
                fmt_ratio((*total > 0).then(|| *found as f64 / *total as f64)),
            ]);
        }
        let mut row: Vec<TableCell> = vec![format!("`{}`", cell.id).into(), fx.runs.into()];
        row.extend(prf_cells(&fx.overall));
        overall.rows.push(row);
        for (category, prf) in &fx.by_category {
            let mut row: Vec<TableCell> = vec![format!("`{}`", cell.id).into(), category.clone().into()];
            row.extend(prf_cells(prf));
            by_category.rows.push(row);
        }
        for (case, prf) in &fx.by_case {
            let mut row: Vec<TableCell> = vec![format!("`{}`", cell.id).into(), case.clone().into()];
            row.extend(prf_cells(prf));
            by_case.rows.push(row);
        }
        let mut cell_json = serde_json::json!({
            "cell": cell.id,
            "runs": fx.runs,
            "overall": fx.overall.to_json(),
            "by_category": fx.by_category.iter().map(|(k, v)| (k.clone(), v.to_json())).collect::<serde_json::Map<_, _>>(),
            "by_case": fx.by_case.iter().map(|(k, v)| (k.clone(), v.to_json())).collect::<serde_json::Map<_, _>>(),
        });
        if labelled {
            cell_json["by_severity"] =
                fx.by_severity.iter().map(|(level, (found, total))| serde_json::json!({ "severity": level.label, "oracle": total, "found": found })).collect();
        }
        cells_json.push(cell_json);
    }
    result.tables = vec![overall];
    if let Some(rate) = spec.rank_by() {
        result.tables.push(ranking(rate, ranked));
    }
    if labelled {
        result.tables.push(by_severity);
    }
    result.tables.extend([by_category, by_case]);
    if method_notes.is_empty() {
        result.notes.push("Method: automatic matching by the rule above (no adjudication).".into());
    } else {
        result.notes.extend(method_notes);
    }
    result
        .notes
        .push("Partial matches count as FN on the oracle side and FP on the report side; the review-eval analysis reports recall with partials.".into());
    if !unknown.is_empty() {
        result.notes.push(format!("Subjects not in the oracle, left out: {}.", unknown.join(", ")));
    }
    if !input.missing.is_empty() {
        result.notes.push(format!("{} planned runs have no result and are left out.", input.missing.len()));
    }
    result.data = serde_json::json!({ "ground_truth_provided": true, "method": method, "cells": cells_json }).into();
    result
}

/// The cells ranked by `rate`, best first; ties by F1, then recall, then cell id. A cell whose
/// rate is undefined comes last.
fn ranking(rate: RankBy, mut cells: Vec<(String, Prf)>) -> Table {
    let value = |p: &Prf, r: RankBy| match r {
        RankBy::F1 => p.f1(),
        RankBy::Precision => p.precision(),
        RankBy::Recall => p.recall(),
    };
    let key = |p: &Prf| [value(p, rate), p.f1(), p.recall()].map(|v| v.unwrap_or(-1.0));
    cells.sort_by(|(a_id, a), (b_id, b)| {
        let (ka, kb) = (key(a), key(b));
        kb[0].total_cmp(&ka[0]).then(kb[1].total_cmp(&ka[1])).then(kb[2].total_cmp(&ka[2])).then(a_id.cmp(b_id))
    });
    let mut table = Table::with_columns(
        format!("Ranking by {}", if rate == RankBy::F1 { "F1".to_string() } else { rate.as_str().to_string() }),
        ["Rank", "Cell", "F1", "Precision", "Recall", "TP", "FP", "FN"].map(String::from).to_vec(),
    );
    for (i, (id, p)) in cells.iter().enumerate() {
        table.rows.push(vec![
            (i + 1).into(),
            format!("`{id}`").into(),
            fmt_ratio(p.f1()),
            fmt_ratio(p.precision()),
            fmt_ratio(p.recall()),
            p.tp.into(),
            p.fp.into(),
            p.fn_.into(),
        ]);
    }
    table
}

/// A `fixture` analysis's `rank-by`: the rate it ranks its cells by.
fn read_options(t: &TableReader<'_, '_>, _context: &OptionsContext<'_>) -> AnalysisOptions {
    let Some(r) = t.string("rank-by") else { return AnalysisOptions::None };
    match RankBy::ALL.into_iter().find(|k| k.as_str() == r.get_ref()) {
        Some(rank_by) => AnalysisOptions::RankBy(rank_by),
        None => {
            t.problems().push_with_help(r.span(), format!("unknown `rank-by` rate `{}`", r.get_ref()), "rates: f1, precision, recall");
            AnalysisOptions::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::matching::matcher::match_case;
    use crate::analysis::matching::matcher::tests::{oracle as ofinding, reported};
    use crate::analysis::spec::OracleRule;
    use crate::finding::Category;
    use crate::ground_truth::oracle::OracleCase;

    pub(super) fn oracle_of(findings: Vec<(&str, crate::ground_truth::oracle::OracleFinding)>) -> Oracle {
        let mut cases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (case, f) in &findings {
            cases.entry(case.to_string()).or_default().push(f.id.clone());
        }
        Oracle {
            version: 1,
            findings: findings.into_iter().map(|(_, f)| f).collect(),
            cases: cases
                .into_iter()
                .map(|(id, ids)| OracleCase {
                    id,
                    expected_finding_ids: ids,
                    rationale: String::new(),
                    split: None,
                    interpreter: None,
                    ground_truth: Default::default(),
                })
                .collect(),
            skipped: Vec::new(),
        }
    }

    #[test]
    fn per_category_counts_by_hand() {
        let oracle = oracle_of(vec![
            ("c1", ofinding("F1", "a.py", 10, Category::Security, "path escapes the root")),
            ("c1", ofinding("F2", "a.py", 40, Category::Bug, "off by one in the page count")),
        ]);
        let reports = vec![
            reported("r1", "a.py", 10, Category::Security, "the prefix check lets a path escape the root"),
            reported("r2", "a.py", 20, Category::Style, "long line"),
            reported("r3", "b.py", 1, Category::Style, "naming"),
        ];
        let expected = oracle.expected_for("c1");
        let case = match_case(&reports, &expected, &OracleRule::default());
        let cell = crate::matrix::Cell { id: "x".into(), values: Default::default() };
        let record = crate::analysis::matching::matcher::tests::record(&cell, None);
        let view = crate::analysis::RunView { cell: &cell, repeat: 1, subject: "c1", record: &record, findings: &reports, order: 0 };
        let run = ScoredRun { view, case };
        let fx = cell_fixture(&oracle, &[&run]);
        assert_eq!(fx.overall, Prf { tp: 1, fp: 2, fn_: 1 });
        assert_eq!(fx.overall.precision(), Some(1.0 / 3.0));
        assert_eq!(fx.overall.recall(), Some(0.5));
        let f1 = fx.overall.f1().expect("defined");
        assert!((f1 - 0.4).abs() < 1e-12);
        assert_eq!(fx.by_category["security"], Prf { tp: 1, fp: 0, fn_: 0 });
        assert_eq!(fx.by_category["bug"], Prf { tp: 0, fp: 0, fn_: 1 });
        assert_eq!(fx.by_category["style"], Prf { tp: 0, fp: 2, fn_: 0 });
    }
}

#[cfg(test)]
mod severity_tests {
    use super::*;
    use crate::analysis::spec::AnalysisKind;
    use crate::analysis::test_support::{finding, s, spec, Fixture};
    use crate::analysis::TableCell;

    fn golden(id: &str, severity: Severity, blocking: bool, label: &str, description: &str) -> (&'static str, OracleFinding) {
        let f = OracleFinding {
            id: id.into(),
            case_id: Some("pr-1".into()),
            description: description.into(),
            file: None,
            line: None,
            range: None,
            category: None,
            severity: Some(severity),
            blocking,
            severity_label: Some(label.into()),
            resolved: None,
            class: None,
            fixed: None,
        };
        ("pr-1", f)
    }

    fn text(cell: &TableCell) -> String {
        serde_json::to_value(cell).map(|v| v.to_string()).unwrap_or_default()
    }

    #[test]
    fn recall_by_the_oracles_own_severity_levels_and_a_ranking_by_f1() {
        let oracle = tests::oracle_of(vec![
            golden("pr-1/G1", Severity::Info, false, "Low", "rename the misleading helper name"),
            golden("pr-1/G2", Severity::Error, true, "Critical", "the async forEach callbacks are never awaited"),
            golden("pr-1/G3", Severity::Error, false, "High", "the backup code check is case sensitive"),
        ]);
        let mut fx = Fixture::new(&[("reviewer", vec![s("a"), s("b")])], 1);
        // a: finds G2 and G3, one noise report: P 2/3, R 2/3, F1 2/3.
        fx.add(
            "reviewer=a",
            1,
            "pr-1",
            vec![
                finding("", 0, "async forEach callbacks never awaited"),
                finding("", 0, "backup code check is case sensitive"),
                finding("", 0, "consider a faster hash"),
            ],
        );
        // b: finds G1 only, exactly: P 1, R 1/3, F1 1/2.
        fx.add("reviewer=b", 1, "pr-1", vec![finding("", 0, "misleading helper name, rename it")]);
        let mut input = fx.input();
        input.oracle = Some(&oracle);
        let mut spec = spec(AnalysisKind::FIXTURE, None);
        spec.options = crate::analysis::spec::AnalysisOptions::RankBy(RankBy::F1);
        let result = compute(&spec, &input);
        let titles: Vec<&str> = result.tables.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles, ["Overall", "Ranking by F1", "Recall by severity", "Per category", "Per case"]);
        let rows: Vec<Vec<String>> = result.tables[2].rows.iter().map(|r| r.iter().map(text).collect()).collect();
        let a: Vec<(String, String, String)> =
            rows.iter().filter(|r| r[0].contains("reviewer=a")).map(|r| (r[1].clone(), r[2].clone(), r[3].clone())).collect();
        // Most severe first: Critical (error, blocking), High (error), Low (info).
        let q = |x: &str| format!("\"{x}\"");
        assert_eq!(a, vec![(q("Critical"), "1".into(), "1".into()), (q("High"), "1".into(), "1".into()), (q("Low"), "1".into(), "0".into())]);
        let ranking: Vec<String> = result.tables[1].rows.iter().map(|r| text(&r[1])).collect();
        assert_eq!(ranking, [q("`reviewer=a`"), q("`reviewer=b`")]);
        assert!(result.rule.as_deref().is_some_and(|r| r.starts_with("change-level matching (3 of 3")), "{:?}", result.rule);
        let by_severity = &result.data["cells"][1]["by_severity"];
        assert_eq!(by_severity[2], serde_json::json!({ "severity": "Low", "oracle": 1, "found": 1 }));
    }

    #[test]
    fn an_oracle_without_severity_labels_gets_no_severity_table() {
        let mut f = golden("pr-1/G1", Severity::Info, false, "Low", "x").1;
        f.severity_label = None;
        let oracle = tests::oracle_of(vec![("pr-1", f)]);
        let mut fx = Fixture::new(&[("reviewer", vec![s("a")])], 1);
        fx.add("reviewer=a", 1, "pr-1", vec![]);
        let mut input = fx.input();
        input.oracle = Some(&oracle);
        let result = compute(&spec(AnalysisKind::FIXTURE, None), &input);
        let titles: Vec<&str> = result.tables.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles, ["Overall", "Per category", "Per case"]);
        assert!(result.data["cells"][0].get("by_severity").is_none());
    }
}
