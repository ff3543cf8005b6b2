//! Nothing lost, nothing hung: a FIFO, a device or a directory where the cache has a file, a
//! damaged raw output, a report directory holding other files, SIGHUP, a closed or full
//! stdout, and manifests that `exec` could not run. Every command runs under a generous
//! bound and is killed past it, so a hang fails the test instead of stalling it.

use super::*;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

/// Far beyond what any of these commands takes (they finish in well under a second): only a
/// hang reaches it.
const BOUND: Duration = Duration::from_secs(60);

/// The runner binary, run from `dir`, as a plain child process.
fn cli(dir: &Path) -> StdCommand {
    let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin("runner"));
    cmd.current_dir(dir).env_remove("RUNNER_CACHE_DIR").env_remove("RUNNER_WORK_DIR");
    cmd
}

/// Runs `cmd` to completion, killing it (and failing) past [`BOUND`].
fn bounded(cmd: &mut StdCommand) -> Output {
    bounded_to(cmd, Stdio::piped())
}

/// [`bounded`] with stdout going to `stdout` (what it captured is empty unless piped).
fn bounded_to(cmd: &mut StdCommand, stdout: Stdio) -> Output {
    let child = cmd.stdin(Stdio::null()).stdout(stdout).stderr(Stdio::piped()).spawn().expect("spawn runner");
    finish(child, &format!("{:?}", cmd.get_args().collect::<Vec<_>>()))
}

/// Waits for a started runner (reading what it writes), killing it (and failing) past [`BOUND`].
fn finish(mut child: std::process::Child, what: &str) -> Output {
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let err = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let deadline = Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("runner {what} hung: killed after {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output { status, stdout: out.join().expect("stdout"), stderr: err.join().expect("stderr") }
}

fn mkfifo(path: &Path) {
    let status = StdCommand::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A git target reviewed by the builtin `dry-run` reviewer, three runs that share their
/// findings and raw output (one object each).
fn dry_run_project(dir: &Path) -> PathBuf {
    let repo = calc_repo(dir);
    write_manifest(
        dir,
        "dry.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"dry\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nshard = [1, 2, 3]\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    )
}

/// The cache path of an object.
fn object(dir: &Path, hash: &str) -> PathBuf {
    dir.join("cache/objects").join(&hash[..2]).join(hash)
}

/// The first planned run's pointer file and its record (as JSON).
fn first_run(dir: &Path, manifest: &Path) -> (PathBuf, String, serde_json::Value) {
    let plan = bounded(cli(dir).args(["plan", "--json"]).arg(manifest));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan JSON");
    let key = plan["runs"][0]["key"].as_str().expect("key").to_string();
    let pointer = dir.join("cache/runs").join(&key[..2]).join(&key);
    let record = std::fs::read_to_string(&pointer).expect("pointer").trim().to_string();
    let json = serde_json::from_slice(&std::fs::read(object(dir, &record)).expect("record")).expect("record JSON");
    (pointer, record, json)
}

/// Every command that reads the cache finishes; `--frozen` refuses the damaged run (exit 4);
/// `exec` reports it once and runs it again; then `--frozen` is served in full.
fn reads_finish_and_exec_repairs(dir: &Path, manifest: &Path, what: &str) {
    let out = bounded(cli(dir).args(["plan"]).arg(manifest));
    assert!(out.status.success(), "{what}: plan: {}", stderr_of(&out));
    assert!(stdout_of(&out).contains("(2 cached, 1 to run)"), "{what}: plan: {}", stdout_of(&out));
    let out = bounded(cli(dir).args(["show"]).arg(manifest));
    assert!(stdout_of(&out).contains("corrupt in the cache"), "{what}: show: {}", stdout_of(&out));
    for command in ["ls", "verify"] {
        let out = bounded(cli(dir).args(["cache", command]));
        assert_eq!(out.status.code(), Some(1), "{what}: cache {command} finds the damage: {}{}", stdout_of(&out), stderr_of(&out));
    }
    let frozen = bounded(cli(dir).args(["exec", "--frozen", "--quiet"]).arg(manifest));
    assert_eq!(frozen.status.code(), Some(4), "{what}: --frozen serves no damaged entry: {}", stderr_of(&frozen));
    assert!(stderr_of(&frozen).contains("1 run is not in the cache"), "{what}: {}", stderr_of(&frozen));
    let exec = bounded(cli(dir).args(["exec", "--json"]).arg(manifest));
    assert!(exec.status.success(), "{what}: exec: {}", stderr_of(&exec));
    let ev = events(&exec);
    assert_eq!(
        (count_events(&ev, "cache_corrupt"), count_events(&ev, "run_finished"), count_events(&ev, "run_cached")),
        (1, 1, 2),
        "{what}: reported once, run again"
    );
    let frozen = bounded(cli(dir).args(["exec", "--frozen", "--quiet"]).arg(manifest));
    assert!(frozen.status.success(), "{what}: repaired, --frozen is served: {}", stderr_of(&frozen));
    // What the damage left unreferenced goes with gc; then the cache verifies clean.
    assert!(bounded(cli(dir).args(["cache", "gc"])).status.success());
    let verify = bounded(cli(dir).args(["cache", "verify"]));
    assert!(verify.status.success() && stdout_of(&verify).contains(" 0 problems"), "{what}: {}", stdout_of(&verify));
}

#[test]
fn fifos_devices_and_directories_in_the_cache_hang_nothing_and_are_repaired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let manifest = dry_run_project(d);
    let first = bounded(cli(d).args(["exec", "--quiet"]).arg(&manifest));
    assert!(first.status.success(), "{}", stderr_of(&first));

    // A run pointer that is a link to /dev/zero: a plain read never ends.
    let (pointer, _, _) = first_run(d, &manifest);
    std::fs::remove_file(&pointer).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &pointer).expect("symlink");
    reads_finish_and_exec_repairs(d, &manifest, "a pointer linked to /dev/zero");
    assert!(std::fs::symlink_metadata(&pointer).expect("pointer").is_file(), "a regular pointer again");

    // The run's record object is a FIFO: a plain open waits for a writer forever.
    let (_, record, _) = first_run(d, &manifest);
    std::fs::remove_file(object(d, &record)).expect("rm");
    mkfifo(&object(d, &record));
    reads_finish_and_exec_repairs(d, &manifest, "a FIFO record");
}

#[test]
fn a_damaged_raw_output_is_refused_by_frozen_and_repaired_and_a_directory_object_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let manifest = dry_run_project(d);
    assert!(bounded(cli(d).args(["exec", "--quiet"]).arg(&manifest)).status.success());
    let (_, _, record) = first_run(d, &manifest);
    let raw = record["raw"].as_str().expect("raw").to_string();
    // The three runs share the raw output: all three are damaged.
    std::fs::write(object(d, &raw), "tampered").expect("tamper");
    let frozen = bounded(cli(d).args(["exec", "--frozen", "--quiet"]).arg(&manifest));
    assert_eq!(frozen.status.code(), Some(4), "a corrupt raw output is not served: {}", stderr_of(&frozen));
    let exec = bounded(cli(d).args(["exec", "--json"]).arg(&manifest));
    assert!(exec.status.success(), "{}", stderr_of(&exec));
    let corrupt: Vec<String> =
        events(&exec).iter().filter(|e| e["event"] == "cache_corrupt").map(|e| e["detail"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(corrupt.len(), 3, "{corrupt:?}");
    assert!(corrupt.iter().all(|c| c.contains("raw output: object") && c.contains("is corrupt")), "{corrupt:?}");
    assert_eq!(std::fs::read(object(d, &raw)).map(|b| blake3::hash(&b).to_hex().to_string()).expect("raw"), raw, "the object is whole again");
    assert!(bounded(cli(d).args(["exec", "--frozen", "--quiet"]).arg(&manifest)).status.success());

    // The findings object's path is a directory: it is replaced, the run is not failed.
    let findings = record["findings"].as_str().expect("findings").to_string();
    let path = object(d, &findings);
    std::fs::remove_file(&path).expect("rm");
    std::fs::create_dir_all(path.join("inside")).expect("mkdir");
    let exec = bounded(cli(d).args(["exec", "--json"]).arg(&manifest));
    assert!(exec.status.success(), "a directory in an object's place is repaired: {}{}", stderr_of(&exec), stdout_of(&exec));
    assert_eq!(count_events(&events(&exec), "run_failed"), 0);
    assert!(std::fs::symlink_metadata(&path).expect("object").is_file());
    let verify = bounded(cli(d).args(["cache", "verify"]));
    assert!(verify.status.success(), "{}", stdout_of(&verify));
}

#[test]
fn unreadable_entries_are_named_as_such_not_as_corrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let manifest = dry_run_project(d);
    assert!(bounded(cli(d).args(["exec", "--quiet"]).arg(&manifest)).status.success());
    // The system refuses the read (permissions would not bind root, whom CI may run as): the
    // shard directory of the first run's pointer is a file.
    let (pointer, _, _) = first_run(d, &manifest);
    let shard = pointer.parent().expect("shard").to_path_buf();
    std::fs::rename(&shard, d.join("moved")).expect("move the shard away");
    std::fs::write(&shard, "not a directory").expect("a file in its place");
    let exec = bounded(cli(d).args(["exec", "--json"]).arg(&manifest));
    let ev = events(&exec);
    let unreadable: Vec<&serde_json::Value> = ev.iter().filter(|e| e["event"] == "cache_unreadable").collect();
    assert_eq!(unreadable.len(), 1, "{}", stdout_of(&exec));
    assert!(unreadable[0]["detail"].as_str().unwrap_or_default().contains("could not be read: Not a directory"), "{unreadable:?}");
    assert_eq!(count_events(&ev, "cache_corrupt"), 0, "an I/O error is not called corruption");
    let human = bounded(cli(d).args(["exec"]).arg(&manifest));
    assert!(stderr_of(&human).contains("warning: cannot read the cache entry for "), "{}", stderr_of(&human));
    assert!(!stderr_of(&human).contains("corrupt"), "{}", stderr_of(&human));
}

#[test]
fn a_report_directory_keeps_files_runner_did_not_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = project_root();
    // An existing results directory an earlier runner wrote (no list), with someone's diagram.
    let out = dir.path().join("quickstart");
    std::fs::create_dir_all(out.join("plots")).expect("mkdir");
    for f in ["RESULTS.md", "results.json", "plots/latency-seconds.svg"] {
        std::fs::copy(root.join("results/quickstart").join(f), out.join(f)).expect("copy");
    }
    std::fs::write(out.join("plots/arch.svg"), "<svg>mine</svg>").expect("mine");
    std::fs::write(out.join("notes.md"), "mine").expect("mine");
    let exec = |out: &Path, extra: &[&str]| {
        bounded(
            cli(&root)
                .args(["exec", "--frozen", "--quiet", "--cache-dir", "cache", "--work-dir"])
                .arg(dir.path().join("work"))
                .args(extra)
                .arg("--output")
                .arg(out)
                .arg("experiments/quickstart.toml"),
        )
    };
    let run = exec(&out, &[]);
    assert!(run.status.success(), "{}", stderr_of(&run));
    assert_eq!(std::fs::read_to_string(out.join("plots/arch.svg")).expect("kept"), "<svg>mine</svg>");
    assert_eq!(std::fs::read_to_string(out.join("notes.md")).expect("kept"), "mine");
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(".runner-outputs.json")).expect("list")).expect("JSON");
    let files: Vec<&str> = record["files"].as_array().expect("files").iter().filter_map(|f| f.as_str()).collect();
    assert_eq!(
        files,
        [
            "RESULTS.md",
            "plots/compare-calibration.svg",
            "plots/compare-differences.svg",
            "plots/distribution-category.svg",
            "plots/distribution-severity.svg",
            "plots/latency-seconds.svg",
            "results.json"
        ]
    );
    // Again: the same files, nothing else touched.
    assert!(exec(&out, &[]).status.success());
    assert!(out.join("plots/arch.svg").exists() && out.join("notes.md").exists());

    // A directory holding someone's results.json: refused, named, left as it was.
    let theirs = dir.path().join("theirs");
    std::fs::create_dir_all(&theirs).expect("mkdir");
    std::fs::write(theirs.join("results.json"), "{\"mine\": true}").expect("theirs");
    let refused = exec(&theirs, &[]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = stderr_of(&refused);
    assert!(stderr.contains("theirs/results.json` is in the way: runner did not write it") && stderr.contains("--force"), "{stderr}");
    assert_eq!(std::fs::read_to_string(theirs.join("results.json")).expect("untouched"), "{\"mine\": true}");
    assert!(!theirs.join("RESULTS.md").exists(), "nothing written beside it");
    let forced = exec(&theirs, &["--force"]);
    assert!(forced.status.success(), "{}", stderr_of(&forced));
    assert_eq!(std::fs::read(theirs.join("results.json")).expect("written"), std::fs::read(root.join("results/quickstart/results.json")).expect("committed"));
}

#[test]
fn output_that_cannot_be_written_ends_the_command_with_an_error_not_a_panic() {
    let root = project_root();
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = bounded_to(cli(&root).args(["plan", "--cache-dir", "cache", "experiments/quickstart.toml"]), full().into());
    assert_eq!(out.status.code(), Some(1), "not a panic (101): {}", stderr_of(&out));
    assert!(stderr_of(&out).contains("error: cannot write to stdout: No space left on device"), "{}", stderr_of(&out));

    let dir = tempfile::tempdir().expect("tempdir");
    let out = bounded_to(
        cli(&root)
            .args(["exec", "--json", "--frozen", "--cache-dir", "cache", "--work-dir"])
            .arg(dir.path().join("work"))
            .arg("--output")
            .arg(dir.path().join("out"))
            .arg("experiments/quickstart.toml"),
        full().into(),
    );
    assert_eq!(out.status.code(), Some(1), "every event lost is an error: {}", stderr_of(&out));
    assert!(stderr_of(&out).contains("error: cannot write events to stdout: No space left on device"), "{}", stderr_of(&out));
}

#[test]
fn validate_reports_what_exec_could_not_run_each_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "--quiet"]);
    let name = "a".repeat(100_000);
    let manifest = write_manifest(
        dir.path(),
        "bad.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"{name}\"\n[target]\nrepo = \".\"\n[matrix]\nref = [\"HEAD\"]\nbaseline = [\"dry-run\"]\nreviewer = [\"one\", \"two\"]\n[reviewers.one]\nkind = \"builtin\"\nname = \"{{{{#if baseline}}}}x\"\n[reviewers.two]\nkind = \"command\"\nprogram = \"\"\n[report]\noutput = \"/proc/self\"\n"
        ),
    );
    let out = bounded(cli(dir.path()).arg("validate").arg(manifest.file_name().expect("name")));
    assert_eq!(out.status.code(), Some(1));
    let stderr = stderr_of(&out);
    for expected in [
        "error: experiment `name` is 100000 characters long; at most 128 (bad.toml:3:8)",
        "error: template `{{#if baseline}}x` does not parse at column 18: invalid handlebars syntax (bad.toml:12:8)",
        "error: `program` is empty (bad.toml:15:11)",
        "error: the report directory cannot be written: no file can be made in `/proc/self`",
    ] {
        assert!(stderr.contains(expected), "missing `{expected}` in:\n{}", stderr.chars().take(4000).collect::<String>());
    }
    assert!(stderr.contains("(bad.toml:17:10)"), "the output directory is located");
}

/// A `command` reviewer that records its `HOME`; shard 1 waits for `dir/go` (when `dir/hold`
/// exists) and then finishes, every other shard writes its pid to `dir/pid.SHARD` and sleeps
/// two minutes. Runs side by side (`isolation = "none"`).
fn sleeping_reviewer(dir: &Path) -> PathBuf {
    let repo = calc_repo(dir);
    let script = dir.join("reviewer.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$HOME\" > '{d}/home.'\"$SHARD\"\nif [ \"$SHARD\" = 1 ]; then\n  while [ -e '{d}/hold' ] && [ ! -e '{d}/go' ]; do sleep 0.05; done\n  exit 0\nfi\necho $$ > '{d}/pid.'\"$SHARD\"\nexec sleep 120\n",
            d = dir.display()
        ),
    )
    .expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    write_manifest(
        dir,
        "sleeping.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"sleeping\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nshard = [1, 2, 3]\n[reviewer]\nkind = \"command\"\nprogram = \"{}\"\nisolation = \"none\"\nenv = {{ SHARD = \"{{{{shard}}}}\" }}\n[report]\noutput = \"out\"\n",
            repo.display(),
            script.display()
        ),
    )
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// The sleepers' pids, once both sleep.
fn sleepers(dir: &Path) -> Vec<i32> {
    super::resume::wait_for("both sleepers", || (2..=3).all(|s| read_trimmed(&dir.join(format!("pid.{s}"))).is_some()));
    (2..=3).map(|s| read_trimmed(&dir.join(format!("pid.{s}"))).and_then(|p| p.parse().ok()).expect("pid")).collect()
}

/// The scratch directories (`runner-<pid>-…`) in `tmp`.
fn scratch_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp).expect("tmp").flatten().filter_map(|e| e.file_name().to_str().map(str::to_string)).filter(|n| n.starts_with("runner-")).collect()
}

/// Starts `runner exec` on the sleeping reviewer with its own temporary directory, holding a
/// stale scratch directory of a runner that was killed.
fn start_sleeping(dir: &Path, manifest: &Path, json: bool) -> (std::process::Child, PathBuf) {
    let tmp = dir.join("tmp");
    let stale = tmp.join("runner-1-stale");
    std::fs::create_dir_all(stale.join("runner-home-old")).expect("mkdir");
    std::fs::write(stale.join("owner.lock"), runner::scratch::SIGNATURE).expect("lock file");
    let child = cli(dir)
        .args(["exec", "--jobs", "3", if json { "--json" } else { "--quiet" }])
        .arg(manifest)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(if json { Stdio::piped() } else { Stdio::null() })
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    (child, tmp)
}

/// The reviewers ran with a `HOME` in this runner's scratch directory, and the stale one is gone.
fn homes_in_scratch(dir: &Path, tmp: &Path, runner_pid: u32) {
    let home = read_trimmed(&dir.join("home.2")).expect("home of shard 2");
    let prefix = tmp.join(format!("runner-{runner_pid}-"));
    assert!(home.starts_with(&prefix.display().to_string()), "{home} lies in {}*", prefix.display());
    assert_eq!(scratch_dirs(tmp).len(), 1, "the killed runner's directory was swept: {:?}", scratch_dirs(tmp));
}

#[test]
fn sighup_stops_reviewers_keeps_finished_runs_and_leaves_no_temporary_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let manifest = sleeping_reviewer(d);
    let (child, tmp) = start_sleeping(d, &manifest, false);
    let pids = sleepers(d);
    super::resume::wait_for("shard 1 cached", || super::exec_corpus::walk(&d.join("cache/runs")).len() == 1);
    homes_in_scratch(d, &tmp, child.id());
    assert!(StdCommand::new("kill").args(["-HUP", &child.id().to_string()]).status().expect("kill").success());
    let out = finish(child, "exec under SIGHUP");
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("interrupted: finished runs are cached"), "{}", stderr_of(&out));
    for pid in pids {
        super::resume::wait_for(&format!("reviewer {pid} to be gone"), || super::resume::process_gone(pid));
    }
    assert_eq!(scratch_dirs(&tmp), Vec::<String>::new(), "the scratch directory went with runner");
    assert_eq!(super::exec_corpus::walk(&d.join("cache/runs")).len(), 1, "the finished run stays cached");
}

#[test]
fn a_closed_stdout_under_json_stops_reviewers_like_an_interrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let manifest = sleeping_reviewer(d);
    std::fs::write(d.join("hold"), "").expect("hold shard 1");
    let (mut child, tmp) = start_sleeping(d, &manifest, true);
    let pids = sleepers(d);
    super::resume::wait_for("shard 1 started", || read_trimmed(&d.join("home.1")).is_some());
    homes_in_scratch(d, &tmp, child.id());
    // Every event so far read: runner writes them from a queue, and one still queued (a run
    // started) would otherwise meet the closed pipe before shard 1 finishes.
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut started = 0;
    while started < 3 {
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut stdout, &mut line).expect("read an event");
        assert!(read > 0, "stdout ended before the three runs started");
        started += usize::from(line.contains(r#""event":"run_started""#));
    }
    // The reader goes away; the next event runner writes (shard 1 finishing) fails.
    drop(stdout);
    std::fs::write(d.join("go"), "").expect("let shard 1 finish");
    let out = finish(child, "exec with a closed stdout");
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: cannot write events to stdout: Broken pipe"), "{stderr}");
    for pid in pids {
        super::resume::wait_for(&format!("reviewer {pid} to be gone"), || super::resume::process_gone(pid));
    }
    assert_eq!(scratch_dirs(&tmp), Vec::<String>::new(), "the scratch directory went with runner");
    assert_eq!(super::exec_corpus::walk(&d.join("cache/runs")).len(), 1, "the finished run stays cached");
}
