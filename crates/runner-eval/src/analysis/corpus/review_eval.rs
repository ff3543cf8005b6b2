//! Seed 003's review-eval scores: per run and per case, each oracle finding `found`,
//! `partial` or `missed` and each extra `real` or `rejected`; recall strict and with partials,
//! noise, tokens per case and recall per 100k tokens. The machine-readable part
//! ([`ReviewEvalData`], in results.json) carries every verdict, so `runner diff` can compare
//! two executions finding by finding.
//!
//! A seed-003 "run" is one cell's repeat over all its cases; "per case" sums a cell's repeats.
//! - recall (strict) = found / oracle findings; with partials = (found + partial) / oracle findings;
//! - noise = rejected extras / everything reported;
//! - tokens per case = the run's reported tokens (prompt + completion) / cases that reported
//!   any; recall per 100k tokens = strict recall / (tokens per case / 100 000).
//!
//! A cell's verdict on an oracle finding over its repeats is the most frequent one, a tie going
//! to the worse verdict.

use crate::analysis::definition::Definition;
use crate::analysis::spec::AnalysisKind;
use crate::finding::Severity;
use crate::analysis::chart::{wilson, BarChart, Chart, ChartCells, IntervalChart, IntervalPoint, Named, Series};
use crate::analysis::matching::adjudication::adjudicate_described;
use crate::analysis::matching::matcher::{describe_rule_for, score_runs_judged, with_jury, ExtraVerdict, MatchCounts, Method, ScoredRun, Verdict};
use crate::analysis::spec::AnalysisSpec;
use crate::analysis::{model::fmt_num, model::fmt_ratio, model::AnalysisInput, model::AnalysisResult, model::RunView, model::Table, model::TableCell};
use crate::ground_truth::oracle::Oracle;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub(crate) const TEST_ID: &str = "seed 003";

/// The scores of a set of cases (one case, a run, or a cell's repeats).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    #[serde(flatten)]
    pub counts: MatchCounts,
    /// Cases scored.
    pub cases: usize,
    /// Tokens reported over the cases that reported any; `None` when none did.
    pub tokens: Option<u64>,
    /// Cases that reported tokens.
    pub cases_with_tokens: usize,
    pub recall_strict: Option<f64>,
    pub recall_with_partials: Option<f64>,
    pub noise: Option<f64>,
    pub tokens_per_case: Option<f64>,
    pub recall_per_100k_tokens: Option<f64>,
}

impl Scores {
    fn add_case(&mut self, counts: MatchCounts, tokens: Option<u64>) {
        self.counts += counts;
        self.cases += 1;
        if let Some(t) = tokens {
            self.tokens = Some(self.tokens.unwrap_or(0) + t);
            self.cases_with_tokens += 1;
        }
    }

    fn merge(&mut self, other: &Scores) {
        self.counts += other.counts;
        self.cases += other.cases;
        if let Some(t) = other.tokens {
            self.tokens = Some(self.tokens.unwrap_or(0) + t);
        }
        self.cases_with_tokens += other.cases_with_tokens;
    }

    /// Fills in the rates from the counts.
    fn finish(mut self) -> Self {
        self.recall_strict = self.counts.recall_strict();
        self.recall_with_partials = self.counts.recall_with_partials();
        self.noise = self.counts.noise();
        self.tokens_per_case = match (self.tokens, self.cases_with_tokens) {
            (Some(t), n) if n > 0 => Some(t as f64 / n as f64),
            _ => None,
        };
        self.recall_per_100k_tokens = match (self.recall_strict, self.tokens_per_case) {
            (Some(r), Some(t)) if t > 0.0 => Some(r / (t / 100_000.0)),
            _ => None,
        };
        self
    }
}

/// A reported finding, as far as a verdict needs to name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedRef {
    pub id: String,
    pub file: String,
    pub line: u32,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRow {
    pub finding: String,
    pub verdict: Verdict,
    pub reported: Option<ReportedRef>,
    pub similarity: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtraRow {
    pub verdict: ExtraVerdict,
    pub reported: ReportedRef,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseEval {
    pub case: String,
    pub scores: Scores,
    pub verdicts: Vec<VerdictRow>,
    pub extras: Vec<ExtraRow>,
}

/// One seed-003 run: a cell's repeat over its cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEval {
    pub repeat: u32,
    pub scores: Scores,
    pub cases: Vec<CaseEval>,
}

/// A cell's verdict on one oracle finding over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingEval {
    pub case: String,
    pub finding: String,
    pub verdict: Verdict,
    pub found: usize,
    pub partial: usize,
    pub missed: usize,
    /// The probability that the judges' majority calls it found, averaged over the cell's
    /// repeats: each decision weighed as `compare` weighs it (the rule's decision model, or
    /// the judges' vote share where they decide; a decision taken as certain counts 1 or 0).
    /// Absent where the decisions are not weighed (thresholds set by hand, an adjudication).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_found: Option<f64>,
}

impl FindingEval {
    /// `found 2/3` style text.
    pub fn describe(&self) -> String {
        let n = self.found + self.partial + self.missed;
        let k = match self.verdict {
            Verdict::Found => self.found,
            Verdict::Partial => self.partial,
            Verdict::Missed => self.missed,
        };
        format!("{} {k}/{n}", self.verdict)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellEval {
    pub cell: String,
    pub values: BTreeMap<String, String>,
    /// Over every repeat and case.
    pub scores: Scores,
    pub runs: Vec<RunEval>,
    /// Keyed by `case/finding`.
    pub findings: BTreeMap<String, FindingEval>,
}

/// The review-eval analysis's `data` in results.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewEvalData {
    pub method: Method,
    pub cells: Vec<CellEval>,
    /// The oracle's severity of each scored oracle finding that has one, by finding id (for
    /// recall by severity); absent when no scored finding has a severity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub severities: BTreeMap<String, crate::finding::Severity>,
    /// Recall per cell and class of the oracle's findings (an eval set's free-text classes),
    /// over every repeat; absent when no oracle finding has a class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recall_by_class: Vec<ClassRecall>,
    /// Recall per cell before and after its reviewer's declared training cut-off; absent when
    /// no reviewer declares one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recall_by_cutoff: Vec<super::contamination::CutoffRecall>,
}

/// Recall over one class's oracle findings in one cell, every repeat counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassRecall {
    pub cell: String,
    /// The class, or `unclassified` for a finding without one.
    pub class: String,
    /// Oracle findings of the class, once per repeat.
    pub oracle: usize,
    pub found: usize,
    pub partial: usize,
    pub missed: usize,
    pub recall_strict: Option<f64>,
    pub recall_with_partials: Option<f64>,
}

/// Recall by class, per cell (cells in order, classes sorted); empty when no oracle finding
/// has a class.
pub fn recall_by_class(oracle: &Oracle, cells: &[CellEval]) -> Vec<ClassRecall> {
    if oracle.findings.iter().all(|f| f.class.is_none()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for c in cells {
        let mut by_class: BTreeMap<String, MatchCounts> = BTreeMap::new();
        for v in c.runs.iter().flat_map(|r| r.cases.iter()).flat_map(|case| case.verdicts.iter()) {
            let class = oracle.finding(&v.finding).and_then(|f| f.class.clone()).unwrap_or_else(|| "unclassified".into());
            by_class.entry(class).or_default().add_verdict(v.verdict);
        }
        out.extend(by_class.into_iter().map(|(class, m)| ClassRecall {
            cell: c.cell.clone(),
            class,
            oracle: m.oracle,
            found: m.found,
            partial: m.partial,
            missed: m.missed,
            recall_strict: m.recall_strict(),
            recall_with_partials: m.recall_with_partials(),
        }));
    }
    out
}

fn class_table(rows: &[ClassRecall]) -> Table {
    let columns = ["Cell", "Class", "Oracle findings", "Found", "Partial", "Missed", "Recall (strict)", "Recall (with partials)"];
    let mut table = Table::with_columns("Recall by class", columns.map(String::from).to_vec());
    for r in rows {
        table.push(vec![
            format!("`{}`", r.cell).into(),
            r.class.clone().into(),
            r.oracle.into(),
            r.found.into(),
            r.partial.into(),
            r.missed.into(),
            fmt_ratio(r.recall_strict),
            fmt_ratio(r.recall_with_partials),
        ]);
    }
    table
}

/// The key of an oracle finding in [`CellEval::findings`]: `case/finding`, or the finding's id
/// alone when it already names its case (eval-set ids are `case/F1`).
pub(crate) fn finding_key(case: &str, finding: &str) -> String {
    match finding.strip_prefix(case) {
        Some(rest) if rest.starts_with('/') => finding.to_string(),
        _ => format!("{case}/{finding}"),
    }
}

fn reported_ref(view: &RunView<'_>, index: usize) -> Option<ReportedRef> {
    view.findings.get(index).map(|f| ReportedRef { id: f.id.clone(), file: f.file.clone(), line: f.anchor_line(), message: f.message.clone() })
}

fn run_tokens(view: &RunView<'_>) -> Option<u64> {
    let c = &view.record.cost;
    match (c.prompt_tokens, c.completion_tokens) {
        (None, None) => None,
        (p, q) => Some(p.unwrap_or(0) + q.unwrap_or(0)),
    }
}

/// The most frequent verdict; a tie goes to the worse one.
pub(crate) fn consensus(found: usize, partial: usize, missed: usize) -> Verdict {
    let mut best = (Verdict::Missed, missed);
    for (v, n) in [(Verdict::Partial, partial), (Verdict::Found, found)] {
        if n > best.1 {
            best = (v, n);
        }
    }
    best.0
}

/// Scores one cell's runs.
pub(crate) fn cell_eval(cell: &crate::matrix::Cell, runs: &[&ScoredRun<'_>]) -> CellEval {
    let mut by_repeat: BTreeMap<u32, Vec<&ScoredRun<'_>>> = BTreeMap::new();
    for r in runs {
        by_repeat.entry(r.view.repeat).or_default().push(r);
    }
    let mut out_runs = Vec::new();
    let mut total = Scores::default();
    let mut tally: BTreeMap<String, (String, String, [usize; 3])> = BTreeMap::new();
    for (repeat, runs) in by_repeat {
        let mut scores = Scores::default();
        let mut cases = Vec::new();
        for r in runs {
            let counts = r.case.counts();
            let tokens = run_tokens(&r.view);
            scores.add_case(counts, tokens);
            let mut case_scores = Scores::default();
            case_scores.add_case(counts, tokens);
            for v in &r.case.verdicts {
                let entry = tally.entry(finding_key(r.view.subject, &v.finding)).or_insert_with(|| (r.view.subject.to_string(), v.finding.clone(), [0; 3]));
                entry.2[v.verdict as usize] += 1;
            }
            cases.push(CaseEval {
                case: r.view.subject.to_string(),
                scores: case_scores.finish(),
                verdicts: r
                    .case
                    .verdicts
                    .iter()
                    .map(|v| VerdictRow {
                        finding: v.finding.clone(),
                        verdict: v.verdict,
                        reported: v.reported.and_then(|i| reported_ref(&r.view, i)),
                        similarity: v.similarity,
                    })
                    .collect(),
                extras: r
                    .case
                    .extras
                    .iter()
                    .filter_map(|e| reported_ref(&r.view, e.reported).map(|reported| ExtraRow { verdict: e.verdict, reported }))
                    .collect(),
            });
        }
        total.merge(&scores);
        out_runs.push(RunEval { repeat, scores: scores.finish(), cases });
    }
    let findings = tally
        .into_iter()
        .map(|(key, (case, finding, [missed, partial, found]))| {
            (key, FindingEval { case, finding, verdict: consensus(found, partial, missed), found, partial, missed, p_found: None })
        })
        .collect();
    CellEval {
        cell: cell.id.clone(),
        values: cell.values.iter().map(|(k, v)| (k.clone(), v.render())).collect(),
        scores: total.finish(),
        runs: out_runs,
        findings,
    }
}

fn opt_tokens(v: Option<f64>) -> TableCell {
    fmt_num(v, 0)
}

fn opt_rate(v: Option<f64>) -> TableCell {
    fmt_num(v, 2)
}

fn base_result(spec: &AnalysisSpec) -> AnalysisResult {
    AnalysisResult {
        kind: spec.kind,
        test_id: TEST_ID.into(),
        title: spec.title.clone().unwrap_or_else(|| "Found, partial and missed oracle findings; noise".to_string()),
        description: "Each oracle finding is found, partial or missed in each run (a cell's repeat over its cases); each other report is an extra, real or rejected. Recall (strict) = found / oracle findings; with partials = (found + partial) / oracle findings; noise = rejected extras / everything reported; tokens per case = reported prompt + completion tokens / cases; recall per 100k tokens = strict recall / (tokens per case / 100 000). `–`: undefined (no oracle finding, nothing reported, or no tokens reported).".to_string(),
        rule: Some(spec.oracle_rule.describe()),
        tables: Vec::new(),
        data: crate::analysis::data::Data::null(),
        notes: Vec::new(),
        headline: Vec::new(),
    }
}

fn score_cells(s: &Scores) -> Vec<TableCell> {
    vec![
        s.counts.oracle.into(),
        s.counts.found.into(),
        s.counts.partial.into(),
        s.counts.missed.into(),
        s.counts.reported.into(),
        format!("{} / {}", s.counts.extras_real, s.counts.extras_rejected).into(),
        fmt_ratio(s.recall_strict),
        fmt_ratio(s.recall_with_partials),
        fmt_ratio(s.noise),
        opt_tokens(s.tokens_per_case),
        opt_rate(s.recall_per_100k_tokens),
    ]
}

const SCORE_COLUMNS: [&str; 11] = [
    "Oracle findings",
    "Found",
    "Partial",
    "Missed",
    "Reported",
    "Extras real / rejected",
    "Recall (strict)",
    "Recall (with partials)",
    "Noise",
    "Tokens / case",
    "Recall / 100k tokens",
];

/// `review-eval` (seed 003): recall and noise against the oracle, charted per cell; people's
/// adjudications may decide its runs.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::REVIEW_EVAL, compute).with_charts(charts).taking_adjudication();

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut result = base_result(spec);
    let Some(oracle) = input.oracle else {
        result.notes.push("No oracle: the target is neither a corpus with `oracle.json` nor an eval set, so nothing can be scored.".into());
        return result;
    };
    let (mut scored, unknown) = score_runs_judged(&input.runs, oracle, &spec.oracle_rule, input.match_votes());
    let (method, method_notes) =
        adjudicate_described(&mut scored, input.adjudication(spec), with_jury(describe_rule_for(&spec.oracle_rule, oracle), input.match_votes()));
    result.rule = Some(method.describe());
    let cells: Vec<CellEval> = input
        .cells
        .iter()
        .filter_map(|cell| {
            let runs: Vec<&ScoredRun<'_>> = scored.iter().filter(|r| r.view.cell.id == cell.id).collect();
            (!runs.is_empty()).then(|| cell_eval(cell, &runs))
        })
        .collect();
    let mut cells = cells;
    if let Ok(Some(weighing)) = crate::analysis::matching::probability::Weighing::of(spec, input) {
        weigh_findings(&mut cells, &scored, oracle, &spec.oracle_rule, &weighing);
    }
    result.tables = tables(oracle, &cells);
    let by_class = recall_by_class(oracle, &cells);
    if !by_class.is_empty() {
        // After "Recall by category", before the per-finding grid.
        let at = result.tables.len().saturating_sub(1);
        result.tables.insert(at, class_table(&by_class));
    }
    // Split at the training cut-offs only where a reviewer declares one.
    let by_cutoff = match input.training_cutoffs() {
        Some(cutoffs) => {
            let verdicts: Vec<super::contamination::CellVerdicts<'_>> = cells
                .iter()
                .map(|c| super::contamination::CellVerdicts {
                    cell: &c.cell,
                    verdicts: c.runs.iter().flat_map(|r| r.cases.iter()).flat_map(|case| case.verdicts.iter()).map(|v| (v.finding.as_str(), v.verdict)).collect(),
                })
                .collect();
            super::contamination::recall_by_cutoff(oracle, &verdicts, cutoffs)
        }
        None => Vec::new(),
    };
    if !by_cutoff.is_empty() {
        let (table, note) = super::contamination::cutoff_table(&by_cutoff);
        let at = result.tables.len().saturating_sub(1);
        result.tables.insert(at, table);
        result.notes.push(note);
        if by_cutoff.iter().all(|r| r.before + r.after == 0) {
            result.notes.push("The oracle gives no fix dates (`fixed`), so recall cannot be split at the training cut-off: mine it with `runner oracle mine`.".into());
        }
    }
    if method_notes.is_empty() {
        result.notes.push("Method: automatic matching by the rule above (no adjudication); extras are `rejected` unless an adjudication says `real`.".into());
    } else {
        result.notes.extend(method_notes);
    }
    if !unknown.is_empty() {
        result.notes.push(format!("Subjects not in the oracle, left out: {}.", unknown.join(", ")));
    }
    if !input.missing.is_empty() {
        result.notes.push(format!("{} planned runs have no result and are left out.", input.missing.len()));
    }
    if cells.iter().all(|c| c.scores.tokens.is_none()) {
        result.notes.push("No run reported tokens, so tokens per case and recall per 100k tokens are `–`.".into());
    }
    let severities = cells.iter().flat_map(|c| c.findings.values()).filter_map(|f| Some((f.finding.clone(), oracle.finding(&f.finding)?.severity?))).collect();
    result.data = serde_json::to_value(ReviewEvalData { method, cells, severities, recall_by_class: by_class, recall_by_cutoff: by_cutoff }).unwrap_or(serde_json::Value::Null).into();
    result
}

/// Each cell's oracle findings' probability of being found ([`FindingEval::p_found`]).
fn weigh_findings(cells: &mut [CellEval], scored: &[ScoredRun<'_>], oracle: &Oracle, rule: &crate::analysis::matching::rule::OracleRule, weighing: &crate::analysis::matching::probability::Weighing<'_>) {
    let mut sums: BTreeMap<(&str, String), (f64, usize)> = BTreeMap::new();
    for run in scored {
        let expected = oracle.expected_for(run.view.subject);
        let (probabilities, _) = weighing.run(run, &expected, rule);
        for (v, p) in run.case.verdicts.iter().zip(probabilities) {
            let p = p.unwrap_or(if v.verdict == Verdict::Found { 1.0 } else { 0.0 });
            let sum = sums.entry((run.view.cell.id.as_str(), finding_key(run.view.subject, &v.finding))).or_default();
            sum.0 += p;
            sum.1 += 1;
        }
    }
    for cell in cells {
        for (key, finding) in &mut cell.findings {
            finding.p_found = sums.get(&(cell.cell.as_str(), key.clone())).map(|(sum, n)| sum / *n as f64);
        }
    }
}

fn tables(oracle: &Oracle, cells: &[CellEval]) -> Vec<Table> {
    let with = |first: &[&str]| first.iter().copied().chain(SCORE_COLUMNS).map(String::from).collect::<Vec<_>>();
    let mut per_cell = Table::with_columns("Per cell (all repeats)", with(&["Cell", "Repeats"]));
    let mut per_run = Table::with_columns("Per run", with(&["Cell", "Repeat"]));
    let mut per_case = Table::with_columns("Per case (repeats summed)", with(&["Cell", "Case"]));
    let mut per_class = Table::with_columns(
        "Recall by category",
        ["Cell", "Category", "Oracle findings", "Found", "Partial", "Recall (strict)", "Recall (with partials)"].map(String::from).to_vec(),
    );
    let mut grid = Table::with_columns(
        "Verdict per oracle finding (most frequent over repeats)",
        ["Finding", "Case", "Category"].iter().map(|s| s.to_string()).chain(cells.iter().map(|c| format!("`{}`", c.cell))).collect(),
    );
    for c in cells {
        let mut row: Vec<TableCell> = vec![format!("`{}`", c.cell).into(), c.runs.len().into()];
        row.extend(score_cells(&c.scores));
        per_cell.push(row);
        let mut by_case: BTreeMap<&str, Scores> = BTreeMap::new();
        let mut by_class: BTreeMap<String, MatchCounts> = BTreeMap::new();
        for run in &c.runs {
            let mut row: Vec<TableCell> = vec![format!("`{}`", c.cell).into(), run.repeat.into()];
            row.extend(score_cells(&run.scores));
            per_run.push(row);
            for case in &run.cases {
                by_case.entry(&case.case).or_default().merge(&case.scores);
                for v in &case.verdicts {
                    let class = oracle.finding(&v.finding).and_then(|f| f.category).map(|c| c.as_str().to_string()).unwrap_or_else(|| "uncategorized".into());
                    by_class.entry(class).or_default().add_verdict(v.verdict);
                }
            }
        }
        for (case, s) in by_case {
            let mut row: Vec<TableCell> = vec![format!("`{}`", c.cell).into(), case.into()];
            row.extend(score_cells(&s.finish()));
            per_case.push(row);
        }
        for (class, m) in by_class {
            per_class.push(vec![
                format!("`{}`", c.cell).into(),
                class.into(),
                m.oracle.into(),
                m.found.into(),
                m.partial.into(),
                fmt_ratio(m.recall_strict()),
                fmt_ratio(m.recall_with_partials()),
            ]);
        }
    }
    let mut keys: Vec<(&str, &str)> = cells.iter().flat_map(|c| c.findings.values().map(|f| (f.case.as_str(), f.finding.as_str()))).collect();
    keys.sort_unstable();
    keys.dedup();
    for (case, finding) in keys {
        let category = oracle.finding(finding).and_then(|f| f.category).map(|c| c.as_str().to_string()).unwrap_or_else(|| "–".into());
        let mut row: Vec<TableCell> = vec![finding.into(), case.into(), category.into()];
        for c in cells {
            row.push(c.findings.get(&finding_key(case, finding)).map(FindingEval::describe).unwrap_or_else(|| "–".into()).into());
        }
        grid.push(row);
    }
    vec![per_cell, per_run, per_case, per_class, grid]
}

/// Seed 003: recall per cell with its Wilson interval, and recall by the oracle's severity.
pub(crate) fn charts(analysis: &AnalysisResult, labels: &dyn ChartCells) -> Vec<Named> {
    let Ok(data) = analysis.data_as::<ReviewEvalData>() else { return Vec::new() };
    if data.cells.is_empty() {
        return Vec::new();
    }
    let mut out = vec![Named {
        name: "recall",
        chart: Chart::Interval(IntervalChart {
            title: "Recall (strict) per cell".into(),
            interval:
                "Whiskers: Wilson 95 % interval of found / oracle findings, every repeat's verdict counted (repeats are not independent, so it is optimistic)."
                    .into(),
            x_label: "recall (strict)".into(),
            points: data
                .cells
                .iter()
                .map(|c| {
                    let interval = wilson(c.scores.counts.found, c.scores.counts.oracle);
                    IntervalPoint { label: labels.label(&c.cell), value: c.scores.recall_strict, low: interval.map(|i| i.0), high: interval.map(|i| i.1) }
                })
                .collect(),
            range: Some((0.0, 1.0)),
            digits: 3,
        }),
    }];
    if !data.severities.is_empty() {
        let oracle_count = |s: Severity| data.severities.values().filter(|v| **v == s).count();
        let severities: Vec<Severity> = Severity::ALL.into_iter().filter(|s| oracle_count(*s) > 0).collect();
        let recall = |cell: &CellEval, s: Severity| {
            let (mut found, mut all) = (0usize, 0usize);
            for f in cell.findings.values().filter(|f| data.severities.get(&f.finding) == Some(&s)) {
                found += f.found;
                all += f.found + f.partial + f.missed;
            }
            crate::analysis::ratio(found as f64, all as f64)
        };
        out.push(Named {
            name: "severity",
            chart: Chart::Bars(BarChart {
                title: "Recall (strict) by the oracle's severity".into(),
                note: "Found / verdicts on the oracle findings of each severity, over every repeat; the count is the oracle findings of that severity.".into(),
                x_label: "recall (strict)".into(),
                groups: severities
                    .iter()
                    .map(|s| {
                        let n = oracle_count(*s);
                        format!("{} ({n} oracle finding{})", s.as_str(), if n == 1 { "" } else { "s" })
                    })
                    .collect(),
                series: data.cells.iter().map(|c| Series { name: labels.label(&c.cell), values: severities.iter().map(|s| recall(c, *s)).collect() }).collect(),
                range: Some((0.0, 1.0)),
                digits: 3,
            }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::matching::matcher::match_case;
    use crate::analysis::matching::matcher::tests::{oracle as ofinding, record, reported};
    use crate::analysis::spec::OracleRule;
    use crate::analysis::RunView;
    use crate::finding::Category;

    #[test]
    fn noise_recall_and_tokens_by_hand() {
        let f1 = ofinding("F1", "a.rs", 10, Category::Bug, "the cache stores a rejected promise and serves it stale");
        let f2 = ofinding("F2", "a.rs", 50, Category::Security, "unvalidated direction is interpolated into the sql order clause");
        let rule = OracleRule::default();
        let cell = crate::matrix::Cell { id: "m=a".into(), values: Default::default() };
        // Case c1: F1 found; two rejected extras. Case c2 (clean): one rejected extra.
        let c1 = vec![
            reported("r1", "a.rs", 10, Category::Bug, "rejected promise is cached"),
            reported("r2", "a.rs", 30, Category::Style, "rename this"),
            reported("r3", "b.rs", 1, Category::Style, "typo"),
        ];
        let c2 = vec![reported("r4", "x.rs", 3, Category::Style, "nit")];
        let rec1 = record(&cell, Some(30_000));
        let rec2 = record(&cell, Some(10_000));
        let runs = [
            ScoredRun {
                view: RunView { cell: &cell, repeat: 1, subject: "c1", record: &rec1, findings: &c1, order: 0 },
                case: match_case(&c1, &[&f1, &f2], &rule),
            },
            ScoredRun { view: RunView { cell: &cell, repeat: 1, subject: "c2", record: &rec2, findings: &c2, order: 0 }, case: match_case(&c2, &[], &rule) },
        ];
        let eval = cell_eval(&cell, &runs.iter().collect::<Vec<_>>());
        let s = &eval.runs[0].scores;
        assert_eq!((s.counts.oracle, s.counts.found, s.counts.missed, s.counts.reported, s.counts.extras_rejected), (2, 1, 1, 4, 3));
        assert_eq!(s.recall_strict, Some(0.5));
        assert_eq!(s.noise, Some(0.75));
        assert_eq!(s.tokens_per_case, Some(20_000.0));
        // 0.5 / (20 000 / 100 000) = 2.5
        assert_eq!(s.recall_per_100k_tokens, Some(2.5));
        let clean = &eval.runs[0].cases[1].scores;
        assert_eq!(clean.recall_strict, None);
        assert_eq!(clean.noise, Some(1.0));
        assert_eq!(eval.findings["c1/F1"].verdict, Verdict::Found);
        assert_eq!(eval.findings["c1/F2"].describe(), "missed 1/1");
    }

    #[test]
    fn an_adjudication_file_flips_verdicts_and_noise() {
        use crate::analysis::matching::adjudication::adjudicate;
        use crate::analysis::matching::adjudication::{AdjudicatedFinding, AdjudicatedRun, Adjudication, Seed003Verdict};
        use crate::analysis::corpus::score::{Claim, Disposition};
        let f1 = ofinding("F1", "a.rs", 10, Category::Bug, "the cache stores a rejected promise and serves it stale");
        let rule = OracleRule::default();
        let cell = crate::matrix::Cell { id: "m=a".into(), values: Default::default() };
        // Automatic: the report is 40 lines away, so F1 is missed and both reports are rejected extras.
        let c1 =
            vec![reported("r1", "a.rs", 50, Category::Style, "promise cached after failure"), reported("r2", "b.rs", 1, Category::Bug, "leaks a file handle")];
        let rec = record(&cell, None);
        let view = RunView { cell: &cell, repeat: 1, subject: "c1", record: &rec, findings: &c1, order: 0 };
        let automatic = cell_eval(&cell, &[&ScoredRun { view, case: match_case(&c1, &[&f1], &rule) }]);
        let s = &automatic.scores;
        assert_eq!((s.counts.found, s.counts.missed, s.counts.extras_real, s.counts.extras_rejected), (0, 1, 0, 2));
        assert_eq!(s.noise, Some(1.0));
        let finding = |item: &str, id: &str, disposition: &str, d: Disposition| AdjudicatedFinding {
            item: item.into(),
            finding: id.into(),
            disposition: disposition.into(),
            claim: Claim { id: if disposition == "found" { "F1".into() } else { format!("c1-{id}") }, disposition: d },
            note: String::new(),
        };
        let adjudication = Adjudication {
            version: 1,
            method: "adjudicated by a person: sheet.csv".into(),
            sheet: "sheet.csv".into(),
            key: "key.json".into(),
            experiment: "x".into(),
            runs: vec![AdjudicatedRun {
                cell: "m=a".into(),
                repeat: 1,
                case: "c1".into(),
                reported: vec![finding("i1", "r1", "found", Disposition::Verified), finding("i2", "r2", "real", Disposition::Unresolved)],
                oracle: [("F1".to_string(), Seed003Verdict::Found)].into(),
                real_extras: 1,
                rejected_extras: 0,
            }],
        };
        let other = crate::matrix::Cell { id: "m=b".into(), values: Default::default() };
        let other_view = RunView { cell: &other, repeat: 1, subject: "c1", record: &rec, findings: &c1, order: 0 };
        let mut scored = vec![ScoredRun { view, case: match_case(&c1, &[&f1], &rule) }, ScoredRun { view: other_view, case: match_case(&c1, &[&f1], &rule) }];
        let (method, notes) = adjudicate(&mut scored, Some(&adjudication), &rule);
        assert!(method.describe().starts_with("adjudication `sheet.csv`"), "{}", method.describe());
        assert!(notes[0].contains("sheet `sheet.csv`") && notes[0].contains("1 of 2 runs") && notes[0].contains("`m=a` repeat 1 on `c1`"), "{notes:?}");
        assert!(notes[1].contains("1 runs") && notes[1].contains("`m=b` repeat 1 on `c1`"), "{notes:?}");
        let adjudicated = cell_eval(&cell, &[&scored[0]]);
        let s = &adjudicated.scores;
        // F1 found by a person through r1, which is no longer an extra; r2 is a real extra: no noise.
        assert_eq!((s.counts.found, s.counts.missed, s.counts.extras_real, s.counts.extras_rejected), (1, 0, 1, 0));
        assert_eq!(s.recall_strict, Some(1.0));
        assert_eq!(s.noise, Some(0.0));
        assert_eq!(adjudicated.runs[0].cases[0].verdicts[0].reported.as_ref().map(|r| r.id.as_str()), Some("r1"));
        // The run without an adjudication keeps its automatic verdicts.
        assert_eq!(scored[1].case, match_case(&c1, &[&f1], &rule));
        let (method, notes) = adjudicate(&mut scored, None, &rule);
        assert!(matches!(method, Method::Automatic { .. }) && notes.is_empty());
    }

    #[test]
    fn the_data_names_each_scored_oracle_findings_severity() {
        use crate::analysis::test_support::{finding, s, spec, with_kind, Fixture};
        use crate::finding::Severity;
        use crate::ground_truth::oracle::{GroundTruth, OracleCase, Outcome};
        let mut f1 = ofinding("F1", "a.rs", 10, Category::Bug, "the cache stores a rejected promise and serves it stale");
        f1.severity = Some(Severity::Error);
        let f2 = ofinding("F2", "a.rs", 50, Category::Security, "unvalidated direction is interpolated into the sql order clause");
        let case = OracleCase {
            id: "c1".into(),
            expected_finding_ids: vec!["F1".into(), "F2".into()],
            rationale: String::new(),
            split: None,
            interpreter: None,
            ground_truth: GroundTruth { before: Outcome::Pass, after: Outcome::Fail, program: String::new() },
        };
        let oracle = Oracle { version: 1, findings: vec![f1, f2], cases: vec![case], skipped: Vec::new() };
        let mut fx = Fixture::new(&[("m", vec![s("a")])], 1);
        fx.add("m=a", 1, "c1", vec![with_kind(finding("a.rs", 10, "rejected promise is cached"), Category::Bug, Severity::Error)]);
        let mut input = fx.input();
        input.oracle = Some(&oracle);
        let out = compute(&spec(crate::analysis::spec::AnalysisKind::REVIEW_EVAL, None), &input);
        let data: ReviewEvalData = out.data_as().expect("typed data");
        // F2 has no severity in the oracle, so only F1 is named.
        assert_eq!(data.severities, BTreeMap::from([("F1".to_string(), Severity::Error)]));
        assert_eq!(out.data["severities"]["F1"], "error");
    }

    #[test]
    fn recall_is_reported_by_class() {
        use crate::analysis::test_support::{finding, s, spec, with_kind, Fixture};
        use crate::finding::Severity;
        use crate::ground_truth::oracle::OracleCase;
        let mut f1 = ofinding("c1/F1", "a.rs", 10, Category::Bug, "the cache stores a rejected promise and serves it stale");
        f1.class = Some("state".into());
        let mut f2 = ofinding("c1/F2", "a.rs", 50, Category::Security, "unvalidated direction is interpolated into the sql order clause");
        f2.class = Some("validation".into());
        let mut f3 = ofinding("c1/F3", "b.rs", 5, Category::Bug, "the retry counter is never reset after a success");
        f3.class = Some("state".into());
        let case = OracleCase {
            id: "c1".into(),
            expected_finding_ids: vec!["c1/F1".into(), "c1/F2".into(), "c1/F3".into()],
            rationale: String::new(),
            split: None,
            interpreter: None,
            ground_truth: Default::default(),
        };
        let oracle = Oracle { version: 1, findings: vec![f1, f2, f3], cases: vec![case], skipped: Vec::new() };
        let mut fx = Fixture::new(&[("m", vec![s("a")])], 1);
        fx.add("m=a", 1, "c1", vec![with_kind(finding("a.rs", 10, "rejected promise is cached"), Category::Bug, Severity::Error)]);
        let mut input = fx.input();
        input.oracle = Some(&oracle);
        let out = compute(&spec(crate::analysis::spec::AnalysisKind::REVIEW_EVAL, None), &input);
        let data: ReviewEvalData = out.data_as().expect("typed data");
        let classes: Vec<(&str, usize, usize, Option<f64>)> =
            data.recall_by_class.iter().map(|r| (r.class.as_str(), r.oracle, r.found, r.recall_strict)).collect();
        assert_eq!(classes, vec![("state", 2, 1, Some(0.5)), ("validation", 1, 0, Some(0.0))]);
        let table = out.tables.iter().find(|t| t.title == "Recall by class").expect("a class table");
        assert_eq!(table.rows.len(), 2);
    }

    #[test]
    fn consensus_ties_go_to_the_worse_verdict() {
        assert_eq!(consensus(1, 0, 1), Verdict::Missed);
        assert_eq!(consensus(2, 1, 1), Verdict::Found);
        assert_eq!(consensus(1, 1, 0), Verdict::Partial);
    }
}
