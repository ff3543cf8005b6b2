//! The charts: same input, same bytes; the structure each chart promises (marks, labels,
//! well-formed XML); which analyses get which charts, from committed results.

use super::*;
use crate::analysis::spec::AnalysisKind;

/// Checks that `svg` is well-formed XML: every tag closed in order, attributes quoted, text
/// escaped. Returns the element names in document order.
fn well_formed(svg: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        check_escaped(text);
        let end = start + rest[start..].find('>').expect("every tag closes");
        let tag = &rest[start + 1..end];
        if tag.starts_with('?') || tag.starts_with('!') {
            // declaration or comment
        } else if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "closing tag out of order");
        } else {
            let name = tag.split_whitespace().next().expect("tag name").trim_end_matches('/').to_string();
            let attrs = tag[name.len()..].trim_end_matches('/');
            assert_eq!(attrs.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            check_escaped(attrs);
            names.push(name.clone());
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        rest = &rest[end + 1..];
    }
    assert!(rest.trim().is_empty(), "text after the root element");
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    assert_eq!(names.first().map(String::as_str), Some("svg"));
    names
}

fn check_escaped(text: &str) {
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..];
        assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"].iter().any(|e| entity.starts_with(e)), "bare & in {text:?}");
    }
}

fn count(names: &[String], element: &str) -> usize {
    names.iter().filter(|n| *n == element).count()
}

/// The text elements' contents.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text").skip(1).filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim().to_string())).collect()
}

fn interval_chart() -> IntervalChart {
    IntervalChart {
        title: "Recall & friends".into(),
        interval: "Wilson 95 %".into(),
        x_label: "recall".into(),
        points: vec![
            IntervalPoint { label: "dry-run".into(), value: Some(0.0), low: Some(0.0), high: Some(0.13) },
            IntervalPoint { label: "heuristic <h>".into(), value: Some(0.23), low: Some(0.11), high: Some(0.42) },
            IntervalPoint { label: "no interval".into(), value: Some(0.5), low: None, high: None },
            IntervalPoint { label: "undefined".into(), value: None, low: None, high: None },
        ],
        range: Some((0.0, 1.0)),
        digits: 3,
    }
}

fn bar_chart() -> BarChart {
    BarChart {
        title: "Findings by category".into(),
        note: String::new(),
        x_label: "findings".into(),
        groups: vec!["bug".into(), "security".into()],
        series: vec![
            Series { name: "model=a".into(), values: vec![Some(3.0), Some(0.0)] },
            Series { name: "model=b".into(), values: vec![Some(12.0), None] },
            Series { name: "model=c".into(), values: vec![Some(1.0), Some(2.0)] },
        ],
        range: None,
        digits: 0,
    }
}

fn distribution_chart() -> DistributionChart {
    DistributionChart {
        title: "Seconds per run".into(),
        note: "note".into(),
        x_label: "seconds".into(),
        distributions: vec![
            Distribution { label: "a".into(), values: vec![1.0, 2.0, 3.0, 4.0, 10.0] },
            Distribution { label: "b".into(), values: vec![0.5, 0.5] },
            Distribution { label: "empty".into(), values: vec![] },
        ],
        range: None,
        digits: 2,
    }
}

#[test]
fn each_chart_renders_the_same_bytes_twice() {
    for chart in [Chart::Interval(interval_chart()), Chart::Bars(bar_chart()), Chart::Distribution(distribution_chart())] {
        let first = chart.render_svg().expect("renders");
        let second = chart.clone().render_svg().expect("renders");
        assert!(first == second, "{} differs between two renderings", chart.title());
        well_formed(&first);
    }
}

#[test]
fn an_interval_chart_has_a_point_per_defined_value_and_whiskers_per_interval() {
    let svg = Chart::Interval(interval_chart()).render_svg().expect("renders");
    let names = well_formed(&svg);
    // Three defined values, each a filled circle; the undefined one has none.
    assert_eq!(count(&names, "circle"), 3, "{svg}");
    let texts = texts(&svg);
    for expected in ["Recall &amp; friends", "Wilson 95 %", "recall", "dry-run", "heuristic &lt;h&gt;", "0.230 [0.110, 0.420]", "0.500", "–"] {
        assert!(texts.iter().any(|t| t == expected), "missing text {expected:?} in {texts:?}");
    }
    // The x axis ticks of a rate run from 0.0 to 1.0.
    assert!(texts.iter().any(|t| t == "0.0") && texts.iter().any(|t| t == "1.0"), "{texts:?}");
    assert!(svg.starts_with("<svg") && svg.contains(r#"font-family="sans-serif""#));
}

#[test]
fn a_bar_chart_has_a_bar_per_defined_value_and_a_legend() {
    let svg = Chart::Bars(bar_chart()).render_svg().expect("renders");
    let names = well_formed(&svg);
    // One background rectangle, four bars (one value is 0, one undefined), three legend swatches.
    assert_eq!(count(&names, "rect"), 1 + 4 + 3, "{svg}");
    let texts = texts(&svg);
    for expected in ["Findings by category", "bug", "security", "model=a", "model=b", "model=c", "12", "0", "–", "findings"] {
        assert!(texts.iter().any(|t| t == expected), "missing text {expected:?} in {texts:?}");
    }
}

#[test]
fn a_distribution_chart_has_a_box_and_a_dot_per_value() {
    let svg = Chart::Distribution(distribution_chart()).render_svg().expect("renders");
    let names = well_formed(&svg);
    assert_eq!(count(&names, "circle"), 5 + 2, "{svg}");
    // Background, then a filled box and its outline for each row with values.
    assert_eq!(count(&names, "rect"), 1 + 2 * 2, "{svg}");
    let texts = texts(&svg);
    for expected in ["median 3.00 · n 5", "median 0.50 · n 2", "no values", "empty"] {
        assert!(texts.iter().any(|t| t == expected), "missing text {expected:?} in {texts:?}");
    }
}

#[test]
fn strip_points_stop_at_the_limit_but_the_box_stays() {
    let many = DistributionChart {
        distributions: vec![Distribution { label: "many".into(), values: (0..svg::MAX_STRIP_POINTS + 1).map(|i| i as f64).collect() }],
        ..distribution_chart()
    };
    let names = well_formed(&Chart::Distribution(many).render_svg().expect("renders"));
    assert_eq!(count(&names, "circle"), 0);
    assert_eq!(count(&names, "rect"), 1 + 2);
}

#[test]
fn wilson_intervals_match_hand_computed_values() {
    // p = 0.5, n = 10: centre 0.5, half-width 1.96/(1+0.384)·√(0.025 + 0.0096) = 0.2634.
    let (lo, hi) = wilson(5, 10).expect("defined");
    assert!((lo - 0.236_593).abs() < 1e-5 && (hi - 0.763_407).abs() < 1e-5, "{lo} {hi}");
    // No success in 10: [0, z²/(n+z²)] = [0, 0.277].
    let (lo, hi) = wilson(0, 10).expect("defined");
    assert!(lo == 0.0 && (hi - 0.277_533).abs() < 1e-5, "{lo} {hi}");
    let (lo, hi) = wilson(13, 13).expect("defined");
    assert!((lo - 0.771_905).abs() < 1e-5 && (hi - 1.0).abs() < 1e-12, "{lo} {hi}");
    assert_eq!(wilson(0, 0), None);
}

fn committed(name: &str) -> Results {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results").join(name).join("results.json");
    Results::read(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn paths(results: &Results) -> Vec<String> {
    charts(results).into_iter().map(|c| c.path).collect()
}

#[test]
fn the_model_swap_gets_latency_and_distribution_charts() {
    let results = committed("model-swap");
    assert_eq!(
        paths(&results),
        [
            "plots/compare-differences.svg",
            "plots/compare-calibration.svg",
            "plots/compare-2-differences.svg",
            "plots/compare-2-calibration.svg",
            "plots/review-eval-recall.svg",
            "plots/review-eval-severity.svg",
            "plots/latency-seconds.svg",
            "plots/distribution-category.svg",
            "plots/distribution-severity.svg"
        ]
    );
    let files: Vec<_> = charts(&results).into_iter().skip(6).collect();
    // The decision model's calibration beside each comparison: predicted and observed per tenth.
    let Chart::Bars(calibration) = &charts(&results)[1].chart else { panic!("a bar chart") };
    assert_eq!((calibration.groups.len(), calibration.series.len()), (10, 2), "{calibration:?}");
    assert!(calibration.series.iter().flat_map(|s| s.values.iter().flatten()).all(|p| (0.0..=1.0).contains(p)));
    // The comparisons' headline metrics (recall and F1) per group of the other axis, with their intervals.
    let Chart::Interval(differences) = &charts(&results)[0].chart else { panic!("an interval chart") };
    assert_eq!(differences.points.len(), 4);
    assert_eq!(differences.title, "Does the model matter? SmolLM2 against Gemma: gemma3-270m − smollm2-135m");
    assert_eq!(differences.points[0].label, "recall (rag_symbol_max_definitions=0)");
    assert!(differences.points.iter().all(|p| p.low <= p.value && p.value <= p.high), "{differences:?}");
    let Chart::Distribution(latency) = &files[0].chart else { panic!("latency is a distribution chart") };
    // One row per cell, each with every run of the cell (16 cases × 3 repeats).
    assert_eq!(latency.distributions.len(), 4);
    assert_eq!(latency.distributions[0].label, "smollm2-135m, rag_symbol_max_definitions=0");
    assert!(latency.distributions.iter().all(|d| d.values.len() == 48), "{latency:?}");
    let Chart::Bars(categories) = &files[1].chart else { panic!("bars") };
    assert_eq!(categories.series.len(), 4);
    // The bars add up to the findings of the analysis's data.
    let total: f64 = categories.series.iter().flat_map(|s| s.values.iter().flatten()).sum();
    assert_eq!(total, results.totals.findings as f64);
}

#[test]
fn scored_results_get_recall_with_intervals_and_recall_by_severity() {
    let results = committed("scored");
    let files = charts(&results);
    let ours: Vec<&str> = files.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(ours, ["plots/review-eval-recall.svg", "plots/review-eval-severity.svg"]);
    let Chart::Interval(recall) = &files[0].chart else { panic!("interval chart") };
    assert_eq!(recall.points.iter().map(|p| p.label.as_str()).collect::<Vec<_>>(), ["dry-run", "heuristic"]);
    // heuristic: 2 found of 26 verdicts (13 oracle findings × 2 repeats).
    let heuristic = &recall.points[1];
    assert!(heuristic.value.is_some_and(|v| (v - 2.0 / 26.0).abs() < 1e-12), "{heuristic:?}");
    assert_eq!((heuristic.low, heuristic.high), wilson(2, 26).map(|(l, h)| (Some(l), Some(h))).expect("defined"));
    let Chart::Bars(severity) = &files[1].chart else { panic!("bars") };
    assert_eq!(severity.groups, ["error (11 oracle findings)", "warning (2 oracle findings)"]);
}

#[test]
fn charts_are_named_by_analysis_kind_and_ordinal_and_linked_under_their_analysis() {
    let mut results = committed("quickstart");
    assert_eq!(
        paths(&results),
        [
            "plots/compare-differences.svg",
            "plots/compare-calibration.svg",
            "plots/latency-seconds.svg",
            "plots/distribution-category.svg",
            "plots/distribution-severity.svg"
        ]
    );
    let latency = results.analyses.iter().position(|a| a.kind == AnalysisKind::LATENCY).expect("a latency analysis");
    results.analyses.push(results.analyses[latency].clone());
    let all = paths(&results);
    assert_eq!(all.last().map(String::as_str), Some("plots/latency-2-seconds.svg"));
    let links = links(&results);
    assert_eq!(links.len(), results.analyses.len());
    assert_eq!(links[latency], [PlotLink { title: "Seconds per run, by cell".into(), path: Some("plots/latency-seconds.svg".into()), not_drawn: None }]);
    assert!(links
        .iter()
        .enumerate()
        .all(|(i, l)| l.is_empty() == !matches!(results.analyses[i].kind, AnalysisKind::COMPARE | AnalysisKind::LATENCY | AnalysisKind::DISTRIBUTION)));
}

#[test]
fn writing_leaves_other_files_and_makes_no_folder_without_charts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let results = committed("quickstart");
    std::fs::create_dir_all(dir.path().join("plots")).expect("mkdir");
    std::fs::write(dir.path().join("plots/old-chart.svg"), "<svg/>").expect("write");
    std::fs::write(dir.path().join("plots/notes.txt"), "mine").expect("write");
    let written = write(&results, dir.path()).expect("writes");
    assert_eq!(written.len(), 5);
    for path in &written {
        well_formed(&std::fs::read_to_string(path).expect("read"));
    }
    // Which charts are stale only the directory's list of outputs says (`report::outputs`).
    assert!(dir.path().join("plots/old-chart.svg").exists() && dir.path().join("plots/notes.txt").exists());

    let empty = tempfile::tempdir().expect("tempdir");
    let mut none = results.clone();
    none.analyses.clear();
    assert!(write(&none, empty.path()).expect("writes").is_empty());
    assert!(!empty.path().join("plots").exists());
}

#[test]
fn an_interval_chart_of_differences_spans_zero_and_marks_it() {
    let chart = IntervalChart {
        title: "B − A: recall".into(),
        interval: "paired bootstrap, 95 %".into(),
        x_label: "difference".into(),
        points: vec![
            IntervalPoint { label: "gemma3-270m − smollm2-135m".into(), value: Some(0.12), low: Some(0.03), high: Some(0.21) },
            IntervalPoint { label: "rag on − rag off".into(), value: Some(-0.02), low: Some(-0.3), high: Some(0.1) },
        ],
        range: None,
        digits: 2,
    };
    let svg = Chart::Interval(chart).render_svg().expect("renders");
    // To look at it: RUNNER_TEST_DUMP_SVG=/tmp/chart.svg cargo test --lib an_interval_chart_of_differences
    if let Ok(path) = std::env::var("RUNNER_TEST_DUMP_SVG") {
        std::fs::write(path, &svg).expect("dump");
    }
    let texts = texts(&svg);
    // Ticks are round numbers on both sides of 0, and 0 is written without a sign.
    for tick in ["-0.4", "-0.2", "0.0", "0.2"] {
        assert!(texts.iter().any(|t| t == tick), "no tick {tick}: {texts:?}");
    }
    assert!(!texts.iter().any(|t| t == "-0.0"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "0.12 [0.03, 0.21]") && texts.iter().any(|t| t == "-0.02 [-0.30, 0.10]"), "{texts:?}");
    assert_eq!(count(&well_formed(&svg), "circle"), 2);
}
