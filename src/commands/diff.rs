//! `runner diff`: two results.json compared, by the keep rule or by the statistical gate (`--metric`).

use super::common::write_output;
use crate::cli::DiffArgs;
use runner::error::{Error, Exit};
use std::path::Path;

/// `runner diff`: the keep rule as a CI gate.
pub(crate) fn run(args: DiffArgs) -> Result<Exit, Error> {
    use runner::report::diff;
    let results_file = |p: &Path| if p.is_dir() { p.join("results.json") } else { p.to_path_buf() };
    let a_path = results_file(&args.a);
    let b_path = args.b.as_deref().map(results_file).unwrap_or_else(|| a_path.clone());
    if let Some(metric) = &args.metric {
        return diff_metric(&args, metric, &a_path, &b_path);
    }
    let a = diff::load_side(&a_path)?;
    let b = if b_path == a_path { a.clone() } else { diff::load_side(&b_path)? };
    let report = diff::compare(&a, &b, args.cell_a.as_deref(), args.cell_b.as_deref(), args.matching_uncertainty)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        out!("{}", diff::render_text(&report));
    }
    if let Some(path) = &args.junit {
        write_output(path, &runner::report::ci::junit_keep(&report), &[a_path.as_path(), b_path.as_path()], "a JUnit report", &is_junit, args.force)?;
    }
    Ok(if report.kept { Exit::Ok } else { Exit::Gate })
}

/// `runner diff --metric`: the statistical gate.
fn diff_metric(args: &DiffArgs, metric: &str, a_path: &Path, b_path: &Path) -> Result<Exit, Error> {
    use runner::analysis::spec::CompareMetric;
    use runner::report::gate;
    let metric = CompareMetric::parse(metric).ok_or_else(|| Error::InvalidFlag {
        flag: "--metric".into(),
        value: metric.to_string(),
        expected: "a compare metric: recall, recall-with-partials, precision, f1, noise, findings, jaccard, resolution (from git), or an RQS v2 metric (rqs-headline, weighted-recall, jury-precision, actionability, conciseness, comprehensiveness, relevance)",
    })?;
    let interval = match args.interval.as_str() {
        "bca" => runner::stats::IntervalMethod::Bca,
        "percentile" => runner::stats::IntervalMethod::Percentile,
        other => return Err(Error::InvalidFlag { flag: "--interval".into(), value: other.to_string(), expected: "`bca` or `percentile`" }),
    };
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(Error::InvalidFlag { flag: "--alpha".into(), value: args.alpha.to_string(), expected: "between 0 and 1" });
    }
    let a = gate::load_metric(a_path, metric)?;
    let b = if b_path == a_path { a.clone() } else { gate::load_metric(b_path, metric)? };
    let options = gate::GateOptions {
        metric,
        min_effect: args.min_effect,
        alpha: args.alpha,
        require_better: args.require_better,
        resamples: args.resamples.max(1),
        seed: args.seed,
        interval,
        matching: args.matching_uncertainty,
        judge_samples_pass: args.judge_samples_pass,
    };
    let report = gate::gate(&a, &b, args.cell_a.as_deref(), args.cell_b.as_deref(), &options)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        out!("{}", gate::render_text(&report));
    }
    if let Some(path) = &args.junit {
        write_output(path, &runner::report::ci::junit_gate(&report), &[a_path, b_path], "a JUnit report", &is_junit, args.force)?;
    }
    Ok(if report.passed { Exit::Ok } else { Exit::Gate })
}

/// A JUnit report runner wrote.
fn is_junit(bytes: &[u8]) -> bool {
    bytes.starts_with(b"<?xml") && bytes.windows(11).any(|w| w == b"<testsuites")
}
