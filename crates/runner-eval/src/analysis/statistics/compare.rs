//! Paired comparisons: is configuration B better than A, or is the difference noise?
//!
//! For each metric with a value per subject, two cells that differ in one axis (all other axes
//! equal) are compared on the subjects both have a value for: the mean of the per-subject
//! differences B − A, a paired bootstrap interval over subjects, and an exact (or seeded Monte
//! Carlo) sign-flip permutation test on the differences. Oracle findings give a second paired
//! test, McNemar's, on found/missed pairs. Repeats are the second level: the standard deviation
//! of the cell metric across repeats is shown beside the interval, so run-to-run variance is
//! visible. The p-values of one table are corrected together (Holm). Same seed, same bytes.

use crate::analysis::efficacy::repeatability::jaccard;
use crate::analysis::matching::adjudication::adjudicate_described;
use crate::analysis::matching::matcher::{score_runs_judged, with_jury, MatchCounts, ScoredRun, Verdict};
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
    CellMetrics { cell: cell.id.clone(), values: cell.values.iter().map(|(k, v)| (k.clone(), v.render())).collect(), metrics }
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

/// The verdict line: `recall, B − A = +0.12 [0.03, 0.21], p = 0.01 (paired permutation, 16
/// subjects, 10 000 resamples): better`.
pub fn verdict_line(c: &Comparison, digits: usize) -> String {
    let Some(difference) = c.difference else {
        return format!("**{}**, `{}` vs `{}`{}: no subject has a value on both sides.", c.metric.as_str(), c.b_label, c.a_label, group_suffix(&c.group));
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
        "**{}**, `{}` − `{}`{} = {:+.digits$}{interval}{test}: **{}**.",
        c.metric.as_str(),
        c.b_label,
        c.a_label,
        group_suffix(&c.group),
        difference,
        c.verdict()
    )
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
                let (method, notes) = adjudicate_described(&mut s, input.adjudication(spec), with_jury(spec.oracle_rule.describe(), input.match_votes()));
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

    let mut cells = Vec::new();
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for cell in input.cells {
        let runs = group_runs(crate::analysis::model::runs_of(input, cell));
        by_id.insert(cell.id.as_str(), cells.len());
        cells.push(cell_metrics(cell, &runs, &sources));
    }

    let pairs = cell_pairs(input.cells, input.axis_order, &options, axis);
    let mut comparisons = Vec::new();
    for &metric in &options.metrics {
        for (group, a, b, a_label, b_label) in &pairs {
            let (Some(&ai), Some(&bi)) = (by_id.get(a.id.as_str()), by_id.get(b.id.as_str())) else { continue };
            let empty = MetricValues::default();
            let av = cells[ai].metrics.get(metric.as_str()).unwrap_or(&empty);
            let bv = cells[bi].metrics.get(metric.as_str()).unwrap_or(&empty);
            comparisons.push(compare_values(metric, av, bv, &options, group.clone(), (&a.id, &b.id), (a_label, b_label)));
        }
    }
    correct_and_conclude(&mut comparisons, options.alpha, options.min_effect);

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
    };
    result.data = serde_json::to_value(&data).unwrap_or(serde_json::Value::Null).into();
    result
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

#[cfg(test)]
mod tests;
