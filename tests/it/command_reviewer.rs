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
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("unreachable"), "{err}");
    assert!(err.contains("http://127.0.0.1:1"), "the URL from stet's stderr is shown: {err}");
    assert!(err.contains("not started"), "later runs are not attempted: {err}");
}

#[test]
fn a_failing_run_fails_only_itself_with_its_stderr_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = stet_manifest(dir.path(), &repo, &["good", "broken"], "", "");
    // The fake exits with FAKE_STET_EXIT; make it depend on the model through a wrapper env.
    let text = std::fs::read_to_string(&manifest)
        .expect("read")
        .replace("STET_SUPPRESSION_ENABLED = \"0\"", "STET_SUPPRESSION_ENABLED = \"0\", FAKE_STET_EXIT = \"{{#if (eq model \\\"broken\\\")}}1{{/if}}\"");
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

/// Every run record in a cache (objects holding `cost` and `inputs`).
fn run_records(cache: &Path) -> Vec<serde_json::Value> {
    super::exec_corpus::walk(&cache.join("objects"))
        .into_iter()
        .filter_map(|p| serde_json::from_slice::<serde_json::Value>(&std::fs::read(p).ok()?).ok())
        .filter(|v| v.get("cost").is_some() && v.get("inputs").is_some())
        .collect()
}

/// Writes an executable script into `dir`.
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// A manifest in `dir` running `program` (as written) over `HEAD~2..HEAD` of `repo`.
fn script_manifest(dir: &Path, repo: &Path, program: &str, extra: &str) -> PathBuf {
    write_manifest(
        dir,
        "script.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"script\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~2\"]\n[reviewer]\nkind = \"command\"\nprogram = \"{program}\"\n{extra}\n[report]\noutput = \"out\"\n",
            repo.display()
        ),
    )
}

#[test]
fn usage_is_read_before_the_cleanup_finishes_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = stet_manifest(dir.path(), &repo, &["m"], "", "");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).env("FAKE_STET_SKIP_SERVER_CHECK", "1").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let records = run_records(&dir.path().join("cache"));
    assert_eq!(records.len(), 1);
    // The fake's counts for this diff: 350 + bytes/4 per hunk, completions per finding.
    assert!(records[0]["cost"]["prompt_tokens"].as_u64().is_some_and(|n| n > 350), "{}", records[0]["cost"]);
    assert!(records[0]["cost"]["completion_tokens"].as_u64().is_some_and(|n| n > 0), "{}", records[0]["cost"]);
    assert!(!repo.join(".review/session.json").exists(), "the cleanup still finished the session");
}

#[test]
fn usage_a_command_reviewer_prints_is_read_as_tokens_and_fills_the_cost_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    // A reviewer of any kind: a findings document with OpenAI's `usage`, or an NDJSON stream
    // with usage events named as OpenAI's responses and Anthropic name them.
    script(
        dir.path(),
        "review.py",
        concat!(
            "#!/usr/bin/env python3\n",
            "import json, sys\n",
            "finding = {'file': 'calc.py', 'line': 1, 'severity': 'info', 'category': 'style', 'confidence': 0.5, 'message': 'name it'}\n",
            "if sys.argv[1] == 'doc':\n",
            "    print(json.dumps({'findings': [finding], 'usage': {'prompt_tokens': 1200, 'completion_tokens': 80, 'total_tokens': 1280}}))\n",
            "else:\n",
            "    print(json.dumps({'type': 'progress', 'msg': '2 hunks'}))\n",
            "    print(json.dumps({'type': 'usage', 'data': {'input_tokens': 300, 'output_tokens': 20}}))\n",
            "    print(json.dumps({'type': 'finding', 'data': finding}))\n",
            "    print(json.dumps({'type': 'usage', 'data': {'input_tokens': 200, 'output_tokens': 5}}))\n",
            "    print(json.dumps({'type': 'done'}))\n",
        ),
    );
    let manifest = script_manifest(dir.path(), &repo, "./review.py", "args = [\"{{format}}\"]\n[[analysis]]\nkind = \"cost\"");
    let text = std::fs::read_to_string(&manifest).expect("manifest").replace("ref = [\"HEAD~2\"]", "ref = [\"HEAD~2\"]\nformat = [\"doc\", \"stream\"]");
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let mut tokens: Vec<(u64, u64)> = run_records(&dir.path().join("cache"))
        .iter()
        .map(|r| (r["cost"]["prompt_tokens"].as_u64().unwrap_or(0), r["cost"]["completion_tokens"].as_u64().unwrap_or(0)))
        .collect();
    tokens.sort();
    assert_eq!(tokens, [(500, 25), (1200, 80)]);
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("JSON");
    let cost = results["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "cost").expect("the cost analysis");
    let cells: Vec<(String, u64)> = cost["data"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|c| (c["cell"].as_str().unwrap_or("").to_string(), c["total_tokens"].as_u64().unwrap_or(0)))
        .collect();
    // The axes in the order written: `ref`, then `format`.
    assert_eq!(cells, [("ref=HEAD~2,format=doc".to_string(), 1280), ("ref=HEAD~2,format=stream".to_string(), 525)]);
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("| Tokens | 1700 prompt, 105 completion |"), "{md}");
}

#[test]
fn a_stale_session_file_lends_its_tokens_to_no_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    std::fs::create_dir_all(repo.join(".review")).expect("mkdir");
    std::fs::write(repo.join(".review/session.json"), r#"{"last_run_prompt_tokens":999,"last_run_completion_tokens":77}"#).expect("write");
    script(dir.path(), "review.py", "#!/usr/bin/env python3\nprint('{\"findings\":[]}')\n");
    // `./review.py` is relative to the manifest, not to the repository the child runs in.
    let manifest = script_manifest(dir.path(), &repo, "./review.py", "ignore = [\".review/\"]");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let records = run_records(&dir.path().join("cache"));
    assert_eq!(records.len(), 1);
    assert!(records[0]["cost"].get("prompt_tokens").is_none(), "tokens of a session this run did not write: {}", records[0]["cost"]);
}

#[test]
fn children_get_a_cleared_environment_a_fresh_home_and_absolute_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let log = dir.path().join("stet.log");
    let manifest = stet_manifest(dir.path(), &repo, &["m"], "", "");
    let text = std::fs::read_to_string(&manifest)
        .expect("read")
        .replace("STET_SUPPRESSION_ENABLED = \"0\"", "STET_SUPPRESSION_ENABLED = \"0\", STET_X_REPO = \"{{repo}}\"");
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path())
        .args(["exec", "--work-dir", "work"])
        .arg(&manifest)
        .env("FAKE_STET_SKIP_SERVER_CHECK", "1")
        .env("FAKE_STET_LOG", &log)
        .env("OPENAI_API_KEY", "sk-from-the-shell")
        .env("STET_STRICTNESS", "lenient")
        .env("STET_STATE_DIR", "/nonexistent")
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let begins: Vec<serde_json::Value> = log_lines(&log).into_iter().filter(|l| l["phase"] == "begin").collect();
    assert!(!begins.is_empty());
    for line in &begins {
        let keys: Vec<&str> = line["env_keys"].as_array().expect("keys").iter().filter_map(|k| k.as_str()).collect();
        assert!(
            !keys.contains(&"OPENAI_API_KEY") && !keys.contains(&"STET_STRICTNESS") && !keys.contains(&"STET_STATE_DIR"),
            "runner's environment leaked: {keys:?}"
        );
        assert!(keys.contains(&"PATH") && keys.contains(&"HOME"), "{keys:?}");
        let home = PathBuf::from(line["home"].as_str().expect("home"));
        assert!(home.is_absolute() && !home.starts_with(dir.path()) && !home.starts_with(project_root()), "HOME {} inside the experiment", home.display());
        assert!(!home.exists(), "the run's HOME is removed afterwards");
        // `{{repo}}` renders the absolute path of the directory the child runs in.
        assert_eq!(line["env"]["STET_X_REPO"].as_str(), line["cwd"].as_str(), "{line}");
        assert!(Path::new(line["cwd"].as_str().expect("cwd")).is_absolute());
    }
}

#[test]
fn a_corpus_case_is_reviewed_in_a_private_copy_outside_the_experiment_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = project_root().join("corpus/quickstart");
    let log = dir.path().join("stet.log");
    let manifest = write_manifest(
        dir.path(),
        "corpus.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"c\"\n[target]\ncorpus = \"{}\"\ncases = [\"case-01\"]\nunseal-holdout = true\n[matrix]\nrepeat = 1\n[reviewer]\nkind = \"command\"\nprogram = \"{}\"\nargs = [\"start\", \"{{{{base}}}}\", \"--json\", \"--dry-run\"]\nenv = {{ REPO = \"{{{{repo}}}}\" }}\ncleanup = [[\"-{}\", \"finish\"]]\nignore = [\".review/\"]\npass-env = [\"FAKE_STET_LOG\"]\n[report]\noutput = \"out\"\n",
            corpus.display(),
            fake_stet().display(),
            fake_stet().display()
        ),
    );
    let out = runner(dir.path()).args(["exec", "--work-dir", "work"]).arg(&manifest).env("FAKE_STET_LOG", &log).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let start = log_lines(&log).into_iter().find(|l| l["phase"] == "begin" && l["command"] == "start").expect("start logged");
    let cwd = PathBuf::from(start["cwd"].as_str().expect("cwd"));
    assert!(cwd.is_absolute() && !cwd.starts_with(dir.path()) && !cwd.starts_with(project_root()), "cwd {} inside the experiment tree", cwd.display());
    // Findings point at the case's repository, not at the removed run directory.
    let objects: Vec<String> =
        super::exec_corpus::walk(&dir.path().join("cache/objects")).into_iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
    let findings = objects.iter().find(|t| t.contains("Dry-run placeholder (CI)") && t.trim_start().starts_with('[')).expect("findings");
    let work = std::path::absolute(dir.path().join("work/cases")).expect("abs");
    assert!(findings.contains(&format!("file://{}", work.display())), "{findings}");
    assert!(!findings.contains(&cwd.display().to_string()), "{findings}");
    // The run's history (stet's finish record) is kept as an attachment of the run.
    let records = run_records(&dir.path().join("cache"));
    let history = records[0]["attachments"]["history.jsonl"].as_str().expect("history attached");
    assert!(objects.iter().any(|o| o.contains("\"review_output\"")), "history object stored ({history})");
}

#[test]
fn head_is_reviewed_as_declared_or_refused_under_serialize() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let tip = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    git(&repo, &["checkout", "--quiet", "--detach", "HEAD~1"]);
    let manifest = stet_manifest(dir.path(), &repo, &["m"], "", "");
    let text = std::fs::read_to_string(&manifest)
        .expect("read")
        .replace("[matrix]", &format!("head = \"{tip}\"\n[matrix]"))
        .replace("\"HEAD~2\"", &format!("\"{tip}~2\""));
    std::fs::write(&manifest, &text).expect("write");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).env("FAKE_STET_SKIP_SERVER_CHECK", "1").output().expect("runs");
    // Refused before anything runs, at the reviewer's table.
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains(&format!("`head = \"{tip}\"` is not the commit checked out in")) && err.contains("isolation = \"worktree\""), "{err}");
    assert!(err.contains(&format!("({}:", manifest.display())), "located: {err}");

    // In a worktree of its own the run reviews the declared head (its `eval(` line included),
    // and its findings point at the repository, not at the removed worktree.
    std::fs::write(&manifest, text.replace("ignore = [\".review/\"]", "ignore = [\".review/\"]\nisolation = \"worktree\"")).expect("write");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).env("FAKE_STET_SKIP_SERVER_CHECK", "1").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let objects: Vec<String> =
        super::exec_corpus::walk(&dir.path().join("cache/objects")).into_iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
    let findings = objects.iter().find(|t| t.contains("eval()")).expect("the head's eval( line was reviewed");
    assert!(findings.contains(&format!("file://{}/calc.py", repo.display())), "{findings}");
    assert!(!findings.contains("runner-worktree-"), "{findings}");
    let records = run_records(&dir.path().join("cache"));
    assert!(records.iter().any(|r| r["attachments"]["history.jsonl"].is_string()), "the worktree's history is kept");
}

#[test]
fn exit_2_with_a_reachable_server_fails_only_that_run_and_says_why() {
    let live = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", live.local_addr().expect("addr"));
    // What stet prints on stderr decides the message: an HTTP status, a timeout, or nothing known.
    for (hook, cause) in [
        ("FAKE_STET_SERVER_STATUS = \"503\"", "failed the request with HTTP 503, a server error"),
        ("FAKE_STET_SERVER_STATUS = \"timeout\"", "a request to it timed out"),
        ("FAKE_STET_SERVER_STATUS = \"404\"", "refused the request with HTTP 404"),
        ("FAKE_STET_EXIT = \"2\"", "the request failed (an HTTP error or a timeout"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = calc_repo(dir.path());
        let manifest = stet_manifest(dir.path(), &repo, &["m1", "m2"], "", "");
        let text = std::fs::read_to_string(&manifest)
            .expect("read")
            .replace("http://127.0.0.1:1", &url)
            .replace("STET_SUPPRESSION_ENABLED = \"0\"", &format!("STET_SUPPRESSION_ENABLED = \"0\", {hook}"));
        std::fs::write(&manifest, text).expect("write");
        let out = runner(dir.path()).args(["exec"]).arg(&manifest).output().expect("runs");
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(3), "{hook}: a failed run, not an unreachable server: {err}");
        assert!(err.contains("accepts connections") && err.contains(&url), "{hook}: {err}");
        assert!(err.contains(cause), "{hook}: {err}");
        assert!(!err.contains("4xx") || hook.contains("404"), "{hook}: not called a 4xx: {err}");
        assert!(!err.contains("not started"), "the other run went on: {err}");
    }
}

/// A repository named through `..` and reviewed in a worktree: the rewritten `cursor_uri`s are
/// clean paths of the repository, as stet's own are (`file:///…/repo/calc.py#L12`).
#[test]
fn worktree_cursor_uris_are_clean_paths_of_the_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    std::fs::create_dir_all(dir.path().join("exp")).expect("mkdir");
    let dotted = dir.path().join("exp/../repo");
    let manifest = stet_manifest(dir.path(), &dotted, &["m"], "isolation = \"worktree\"", "");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).env("FAKE_STET_SKIP_SERVER_CHECK", "1").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let objects: Vec<String> =
        super::exec_corpus::walk(&dir.path().join("cache/objects")).into_iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect();
    let findings = objects.iter().find(|t| t.contains("\"cursor_uri\"") && t.trim_start().starts_with('[')).expect("findings stored");
    assert!(findings.contains(&format!("\"file://{}/calc.py#L", repo.display())), "{findings}");
    assert!(!findings.contains("/../") && !findings.contains("runner-worktree-"), "{findings}");
}

#[test]
fn an_unreachable_endpoint_stops_only_the_runs_against_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let live = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", live.local_addr().expect("addr"));
    let manifest = stet_manifest(dir.path(), &repo, &["m"], "", &format!("server = [\"http://127.0.0.1:1\", \"{url}\"]\nrepeat = 3"));
    let text =
        std::fs::read_to_string(&manifest).expect("read").replace("STET_OLLAMA_BASE_URL = \"http://127.0.0.1:1\"", "STET_OLLAMA_BASE_URL = \"{{server}}\"");
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    let log = stdout_of(&out);
    assert_eq!(out.status.code(), Some(2), "{log}");
    assert!(log.contains("at http://127.0.0.1:1 does not accept connections") && log.contains(r#""kind":"server_unreachable""#), "{log}");
    assert_eq!(count_events(&events(&out), "run_finished"), 3, "every run against the live server finished: {log}");
}

#[test]
fn stets_openai_provider_and_temperature_0_are_noted_in_provenance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let manifest = stet_manifest(dir.path(), &repo, &["m"], "", "");
    let text = std::fs::read_to_string(&manifest)
        .expect("read")
        .replace("STET_SUPPRESSION_ENABLED = \"0\"", "STET_SUPPRESSION_ENABLED = \"0\", STET_PROVIDER = \"openai\", STET_TEMPERATURE = \"0\"");
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path()).args(["exec"]).arg(&manifest).env("FAKE_STET_SKIP_SERVER_CHECK", "1").output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("omits a zero temperature"), "{md}");
}

#[test]
fn editing_the_program_or_a_declared_input_misses_the_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let finding = |msg: &str| {
        format!("#!/usr/bin/env python3\nprint('{{\"findings\":[{{\"file\":\"calc.py\",\"line\":1,\"severity\":\"info\",\"category\":\"style\",\"confidence\":0.5,\"message\":\"{msg}\"}}]}}')\n")
    };
    script(dir.path(), "review.py", &finding("first"));
    std::fs::write(dir.path().join("rules.txt"), "v1").expect("write");
    let manifest = script_manifest(dir.path(), &repo, "./review.py", "inputs = [\"rules.txt\"]");
    let exec = || runner(dir.path()).args(["exec", "--json"]).arg(&manifest).output().expect("runs");
    let out = exec();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(count_events(&events(&exec()), "run_cached"), 1);

    script(dir.path(), "review.py", &finding("second"));
    let plan = runner(dir.path()).args(["plan"]).arg(&manifest).output().expect("plan");
    assert!(stdout_of(&plan).contains("files"), "plan names the program's content: {}", stdout_of(&plan));
    assert_eq!(count_events(&events(&exec()), "run_finished"), 1, "the edited script ran");

    std::fs::write(dir.path().join("rules.txt"), "v2").expect("write");
    assert_eq!(count_events(&events(&exec()), "run_finished"), 1, "the edited input ran");
}

#[test]
fn secrets_printed_by_a_reviewer_are_stored_nowhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let secret = "tok-5ecret-value-9000";
    script(
        dir.path(),
        "leaky.py",
        "#!/usr/bin/env python3\nimport os, sys\nk = os.environ['LEAKY_TOKEN']\nsys.stderr.write('using key ' + k + '\\n')\nif os.environ.get('FAIL') == '1':\n    sys.exit(1)\nprint('{\"findings\":[{\"file\":\"calc.py\",\"line\":1,\"severity\":\"info\",\"category\":\"style\",\"confidence\":0.5,\"message\":\"key ' + k + '\",\"suggestion\":\"' + k + '\"}]}')\n",
    );
    let manifest = script_manifest(dir.path(), &repo, "./leaky.py", "env = { FAIL = \"{{fail}}\" }\npass-env = [\"LEAKY_TOKEN\"]");
    let text = std::fs::read_to_string(&manifest).expect("read").replace("ref = [\"HEAD~2\"]", "ref = [\"HEAD~2\"]\nfail = [\"0\", \"1\"]");
    std::fs::write(&manifest, text).expect("write");
    let out = runner(dir.path()).args(["exec", "--work-dir", "work"]).arg(&manifest).env("LEAKY_TOKEN", secret).output().expect("runs");
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(!stderr_of(&out).contains(secret), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("<redacted>"), "{}", stderr_of(&out));
    let files: Vec<PathBuf> = ["cache", "out", "work"].iter().flat_map(|d| super::exec_corpus::walk(&dir.path().join(d))).collect();
    assert!(files.iter().any(|p| p.to_string_lossy().contains("failures")), "a failure record was written");
    for path in files {
        let bytes = std::fs::read(&path).expect("read");
        assert!(!String::from_utf8_lossy(&bytes).contains(secret), "secret stored in {}", path.display());
    }
}

/// The example reviewers of examples/reviewers/ (docs/reviewer-output.md), each run through
/// runner as a real child process on a change that adds a `TODO`: each prints output the
/// schema accepts, and all three report the same finding. An example whose interpreter is
/// missing is left out, and the test says so on stderr (.ci/run installs python3 and node).
#[test]
fn the_example_reviewers_in_python_shell_and_node_print_valid_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = calc_repo(dir.path());
    let has = |program: &str| StdCommand::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    let mut langs = vec!["sh"];
    for (lang, interpreter) in [("py", "python3"), ("js", "node")] {
        if has(interpreter) {
            langs.push(lang);
        } else {
            eprintln!("SKIPPED the {lang} example reviewer: `{interpreter}` is not on PATH");
        }
    }
    let values: Vec<String> = langs.iter().map(|l| format!("\"{l}\"")).collect();
    let manifest = write_manifest(
        dir.path(),
        "examples.toml",
        &format!(
            r#"version = 1
[experiment]
name = "example-reviewers"
[target]
repo = "{repo}"
[matrix]
lang = [{values}]
ref = ["HEAD~2"]
[reviewer]
kind = "command"
program = "{examples}/review.{{{{lang}}}}"
args = ["{{{{base}}}}", "{{{{head}}}}"]
[[analysis]]
kind = "schema"
[report]
output = "out"
"#,
            repo = repo.display(),
            values = values.join(", "),
            examples = project_root().join("examples/reviewers").display(),
        ),
    );
    let out = runner(dir.path()).args(["exec", "--quiet"]).arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    let cells = results["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), langs.len(), "{cells:?}");
    for cell in cells {
        assert_eq!(cell["runs"], 1, "{cell}");
        assert_eq!(cell["findings"], 1, "{cell}: one TODO was added");
        // Python and Node state the tokens they spent (none); the shell example states none.
        let reports_usage = cell["cell"] != "lang=sh,ref=HEAD~2";
        assert_eq!(cell["prompt_tokens"].is_u64(), reports_usage, "{cell}");
    }
    let schema = results["analyses"].as_array().expect("analyses").iter().find(|a| a["kind"] == "schema").expect("schema analysis");
    for cell in schema["data"].as_array().map(|d| d.to_vec()).unwrap_or_else(|| vec![schema["data"].clone()]) {
        assert_eq!((cell["pass"].as_bool(), cell["problems_total"].as_u64()), (Some(true), Some(0)), "{cell}");
    }
    // The same finding from each, as `runner show` reads it back from the cache.
    let shown = runner(dir.path()).args(["show", "--json"]).arg(&manifest).output().expect("show");
    assert!(shown.status.success(), "{}", stderr_of(&shown));
    let shown: serde_json::Value = serde_json::from_str(&stdout_of(&shown)).expect("show --json");
    let runs = shown["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), langs.len());
    for run in runs {
        assert_eq!(run["findings"], runs[0]["findings"], "{run}");
        assert_eq!((run["findings"][0]["file"].as_str(), run["findings"][0]["line"].as_u64()), (Some("calc.py"), Some(14)), "{run}");
    }
}

/// `exec` ends with the verdict lines RESULTS.md opens with, and warns about a reviewer whose
/// every run found nothing.
#[test]
fn exec_ends_with_the_verdicts_and_warns_about_a_reviewer_that_never_finds_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let silent = script(dir.path(), "silent.sh", "#!/bin/sh\necho '{\"findings\": []}'\n");
    let corpus = project_root().join("corpus/quickstart");
    let manifest = write_manifest(
        dir.path(),
        "m.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"silent\"\n[target]\ncorpus = \"{}\"\nunseal-holdout = true\n[matrix]\nreviewer = [\"heuristic\", \"silent\"]\n[reviewers.heuristic]\nkind = \"builtin\"\nname = \"heuristic\"\n[reviewers.silent]\nkind = \"command\"\nprogram = \"{}\"\n[[analysis]]\nkind = \"compare\"\naxis = \"reviewer\"\nmetrics = [\"recall\"]\n[report]\noutput = \"out\"\n",
            corpus.display(),
            silent.display()
        ),
    );
    let out = runner(dir.path()).arg("exec").arg(&manifest).output().expect("runs");
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stderr = stderr_of(&out);
    assert!(stderr.contains("warning: every run of reviewer `silent`") && !stderr.contains("reviewer `heuristic`"), "{stderr}");
    let verdicts = stderr.split("verdicts:\n").nth(1).unwrap_or_default();
    assert!(verdicts.trim_start().starts_with("recall, `silent` − `heuristic`") && !verdicts.contains("**"), "{stderr}");
}
