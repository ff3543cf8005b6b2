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
                fixed: None,
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
        line.contains("p = 0.500 (paired permutation, 4 subjects, exact over 16 sign flips): **4 subjects, 2 differing: cannot be significant at α = 0.05**; with matching uncertainty +"),
        "{line}"
    );
    // The default rule's calibration weighs each decision: two subjects' finds under B, one
    // under A, each as sure as its similarity makes it.
    let m = c.matching.as_ref().expect("weighed");
    assert!(m.holds && m.decisions == Some(4) && m.difference.is_some_and(|d| d > 0.0 && d < 0.5), "{m:?}");
    assert!(line.ends_with(": holds (no borderline decision).") || line.contains("borderline decision"), "{line}");
    assert!(data.matching.is_some() && result.tables.iter().any(|t| t.title.starts_with("With matching uncertainty")), "{:?}", result.tables);
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
        assert!(result.headline[0].contains(&format!(": **{verdict}**; with matching uncertainty ")), "{}", result.headline[0]);
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

/// Decisions the model is sure of weigh exactly as the matcher's calls: every metric of
/// weighed counts equals the one computed from the counts.
#[test]
fn certain_decisions_weigh_as_the_matchers_calls() {
    use uncertain::{cell_uncertain, RunDecisions};
    // One run: 4 oracle findings (found, partial, missed with a report, missed without), 5 reports.
    let counts = MatchCounts { oracle: 4, found: 1, partial: 1, missed: 2, reported: 5, extras_real: 0, extras_rejected: 3 };
    let key = ("m=a".to_string(), 1, "c1".to_string());
    let runs = BTreeMap::from([("c1", vec![key.clone()])]);
    for metric in [CompareMetric::Recall, CompareMetric::RecallWithPartials, CompareMetric::Precision, CompareMetric::F1, CompareMetric::Noise] {
        let sure = RunDecisions { counts, decisions: vec![(Verdict::Found, 1.0), (Verdict::Partial, 0.0), (Verdict::Missed, 0.0)], judged: 0 };
        let weighed = cell_uncertain(metric, &runs, &BTreeMap::from([(key.clone(), sure)]));
        assert_eq!(weighed.values.subjects.get("c1").copied(), metric_from_counts(metric, &counts), "{metric:?}");
        assert!(weighed.levers.get("c1").is_some_and(Vec::is_empty), "no borderline decision");
        // The missed oracle finding with a report, found after all: one more find, one extra less.
        let turned = RunDecisions { counts, decisions: vec![(Verdict::Found, 1.0), (Verdict::Partial, 0.0), (Verdict::Missed, 1.0)], judged: 0 };
        let after = MatchCounts { found: 2, missed: 1, extras_rejected: 2, ..counts };
        let weighed = cell_uncertain(metric, &runs, &BTreeMap::from([(key.clone(), turned)]));
        assert_eq!(weighed.values.subjects.get("c1").copied(), metric_from_counts(metric, &after), "{metric:?}");
    }
    // Half sure of the find: recall halfway between 1/4 and 0/4, and a lever each way.
    let half = RunDecisions { counts, decisions: vec![(Verdict::Found, 0.5)], judged: 0 };
    let weighed = cell_uncertain(CompareMetric::Recall, &runs, &BTreeMap::from([(key, half)]));
    assert_eq!(weighed.values.subjects.get("c1").copied(), Some(0.125));
    let lever = weighed.levers["c1"][0];
    assert_eq!((lever.to_found, lever.to_missed), (0.125, -0.125));
}

/// A simulation where the truth is known: 200 experiments of 50 subjects, each subject's 3
/// oracle findings truly found with probability 0.45 under A and 0.55 under B (a true recall
/// difference of 0.10), and a matcher that errs at known rates — it misses 10 % of true finds
/// on both sides and calls 5 % of true misses found under A but 30 % under B (B writes more,
/// so it is over-matched more). Each decision's probability is what those rates imply (Bayes),
/// as a calibrated model would give. The intervals with matching uncertainty cover the true
/// difference at about their 95 %; the intervals on the matcher's calls alone visibly do not;
/// and redrawing each decision inside each bootstrap resample instead over-covers.
#[test]
fn intervals_with_matching_uncertainty_cover_the_true_difference_and_subject_only_ones_do_not() {
    use rand::Rng;
    use uncertain::{cell_uncertain, RunDecisions};
    const EXPERIMENTS: usize = 200;
    const SUBJECTS: usize = 50;
    const FINDINGS: usize = 3;
    let options = CompareOptions { resamples: 1000, interval: IntervalMethod::Percentile, ..CompareOptions::default() };
    let truth = [0.45, 0.55];
    let called_when_missed = [0.05, 0.30];
    let missed_when_found = 0.10;
    let posterior = |side: usize, said: bool| {
        let t = truth[side];
        let (yes, no) = if said {
            (t * (1.0 - missed_when_found), (1.0 - t) * called_when_missed[side])
        } else {
            (t * missed_when_found, (1.0 - t) * (1.0 - called_when_missed[side]))
        };
        yes / (yes + no)
    };
    let true_difference = truth[1] - truth[0];
    let mut rng = stats::rng(20_260_101, 7);
    let (mut weighed_covers, mut matcher_covers, mut redrawn_covers) = (0, 0, 0);
    for experiment in 0..EXPERIMENTS {
        let mut values: [[MetricValues; 2]; 2] = Default::default();
        let mut probabilities: [Vec<Vec<f64>>; 2] = Default::default();
        for subject in 0..SUBJECTS {
            let name = format!("s{subject:02}");
            for side in 0..2 {
                let mut decisions = Vec::new();
                let mut said_found = 0;
                for _ in 0..FINDINGS {
                    let found = rng.random::<f64>() < truth[side];
                    let said = if found { rng.random::<f64>() >= missed_when_found } else { rng.random::<f64>() < called_when_missed[side] };
                    said_found += usize::from(said);
                    decisions.push((if said { Verdict::Found } else { Verdict::Missed }, posterior(side, said)));
                }
                // One report per oracle finding: the ones not called found are extras.
                let counts = MatchCounts {
                    oracle: FINDINGS,
                    found: said_found,
                    partial: 0,
                    missed: FINDINGS - said_found,
                    reported: FINDINGS,
                    extras_real: 0,
                    extras_rejected: FINDINGS - said_found,
                };
                values[0][side].subjects.insert(name.clone(), metric_from_counts(CompareMetric::Recall, &counts).unwrap_or(0.0));
                probabilities[side].push(decisions.iter().map(|d| d.1).collect());
                let key = (String::new(), 1, name.clone());
                let runs = BTreeMap::from([(name.as_str(), vec![key.clone()])]);
                let weighed = cell_uncertain(CompareMetric::Recall, &runs, &BTreeMap::from([(key, RunDecisions { counts, decisions, judged: 0 })]));
                values[1][side].subjects.extend(weighed.values.subjects);
            }
        }
        let covers = |v: &[MetricValues; 2]| {
            let seeded = CompareOptions { seed: experiment as u64, ..options.clone() };
            let c = compare_values(CompareMetric::Recall, &v[0], &v[1], &seeded, String::new(), ("a", "b"), ("a", "b"));
            c.interval.is_some_and(|i| i.low <= true_difference && true_difference <= i.high)
        };
        matcher_covers += usize::from(covers(&values[0]));
        weighed_covers += usize::from(covers(&values[1]));
        // The alternative: a fresh draw of every decision inside each resample of subjects.
        let mut means: Vec<f64> = (0..options.resamples)
            .map(|_| {
                let mut total = 0.0;
                for _ in 0..SUBJECTS {
                    let s = rng.random_range(0..SUBJECTS);
                    let draw =
                        |ps: &Vec<f64>, rng: &mut rand_chacha::ChaCha8Rng| ps.iter().filter(|&&p| rng.random::<f64>() < p).count() as f64 / FINDINGS as f64;
                    total += draw(&probabilities[1][s], &mut rng) - draw(&probabilities[0][s], &mut rng);
                }
                total / SUBJECTS as f64
            })
            .collect();
        means.sort_by(f64::total_cmp);
        let (low, high) = (stats::quantile_linear(&means, 0.025), stats::quantile_linear(&means, 0.975));
        redrawn_covers += usize::from(low <= true_difference && true_difference <= high);
    }
    let rate = |n: usize| n as f64 / EXPERIMENTS as f64;
    let (weighed, matcher, redrawn) = (rate(weighed_covers), rate(matcher_covers), rate(redrawn_covers));
    assert!((0.91..=0.985).contains(&weighed), "with matching uncertainty: {weighed} of nominal 0.95 (matcher alone {matcher}, redrawn {redrawn})");
    assert!(matcher <= 0.80, "the matcher's calls alone undercover: {matcher} (with matching uncertainty {weighed})");
    assert!(redrawn >= 0.985, "redrawing every decision over-covers: {redrawn} (with matching uncertainty {weighed})");
}

/// Eight subjects all better under B, each resting on one borderline find: settling the finds
/// against the verdict one subject at a time, it stops being "better" after exactly the number
/// reported, and not before.
#[test]
fn the_fewest_borderline_decisions_that_overturn_a_verdict() {
    use uncertain::{overturned_by, CellUncertain, Lever, Paired};
    let options = CompareOptions { resamples: 2000, ..CompareOptions::default() };
    let names: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let a = CellUncertain { values: MetricValues { subjects: names.iter().map(|n| (n.clone(), 0.2)).collect(), ..Default::default() }, ..Default::default() };
    let b = CellUncertain {
        values: MetricValues { subjects: names.iter().map(|n| (n.clone(), 0.5)).collect(), ..Default::default() },
        levers: names.iter().map(|n| (n.clone(), vec![Lever { to_found: 0.25, to_missed: -0.5 }])).collect(),
        ..Default::default()
    };
    let verdict = |x: &MetricValues, y: &MetricValues| verdict_of(CompareMetric::Recall, x, y, &options, &[], None);
    let settled = |k: usize| {
        let mut y = b.values.clone();
        for n in names.iter().take(k) {
            *y.subjects.get_mut(n).expect("subject") -= 0.5;
        }
        // The full comparison, as the table draws it.
        let mut c = vec![compare_values(CompareMetric::Recall, &a.values, &y, &options, String::new(), ("a", "b"), ("a", "b"))];
        correct_and_conclude(&mut c, options.alpha, options.min_effect);
        assert_eq!(verdict(&a.values, &y).0, c[0].conclusion, "the quick verdict is the table's");
        c[0].conclusion
    };
    assert_eq!(settled(0), Conclusion::Better);
    let k = overturned_by(&Paired { a: &a, b: &b }, (Conclusion::Better, 0.3), &verdict).expect("overturned");
    assert!((1..=8).contains(&k), "{k}");
    assert_eq!(settled(k - 1), Conclusion::Better, "{k} is the fewest");
    assert_ne!(settled(k), Conclusion::Better);
    // Without levers nothing overturns it.
    let fixed = CellUncertain { levers: BTreeMap::new(), ..b.clone() };
    assert_eq!(overturned_by(&Paired { a: &a, b: &fixed }, (Conclusion::Better, 0.3), &verdict), None);
}

/// A rule set by hand has no decision model: nothing is weighed and the verdict line is as it was.
#[test]
fn a_rule_without_a_decision_model_weighs_nothing() {
    let fx = four_subjects();
    let oracle = oracle(&SUBJECTS);
    let mut input = fx.input();
    input.oracle = Some(&oracle);
    let mut spec = compare_spec("m", &[CompareMetric::Recall], 1000);
    spec.oracle_rule.calibrated = None;
    let result = compute(&spec, &input);
    let data = data_of(&result);
    assert!(data.matching.is_none() && data.comparisons[0].matching.is_none() && data.cells[0].matching.is_empty());
    assert!(result.headline[0].ends_with("cannot be significant at α = 0.05**."), "{}", result.headline[0]);
}

/// Where the judges have the word (`evidence = "judge"`), what they decided weighs by their
/// vote share over every judge and sample: B's reports were called the same issue by 2 of 3
/// answers (found), A's by 1 of 3 (missed), so the matcher's difference of 1 is, with judging
/// uncertainty, 2/3 − 1/3; every decision is borderline, and no decision model is needed.
#[test]
fn the_judges_vote_shares_weigh_what_they_decided() {
    use crate::analysis::matching::matcher::{judge_candidate, report_text, MatchVotes};
    use crate::analysis::matching::rule::{Evidence, OracleRule};
    let rule = OracleRule { evidence: Evidence::Judge, calibrated: None, ..OracleRule::default() };
    let description = oracle(&["c1"]).findings[0].description.clone();
    let (text_a, text_b) = ("pagination drops a record at each boundary loop", "pagination loses one record at every boundary loop");
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 1);
    for sub in SUBJECTS {
        fx.add("m=a", 1, sub, vec![finding("a.py", 10, text_a)]);
        fx.add("m=b", 1, sub, vec![finding("a.py", 11, text_b)]);
    }
    for text in [text_a, text_b] {
        let report = finding("a.py", 10, text);
        let (verdict, similarity, gap) = crate::analysis::matching::matcher::grade(&report, &oracle(&["c1"]).findings[0], &rule);
        assert!(verdict != Verdict::Found && judge_candidate(similarity, gap, &rule), "the judges decide `{text}`: {verdict:?} {similarity}");
    }
    let pair = |text: &str| (description.clone(), report_text(&finding("a.py", 10, text)));
    let votes = MatchVotes {
        judges: vec!["x".into(), "y".into(), "z".into()],
        pairs: [(pair(text_a), vec![Some(true), Some(false), Some(false)]), (pair(text_b), vec![Some(true), Some(true), Some(false)])].into(),
        // Each judge asked three times: 3 of the 9 answers yes on A's pair, 6 on B's.
        sampled: [
            (pair(text_a), vec![vec![Some(true), Some(true), Some(false)], vec![Some(false); 3], vec![Some(false), Some(false), Some(true)]]),
            (pair(text_b), vec![vec![Some(true); 3], vec![Some(true), Some(true), Some(false)], vec![Some(false), Some(false), Some(true)]]),
        ]
        .into(),
        ..MatchVotes::default()
    };
    let oracle = oracle(&SUBJECTS);
    let mut input = fx.input();
    input.oracle = Some(&oracle);
    input.extras = crate::analysis::model::Extras::default().with(Some(&votes));
    let mut spec = compare_spec("m", &[CompareMetric::Recall], 1000);
    spec.oracle_rule = rule;
    let result = compute(&spec, &input);
    let data = data_of(&result);
    let c = &data.comparisons[0];
    assert_eq!(c.difference, Some(1.0), "the judges' majorities: B finds all four, A none");
    let m = c.matching.as_ref().expect("weighed by the judges' shares");
    assert!(m.difference.is_some_and(|d| (d - 1.0 / 3.0).abs() < 1e-9), "{m:?}");
    assert_eq!((m.decisions, m.borderline), (Some(8), Some(8)));
    let summary = data.matching.as_ref().expect("summary");
    assert_eq!((summary.decisions, summary.judged, summary.brier), (8, 8, None));
    assert!(result.notes.iter().any(|n| n.starts_with("With judging uncertainty: each oracle finding the judges decided is weighed by their vote share")), "{:?}", result.notes);
    assert!(result.tables.iter().any(|t| t.title.starts_with("With matching uncertainty")), "the weighed comparison is tabled");
    assert!(!result.tables.iter().any(|t| t.title.starts_with("How sure the decisions are")), "no decision model, no calibration table");
    assert!(calibration_chart(summary).is_none(), "and no calibration chart");
}

/// The jury's metrics under judging uncertainty: two judges agree on A's findings and split on
/// B's. The majorities leave B's findings undecided (a tie counts in neither numerator nor
/// denominator), so B has no jury precision; weighed by the jury's share of yes, each of B's
/// findings counts half, and the six subjects' drop of 0.5 is a verdict of its own, every one
/// of B's decisions borderline.
#[test]
fn the_jurys_split_votes_weigh_half_under_judging_uncertainty() {
    use crate::analysis::rqs::metric::{FindingVotes, JudgeInfo, RqsInput, RunScoring, Vote};
    let subjects: Vec<String> = (1..=6).map(|i| format!("c{i}")).collect();
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 1);
    let mut rqs = RqsInput {
        judges: ["x", "y"].iter().map(|n| JudgeInfo { name: n.to_string(), model: n.to_string(), family: n.to_string(), samples: 1 }).collect(),
        ..Default::default()
    };
    for sub in &subjects {
        for (cell, votes, shares) in [("m=a", [Vote::Yes, Vote::Yes], (2, 2)), ("m=b", [Vote::Yes, Vote::No], (1, 2))] {
            fx.add(cell, 1, sub, vec![finding("a.py", 10, "the loop skips the last page")]);
            let finding_votes = FindingVotes { validity: votes.to_vec(), actionability: votes.to_vec(), shares: [shares, shares] };
            rqs.runs.insert(crate::matrix::RunId::new(cell.to_string(), 1, sub.clone()), RunScoring { votes: vec![finding_votes], ..Default::default() });
        }
    }
    let mut input = fx.input();
    input.extras = crate::analysis::model::Extras::default().with(Some(&rqs));
    let result = compute(&compare_spec("m", &[CompareMetric::JuryPrecision], 1000), &input);
    let data = data_of(&result);
    let c = &data.comparisons[0];
    assert_eq!((c.subjects, c.conclusion), (0, Conclusion::Untestable), "the majority decides none of B's findings: {c:?}");
    assert_eq!(data.cells[0].metrics["jury-precision"].subjects.len(), 6);
    assert!(data.cells[1].metrics["jury-precision"].subjects.is_empty());
    assert_eq!(data.cells[1].matching["jury-precision"].subjects.values().copied().collect::<Vec<_>>(), vec![0.5; 6]);
    let m = c.matching.as_ref().expect("weighed by the jury's shares");
    assert_eq!(m.difference, Some(-0.5));
    assert_eq!(m.conclusion, Conclusion::Worse, "six subjects, all lower: exact p = 2/64");
    assert!(!m.holds, "the shown verdict calls nothing; weighed, B is worse");
    assert_eq!((m.decisions, m.borderline), (Some(12), Some(6)));
    assert!(result.headline[0].contains("; with judging uncertainty -0.500"), "{}", result.headline[0]);
    assert!(result.tables.iter().any(|t| t.title.starts_with("With judging uncertainty (each rubric decision")), "{:?}", result.tables.iter().map(|t| &t.title).collect::<Vec<_>>());
    assert!(result.notes.iter().any(|n| n.contains("24 rubric decisions, 12 of them borderline")), "{:?}", result.notes);
    assert!(data.matching.is_none(), "no oracle decision was weighed");
}
