//! Interrupting an execution (kill -9) and running it again finishes only what is missing,
//! with no duplicate rows.

use super::*;
use std::time::{Duration, Instant};

#[test]
fn kill_9_then_rerun_completes_only_the_missing_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = write_manifest(
        dir.path(),
        "slow.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"slow\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nshard = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n[reviewer]\nkind = \"builtin\"\nname = \"sleep\"\nlatency-ms = 300\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    );
    let bin = assert_cmd::cargo::cargo_bin("runner");
    let mut child = std::process::Command::new(bin)
        .current_dir(dir.path())
        .args(["exec", "--quiet", "--jobs", "2"])
        .arg(&manifest)
        .spawn()
        .expect("spawn");
    let runs_dir = dir.path().join("cache/runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    while super::exec_corpus::walk(&runs_dir).len() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill -9");
    let _ = child.wait();
    let done = super::exec_corpus::walk(&runs_dir).len();
    assert!((4..12).contains(&done), "interrupted part-way: {done} runs stored");

    let out = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let ev = events(&out);
    assert_eq!(count_events(&ev, "run_cached"), done);
    assert_eq!(count_events(&ev, "run_finished"), 12 - done, "only the missing runs ran");
    let results: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("out/results.json")).expect("json")).expect("parse");
    let rows = results["runs"].as_array().expect("runs");
    assert_eq!(rows.len(), 12, "one row per planned run, no duplicates");
    let distinct: std::collections::BTreeSet<String> = rows.iter().map(|r| format!("{}#{}", r["cell"], r["repeat"])).collect();
    assert_eq!(distinct.len(), 12);
}
