//! External targets: changes without a repository (`changes.json`), reviewed from their diffs
//! by a built-in reviewer, or compared at change level; reviewers that need what a change
//! lacks are refused at validation with a clear message.

use super::*;

const DIFF: &str = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,5 @@\n def add(a, b):\n     return a + b\n+\n+def run(code):\n+    return eval(code)  # TODO: sandbox\n";

/// The oracle of two external changes `p-1` and `p-2`, one change-level finding each.
pub(crate) const TWO_CHANGE_ORACLE: &str = r#"{"version": 1, "cases": [
    {"id": "p-1", "expectedFindingIds": ["p-1/G1"], "rationale": "r"},
    {"id": "p-2", "expectedFindingIds": ["p-2/G1"], "rationale": "r"}],
  "findings": [
    {"id": "p-1/G1", "caseId": "p-1", "description": "eval of untrusted code runs arbitrary code", "severity": "error", "blocking": true, "severityLabel": "Critical"},
    {"id": "p-2/G1", "caseId": "p-2", "description": "the new function has no docstring", "severity": "info", "severityLabel": "Low"}]}"#;

/// A corpus of two external changes (one with a diff when `with_diff`), an oracle with one
/// change-level finding each, and a manifest reviewing them with `reviewer`.
fn external(dir: &Path, with_diff: bool, reviewer: &str) -> PathBuf {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(corpus.join("diffs")).expect("mkdir");
    std::fs::write(corpus.join("diffs/p-2.diff"), DIFF).expect("diff");
    let second_diff = if with_diff { r#", "diff": "diffs/p-2.diff""# } else { "" };
    std::fs::write(corpus.join("diffs/p-1.diff"), DIFF).expect("diff");
    std::fs::write(
        corpus.join("changes.json"),
        format!(r#"[{{"id": "p-2", "title": "Add run", "url": "https://example.com/pr/2"{second_diff}}}, {{"id": "p-1", "title": "Add run too", "diff": "diffs/p-1.diff"}}]"#),
    )
    .expect("changes");
    std::fs::write(corpus.join("oracle.json"), TWO_CHANGE_ORACLE).expect("oracle");
    let text = format!(
        "version = 1\n[experiment]\nname = \"ext\"\n[target]\nexternal = \"corpus/changes.json\"\noracle = \"corpus/oracle.json\"\n[matrix]\nrepeat = 1\n{reviewer}\n[[analysis]]\nkind = \"fixture\"\nrank-by = \"f1\"\n[report]\noutput = \"out\"\n"
    );
    write_manifest(dir, "ext.toml", &text)
}

const HEURISTIC: &str = "[reviewer]\nkind = \"builtin\"\nname = \"heuristic\"";

#[test]
fn an_external_target_with_diffs_is_planned_reviewed_and_scored_at_change_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = external(dir.path(), true, HEURISTIC);
    let validate = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert!(validate.status.success(), "{}{}", stdout_of(&validate), stderr_of(&validate));
    assert!(stdout_of(&validate).contains("1 cell × 2 subjects × 1 repeat = 2 runs"), "{}", stdout_of(&validate));
    let exec = |dir: &Path| runner(dir).args(["exec", "--json", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs");
    let out = exec(dir.path());
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(count_events(&events(&out), "run_finished"), 2);
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    assert_eq!(results["target"]["kind"], "external");
    assert_eq!(results["target"]["subjects"], serde_json::json!(["p-1", "p-2"]));
    let fixture = &results["analyses"][0];
    assert!(fixture["rule"].as_str().is_some_and(|r| r.starts_with("change-level matching (2 of 2")), "{}", fixture["rule"]);
    let titles: Vec<&str> = fixture["tables"].as_array().expect("tables").iter().filter_map(|t| t["title"].as_str()).collect();
    assert_eq!(titles, ["Overall", "Ranking by F1", "Recall by severity", "Per category", "Per case"]);
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("Critical") && md.contains("Low"), "{md}");
    // Served from the cache the second time, keyed by each change's identity.
    let again = exec(dir.path());
    assert!(again.status.success(), "{}", stderr_of(&again));
    assert_eq!(count_events(&events(&again), "run_finished"), 0, "{}", stdout_of(&again));
    // A change's diff is part of its identity: changing one re-runs that change only.
    std::fs::write(dir.path().join("corpus/diffs/p-1.diff"), DIFF.replace("TODO: sandbox", "FIXME")).expect("diff");
    let changed = exec(dir.path());
    assert!(changed.status.success(), "{}", stderr_of(&changed));
    assert_eq!(count_events(&events(&changed), "run_finished"), 1, "{}", stdout_of(&changed));
}

#[test]
fn a_builtin_reviewer_on_a_change_without_a_diff_is_refused_at_validation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = external(dir.path(), false, HEURISTIC);
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert!(!out.status.success());
    let text = format!("{}{}", stdout_of(&out), stderr_of(&out));
    assert!(text.contains("reviewer `reviewer` (builtin) reviews a change's diff") && text.contains("have no `diff` (p-2)"), "{text}");
    assert!(text.contains("`replay` reviewer"), "the message says what to do: {text}");
    let exec = runner(dir.path()).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs");
    assert_eq!(exec.status.code(), Some(1), "{}", stderr_of(&exec));
}

#[test]
fn a_command_reviewer_on_an_external_target_is_refused_it_has_no_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = external(dir.path(), true, "[reviewer]\nkind = \"command\"\nprogram = \"true\"");
    let out = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert!(!out.status.success());
    let text = format!("{}{}", stdout_of(&out), stderr_of(&out));
    assert!(text.contains("(command) runs in the subject's repository") && text.contains("has none"), "{text}");
}

#[test]
fn external_target_keys_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = external(dir.path(), true, HEURISTIC);
    let text = std::fs::read_to_string(&manifest).expect("read");
    let cases = [
        (text.replace("oracle = \"corpus/oracle.json\"", "oracle = \"corpus/none.json\""), "oracle file"),
        (text.replace("external = \"corpus/changes.json\"", "external = \"corpus/none.json\""), "external file"),
        (text.replace("[target]\n", "[target]\ncorpus = \"corpus\"\n"), "takes one of `repo`"),
        (text.replace("[matrix]\n", "[matrix]\nref = [\"HEAD~1\"]\n"), "`ref` axis does not apply to an `external` target"),
        (text.replace("external = \"corpus/changes.json\"\n", "corpus = \"corpus\"\n"), "`oracle` applies to a git (`repo`) or `external` target"),
    ];
    for (manifest_text, expected) in cases {
        let path = write_manifest(dir.path(), "bad.toml", &manifest_text);
        let out = runner(dir.path()).arg("validate").arg(&path).output().expect("runs");
        let shown = format!("{}{}", stdout_of(&out), stderr_of(&out));
        assert!(!out.status.success() && shown.contains(expected), "{expected}: {shown}");
    }
}

#[test]
fn a_replay_reviewer_compares_changes_without_diffs_at_change_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let replay = "[matrix]\nreviewer = [\"tool\"]\n[reviewers.tool]\nkind = \"replay\"\nformat = \"jsonl\"\npath = \"captured.jsonl\"\nmissing = \"empty\"\ntool = \"Some tool\"";
    let manifest = external(dir.path(), false, "");
    let text = std::fs::read_to_string(&manifest).expect("read").replace("[matrix]\nrepeat = 1\n", &format!("{replay}\n"));
    let manifest = write_manifest(dir.path(), "ext.toml", &text);
    // p-1 has a finding close to its golden comment and one of noise; p-2 has no rows.
    std::fs::write(
        dir.path().join("captured.jsonl"),
        "{\"subject\": \"p-1\", \"file\": null, \"line\": null, \"message\": \"eval runs untrusted code: arbitrary code execution\"}\n\
         {\"subject\": \"p-1\", \"file\": null, \"line\": null, \"message\": \"rename the function\"}\n",
    )
    .expect("capture");
    let validate = runner(dir.path()).arg("validate").arg(&manifest).output().expect("runs");
    assert!(validate.status.success(), "{}{}", stdout_of(&validate), stderr_of(&validate));
    let out = runner(dir.path()).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    let overall = &results["analyses"][0]["data"]["cells"][0]["overall"];
    // p-1's golden comment found, the noise a FP; p-2 (no rows: reviewed, nothing found) missed.
    assert_eq!((overall["tp"].as_u64(), overall["fp"].as_u64(), overall["fn"].as_u64()), (Some(1), Some(1), Some(1)), "{overall}");
    let severity = &results["analyses"][0]["data"]["cells"][0]["by_severity"];
    assert_eq!(severity, &serde_json::json!([{"severity": "Critical", "oracle": 1, "found": 1}, {"severity": "Low", "oracle": 1, "found": 0}]));
}
