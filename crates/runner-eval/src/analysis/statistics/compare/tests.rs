//! The paired comparison by hand: per-subject values, the exact sign-flip p, McNemar's pairs,
//! Holm, the verdict rule and the verdict line.

use super::*;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::test_support::{finding, s, spec, Fixture};
use crate::ground_truth::oracle::{Oracle, OracleCase, OracleFinding};

/// One oracle finding per subject, at `a.py:10`.
fn oracle(subjects: &[&str]) -> Oracle {
    Oracle {
        version: 1,
        findings: subjects
            .iter()
            .map(|sub| OracleFinding {
                id: format!("F-{sub}"),
                case_id: Some(sub.to_string()),
                description: "the loop skips the last page because the range end is exclusive".into(),
                file: Some("a.py".into()),
                line: Some(10),
                range: None,
                category: None,
                severity: None,
                blocking: true,
                severity_label: None,
                resolved: None,
                class: None,
            })
            .collect(),
        cases: subjects
            .iter()
            .map(|sub| OracleCase {
                id: sub.to_string(),
                expected_finding_ids: vec![format!("F-{sub}")],
                rationale: String::new(),
                split: None,
                interpreter: None,
                ground_truth: Default::default(),
            })
            .collect(),
        skipped: Vec::new(),
    }
}

fn hit() -> Vec<crate::finding::Finding> {
    vec![finding("a.py", 10, "the range end is exclusive so the last page is skipped")]
}

fn miss() -> Vec<crate::finding::Finding> {
    vec![finding("b.py", 99, "rename this variable")]
}

fn compare_spec(axis: &str, metrics: &[CompareMetric], resamples: usize) -> AnalysisSpec {
    let mut spec = spec(AnalysisKind::COMPARE, Some(axis));
    spec.options = crate::analysis::spec::AnalysisOptions::Compare(CompareOptions {
        metrics: metrics.to_vec(),
        headline: vec![metrics[0]],
        resamples,
        ..CompareOptions::default()
    });
    spec
}

const SUBJECTS: [&str; 4] = ["c1", "c2", "c3", "c4"];

/// A finds on c1 only; B on c1, c2 and c3.
fn four_subjects() -> Fixture {
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 1);
    for (i, sub) in SUBJECTS.iter().enumerate() {
        fx.add("m=a", 1, sub, if i == 0 { hit() } else { miss() });
        fx.add("m=b", 1, sub, if i < 3 { hit() } else { miss() });
    }
    fx
}

fn data_of(result: &AnalysisResult) -> CompareData {
    result.data_as().expect("compare data")
}

#[test]
fn recall_difference_exact_sign_flip_and_mcnemar_by_hand() {
    let fx = four_subjects();
    let oracle = oracle(&SUBJECTS);
    let mut input = fx.input();
    input.oracle = Some(&oracle);
    let result = compute(&compare_spec("m", &[CompareMetric::Recall], 1000), &input);
    let data = data_of(&result);
    assert_eq!(data.cells[0].metrics["recall"].subjects.values().copied().collect::<Vec<_>>(), vec![1.0, 0.0, 0.0, 0.0]);
    assert_eq!(data.cells[1].metrics["recall"].subjects.values().copied().collect::<Vec<_>>(), vec![1.0, 1.0, 1.0, 0.0]);
    let c = &data.comparisons[0];
    assert_eq!((c.a_label.as_str(), c.b_label.as_str(), c.subjects), ("a", "b", 4));
    assert_eq!(c.difference, Some(0.5));
    // Differences [0, 1, 1, 0]: of the 16 sign patterns, 4 give a mean ≥ 0.5, so the
    // one-sided p is 4/16 and the two-sided 2 · 0.25 = 0.5.
    let test = c.test.expect("tested");
    assert!(test.exact);
    assert_eq!(test.resamples, 16);
    assert!((test.p_value - 0.5).abs() < 1e-12, "{test:?}");
    assert_eq!(c.p_holm, Some(test.p_value), "one comparison: Holm changes nothing");
    // Two differences are not zero: no sign pattern can give p below 2/2² = 0.5 ≥ α.
    assert_eq!((c.differing, c.min_p), (2, Some(0.5)));
    assert_eq!(c.conclusion, Conclusion::CannotBeSignificant);
    assert_eq!(c.verdict(), "4 subjects, 2 differing: cannot be significant at α = 0.05");
    // Oracle findings: c1 found by both, c2 and c3 by B only, c4 by neither.
    let pairs = &data.finding_pairs[0];
    assert_eq!((pairs.findings, pairs.both, pairs.neither, pairs.test.b, pairs.test.c), (4, 1, 1, 0, 2));
    // Exact McNemar: 2 · P(X ≤ 0 | n = 2, ½) = 0.5.
    assert!((pairs.test.p_value - 0.5).abs() < 1e-12);
    // The verdict line names the metric, both sides, the interval and the test.
    assert_eq!(result.headline.len(), 1);
    let line = &result.headline[0];
    assert!(line.starts_with("**recall**, `b` − `a` = +0.500 ["), "{line}");
    assert!(
        line.contains("p = 0.500 (paired permutation, 4 subjects, exact over 16 sign flips): **4 subjects, 2 differing: cannot be significant at α = 0.05**."),
        "{line}"
    );
}

#[test]
fn same_seed_same_bytes_and_the_seed_matters_for_monte_carlo() {
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 1);
    // 20 subjects: 2^20 sign patterns exceed the resamples, so the test is Monte Carlo.
    let subjects: Vec<String> = (0..20).map(|i| format!("c{i:02}")).collect();
    for (i, sub) in subjects.iter().enumerate() {
        fx.add("m=a", 1, sub, if i % 4 == 0 { hit() } else { miss() });
        fx.add("m=b", 1, sub, if i % 2 == 0 { hit() } else { miss() });
    }
    let names: Vec<&str> = subjects.iter().map(String::as_str).collect();
    let oracle = oracle(&names);
    let mut input = fx.input();
    input.oracle = Some(&oracle);
    let spec = compare_spec("m", &[CompareMetric::Recall], 2000);
    let one = serde_json::to_string(&compute(&spec, &input).data).expect("json");
    let two = serde_json::to_string(&compute(&spec, &input).data).expect("json");
    assert_eq!(one, two);
    let mut other = spec.clone();
    if let Some(o) = other.compare_mut() {
        o.seed = 7;
    }
    let three = compute(&other, &input);
    assert_ne!(one, serde_json::to_string(&three.data).expect("json"));
    let c = &data_of(&three).comparisons[0];
    assert!(!c.test.expect("tested").exact);
    assert_eq!(c.test.expect("tested").resamples, 2000);
}

#[test]
fn pairs_stay_within_the_other_axes_and_holm_corrects_the_table() {
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")]), ("rag", vec![s("0"), s("5")])], 1);
    for sub in SUBJECTS {
        for cell in ["m=a,rag=0", "m=b,rag=0", "m=a,rag=5", "m=b,rag=5"] {
            fx.add(cell, 1, sub, if cell.starts_with("m=b") { hit() } else { miss() });
        }
    }
    let oracle = oracle(&SUBJECTS);
    let mut input = fx.input();
    input.oracle = Some(&oracle);
    let result = compute(&compare_spec("m", &[CompareMetric::Recall, CompareMetric::Findings], 1000), &input);
    let data = data_of(&result);
    let shape: Vec<(&str, &str, &str, &str)> = data.comparisons.iter().map(|c| (c.metric.as_str(), c.group.as_str(), c.a.as_str(), c.b.as_str())).collect();
    assert_eq!(
        shape,
        vec![
            ("recall", "rag=0", "m=a,rag=0", "m=b,rag=0"),
            ("recall", "rag=5", "m=a,rag=5", "m=b,rag=5"),
            ("findings", "rag=0", "m=a,rag=0", "m=b,rag=0"),
            ("findings", "rag=5", "m=a,rag=5", "m=b,rag=5"),
        ]
    );
    // Recall +1 on every subject: one pattern of 16 reaches it each way, p = 2/16; Holm over
    // the two tested recall rows and the two untestable finding rows (all differences zero,
    // p = 1) multiplies the smallest by 4.
    let recall = &data.comparisons[0];
    let p = recall.test.expect("tested").p_value;
    assert!((p - 0.125).abs() < 1e-12, "{p}");
    assert!(recall.p_holm.expect("corrected") >= p);
    let ps: Vec<f64> = data.comparisons.iter().filter_map(|c| c.test.map(|t| t.p_value)).collect();
    let expected = crate::stats::holm(&ps);
    let got: Vec<f64> = data.comparisons.iter().filter_map(|c| c.p_holm).collect();
    assert_eq!(got, expected);
    // Findings per run are equal (one each): no difference, and none could have shown.
    assert_eq!(data.comparisons[2].difference, Some(0.0));
    assert_eq!(data.comparisons[2].conclusion, Conclusion::CannotBeSignificant);
    assert_eq!(data.comparisons[2].verdict(), "4 subjects, none differing: cannot be significant at α = 0.05");
}

/// B finds on every subject, A on none: `n` subjects, every difference +1.
fn all_better(n: usize) -> (Fixture, Vec<String>) {
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 1);
    let subjects: Vec<String> = (0..n).map(|i| format!("c{i:02}")).collect();
    for sub in &subjects {
        fx.add("m=a", 1, sub, miss());
        fx.add("m=b", 1, sub, hit());
    }
    (fx, subjects)
}

#[test]
fn five_subjects_cannot_be_significant_at_five_percent_and_six_can() {
    for (n, floor, verdict) in
        [(3, 0.25, "3 subjects: cannot be significant at α = 0.05"), (5, 0.0625, "5 subjects: cannot be significant at α = 0.05"), (6, 0.03125, "better")]
    {
        let (fx, subjects) = all_better(n);
        let names: Vec<&str> = subjects.iter().map(String::as_str).collect();
        let oracle = oracle(&names);
        let mut input = fx.input();
        input.oracle = Some(&oracle);
        let result = compute(&compare_spec("m", &[CompareMetric::Recall], 10_000), &input);
        let c = &data_of(&result).comparisons[0];
        // The floor is reached: every subject moved the same way.
        assert_eq!(c.test.map(|t| t.p_value), Some(floor), "{n} subjects");
        assert_eq!((c.min_p, c.verdict().as_str()), (Some(floor), verdict), "{n} subjects");
        assert!(result.headline[0].ends_with(&format!(": **{verdict}**.")), "{}", result.headline[0]);
        let table = &result.tables[0];
        assert_eq!(table.rows[0].last().map(TableCell::render).as_deref(), Some(verdict));
    }
    // A looser alpha makes five subjects enough.
    let (fx, subjects) = all_better(5);
    let names: Vec<&str> = subjects.iter().map(String::as_str).collect();
    let oracle = oracle(&names);
    let mut input = fx.input();
    input.oracle = Some(&oracle);
    let mut spec = compare_spec("m", &[CompareMetric::Recall], 10_000);
    if let Some(o) = spec.compare_mut() {
        o.alpha = 0.1;
    }
    assert_eq!(data_of(&compute(&spec, &input)).comparisons[0].conclusion, Conclusion::Better);
}

#[test]
fn repeats_give_the_spread_of_the_cell_metric() {
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 2);
    for sub in SUBJECTS {
        fx.add("m=a", 1, sub, hit());
        // Repeat 2 of A finds only on c1: mean recall over subjects 1.0 then 0.25.
        fx.add("m=a", 2, sub, if sub == "c1" { hit() } else { miss() });
        fx.add("m=b", 1, sub, hit());
        fx.add("m=b", 2, sub, hit());
    }
    let oracle = oracle(&SUBJECTS);
    let mut input = fx.input();
    input.oracle = Some(&oracle);
    let data = data_of(&compute(&compare_spec("m", &[CompareMetric::Recall], 1000), &input));
    let a = &data.cells[0].metrics["recall"];
    assert_eq!(a.repeats, vec![1.0, 0.25]);
    // sd of {1, 0.25} with n − 1: |1 − 0.25| / √2.
    assert!((a.repeat_sd.expect("two repeats") - 0.75 / 2f64.sqrt()).abs() < 1e-12);
    // A subject's value pools its repeats: c2 found once in two runs.
    assert_eq!(a.subjects["c2"], 0.5);
    assert_eq!(data.cells[1].metrics["recall"].repeat_sd, Some(0.0));
}

#[test]
fn the_verdict_follows_the_direction_of_the_metric() {
    let interval = |low, high| Interval { low, high, level: 0.95, method: IntervalMethod::Percentile };
    let sig = interval(0.1, 0.3);
    assert_eq!(conclude(CompareMetric::Recall, 0.2, Some(&sig), Some(0.01), 0.05, 0.0), Conclusion::Better);
    assert_eq!(conclude(CompareMetric::Noise, 0.2, Some(&sig), Some(0.01), 0.05, 0.0), Conclusion::Worse);
    assert_eq!(conclude(CompareMetric::Findings, 0.2, Some(&sig), Some(0.01), 0.05, 0.0), Conclusion::Higher);
    let down = interval(-0.3, -0.1);
    assert_eq!(conclude(CompareMetric::Noise, -0.2, Some(&down), Some(0.01), 0.05, 0.0), Conclusion::Better);
    assert_eq!(conclude(CompareMetric::Recall, 0.2, Some(&sig), Some(0.2), 0.05, 0.0), Conclusion::NoDetectableDifference);
    // Significant p but an interval through zero is not called.
    assert_eq!(conclude(CompareMetric::Recall, 0.2, Some(&interval(-0.01, 0.3)), Some(0.01), 0.05, 0.0), Conclusion::NoDetectableDifference);
    assert_eq!(conclude(CompareMetric::Recall, 0.2, Some(&sig), Some(0.01), 0.05, 0.25), Conclusion::BelowMinEffect);
    assert_eq!(conclude(CompareMetric::Recall, 0.2, None, None, 0.05, 0.0), Conclusion::Untestable);
}

#[test]
fn p_values_and_counts_read_plainly() {
    assert_eq!(format_p(0.0004), "< 0.001");
    assert_eq!(format_p(0.01234), "0.012");
    assert_eq!(grouped(10_000), "10 000");
    assert_eq!(grouped(999), "999");
    assert_eq!(grouped(1_048_576), "1 048 576");
}

#[test]
fn without_an_oracle_only_counts_and_repeatability_are_compared() {
    let fx = four_subjects();
    let result = compute(&compare_spec("m", &[CompareMetric::Recall, CompareMetric::Findings], 1000), &fx.input());
    let data = data_of(&result);
    assert!(data.comparisons.iter().all(|c| c.metric == CompareMetric::Findings), "{:?}", data.comparisons);
    assert!(result.notes.iter().any(|n| n.starts_with("No oracle")), "{:?}", result.notes);
}
