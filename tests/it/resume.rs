//! Interrupting an execution (kill -9) and running it again finishes only what is missing,
//! with no duplicate rows.

use super::*;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
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
    let mut child = std::process::Command::new(bin).current_dir(dir.path()).args(["exec", "--quiet", "--jobs", "2"]).arg(&manifest).spawn().expect("spawn");
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

/// A `command` reviewer that counts its invocations in `dir/count` and, while `dir/block`
/// exists, blocks every shard but 1 in a `sleep` whose pid it writes to `dir/pid.SHARD`. It
/// writes nothing in the repository, so its runs go side by side (`isolation = "none"`).
fn blocking_reviewer_manifest(dir: &Path, repo: &Path, shards: &[u32]) -> PathBuf {
    let script = dir.join("reviewer.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$SHARD\" >> '{d}/count'\nif [ -e '{d}/block' ] && [ \"$SHARD\" != 1 ]; then echo $$ > '{d}/pid.'\"$SHARD\"; exec sleep 120; fi\nsleep 0.2\n",
            d = dir.display()
        ),
    )
    .expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let shards: Vec<String> = shards.iter().map(u32::to_string).collect();
    write_manifest(
        dir,
        "blocking.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"blocking\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nshard = [{}]\n[reviewer]\nkind = \"command\"\nprogram = \"{}\"\nisolation = \"none\"\nenv = {{ SHARD = \"{{{{shard}}}}\" }}\n[report]\noutput = \"out\"\n",
            repo.display(),
            shards.join(", "),
            script.display()
        ),
    )
}

/// Whether a process is gone (a zombie awaiting its reaper counts as gone).
pub(super) fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

pub(super) fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pid_of(dir: &Path, shard: u32) -> Option<i32> {
    std::fs::read_to_string(dir.join(format!("pid.{shard}"))).ok()?.trim().parse().ok()
}

/// Starts `runner exec` on `manifest`, waits until shards 2 and 3 sleep, sends SIGTERM and
/// returns runner's exit code and stderr with the sleepers' pids.
fn exec_then_sigterm(dir: &Path, manifest: &Path, extra: &[&str]) -> (Option<i32>, String, Vec<i32>) {
    let bin = assert_cmd::cargo::cargo_bin("runner");
    let child = std::process::Command::new(bin)
        .current_dir(dir)
        .args(["exec", "--quiet", "--jobs", "3"])
        .args(extra)
        .arg(manifest)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("both sleepers", || pid_of(dir, 2).is_some() && pid_of(dir, 3).is_some());
    let pids = vec![pid_of(dir, 2).expect("pid 2"), pid_of(dir, 3).expect("pid 3")];
    let status = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
    let out = child.wait_with_output().expect("runner exits");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), pids)
}

#[test]
fn sigterm_stops_reviewer_children_keeps_finished_runs_and_the_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = blocking_reviewer_manifest(dir.path(), &repo, &[1, 2, 3]);
    std::fs::write(dir.path().join("block"), "").expect("block");
    let runs_dir = dir.path().join("cache/runs");

    // Shard 1 finishes and is stored; shards 2 and 3 sleep until SIGTERM.
    let bin = assert_cmd::cargo::cargo_bin("runner");
    let child = std::process::Command::new(&bin)
        .current_dir(dir.path())
        .args(["exec", "--quiet", "--jobs", "3"])
        .arg(&manifest)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for("shard 1 cached and both sleepers", || {
        super::exec_corpus::walk(&runs_dir).len() == 1 && pid_of(dir.path(), 2).is_some() && pid_of(dir.path(), 3).is_some()
    });
    let pids = [pid_of(dir.path(), 2).expect("pid"), pid_of(dir.path(), 3).expect("pid")];
    assert!(std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill").success());
    let out = child.wait_with_output().expect("runner exits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the exit code of an interrupted execution: {stderr}");
    assert!(stderr.contains("interrupted: finished runs are cached"), "{stderr}");
    for pid in pids {
        wait_for(&format!("reviewer child {pid} to be gone"), || process_gone(pid));
    }
    assert!(!dir.path().join("out/RESULTS.md").exists(), "an interrupted execution writes no report");

    // The re-run resumes: shard 1 from the cache, 2 and 3 run.
    std::fs::remove_file(dir.path().join("block")).expect("unblock");
    let out = runner(dir.path()).args(["exec", "--json", "--jobs", "3"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let ev = events(&out);
    assert_eq!((count_events(&ev, "run_cached"), count_events(&ev, "run_finished")), (1, 2));
    let complete = std::fs::read(dir.path().join("out/RESULTS.md")).expect("report");

    // An interrupted --refresh leaves the complete report as it was.
    std::fs::write(dir.path().join("block"), "").expect("block");
    for shard in [2, 3] {
        std::fs::remove_file(dir.path().join(format!("pid.{shard}"))).expect("rm pid");
    }
    let (code, stderr, pids) = exec_then_sigterm(dir.path(), &manifest, &["--refresh"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("the reports were left as they were"), "{stderr}");
    for pid in pids {
        wait_for(&format!("reviewer child {pid} to be gone"), || process_gone(pid));
    }
    assert_eq!(std::fs::read(dir.path().join("out/RESULTS.md")).expect("report"), complete, "the complete report was kept");
}

#[test]
fn two_executions_on_one_cache_run_each_run_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let shards: Vec<u32> = (1..=8).collect();
    let manifest = blocking_reviewer_manifest(dir.path(), &repo, &shards);
    let bin = assert_cmd::cargo::cargo_bin("runner");
    let start = || {
        std::process::Command::new(&bin)
            .current_dir(dir.path())
            .args(["exec", "--json", "--jobs", "2"])
            .arg(&manifest)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let (a, b) = (start(), start());
    let (a, b) = (a.wait_with_output().expect("a"), b.wait_with_output().expect("b"));
    assert!(a.status.success(), "{}", stderr_of(&a));
    assert!(b.status.success(), "{}", stderr_of(&b));
    let mut counted: Vec<String> = std::fs::read_to_string(dir.path().join("count")).expect("count").lines().map(str::to_string).collect();
    counted.sort_by_key(|s| s.parse::<u32>().unwrap_or(0));
    let expected: Vec<String> = shards.iter().map(u32::to_string).collect();
    assert_eq!(counted, expected, "every run executed exactly once across both processes");
    let (ea, eb) = (events(&a), events(&b));
    assert_eq!(count_events(&ea, "run_finished") + count_events(&eb, "run_finished"), 8);
    assert_eq!(count_events(&ea, "run_cached") + count_events(&eb, "run_cached"), 8, "what one ran, the other took from the cache");
}

#[test]
fn quickstart_from_another_directory_uses_the_committed_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    let copy = |from: &str| {
        let status = StdCommand::new("cp").arg("-R").arg(project_root().join(from)).arg(project.join(from)).status().expect("cp");
        assert!(status.success(), "copy {from}");
    };
    std::fs::create_dir_all(project.join("experiments")).expect("mkdir");
    std::fs::create_dir_all(project.join("corpus")).expect("mkdir");
    std::fs::create_dir_all(project.join("results")).expect("mkdir");
    std::fs::copy(project_root().join("experiments/quickstart.toml"), project.join("experiments/quickstart.toml")).expect("manifest");
    copy("corpus/quickstart");
    copy("cache");
    git(&project, &["init", "--quiet"]);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let out = runner(&elsewhere).args(["exec", "--frozen", "--quiet"]).arg(project.join("experiments/quickstart.toml")).output().expect("runs");
    assert!(out.status.success(), "served from the project's cache, not one in the current directory: {}", stderr_of(&out));
    assert!(!elsewhere.join("cache").exists() && !elsewhere.join(".runner").exists(), "nothing is written to the current directory");
    let written = std::fs::read_to_string(project.join("results/quickstart/RESULTS.md")).expect("report");
    let committed = std::fs::read_to_string(project_root().join("results/quickstart/RESULTS.md")).expect("committed");
    assert_eq!(written, committed, "the report does not depend on the directory runner ran from");
}
