//! The integration test binary: drives the real `runner` CLI on real git repositories
//! created in temporary directories, with real child processes as reviewers.

mod aacr_bench;
mod architecture;
mod bundled;
mod code_review_benchmark;
mod command_reviewer;
mod comparisons;
mod conventions;
mod cost_budget;
mod docs;
mod embed_real_server;
mod exec_corpus;
mod external_target;
mod fake_http;
mod foreign_files;
mod git_target;
mod github_oracle;
mod ground_truth;
mod ground_truth_eval;
mod history_target;
mod init;
mod judge_fake_server;
mod judge_real_server;
mod jury;
mod llm_fake_ollama;
mod llm_real_server;
mod manifest_errors;
mod matching;
mod named_reviewers;
mod pipeline;
mod pipeline_real_server;
mod rate_limits;
mod reliability;
mod remote_cache;
mod replay;
mod report_html;
mod resolution;
mod resume;
mod scipy_reference;
mod shards;
mod smells;
mod stet_history;
mod stet_hunks;
mod studies;

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

/// A URL nothing listens on, whatever other tests bind meanwhile: port 1 is privileged and
/// unused, so a connection is refused at once. (A port freed by dropping a listener can be
/// taken by another test's server before it is dialled.)
pub fn dead_url() -> String {
    "http://127.0.0.1:1".to_string()
}

/// The repository root (where Cargo.toml is).
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The built `runner` binary, run from `dir`.
pub fn runner(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("runner").expect("the runner binary is built");
    cmd.current_dir(dir).env_remove("RUNNER_CACHE_DIR").env_remove("RUNNER_WORK_DIR");
    cmd
}

pub fn fake_stet() -> PathBuf {
    project_root().join("tests/fixtures/fake-stet/stet")
}

/// Runs git in `dir` with a fixed identity and no signing, panicking with its stderr on
/// failure; returns stdout, trimmed. The one git helper of the integration tests.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_dated(dir, None, args)
}

/// [`git`], with the author and committer dates fixed to `date` when one is given (so commit
/// SHAs are the same at every run of a test).
pub fn git_dated(dir: &Path, date: Option<&str>, args: &[&str]) -> String {
    let mut command = StdCommand::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    if let Some(date) = date {
        command.env("GIT_AUTHOR_DATE", date).env("GIT_COMMITTER_DATE", date);
    }
    let out = command.output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository with three commits touching `calc.py`, configured the way stet needs.
pub fn calc_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["config", "user.name", "t"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    let versions = [
        "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n",
        "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n\n\ndef avg(xs):\n    return sum(xs) / len(xs)\n",
        "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n\n\ndef avg(xs):\n    return sum(xs) / len(xs)\n\n\ndef run(code):\n    return eval(code)  # TODO: sandbox\n",
    ];
    for (i, text) in versions.iter().enumerate() {
        std::fs::write(repo.join("calc.py"), text).expect("write");
        git(&repo, &["add", "calc.py"]);
        git(&repo, &["commit", "--quiet", "-m", &format!("v{i}")]);
    }
    repo
}

/// Writes a manifest into `dir` and returns its path.
pub fn write_manifest(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write manifest");
    path
}

pub fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Parses `--json` NDJSON events.
pub fn events(output: &std::process::Output) -> Vec<serde_json::Value> {
    stdout_of(output).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

pub fn count_events(events: &[serde_json::Value], kind: &str) -> usize {
    events.iter().filter(|e| e["event"] == kind).count()
}
