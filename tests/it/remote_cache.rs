//! The remote cache against a real S3-compatible server (SeaweedFS on 127.0.0.1, started by
//! `.ci/run` through scripts/s3-server/): shards writing concurrently into one bucket, a
//! fresh clone assembling the reports from the remote alone, a shard killed and restarted,
//! the remote cut off halfway, a corrupted remote object, and `cache push` / `pull`.
//!
//! Ignored by default: they need the server. `eval "$(scripts/s3-server/start.sh 18333)"`
//! exports what they read (`AWS_*`, `RUNNER_TEST_S3_BUCKET`).

use super::shards::sleep_manifest;
use super::*;
use runner::cache::remote::{Connection, RemoteStore, RemoteUrl};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A fresh prefix of the test bucket, so tests never see each other's entries.
fn remote_url(test: &str) -> String {
    let bucket = std::env::var("RUNNER_TEST_S3_BUCKET").expect("RUNNER_TEST_S3_BUCKET: start the server with scripts/s3-server/start.sh (see .ci/run)");
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("s3://{bucket}/{test}-{}-{nanos}", std::process::id())
}

fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL: start the server with scripts/s3-server/start.sh (see .ci/run)")
}

/// The remote as the test itself reads it (to count or corrupt entries).
fn open(url: &str) -> RemoteStore {
    let connection = Connection::from_env(&|name| std::env::var(name).ok()).expect("credentials");
    RemoteStore::open_with(RemoteUrl::parse(url).expect("url"), connection).expect("open")
}

fn remote_runs(url: &str) -> usize {
    open(url).list("runs").expect("list").len()
}

/// `runner` in `dir` with the remote cache `url` at `endpoint` and the local cache `dir/cache`.
fn runner_with(dir: &Path, url: &str, endpoint: &str, cache: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("runner"));
    cmd.current_dir(dir)
        .env_remove("RUNNER_WORK_DIR")
        .env("RUNNER_REMOTE_CACHE", url)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("RUNNER_CACHE_DIR", dir.join(cache));
    cmd
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A copy of the experiment in a new directory, as a fresh clone has it: the manifest and the
/// target repository, no cache.
fn fresh_clone(from: &Path, manifest: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["clone", "-q", &from.join("repo").display().to_string(), "repo"]);
    let name = manifest.file_name().expect("name").to_string_lossy().into_owned();
    write_manifest(dir.path(), &name, &std::fs::read_to_string(manifest).expect("manifest"));
    (dir, PathBuf::from(name))
}

/// Copies every object and run pointer of `caches` into `into` (what one machine would hold
/// had it run every shard).
fn union(caches: &[PathBuf], into: &Path) {
    for cache in caches {
        for sub in ["objects", "runs"] {
            let status = std::process::Command::new("cp").arg("-r").arg(cache.join(sub)).arg(into).status().expect("cp");
            assert!(status.success());
        }
    }
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_four_shards_into_one_bucket_then_a_fresh_clone_assembles_identical_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "wide", 100, 20, 0);
    let url = remote_url("four-shards");
    let s3 = endpoint();
    // Four shards at once, each with its own local cache.
    let mut children = Vec::new();
    for (index, cache) in [(0, "c0"), (1, "c1"), (2, "c2"), (3, "c3")] {
        let child = runner_with(dir.path(), &url, &s3, cache)
            .args(["exec", "--quiet", "--jobs", "4", "--shard", &format!("{index}/4")])
            .arg(&manifest)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        children.push(child);
    }
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "{}", stderr_of(&out));
    }
    assert_eq!(remote_runs(&url), 2000, "every run is in the bucket once");

    // A fresh clone with an empty local cache assembles the reports from the remote alone.
    let (clone, clone_manifest) = fresh_clone(dir.path(), &manifest);
    let merged = runner_with(clone.path(), &url, &s3, "cache").args(["merge", "--shards", "4"]).arg(&clone_manifest).output().expect("merge");
    assert!(merged.status.success(), "{}", stderr_of(&merged));

    // The same reports as one machine holding every shard's results.
    let single = dir.path().join("single");
    std::fs::create_dir_all(&single).expect("mkdir");
    union(&(0..4).map(|i| dir.path().join(format!("c{i}"))).collect::<Vec<_>>(), &single);
    let local = runner(dir.path())
        .env("RUNNER_CACHE_DIR", &single)
        .args(["exec", "--frozen", "--quiet"])
        .arg(manifest.file_name().expect("name"))
        .output()
        .expect("exec");
    assert!(local.status.success(), "{}", stderr_of(&local));
    let single_report = String::from_utf8(read(&dir.path().join("out/RESULTS.md"))).expect("utf-8");
    let merged_report = String::from_utf8(read(&clone.path().join("out/RESULTS.md"))).expect("utf-8");
    // Both name the manifest by the same relative path; nothing else may differ.
    assert_same("RESULTS.md", &merged_report, &single_report);
    assert_same(
        "results.json",
        &String::from_utf8_lossy(&read(&clone.path().join("out/results.json"))),
        &String::from_utf8_lossy(&read(&dir.path().join("out/results.json"))),
    );
    assert!(merged_report.contains("| Runs | 2000 of 2000 succeeded"), "{}", &merged_report[..600.min(merged_report.len())]);
}

/// Two texts are equal; otherwise names the first line that differs (reports are long).
fn assert_same(what: &str, got: &str, want: &str) {
    if got != want {
        let line = got.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{what} differs from line {}:\n  got:  {}\n  want: {}",
            line + 1,
            got.lines().nth(line).unwrap_or("<end>"),
            want.lines().nth(line).unwrap_or("<end>")
        );
    }
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_two_machines_racing_on_the_same_runs_are_harmless() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "race", 40, 5, 0);
    let url = remote_url("race");
    let s3 = endpoint();
    // The same shard twice at once, on two local caches: every write races another.
    let children: Vec<std::process::Child> = ["a", "b"]
        .iter()
        .map(|cache| {
            runner_with(dir.path(), &url, &s3, cache)
                .args(["exec", "--quiet", "--jobs", "4", "--shard", "0/1"])
                .arg(&manifest)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert!(!stderr_of(&out).contains("warning"), "a lost race is not a failure: {}", stderr_of(&out));
    }
    assert_eq!(remote_runs(&url), 200, "one pointer per run: the first writer's");
    // Whichever writer won each run, the remote's entries verify and assemble.
    let (clone, clone_manifest) = fresh_clone(dir.path(), &manifest);
    let merged = runner_with(clone.path(), &url, &s3, "cache").args(["merge", "--json"]).arg(&clone_manifest).output().expect("merge");
    assert!(merged.status.success(), "{}", stderr_of(&merged));
    let ev = events(&merged);
    assert_eq!((count_events(&ev, "run_cached"), count_events(&ev, "cache_corrupt")), (200, 0));
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_a_killed_shard_restarted_on_an_empty_machine_repeats_nothing_the_remote_has() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "killed", 24, 1, 250);
    let url = remote_url("killed");
    let s3 = endpoint();
    let mut child =
        runner_with(dir.path(), &url, &s3, "first").args(["exec", "--quiet", "--jobs", "2", "--shard", "0/1"]).arg(&manifest).spawn().expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while remote_runs(&url) < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("kill -9");
    let _ = child.wait();
    let stored = remote_runs(&url);
    assert!((4..24).contains(&stored), "killed part-way: {stored} runs in the bucket");

    // The restarted shard has an empty local cache (a new pod): the remote says what is done.
    let out = runner_with(dir.path(), &url, &s3, "second").args(["exec", "--json", "--shard", "0/1"]).arg(&manifest).output().expect("exec");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let ev = events(&out);
    assert_eq!(count_events(&ev, "run_cached"), stored, "every run the remote holds is taken from it");
    assert_eq!(count_events(&ev, "run_finished"), 24 - stored, "only the rest ran");
    assert_eq!(remote_runs(&url), 24);
}

/// A TCP proxy in front of the S3 server that can be cut: every connection is closed and new
/// ones are refused, as when the network or the store goes away.
struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(target: &str) -> Self {
        let target = target.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let cut = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (cut_flag, open) = (cut.clone(), streams.clone());
        std::thread::spawn(move || {
            while !cut_flag.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        let Ok(server) = TcpStream::connect(&target) else { continue };
                        for stream in [&client, &server] {
                            if let Ok(clone) = stream.try_clone() {
                                open.lock().expect("lock").push(clone);
                            }
                        }
                        let (mut c_read, mut s_write) = (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
                        let (mut s_read, mut c_write) = (server, client);
                        std::thread::spawn(move || pump(&mut c_read, &mut s_write));
                        std::thread::spawn(move || pump(&mut s_read, &mut c_write));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            // The listener is dropped here: new connections are refused.
        });
        Self { port, cut, streams }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.streams.lock().expect("lock").iter() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn pump(from: &mut TcpStream, to: &mut TcpStream) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_a_remote_cut_off_halfway_degrades_to_the_local_cache_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "outage", 30, 1, 150);
    let url = remote_url("outage");
    let proxy = Proxy::start(&endpoint());
    let child = runner_with(dir.path(), &url, &proxy.endpoint(), "cache")
        .args(["exec", "--jobs", "2"])
        .arg(&manifest)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while remote_runs(&url) < 6 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    proxy.cut();
    let out = child.wait_with_output().expect("wait");
    let err = stderr_of(&out);
    assert!(out.status.success(), "the execution completes on the local cache: {err}");
    assert!(err.contains("remote cache unavailable") && err.contains("continuing with the local cache only"), "{err}");
    assert_eq!(err.matches("remote cache unavailable").count(), 2, "one warning as it happens, one in the summary: {err}");
    let pushed = remote_runs(&url);
    assert!((6..30).contains(&pushed), "the remote has what was written before the cut: {pushed}");
    // Every run is in the local cache and in the report: nothing was lost or wrong.
    let frozen =
        runner(dir.path()).env("RUNNER_CACHE_DIR", dir.path().join("cache")).args(["exec", "--frozen", "--json"]).arg(&manifest).output().expect("exec");
    assert!(frozen.status.success(), "{}", stderr_of(&frozen));
    assert_eq!(count_events(&events(&frozen), "run_cached"), 30);
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_a_corrupted_remote_object_is_detected_never_served_and_repaired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "corrupt", 6, 1, 0);
    let url = remote_url("corrupt");
    let s3 = endpoint();
    let first = runner_with(dir.path(), &url, &s3, "first").args(["exec", "--quiet"]).arg(&manifest).output().expect("exec");
    assert!(first.status.success(), "{}", stderr_of(&first));
    // Damage one run's record in the bucket (the object its pointer names).
    let remote = open(&url);
    let pointer_name = remote.list("runs").expect("list").into_iter().next().expect("a run");
    let record = String::from_utf8(remote.get(&pointer_name).expect("get").expect("pointer")).expect("utf-8").trim().to_string();
    let object = format!("objects/{}/{record}", &record[..2]);
    remote.put(&object, b"{\"not\": \"the record\"}".to_vec(), true).expect("overwrite");

    let second = runner_with(dir.path(), &url, &s3, "second").args(["exec", "--json"]).arg(&manifest).output().expect("exec");
    assert!(second.status.success(), "{}", stderr_of(&second));
    let ev = events(&second);
    let corrupt: Vec<&serde_json::Value> = ev.iter().filter(|e| e["event"] == "cache_corrupt").collect();
    assert_eq!(corrupt.len(), 1, "{ev:?}");
    assert!(corrupt[0]["detail"].as_str().unwrap_or_default().contains("is corrupt"), "{:?}", corrupt[0]);
    assert_eq!((count_events(&ev, "run_cached"), count_events(&ev, "run_finished")), (5, 1), "the damaged run is re-run, never served");

    // The re-run repaired the remote entry: a third machine takes all six from it.
    let repaired = String::from_utf8(remote.get(&pointer_name).expect("get").expect("pointer")).expect("utf-8").trim().to_string();
    let bytes = remote.get(&format!("objects/{}/{repaired}", &repaired[..2])).expect("get").expect("record");
    assert_eq!(blake3::hash(&bytes).to_hex().to_string(), repaired, "the pointer names a record that verifies");
    let third = runner_with(dir.path(), &url, &s3, "third").args(["exec", "--frozen", "--json"]).arg(&manifest).output().expect("exec");
    assert!(third.status.success(), "{}", stderr_of(&third));
    assert_eq!(count_events(&events(&third), "run_cached"), 6);
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_cache_push_and_pull_move_an_experiment_explicitly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "moved", 8, 1, 0);
    let url = remote_url("push-pull");
    let s3 = endpoint();
    // Executed with no remote at all, then pushed.
    let local = runner(dir.path()).env("RUNNER_CACHE_DIR", dir.path().join("mine")).args(["exec", "--quiet"]).arg(&manifest).output().expect("exec");
    assert!(local.status.success(), "{}", stderr_of(&local));
    assert_eq!(remote_runs(&url), 0);
    let push = runner_with(dir.path(), &url, &s3, "mine").args(["cache", "push"]).arg(&manifest).output().expect("push");
    assert!(push.status.success(), "{}", stderr_of(&push));
    assert!(stdout_of(&push).contains("8 of 8 runs") && stdout_of(&push).contains("8 new there, 0 already there"), "{}", stdout_of(&push));
    let again = runner_with(dir.path(), &url, &s3, "mine").args(["cache", "push"]).arg(&manifest).output().expect("push");
    assert!(stdout_of(&again).contains("0 new there, 8 already there"), "{}", stdout_of(&again));
    assert_eq!(remote_runs(&url), 8);

    // A teammate pulls, then executes frozen with no remote configured.
    let pull = runner_with(dir.path(), &url, &s3, "theirs").args(["cache", "pull"]).arg(&manifest).output().expect("pull");
    assert!(pull.status.success(), "{}", stderr_of(&pull));
    assert!(stdout_of(&pull).contains("8 of 8 runs now in the local cache"), "{}", stdout_of(&pull));
    let frozen =
        runner(dir.path()).env("RUNNER_CACHE_DIR", dir.path().join("theirs")).args(["exec", "--frozen", "--quiet"]).arg(&manifest).output().expect("exec");
    assert!(frozen.status.success(), "{}", stderr_of(&frozen));

    // Without a remote, push and pull say what they need.
    let none = runner(dir.path()).env_remove("RUNNER_REMOTE_CACHE").args(["cache", "push"]).arg(&manifest).output().expect("push");
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr_of(&none).contains("need a remote cache"), "{}", stderr_of(&none));
}

/// The runs an execution's NDJSON events say it ran.
fn ran(out: &std::process::Output) -> std::collections::BTreeSet<String> {
    events(out).iter().filter(|e| e["event"] == "run_finished").map(|e| e["run"].as_str().unwrap_or_default().to_string()).collect()
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_an_idle_worker_steals_runs_no_one_has_started_and_none_runs_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "uneven", 60, 1, 100);
    let url = remote_url("steal");
    let s3 = endpoint();
    let own = |shard: &str| {
        let out = runner(dir.path()).args(["plan", "--json", "--shard", shard]).arg(&manifest).output().expect("plan");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("plan json")["runs"].as_array().map_or(0, Vec::len)
    };
    // Shard 0 starts alone; shard 1's worker arrives late, once shard 0 has moved on to its runs.
    let first = runner_with(dir.path(), &url, &s3, "a")
        .args(["exec", "--json", "--jobs", "2", "--shard", "0/2", "--steal"])
        .arg(&manifest)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while remote_runs(&url) < own("0/2") + 6 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let second =
        runner_with(dir.path(), &url, &s3, "b").args(["exec", "--json", "--jobs", "2", "--shard", "1/2", "--steal"]).arg(&manifest).output().expect("exec");
    let first = first.wait_with_output().expect("wait");
    assert!(first.status.success() && second.status.success(), "{}\n{}", stderr_of(&first), stderr_of(&second));
    let (a, b) = (ran(&first), ran(&second));
    assert!(a.is_disjoint(&b), "a run ran on both workers: {:?}", a.intersection(&b).collect::<Vec<_>>());
    assert_eq!(a.len() + b.len(), 60, "every run ran once");
    assert!(a.len() > own("0/2"), "the idle worker took runs of shard 1: {} > {}", a.len(), own("0/2"));
    assert!(count_events(&events(&second), "run_skipped") + count_events(&events(&second), "run_cached") > 0);
    assert_eq!(remote_runs(&url), 60);
    let merged = runner_with(dir.path(), &url, &s3, "c").args(["merge", "--quiet", "--shards", "2"]).arg(&manifest).output().expect("merge");
    assert!(merged.status.success(), "{}", stderr_of(&merged));
}

#[test]
#[ignore = "needs the S3 server .ci/run starts"]
fn s3_a_dead_workers_leases_expire_and_another_takes_its_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sleep_manifest(dir.path(), "orphaned", 20, 1, 400);
    let url = remote_url("expire");
    let s3 = endpoint();
    let mut doomed = runner_with(dir.path(), &url, &s3, "a")
        .args(["exec", "--quiet", "--jobs", "4", "--shard", "0/1", "--steal", "--lease-ttl", "2"])
        .arg(&manifest)
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while remote_runs(&url) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    doomed.kill().expect("kill -9");
    let _ = doomed.wait();
    let stored = remote_runs(&url);
    let leases = open(&url).list("leases").expect("list").len();
    assert!(leases > stored, "the dead worker left leases on runs it never stored: {leases} leases, {stored} runs");
    std::thread::sleep(Duration::from_secs(3));
    let out = runner_with(dir.path(), &url, &s3, "b").args(["exec", "--json", "--shard", "0/1", "--steal"]).arg(&manifest).output().expect("exec");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(ran(&out).len(), 20 - stored, "the expired leases were taken over; nothing stored ran again");
    assert_eq!(remote_runs(&url), 20);
}
