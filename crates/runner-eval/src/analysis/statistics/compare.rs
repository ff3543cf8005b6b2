//! Paired comparisons: is configuration B better than A, or is the difference noise?
//!
//! For each metric with a value per subject, two cells that differ in one axis (all other axes
//! equal) are compared on the subjects both have a value for: the mean of the per-subject
//! differences B − A, a paired bootstrap interval over subjects, and an exact (or seeded Monte
//! Carlo) sign-flip permutation test on the differences. Oracle findings give a second paired
//! test, McNemar's, on found/missed pairs. Repeats are the second level: the standard deviation
//! of the cell metric across repeats is shown beside the interval, so run-to-run variance is
//! visible. The p-values of one table are corrected together (Holm). Same seed, same bytes.

use crate::analysis::definition::{Definition, OptionsContext};
use crate::analysis::spec::{AnalysisKind, AnalysisOptions, MatchRule};
use crate::config::{did_you_mean, TableReader};
use crate::analysis::chart::{BarChart, Chart, ChartCells, IntervalChart, IntervalPoint, Named, Series};
use crate::analysis::matching::probability::Weighing;
use crate::analysis::efficacy::repeatability::jaccard;
use crate::analysis::matching::adjudication::adjudicate_described;
use crate::analysis::matching::matcher::{describe_rule_for, score_runs_judged, with_jury, MatchCounts, ScoredRun, Verdict};
use crate::analysis::matching::rule::DecisionModel;
use crate::analysis::rqs::metric::{RqsScores, RunPart, RunParts};
use crate::analysis::spec::{AnalysisSpec, CompareMetric, CompareOptions};
use crate::analysis::{model::AnalysisInput, model::AnalysisResult, model::RunView, model::Table, model::TableCell};
use crate::matrix::Cell;
use crate::stats::{self, Interval, IntervalMethod, McNemar, PermutationTest};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// No seed test of its own: it tests the metrics of the others.
pub(crate) const TEST_ID: &str = "";

/// One cell's values of one metric: per subject (pooled over the cell's repeats), and per
/// repeat (the mean over subjects of that repeat's runs) for the run-to-run spread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricValues {
    /// Subject id → the subject's value; subjects where the metric is undefined are absent.
    pub subjects: BTreeMap<String, f64>,
    /// The cell metric of each repeat, in repeat order (undefined repeats left out).
    pub repeats: Vec<f64>,
    /// Standard deviation of `repeats` (n − 1); `null` with fewer than two repeats.
    pub repeat_sd: Option<f64>,
}

/// A cell's per-subject values of every compared metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellMetrics {
    pub cell: String,
    pub values: BTreeMap<String, String>,
    /// Metric name → values.
    pub metrics: BTreeMap<String, MetricValues>,
    /// Metric name → the subjects' values with each matching decision weighted by how sure
    /// it is (oracle metrics, where the rule has a decision model).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub matching: BTreeMap<String, MetricValues>,
    /// Where judges asked several times decide the matching: per sample, metric name → the
    /// subjects' values with each judge's answer in that sample alone (oracle metrics), so a
    /// gate can require a pass in k of N samples (`runner diff --judge-samples-pass`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge_samples: Vec<BTreeMap<String, MetricValues>>,
}

/// What a comparison says, in words a reader acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    Better,
    Worse,
    /// A significant difference in a metric with no better direction (finding counts).
    Higher,
    Lower,
    /// Significant, but smaller than the minimum effect asked for.
    BelowMinEffect,
    NoDetectableDifference,
    /// Too few paired subjects to test.
    Untestable,
    /// So few subjects (with a difference) that the test's smallest attainable p is at least
    /// alpha: no outcome could have been significant.
    CannotBeSignificant,
}

impl Conclusion {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Better => "better",
            Self::Worse => "worse",
            Self::Higher => "higher",
            Self::Lower => "lower",
            Self::BelowMinEffect => "difference below the minimum effect",
            Self::NoDetectableDifference => "no detectable difference",
            Self::Untestable => "not testable",
            Self::CannotBeSignificant => "cannot be significant",
        }
    }
}

/// The decision rule shared by the comparison table and `runner diff`: significant when the
/// (corrected) p-value is below `alpha` and the interval excludes zero; then the direction of
/// the metric decides; an effect smaller than `min_effect` is reported as such.
pub(crate) fn conclude(metric: CompareMetric, difference: f64, interval: Option<&Interval>, p: Option<f64>, alpha: f64, min_effect: f64) -> Conclusion {
    let (Some(interval), Some(p)) = (interval, p) else { return Conclusion::Untestable };
    let excludes_zero = interval.low > 0.0 || interval.high < 0.0;
    if p >= alpha || !excludes_zero || difference == 0.0 {
        return Conclusion::NoDetectableDifference;
    }
    if difference.abs() < min_effect {
        return Conclusion::BelowMinEffect;
    }
    match (metric.higher_is_better(), difference > 0.0) {
        (Some(true), true) | (Some(false), false) => Conclusion::Better,
        (Some(_), _) => Conclusion::Worse,
        (None, true) => Conclusion::Higher,
        (None, false) => Conclusion::Lower,
    }
}

/// One paired comparison of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub metric: CompareMetric,
    /// The other axes' values both cells share (`–` when there are none).
    pub group: String,
    pub a: String,
    pub b: String,
    /// The compared axis's values (or the cells' ids when compared by name).
    pub a_label: String,
    pub b_label: String,
    /// Subjects with a value on both sides.
    pub subjects: usize,
    /// Of those, subjects whose difference is not zero.
    #[serde(default)]
    pub differing: usize,
    /// The smallest p the test can give with these subjects (`stats::sign_flip_floor`).
    #[serde(default)]
    pub min_p: Option<f64>,
    /// Mean of A's and B's values over the paired subjects.
    pub a_mean: Option<f64>,
    pub b_mean: Option<f64>,
    /// Mean per-subject difference B − A.
    pub difference: Option<f64>,
    pub interval: Option<Interval>,
    pub test: Option<PermutationTest>,
    /// The test's p-value corrected over the table (Holm).
    pub p_holm: Option<f64>,
    pub a_repeat_sd: Option<f64>,
    pub b_repeat_sd: Option<f64>,
    /// The significance level the conclusion was drawn at.
    #[serde(default)]
    pub alpha: f64,
    pub conclusion: Conclusion,
    /// The comparison with each matching decision weighted by how sure it is, where the
    /// matching rule's calibration has a decision model (oracle metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<UnderMatching>,
}

impl Comparison {
    /// The verdict in words: the conclusion, or for one that cannot be significant, why:
    /// `3 subjects: cannot be significant at α = 0.05`.
    pub fn verdict(&self) -> String {
        if self.conclusion != Conclusion::CannotBeSignificant {
            return self.conclusion.as_str().to_string();
        }
        let n = self.subjects;
        let subjects = format!("{n} subject{}", if n == 1 { "" } else { "s" });
        let differing = match self.differing {
            m if m == n => String::new(),
            0 => ", none differing".to_string(),
            m => format!(", {m} differing"),
        };
        format!("{subjects}{differing}: cannot be significant at α = {}", self.alpha)
    }
}

/// McNemar's test on one pair of cells: each oracle finding's consensus verdict (most frequent
/// over repeats, ties to the worse) as found or not found on each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingPairs {
    pub group: String,
    pub a: String,
    pub b: String,
    pub a_label: String,
    pub b_label: String,
    /// Oracle findings of the subjects both sides reviewed.
    pub findings: usize,
    pub both: u64,
    pub neither: u64,
    pub test: McNemar,
    pub p_holm: f64,
}

/// The analysis's machine-readable result (`runner diff --metric` reads `cells`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareData {
    pub axis: Option<String>,
    pub baseline: Option<String>,
    pub resamples: usize,
    pub seed: u64,
    pub alpha: f64,
    pub min_effect: f64,
    pub interval: IntervalMethod,
    pub level: f64,
    /// The metrics whose verdict lines open RESULTS.md.
    #[serde(default)]
    pub headline: Vec<CompareMetric>,
    pub cells: Vec<CellMetrics>,
    pub comparisons: Vec<Comparison>,
    pub finding_pairs: Vec<FindingPairs>,
    /// How the decisions were weighted, where they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<MatchingSummary>,
}

/// The decisions a comparison under matching uncertainty weighed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchingSummary {
    /// Decisions with a report at the place, over every run, and of them the borderline ones.
    pub decisions: usize,
    pub borderline: usize,
    /// The decision model's out-of-fold Brier score, and that of the rule's own 0/1 calls;
    /// absent where no decision model weighed (the judges' vote shares alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brier: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brier_decisions: Option<f64>,
    /// Decisions the judges made (`evidence = "judge"`), weighed by their vote share over
    /// every judge and sample rather than by the decision model; and how many judges and
    /// samples each answered.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub judged: usize,
    /// Per tenth of probability: this execution's decisions, and the calibration's cells with
    /// their mean prediction and observed share.
    pub bins: Vec<MatchingBin>,
}

/// One tenth of probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchingBin {
    pub from: f64,
    pub to: f64,
    pub decisions: usize,
    pub calibration_cells: u32,
    pub predicted: Option<f64>,
    pub observed: Option<f64>,
}

/// The runs of one cell, grouped by subject and by repeat.
struct CellRuns<'r, 'a> {
    by_subject: BTreeMap<&'a str, Vec<&'r RunView<'a>>>,
    by_repeat: BTreeMap<u32, Vec<&'r RunView<'a>>>,
}

fn group_runs<'r, 'a>(runs: impl Iterator<Item = &'r RunView<'a>>) -> CellRuns<'r, 'a> {
    let mut out = CellRuns { by_subject: BTreeMap::new(), by_repeat: BTreeMap::new() };
    for run in runs {
        out.by_subject.entry(run.subject).or_default().push(run);
        out.by_repeat.entry(run.repeat).or_default().push(run);
    }
    out
}

/// What the metrics are computed from: each run's oracle counts and RQS v2 part, by
/// (cell, repeat, subject).
struct Sources<'o> {
    counts: BTreeMap<(String, u32, String), MatchCounts>,
    rqs: BTreeMap<(String, u32, String), RunPart>,
    /// Each run's (resolved, counted) findings from git (`resolution`).
    resolution: crate::analysis::rqs::resolution::RunCounts,
    options: &'o CompareOptions,
}

fn run_key(run: &RunView<'_>) -> (String, u32, String) {
    (run.cell.id.clone(), run.repeat, run.subject.to_string())
}

/// A metric over a set of runs (one subject's repeats, or one repeat's subjects): counts are
/// pooled over the runs, so a rate is one ratio of sums.
fn metric_of(metric: CompareMetric, runs: &[&RunView<'_>], sources: &Sources<'_>) -> Option<f64> {
    if runs.is_empty() {
        return None;
    }
    let pooled = || {
        let mut sum = MatchCounts::default();
        let mut any = false;
        for run in runs {
            if let Some(c) = sources.counts.get(&run_key(run)) {
                sum += *c;
                any = true;
            }
        }
        any.then_some(sum)
    };
    match metric {
        CompareMetric::Findings => Some(runs.iter().map(|r| r.findings.len() as f64).sum::<f64>() / runs.len() as f64),
        CompareMetric::Recall | CompareMetric::RecallWithPartials | CompareMetric::Precision | CompareMetric::F1 | CompareMetric::Noise => {
            pooled().and_then(|c| metric_from_counts(metric, &c))
        }
        CompareMetric::Resolution => {
            let (resolved, counted) = runs.iter().filter_map(|r| sources.resolution.get(&run_key(r))).fold((0, 0), |(a, b), (r, c)| (a + r, b + c));
            crate::analysis::model::ratio(resolved as f64, counted as f64)
        }
        CompareMetric::Jaccard => {
            // Mean pairwise Jaccard between the repeats given (A4); a single run has none.
            let mut total = 0.0;
            let mut pairs = 0usize;
            for i in 0..runs.len() {
                for j in i + 1..runs.len() {
                    total += jaccard(runs[i].findings, runs[j].findings, &sources.options.matching);
                    pairs += 1;
                }
            }
            (pairs > 0).then(|| total / pairs as f64)
        }
        CompareMetric::RqsHeadline
        | CompareMetric::WeightedRecall
        | CompareMetric::JuryPrecision
        | CompareMetric::Actionability
        | CompareMetric::Conciseness
        | CompareMetric::Comprehensiveness
        | CompareMetric::Relevance => {
            let parts: Vec<RunPart> = runs.iter().filter_map(|r| sources.rqs.get(&run_key(r)).copied()).collect();
            if parts.is_empty() {
                return None;
            }
            let scores = RqsScores::of(&parts);
            match metric {
                CompareMetric::RqsHeadline => scores.headline,
                CompareMetric::WeightedRecall => scores.weighted_recall,
                CompareMetric::JuryPrecision => scores.precision_jury,
                CompareMetric::Actionability => scores.actionability,
                CompareMetric::Conciseness => scores.conciseness,
                CompareMetric::Comprehensiveness => scores.comprehensiveness,
                _ => scores.relevance,
            }
        }
    }
}

/// An oracle metric from pooled counts; `None` for the metrics that are not counted
/// (finding counts, Jaccard) and where the rate is undefined.
pub fn metric_from_counts(metric: CompareMetric, c: &MatchCounts) -> Option<f64> {
    match metric {
        CompareMetric::Recall => c.recall(),
        CompareMetric::RecallWithPartials => c.recall_with_partials(),
        CompareMetric::Precision => c.precision(),
        // 2TP / (2TP + FP + FN): equal to 2PR / (P + R) where both are defined, and also
        // defined (0) for a subject where nothing was reported but something was expected.
        CompareMetric::F1 => {
            let (tp, fp, fn_) = (c.tp() as f64, c.fp() as f64, c.fn_() as f64);
            crate::analysis::model::ratio(2.0 * tp, 2.0 * tp + fp + fn_)
        }
        CompareMetric::Noise => c.noise(),
        _ => None,
    }
}

/// Every compared metric of one cell.
fn cell_metrics(cell: &Cell, runs: &CellRuns<'_, '_>, sources: &Sources<'_>) -> CellMetrics {
    let mut metrics = BTreeMap::new();
    for &metric in &sources.options.metrics {
        let mut values = MetricValues::default();
        for (subject, subject_runs) in &runs.by_subject {
            if let Some(v) = metric_of(metric, subject_runs, sources) {
                values.subjects.insert(subject.to_string(), v);
            }
        }
        // Each repeat's value is the mean over subjects of that repeat's runs, as the subject
        // level averages subjects. Jaccard is itself a measure across repeats: it has none.
        if metric != CompareMetric::Jaccard {
            values.repeats = runs
                .by_repeat
                .values()
                .filter_map(|r| {
                    let per_subject: Vec<f64> = r.iter().filter_map(|run| metric_of(metric, &[*run], sources)).collect();
                    stats::mean(&per_subject)
                })
                .collect();
        }
        values.repeat_sd = stats::sample_std_dev(&values.repeats);
        metrics.insert(metric.as_str().to_string(), values);
    }
    CellMetrics {
        cell: cell.id.clone(),
        values: cell.values.iter().map(|(k, v)| (k.clone(), v.render())).collect(),
        metrics,
        matching: BTreeMap::new(),
        judge_samples: Vec::new(),
    }
}

/// Pairs two cells' values of one metric and tests the differences.
#[allow(clippy::too_many_arguments)]
pub fn compare_values(
    metric: CompareMetric,
    a: &MetricValues,
    b: &MetricValues,
    options: &CompareOptions,
    group: String,
    (a_cell, b_cell): (&str, &str),
    (a_label, b_label): (&str, &str),
) -> Comparison {
    let mut a_paired = Vec::new();
    let mut b_paired = Vec::new();
    let mut diffs = Vec::new();
    for (subject, av) in &a.subjects {
        if let Some(bv) = b.subjects.get(subject) {
            a_paired.push(*av);
            b_paired.push(*bv);
            diffs.push(bv - av);
        }
    }
    let difference = stats::mean(&diffs);
    let interval = stats::bootstrap_mean_interval(&diffs, options.resamples, options.seed, options.level(), options.interval);
    let test = stats::sign_flip_test(&diffs, options.resamples, options.seed);
    let differing = diffs.iter().filter(|d| **d != 0.0).count();
    Comparison {
        metric,
        group,
        a: a_cell.to_string(),
        b: b_cell.to_string(),
        a_label: a_label.to_string(),
        b_label: b_label.to_string(),
        subjects: diffs.len(),
        differing,
        min_p: stats::sign_flip_floor(diffs.len(), differing, options.resamples),
        a_mean: stats::mean(&a_paired),
        b_mean: stats::mean(&b_paired),
        difference,
        interval,
        test,
        p_holm: None,
        a_repeat_sd: a.repeat_sd,
        b_repeat_sd: b.repeat_sd,
        alpha: options.alpha,
        conclusion: Conclusion::Untestable,
        matching: None,
    }
}

/// Corrects the p-values of `comparisons` together (Holm) and draws each conclusion. A
/// comparison whose smallest attainable p is at least `alpha` cannot be significant, whatever
/// its data, and says so.
pub fn correct_and_conclude(comparisons: &mut [Comparison], alpha: f64, min_effect: f64) {
    let tested: Vec<usize> = (0..comparisons.len()).filter(|&i| comparisons[i].test.is_some()).collect();
    let ps: Vec<f64> = tested.iter().filter_map(|&i| comparisons[i].test.map(|t| t.p_value)).collect();
    for (&i, p) in tested.iter().zip(stats::holm(&ps)) {
        comparisons[i].p_holm = Some(p);
    }
    for c in comparisons.iter_mut() {
        c.alpha = alpha;
        c.conclusion = match c.difference {
            Some(_) if c.test.is_some() && c.min_p.is_some_and(|p| p >= alpha) => Conclusion::CannotBeSignificant,
            Some(d) => conclude(c.metric, d, c.interval.as_ref(), c.p_holm, alpha, min_effect),
            None => Conclusion::Untestable,
        };
    }
}

/// `0.0123` → `0.012`, small values as `< 0.001`.
pub(crate) fn format_p(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

/// A count with thin-space thousands (`10 000`), as the verdict line prints resample counts.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(ch);
    }
    out
}

/// Whether a comparison of `metric` under uncertainty weighs the jury's rubric votes (RQS v2's
/// jury metrics) rather than oracle matching decisions.
pub fn weighed_by_the_jury(metric: CompareMetric) -> bool {
    uncertain::jury_applies(metric)
}

/// The verdict line: `recall, B − A = +0.12 [0.03, 0.21], p = 0.01 (paired permutation, 16
/// subjects, 10 000 resamples): better`.
pub fn verdict_line(c: &Comparison, digits: usize) -> String {
    let matching = match &c.matching {
        Some(m) => {
            let interval = m.interval.map(|i| format!(" [{}, {}]", unsigned_zero(i.low, digits), unsigned_zero(i.high, digits))).unwrap_or_default();
            let difference = m.difference.map(|d| format!(" {}", signed(d, digits))).unwrap_or_default();
            // The jury's metrics are weighed by its rubric votes, the oracle's by the matching.
            let which = if uncertain::jury_applies(c.metric) { "judging" } else { "matching" };
            format!("; with {which} uncertainty{difference}{interval}: {}", matching_words(m))
        }
        None => String::new(),
    };
    let Some(difference) = c.difference else {
        return format!("**{}**, `{}` vs `{}`{}: no subject has a value on both sides{matching}.", c.metric.as_str(), c.b_label, c.a_label, group_suffix(&c.group));
    };
    let interval = c.interval.map(|i| format!(" [{:.digits$}, {:.digits$}]", i.low, i.high)).unwrap_or_default();
    let test = match (c.test, c.p_holm) {
        (Some(t), Some(p_holm)) => {
            let how = if t.exact { format!("exact over {} sign flips", grouped(t.resamples)) } else { format!("{} resamples", grouped(t.resamples)) };
            let holm = if (p_holm - t.p_value).abs() > 1e-12 { format!(", Holm-adjusted {}", format_p(p_holm)) } else { String::new() };
            let p = if t.p_value < 0.001 { "p < 0.001".to_string() } else { format!("p = {}", format_p(t.p_value)) };
            format!(", {p}{holm} (paired permutation, {} subjects, {how})", c.subjects)
        }
        _ => format!(" ({} subjects)", c.subjects),
    };
    format!(
        "**{}**, `{}` − `{}`{} = {:+.digits$}{interval}{test}: **{}**{matching}.",
        c.metric.as_str(),
        c.b_label,
        c.a_label,
        group_suffix(&c.group),
        difference,
        c.verdict()
    )
}

/// `x` to `digits` places, a value that rounds to zero written `0.000` (never `-0.000`).
fn unsigned_zero(x: f64, digits: usize) -> String {
    let text = format!("{x:.digits$}");
    if text.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        text.trim_start_matches('-').to_string()
    } else {
        text
    }
}

/// `x` to `digits` places with its sign, `+0.000` for a value that rounds to zero.
fn signed(x: f64, digits: usize) -> String {
    let text = unsigned_zero(x, digits);
    if text.starts_with('-') {
        text
    } else {
        format!("+{text}")
    }
}

fn group_suffix(group: &str) -> String {
    if group.is_empty() {
        String::new()
    } else {
        format!(" ({group})")
    }
}

/// The pairs of cells a `compare` analysis tests, (A, B), as [`compute`] forms them.
pub fn planned_pairs<'c>(cells: &'c [Arc<Cell>], axis_order: &[String], spec: &AnalysisSpec) -> Vec<(&'c Cell, &'c Cell)> {
    let options = spec.compare().cloned().unwrap_or_default();
    cell_pairs(cells, axis_order, &options, spec.axis.as_deref()).into_iter().map(|(_, a, b, _, _)| (a, b)).collect()
}

/// The pairs of cells compared: along `axis` (each value against the baseline, within each
/// group of the other axes), or every cell against the first when no axis is named.
fn cell_pairs<'c>(
    cells: &'c [Arc<Cell>],
    axis_order: &[String],
    options: &CompareOptions,
    axis: Option<&str>,
) -> Vec<(String, &'c Cell, &'c Cell, String, String)> {
    let mut out = Vec::new();
    match axis {
        Some(axis) => {
            let values = crate::analysis::model::axis_values_of(cells, axis);
            let baseline = options.baseline.clone().or_else(|| values.first().cloned());
            let Some(baseline) = baseline else { return out };
            let mut groups: BTreeMap<String, Vec<&'c Cell>> = BTreeMap::new();
            let mut order: Vec<String> = Vec::new();
            for cell in cells {
                let key = cell.id_without(axis, axis_order);
                if !groups.contains_key(&key) {
                    order.push(key.clone());
                }
                groups.entry(key).or_default().push(cell);
            }
            // The group is named by the other axes that vary; a single-valued axis says nothing.
            let varying: Vec<&String> =
                axis_order.iter().filter(|name| name.as_str() != axis && crate::analysis::model::axis_values_of(cells, name).len() > 1).collect();
            for key in order {
                let cells = &groups[&key];
                let value_of = |c: &Cell| c.get(axis).map(|v| v.render()).unwrap_or_default();
                let Some(a) = cells.iter().find(|c| value_of(c) == baseline) else { continue };
                let group = varying.iter().filter_map(|name| a.get(name).map(|v| format!("{name}={}", v.render()))).collect::<Vec<_>>().join(",");
                for b in cells.iter().filter(|c| value_of(c) != baseline) {
                    out.push((group.clone(), *a, *b, baseline.clone(), value_of(b)));
                }
            }
        }
        None => {
            if let Some((a, rest)) = cells.split_first() {
                for b in rest {
                    out.push((String::new(), a, b, a.id.clone(), b.id.clone()));
                }
            }
        }
    }
    out
}

/// Per-run oracle counts, keyed by (cell, repeat, subject).
fn oracle_counts<'a>(scored: &[ScoredRun<'a>]) -> BTreeMap<(String, u32, String), MatchCounts> {
    scored.iter().map(|r| ((r.view.cell.id.clone(), r.view.repeat, r.view.subject.to_string()), r.case.counts())).collect()
}

/// Each oracle finding's consensus verdict in one cell: found when `found` is the most frequent
/// verdict over the cell's repeats (ties go to the worse verdict).
fn consensus_found(scored: &[ScoredRun<'_>], cell: &str) -> BTreeMap<(String, String), bool> {
    let mut tally: BTreeMap<(String, String), [usize; 3]> = BTreeMap::new();
    for run in scored.iter().filter(|r| r.view.cell.id == cell) {
        for v in &run.case.verdicts {
            let slot = match v.verdict {
                Verdict::Found => 0,
                Verdict::Partial => 1,
                Verdict::Missed => 2,
            };
            tally.entry((run.view.subject.to_string(), v.finding.clone())).or_default()[slot] += 1;
        }
    }
    tally
        .into_iter()
        .map(|(k, [found, partial, missed])| (k, crate::analysis::corpus::review_eval::consensus(found, partial, missed) == Verdict::Found))
        .collect()
}

fn interval_cell(i: Option<&Interval>, digits: u8) -> TableCell {
    match i {
        Some(i) => format!("[{:.d$}, {:.d$}]", i.low, i.high, d = digits as usize).into(),
        None => "–".into(),
    }
}

fn p_cell(p: Option<f64>) -> TableCell {
    p.map(format_p).unwrap_or_else(|| "–".to_string()).into()
}

/// `compare`: paired comparisons between the values of an axis, charted as their differences.
pub(crate) const ANALYSIS: Definition = Definition::new(AnalysisKind::COMPARE, compute)
    .with_options(&["metrics", "headline", "baseline", "resamples", "seed", "alpha", "min-effect", "interval"], read_options)
    .with_charts(charts);

pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    let options = spec.compare().cloned().unwrap_or_default();
    let axis = spec.axis.as_deref();
    let method = match options.interval {
        IntervalMethod::Percentile => "percentile",
        IntervalMethod::Bca => "BCa (bias-corrected and accelerated)",
    };
    let mut result = AnalysisResult::new(
        spec,
        TEST_ID,
        &match axis {
            Some(a) => format!("Did changing `{a}` help?"),
            None => "Did the configuration help?".to_string(),
        },
        format!(
            "Each pair of cells differing only in {} is compared subject by subject: B − A is the mean of the per-subject differences, with a paired {method} bootstrap {:.0}% interval over subjects ({} resamples, seed {}) and a two-sided sign-flip permutation test (exact when the sign patterns number at most the resamples). A subject's value pools its repeats; beside each mean, the standard deviation across repeats of the repeat's mean over subjects shows the run-to-run spread. p-values are Holm-corrected over the table; a difference is called when the corrected p < {} and the interval excludes 0{}. With m subjects whose difference is not zero the test cannot give p below 2/2^m (nor, drawing, below 2/(resamples + 1)): where that is at least alpha, the comparison cannot be significant and says so.",
            axis.map(|a| format!("`{a}`")).unwrap_or_else(|| "their configuration".to_string()),
            options.level() * 100.0,
            grouped(options.resamples),
            options.seed,
            options.alpha,
            if options.min_effect > 0.0 { format!(", and it must be at least {} to count", options.min_effect) } else { String::new() },
        ),
    );
    let needs_oracle = options.metrics.iter().any(|m| m.needs_oracle());
    let mut scored = Vec::new();
    if needs_oracle {
        match input.oracle {
            Some(oracle) => {
                let (mut s, unknown) = score_runs_judged(&input.runs, oracle, &spec.oracle_rule, input.match_votes());
                let (method, notes) =
                    adjudicate_described(&mut s, input.adjudication(spec), with_jury(describe_rule_for(&spec.oracle_rule, oracle), input.match_votes()));
                result.rule = Some(method.describe());
                result.notes.extend(notes);
                if !unknown.is_empty() {
                    result.notes.push(format!("Subjects not in the oracle, left out of the oracle metrics: {}.", unknown.join(", ")));
                }
                scored = s;
            }
            None => {
                result.notes.push("No oracle: recall, precision, F1 and noise cannot be computed; only finding counts and repeatability are compared.".into())
            }
        }
    }
    let quality_measured = (needs_oracle && input.oracle.is_some()) || options.metrics.iter().any(|m| m.needs_scoring() || m.needs_history());
    if options.metrics.contains(&CompareMetric::Findings) && !quality_measured {
        result.notes.push(
            "`findings` counts volume, not quality: a reviewer that flags more wins it, noise included. To compare quality, give the target an oracle (`runner oracle mine` finds the bugs a repository's history shipped, `runner oracle import-github` its review threads) or compare `resolution` (did a later commit change the flagged lines?).".into(),
        );
    }
    if input.rqs().is_none() && options.metrics.iter().any(|m| m.needs_scoring()) {
        result.notes.push("No RQS v2 scoring stages: the RQS metrics are left out (add an `rqs` analysis with its judges and embedder).".into());
    }
    let resolution = match input.repository() {
        Some(repository) if options.metrics.iter().any(|m| m.needs_history()) => {
            let counts = crate::analysis::rqs::resolution::run_counts(input, repository);
            match &counts {
                Some(_) => result.notes.push(format!(
                    "`resolution` is seed 001's rate from git, a proxy that needs no oracle: resolved / counted findings, a finding resolved when one of the {} commits after its commit changed a line within ±{} of it (up to `{}`; a commit with fewer later commits has no value).",
                    repository.options.window,
                    repository.options.tolerance,
                    repository.options.head.as_deref().unwrap_or(&repository.head)
                )),
                None => result.notes.push("`resolution` is left out: the head its findings are followed up to is not a commit of the repository.".into()),
            }
            counts
        }
        _ => None,
    };
    if resolution.is_none() && input.repository().is_none() && options.metrics.iter().any(|m| m.needs_history()) {
        result.notes.push("No history target: `resolution` is left out (it follows findings through a repository's later commits).".into());
    }
    let metrics: Vec<CompareMetric> = options
        .metrics
        .iter()
        .copied()
        .filter(|m| {
            (!m.needs_oracle() || input.oracle.is_some()) && (!m.needs_scoring() || input.rqs().is_some()) && (!m.needs_history() || resolution.is_some())
        })
        .collect();
    let options = CompareOptions { metrics, ..options };
    let rqs_parts = match input.rqs() {
        Some(rqs) if options.metrics.iter().any(|m| m.needs_scoring()) => {
            let parts = RunParts::new(input, rqs, &spec.oracle_rule);
            input.runs.iter().map(|r| (run_key(r), parts.of(r))).collect()
        }
        _ => BTreeMap::new(),
    };
    let sources = Sources { counts: oracle_counts(&scored), rqs: rqs_parts, resolution: resolution.unwrap_or_default(), options: &options };

    // How sure each matching decision is: the rule's decision model, and where the judges
    // have the word, their vote shares (no person's decisions replacing the matcher's).
    let weighing = match Weighing::of(spec, input) {
        Ok(w) if options.metrics.iter().any(|m| uncertain::applies(*m)) => w,
        Ok(_) => None,
        Err(note) => {
            if options.metrics.iter().any(|m| uncertain::applies(*m)) {
                result.notes.push(note.to_string());
            }
            None
        }
    };
    let judged = weighing.and_then(|w| w.votes);
    let decisions = match (input.oracle, weighing) {
        (Some(oracle), Some(w)) => Some((uncertain::run_decisions(&scored, oracle, &spec.oracle_rule, &w), w.model)),
        _ => None,
    };

    // The jury's rubric votes, where its judges can disagree (several judges, or one asked
    // several times): each finding weighed by its share of yes.
    let jury_judged = match input.rqs() {
        Some(rqs) if options.metrics.iter().any(|m| uncertain::jury_applies(*m)) && (rqs.judges.len() > 1 || rqs.judges.iter().any(|j| j.samples > 1)) => Some(
            input
                .runs
                .iter()
                .filter_map(|run| {
                    let scoring = rqs.runs.get(&crate::matrix::RunId::new(run.cell.id.clone(), run.repeat, run.subject.to_string()))?;
                    Some((
                        run_key(run),
                        uncertain::RunJudged {
                            validity: scoring.votes.iter().filter_map(|v| v.share(0)).collect(),
                            actionable: scoring.votes.iter().filter_map(|v| v.share(1)).collect(),
                            recall: sources.rqs.get(&run_key(run)).and_then(RunPart::recall_weights),
                        },
                    ))
                })
                .collect::<BTreeMap<_, _>>(),
        ),
        _ => None,
    };

    let mut cells = Vec::new();
    let mut uncertain_cells: Vec<BTreeMap<CompareMetric, uncertain::CellUncertain>> = Vec::new();
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for cell in input.cells {
        let runs = group_runs(crate::analysis::model::runs_of(input, cell));
        by_id.insert(cell.id.as_str(), cells.len());
        let mut metrics = cell_metrics(cell, &runs, &sources);
        let mut weighed = BTreeMap::new();
        let keys: BTreeMap<&str, Vec<(String, u32, String)>> = runs.by_subject.iter().map(|(s, rs)| (*s, rs.iter().map(|r| run_key(r)).collect())).collect();
        if let Some((decisions, _)) = &decisions {
            for &metric in options.metrics.iter().filter(|m| uncertain::applies(**m)) {
                let u = uncertain::cell_uncertain(metric, &keys, decisions);
                metrics.matching.insert(metric.as_str().to_string(), u.values.clone());
                weighed.insert(metric, u);
            }
        }
        if let Some(judged) = &jury_judged {
            for &metric in options.metrics.iter().filter(|m| uncertain::jury_applies(**m)) {
                let u = uncertain::jury_cell_uncertain(metric, &keys, judged);
                metrics.matching.insert(metric.as_str().to_string(), u.values.clone());
                weighed.insert(metric, u);
            }
        }
        cells.push(metrics);
        uncertain_cells.push(weighed);
    }

    // Where judges asked several times decide the matching: each sample's verdicts alone.
    if let (Some(votes), Some(oracle), None) = (judged, input.oracle, input.adjudication(spec)) {
        let sample_options = CompareOptions { metrics: options.metrics.iter().copied().filter(|m| uncertain::applies(*m)).collect(), ..options.clone() };
        if votes.samples() > 1 && !sample_options.metrics.is_empty() {
            for sample in 0..votes.samples() {
                let (scored, _) = score_runs_judged(&input.runs, oracle, &spec.oracle_rule, Some(&votes.for_sample(sample)));
                let sources = Sources { counts: oracle_counts(&scored), rqs: BTreeMap::new(), resolution: Default::default(), options: &sample_options };
                for (cell, metrics) in input.cells.iter().zip(cells.iter_mut()) {
                    let runs = group_runs(crate::analysis::model::runs_of(input, cell));
                    metrics.judge_samples.push(cell_metrics(cell, &runs, &sources).metrics);
                }
            }
            result.notes.push(format!(
                "The judges decide the matching and were asked up to {} times: each sample's values alone are recorded beside the majority's (results.json: `judge_samples`), so `runner diff --metric M --judge-samples-pass K` can require a pass in K of them.",
                votes.samples()
            ));
        }
    }

    let pairs = cell_pairs(input.cells, input.axis_order, &options, axis);
    let mut comparisons = Vec::new();
    let mut compared_cells = Vec::new();
    for &metric in &options.metrics {
        for (group, a, b, a_label, b_label) in &pairs {
            let (Some(&ai), Some(&bi)) = (by_id.get(a.id.as_str()), by_id.get(b.id.as_str())) else { continue };
            let empty = MetricValues::default();
            let av = cells[ai].metrics.get(metric.as_str()).unwrap_or(&empty);
            let bv = cells[bi].metrics.get(metric.as_str()).unwrap_or(&empty);
            comparisons.push(compare_values(metric, av, bv, &options, group.clone(), (&a.id, &b.id), (a_label, b_label)));
            compared_cells.push((ai, bi, a_label.clone(), b_label.clone()));
        }
    }
    correct_and_conclude(&mut comparisons, options.alpha, options.min_effect);
    if decisions.is_some() || jury_judged.is_some() {
        weigh_matching(&mut comparisons, &compared_cells, &uncertain_cells, &options);
    }

    let mut finding_pairs = Vec::new();
    if input.oracle.is_some() && !scored.is_empty() {
        for (group, a, b, a_label, b_label) in &pairs {
            let fa = consensus_found(&scored, &a.id);
            let fb = consensus_found(&scored, &b.id);
            let (mut both, mut neither, mut only_a, mut only_b) = (0u64, 0u64, 0u64, 0u64);
            for (key, found_a) in &fa {
                let Some(found_b) = fb.get(key) else { continue };
                match (found_a, found_b) {
                    (true, true) => both += 1,
                    (false, false) => neither += 1,
                    (true, false) => only_a += 1,
                    (false, true) => only_b += 1,
                }
            }
            let findings = (both + neither + only_a + only_b) as usize;
            if findings == 0 {
                continue;
            }
            finding_pairs.push(FindingPairs {
                group: group.clone(),
                a: a.id.clone(),
                b: b.id.clone(),
                a_label: a_label.clone(),
                b_label: b_label.clone(),
                findings,
                both,
                neither,
                test: stats::mcnemar_exact(only_a, only_b),
                p_holm: 1.0,
            });
        }
        let ps: Vec<f64> = finding_pairs.iter().map(|f| f.test.p_value).collect();
        for (f, p) in finding_pairs.iter_mut().zip(stats::holm(&ps)) {
            f.p_holm = p;
        }
    }

    result.tables = tables(&comparisons, &finding_pairs, &options);
    result.headline = comparisons.iter().filter(|c| options.headline.contains(&c.metric)).map(|c| verdict_line(c, 3)).collect();
    if comparisons.is_empty() {
        let values = axis.map(|a| crate::analysis::model::axis_values(input, a)).unwrap_or_default();
        result.notes.push(match (axis, &options.baseline) {
            (Some(a), Some(b)) if !values.contains(b) => {
                format!("Nothing to compare: the baseline `{b}` is not a value of `{a}` (values: {}).", values.join(", "))
            }
            (Some(a), _) => format!("Nothing to compare: no two cells differ only in `{a}`."),
            (None, _) => "Nothing to compare: the matrix has one cell.".to_string(),
        });
    }
    if let Some(note) = crate::analysis::model::missing_note(input) {
        result.notes.push(note);
    }
    let data = CompareData {
        axis: axis.map(str::to_string),
        baseline: pairs.first().map(|p| p.3.clone()),
        resamples: options.resamples,
        seed: options.seed,
        alpha: options.alpha,
        min_effect: options.min_effect,
        interval: options.interval,
        level: options.level(),
        headline: options.headline.clone(),
        cells,
        comparisons,
        finding_pairs,
        matching: decisions.as_ref().map(|(d, model)| matching_summary(d, model.as_ref())),
    };
    if let Some(summary) = &data.matching {
        result.notes.push(matching_note(summary, &data.comparisons));
    }
    if let Some(judged) = &jury_judged {
        result.notes.push(jury_note(judged, &data.comparisons));
    }
    if data.comparisons.iter().any(|c| c.matching.is_some()) {
        result.tables.push(matching_table(&data.comparisons));
    }
    if let Some(summary) = data.matching.as_ref().filter(|s| s.brier.is_some()) {
        result.tables.push(calibration_table(summary));
    }
    result.data = serde_json::to_value(&data).unwrap_or(serde_json::Value::Null).into();
    result
}

/// Each comparison of an oracle metric again on the cells' expected values, Holm-corrected
/// over those, with whether it calls what the shown verdict calls and how many borderline
/// decisions would overturn it.
fn weigh_matching(
    comparisons: &mut [Comparison],
    compared_cells: &[(usize, usize, String, String)],
    uncertain_cells: &[BTreeMap<CompareMetric, uncertain::CellUncertain>],
    options: &CompareOptions,
) {
    let empty = uncertain::CellUncertain::default();
    let metrics: Vec<CompareMetric> = comparisons.iter().map(|c| c.metric).collect();
    let cells_of = |i: usize| -> Option<(&uncertain::CellUncertain, &uncertain::CellUncertain)> {
        let (ai, bi, _, _) = &compared_cells[i];
        let metric = metrics[i];
        let a = uncertain_cells.get(*ai)?.get(&metric);
        let b = uncertain_cells.get(*bi)?.get(&metric);
        (a.is_some() || b.is_some()).then(|| (a.unwrap_or(&empty), b.unwrap_or(&empty)))
    };
    let mut under: Vec<(usize, Comparison)> = Vec::new();
    for i in 0..comparisons.len() {
        let Some((a, b)) = cells_of(i) else { continue };
        let c = &comparisons[i];
        let (_, _, a_label, b_label) = &compared_cells[i];
        under.push((i, compare_values(c.metric, &a.values, &b.values, options, c.group.clone(), (&c.a, &c.b), (a_label, b_label))));
    }
    let mut weighed: Vec<Comparison> = under.iter().map(|(_, c)| c.clone()).collect();
    correct_and_conclude(&mut weighed, options.alpha, options.min_effect);
    let tested: Vec<usize> = (0..weighed.len()).filter(|&j| weighed[j].test.is_some()).collect();
    let raw: Vec<f64> = tested.iter().filter_map(|&j| weighed[j].test.map(|t| t.p_value)).collect();
    for ((i, _), w) in under.iter().zip(&weighed) {
        let Some((a, b)) = cells_of(*i) else { continue };
        let c = comparisons[*i].clone();
        let (_, _, a_label, b_label) = &compared_cells[*i];
        let paired = uncertain::Paired { a, b };
        let index = tested.iter().position(|&j| std::ptr::eq(&weighed[j], w));
        let verdict = |av: &MetricValues, bv: &MetricValues| verdict_of(c.metric, av, bv, options, &raw, index);
        let _ = (a_label, b_label);
        let shown = (c.conclusion, c.difference.unwrap_or(0.0));
        let subjects: Vec<&String> = a.values.subjects.keys().filter(|s| b.values.subjects.contains_key(*s)).collect();
        let count = |f: &dyn Fn(&uncertain::CellUncertain, &str) -> usize| subjects.iter().map(|s| f(a, s) + f(b, s)).sum::<usize>();
        let borderline = count(&|cell, s| cell.levers.get(s).map_or(0, Vec::len));
        let decided = count(&|cell, s| cell.decided.get(s).copied().unwrap_or(0));
        let overturned_by = uncertain::overturned_by(&paired, shown, &verdict);
        let under = UnderMatching::of(w, &c);
        let overturned_by = if under.holds { overturned_by } else { Some(0) };
        comparisons[*i].matching = Some(UnderMatching { decisions: Some(decided), borderline: Some(borderline), overturned_by, ..under });
    }
}

/// The conclusion a comparison of `metric` between two cells' values would draw, with its p
/// Holm-corrected among `raw` (the table's p-values, this one's at `index`), and its
/// difference: as [`compare_values`] and [`correct_and_conclude`] draw it, without the test
/// where the interval alone settles it (an interval through zero calls nothing).
fn verdict_of(metric: CompareMetric, a: &MetricValues, b: &MetricValues, options: &CompareOptions, raw: &[f64], index: Option<usize>) -> (Conclusion, f64) {
    let diffs: Vec<f64> = a.subjects.iter().filter_map(|(s, av)| b.subjects.get(s).map(|bv| bv - av)).collect();
    let Some(difference) = stats::mean(&diffs) else { return (Conclusion::Untestable, 0.0) };
    let differing = diffs.iter().filter(|d| **d != 0.0).count();
    if stats::sign_flip_floor(diffs.len(), differing, options.resamples).is_some_and(|p| p >= options.alpha) {
        return (Conclusion::CannotBeSignificant, difference);
    }
    let interval = stats::bootstrap_mean_interval(&diffs, options.resamples, options.seed, options.level(), options.interval);
    if !interval.is_some_and(|i| i.low > 0.0 || i.high < 0.0) {
        return (if interval.is_some() { Conclusion::NoDetectableDifference } else { Conclusion::Untestable }, difference);
    }
    let p = stats::sign_flip_test(&diffs, options.resamples, options.seed).map(|t| t.p_value);
    let p_holm = match (p, index) {
        (Some(p), Some(i)) if i < raw.len() => {
            let mut ps = raw.to_vec();
            ps[i] = p;
            stats::holm(&ps).get(i).copied()
        }
        (p, _) => p,
    };
    (conclude(metric, difference, interval.as_ref(), p_holm, options.alpha, options.min_effect), difference)
}

/// The decisions weighed, over every run, and the calibration's curve beside them.
fn matching_summary(decisions: &BTreeMap<(String, u32, String), uncertain::RunDecisions>, model: Option<&DecisionModel>) -> MatchingSummary {
    let bins = crate::analysis::matching::rule::CURVE_BINS;
    let mut counts = vec![0usize; bins];
    let (mut all, mut borderline) = (0, 0);
    for (_, p) in decisions.values().flat_map(|d| &d.decisions) {
        all += 1;
        borderline += usize::from((uncertain::BORDERLINE..=1.0 - uncertain::BORDERLINE).contains(p));
        counts[((p * bins as f64) as usize).min(bins - 1)] += 1;
    }
    let curve: Vec<_> = model.map(|m| m.curve.to_vec()).unwrap_or_default();
    MatchingSummary {
        decisions: all,
        borderline,
        brier: model.map(|m| m.brier),
        brier_decisions: model.map(|m| m.brier_decisions),
        judged: decisions.values().map(|d| d.judged).sum(),
        bins: counts
            .into_iter()
            .enumerate()
            .map(|(i, n)| {
                let c = curve.get(i);
                MatchingBin {
                    from: i as f64 / bins as f64,
                    to: (i + 1) as f64 / bins as f64,
                    decisions: n,
                    calibration_cells: c.map_or(0, |c| c.cells),
                    predicted: c.and_then(|c| c.predicted),
                    observed: c.and_then(|c| c.observed),
                }
            })
            .collect(),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn matching_note(summary: &MatchingSummary, comparisons: &[Comparison]) -> String {
    let weighed: Vec<&UnderMatching> = comparisons.iter().filter_map(|c| c.matching.as_ref()).collect();
    let holding = weighed.iter().filter(|m| m.holds).count();
    let (Some(brier), Some(brier_decisions), 0) = (summary.brier, summary.brier_decisions, summary.judged) else {
        return judging_note(summary, holding, weighed.len());
    };
    format!(
        "With matching uncertainty: each oracle finding's found or not found is weighed by the probability that the judges' majority calls it found, the matching calibration's decision model (the similarity of the report the one-to-one pass gives it, its margin over the next report and its rank; with no report at its place it is not found), whose out-of-fold Brier score is {:.3} against {:.3} for the rule's own found / not found. A subject's value is then the one the judges are expected to give it, and those values are compared as above: paired interval, sign-flip test, Holm over these comparisons. {} decision{} had a report at the place, {} of them borderline (probability {:.1}–{:.1}). A verdict holds when, with matching uncertainty, it calls the same (the same direction, or no difference); \"overturned by k\" is the fewest borderline decisions, each settled against the verdict, the most influential first, after which it would not. {holding} of {} verdicts hold. The probabilities were calibrated on the projects the rule was; where the rule matches more than the judges (see the rule's figures on projects it never saw), these intervals do not correct for it.",
        brier,
        brier_decisions,
        summary.decisions,
        if summary.decisions == 1 { "" } else { "s" },
        summary.borderline,
        uncertain::BORDERLINE,
        1.0 - uncertain::BORDERLINE,
        weighed.len()
    )
}

/// The note where the judges decided (`evidence = "judge"`): their vote shares weigh what they
/// decided; the decision model, where there is one, what the text decided.
fn judging_note(summary: &MatchingSummary, holding: usize, weighed: usize) -> String {
    let text = match summary.brier {
        Some(brier) => format!(
            "each one the text decided by the matching calibration's decision model (out-of-fold Brier score {brier:.3}; the similarity of the report the one-to-one pass gives it, its margin over the next report and its rank)"
        ),
        None => "the ones the text decided are taken as decided (no matching calibration with a decision model is declared)".to_string(),
    };
    format!(
        "With judging uncertainty: each oracle finding the judges decided is weighed by their vote share, the share of every judge's answers (each sample of a judge asked several times) that called the pair the same issue — a missed finding by the best share among the reports the one-to-one pass left over —; {text}. A subject's value is then the one the judges are expected to give it, and those values are compared as above: paired interval, sign-flip test, Holm over these comparisons; judges that disagree with each other, or with themselves when asked again, widen the intervals. {} decision{} weighed, {} of them by the judges, {} borderline (probability {:.1}–{:.1}). A verdict holds when, with this uncertainty, it calls the same (the same direction, or no difference); \"overturned by k\" is the fewest borderline decisions, each settled against the verdict, the most influential first, after which it would not. {holding} of {weighed} verdicts hold.",
        summary.decisions,
        if summary.decisions == 1 { "" } else { "s" },
        summary.judged,
        summary.borderline,
        uncertain::BORDERLINE,
        1.0 - uncertain::BORDERLINE,
    )
}

/// The note on RQS v2's jury metrics weighed by the jury's shares of yes.
fn jury_note(judged: &BTreeMap<(String, u32, String), uncertain::RunJudged>, comparisons: &[Comparison]) -> String {
    let shares: Vec<f64> = judged.values().flat_map(|r| r.validity.iter().chain(&r.actionable)).copied().collect();
    let borderline = shares.iter().filter(|p| (uncertain::BORDERLINE..=1.0 - uncertain::BORDERLINE).contains(*p)).count();
    let weighed: Vec<&UnderMatching> = comparisons.iter().filter(|c| uncertain::jury_applies(c.metric)).filter_map(|c| c.matching.as_ref()).collect();
    format!(
        "With judging uncertainty on the jury's metrics (jury-precision, actionability and rqs-headline): each finding's validity and actionability weigh by the share of the jury's answers that said yes — every judge, and each sample of a judge asked several times — instead of the majority's verdict (a tie counts half, not nothing); a subject's jury precision and actionability are then its findings' mean shares, the headline their harmonic mean with severity-weighted recall, and those values are compared as above, so the judges' disagreement, with each other and with themselves, is in the interval. {} rubric decision{}, {borderline} of them borderline (share {:.1}–{:.1}); {} of {} verdicts hold.",
        shares.len(),
        if shares.len() == 1 { "" } else { "s" },
        uncertain::BORDERLINE,
        1.0 - uncertain::BORDERLINE,
        weighed.iter().filter(|m| m.holds).count(),
        weighed.len()
    )
}

/// What a verdict comes to with matching uncertainty, in words: `holds (3 of 12 borderline
/// decisions would overturn it)`.
fn matching_words(m: &UnderMatching) -> String {
    if !m.holds {
        return format!("does not hold ({})", m.conclusion.as_str());
    }
    match (m.overturned_by, m.borderline) {
        (_, None) => "holds".to_string(),
        (_, Some(0)) => "holds (no borderline decision)".to_string(),
        (Some(1), Some(1)) => "holds (its one borderline decision would overturn it)".to_string(),
        (None, Some(1)) => "holds (its one borderline decision would not overturn it)".to_string(),
        (Some(k), Some(n)) => format!("holds ({k} of its {n} borderline decisions would overturn it)"),
        (None, Some(n)) => format!("holds (none of its {n} borderline decisions would overturn it)"),
    }
}

fn matching_table(comparisons: &[Comparison]) -> Table {
    let weighed = || comparisons.iter().filter(|c| c.matching.is_some());
    let title = match (weighed().any(|c| !uncertain::jury_applies(c.metric)), weighed().any(|c| uncertain::jury_applies(c.metric))) {
        (true, true) => "With matching and judging uncertainty (each decision weighed by its probability; a rubric decision by the jury's share of yes)",
        (false, true) => "With judging uncertainty (each rubric decision weighed by the jury's share of yes)",
        _ => "With matching uncertainty (each decision weighed by its probability)",
    };
    let mut t = Table::new(
        title,
        &["Metric", "Other axes", "A", "B", "B − A", "Interval", "p (Holm)", "Verdict", "The shown verdict", "Decisions (borderline)", "Overturned by"],
    );
    for c in comparisons {
        let Some(m) = &c.matching else { continue };
        t.rows.push(vec![
            c.metric.as_str().into(),
            if c.group.is_empty() { "–".into() } else { format!("`{}`", c.group).into() },
            format!("`{}`", c.a_label).into(),
            format!("`{}`", c.b_label).into(),
            TableCell::Delta { delta: m.difference, digits: 3 },
            interval_cell(m.interval.as_ref(), 3),
            p_cell(m.p_holm),
            m.conclusion.as_str().into(),
            if m.holds { "holds".into() } else { "does not hold".into() },
            match (m.decisions, m.borderline) {
                (Some(d), Some(b)) => format!("{d} ({b})").into(),
                _ => "–".into(),
            },
            match m.overturned_by {
                Some(k) => k.into(),
                None => "–".into(),
            },
        ]);
    }
    t
}

fn calibration_table(summary: &MatchingSummary) -> Table {
    let mut t = Table::new(
        "How sure the decisions are: this execution's decisions by probability, beside the calibration's out-of-fold predictions and what the judges' majority found",
        &["Probability", "Decisions here", "Calibration cells", "Predicted", "Observed"],
    );
    for b in &summary.bins {
        t.rows.push(vec![
            format!("{:.1}–{:.1}", b.from, b.to).into(),
            b.decisions.into(),
            (b.calibration_cells as usize).into(),
            crate::analysis::model::format_number(b.predicted, Some(3)).into(),
            crate::analysis::model::format_number(b.observed, Some(3)).into(),
        ]);
    }
    t
}

fn tables(comparisons: &[Comparison], finding_pairs: &[FindingPairs], options: &CompareOptions) -> Vec<Table> {
    let level = format!("{:.0}% interval", options.level() * 100.0);
    let mut main = Table::new(
        "",
        &["Metric", "Other axes", "A", "B", "Mean A (sd over repeats)", "Mean B (sd over repeats)", "B − A", &level, "p", "p (Holm)", "Subjects", "Verdict"],
    );
    for c in comparisons {
        let digits = if c.metric == CompareMetric::Findings { 2 } else { 3 };
        let with_sd = |mean: Option<f64>, sd: Option<f64>| -> TableCell {
            let m = crate::analysis::model::format_number(mean, Some(digits));
            match sd {
                Some(sd) => format!("{m} ({sd:.d$})", d = digits as usize).into(),
                None => m.into(),
            }
        };
        main.rows.push(vec![
            c.metric.as_str().into(),
            if c.group.is_empty() { "–".into() } else { format!("`{}`", c.group).into() },
            format!("`{}`", c.a_label).into(),
            format!("`{}`", c.b_label).into(),
            with_sd(c.a_mean, c.a_repeat_sd),
            with_sd(c.b_mean, c.b_repeat_sd),
            TableCell::Delta { delta: c.difference, digits },
            interval_cell(c.interval.as_ref(), digits),
            p_cell(c.test.map(|t| t.p_value)),
            p_cell(c.p_holm),
            c.subjects.into(),
            c.verdict().into(),
        ]);
    }
    let mut out = vec![main];
    if !finding_pairs.is_empty() {
        let mut t = Table::new(
            "Oracle findings found by one side only (McNemar's exact test)",
            &["Other axes", "A", "B", "Oracle findings", "Both found", "Only A", "Only B", "Neither", "p", "p (Holm)"],
        );
        for f in finding_pairs {
            t.rows.push(vec![
                if f.group.is_empty() { "–".into() } else { format!("`{}`", f.group).into() },
                format!("`{}`", f.a_label).into(),
                format!("`{}`", f.b_label).into(),
                f.findings.into(),
                f.both.into(),
                f.test.b.into(),
                f.test.c.into(),
                f.neither.into(),
                format_p(f.test.p_value).into(),
                format_p(f.p_holm).into(),
            ]);
        }
        out.push(t);
    }
    out
}

mod uncertain;
pub use uncertain::UnderMatching;

/// A comparison's differences B − A with their bootstrap intervals, one row per compared pair
/// of the headline metrics (all metrics when none is a headline).
pub(crate) fn charts(analysis: &AnalysisResult, _cells: &dyn ChartCells) -> Vec<Named> {
    let mut out: Vec<Named> = chart(analysis).into_iter().collect();
    out.extend(analysis.data_as::<CompareData>().ok().and_then(|data| data.matching.as_ref().and_then(calibration_chart)));
    out
}

/// With matching uncertainty: the decision model's calibration curve beside this execution's
/// decisions — per tenth of probability, the mean predicted probability and the share the
/// judges' majority found, out of fold on the calibration's cells. A calibrated model's two bars
/// are equal; the count in each label is this execution's decisions there.
fn calibration_chart(summary: &MatchingSummary) -> Option<Named> {
    let brier = summary.brier?;
    if summary.bins.iter().all(|b| b.calibration_cells == 0) {
        return None;
    }
    let groups = summary.bins.iter().map(|b| format!("{:.1}–{:.1} ({} here)", b.from, b.to, b.decisions)).collect();
    Some(Named {
        name: "calibration",
        chart: Chart::Bars(BarChart {
            title: "Matching decisions: the decision model's calibration".into(),
            note: format!(
                "Predicted vs. found by the judges' majority, out of fold (Brier {:.3}); (n here): this execution's decisions.",
                brier
            ),
            x_label: "probability found".into(),
            groups,
            series: vec![
                Series { name: "predicted".into(), values: summary.bins.iter().map(|b| b.predicted).collect() },
                Series { name: "observed (judges' majority)".into(), values: summary.bins.iter().map(|b| b.observed).collect() },
            ],
            range: Some((0.0, 1.0)),
            digits: 2,
        }),
    })
}

fn chart(analysis: &AnalysisResult) -> Option<Named> {
    let data: CompareData = analysis.data_as().ok()?;
    // The title names B and A when every row compares the same two values.
    let first = data.comparisons.first()?;
    let one_pair = data.comparisons.iter().all(|c| c.a_label == first.a_label && c.b_label == first.b_label);
    let sides = if one_pair { format!("{} − {}", first.b_label, first.a_label) } else { format!("B − {}", first.a_label) };
    let points: Vec<IntervalPoint> = data
        .comparisons
        .iter()
        .filter(|c| data.headline.is_empty() || data.headline.contains(&c.metric))
        .filter_map(|c| {
            let value = c.difference?;
            let (low, high) = c.interval.map_or((value, value), |i| (i.low, i.high));
            let group = if c.group.is_empty() { String::new() } else { format!(" ({})", c.group) };
            let side = if one_pair { String::new() } else { format!("{}: ", c.b_label) };
            Some(IntervalPoint { label: format!("{side}{}{group}", c.metric.as_str()), value: Some(value), low: Some(low), high: Some(high) })
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    let method = match data.interval {
        crate::stats::IntervalMethod::Bca => "BCa",
        crate::stats::IntervalMethod::Percentile => "percentile",
    };
    Some(Named {
        name: "differences",
        chart: Chart::Interval(IntervalChart {
            title: format!("{}: {sides}", analysis.title),
            interval: format!(
                "paired {method} bootstrap {:.0} % interval over subjects ({} resamples, seed {})",
                data.level * 100.0,
                data.resamples,
                data.seed
            ),
            x_label: "difference B − A".into(),
            points,
            range: None,
            digits: 3,
        }),
    })
}

/// The options of a `compare` analysis; a `baseline` must be a value of its axis.
fn read_options(t: &TableReader<'_, '_>, context: &OptionsContext<'_>) -> AnalysisOptions {
    AnalysisOptions::Compare(read_compare(t, context.axis, context.matching))
}

fn read_compare(t: &TableReader<'_, '_>, axis: Option<&str>, matching: &MatchRule) -> CompareOptions {
    let problems = t.problems();
    let mut options = CompareOptions { matching: *matching, ..CompareOptions::default() };
    // A list of unknown metrics is that mistake, not also an empty list.
    let unknown = std::cell::Cell::new(false);
    let read_metrics = |key: &str| -> Option<Vec<CompareMetric>> {
        let list = t.strings(key)?;
        let mut out = Vec::new();
        for m in list {
            match CompareMetric::parse(m.get_ref()) {
                Some(metric) if !out.contains(&metric) => out.push(metric),
                Some(_) => problems.push(m.span(), format!("metric `{}` is listed twice", m.get_ref())),
                None => {
                    let all: Vec<&str> = CompareMetric::ALL.iter().map(|m| m.as_str()).collect();
                    let help = match did_you_mean(m.get_ref(), all.iter().copied()) {
                        Some(best) => format!("did you mean `{best}`? (metrics: {})", all.join(", ")),
                        None => format!("metrics: {}", all.join(", ")),
                    };
                    problems.push_with_help(m.span(), format!("unknown metric `{}`", m.get_ref()), help);
                    unknown.set(true);
                }
            }
        }
        Some(out)
    };
    if let Some(metrics) = read_metrics("metrics") {
        if metrics.is_empty() && !unknown.get() {
            problems.push(t.span(), "analysis `compare` lists no `metrics`");
        }
        options.metrics = metrics;
    }
    options.headline = match read_metrics("headline") {
        Some(h) => {
            if let Some(stray) = h.iter().find(|m| !options.metrics.contains(m)) {
                problems.push(t.key_span("headline").unwrap_or_else(|| t.span()), format!("headline metric `{}` is not among `metrics`", stray.as_str()));
            }
            h
        }
        None if options.metrics.contains(&CompareMetric::Recall) => vec![CompareMetric::Recall],
        None => options.metrics.first().copied().into_iter().collect(),
    };
    if let Some(b) = t.string("baseline") {
        if axis.is_none() {
            problems.push(b.span(), "`baseline` names a value of `axis`; add the `axis` compared");
        }
        options.baseline = Some(b.into_inner());
    }
    if let Some(n) = t.integer("resamples", 100, 10_000_000) {
        options.resamples = *n.get_ref() as usize;
    }
    if let Some(n) = t.integer("seed", 0, i64::MAX) {
        options.seed = *n.get_ref() as u64;
    }
    if let Some(a) = t.float("alpha", 0.0001, 0.5) {
        options.alpha = *a.get_ref();
    }
    if let Some(m) = t.float("min-effect", 0.0, 1e9) {
        options.min_effect = *m.get_ref();
    }
    if let Some(i) = t.string("interval") {
        match i.get_ref().as_str() {
            "percentile" => options.interval = crate::stats::IntervalMethod::Percentile,
            "bca" => options.interval = crate::stats::IntervalMethod::Bca,
            other => problems.push_with_help(i.span(), format!("unknown interval method `{other}`"), "methods: bca (default), percentile"),
        }
    }
    options
}

#[cfg(test)]
mod tests;
