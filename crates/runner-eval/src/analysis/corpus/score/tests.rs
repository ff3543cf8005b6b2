//! The scorer's formulas on small hand-computed inputs, and every rejection rule.

use super::*;
use serde_json::json;

fn oracle() -> Oracle {
    serde_json::from_value(json!({"version": 1,
        "findings": [{"id": "F01", "caseId": "case-01", "description": "a"}, {"id": "F02", "caseId": "case-01", "description": "b"}, {"id": "F03", "caseId": "case-02", "description": "c"}],
        "cases": [
            {"id": "case-01", "expectedFindingIds": ["F01", "F02"], "groundTruth": {"before": "pass", "after": "fail", "program": "g"}, "rationale": "r"},
            {"id": "case-02", "expectedFindingIds": ["F03"], "groundTruth": {"before": "pass", "after": "fail", "program": "g"}, "rationale": "r"},
            {"id": "case-06", "expectedFindingIds": [], "groundTruth": {"before": "pass", "after": "pass", "program": "g"}, "rationale": "r"}
        ]}))
    .expect("oracle")
}

fn captured(value: serde_json::Value) -> CapturedResults {
    serde_json::from_value(value).expect("captured results")
}

fn run(case: &str, trial: &str, complete: bool, findings: serde_json::Value) -> serde_json::Value {
    json!({"caseId": case, "trialId": trial, "complete": complete, "findings": findings})
}

fn v(id: &str) -> serde_json::Value {
    json!({"id": id, "disposition": "verified"})
}

fn fp(id: &str) -> serde_json::Value {
    json!({"id": id, "disposition": "false_positive"})
}

fn hand_computed() -> CapturedResults {
    let mut r1 = run("case-01", "trial-01", true, json!([v("F01"), v("F01"), fp("case-01-fp-01"), {"id": "x", "disposition": "unresolved"}]));
    r1["metrics"] = json!({"latencyMs": 100, "inputTokens": 10});
    let mut r2 = run("case-01", "trial-02", false, json!([v("F02")]));
    r2["metrics"] = json!({"latencyMs": 300});
    captured(json!({"version": 1,
    "plan": {"caseIds": ["case-01", "case-02", "case-06"], "trialIds": ["trial-01", "trial-02"]},
    "strategies": [
        {"name": "a", "runs": [
            r1, r2,
            run("case-06", "trial-01", true, json!([fp("case-06-fp-01"), fp("case-06-fp-02")])),
            run("case-06", "trial-02", true, json!([])),
            run("case-02", "trial-02", true, json!([v("F03")]))
        ]},
        {"name": "b", "runs": []}
    ]}))
}

#[test]
fn formulas_on_a_hand_computed_input() {
    let c = hand_computed();
    let o = oracle();
    assert!(check(&c, &o).is_empty(), "{:?}", check(&c, &o));
    let s = score(&c, &o, DEFAULT_METHOD, "r.json", "o.json");
    assert_eq!(s.finding_opportunities, 6);
    let a = &s.strategies[0];
    // verified: F01 (once), F02, F03; false positives: 1 + 2; one unresolved.
    assert_eq!(a.findings, FindingCounts { verified: 3, false_positives: 3, unresolved: 1, unique_verified: 3, unique_expected: 3 });
    assert_eq!(a.runs, 5);
    assert_eq!(a.precision, Some(0.5));
    assert_eq!(a.recall, Some(0.5));
    assert_eq!(a.completeness, Some(4.0 / 6.0));
    assert_eq!(a.observed_completeness, Some(0.8));
    assert_eq!(a.clean_case_false_positive_rate, Some(0.5));
    assert_eq!((a.coverage.expected_runs, a.coverage.submitted_runs), (6, 5));
    // case-02 has trial-02 but not trial-01: a case with one omitted trial is an omitted case.
    assert_eq!(a.coverage.omitted_cases, vec!["case-02"]);
    assert_eq!(a.coverage.omitted_case_trials, vec![CaseTrial { case_id: "case-02".into(), trial_id: "trial-01".into() }]);
    assert_eq!(a.coverage.classes.clean, ClassCoverage { expected_runs: 2, submitted_runs: 2, omitted_runs: 0 });
    assert_eq!(a.coverage.classes.finding, ClassCoverage { expected_runs: 4, submitted_runs: 3, omitted_runs: 1 });
    assert_eq!(a.metrics["latencyMs"], MetricSummary { observations: 2, runs: 5, total: Some(400.0), mean: Some(200.0) });
    assert_eq!(a.metrics["inputTokens"], MetricSummary { observations: 1, runs: 5, total: Some(10.0), mean: Some(10.0) });
    assert_eq!(a.metrics["outputTokens"], MetricSummary { observations: 0, runs: 5, total: None, mean: None });
    let order: Vec<&str> = a.metrics.0.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(order, METRIC_NAMES);
    let json = serde_json::to_value(a).expect("json");
    assert_eq!(json["metrics"]["outputTokens"], json!({"observations": 0, "runs": 5}), "total and mean are absent, not null");
    assert_eq!(json["metrics"]["latencyMs"], json!({"observations": 2, "runs": 5, "total": 400, "mean": 200}));

    let b = &s.strategies[1];
    assert_eq!(b.precision, None);
    assert_eq!(b.recall, Some(0.0));
    assert_eq!(b.completeness, Some(0.0));
    assert_eq!(b.observed_completeness, None);
    assert_eq!(b.clean_case_false_positive_rate, None);
    assert_eq!(b.coverage.omitted_cases, vec!["case-01", "case-02", "case-06"]);
    assert_eq!(b.coverage.classes.clean.omitted_runs, 2);
    assert_eq!(b.runs, 0);
}

#[test]
fn false_positives_in_finding_cases_lower_precision_only() {
    let c = captured(json!({"version": 1, "plan": {"caseIds": ["case-01", "case-06"], "trialIds": ["t"]},
        "strategies": [{"name": "a", "runs": [run("case-01", "t", true, json!([fp("case-01-fp-01")])), run("case-06", "t", true, json!([]))]}]}));
    let s = score(&c, &oracle(), DEFAULT_METHOD, "", "");
    assert_eq!(s.strategies[0].precision, Some(0.0));
    assert_eq!(s.strategies[0].clean_case_false_positive_rate, Some(0.0));
}

#[test]
fn the_seed_002_documented_example() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/seed002");
    let c = load_captured(&root.join("docs-example.captured.json")).expect("the documented example parses as it is");
    let o = crate::ground_truth::oracle::load_file(&root.join("oracle.json")).expect("oracle");
    assert!(check(&c, &o).is_empty());
    let s = score(&c, &o, DEFAULT_METHOD, "", "");
    assert_eq!(s.strategies[0].precision, Some(1.0));
    assert_eq!(s.strategies[0].recall, Some(0.25));
    // The reference scorer's output, as a JSON value and as text.
    let reference = std::fs::read_to_string(root.join("docs-example.score.json")).expect("reference score");
    let expected: serde_json::Value = serde_json::from_str(&reference).expect("json");
    assert_eq!(serde_json::to_value(&s).expect("json"), expected);
    assert_eq!(format!("{}\n", serde_json::to_string_pretty(&s).expect("json")), reference);
    let text = s.render();
    assert!(text.contains("two-reviewers-plus-synthesis"), "{text}");
    assert!(text.contains("0.25"), "{text}");
}

fn problems_of(value: serde_json::Value) -> Vec<String> {
    check(&captured(value), &oracle())
}

fn one(problems: &[String], needle: &str) {
    assert_eq!(problems.iter().filter(|p| p.contains(needle)).count(), 1, "{needle:?} in {problems:#?}");
}

#[test]
fn rejections() {
    let plan = json!({"caseIds": ["case-01", "case-06"], "trialIds": ["t1"]});
    let p = problems_of(json!({"version": 1, "plan": plan, "strategies": [{"name": "a", "runs": [
        run("case-01", "t1", true, json!([v("F01"), fp("F01"), v("F03")])),
        run("case-01", "t1", true, json!([])),
        run("case-02", "t2", true, json!([])),
        run("case-06", "t1", true, json!([fp("F02")]))
    ]}, {"name": "a", "runs": []}]}));
    one(&p, "duplicate result for this case and trial");
    one(&p, "finding `F01` is both `verified` and `false_positive`");
    one(&p, "verified finding `F03` is not one of the case's expected ids");
    one(&p, "case `case-02` is not in `plan.caseIds`");
    one(&p, "trial `t2` is not in `plan.trialIds`");
    one(&p, "strategy `a` is listed twice");
    assert!(!p.iter().any(|x| x.contains("case-06")), "a false positive may use an oracle id, as in seed 002: {p:#?}");

    let p = problems_of(json!({"version": 1, "plan": {"caseIds": ["case-01", "case-02"], "trialIds": ["t1"]}, "strategies": [{"name": "a", "runs": []}]}));
    one(&p, "at least one clean case");
    let p = problems_of(json!({"version": 1, "plan": {"caseIds": ["case-06", "case-99"], "trialIds": ["t1", "t1"]}, "strategies": []}));
    one(&p, "at least one finding case");
    one(&p, "`case-99` is not in the oracle");
    one(&p, "trial `t1` is listed twice");
    assert_eq!(p.len(), 3, "an empty `strategies` list is fine: {p:#?}");
}

#[test]
fn what_the_reference_scorer_accepts() {
    // No strategy at all; an empty strategy name; an empty trial id; a false positive under
    // an oracle id; non-integer token counts; `version: 1.0`.
    let mut r = run("case-01", "", true, json!([fp("F01"), fp("F02")]));
    r["metrics"] = json!({"inputTokens": 12.5, "outputTokens": 0.25, "latencyMs": 3.75});
    let c: CapturedResults = serde_json::from_str(
        &json!({"version": 1.0, "plan": {"caseIds": ["case-01", "case-06"], "trialIds": [""]}, "strategies": [{"name": "", "runs": [r]}]}).to_string(),
    )
    .expect("parses");
    assert_eq!(c.version, 1);
    assert!(check(&c, &oracle()).is_empty(), "{:?}", check(&c, &oracle()));
    let s = score(&c, &oracle(), DEFAULT_METHOD, "", "");
    let a = &s.strategies[0];
    assert_eq!(a.strategy, "");
    assert_eq!(a.findings.false_positives, 2);
    assert_eq!(a.metrics["inputTokens"].total, Some(12.5));
    let json = serde_json::to_value(&s).expect("json");
    assert_eq!(json["strategies"][0]["metrics"]["outputTokens"]["mean"], 0.25);
    assert!(s.render().contains("\"\""), "an empty name is shown: {}", s.render());

    let none = captured(json!({"version": 1, "plan": {"caseIds": ["case-01", "case-06"], "trialIds": ["t"]}, "strategies": []}));
    assert!(check(&none, &oracle()).is_empty());
    let s = score(&none, &oracle(), DEFAULT_METHOD, "", "");
    assert_eq!(serde_json::to_value(&s).expect("json"), json!({"version": 1, "strategies": []}));
    let text: CapturedResults =
        serde_json::from_str(r#"{"version": 1.0, "plan": {"caseIds": ["case-01", "case-06"], "trialIds": ["t"]}, "strategies": []}"#).expect("1.0 is 1");
    assert_eq!(text.version, 1);
}

#[test]
fn what_the_reference_scorer_rejects_in_metrics() {
    for (metrics, needle) in [
        (json!([]), "must be an object"),
        (json!([10]), "must be an object"),
        (json!([10, 20, 30, 40]), "must be an object"),
        (json!(null), "must be an object"),
        (json!({"latencyMs": null}), "`metrics.latencyMs` must be a non-negative number"),
        (json!({"totalTokens": null}), "`metrics.totalTokens` must be a non-negative number"),
        (json!({"inputTokens": "12"}), "`metrics.inputTokens` must be a non-negative number"),
        (json!({"outputTokens": -1}), "`metrics.outputTokens` must be a non-negative number"),
        (json!({"costUsd": 1}), "unsupported metric `costUsd`"),
    ] {
        let mut r = run("case-01", "t", true, json!([]));
        r["metrics"] = metrics.clone();
        let value = json!({"version": 1, "plan": {"caseIds": ["case-01", "case-06"], "trialIds": ["t"]}, "strategies": [{"name": "a", "runs": [r]}]});
        let e = serde_json::from_str::<CapturedResults>(&value.to_string()).expect_err(&metrics.to_string());
        assert!(e.to_string().contains(needle), "{metrics}: {e}");
    }
    for version in ["2", "1.5", "\"1\"", "null"] {
        let text = format!(r#"{{"version": {version}, "plan": {{"caseIds": [], "trialIds": []}}, "strategies": []}}"#);
        assert!(serde_json::from_str::<CapturedResults>(&text).is_err(), "version {version}");
    }
}

#[test]
fn unknown_keys_and_bad_metrics_are_parse_errors() {
    let bad = [
        json!({"version": 1, "plan": {"caseIds": [], "trialIds": []}, "strategies": [], "label": 1}),
        json!({"version": 1, "plan": {"caseIds": [], "trialIds": [], "extra": 1}, "strategies": []}),
        json!({"version": 1, "plan": {"caseIds": [], "trialIds": []}, "strategies": [{"name": "a", "runs": [
            {"caseId": "case-01", "trialId": "t", "complete": true, "findings": [{"id": "F01", "disposition": "verified", "note": "x"}]}]}]}),
        json!({"version": 1, "plan": {"caseIds": [], "trialIds": []}, "strategies": [{"name": "a", "runs": [
            {"caseId": "case-01", "trialId": "t", "complete": true, "findings": [], "metrics": {"latencyMs": 1, "costUsd": 2}}]}]}),
        json!({"version": 1, "plan": {"caseIds": [], "trialIds": []}, "strategies": [{"name": "a", "runs": [
            {"caseId": "case-01", "trialId": "t", "complete": true, "findings": [], "metrics": {"inputTokens": -3}}]}]}),
        json!({"version": 1, "plan": {"caseIds": [], "trialIds": []}, "strategies": [{"name": "a", "runs": [
            {"caseId": "case-01", "trialId": "t", "complete": true, "findings": [{"id": "F01", "disposition": "maybe"}]}]}]}),
    ];
    for value in bad {
        assert!(serde_json::from_value::<CapturedResults>(value.clone()).is_err(), "{value}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.json");
    std::fs::write(&path, "{\n  \"version\": 1,\n  \"plan\": {\"caseIds\": [], \"trialIds\": []},\n  \"strategies\": [],\n  \"label\": 1\n}").expect("write");
    let e = load_captured(&path).expect_err("unknown key");
    assert!(e.to_string().contains("unknown field `label`") && e.to_string().contains("line 5"), "{e}");
}

#[test]
fn negative_latency_is_rejected() {
    let mut r = run("case-01", "t1", true, json!([]));
    r["metrics"] = json!({"latencyMs": -1});
    let value = json!({"version": 1, "plan": {"caseIds": ["case-01", "case-06"], "trialIds": ["t1"]}, "strategies": [{"name": "a", "runs": [r]}]});
    let e = serde_json::from_value::<CapturedResults>(value).expect_err("negative");
    assert!(e.to_string().contains("`metrics.latencyMs` must be a non-negative number"), "{e}");
}

#[test]
fn rates_print_for_people() {
    assert_eq!(fmt_rate(Some(1.0)), "1");
    assert_eq!(fmt_rate(Some(0.25)), "0.25");
    assert_eq!(fmt_rate(Some(2.0 / 3.0)), "0.6667");
    assert_eq!(fmt_rate(Some(0.0)), "0");
    assert_eq!(fmt_rate(None), "–");
}

#[test]
fn an_oracle_that_expects_a_finding_twice_is_refused() {
    let mut o = oracle();
    o.cases[2].expected_finding_ids = vec!["F01".into()];
    o.cases.push(o.cases[0].clone());
    let c = captured(json!({"version": 1, "plan": {"caseIds": ["case-01", "case-02"], "trialIds": ["t"]}, "strategies": []}));
    let p = check(&c, &o);
    one(&p, "the oracle lists case `case-01` twice");
    assert!(p.iter().any(|x| x.contains("expects finding `F01` twice")), "{p:#?}");
}
