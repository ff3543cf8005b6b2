//! The `command` reviewer: any CLI (stet, a script, another tool), started as a real child
//! process with argv and environment templated from the cell — never through a shell.
//!
//! The child runs in its own process group so a timeout kills everything it started. Its
//! stdout is read as stet's `{"findings":[…]}` or NDJSON stream; exit code 2 means its model
//! server was unreachable (stet's convention). Optional setup and cleanup commands run around
//! it (stet needs `stet finish`); `isolation` serializes runs per repository or gives each
//! run its own worktree.

use super::parse::parse_stet_output;
use super::{tail, template, Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer};
use crate::manifest::{CommandSpec, Isolation};
use crate::plan::Cell;
use crate::target::git::git;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

const STDERR_TAIL: usize = 2000;

pub struct CommandReviewer {
    spec: CommandSpec,
}

/// What one child process did.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl CommandReviewer {
    pub fn new(spec: CommandSpec) -> Self {
        Self { spec }
    }

    /// Values from runner's environment the child receives; kept out of keys and records.
    fn passed_env(&self) -> Vec<(String, String)> {
        self.spec.pass_env.iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.clone(), v))).collect()
    }

    fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (_, value) in self.passed_env() {
            if value.len() >= 4 {
                out = out.replace(&value, "<redacted>");
            }
        }
        for (key, value) in &self.spec.env {
            if is_secret_name(key) && value.len() >= 4 && !value.contains("{{") {
                out = out.replace(value, "<redacted>");
            }
        }
        out
    }

    async fn spawn(&self, argv: &[String], env: &BTreeMap<String, String>, dir: &Path, timeout: Duration) -> Result<Finished, ReviewError> {
        let (program, args) = argv.split_first().ok_or_else(|| ReviewError::failed("empty command"))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(dir)
            .envs(env)
            .envs(self.passed_env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| ReviewError::failed(format!("failed to start `{program}` in `{}`: {e}", dir.display())))?;
        let group = ProcessGroup(child.id().map(|id| id as i32));
        let mut stdout_pipe = child.stdout.take();
        let mut stderr_pipe = child.stderr.take();
        let read_out = async {
            let mut buf = Vec::new();
            if let Some(p) = stdout_pipe.as_mut() {
                let _ = p.read_to_end(&mut buf).await;
            }
            buf
        };
        let read_err = async {
            let mut buf = Vec::new();
            if let Some(p) = stderr_pipe.as_mut() {
                let _ = p.read_to_end(&mut buf).await;
            }
            buf
        };
        let run = async { tokio::join!(child.wait(), read_out, read_err) };
        match tokio::time::timeout(timeout, run).await {
            Ok((status, out, err)) => {
                group.disarm();
                let status = status.map_err(|e| ReviewError::failed(format!("failed to wait for `{program}`: {e}")))?;
                Ok(Finished {
                    code: status.code(),
                    stdout: String::from_utf8_lossy(&out).into_owned(),
                    stderr: String::from_utf8_lossy(&err).into_owned(),
                })
            }
            // Dropping `group` kills the whole process group.
            Err(_) => Err(ReviewError::Timeout { seconds: timeout.as_secs_f64() }),
        }
    }

    /// Runs setup or cleanup commands. A program written `-name` may fail without failing the run.
    async fn run_hooks(&self, hooks: &[Vec<String>], vars: &BTreeMap<String, serde_json::Value>, env: &BTreeMap<String, String>, dir: &Path, timeout: Duration, phase: &str) -> Result<(), ReviewError> {
        for hook in hooks {
            let mut argv = render_all(hook, vars)?;
            let tolerate = argv.first().is_some_and(|p| p.starts_with('-'));
            if tolerate {
                argv[0] = argv[0][1..].to_string();
            }
            let done = self.spawn(&argv, env, dir, timeout).await?;
            if done.code != Some(0) && !tolerate {
                return Err(ReviewError::Failed {
                    message: format!("{phase} command `{}` exited with {}", argv.join(" "), code_text(done.code)),
                    stderr_tail: self.redact(&tail(&done.stderr, STDERR_TAIL)),
                });
            }
        }
        Ok(())
    }

    async fn review_in(&self, job: &ReviewJob, dir: &Path) -> Result<ReviewOutput, ReviewError> {
        let vars = template::variables(&job.cell, job.repeat, Some((&job.subject, &dir.display().to_string())));
        let argv = render_all(&std::iter::once(self.spec.program.clone()).chain(self.spec.args.iter().cloned()).collect::<Vec<_>>(), &vars)?;
        let env = self
            .spec
            .env
            .iter()
            .map(|(k, v)| template::render(v, &vars).map(|v| (k.clone(), v)).map_err(ReviewError::failed))
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        ignore_paths(dir, &self.spec.ignore)?;
        self.run_hooks(&self.spec.setup, &vars, &env, dir, job.timeout, "setup").await?;
        let started = Instant::now();
        let result = self.spawn(&argv, &env, dir, job.timeout).await;
        let wall_ms = started.elapsed().as_millis() as u64;
        let cleanup = self.run_hooks(&self.spec.cleanup, &vars, &env, dir, job.timeout, "cleanup").await;
        let done = result?;
        match done.code {
            Some(0) => {}
            Some(2) => {
                return Err(ReviewError::Unreachable {
                    message: format!("`{}` exited with 2 (its model server is unreachable, timed out, or refused the request)", argv[0]),
                    stderr_tail: self.redact(&tail(&done.stderr, STDERR_TAIL)),
                })
            }
            code => {
                return Err(ReviewError::Failed {
                    message: format!("`{}` exited with {}", argv.join(" "), code_text(code)),
                    stderr_tail: self.redact(&tail(&done.stderr, STDERR_TAIL)),
                })
            }
        }
        cleanup?;
        let parsed = parse_stet_output(&done.stdout).map_err(|e| ReviewError::Failed {
            message: format!("could not read `{}` output: {e}", argv[0]),
            stderr_tail: self.redact(&tail(&done.stderr, STDERR_TAIL)),
        })?;
        let hunks = crate::target::diff::hunks(&job.subject.files).count() as u32;
        let mut cost = Cost { wall_ms, hunks, ..Cost::default() };
        read_stet_usage(dir, &env, &mut cost);
        Ok(ReviewOutput {
            findings: parsed.findings,
            raw: self.redact(&done.stdout),
            cost,
            schema_problems: parsed.schema_problems,
            ..ReviewOutput::default()
        })
    }
}

impl Reviewer for CommandReviewer {
    fn kind(&self) -> &'static str {
        "command"
    }

    fn fingerprint(&self, _cell: &Cell) -> serde_json::Value {
        // Templates, not rendered values: the cell's values are hashed beside them, and
        // rendering would bring in paths. Secret-looking variables are left out.
        let env: BTreeMap<&String, &String> = self.spec.env.iter().filter(|(k, _)| !is_secret_name(k)).collect();
        serde_json::json!({
            "program": self.spec.program,
            "args": self.spec.args,
            "env": env,
            "setup": self.spec.setup,
            "output": self.spec.output,
        })
    }

    fn preflight(&self) -> BoxFuture<'_, Result<(), ReviewError>> {
        Box::pin(async move {
            if self.spec.program.contains("{{") || find_program(&self.spec.program).is_some() {
                return Ok(());
            }
            Err(ReviewError::failed(format!(
                "reviewer program `{}` was not found{}",
                self.spec.program,
                if self.spec.program.contains('/') { String::new() } else { " in PATH".to_string() }
            )))
        })
    }

    fn exclusive_scope(&self, job: &ReviewJob) -> Option<String> {
        (self.spec.isolation == Isolation::Serialize).then(|| job.subject.repo_dir.display().to_string())
    }

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            match self.spec.isolation {
                Isolation::Worktree => {
                    let worktree = Worktree::add(&job.subject.repo_dir, &job.subject.head_sha)?;
                    let result = self.review_in(job, &worktree.path).await;
                    drop(worktree);
                    result
                }
                Isolation::None | Isolation::Serialize => self.review_in(job, &job.subject.repo_dir).await,
            }
        })
    }
}

/// Resolves a program name the way `execvp` would: a path as is, a bare name through PATH.
fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| executable(p))
}

fn render_all(argv: &[String], vars: &BTreeMap<String, serde_json::Value>) -> Result<Vec<String>, ReviewError> {
    argv.iter().map(|a| template::render(a, vars).map_err(ReviewError::failed)).collect()
}

fn code_text(code: Option<i32>) -> String {
    code.map(|c| format!("exit code {c}")).unwrap_or_else(|| "a signal".to_string())
}

pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"].iter().any(|s| upper.contains(s))
}

/// Adds paths a reviewer writes (stet's `.review/`) to the repository's `info/exclude`, so
/// the tool does not see its own state as a dirty tree.
fn ignore_paths(dir: &Path, paths: &[String]) -> Result<(), ReviewError> {
    if paths.is_empty() {
        return Ok(());
    }
    let common = git(dir, &["rev-parse", "--git-common-dir"]).map_err(|e| ReviewError::failed(e.to_string()))?;
    let common = PathBuf::from(common.trim());
    let common = if common.is_absolute() { common } else { dir.join(common) };
    let exclude = common.join("info").join("exclude");
    let existing = std::fs::read_to_string(&exclude).unwrap_or_default();
    let missing: Vec<&String> = paths.iter().filter(|p| !existing.lines().any(|l| l.trim() == p.as_str())).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for p in missing {
        text.push_str(p);
        text.push('\n');
    }
    std::fs::create_dir_all(common.join("info")).map_err(|e| ReviewError::failed(e.to_string()))?;
    std::fs::write(&exclude, text).map_err(|e| ReviewError::failed(format!("failed to update `{}`: {e}", exclude.display())))
}

/// stet keeps token counts in `.review/session.json`; read them when the tool left them.
fn read_stet_usage(dir: &Path, env: &BTreeMap<String, String>, cost: &mut Cost) {
    let state = env.get("STET_STATE_DIR").map(PathBuf::from).unwrap_or_else(|| dir.join(".review"));
    let Ok(text) = std::fs::read_to_string(state.join("session.json")) else { return };
    let Ok(session) = serde_json::from_str::<serde_json::Value>(&text) else { return };
    cost.prompt_tokens = session.get("last_run_prompt_tokens").and_then(|v| v.as_u64()).or(cost.prompt_tokens);
    cost.completion_tokens = session.get("last_run_completion_tokens").and_then(|v| v.as_u64()).or(cost.completion_tokens);
    cost.eval_ms = session.get("last_run_eval_duration_ns").and_then(|v| v.as_f64()).map(|ns| ns / 1e6).or(cost.eval_ms);
}

/// Kills a whole process group when dropped, unless disarmed after a clean exit.
struct ProcessGroup(Option<i32>);

impl ProcessGroup {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            // SAFETY: killpg only sends a signal; a stale id at worst reaches no process.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

/// A detached worktree at a commit, removed when dropped.
struct Worktree {
    repo: PathBuf,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Worktree {
    fn add(repo: &Path, commit: &str) -> Result<Self, ReviewError> {
        let dir = tempfile::Builder::new().prefix("runner-worktree-").tempdir().map_err(|e| ReviewError::failed(e.to_string()))?;
        let path = dir.path().join("tree");
        git(repo, &["worktree", "add", "--detach", "--quiet", &path.display().to_string(), commit])
            .map_err(|e| ReviewError::failed(format!("failed to add a worktree: {e}")))?;
        Ok(Self { repo: repo.to_path_buf(), path, _dir: dir })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let _ = git(&self.repo, &["worktree", "remove", "--force", &self.path.display().to_string()]);
    }
}
