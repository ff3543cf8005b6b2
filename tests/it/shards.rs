//! `--shard i/n` splits an experiment's runs with no coordinator; `runner merge` assembles
//! the reports and lists, with its shard, every run no shard stored.

use super::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// An experiment of `cells` × `repeats` runs of the built-in `sleep` reviewer on a real repo
/// (`repo/`, named relative to the manifest, so a copy of the directory is a clone).
pub(crate) fn sleep_manifest(dir: &Path, name: &str, cells: usize, repeats: u32, latency_ms: u32) -> PathBuf {
    calc_repo(dir);
    let values: Vec<String> = (1..=cells).map(|i| i.to_string()).collect();
    write_manifest(
        dir,
        &format!("{name}.toml"),
        &format!(
            "version = 1\n[experiment]\nname = \"{name}\"\n[target]\nrepo = \"repo\"\n[matrix]\nref = [\"HEAD~1\"]\nn = [{}]\nrepeat = {repeats}\n[reviewer]\nkind = \"builtin\"\nname = \"sleep\"\nlatency-ms = {latency_ms}\n[report]\noutput = \"out\"\n",
            values.join(", ")
        ),
    )
}

/// The run labels an execution's NDJSON events say it ran.
fn finished(events: &[serde_json::Value]) -> BTreeSet<String> {
    events.iter().filter(|e| e["event"] == "run_finished").map(|e| e["run"].as_str().unwrap_or_default().to_string()).collect()
}

#[test]
fn shards_split_the_runs_and_merge_assembles_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "split", 12, 3, 0);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut total = 0;
    for index in 0..3 {
        let shard = format!("{index}/3");
        let plan = runner(dir.path()).args(["plan", "--json", "--shard", &shard]).arg(&manifest).output().expect("plan");
        assert!(plan.status.success(), "{}", stderr_of(&plan));
        let planned: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan json");
        assert_eq!(planned["shard"], shard.as_str());
        let planned_runs: BTreeSet<String> =
            planned["runs"].as_array().expect("runs").iter().map(|r| r["run"].as_str().unwrap_or_default().to_string()).collect();

        let out = runner(dir.path()).args(["exec", "--json", "--shard", &shard]).arg(&manifest).output().expect("exec");
        assert!(out.status.success(), "shard {shard}: {}", stderr_of(&out));
        let ran = finished(&events(&out));
        assert_eq!(ran, planned_runs, "shard {shard} runs exactly what `plan --shard` lists");
        // Runs of the shards before it are in the (shared) cache already; the rest are left.
        let ev = events(&out);
        assert_eq!(count_events(&ev, "run_cached"), total, "what earlier shards stored is taken from the cache");
        assert_eq!(count_events(&ev, "run_skipped"), 36 - ran.len() - total, "the other shards' runs are left to them");
        assert!(ran.is_disjoint(&seen), "no run belongs to two shards");
        seen.extend(ran.iter().cloned());
        total += ran.len();
        assert!(!dir.path().join("out/RESULTS.md").exists(), "a shard writes no report");

        if index == 1 {
            // Two of three shards done: merging fails and names the missing shard's runs.
            let early = runner(dir.path()).args(["merge", "--shards", "3"]).arg(&manifest).output().expect("merge");
            assert_eq!(early.status.code(), Some(4), "{}", stderr_of(&early));
            let err = stderr_of(&early);
            assert!(err.contains(&format!("{} runs are not in the cache", 36 - total)), "{err}");
            assert!(err.contains("(shard 2/3)") && !err.contains("(shard 0/3)") && !err.contains("(shard 1/3)"), "{err}");
        }
    }
    assert_eq!(total, 36, "the shards together run every run once");
    let merged = runner(dir.path()).args(["merge", "--shards", "3"]).arg(&manifest).output().expect("merge");
    assert!(merged.status.success(), "{}", stderr_of(&merged));
    let results: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("out/results.json")).expect("results")).expect("json");
    assert_eq!(results["runs"].as_array().map(Vec::len), Some(36));
}

#[test]
fn a_shard_flag_is_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "flags", 2, 1, 0);
    for bad in ["3/3", "1/0", "x"] {
        let out = runner(dir.path()).args(["exec", "--shard", bad]).arg(&manifest).output().expect("exec");
        assert_eq!(out.status.code(), Some(1), "{bad}: a usage error");
        assert!(stderr_of(&out).contains("INDEX/COUNT"), "{}", stderr_of(&out));
    }
    let frozen = runner(dir.path()).args(["exec", "--frozen", "--shard", "0/2"]).arg(&manifest).output().expect("exec");
    assert_eq!(frozen.status.code(), Some(1), "--shard runs reviews; --frozen runs none: {}", stderr_of(&frozen));
}
