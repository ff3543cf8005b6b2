//! Ground truth through the real CLI: `corpus validate` on the bundled corpus, on seed 002's
//! published corpus and on broken copies, `score` on seed 002's documented example (compared
//! with the reference scorer's own output), the adjudication round trip, and the holdout seal.

use super::*;
use serde_json::{json, Value};

fn have(tool: &str) -> bool {
    StdCommand::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Node, Python 3 and rustc: the bundled corpus's interpreters.
fn have_interpreters() -> bool {
    let all = have("node") && have("python3") && have("rustc");
    if !all {
        eprintln!("skipped: node, python3 and rustc are needed to run ground-truth programs");
    }
    all
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).expect("json")).expect("write");
}

/// A copy of the bundled corpus with only `keep` cases (and their findings).
fn corpus_subset(dir: &Path, keep: &[&str]) -> PathBuf {
    let src = project_root().join("corpus/quickstart");
    let out = dir.join("corpus");
    std::fs::create_dir_all(&out).expect("mkdir");
    let mut public = read_json(&src.join("cases.public.json"));
    let mut oracle = read_json(&src.join("oracle.json"));
    let kept = |v: &Value| keep.contains(&v["id"].as_str().unwrap_or_default());
    public["cases"].as_array_mut().expect("cases").retain(kept);
    oracle["cases"].as_array_mut().expect("cases").retain(kept);
    let expected: Vec<Value> =
        oracle["cases"].as_array().expect("cases").iter().flat_map(|c| c["expectedFindingIds"].as_array().cloned().unwrap_or_default()).collect();
    oracle["findings"].as_array_mut().expect("findings").retain(|f| expected.contains(&f["id"]));
    write_json(&out.join("cases.public.json"), &public);
    write_json(&out.join("oracle.json"), &oracle);
    out
}

#[test]
fn corpus_validate_passes_on_the_bundled_corpus() {
    if !have_interpreters() {
        return;
    }
    // Bounds far above what the programs need: this test is about verdicts, not speed.
    let out = runner(&project_root()).args(["corpus", "validate", "corpus/quickstart", "--run-timeout", "120"]).output().expect("runs");
    let text = stdout_of(&out);
    assert!(out.status.success(), "{text}{}", stderr_of(&out));
    assert!(text.contains("16 cases (12 with findings, 4 clean), 13 findings"), "{text}");
    assert!(text.contains("32 runs, 32 as expected"), "{text}");
    assert!(text.trim_end().ends_with("valid"), "{text}");

    let json = runner(&project_root()).args(["corpus", "validate", "corpus/quickstart", "--json", "--run-timeout", "120"]).output().expect("runs");
    let v: Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["valid"], true);
    assert_eq!(v["interpreters"], json!({"node": 6, "python3": 5, "rust": 5}));
}

#[test]
fn corpus_validate_rejects_each_broken_rule_with_a_located_message() {
    if !have_interpreters() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = corpus_subset(dir.path(), &["case-01", "case-02", "case-04", "case-05"]);
    let mut public = read_json(&corpus.join("cases.public.json"));
    let mut oracle = read_json(&corpus.join("oracle.json"));
    // A leaked label key, an escaping path, a program that does not fail on `after`, and a
    // duplicated finding id.
    public["cases"][2]["label"] = json!("clean");
    public["cases"][3]["source"]["path"] = json!("../../etc/pages.py");
    oracle["cases"][0]["groundTruth"]["program"] =
        json!("import { normalizeLimit } from './src/limits.mjs';\nconsole.log('limit of 50 is', normalizeLimit(50));\n");
    let dup = oracle["findings"][0].clone();
    oracle["findings"].as_array_mut().expect("findings").push(dup);
    write_json(&corpus.join("cases.public.json"), &public);
    write_json(&corpus.join("oracle.json"), &oracle);

    let out = runner(dir.path()).args(["corpus", "validate", "--run-timeout", "120"]).arg(&corpus).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = stdout_of(&out);
    let public_file = corpus.join("cases.public.json").display().to_string();
    let oracle_file = corpus.join("oracle.json").display().to_string();
    let line_of =
        |file: &str, needle: &str| -> usize { std::fs::read_to_string(file).expect("read").lines().position(|l| l.contains(needle)).expect("needle") + 1 };
    let expect = [
        format!("error[case-04]: {public_file}:{}:", line_of(&public_file, "\"label\"")),
        format!("error[case-05]: {public_file}:{}:", line_of(&public_file, "../../etc/pages.py")),
        format!("error[case-01]: {oracle_file}:"),
    ];
    for e in &expect {
        assert!(text.contains(e.as_str()), "missing {e:?} in:\n{text}");
    }
    assert!(text.contains("unknown key `label` in a public case"), "{text}");
    assert!(text.contains("source path `../../etc/pages.py` must be relative and must not escape"), "{text}");
    let duplicate = text.lines().find(|l| l.contains("duplicate finding id `F01`")).expect("duplicate reported");
    assert!(duplicate.starts_with(&format!("error[case-01]: {oracle_file}:")), "{duplicate}");
    assert!(text.contains("ground truth passes on `after`"), "{text}");
    assert!(text.contains("limit of 50 is 50"), "the child's stdout is kept: {text}");
    assert!(text.contains("invalid: 4 problems"), "{text}");
}

/// Seed 002's published corpus and documented example, copied unchanged (see its README).
fn seed002() -> PathBuf {
    project_root().join("tests/fixtures/seed002")
}

#[test]
fn corpus_validate_accepts_seed_002s_published_corpus_as_it_is() {
    if !have("node") {
        eprintln!("skipped: node runs seed 002's ground-truth programs");
        return;
    }
    let out = runner(&project_root()).args(["corpus", "validate", "--run-timeout", "120"]).arg(seed002()).output().expect("runs");
    let text = stdout_of(&out);
    assert!(out.status.success(), "{text}{}", stderr_of(&out));
    assert!(text.contains("8 cases (6 with findings, 2 clean), 6 findings; node 8"), "{text}");
    assert!(text.contains("16 runs, 16 as expected"), "{text}");

    // A case that would write into `.git` is refused before anything runs.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut public = read_json(&seed002().join("cases.public.json"));
    public["cases"][0]["source"]["path"] = json!(".GIT/config");
    write_json(&dir.path().join("cases.public.json"), &public);
    std::fs::copy(seed002().join("oracle.json"), dir.path().join("oracle.json")).expect("copy");
    let out = runner(dir.path()).args(["corpus", "validate", "."]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_of(&out).contains("source path `.GIT/config` names `.git`"), "{}", stdout_of(&out));
}

#[test]
fn score_prints_the_reference_scorers_output_for_the_documented_example() {
    let out = runner(&seed002()).args(["score", "docs-example.captured.json", "--oracle", "oracle.json", "--json"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let reference = std::fs::read_to_string(seed002().join("docs-example.score.json")).expect("reference score");
    let ours: Value = serde_json::from_slice(&out.stdout).expect("json");
    // The README scores the example against an oracle where case-01 and case-02 each expect
    // one finding and case-06 is clean: the published oracle is such an oracle.
    let oracle = read_json(&seed002().join("oracle.json"));
    let expects =
        |id: &str| oracle["cases"].as_array().expect("cases").iter().find(|c| c["id"] == id).expect("case")["expectedFindingIds"].as_array().map(Vec::len);
    assert_eq!((expects("case-01"), expects("case-02"), expects("case-06")), (Some(1), Some(1), Some(0)));
    assert_eq!(ours, serde_json::from_str::<Value>(&reference).expect("json"));
    assert_eq!(stdout_of(&out), reference, "byte for byte, as the reference prints it");

    let human = runner(&seed002()).args(["score", "docs-example.captured.json", "--oracle", "oracle.json"]).output().expect("runs");
    let text = stdout_of(&human);
    assert!(text.contains("method: adjudicated by a person (seed 002 captured results)"), "{text}");
    let row = text.lines().find(|l| l.starts_with("two-reviewers-plus-synthesis ")).expect("table row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..3], &["1", "0.25"], "{text}");
}

#[test]
fn score_rejects_duplicates_and_unknown_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oracle = seed002().join("oracle.json");
    let mut results = read_json(&seed002().join("docs-example.captured.json"));
    let run = results["strategies"][0]["runs"][0].clone();
    results["strategies"][0]["runs"].as_array_mut().expect("runs").push(run);
    write_json(&dir.path().join("dup.json"), &results);
    let out = runner(dir.path()).args(["score", "dup.json", "--oracle"]).arg(&oracle).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("duplicate result for this case and trial"), "{}", stderr_of(&out));

    results["strategies"][0]["runs"][0]["label"] = json!("x");
    write_json(&dir.path().join("leak.json"), &results);
    let out = runner(dir.path()).args(["score", "leak.json", "--oracle"]).arg(&oracle).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("unknown field `label`"), "{}", stderr_of(&out));

    let mut results = read_json(&seed002().join("docs-example.captured.json"));
    results["strategies"][0]["runs"][0]["metrics"] = json!([12400, 950, 260, 1210]);
    write_json(&dir.path().join("array.json"), &results);
    let out = runner(dir.path()).args(["score", "array.json", "--oracle"]).arg(&oracle).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("`metrics` must be an object"), "{}", stderr_of(&out));
}

/// Seed 002's scorer reads its files with JavaScript's `JSON.parse`, where a key repeated
/// within an object takes its last value. Here every level of the captured results repeats
/// a key whose first value would give another score or no valid document (a version 2, one
/// planned case, another strategy name, an incomplete run of case-02, another latency), and
/// the oracle repeats case-01's expected ids: read last-wins, the documented example scores
/// exactly as the reference prints it, and a repeated disposition decides the score.
#[test]
fn score_reads_a_repeated_key_as_the_reference_does_the_last_one_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oracle = std::fs::read_to_string(seed002().join("oracle.json")).expect("oracle");
    let case_01 = "\"expectedFindingIds\": [\"F01\"],";
    assert_eq!(oracle.matches(case_01).count(), 1, "case-01's expected ids, once");
    std::fs::write(dir.path().join("oracle.json"), oracle.replace(case_01, &format!("\"expectedFindingIds\": [\"F02\"], {case_01}"))).expect("write");
    let captured = |dispositions: &str| {
        format!(
            r#"{{"version": 2, "version": 1,
  "plan": {{"caseIds": ["case-01"], "trialIds": ["trial-01"], "caseIds": ["case-01", "case-02", "case-06"], "trialIds": ["trial-01", "trial-02"]}},
  "strategies": [{{"name": "first", "runs": [], "name": "two-reviewers-plus-synthesis", "runs": [
    {{"caseId": "case-02", "caseId": "case-01", "trialId": "trial-01", "complete": false, "complete": true,
     "findings": [{{"id": "F01", {dispositions}}}],
     "metrics": {{"latencyMs": 1, "inputTokens": 950, "outputTokens": 260, "totalTokens": 1210, "latencyMs": 12400}}}}]}}]}}"#
        )
    };
    let score = |name: &str, text: String| {
        std::fs::write(dir.path().join(name), text).expect("write");
        let out = runner(dir.path()).args(["score", name, "--oracle", "oracle.json", "--json"]).output().expect("runs");
        assert!(out.status.success(), "{name}: {}", stderr_of(&out));
        stdout_of(&out)
    };
    let reference = std::fs::read_to_string(seed002().join("docs-example.score.json")).expect("reference score");
    let verified_last = score("verified-last.json", captured(r#""disposition": "false_positive", "disposition": "verified""#));
    assert_eq!(verified_last, reference, "the last values are the documented example: its score, byte for byte");

    let fp_last = score("fp-last.json", captured(r#""disposition": "verified", "disposition": "false_positive""#));
    let mut expected: Value = serde_json::from_str(&reference).expect("json");
    let strategy = &mut expected["strategies"][0];
    strategy["findings"] = json!({"verified": 0, "falsePositives": 1, "unresolved": 0, "uniqueVerified": 0, "uniqueExpected": 2});
    strategy["precision"] = json!(0);
    strategy["recall"] = json!(0);
    assert_eq!(serde_json::from_str::<Value>(&fp_last).expect("json"), expected, "the last disposition, a false positive, is scored");
    // And laid out as the reference prints it: its text with those five numbers changed.
    let edits = [
        ("\"verified\": 1,\n        \"falsePositives\": 0,", "\"verified\": 0,\n        \"falsePositives\": 1,"),
        ("\"uniqueVerified\": 1,", "\"uniqueVerified\": 0,"),
        ("\"precision\": 1,", "\"precision\": 0,"),
        ("\"recall\": 0.25,", "\"recall\": 0,"),
    ];
    let text = edits.iter().fold(reference.clone(), |text, (from, to)| {
        assert_eq!(text.matches(from).count(), 1, "{from}");
        text.replace(from, to)
    });
    assert_eq!(fp_last, text);

    // Unknown keys stay errors in a document that repeats keys.
    std::fs::write(dir.path().join("leak.json"), captured(r#""disposition": "verified", "label": "x""#).replace("\"version\": 2, ", "")).expect("write");
    let out = runner(dir.path()).args(["score", "leak.json", "--oracle", "oracle.json"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("unknown field `label`"), "{}", stderr_of(&out));
}

#[test]
fn exec_reviews_seed_002s_published_corpus() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_manifest(
        dir.path(),
        "ref.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"reference\"\n[target]\ncorpus = \"{}\"\n[matrix]\nbaseline = [\"dry-run\"]\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[[analysis]]\nkind = \"fixture\"\n[report]\noutput = \"out\"\n",
            seed002().display()
        ),
    );
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results = read_json(&dir.path().join("out/results.json"));
    assert_eq!(results["analyses"][0]["kind"], "fixture");
}

fn quickstart_manifest(dir: &Path, target_extra: &str) -> PathBuf {
    write_manifest(
        dir,
        "qs.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"quickstart\"\n[target]\ncorpus = \"{}\"\n{target_extra}\n[matrix]\nbaseline = [\"dry-run\", \"heuristic\"]\nrepeat = 2\n[reviewer]\nkind = \"builtin\"\nname = \"{{{{baseline}}}}\"\n[report]\noutput = \"out\"\n",
            project_root().join("corpus/quickstart").display()
        ),
    )
}

#[test]
fn holdout_cases_are_sealed_until_the_manifest_unseals_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sealed = quickstart_manifest(dir.path(), "");
    let out = runner(dir.path()).arg("plan").arg(&sealed).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("holdout cases are sealed: `case-03`, `case-05`, `case-07`, `case-10`, `case-11`, `case-12`, `case-14`, `case-16`"), "{err}");
    assert!(err.contains("unseal-holdout = true"), "{err}");

    let tuning = quickstart_manifest(dir.path(), "cases = [\"case-01\", \"case-02\", \"case-04\"]");
    let out = runner(dir.path()).arg("plan").arg(&tuning).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));

    let unsealed = quickstart_manifest(dir.path(), "unseal-holdout = true");
    let out = runner(dir.path()).args(["exec", "--frozen", "--quiet", "--cache-dir"]).arg(project_root().join("cache")).arg(&unsealed).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("| Holdout | **unsealed**"), "{md}");
    let results = read_json(&dir.path().join("out/results.json"));
    assert_eq!(results["target"]["unsealed_holdout"].as_array().map(Vec::len), Some(8));
}

#[test]
fn adjudication_round_trip_from_cached_results_to_a_score() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = quickstart_manifest(dir.path(), "unseal-holdout = true");
    let cache = project_root().join("cache");
    let export = |out: &str, seed: &str| {
        let o = runner(dir.path())
            .args(["adjudicate", "export"])
            .arg(&manifest)
            .args(["--out", out, "--seed", seed, "--cache-dir"])
            .arg(&cache)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", stderr_of(&o));
        std::fs::read_to_string(dir.path().join(out).join("sheet.csv")).expect("sheet")
    };
    let sheet = export("adj", "7");
    assert_eq!(export("adj-again", "7"), sheet, "the same seed gives the same sheet");
    assert_ne!(export("adj-other", "8"), sheet, "another seed shuffles differently");
    for hidden in ["baseline", "heuristic", "dry-run #", "repeat", "trial"] {
        assert!(!sheet.contains(hidden), "the sheet must not say `{hidden}`:\n{sheet}");
    }
    let header = sheet.lines().next().expect("header");
    assert_eq!(header, "item,case,file,line,severity,category,message,suggestion,disposition,oracle_id,note");
    let key = read_json(&dir.path().join("adj/key.json"));
    assert_eq!(key["cells"], json!(["baseline=dry-run", "baseline=heuristic"]));
    // The built-in baselines report no provider latency or tokens: no metrics, not runner's
    // own wall time passed off as latency.
    let runs = key["runs"].as_array().expect("runs");
    assert!(!runs.is_empty() && runs.iter().all(|r| r.get("metrics").is_none_or(Value::is_null)), "{key}");
    assert!(std::fs::read_to_string(dir.path().join("adj/cases.md")).expect("cases").contains("`F02`"));

    // A person fills it: the storage prefix check is F02, everything else is noise.
    let mut filled = String::new();
    for (i, line) in sheet.lines().enumerate() {
        if i == 0 {
            filled.push_str(line);
        } else {
            let (row, _) = line.rsplit_once(",,,").expect("three empty columns at the end");
            let verdict = if row.starts_with_case("case-02") && row.contains("Prefix check") { "verified,F02," } else { "false_positive,," };
            filled.push_str(&format!("{row},{verdict}"));
        }
        filled.push('\n');
    }
    std::fs::write(dir.path().join("adj/filled.csv"), filled).expect("write");
    let out = runner(dir.path()).args(["adjudicate", "import", "adj/filled.csv", "--key", "adj/key.json", "--out", "captured.json"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("2 strategies × 16 cases × 2 trials (64 runs submitted)"), "{}", stdout_of(&out));

    let out = runner(dir.path())
        .args(["score", "captured.json", "--oracle"])
        .arg(project_root().join("corpus/quickstart/oracle.json"))
        .arg("--json")
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let human =
        runner(dir.path()).args(["score", "captured.json", "--oracle"]).arg(project_root().join("corpus/quickstart/oracle.json")).output().expect("runs");
    assert!(stdout_of(&human).contains("method: adjudicated by a person: adj/filled.csv"), "{}", stdout_of(&human));
    let heuristic = v["strategies"].as_array().expect("strategies").iter().find(|s| s["strategy"] == "baseline=heuristic").expect("heuristic");
    assert_eq!(heuristic["findings"]["verified"], 2, "F02 in both repeats");
    assert_eq!(heuristic["findings"]["uniqueVerified"], 1);
    let dry = v["strategies"].as_array().expect("strategies").iter().find(|s| s["strategy"] == "baseline=dry-run").expect("dry-run");
    assert_eq!(dry["precision"], 0.0);
    assert_eq!(dry["cleanCaseFalsePositiveRate"], 1.0);

    // The adjudication record, named by a review-eval analysis, replaces automatic matching.
    let base = std::fs::read_to_string(&manifest).expect("manifest");
    let with_analyses = |out: &str, extra: &str| {
        let text = base.replace("output = \"out\"", &format!("output = \"{out}\""));
        format!("{text}[[analysis]]\nkind = \"review-eval\"\n{extra}[[analysis]]\nkind = \"fixture\"\n{extra}")
    };
    let eval_of = |name: &str, out: &str, extra: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, with_analyses(out, extra)).expect("manifest");
        let o = runner(dir.path()).args(["exec", "--frozen", "--quiet", "--cache-dir"]).arg(&cache).arg(&path).output().expect("runs");
        assert!(o.status.success(), "{}", stderr_of(&o));
        let md = std::fs::read_to_string(dir.path().join(out).join("RESULTS.md")).expect("RESULTS.md");
        (read_json(&dir.path().join(out).join("results.json")), md)
    };
    let (automatic, automatic_md) = eval_of("qs-auto.toml", "out-auto", "");
    let (adjudicated, md) = eval_of("qs-adj.toml", "out-adj", "adjudication = \"captured.adjudication.json\"\n");
    let analysis = |v: &Value, kind: &str| v["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == kind).cloned().expect("analysis");
    let heuristic_scores = |v: &Value| {
        let cells = analysis(v, "review-eval")["data"]["cells"].clone();
        cells.as_array().expect("cells").iter().find(|c| c["cell"] == "baseline=heuristic").expect("heuristic")["scores"].clone()
    };
    assert_eq!(analysis(&automatic, "review-eval")["data"]["method"]["kind"], "automatic");
    assert!(automatic_md.contains("automatic matching"), "{automatic_md}");
    let eval = analysis(&adjudicated, "review-eval");
    assert_eq!(eval["data"]["method"], json!({ "kind": "adjudication", "source": "adj/filled.csv", "rule": analysis(&automatic, "review-eval")["rule"] }));
    assert!(md.contains("adjudication `adj/filled.csv`"), "{md}");
    assert!(md.contains("Adjudicated by a person (sheet `adj/filled.csv`): 64 of 64 runs"), "{md}");
    assert!(md.contains("Automatic matching by the rule (no adjudication for them): 0 runs — none."), "{md}");
    assert_eq!(analysis(&adjudicated, "fixture")["data"]["method"]["kind"], "adjudication");
    let (before, after) = (heuristic_scores(&automatic), heuristic_scores(&adjudicated));
    // Automatic matching credits the heuristic with F02 (twice), as the person does, and calls
    // 4 of its 10 reports noise; the person calls every other report noise.
    assert_eq!((before["found"].clone(), before["extras_rejected"].clone(), before["noise"].clone()), (json!(2), json!(4), json!(0.4)));
    assert_eq!((after["found"].clone(), after["extras_rejected"].clone(), after["noise"].clone()), (json!(2), json!(8), json!(0.8)));

    // A missing adjudication record is an error naming its path.
    let path = dir.path().join("qs-missing.toml");
    std::fs::write(&path, with_analyses("out-missing", "adjudication = \"nowhere.json\"\n")).expect("manifest");
    let o = runner(dir.path()).args(["exec", "--frozen", "--quiet", "--cache-dir"]).arg(&cache).arg(&path).output().expect("runs");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr_of(&o).contains("nowhere.json"), "{}", stderr_of(&o));

    // An unfilled sheet is refused, row by row.
    let out = runner(dir.path()).args(["adjudicate", "import", "adj/sheet.csv", "--key", "adj/key.json", "--out", "x.json"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("adj/sheet.csv:2: item `A001`: column `disposition`: empty; every row needs a label"), "{}", stderr_of(&out));
}

trait StartsWithCase {
    fn starts_with_case(&self, case: &str) -> bool;
}

impl StartsWithCase for str {
    /// Whether a sheet row (`item,case,…`) belongs to `case`.
    fn starts_with_case(&self, case: &str) -> bool {
        self.split(',').nth(1) == Some(case)
    }
}

#[test]
fn corpus_validate_bounds_deep_nesting_devices_and_fifos() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = corpus_subset(dir.path(), &["case-01", "case-04"]);
    // 50,000 levels of nesting: a located error, not a stack overflow.
    std::fs::write(corpus.join("cases.public.json"), format!("{}{}", "[".repeat(50_000), "]".repeat(50_000))).expect("write");
    let out = runner(dir.path()).args(["corpus", "validate", "corpus", "--structure-only"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout_of(&out), stderr_of(&out));
    assert!(stdout_of(&out).contains("cases.public.json:1:129: invalid JSON: nesting deeper than 128 levels"), "{}", stdout_of(&out));

    // A FIFO nobody writes to and a symlink to /dev/zero: refused at once, never read.
    std::fs::remove_file(corpus.join("cases.public.json")).expect("rm");
    let status = StdCommand::new("mkfifo").arg(corpus.join("cases.public.json")).status().expect("mkfifo");
    assert!(status.success());
    std::fs::remove_file(corpus.join("oracle.json")).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", corpus.join("oracle.json")).expect("symlink");
    let out = runner(dir.path()).args(["corpus", "validate", "corpus", "--structure-only"]).output().expect("runs");
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr_of(&out));
    assert!(text.contains("cases.public.json`: it is a FIFO; corpus files must be regular files"), "{text}");
    assert!(text.contains("oracle.json`: it is a device; corpus files must be regular files"), "{text}");
}
