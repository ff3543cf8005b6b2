//! Thin, synchronous wrappers over the `git` command line.

use std::path::Path;
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("failed to run git in `{dir}`: {source}")]
    Spawn { dir: String, source: std::io::Error },
    #[error("`git {args}` failed in `{dir}`: {stderr}")]
    Failed { dir: String, args: String, stderr: String },
}

/// Runs `git args…` in `dir` with a fixed, hermetic environment and returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    git_with_env(dir, args, &[])
}

/// A `git -C dir` command with a hermetic environment: no system config, no prompts, the C
/// locale, and no inherited `GIT_DIR`/`GIT_WORK_TREE`/`GIT_INDEX_FILE`.
pub fn command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    cmd
}

pub fn git_with_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
    let mut cmd = command(dir);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|source| GitError::Spawn { dir: dir.display().to_string(), source })?;
    if !out.status.success() {
        return Err(GitError::Failed {
            dir: dir.display().to_string(),
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Resolves each revision to a full commit SHA in one `git rev-parse` call.
pub fn resolve_commits(repo: &Path, revs: &[&str]) -> Result<Vec<String>, GitError> {
    let specs: Vec<String> = revs.iter().map(|r| format!("{r}^{{commit}}")).collect();
    let mut args = vec!["rev-parse"];
    args.extend(specs.iter().map(String::as_str));
    let out = git(repo, &args)?;
    Ok(out.lines().map(|l| l.trim().to_string()).collect())
}

/// The diff stet reviews: `git diff --no-color --no-ext-diff base..head`.
pub fn diff(repo: &Path, base: &str, head: &str) -> Result<String, GitError> {
    git(repo, &["diff", "--no-color", "--no-ext-diff", &format!("{base}..{head}")])
}
