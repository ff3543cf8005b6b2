//! The `command` reviewer against a fake `stet` (a real child process faithful to stet's
//! contract: JSON and NDJSON output, exit codes 1 and 2, one session per repository).

use super::*;

/// The fake's test hooks reach it only through `pass-env`: children get a cleared environment.
const PASS_ENV: &str = r#"pass-env = ["FAKE_STET_SKIP_SERVER_CHECK", "FAKE_STET_LOG", "FAKE_STET_SLEEP"]"#;

fn stet_manifest(dir: &Path, repo: &Path, models: &[&str], extra_reviewer: &str, matrix_extra: &str) -> PathBuf {
    let models: Vec<String> = models.iter().map(|m| format!("\"{m}\"")).collect();
    write_manifest(
        dir,
        "stet.toml",
        &format!(
            r#"version = 1
[experiment]
name = "stet-swap"
[target]
repo = "{repo}"
[matrix]
model = [{models}]
ref = ["HEAD~2"]
{matrix_extra}
[reviewer]
kind = "command"
program = "{stet}"
args = ["start", "{{{{base}}}}", "--json", "--stream"]
env = {{ STET_MODEL = "{{{{model}}}}", STET_OLLAMA_BASE_URL = "http://127.0.0.1:1", STET_SUPPRESSION_ENABLED = "0" }}
cleanup = [["-{stet}", "finish"]]
ignore = [".review/"]
{PASS_ENV}
{extra_reviewer}
[[analysis]]
kind = "overlap"
axis = "model"
[report]
output = "out"
"#,
            repo = repo.display(),
            models = models.join(", "),
            stet = fake_stet().display(),
        ),
    )
}

fn log_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[test]
fn stet_streams_are_parsed_per_model_and_sessions_never_overlap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = stet_manifest(dir.path(), &repo, &["qwen3-coder:30b", "llama3:8b", "gemma:2b"], "", "repeat = 2");
    let log = dir.path().join("stet.log");
    let out = runner(dir.path())
        .args(["exec", "--json", "--jobs", "8"])
        .arg(&manifest)
        .env("FAKE_STET_SKIP_SERVER_CHECK", "1")
        .env("FAKE_STET_LOG", &log)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(count_events(&events(&out), "run_finished"), 6);

    // One stet session per repository at a time: start … finish never interleave.
    let mut active = false;
    let mut lines = log_lines(&log);
    lines.sort_by(|a, b| a["ts"].as_f64().unwrap_or(0.0).total_cmp(&b["ts"].as_f64().unwrap_or(0.0)));
    let mut sessions = 0;
    for line in &lines {
        match (line["command"].as_str(), line["phase"].as_str()) {
            (Some("start"), Some("begin")) => {
                assert!(!active, "a second session started while one was active");
                active = true;
                sessions += 1;
            }
            (Some("finish"), Some("end")) => active = false,
            _ => {}
        }
    }
    assert_eq!(sessions, 6);
    // The model reached stet through STET_MODEL.
    let models: std::collections::BTreeSet<&str> = lines.iter().filter_map(|l| l["env"]["STET_MODEL"].as_str()).collect();
    assert_eq!(models.len(), 3);

    let results: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("out/results.json")).expect("json")).expect("parse");
    let findings: Vec<u64> = results["cells"].as_array().expect("cells").iter().map(|c| c["findings"].as_u64().expect("n")).collect();
    assert!(findings.iter().all(|&n| n >= 2 * 2), "division and eval found in both repeats: {findings:?}");
}

#[test]
fn an_unreachable_model_server_exits_2_and_names_the_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = stet_manifest(dir.path(), &repo, &["m1", "m2"], "", "repeat = 3");
    let started = std::time::Instant::now();
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("unreachable"), "{err}");
    assert!(err.contains("http://127.0.0.1:1"), "the URL from stet's stderr is shown: {err}");
    assert!(err.contains("not started"), "later runs are not attempted: {err}");
    assert!(started.elapsed().as_secs() < 60);
}

#[test]
fn a_failing_run_fails_only_itself_with_its_stderr_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = stet_manifest(dir.path(), &repo, &["good", "broken"], "", "");
    // The fake exits with FAKE_STET_EXIT; make it depend on the model through a wrapper env.
    let text = std::fs::read_to_string(&manifest).expect("read").replace(
        "STET_SUPPRESSION_ENABLED = \"0\"",
        "STET_SUPPRESSION_ENABLED = \"0\", FAKE_STET_EXIT = \"{{#if (eq model \\\"broken\\\")}}1{{/if}}\"",
    );
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).env("FAKE_STET_SKIP_SERVER_CHECK", "1").output().expect("runs");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("model=broken") && err.contains("exit code 1"), "{err}");
    assert!(err.contains("      | "), "stderr tail shown: {err}");
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md still written");
    assert!(md.contains("Runs without a result"), "{md}");
    assert!(md.contains("| `model=good,ref=HEAD~2` | 1/1 |"), "{md}");
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    // The fake must reach its sleep before the timeout: a generous bound for a busy machine.
    let manifest = stet_manifest(dir.path(), &repo, &["m"], "timeout = \"8s\"", "");
    let log = dir.path().join("stet.log");
    let out = runner(dir.path())
        .args(["exec"])
        .arg(&manifest)
        .env("FAKE_STET_SKIP_SERVER_CHECK", "1")
        .env("FAKE_STET_SLEEP", "600")
        .env("FAKE_STET_LOG", &log)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("timed out after 8.0s"), "{}", stderr_of(&out));
    let child = log_lines(&log).into_iter().find(|l| l["phase"] == "sleep").and_then(|l| l["child_pid"].as_i64()).expect("sleep child logged");
    // The grandchild `sleep` was killed with its group (it may linger briefly as a zombie).
    let alive = std::fs::read_to_string(format!("/proc/{child}/stat")).map(|s| !s.contains(") Z")).unwrap_or(false);
    assert!(!alive, "sleep child {child} survived the timeout");
}

#[test]
fn secrets_from_the_environment_reach_neither_cache_nor_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = stet_manifest(dir.path(), &repo, &["m"], "", "");
    let text = std::fs::read_to_string(&manifest).expect("read").replace("\"FAKE_STET_SLEEP\"]", "\"FAKE_STET_SLEEP\", \"MY_API_TOKEN\"]");
    std::fs::write(&manifest, text).expect("write");
    let log = dir.path().join("stet.log");
    let out = runner(dir.path())
        .args(["exec"])
        .arg(&manifest)
        .env("FAKE_STET_SKIP_SERVER_CHECK", "1")
        .env("FAKE_STET_LOG", &log)
        .env("MY_API_TOKEN", "s3cr3t-value-42")
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let passed = log_lines(&log).iter().any(|l| l["env_keys"].as_array().is_some_and(|k| k.iter().any(|k| k == "MY_API_TOKEN")));
    assert!(passed, "the child received the variable");
    for path in super::exec_corpus::walk(&dir.path().join("cache")).into_iter().chain(super::exec_corpus::walk(&dir.path().join("out"))) {
        let bytes = std::fs::read(&path).expect("read");
        assert!(!String::from_utf8_lossy(&bytes).contains("s3cr3t-value-42"), "secret leaked into {}", path.display());
    }
}

#[test]
fn the_dry_run_output_of_stet_matches_the_builtin_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let via_stet = stet_manifest(dir.path(), &repo, &["m"], "", "");
    let text = std::fs::read_to_string(&via_stet).expect("read").replace("\"--stream\"]", "\"--dry-run\"]");
    std::fs::write(&via_stet, text).expect("write");
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&via_stet).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let builtin = write_manifest(
        dir.path(),
        "builtin.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"b\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~2\"]\n[reviewer]\nkind = \"builtin\"\nname = \"dry-run\"\n[report]\noutput = \"out-b\"\n",
            repo.display()
        ),
    );
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&builtin).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    // Both experiments stored their runs, and their findings are byte-identical: the
    // content-addressed store holds a single findings object for the two.
    let ls = runner(dir.path()).args(["cache", "ls", "--json"]).output().expect("ls");
    assert_eq!(stdout_of(&ls).lines().count(), 2);
    let objects: Vec<String> = super::exec_corpus::walk(&dir.path().join("cache/objects"))
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter(|t| t.trim_start().starts_with('[') && t.contains("Dry-run placeholder (CI)"))
        .collect();
    assert_eq!(objects.len(), 1, "{objects:?}");
    assert!(objects[0].contains("\"confidence\": 1,"), "integer confidence as stet prints it: {}", objects[0]);
}
