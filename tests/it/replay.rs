//! The replay reviewer end to end: a built-in reviewer and two replayed "tools" (a SARIF log
//! per case and one CSV for all cases, written by the test) over three cases of the bundled
//! corpus, compared in A1 over the `reviewer` axis and scored by H2; editing one capture
//! re-runs only its subject.

use super::*;

fn sarif(results: &str) -> String {
    format!(
        r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"t","rules":[{{"id":"R","properties":{{"tags":["security"]}}}}]}}}},"results":[{results}]}}]}}"#
    )
}

fn result(file: &str, line: u32, level: &str, message: &str) -> String {
    format!(
        r#"{{"ruleId":"R","level":"{level}","message":{{"text":"{message}"}},"locations":[{{"physicalLocation":{{"artifactLocation":{{"uri":"{file}"}},"region":{{"startLine":{line}}}}}}}]}}"#
    )
}

/// The project: captures under `captured/`, the manifest beside them.
fn replay_project(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("captured/sarif")).expect("dirs");
    let write = |name: &str, text: String| std::fs::write(dir.join("captured").join(name), text).expect("write");
    write("sarif/case-02.sarif", sarif(&result("src/storage.py", 14, "error", "startswith() prefix check lets a sibling directory escape the storage root")));
    write("sarif/case-07.sarif", sarif(&result("src/query.mjs", 37, "error", "direction is interpolated into ORDER BY: SQL injection")));
    write("sarif/case-04.sarif", sarif(&result("src/slug.mjs", 12, "note", "Unicode property escapes need a modern runtime")));
    write(
        "bot.csv",
        "subject,file,line,message,severity,category\ncase-02,,,,,\ncase-07,src/query.mjs,40,A limit of 0 becomes 1,low,correctness\ncase-04,src/slug.mjs,22,Truncation can cut a word,low,design\ncase-04,,,The change has no tests,medium,testing\n"
            .to_string(),
    );
    let text = format!(
        r#"version = 1
[experiment]
name = "replayed"
[target]
corpus = "{corpus}"
cases = ["case-02", "case-04", "case-07"]
unseal-holdout = true
[matrix]
reviewer = ["heuristic", "analyzer", "bot"]
[reviewers.heuristic]
kind = "builtin"
name = "heuristic"
[reviewers.analyzer]
kind = "replay"
path = "captured/sarif/{{subject}}.sarif"
tool = "test analyzer"
[reviewers.bot]
kind = "replay"
format = "csv"
path = "captured/bot.csv"
[[analysis]]
kind = "overlap"
axis = "reviewer"
[[analysis]]
kind = "fixture"
[report]
output = "out"
"#,
        corpus = project_root().join("corpus/quickstart").display()
    );
    write_manifest(dir, "replayed.toml", &text)
}

fn exec(dir: &Path, manifest: &Path) -> std::process::Output {
    runner(dir).args(["exec", "--json", "--cache-dir", "cache", "--work-dir", "work"]).arg(manifest).output().expect("runs")
}

/// The rows of analysis `index`'s first table, as text (`` `x` `` marks dropped).
fn rows(results: &serde_json::Value, index: usize) -> Vec<Vec<String>> {
    let table = &results["analyses"][index]["tables"][0];
    table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            row.as_array()
                .expect("row")
                .iter()
                .map(|c| match c {
                    serde_json::Value::String(s) => s.trim_matches('`').to_string(),
                    serde_json::Value::Object(o) if o.contains_key("num") => o["num"].to_string(),
                    other => other.to_string(),
                })
                .collect()
        })
        .collect()
}

#[test]
fn replayed_sarif_and_csv_are_compared_with_a_builtin_reviewer_and_scored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = replay_project(dir.path());
    // Named without a directory, the manifest's directory is the current one.
    assert_eq!(manifest.parent(), Some(dir.path()));
    let out = exec(dir.path(), Path::new("replayed.toml"));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(count_events(&events(&out), "run_finished"), 9, "3 reviewers × 3 cases");
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");

    // A1: run pairs, findings on each side, exact and fuzzy overlap, only A, only B (a
    // finding is "only" its side without a fuzzy match: the analyzer's and the heuristic's
    // findings share their lines in two cases, not their wording).
    let overlap = rows(&results, 0);
    let pair = |a: &str, b: &str| overlap.iter().find(|r| r[0] == a && r[1] == b).unwrap_or_else(|| panic!("{a} vs {b}: {overlap:?}")).clone();
    assert_eq!(pair("heuristic", "analyzer")[2..], ["3", "3", "3", "2", "0", "3", "3"], "{overlap:?}");
    assert_eq!(pair("heuristic", "bot")[2..], ["3", "3", "3", "0", "0", "3", "3"], "{overlap:?}");
    assert_eq!(pair("analyzer", "bot")[2..], ["3", "3", "3", "0", "0", "3", "3"], "{overlap:?}");

    // H2: per cell TP, FP, FN against the oracle (case-02 and case-07 have one finding each,
    // case-04 is clean).
    let fixture = rows(&results, 1);
    let cell = |name: &str| fixture.iter().find(|r| r[0] == format!("reviewer={name}")).unwrap_or_else(|| panic!("{name}: {fixture:?}")).clone();
    // The heuristic's SQL message on case-07 shares too few of F05's words to be found under
    // the calibrated rule (it was found by its category before): partial, so a FP and a FN.
    assert_eq!(cell("heuristic")[1..5], ["3", "1", "2", "1"], "{fixture:?}");
    assert_eq!(cell("analyzer")[1..5], ["3", "2", "1", "0"], "{fixture:?}");
    assert_eq!(cell("bot")[1..5], ["3", "0", "3", "2"], "{fixture:?}");

    let report = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(report.contains("replay, builtin") || report.contains("builtin, replay"), "{report}");
    assert!(report.contains("replay_source `captured/sarif/{subject}.sarif`") && report.contains("replay_tool `test analyzer`"), "{report}");
    assert!(report.contains("replay_source `captured/bot.csv`") && report.contains("replay_format `csv`"), "{report}");

    // Editing one case's capture re-runs that case only; the rest comes from the cache.
    std::fs::write(dir.path().join("captured/sarif/case-04.sarif"), sarif("")).expect("edit");
    let again = exec(dir.path(), &manifest);
    assert!(again.status.success(), "{}", stderr_of(&again));
    let events = events(&again);
    assert_eq!((count_events(&events, "run_started"), count_events(&events, "run_cached")), (1, 8), "{}", stdout_of(&again));
    let started: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "run_started").collect();
    assert!(started[0].to_string().contains("reviewer=analyzer") && started[0].to_string().contains("case-04"), "{started:?}");

    // A case the shared CSV has no row for fails its run (exit 3), saying what is missing.
    std::fs::write(dir.path().join("captured/bot.csv"), "subject,file,line,message\ncase-02,,,\ncase-07,,,\n").expect("edit");
    let failed = exec(dir.path(), &manifest);
    assert_eq!(failed.status.code(), Some(3), "{}", stderr_of(&failed));
    let report = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(report.contains("captured file `captured/bot.csv` has no row for subject `case-04`"), "{report}");
    // `runner validate` says so before anything runs, and names a malformed capture's line.
    std::fs::write(dir.path().join("captured/sarif/case-07.sarif"), "{\"version\": \"2.1.0\",\n\"runs\": 3}").expect("edit");
    let validated = runner(dir.path()).args(["validate", "replayed.toml"]).output().expect("runs");
    assert_eq!(validated.status.code(), Some(1), "{}", stdout_of(&validated));
    let errors = stderr_of(&validated);
    assert!(errors.contains("reviewer `bot`: captured file `captured/bot.csv` has no row for subject `case-04` (`missing = \"error\"`)"), "{errors}");
    assert!(errors.contains("reviewer `analyzer`: captured file `captured/sarif/case-07.sarif`: not a SARIF log") && errors.contains("line 2"), "{errors}");
}

/// On a git target the subject is the `ref` value as written: `HEAD~1` names
/// `captured/HEAD~1.jsonl`; a stet capture (`.json`) replays with stet's own ids.
#[test]
fn git_ranges_replay_the_capture_named_after_their_ref() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    std::fs::create_dir_all(dir.path().join("captured")).expect("dir");
    std::fs::write(
        dir.path().join("captured/HEAD~1.jsonl"),
        "{\"file\":\"calc.py\",\"line\":14,\"message\":\"eval of untrusted code\",\"severity\":\"error\",\"category\":\"security\"}\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("captured/HEAD~2.json"),
        "{\"findings\":[{\"id\":\"09fd85503157675d43d1845f0ae7fa4c7fe470b22b46d49cad2b02d5c64f9457\",\"file\":\"calc.py\",\"line\":4,\"severity\":\"info\",\"category\":\"maintainability\",\"confidence\":1,\"message\":\"Dry-run placeholder (CI)\"}]}\n",
    )
    .expect("write");
    let text = format!(
        "version = 1\n[experiment]\nname = \"git-replay\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\", \"HEAD~2\"]\nreviewer = [\"jsonl\", \"stet\"]\n[reviewers.jsonl]\nkind = \"replay\"\npath = \"captured/{{subject}}.jsonl\"\nmissing = \"empty\"\n[reviewers.stet]\nkind = \"replay\"\npath = \"captured/{{subject}}.json\"\nmissing = \"empty\"\n[report]\noutput = \"out\"\n",
        repo.display()
    );
    write_manifest(dir.path(), "git.toml", &text);
    let out = runner(dir.path()).args(["exec", "--json", "--cache-dir", "cache", "--work-dir", "work", "git.toml"]).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    let findings: Vec<(String, u64)> =
        results["runs"].as_array().expect("runs").iter().map(|r| (r["cell"].as_str().unwrap_or("").to_string(), r["findings"].as_u64().unwrap_or(9))).collect();
    assert_eq!(
        findings,
        vec![
            ("ref=HEAD~1,reviewer=jsonl".to_string(), 1),
            ("ref=HEAD~1,reviewer=stet".to_string(), 0),
            ("ref=HEAD~2,reviewer=jsonl".to_string(), 0),
            ("ref=HEAD~2,reviewer=stet".to_string(), 1)
        ],
        "{results}"
    );
}
