//! End to end on the bundled corpus with the built-in reviewers: run, re-run from the
//! cache byte for byte, `--frozen`, corrupt entries, `plan`.

use super::*;

fn quickstart_manifest(dir: &Path) -> PathBuf {
    let corpus = project_root().join("corpus/quickstart");
    write_manifest(
        dir,
        "qs.toml",
        &format!(
            r#"version = 1
[experiment]
name = "qs"
description = "test"
[target]
corpus = "{}"
unseal-holdout = true
[matrix]
baseline = ["dry-run", "heuristic"]
repeat = 2
[reviewer]
kind = "builtin"
name = "{{{{baseline}}}}"
[[analysis]]
kind = "overlap"
axis = "baseline"
[[analysis]]
kind = "repeatability"
[report]
output = "out"
"#,
            corpus.display()
        ),
    )
}

#[test]
fn a_rerun_is_served_from_the_cache_and_reproduces_results_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = quickstart_manifest(dir.path());
    let first = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    assert!(first.status.success(), "{}", stderr_of(&first));
    let ev = events(&first);
    let planned = ev.iter().find(|e| e["event"] == "planned").expect("planned event");
    let runs = planned["runs"].as_u64().expect("runs");
    assert!(runs >= 2 * 12 * 2, "2 baselines × ≥12 cases × 2 repeats, got {runs}");
    assert_eq!(count_events(&ev, "run_finished") as u64, runs);
    let md = std::fs::read(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    let json = std::fs::read(dir.path().join("out/results.json")).expect("results.json");

    let second = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    assert!(second.status.success());
    let ev = events(&second);
    assert_eq!(count_events(&ev, "run_cached") as u64, runs);
    assert_eq!(count_events(&ev, "run_started"), 0);
    assert_eq!(std::fs::read(dir.path().join("out/RESULTS.md")).expect("md"), md);
    assert_eq!(std::fs::read(dir.path().join("out/results.json")).expect("json"), json);

    let frozen = runner(dir.path()).args(["exec", "--frozen", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(frozen.status.success(), "{}", stderr_of(&frozen));
    assert_eq!(std::fs::read(dir.path().join("out/RESULTS.md")).expect("md"), md);

    let text = String::from_utf8_lossy(&md);
    assert!(text.contains("`baseline=dry-run`") && text.contains("`baseline=heuristic`"), "{text}");

    // The whole results model, with hashes, times and temporary paths redacted.
    let results: serde_json::Value = serde_json::from_slice(&json).expect("results.json");
    insta::assert_json_snapshot!(results, {
        ".experiment.manifest" => "[path]",
        ".target.description" => "[path]",
        ".runs[].key" => "[key]",
        ".runs[].seconds" => "[seconds]",
        ".cells[].seconds" => "[seconds]",
        ".totals.review_seconds" => "[seconds]",
    });
}

#[test]
fn frozen_lists_what_the_cache_lacks_and_calls_no_reviewer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = quickstart_manifest(dir.path());
    let out = runner(dir.path()).args(["exec", "--frozen"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(4));
    let err = stderr_of(&out);
    assert!(err.contains("runs are not in the cache"), "{err}");
    assert!(err.contains("baseline=dry-run #1 @case-01"), "{err}");
    assert!(!dir.path().join("out/RESULTS.md").exists());
    assert!(!dir.path().join(".runner/cases").exists(), "nothing was materialized");
}

#[test]
fn a_corrupt_entry_is_detected_reported_and_recomputed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = quickstart_manifest(dir.path());
    assert!(runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs").status.success());
    // Damage one findings object.
    let objects = dir.path().join("cache/objects");
    let victim = walk(&objects)
        .into_iter()
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.starts_with('[') && t.contains("Dry-run placeholder")))
        .expect("a findings object");
    std::fs::write(&victim, "[]").expect("tamper");

    let verify = runner(dir.path()).args(["cache", "verify"]).output().expect("runs");
    assert_eq!(verify.status.code(), Some(1));
    assert!(stdout_of(&verify).contains("is corrupt"), "{}", stdout_of(&verify));

    let out = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let ev = events(&out);
    assert!(count_events(&ev, "cache_corrupt") >= 1, "corruption reported");
    assert!(count_events(&ev, "run_finished") >= 1, "and the run recomputed");
    let verify = runner(dir.path()).args(["cache", "verify"]).output().expect("runs");
    assert!(verify.status.success(), "{}", stdout_of(&verify));
}

#[test]
fn plan_shows_cached_runs_and_cache_ls_lists_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = quickstart_manifest(dir.path());
    let before = runner(dir.path()).args(["plan", "--json"]).arg(&manifest).output().expect("runs");
    let doc: serde_json::Value = serde_json::from_slice(&before.stdout).expect("plan json");
    assert_eq!(doc["cached"], 0);
    assert!(doc["runs"][0]["why"].as_str().expect("why").contains("never run"));
    assert!(runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs").status.success());
    let after = runner(dir.path()).args(["plan", "--json"]).arg(&manifest).output().expect("runs");
    let doc: serde_json::Value = serde_json::from_slice(&after.stdout).expect("plan json");
    assert_eq!(doc["to_run"], 0);
    let ls = runner(dir.path()).args(["cache", "ls", "--json"]).output().expect("runs");
    assert_eq!(stdout_of(&ls).lines().count() as u64, doc["cached"].as_u64().expect("cached"));
}

pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".tmp")) {
                // Temporary files are writes in flight (or cut short by a kill), not entries.
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
