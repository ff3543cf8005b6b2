//! Each validator rule, driven by a small corpus with one thing broken.

use super::*;
use serde_json::{json, Value};

fn have(tool: &str) -> bool {
    std::process::Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

const BEFORE: &str = "export function clamp(n) {\n  return Math.min(Math.max(n, 1), 100);\n}\n";
const AFTER: &str = "export function clamp(n) {\n  return Math.min(Math.max(n, 0), 100);\n}\n";
const PROGRAM: &str = "import assert from 'node:assert/strict';\nimport { clamp } from './src/clamp.mjs';\nassert.equal(clamp(0), 1);\n";
const CLEAN_PROGRAM: &str = "import assert from 'node:assert/strict';\nimport { clamp } from './src/clamp.mjs';\nassert.equal(clamp(500), 100);\n";

fn public() -> Value {
    json!({"version": 1, "cases": [
        {"id": "case-01", "title": "Scenario 01", "reviewTask": "Review the change.", "spec": "clamp to 1..100",
         "source": {"path": "src/clamp.mjs", "before": BEFORE, "after": AFTER}},
        {"id": "case-02", "title": "Scenario 02", "reviewTask": "Review the change.", "spec": "clamp to 1..100",
         "source": {"path": "src/clamp.mjs", "before": BEFORE, "after": BEFORE.replace("Math.max(n, 1)", "Math.max(1, n)")}}
    ]})
}

fn oracle() -> Value {
    json!({"version": 1,
    "findings": [{"id": "F01", "caseId": "case-01", "description": "0 is no longer clamped to 1", "file": "src/clamp.mjs", "line": 2}],
    "cases": [
        {"id": "case-01", "expectedFindingIds": ["F01"], "groundTruth": gt("fail", PROGRAM), "rationale": "r"},
        {"id": "case-02", "expectedFindingIds": [], "groundTruth": gt("pass", CLEAN_PROGRAM), "rationale": "r"}
    ]})
}

/// A `groundTruth` that passes on `before`.
fn gt(after: &str, program: &str) -> Value {
    json!({"before": "pass", "after": after, "program": program})
}

fn write(public: &Value, oracle: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(PUBLIC_FILE), serde_json::to_string_pretty(public).expect("json")).expect("write");
    std::fs::write(dir.path().join(ORACLE_FILE), serde_json::to_string_pretty(oracle).expect("json")).expect("write");
    dir
}

fn structure(public: &Value, oracle: &Value) -> Validation {
    let dir = write(public, oracle);
    validate(dir.path(), &Options { structure_only: true, ..Options::default() })
}

/// Programs run with bounds far above what they need, so a busy machine cannot make a sound
/// program look timed out: these tests are about verdicts, not speed.
fn patient() -> Options {
    Options {
        jobs: 2,
        limits: program::Limits { run: std::time::Duration::from_secs(120), compile: std::time::Duration::from_secs(600), ..program::Limits::default() },
        structure_only: false,
    }
}

fn full(public: &Value, oracle: &Value) -> Validation {
    let dir = write(public, oracle);
    validate(dir.path(), &patient())
}

/// The one problem whose message contains `needle`, with its location.
fn problem<'a>(v: &'a Validation, needle: &str) -> &'a Problem {
    let found: Vec<&Problem> = v.problems.iter().filter(|p| p.message.contains(needle)).collect();
    assert_eq!(found.len(), 1, "one problem with {needle:?} in {:#?}", v.problems);
    found[0]
}

#[test]
fn a_sound_corpus_is_valid() {
    let v = structure(&public(), &oracle());
    assert!(v.valid, "{:#?}", v.problems);
    assert_eq!((v.cases, v.finding_cases, v.clean_cases, v.findings), (2, 1, 1, 1));
    if have("node") {
        let v = full(&public(), &oracle());
        assert!(v.valid, "{}", v.render());
        assert_eq!(v.runs.len(), 4);
        assert!(v.runs.iter().all(|r| r.ok));
    }
}

#[test]
fn a_leaked_label_key_in_the_public_file_is_located() {
    let mut p = public();
    p["cases"][0]["label"] = json!("finding");
    p["cases"][1]["expectedFindingIds"] = json!([]);
    let v = structure(&p, &oracle());
    assert!(!v.valid);
    let label = problem(&v, "unknown key `label`");
    assert_eq!(label.case.as_deref(), Some("case-01"));
    assert!(label.file.as_deref().is_some_and(|f| f.ends_with(PUBLIC_FILE)));
    assert!(label.message.contains("reviewer input"), "{}", label.message);
    let text = serde_json::to_string_pretty(&p).expect("json");
    let line = text.lines().position(|l| l.contains("\"label\"")).expect("label line") + 1;
    assert_eq!(label.line, Some(line));
    assert_eq!(problem(&v, "unknown key `expectedFindingIds`").case.as_deref(), Some("case-02"));
}

#[test]
fn unknown_keys_in_source_and_oracle_are_errors() {
    let mut p = public();
    p["cases"][0]["source"]["language"] = json!("js");
    let mut o = oracle();
    o["cases"][0]["notes"] = json!("x");
    o["extra"] = json!(true);
    let v = structure(&p, &o);
    assert_eq!(problem(&v, "unknown key `language`").case.as_deref(), Some("case-01"));
    assert_eq!(problem(&v, "unknown key `notes`").case.as_deref(), Some("case-01"));
    assert!(problem(&v, "unknown key `extra`").line.is_some());
}

#[test]
fn an_escaping_source_path_is_rejected() {
    let mut p = public();
    p["cases"][1]["source"]["path"] = json!("../outside.mjs");
    let v = structure(&p, &oracle());
    let e = problem(&v, "must not escape");
    assert_eq!(e.case.as_deref(), Some("case-02"));
    assert!(e.message.contains("`../outside.mjs`"));
    assert!(e.line.is_some());
    let mut p = public();
    p["cases"][1]["source"]["path"] = json!("/etc/passwd");
    assert_eq!(problem(&structure(&p, &oracle()), "must not escape").case.as_deref(), Some("case-02"));
}

#[test]
fn a_duplicated_finding_id_is_rejected() {
    let mut o = oracle();
    o["findings"] = json!([{"id": "F01", "caseId": "case-01", "description": "a"}, {"id": "F01", "caseId": "case-01", "description": "b"}]);
    let v = structure(&public(), &o);
    let e = problem(&v, "duplicate finding id `F01`");
    assert!(e.line.is_some() && e.file.as_deref().is_some_and(|f| f.ends_with(ORACLE_FILE)));
}

#[test]
fn a_finding_expected_by_two_cases_is_rejected() {
    let mut o = oracle();
    o["cases"][1]["expectedFindingIds"] = json!(["F01"]);
    o["cases"][0]["expectedFindingIds"] = json!(["F01"]);
    let mut p = public();
    p["cases"].as_array_mut().expect("cases").push(json!({"id": "case-03", "title": "Scenario 03", "reviewTask": "t", "spec": "s",
        "source": {"path": "a.mjs", "before": "", "after": ""}}));
    o["cases"].as_array_mut().expect("cases").push(json!({"id": "case-03", "expectedFindingIds": [], "rationale": "r", "groundTruth": gt("pass", "x")}));
    let v = structure(&p, &o);
    assert_eq!(problem(&v, "already expected by `case-01`").case.as_deref(), Some("case-02"));
}

#[test]
fn ids_catalog_and_case_sets() {
    let mut p = public();
    p["cases"][1]["id"] = json!("case-2");
    let mut o = oracle();
    o["cases"][1]["id"] = json!("case-2");
    o["cases"][0]["expectedFindingIds"] = json!(["F01", "F9"]);
    let v = structure(&p, &o);
    assert_eq!(v.problems.iter().filter(|p| p.message.contains("must look like `case-NN`")).count(), 2);
    assert_eq!(problem(&v, "`F9` is not in the oracle").case.as_deref(), Some("case-01"));

    let mut o = oracle();
    o["cases"][1]["id"] = json!("case-09");
    let v = structure(&public(), &o);
    assert_eq!(problem(&v, "in `oracle.json` but not in").case.as_deref(), Some("case-09"));
    assert_eq!(problem(&v, "in `cases.public.json` but not in").case.as_deref(), Some("case-02"));

    let mut o = oracle();
    o["findings"].as_array_mut().expect("findings").push(json!({"id": "F02", "caseId": "case-01", "description": "orphan"}));
    problem(&structure(&public(), &o), "`F02` is expected by no case");
}

#[test]
fn the_corpus_needs_a_clean_and_a_finding_case() {
    let mut o = oracle();
    o["cases"][1]["expectedFindingIds"] = json!([]);
    o["cases"][0]["expectedFindingIds"] = json!([]);
    o["findings"] = json!([]);
    problem(&structure(&public(), &o), "at least one finding case");
}

#[test]
fn finding_locations_must_fit_the_after_text() {
    let mut o = oracle();
    o["findings"][0]["line"] = json!(40);
    o["findings"][0]["file"] = json!("src/other.mjs");
    let v = structure(&public(), &o);
    assert!(problem(&v, "line 40 is outside").case.as_deref() == Some("case-01"));
    problem(&v, "is not the case's source");
}

#[test]
fn type_errors_are_located() {
    let mut o = oracle();
    o["findings"][0]["severity"] = json!("catastrophic");
    let v = structure(&public(), &o);
    let e = problem(&v, "unknown variant `catastrophic`");
    let text = serde_json::to_string_pretty(&o).expect("json");
    let line = text.lines().position(|l| l.contains("catastrophic")).expect("line") + 1;
    assert_eq!(e.line, Some(line));
}

#[test]
fn invalid_json_is_located() {
    let dir = write(&public(), &oracle());
    std::fs::write(dir.path().join(ORACLE_FILE), "{\n  \"version\": 1,\n  \"findings\": [,]\n}").expect("write");
    let v = validate(dir.path(), &Options { structure_only: true, ..Options::default() });
    let e = problem(&v, "invalid JSON");
    assert_eq!(e.line, Some(3));
}

#[test]
fn a_program_that_does_not_fail_on_after_is_rejected_with_its_output() {
    if !have("node") {
        return;
    }
    let mut o = oracle();
    o["cases"][0]["groundTruth"]["program"] = json!("import { clamp } from './src/clamp.mjs';\nconsole.log('clamped', clamp(0));\n");
    let v = full(&public(), &o);
    let e = problem(&v, "passes on `after`");
    assert_eq!(e.case.as_deref(), Some("case-01"));
    assert!(e.line.is_some());
    let output = e.output.as_ref().expect("output kept");
    assert!(output.stdout.contains("clamped 0"), "{output:?}");
    assert!(v.render().contains("clamped 0"));
}

#[test]
fn other_exceptions_and_clean_failures_are_rejected() {
    if !have("node") {
        return;
    }
    let mut o = oracle();
    o["cases"][0]["groundTruth"]["program"] = json!("import { clamp } from './src/clamp.mjs';\nif (clamp(0) !== 1) throw new TypeError('not an assertion');\n");
    o["cases"][1]["groundTruth"]["program"] = json!("import assert from 'node:assert/strict';\nassert.fail('always');\n");
    let v = full(&public(), &o);
    let e = problem(&v, "TypeError");
    assert!(e.message.contains("must fail on `after` with an assertion failure"), "{}", e.message);
    assert!(e.output.as_ref().is_some_and(|o| o.stderr.contains("not an assertion")));
    assert_eq!(v.problems.iter().filter(|p| p.case.as_deref() == Some("case-02")).count(), 2, "{}", v.render());
}

#[test]
fn seed_002_exact_format_runs_as_node_modules() {
    if !have("node") {
        return;
    }
    // No interpreter, no location fields, no split: seed 002's corpus as it is.
    let mut o = oracle();
    o["findings"] = json!([{"id": "F01", "caseId": "case-01", "description": "0 is no longer clamped to 1"}]);
    let v = full(&public(), &o);
    assert!(v.valid, "{}", v.render());
    assert_eq!(v.interpreters.get("node"), Some(&2));
}

#[test]
fn key_sets_match_the_models() {
    let case = PublicCase {
        id: "case-01".into(),
        title: "t".into(),
        review_task: "r".into(),
        spec: "s".into(),
        source: crate::subject::corpus::CaseSource { path: "a".into(), before: "b".into(), after: "a".into() },
    };
    let v = serde_json::to_value(&case).expect("json");
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<BTreeSet<_>>()).unwrap_or_default();
    let set = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(keys(&v), set(&PUBLIC_CASE_KEYS));
    assert_eq!(keys(&v["source"]), set(&PUBLIC_SOURCE_KEYS));
    let finding: OracleFinding = serde_json::from_value(json!({"id": "F01", "caseId": "case-01", "description": "d", "file": "a", "line": 1,
        "range": {"start": 1, "end": 1}, "category": "bug", "severity": "error", "blocking": true, "severityLabel": "Critical"}))
    .expect("every optional key");
    let all: Vec<&str> = ORACLE_FINDING_REQUIRED.iter().chain(&ORACLE_FINDING_OPTIONAL).copied().collect();
    assert_eq!(keys(&serde_json::to_value(&finding).expect("json")), set(&all));
    let oc: OracleCase = serde_json::from_value(json!({"id": "case-01", "expectedFindingIds": [], "rationale": "r", "groundTruth": gt("pass", "g"),
        "split": "tuning", "interpreter": "node"}))
    .expect("every optional key");
    let all: Vec<&str> = ORACLE_CASE_REQUIRED.iter().chain(&ORACLE_CASE_OPTIONAL).copied().collect();
    let oc = serde_json::to_value(&oc).expect("json");
    assert_eq!(keys(&oc), set(&all));
    assert_eq!(keys(&oc["groundTruth"]), set(&GROUND_TRUTH_KEYS));
}

// Seed 002's published corpus (tests/fixtures/seed002, copied unchanged) and broken variants of
// it: the reference validator's verdict on each.

fn reference() -> (Value, Value) {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/seed002");
    let read = |name: &str| serde_json::from_str(&std::fs::read_to_string(root.join(name)).expect("read")).expect("json");
    (read(PUBLIC_FILE), read(ORACLE_FILE))
}

#[test]
fn the_reference_corpus_is_valid_as_it_is() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/seed002");
    let v = validate(&root, &Options { structure_only: true, ..Options::default() });
    assert!(v.valid, "{}", v.render());
    assert_eq!((v.cases, v.finding_cases, v.clean_cases, v.findings), (8, 6, 2, 6));
    if have("node") {
        let v = validate(&root, &patient());
        assert!(v.valid, "{}", v.render());
        assert_eq!(v.runs.len(), 16);
        assert_eq!(v.interpreters.get("node"), Some(&8));
    }
}

/// Applies `change` to the reference corpus and returns the structural verdict.
fn reference_variant(change: impl FnOnce(&mut Value, &mut Value)) -> Validation {
    let (mut p, mut o) = reference();
    change(&mut p, &mut o);
    structure(&p, &o)
}

#[test]
fn broken_variants_of_the_reference_corpus_are_rejected() {
    type Break = Box<dyn FnOnce(&mut Value, &mut Value)>;
    let cases: Vec<(&str, Break)> = vec![
        ("duplicate finding id `F01`", Box::new(|_, o| o["findings"][1]["id"] = json!("F01"))),
        ("must be titled `Scenario 03`, not `Scenario 3`", Box::new(|p, _| p["cases"][2]["title"] = json!("Scenario 3"))),
        ("must be titled `Scenario 04`, not `Limit parsing`", Box::new(|p, _| p["cases"][3]["title"] = json!("Limit parsing"))),
        ("source path `../target.mjs` must be relative and must not escape", Box::new(|p, _| p["cases"][0]["source"]["path"] = json!("../target.mjs"))),
        (
            "source path `src/../../target.mjs` must be relative and must not escape",
            Box::new(|p, _| p["cases"][0]["source"]["path"] = json!("src/../../target.mjs")),
        ),
        ("source path `/tmp/target.mjs` must be relative", Box::new(|p, _| p["cases"][0]["source"]["path"] = json!("/tmp/target.mjs"))),
        ("expected finding `F09` is not in the oracle's `findings` catalog", Box::new(|_, o| o["cases"][0]["expectedFindingIds"] = json!(["F09"]))),
        ("an oracle case lacks `rationale`", Box::new(|_, o| drop(o["cases"][1].as_object_mut().expect("case").remove("rationale")))),
        ("an oracle finding lacks `caseId`", Box::new(|_, o| drop(o["findings"][2].as_object_mut().expect("finding").remove("caseId")))),
        ("`groundTruth` lacks `program`", Box::new(|_, o| drop(o["cases"][2]["groundTruth"].as_object_mut().expect("gt").remove("program")))),
        ("a public case lacks `spec`", Box::new(|p, _| drop(p["cases"][4].as_object_mut().expect("case").remove("spec")))),
        ("unknown key `notes` in an oracle case", Box::new(|_, o| o["cases"][0]["notes"] = json!("x"))),
        ("unknown key `timeout` in `groundTruth`", Box::new(|_, o| o["cases"][0]["groundTruth"]["timeout"] = json!(3))),
        ("unknown key `label` in a public case", Box::new(|p, _| p["cases"][5]["label"] = json!("clean"))),
        ("unknown key `expectedFindingIds` in a public case", Box::new(|p, _| p["cases"][0]["expectedFindingIds"] = json!(["F01"]))),
        ("unknown key `language` in a public case's `source`", Box::new(|p, _| p["cases"][0]["source"]["language"] = json!("js"))),
        ("unknown key `extra` in the oracle", Box::new(|_, o| o["extra"] = json!(true))),
        (
            "a bare program string is the form of earlier runner versions",
            Box::new(|_, o| o["cases"][0]["groundTruth"] = o["cases"][0]["groundTruth"]["program"].clone()),
        ),
        ("`groundTruth.after` must be \"pass\" or \"fail\", not `\"failed\"`", Box::new(|_, o| o["cases"][0]["groundTruth"]["after"] = json!("failed"))),
        ("`groundTruth.before` must be \"pass\" or \"fail\", not a boolean", Box::new(|_, o| o["cases"][0]["groundTruth"]["before"] = json!(true))),
        (
            "`groundTruth` of a finding case must say `\"before\": \"pass\", \"after\": \"fail\"`",
            Box::new(|_, o| o["cases"][0]["groundTruth"]["after"] = json!("pass")),
        ),
        ("`groundTruth` of a clean case (no expected findings) must say", Box::new(|_, o| o["cases"][5]["groundTruth"]["after"] = json!("fail"))),
        ("`version` must be 1", Box::new(|_, o| o["version"] = json!(2))),
        ("case `case-08` is in `oracle.json` but not in `cases.public.json`", Box::new(|p, _| drop(p["cases"].as_array_mut().expect("cases").pop()))),
        ("finding `F02` says `caseId: case-03` but `case-02` expects it", Box::new(|_, o| o["findings"][1]["caseId"] = json!("case-03"))),
    ];
    for (needle, change) in cases {
        let v = reference_variant(change);
        assert!(!v.valid, "{needle}: accepted");
        let found: Vec<&Problem> = v.problems.iter().filter(|p| p.message.contains(needle)).collect();
        assert_eq!(found.len(), 1, "{needle:?} once in:\n{}", v.render());
        assert!(found[0].file.is_some(), "{needle}: located");
    }
}

#[test]
fn paths_inside_git_are_rejected_in_any_case_folding() {
    for path in [".git/config", ".GIT/config", ".Git/hooks/pre-commit", ".git", "sub/.git/x", "./.git/config", "src/../.git/config", ".git./config"] {
        let v = reference_variant(|p, _| p["cases"][0]["source"]["path"] = json!(path));
        let e = problem(&v, "names `.git`");
        assert_eq!(e.case.as_deref(), Some("case-01"), "{path}");
        assert!(e.message.contains(&format!("`{path}`")), "{}", e.message);
    }
    // And a finding's file.
    let mut p = public();
    p["cases"][0]["source"]["path"] = json!("./src/clamp.mjs");
    let mut o = oracle();
    o["findings"][0]["file"] = json!(".git/config");
    let v = structure(&p, &o);
    problem(&v, "finding `F01`: file `.git/config` names `.git`");
}

#[test]
fn what_the_reference_accepts_runner_accepts() {
    // Finding ids need only be unique; `./x` and `src/../x` stay inside the tree; `1.0` is 1.
    let v = reference_variant(|p, o| {
        o["findings"][0]["id"] = json!("C01");
        o["cases"][0]["expectedFindingIds"] = json!(["C01"]);
        p["cases"][0]["source"]["path"] = json!("./target.mjs");
        p["cases"][1]["source"]["path"] = json!("src/../target.mjs");
        o["version"] = json!(1.0);
        p["version"] = json!(1.0);
    });
    assert!(v.valid, "{}", v.render());
    if have("node") {
        let (mut p, o) = reference();
        p["cases"][0]["source"]["path"] = json!("./target.mjs");
        p["cases"][1]["source"]["path"] = json!("src/../target.mjs");
        let v = full(&p, &o);
        assert!(v.valid, "the programs import `./target.mjs`, which the normalized paths name: {}", v.render());
    }
}

#[test]
fn where_runner_is_stricter_the_message_says_so() {
    let v = reference_variant(|_, o| {
        for c in o["cases"].as_array_mut().expect("cases") {
            if c["expectedFindingIds"].as_array().is_some_and(|a| a.is_empty()) {
                c["expectedFindingIds"] = json!(["F01"]);
            }
        }
    });
    let e = problem(&v, "at least one clean case");
    assert!(e.message.contains("stricter than seed 002's validator"), "{}", e.message);
}

#[test]
fn declared_outcomes_decide_what_a_run_must_do() {
    if !have("node") {
        return;
    }
    // A finding case whose program passes on `after` although the oracle says it fails.
    let (p, mut o) = reference();
    o["cases"][0]["groundTruth"]["program"] = json!("import { parseLimit } from './target.mjs';\nconsole.log('limit', parseLimit(5));\n");
    let v = full(&p, &o);
    let e = problem(&v, "ground truth passes on `after`");
    assert_eq!(e.case.as_deref(), Some("case-01"));
    assert!(e.output.as_ref().is_some_and(|out| out.stdout.contains("limit 5")), "{}", v.render());
}

#[test]
fn a_legacy_string_ground_truth_is_one_problem_and_the_rest_is_still_checked() {
    let mut o = oracle();
    for c in o["cases"].as_array_mut().expect("cases") {
        c["groundTruth"] = c["groundTruth"]["program"].clone();
    }
    let v = structure(&public(), &o);
    assert_eq!(v.problems.len(), 2, "one per case, nothing else: {}", v.render());
    assert!(v.problems.iter().all(|p| p.message.contains("move the string into `program`")), "{}", v.render());
    assert_eq!((v.finding_cases, v.clean_cases), (1, 1));
    if have("node") {
        let v = full(&public(), &o);
        assert_eq!(v.runs.len(), 4);
        assert!(v.runs.iter().all(|r| r.ok), "{}", v.render());
    }
}
