//! `runner diff A B --metric M`: the statistical gate. Two executions' (or two cells') values
//! of one metric per subject, read from results.json, are paired and tested exactly as the
//! `compare` analysis tests them; the gate fails when B is significantly worse, or, with
//! `--require-better`, when it is not significantly better.
//!
//! Per-subject values come from a `compare` analysis's data when the results hold one for the
//! metric, else from the review-eval analysis's per-case counts (recall, recall with partials,
//! precision, F1, noise), pooled over each cell's repeats as `compare` pools them.

use super::diff::DiffError;
use crate::analysis::corpus::review_eval::ReviewEvalData;
use crate::analysis::matching::matcher::MatchCounts;
use crate::analysis::spec::{AnalysisKind, CompareMetric, CompareOptions};
use crate::analysis::statistics::compare::{self, correct_and_conclude, CellMetrics, CompareData, Comparison, Conclusion, MetricValues};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What the gate tests and how strictly.
#[derive(Debug, Clone)]
pub struct GateOptions {
    pub metric: CompareMetric,
    /// A difference smaller than this neither fails nor passes `--require-better`.
    pub min_effect: f64,
    pub alpha: f64,
    pub require_better: bool,
    pub resamples: usize,
    pub seed: u64,
    pub interval: crate::stats::IntervalMethod,
    /// Decide on the comparison with matching uncertainty (each decision weighed by its
    /// probability: the `compare` analysis's `matching` values) where both sides have it.
    pub matching: bool,
    /// Require each pair to pass in at least this many of the judges' samples (the `compare`
    /// analysis's `judge_samples`, where judges asked several times decide the matching).
    pub judge_samples_pass: Option<usize>,
}

/// One side's per-subject values of the metric, per cell.
#[derive(Debug, Clone)]
pub struct MetricSide {
    pub path: PathBuf,
    /// Where the values came from (`compare analysis`, `review-eval analysis`).
    pub source: &'static str,
    pub cells: Vec<CellMetrics>,
}

/// Reads the per-subject values of `metric` from a results.json.
pub fn load_metric(path: &Path, metric: CompareMetric) -> Result<MetricSide, DiffError> {
    let results = super::model::Results::read(path)?;
    let parse = |what: &str, e: serde_json::Error| DiffError::Parse { path: path.to_path_buf(), message: format!("{what} data: {e}") };
    for analysis in results.analyses.iter().filter(|a| a.kind == AnalysisKind::COMPARE && !a.data.is_null()) {
        let data: CompareData = analysis.data_as().map_err(|e| parse("compare", e))?;
        if data.cells.iter().any(|c| c.metrics.contains_key(metric.as_str())) {
            return Ok(MetricSide { path: path.to_path_buf(), source: "compare analysis", cells: data.cells });
        }
    }
    if metric.needs_oracle() {
        if let Some(analysis) = results.analyses.iter().find(|a| a.kind == AnalysisKind::REVIEW_EVAL && !a.data.is_null()) {
            let data: ReviewEvalData = analysis.data_as().map_err(|e| parse("review-eval", e))?;
            return Ok(MetricSide { path: path.to_path_buf(), source: "review-eval analysis", cells: from_review_eval(&data, metric) });
        }
    }
    Err(DiffError::NoMetric { path: path.to_path_buf(), metric: metric.as_str().to_string() })
}

/// Per-subject values from seed 003's per-case counts: a case pools its repeats, a repeat
/// pools its cases.
fn from_review_eval(data: &ReviewEvalData, metric: CompareMetric) -> Vec<CellMetrics> {
    data.cells
        .iter()
        .map(|cell| {
            let mut by_case: BTreeMap<&str, MatchCounts> = BTreeMap::new();
            let mut repeats = Vec::new();
            for run in &cell.runs {
                let mut in_run = MatchCounts::default();
                for case in &run.cases {
                    *by_case.entry(case.case.as_str()).or_default() += case.scores.counts;
                    in_run += case.scores.counts;
                }
                repeats.extend(compare::metric_from_counts(metric, &in_run));
            }
            let values = MetricValues {
                subjects: by_case.into_iter().filter_map(|(k, c)| compare::metric_from_counts(metric, &c).map(|v| (k.to_string(), v))).collect(),
                repeat_sd: crate::stats::sample_std_dev(&repeats),
                repeats,
            };
            CellMetrics {
                cell: cell.cell.clone(),
                values: cell.values.clone(),
                metrics: BTreeMap::from([(metric.as_str().to_string(), values)]),
                matching: BTreeMap::new(),
                judge_samples: Vec::new(),
            }
        })
        .collect()
}

/// One tested pair of cells and whether it fails the gate.
#[derive(Debug, Clone, Serialize)]
pub struct GateRow {
    #[serde(flatten)]
    pub comparison: Comparison,
    pub fails: bool,
    /// With `--judge-samples-pass`: in how many of the judges' samples the pair passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_samples: Option<SamplesPassed>,
}

/// A pair's gate on each judge sample alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SamplesPassed {
    pub passed: usize,
    pub of: usize,
    pub needed: usize,
}

/// The gate's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    pub a: String,
    pub b: String,
    pub source_a: &'static str,
    pub source_b: &'static str,
    pub metric: CompareMetric,
    pub rule: String,
    pub pairs: Vec<GateRow>,
    pub passed: bool,
}

/// Tests B against A on every pair of cells.
pub fn gate(a: &MetricSide, b: &MetricSide, cell_a: Option<&str>, cell_b: Option<&str>, options: &GateOptions) -> Result<GateReport, DiffError> {
    if options.metric.higher_is_better().is_none() {
        return Err(DiffError::NoDirection(options.metric.as_str().to_string()));
    }
    let compare_options = CompareOptions {
        metrics: vec![options.metric],
        headline: vec![options.metric],
        resamples: options.resamples,
        seed: options.seed,
        alpha: options.alpha,
        min_effect: options.min_effect,
        interval: options.interval,
        ..CompareOptions::default()
    };
    let empty = MetricValues::default();
    let metric = options.metric.as_str();
    let pairs = super::diff::pick_pairs((&a.path, &a.cells), (&b.path, &b.cells), |c: &CellMetrics| c.cell.as_str(), cell_a, cell_b)?;
    let label =
        |x: &CellMetrics, y: &CellMetrics| if a.path == b.path { (x.cell.clone(), y.cell.clone()) } else { (format!("A {}", x.cell), format!("B {}", y.cell)) };
    let mut comparisons: Vec<Comparison> = pairs
        .iter()
        .map(|(x, y)| {
            let xv = x.metrics.get(metric).unwrap_or(&empty);
            let yv = y.metrics.get(metric).unwrap_or(&empty);
            let (xl, yl) = label(x, y);
            compare::compare_values(options.metric, xv, yv, &compare_options, String::new(), (&x.cell, &y.cell), (&xl, &yl))
        })
        .collect();
    correct_and_conclude(&mut comparisons, options.alpha, options.min_effect);
    // The same pairs on the values with matching uncertainty, where both cells carry them,
    // Holm-corrected among themselves.
    let mut weighed: Vec<(usize, Comparison)> = pairs
        .iter()
        .enumerate()
        .filter_map(|(i, (x, y))| {
            let (xv, yv) = (x.matching.get(metric)?, y.matching.get(metric)?);
            let (xl, yl) = label(x, y);
            Some((i, compare::compare_values(options.metric, xv, yv, &compare_options, String::new(), (&x.cell, &y.cell), (&xl, &yl))))
        })
        .collect();
    let mut concluded: Vec<Comparison> = weighed.iter().map(|(_, c)| c.clone()).collect();
    correct_and_conclude(&mut concluded, options.alpha, options.min_effect);
    for ((i, slot), c) in weighed.iter_mut().zip(concluded) {
        *slot = c;
        comparisons[*i].matching = Some(compare::UnderMatching::of(slot, &comparisons[*i]));
    }
    let decides = |c: &Comparison| match (&c.matching, options.matching) {
        (Some(m), true) => m.conclusion,
        _ => c.conclusion,
    };
    let fails_on = |conclusion: Conclusion| match conclusion {
        Conclusion::Worse => true,
        Conclusion::Better => false,
        _ => options.require_better,
    };
    // Each judge sample alone: the same pairs, Holm-corrected among themselves per sample.
    let samples = match options.judge_samples_pass {
        Some(needed) => {
            let of = pairs.iter().map(|(x, y)| x.judge_samples.len().min(y.judge_samples.len())).min().unwrap_or(0);
            if of == 0 {
                return Err(DiffError::NoJudgeSamples);
            }
            if needed == 0 || needed > of {
                return Err(DiffError::JudgeSamplesPass { needed, of });
            }
            let mut passed = vec![0usize; pairs.len()];
            for sample in 0..of {
                let mut per_sample: Vec<Comparison> = pairs
                    .iter()
                    .map(|(x, y)| {
                        let xv = x.judge_samples[sample].get(metric).unwrap_or(&empty);
                        let yv = y.judge_samples[sample].get(metric).unwrap_or(&empty);
                        let (xl, yl) = label(x, y);
                        compare::compare_values(options.metric, xv, yv, &compare_options, String::new(), (&x.cell, &y.cell), (&xl, &yl))
                    })
                    .collect();
                correct_and_conclude(&mut per_sample, options.alpha, options.min_effect);
                for (count, c) in passed.iter_mut().zip(&per_sample) {
                    *count += usize::from(!fails_on(c.conclusion));
                }
            }
            passed.into_iter().map(|passed| Some(SamplesPassed { passed, of, needed })).collect()
        }
        None => vec![None; pairs.len()],
    };
    let rows: Vec<GateRow> = comparisons
        .into_iter()
        .zip(samples)
        .map(|(c, judge_samples)| {
            let fails = match judge_samples {
                Some(s) => s.passed < s.needed,
                None => fails_on(decides(&c)),
            };
            GateRow { comparison: c, fails, judge_samples }
        })
        .collect();
    let matching = match (options.matching, rows.iter().any(|r| r.comparison.matching.is_some())) {
        (true, true) if compare::weighed_by_the_jury(options.metric) => {
            "; decided with judging uncertainty: each rubric decision weighed by the jury's share of yes (the results' compare values)"
        }
        (true, true) => "; decided with matching uncertainty: each oracle decision weighed by its probability (the results' compare values)",
        (true, false) => "; no matching uncertainty in these results (a compare analysis whose matching rule has a decision model writes it), so decided on the matcher's calls",
        (false, _) => "",
    };
    let samples = match options.judge_samples_pass {
        Some(needed) => format!(
            "; decided on each of the judges' samples alone (each judge's answer in that sample deciding the matching): a pair passes when it passes in at least {needed} of {}",
            rows.iter().find_map(|r| r.judge_samples.map(|s| s.of)).unwrap_or(0)
        ),
        None => String::new(),
    };
    let rule = format!(
        "fail when B is significantly worse{} (Holm-corrected p < {}, {:.0}% interval excluding 0{}){matching}{samples}",
        if options.require_better { ", or not significantly better" } else { "" },
        options.alpha,
        (1.0 - options.alpha) * 100.0,
        if options.min_effect > 0.0 { format!(", |B − A| ≥ {}", options.min_effect) } else { String::new() }
    );
    Ok(GateReport {
        a: a.path.display().to_string(),
        b: b.path.display().to_string(),
        source_a: a.source,
        source_b: b.source,
        metric: options.metric,
        rule,
        passed: rows.iter().all(|r| !r.fails),
        pairs: rows,
    })
}

/// The gate's report for a terminal or a CI log.
pub fn render_text(report: &GateReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {} ({})", report.a, report.source_a);
    let _ = writeln!(out, "B: {} ({})", report.b, report.source_b);
    let _ = writeln!(out, "Rule: {}", report.rule);
    for row in &report.pairs {
        let _ = writeln!(out, "{}{}", if row.fails { "FAIL " } else { "ok   " }, compare::verdict_line(&row.comparison, 3).replace("**", ""));
        if let Some(s) = row.judge_samples {
            let _ = writeln!(out, "     passes in {} of {} judge samples (needs {})", s.passed, s.of, s.needed);
        }
    }
    let _ = writeln!(out, "{}", if report.passed { "Gate passed." } else { "Gate failed." });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(path: &str, cell: &str, values: &[f64]) -> MetricSide {
        let subjects = values.iter().enumerate().map(|(i, v)| (format!("c{i:02}"), *v)).collect();
        let metrics = BTreeMap::from([("recall".to_string(), MetricValues { subjects, repeats: Vec::new(), repeat_sd: None })]);
        MetricSide {
            path: PathBuf::from(path),
            source: "compare analysis",
            cells: vec![CellMetrics { cell: cell.into(), values: BTreeMap::new(), metrics, matching: BTreeMap::new(), judge_samples: Vec::new() }],
        }
    }

    fn options(require_better: bool) -> GateOptions {
        GateOptions {
            metric: CompareMetric::Recall,
            min_effect: 0.0,
            alpha: 0.05,
            require_better,
            resamples: 10_000,
            seed: 0,
            interval: crate::stats::IntervalMethod::Percentile,
            matching: false,
            judge_samples_pass: None,
        }
    }

    #[test]
    fn a_significant_drop_fails_and_no_change_fails_only_when_better_is_required() {
        let a = side("a/results.json", "x", &[1.0; 12]);
        let worse = side("b/results.json", "x", &[0.0; 12]);
        let report = gate(&a, &worse, None, None, &options(false)).expect("gate");
        assert!(!report.passed);
        assert_eq!(report.pairs[0].comparison.conclusion, Conclusion::Worse);
        // Every one of 12 subjects fell by 1: 2 of 4096 sign patterns are as extreme.
        let p = report.pairs[0].comparison.test.expect("tested").p_value;
        assert!((p - 2.0 / 4096.0).abs() < 1e-12, "{p}");
        assert!(render_text(&report).contains("FAIL recall, `B x` − `A x` = -1.000"), "{}", render_text(&report));
        let same = side("b/results.json", "x", &[1.0; 12]);
        assert!(gate(&a, &same, None, None, &options(false)).expect("gate").passed);
        assert!(!gate(&a, &same, None, None, &options(true)).expect("gate").passed);
        let better = gate(&worse, &a, None, None, &options(true)).expect("gate");
        assert!(better.passed, "{}", render_text(&better));
    }

    /// Three judge samples: B is significantly worse under the first only. Requiring a pass in
    /// 2 of 3 tolerates that judge noise; requiring all 3 does not.
    #[test]
    fn a_pass_in_k_of_n_judge_samples_tolerates_one_samples_drop() {
        let values = |v: &[f64]| {
            BTreeMap::from([(
                "recall".to_string(),
                MetricValues { subjects: v.iter().enumerate().map(|(i, x)| (format!("c{i:02}"), *x)).collect(), ..Default::default() },
            )])
        };
        let mut a = side("a/results.json", "x", &[1.0; 12]);
        let mut b = side("b/results.json", "x", &[1.0; 12]);
        a.cells[0].judge_samples = vec![values(&[1.0; 12]); 3];
        b.cells[0].judge_samples = vec![values(&[0.0; 12]), values(&[1.0; 12]), values(&[1.0; 12])];
        let with = |k: usize| gate(&a, &b, None, None, &GateOptions { judge_samples_pass: Some(k), ..options(false) });
        let two = with(2).expect("gate");
        assert!(two.passed, "{}", render_text(&two));
        assert_eq!(two.pairs[0].judge_samples, Some(SamplesPassed { passed: 2, of: 3, needed: 2 }));
        assert!(render_text(&two).contains("passes in 2 of 3 judge samples (needs 2)") && two.rule.contains("at least 2 of 3"), "{}", render_text(&two));
        let three = with(3).expect("gate");
        assert!(!three.passed && three.pairs[0].fails, "{}", render_text(&three));
        assert!(crate::ci::junit_gate(&three).contains("passes in 2 of 3 judge samples (needs 3)"), "{}", crate::ci::junit_gate(&three));
        assert!(matches!(with(4), Err(DiffError::JudgeSamplesPass { needed: 4, of: 3 })));
        assert!(matches!(with(0), Err(DiffError::JudgeSamplesPass { needed: 0, of: 3 })));
        let (plain_a, plain_b) = (side("c/results.json", "x", &[1.0; 12]), side("d/results.json", "x", &[1.0; 12]));
        assert!(matches!(gate(&plain_a, &plain_b, None, None, &GateOptions { judge_samples_pass: Some(1), ..options(false) }), Err(DiffError::NoJudgeSamples)));
    }

    #[test]
    fn with_matching_uncertainty_a_drop_that_rests_on_unsure_decisions_does_not_fail() {
        // The matcher's calls: every subject fell by 1. Weighed by how sure each decision is,
        // the subjects moved both ways.
        let a = side("a/results.json", "x", &[1.0; 12]);
        let mut b = side("b/results.json", "x", &[0.0; 12]);
        let weighed =
            |values: &[f64]| MetricValues { subjects: values.iter().enumerate().map(|(i, v)| (format!("c{i:02}"), *v)).collect(), ..Default::default() };
        let mut a_weighed = a.clone();
        a_weighed.cells[0].matching.insert("recall".into(), weighed(&[0.5; 12]));
        b.cells[0].matching.insert("recall".into(), weighed(&[0.6, 0.4, 0.5, 0.55, 0.45, 0.5, 0.6, 0.4, 0.5, 0.52, 0.48, 0.5]));
        let plain = gate(&a_weighed, &b, None, None, &options(false)).expect("gate");
        assert!(!plain.passed, "the matcher's calls decide by default");
        let m = plain.pairs[0].comparison.matching.as_ref().expect("weighed");
        assert!(!m.holds && m.conclusion == Conclusion::NoDetectableDifference, "{m:?}");
        assert!(
            render_text(&plain).contains("worse; with matching uncertainty +0.000 [") && render_text(&plain).contains("does not hold"),
            "{}",
            render_text(&plain)
        );
        let tolerant = gate(&a_weighed, &b, None, None, &GateOptions { matching: true, ..options(false) }).expect("gate");
        assert!(tolerant.passed && tolerant.rule.contains("decided with matching uncertainty"), "{}", render_text(&tolerant));
        // Results without weighed values: the flag says so and the matcher's calls decide.
        let bare = gate(&a, &side("b/results.json", "x", &[0.0; 12]), None, None, &GateOptions { matching: true, ..options(false) }).expect("gate");
        assert!(!bare.passed && bare.rule.contains("no matching uncertainty in these results"), "{}", bare.rule);
    }

    #[test]
    fn a_metric_without_a_direction_cannot_gate() {
        let a = side("a/results.json", "x", &[1.0]);
        let mut o = options(false);
        o.metric = CompareMetric::Findings;
        assert!(matches!(gate(&a, &a, Some("x"), Some("x"), &o), Err(DiffError::NoDirection(_))));
    }
}
