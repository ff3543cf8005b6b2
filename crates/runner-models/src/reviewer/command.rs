//! The `command` reviewer: any CLI (stet, a script, another tool), started as a real child
//! process with argv and environment templated from the cell — never through a shell.
//!
//! The child runs in its own process group so a timeout kills everything it started. Its
//! stdout is read as stet's `{"findings":[…]}` or NDJSON stream. Its stdout and stderr are
//! read as they come, at most [`MAX_OUTPUT_BYTES`] each: a child that prints more is killed
//! with its whole process group as it does, and its run fails; of stderr only the end is kept. Optional setup and cleanup
//! commands run around it (stet needs `stet finish`); `isolation` serializes runs per
//! repository — across processes too, by an advisory `flock` on the repository's directory,
//! nothing written there — or gives each run its own worktree (added and removed in turns
//! across processes, by a `flock` on the git common directory; a worktree a killed runner left
//! is removed by the next add once its directory is gone).
//!
//! Every child (reviewer, setup, cleanup) starts with a cleared environment: `PATH`, the
//! locale (`LANG`, `LC_*`), a `HOME` that is a fresh empty directory per run outside the
//! experiment, what the manifest's `env` sets and the `pass-env` variables — nothing else of
//! runner's environment. A repository runner materialized (a corpus case, an eval clone) is
//! reviewed in a private copy in a temporary directory, so the child's working directory
//! is outside the experiment tree and each run starts from a clean state. A run's temporary
//! directories lie in the process's [`crate::scratch`] directory, removed as runner exits
//! (and by the next runner when it was killed).
//!
//! Exit code 2 (stet: the model server is unreachable, timed out, or answered an HTTP error —
//! a 4xx at once, a 5xx after its retries): runner then probes the run's endpoint itself. If
//! it accepts connections the run failed, saying what stet's stderr tells (the HTTP status,
//! a timeout), and the others go on; if not, the endpoint is unreachable and only the runs
//! against that endpoint stop.
//!
//! Keys: stet writes `Branch: <branch>` into its prompt, and a detached worktree says
//! `Branch: HEAD`, so a stet-driving reviewer with `isolation = "worktree"` has the isolation
//! in its fingerprint; the other modes review the checked-out branch and keep their keys.

use super::parse::parse_stet_output;
use super::redact::secret_parts_of_url_value;
use super::{template, Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer};
use crate::config::{check_template, TableReader};
use crate::matrix::Cell;
use crate::sandbox::is_executable;
use crate::subject::git::git;
use futures::future::BoxFuture;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use toml::de::DeValue;
use toml::Spanned;

/// How a reviewer's runs share a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Runs share the repository freely.
    None,
    /// At most one run at a time per repository (stet's one session per repository), in
    /// every runner process on the machine.
    Serialize,
    /// Each run gets its own detached worktree at the reviewed head.
    Worktree,
}

/// How a command reviewer's stdout is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// `{"findings":[…]}` or an NDJSON stream, whichever the output is.
    Auto,
    Json,
    Stream,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommandSpec {
    pub program: String,
    pub args: Vec<String>,
    /// Environment set for the child, templated; sorted for hashing.
    pub env: BTreeMap<String, String>,
    /// Variables copied from runner's own environment, never hashed nor stored.
    pub pass_env: Vec<String>,
    pub setup: Vec<Vec<String>>,
    pub cleanup: Vec<Vec<String>>,
    pub output: OutputFormat,
    pub isolation: Isolation,
    /// Names of files that the reviewer writes into the repository and git must ignore.
    pub ignore: Vec<String>,
    /// Files (relative to the manifest) whose content is hashed into every run's key.
    pub inputs: Vec<String>,
    /// The model server the reviewer talks to (templated); by default read from stet's
    /// `STET_PROVIDER`/`STET_*_BASE_URL` in the child's environment.
    pub endpoint: Option<String>,
    /// The manifest's directory: relative program paths and `inputs` resolve against it.
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// Reads a `kind = "command"` reviewer table.
pub fn read_spec(t: &TableReader<'_, '_>, axes: &BTreeSet<String>, base_dir: &Path) -> Option<CommandSpec> {
    let problems = t.problems();
    let program = t.required_string("program");
    if let Some(p) = &program {
        if p.get_ref().trim().is_empty() {
            problems.push_with_help(p.span(), "`program` is empty", "the reviewer's program: a name found through PATH, or a path relative to the manifest");
        } else {
            check_template(problems, p, axes, &[]);
        }
    }
    // Files whose content is hashed into every run's key (scripts the program reads, prompts).
    let inputs: Vec<String> = t.strings("inputs").unwrap_or_default().into_iter().map(Spanned::into_inner).collect();
    let endpoint = t.string("endpoint");
    if let Some(e) = &endpoint {
        check_template(problems, e, axes, &[]);
    }
    let args = t.strings("args").unwrap_or_default();
    let env = t.string_map("env").unwrap_or_default();
    for text in args.iter().chain(env.iter().map(|(_, v)| v)) {
        check_template(problems, text, axes, &[]);
    }
    let pass_env = t.strings("pass-env").unwrap_or_default().into_iter().map(Spanned::into_inner).collect();
    let read_commands = |key: &str| -> Vec<Vec<String>> {
        let Some(value) = t.get(key) else { return Vec::new() };
        let DeValue::Array(items) = value.get_ref() else {
            problems.push(value.span(), format!("`{key}` must be an array of commands, each an array of strings"));
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items.iter() {
            match item.get_ref() {
                DeValue::Array(argv)
                    if argv.first().is_some_and(|p| matches!(p.get_ref(), DeValue::String(s) if !s.trim().trim_start_matches('-').is_empty()))
                        && argv.iter().all(|a| matches!(a.get_ref(), DeValue::String(_))) =>
                {
                    let argv: Vec<String> = argv
                        .iter()
                        .filter_map(|a| match a.get_ref() {
                            DeValue::String(s) => {
                                check_template(problems, &Spanned::new(a.span(), s.to_string()), axes, &[]);
                                Some(s.to_string())
                            }
                            _ => None,
                        })
                        .collect();
                    out.push(argv);
                }
                _ => problems.push(item.span(), format!("each command in `{key}` must be a non-empty array of strings, e.g. [\"stet\", \"finish\"]")),
            }
        }
        out
    };
    let setup = read_commands("setup");
    let cleanup = read_commands("cleanup");
    let output = match t.string("output") {
        None => OutputFormat::Auto,
        Some(s) => match s.get_ref().as_str() {
            "auto" => OutputFormat::Auto,
            "json" => OutputFormat::Json,
            "stream" => OutputFormat::Stream,
            other => {
                problems.push_with_help(s.span(), format!("unknown output format `{other}`"), "formats: auto, json, stream");
                OutputFormat::Auto
            }
        },
    };
    let isolation = match t.string("isolation") {
        None => Isolation::Serialize,
        Some(s) => match s.get_ref().as_str() {
            "none" => Isolation::None,
            "serialize" => Isolation::Serialize,
            "worktree" => Isolation::Worktree,
            other => {
                problems.push_with_help(
                    s.span(),
                    format!("unknown isolation `{other}`"),
                    "isolation: none, serialize (one run per repository at a time), worktree (a worktree per run)",
                );
                Isolation::Serialize
            }
        },
    };
    let ignore = t.strings("ignore").unwrap_or_default().into_iter().map(Spanned::into_inner).collect();
    Some(CommandSpec {
        program: program?.into_inner(),
        args: args.into_iter().map(Spanned::into_inner).collect(),
        env: env.into_iter().map(|(k, v)| (k.into_inner(), v.into_inner())).collect::<BTreeMap<_, _>>(),
        pass_env,
        setup,
        cleanup,
        output,
        isolation,
        ignore,
        inputs,
        endpoint: endpoint.map(Spanned::into_inner),
        base_dir: base_dir.to_path_buf(),
    })
}

const STDERR_TAIL: usize = 2000;

/// The most bytes runner reads of a child's stdout, and of its stderr: a child that prints
/// more is killed with its whole process group as it does, and its run fails.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// The bytes of a child's stderr kept for messages: its last ones.
const STDERR_KEPT: usize = 64 * 1024;

/// stet's default Ollama address (CONTRACTS: `STET_OLLAMA_BASE_URL`).
const STET_DEFAULT_OLLAMA_URL: &str = "http://localhost:11434";

/// How long runner waits for a TCP connection when it probes an endpoint after exit code 2.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The name under which stet's history of a private run directory is kept.
pub const HISTORY_ATTACHMENT: &str = "history.jsonl";

pub struct CommandReviewer {
    spec: CommandSpec,
    /// Content hashes of the program (when it is a path) and of the declared `inputs`, for
    /// programs that are not templates; templated programs are hashed per cell.
    files: BTreeMap<String, String>,
    /// The most bytes read of each of a child's stdout and stderr ([`MAX_OUTPUT_BYTES`]).
    output_limit: usize,
}

/// What one child process did.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl CommandReviewer {
    pub fn new(spec: CommandSpec) -> Self {
        let mut files = BTreeMap::new();
        for input in &spec.inputs {
            files.insert(format!("input:{input}"), hash_file(&absolute(&crate::config::resolve_path(&spec.base_dir, input))));
        }
        if !spec.program.contains("{{") {
            if let Some(path) = program_path(&spec.base_dir, &spec.program) {
                files.insert("program".into(), hash_file(&path));
            }
        }
        Self { spec, files, output_limit: MAX_OUTPUT_BYTES }
    }

    /// Values from runner's environment the child receives; kept out of keys and records.
    fn passed_env(&self) -> Vec<(String, String)> {
        self.spec.pass_env.iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.clone(), v))).collect()
    }

    /// The program as the child is started: a path (`./x.py`, `bin/tool`) resolves against the
    /// manifest's directory, as documented; a bare name is looked up through `PATH`.
    fn resolve(&self, program: &str) -> String {
        program_path(&self.spec.base_dir, program).map(|p| p.display().to_string()).unwrap_or_else(|| program.to_string())
    }

    /// The environment every child of a run gets: nothing of runner's own but `PATH`, the
    /// locale, the run's `HOME`, the manifest's `env` and `pass-env`.
    fn child_env(&self, vars: &BTreeMap<String, serde_json::Value>, home: &Path) -> Result<BTreeMap<String, String>, ReviewError> {
        let mut env = base_env(home);
        for (k, v) in &self.spec.env {
            env.insert(k.clone(), template::render(v, vars).map_err(ReviewError::failed)?);
        }
        env.extend(self.passed_env());
        Ok(env)
    }

    /// The model server a run talks to: `endpoint` when the manifest sets it, else stet's
    /// `STET_OPENAI_BASE_URL` (with `STET_PROVIDER=openai`) or `STET_OLLAMA_BASE_URL` (default
    /// `http://localhost:11434`) when the program is stet or the environment configures one.
    fn endpoint_in(&self, env: &BTreeMap<String, String>, vars: &BTreeMap<String, serde_json::Value>) -> Option<String> {
        if let Some(t) = &self.spec.endpoint {
            return template::render(t, vars).ok().filter(|e| !e.trim().is_empty());
        }
        let get = |k: &str| env.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let provider = get("STET_PROVIDER").map(|p| p.to_ascii_lowercase());
        if provider.as_deref() == Some("openai") {
            return get("STET_OPENAI_BASE_URL");
        }
        let is_stet = Path::new(&self.spec.program).file_name().is_some_and(|n| n == "stet");
        get("STET_OLLAMA_BASE_URL").or_else(|| (is_stet || provider.is_some()).then(|| STET_DEFAULT_OLLAMA_URL.to_string()))
    }

    async fn spawn(&self, argv: &[String], env: &BTreeMap<String, String>, dir: &Path, timeout: Duration) -> Result<Finished, ReviewError> {
        let (program, args) = argv.split_first().ok_or_else(|| ReviewError::failed("empty command"))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(dir)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| ReviewError::failed(format!("failed to start `{program}` in `{}`: {e}", dir.display())))?;
        let group = ProcessGroup(child.id().map(|id| id as i32));
        let (stdout_pipe, stderr_pipe) = (child.stdout.take(), child.stderr.take());
        let limit = self.output_limit;
        let mut stderr = Tail::new(STDERR_KEPT);
        let run = async {
            let wait = async { child.wait().await.map_err(Ended::Wait) };
            let read_out = async {
                let mut out = Vec::new();
                read_bounded(stdout_pipe, limit, "stdout", |bytes| out.extend_from_slice(bytes)).await?;
                Ok(out)
            };
            let read_err = read_bounded(stderr_pipe, limit, "stderr", |bytes| stderr.push(bytes));
            tokio::try_join!(wait, read_out, read_err)
        };
        let ended = tokio::time::timeout(timeout, run).await;
        let stderr = String::from_utf8_lossy(&stderr.into_bytes()).into_owned();
        match ended {
            Ok(Ok((status, out, ()))) => {
                group.disarm();
                Ok(Finished { code: status.code(), stdout: String::from_utf8_lossy(&out).into_owned(), stderr })
            }
            Ok(Err(Ended::Wait(e))) => Err(ReviewError::failed(format!("failed to wait for `{program}`: {e}"))),
            Ok(Err(Ended::TooMuch(stream))) => {
                // Dropping `group` kills the whole process group at once.
                drop(group);
                Err(ReviewError::Failed {
                    message: format!(
                        "`{program}` printed more than {} on {stream}, the most runner reads: it and every process of its group were killed",
                        size_text(limit)
                    ),
                    stderr_tail: super::tail(&stderr, STDERR_TAIL),
                })
            }
            // Dropping `group` kills the whole process group.
            Err(_) => Err(ReviewError::Timeout { seconds: timeout.as_secs_f64() }),
        }
    }

    /// Runs setup or cleanup commands. A program written `-name` may fail without failing the run.
    async fn run_hooks(
        &self,
        hooks: &[Vec<String>],
        vars: &BTreeMap<String, serde_json::Value>,
        env: &BTreeMap<String, String>,
        dir: &Path,
        timeout: Duration,
        phase: &str,
    ) -> Result<(), ReviewError> {
        for hook in hooks {
            let mut argv = render_all(hook, vars)?;
            let tolerate = argv.first().is_some_and(|p| p.starts_with('-'));
            if tolerate {
                argv[0] = argv[0][1..].to_string();
            }
            argv[0] = self.resolve(&argv[0]);
            let done = self.spawn(&argv, env, dir, timeout).await?;
            if done.code != Some(0) && !tolerate {
                return Err(ReviewError::Failed {
                    message: format!("{phase} command `{}` exited with {}", argv.join(" "), code_text(done.code)),
                    stderr_tail: super::tail(&done.stderr, STDERR_TAIL),
                });
            }
        }
        Ok(())
    }

    /// Runs one review in `dir`. `private`: `dir` is this run's own copy or worktree of the
    /// subject's repository, removed afterwards.
    async fn review_in(&self, job: &ReviewJob, dir: &Path, private: bool) -> Result<ReviewOutput, ReviewError> {
        let home = crate::scratch::tempdir("runner-home-").map_err(|e| ReviewError::failed(format!("cannot create the run's HOME: {e}")))?;
        let vars = template::variables(&job.cell, job.repeat, Some((&job.subject, &dir.display().to_string())));
        let mut argv = render_all(&std::iter::once(self.spec.program.clone()).chain(self.spec.args.iter().cloned()).collect::<Vec<_>>(), &vars)?;
        argv[0] = self.resolve(&argv[0]);
        let env = self.child_env(&vars, home.path())?;
        ignore_paths(dir, &self.spec.ignore)?;
        self.run_hooks(&self.spec.setup, &vars, &env, dir, job.timeout, "setup").await?;
        let state = state_dir(dir, &env);
        let session_before = file_state(&state.join("session.json"));
        let started = Instant::now();
        let result = self.spawn(&argv, &env, dir, job.timeout).await;
        let wall_ms = started.elapsed().as_millis() as u64;
        // Usage first: stet's `finish` (the usual cleanup) deletes `session.json`.
        let hunks = crate::subject::diff::hunks(&job.subject.files).count() as u32;
        let mut cost = Cost { wall_ms, hunks, ..Cost::default() };
        read_stet_usage(&state, session_before.as_ref(), &mut cost);
        let cleanup = self.run_hooks(&self.spec.cleanup, &vars, &env, dir, job.timeout, "cleanup").await;
        let mut attachments = BTreeMap::new();
        if private && state.starts_with(dir) {
            if let Ok(history) = std::fs::read_to_string(state.join("history.jsonl")) {
                attachments.insert(HISTORY_ATTACHMENT.to_string(), history);
            }
        }
        let done = result?;
        match done.code {
            Some(0) => {}
            Some(2) => return Err(self.exit_2(&argv[0], self.endpoint_in(&env, &vars), &done).await),
            code => {
                return Err(ReviewError::Failed {
                    message: format!("`{}` exited with {}", argv.join(" "), code_text(code)),
                    stderr_tail: super::tail(&done.stderr, STDERR_TAIL),
                })
            }
        }
        cleanup?;
        let mut parsed = parse_stet_output(&done.stdout).map_err(|e| ReviewError::Failed {
            message: format!("could not read `{}` output: {e}", argv[0]),
            stderr_tail: super::tail(&done.stderr, STDERR_TAIL),
        })?;
        // Tokens the output states win over stet's session file.
        if let Some(usage) = parsed.usage {
            cost.prompt_tokens = usage.prompt_tokens.or(cost.prompt_tokens);
            cost.completion_tokens = usage.completion_tokens.or(cost.completion_tokens);
        }
        let mut raw = done.stdout;
        if private {
            // `cursor_uri`s point at the subject's repository, not at the removed run directory,
            // spelled as stet spells its own: cleaned (`exp/../repo` is `repo`).
            let subject_repo = super::lexical_clean(&absolute(&job.subject.repo_dir));
            for f in &mut parsed.findings {
                if let Some(uri) = f.cursor_uri.as_mut() {
                    *uri = rebase_uri(uri, dir, &subject_repo);
                }
            }
            raw = rebase_text(&raw, dir, &subject_repo);
            for a in attachments.values_mut() {
                *a = rebase_text(a, dir, &subject_repo);
            }
        }
        let mut provenance = BTreeMap::new();
        if let Some(note) = openai_temperature_note(&env) {
            provenance.insert("stet_temperature".to_string(), serde_json::Value::String(note));
        }
        Ok(ReviewOutput { findings: parsed.findings, raw, cost, provenance, schema_problems: parsed.schema_problems, attachments, ..ReviewOutput::default() })
    }

    /// Exit code 2: unreachable, timed out, or an HTTP error. Runner probes the endpoint to tell.
    async fn exit_2(&self, program: &str, endpoint: Option<String>, done: &Finished) -> ReviewError {
        let stderr_tail = super::tail(&done.stderr, STDERR_TAIL);
        let Some(url) = endpoint else {
            return ReviewError::Unreachable {
                message: format!(
                    "`{program}` exited with 2 (its model server is unreachable, timed out, or refused the request; set `endpoint` so runner can tell which)"
                ),
                stderr_tail,
            };
        };
        if probe(&url).await {
            let cause = exit_2_cause(&done.stderr);
            ReviewError::Failed { message: format!("`{program}` exited with 2, but its model server at {url} accepts connections: {cause}"), stderr_tail }
        } else {
            ReviewError::Unreachable { message: format!("`{program}` exited with 2 and its model server at {url} does not accept connections"), stderr_tail }
        }
    }

    /// Whether the reviewer runs stet: a program named `stet`, or `STET_*` variables set or passed.
    fn drives_stet(&self) -> bool {
        Path::new(&self.spec.program).file_name().is_some_and(|n| n == "stet")
            || self.spec.env.keys().chain(&self.spec.pass_env).any(|name| name.starts_with("STET_"))
    }

    /// Content hashes for the key: the program file (when a path) and the declared inputs.
    fn file_hashes(&self, cell: &Cell) -> BTreeMap<String, String> {
        let mut files = self.files.clone();
        if self.spec.program.contains("{{") {
            if let Ok(program) = template::render(&self.spec.program, &template::variables(cell, 0, None)) {
                if let Some(path) = program_path(&self.spec.base_dir, &program) {
                    files.insert("program".into(), hash_file(&path));
                }
            }
        }
        files
    }
}

impl Reviewer for CommandReviewer {
    fn kind(&self) -> &'static str {
        "command"
    }

    fn fingerprint(&self, cell: &Cell) -> serde_json::Value {
        // Templates, not rendered values: the cell's values are hashed beside them, and
        // rendering would bring in paths. Secret-looking variables are left out.
        let env: BTreeMap<&String, &String> = self.spec.env.iter().filter(|(k, _)| !is_secret_name(k)).collect();
        let mut value = serde_json::json!({
            "program": self.spec.program,
            "args": self.spec.args,
            "env": env,
            "setup": self.spec.setup,
            "output": self.spec.output,
        });
        // The content of a program given as a path and of declared inputs (only when there
        // are such files, so a program found through PATH keeps the keys it had).
        let files = self.file_hashes(cell);
        if !files.is_empty() {
            value["files"] = serde_json::json!(files);
        }
        // stet's prompt names the branch, `HEAD` in a detached worktree: a worktree run is keyed
        // apart. Only then, so the default (`serialize`) and `none` keep the keys they had.
        if self.spec.isolation == Isolation::Worktree && self.drives_stet() {
            value["isolation"] = serde_json::json!(self.spec.isolation);
        }
        value
    }

    fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self.passed_env().into_iter().flat_map(|(_, v)| secret_parts_of_url_value(&v)).collect();
        for (key, value) in &self.spec.env {
            if is_secret_name(key) && !value.contains("{{") {
                out.push(value.clone());
            }
        }
        out
    }

    fn endpoint(&self, job: &ReviewJob) -> Option<String> {
        let vars = template::variables(&job.cell, job.repeat, Some((&job.subject, &job.subject.repo_dir.display().to_string())));
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in &self.spec.env {
            env.insert(k.clone(), template::render(v, &vars).ok()?);
        }
        env.extend(self.passed_env());
        self.endpoint_in(&env, &vars)
    }

    fn preflight(&self) -> BoxFuture<'_, Result<(), ReviewError>> {
        Box::pin(async move { self.setup_problem().map_or(Ok(()), |problem| Err(ReviewError::failed(problem))) })
    }

    fn setup_problem(&self) -> Option<String> {
        program_problem(&self.spec)
    }

    fn exclusive_scope(&self, job: &ReviewJob) -> Option<String> {
        // A runner-materialized repository is reviewed in a private copy per run.
        (self.spec.isolation == Isolation::Serialize && !is_materialized(&job.subject.repo_dir)).then(|| job.subject.repo_dir.display().to_string())
    }

    fn exclusive_hold<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<Option<super::Hold>, ReviewError>> {
        Box::pin(async move {
            let repo = absolute(&job.subject.repo_dir);
            if self.spec.isolation != Isolation::Serialize || is_materialized(&repo) {
                return Ok(None);
            }
            let turn = DirLock::take(&repo).await.map_err(|e| ReviewError::failed(format!("cannot lock `{}` to review in it alone: {e}", repo.display())))?;
            Ok(Some(Box::new(turn) as super::Hold))
        })
    }

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            let repo = absolute(&job.subject.repo_dir);
            if is_materialized(&repo) {
                let copy = PrivateCopy::new(&repo, &self.spec.ignore)?;
                let result = self.review_in(job, &copy.path, true).await;
                drop(copy);
                return result;
            }
            match self.spec.isolation {
                Isolation::Worktree => {
                    // Adding and removing wait their turn (`WORKTREE_ADMIN`): on a blocking
                    // thread, so the wait holds no async worker.
                    let (at, commit) = (repo.clone(), job.subject.head_sha.clone());
                    let worktree = tokio::task::spawn_blocking(move || Worktree::add(&at, &commit)).await.map_err(|e| ReviewError::failed(e.to_string()))??;
                    let result = self.review_in(job, &worktree.path, true).await;
                    let _ = tokio::task::spawn_blocking(move || drop(worktree)).await;
                    result
                }
                Isolation::None => {
                    check_head(&repo, &job.subject.head_sha)?;
                    self.review_in(job, &repo, false).await
                }
                Isolation::Serialize => {
                    // The engine's scope keeps this process's runs in the repository apart,
                    // and its hold (`exclusive_hold`, taken before the run's time starts) keeps
                    // other processes' runs out; a caller without the hold takes the lock here.
                    let _turn = match DirLock::try_take(&repo) {
                        Ok(Some(turn)) => Some(turn),
                        _ => None,
                    };
                    check_head(&repo, &job.subject.head_sha)?;
                    self.review_in(job, &repo, false).await
                }
            }
        })
    }
}

/// A command reviewer reviews the checked-out commit: refuse when it is not `[target] head`.
fn check_head(repo: &Path, head_sha: &str) -> Result<(), ReviewError> {
    let checked_out = git(repo, &["rev-parse", "HEAD"]).map_err(|e| ReviewError::failed(e.to_string()))?;
    let checked_out = checked_out.trim();
    if checked_out == head_sha {
        return Ok(());
    }
    Err(ReviewError::failed(format!(
        "`{}` has {checked_out} checked out, but this run reviews `[target] head` = {head_sha}: a command reviewer reviews the checked-out commit. \
         Set `isolation = \"worktree\"` in the reviewer's table to review {head_sha} in a worktree of its own, or check it out first",
        repo.display()
    )))
}

/// A directory runner built itself (a corpus case, an eval clone): it carries a marker.
fn is_materialized(repo: &Path) -> bool {
    runner_subject::subject::staging::is_ready(repo)
}

/// The environment a child starts from: `PATH`, the locale and `HOME`.
fn base_env(home: &Path) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars().filter(|(k, _)| k == "LANG" || k == "LC_ALL" || k.starts_with("LC_")).collect();
    env.insert("PATH".into(), std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()));
    env.insert("HOME".into(), home.display().to_string());
    env
}

/// An absolute path, without resolving symlinks.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A program written as a path, resolved against the manifest's directory; `None` for a bare
/// name (looked up through `PATH`).
fn program_path(base_dir: &Path, program: &str) -> Option<PathBuf> {
    if !program.contains('/') {
        return None;
    }
    let path = Path::new(program);
    Some(if path.is_absolute() { path.to_path_buf() } else { absolute(&crate::config::resolve_path(base_dir, program)) })
}

fn hash_file(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => format!("blake3:{}", blake3::hash(&bytes).to_hex()),
        Err(_) => "missing".to_string(),
    }
}

/// Where stet keeps its state for this run: `STET_STATE_DIR` (relative to the run's
/// directory) or `<dir>/.review`.
fn state_dir(dir: &Path, env: &BTreeMap<String, String>) -> PathBuf {
    match env.get("STET_STATE_DIR").filter(|s| !s.is_empty()) {
        Some(s) => dir.join(s),
        None => dir.join(".review"),
    }
}

/// A file's modification time and content, to tell whether a run wrote it.
fn file_state(path: &Path) -> Option<(Option<SystemTime>, Vec<u8>)> {
    let bytes = std::fs::read(path).ok()?;
    Some((std::fs::metadata(path).ok().and_then(|m| m.modified().ok()), bytes))
}

/// Probes an http(s) URL's host and port with a TCP connection.
async fn probe(url: &str) -> bool {
    let Some((scheme, rest)) = url.trim().split_once("://") else { return false };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let default_port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, p) = v6.split_once(']').unwrap_or((v6, ""));
        (h.to_string(), p.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(default_port))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().unwrap_or(default_port)),
            None => (hostport.to_string(), default_port),
        }
    };
    if host.is_empty() {
        return false;
    }
    matches!(tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect((host.as_str(), port))).await, Ok(Ok(_)))
}

/// stet's openai provider drops `temperature: 0` (Go's `omitempty`): say so in provenance.
fn openai_temperature_note(env: &BTreeMap<String, String>) -> Option<String> {
    let provider = env.get("STET_PROVIDER")?.trim().to_ascii_lowercase();
    let temperature: f64 = env.get("STET_TEMPERATURE")?.trim().parse().ok()?;
    (provider == "openai" && temperature == 0.0)
        .then(|| "STET_TEMPERATURE=0 was not sent: stet's openai provider omits a zero temperature, so the server's default applied".to_string())
}

/// What ended stet with exit 2 against a server that accepts connections, from its stderr:
/// the HTTP status it names (stet reports a 5xx, after its retries, as "unreachable", a 4xx
/// as a bad request), or a timeout.
fn exit_2_cause(stderr: &str) -> String {
    let status = stderr.match_indices("HTTP ").find_map(|(at, _)| {
        let digits = stderr.get(at + 5..at + 8)?;
        let after = stderr[at + 8..].chars().next();
        (digits.bytes().all(|b| b.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())).then(|| digits.to_string())
    });
    let lower = stderr.to_ascii_lowercase();
    match status {
        Some(code) if code.starts_with('4') => {
            format!("the server refused the request with HTTP {code} (e.g. a hunk larger than the context or an unknown model)")
        }
        Some(code) if code.starts_with('5') => format!("the server failed the request with HTTP {code}, a server error (stet retried it and gave up)"),
        Some(code) => format!("the server answered HTTP {code}"),
        None if ["deadline exceeded", "timeout exceeded", "timed out", "i/o timeout"].iter().any(|t| lower.contains(t)) => {
            "a request to it timed out".to_string()
        }
        None if lower.contains("unreachable") => {
            "stet could not reach it during the run, though it answers now (it may have restarted or been overloaded)".to_string()
        }
        None => "the request failed (an HTTP error or a timeout; stet's stderr below says which)".to_string(),
    }
}

/// `file://<dir>/x#L1` → `file://<repo>/x#L1` (also for `dir`'s canonical spelling).
fn rebase_uri(uri: &str, dir: &Path, repo: &Path) -> String {
    for from in dir_spellings(dir) {
        if let Some(rest) = uri.strip_prefix(&format!("file://{from}")) {
            if rest.is_empty() || rest.starts_with('/') || rest.starts_with('#') {
                return format!("file://{}{rest}", repo.display());
            }
        }
    }
    uri.to_string()
}

fn rebase_text(text: &str, dir: &Path, repo: &Path) -> String {
    let mut out = text.to_string();
    for from in dir_spellings(dir) {
        out = out.replace(&from, &repo.display().to_string());
    }
    out
}

fn dir_spellings(dir: &Path) -> Vec<String> {
    let mut out = vec![dir.display().to_string()];
    if let Ok(c) = dir.canonicalize() {
        let c = c.display().to_string();
        if !out.contains(&c) {
            // The longer spelling first, so it is not half-replaced by the shorter one.
            out.push(c);
            out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }
    out
}

/// Why a command reviewer's program cannot be started, saying which: not found (a path,
/// relative to the manifest's directory, or a bare name through `PATH`), a directory, or found
/// but not executable. `None` for a templated program, which is known only per cell.
pub fn program_problem(spec: &CommandSpec) -> Option<String> {
    if spec.program.contains("{{") {
        return None;
    }
    let program = &spec.program;
    match program_path(&spec.base_dir, program) {
        Some(path) => match std::fs::metadata(&path) {
            Err(_) => Some(format!("reviewer program `{program}` was not found (paths are relative to the manifest's directory: `{}`)", path.display())),
            Ok(meta) if meta.is_dir() => Some(format!("reviewer program `{program}` is a directory (`{}`), not a program", path.display())),
            Ok(_) if !is_executable(&path) => {
                Some(format!("reviewer program `{program}` is not executable (`{}`): make it so with `chmod +x`", path.display()))
            }
            Ok(_) => None,
        },
        None => {
            let dirs: Vec<PathBuf> = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
            let candidates: Vec<PathBuf> = dirs.iter().map(|d| d.join(program)).filter(|p| p.is_file()).collect();
            if candidates.iter().any(|p| is_executable(p)) {
                return None;
            }
            Some(match candidates.first() {
                Some(found) => format!("reviewer program `{program}` in PATH (`{}`) is not executable", found.display()),
                None => format!("reviewer program `{program}` was not found in PATH"),
            })
        }
    }
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
    let common = git_common_dir(dir)?;
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

/// stet keeps token counts in `.review/session.json`; read them only when this run wrote the
/// file (it differs from what was there before the run), so a stale session left in a shared
/// repository never lends its counts to another run.
fn read_stet_usage(state: &Path, before: Option<&(Option<SystemTime>, Vec<u8>)>, cost: &mut Cost) {
    let Some(now) = file_state(&state.join("session.json")) else { return };
    if before.is_some_and(|b| *b == now) {
        return;
    }
    let Ok(session) = serde_json::from_slice::<serde_json::Value>(&now.1) else { return };
    cost.prompt_tokens = session.get("last_run_prompt_tokens").and_then(|v| v.as_u64()).or(cost.prompt_tokens);
    cost.completion_tokens = session.get("last_run_completion_tokens").and_then(|v| v.as_u64()).or(cost.completion_tokens);
    cost.eval_ms = session.get("last_run_eval_duration_ns").and_then(|v| v.as_f64()).map(|ns| ns / 1e6).or(cost.eval_ms);
}

/// Why reading a child's output stopped before it ended.
enum Ended {
    /// Waiting for the child failed.
    Wait(std::io::Error),
    /// The stream named printed more than the limit.
    TooMuch(&'static str),
}

/// Reads `pipe` to its end, handing each piece to `keep`, and stops with [`Ended::TooMuch`]
/// as soon as more than `limit` bytes came. A read error ends the stream.
async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(pipe: Option<R>, limit: usize, stream: &'static str, mut keep: impl FnMut(&[u8])) -> Result<(), Ended> {
    let Some(mut pipe) = pipe else { return Ok(()) };
    let mut piece = vec![0u8; 64 * 1024];
    let mut total = 0usize;
    loop {
        let n = match pipe.read(&mut piece).await {
            Ok(0) | Err(_) => return Ok(()),
            Ok(n) => n,
        };
        total += n;
        if total > limit {
            return Err(Ended::TooMuch(stream));
        }
        keep(&piece[..n]);
    }
}

/// The last bytes of a stream, at most `max` of them once taken.
struct Tail {
    max: usize,
    bytes: Vec<u8>,
}

impl Tail {
    fn new(max: usize) -> Self {
        Self { max, bytes: Vec::new() }
    }

    fn push(&mut self, piece: &[u8]) {
        self.bytes.extend_from_slice(piece);
        // Trimmed once it holds twice what is kept: trimming costs a constant per byte read.
        if self.bytes.len() > 2 * self.max {
            self.bytes.drain(..self.bytes.len() - self.max);
        }
    }

    fn into_bytes(mut self) -> Vec<u8> {
        if self.bytes.len() > self.max {
            self.bytes.drain(..self.bytes.len() - self.max);
        }
        self.bytes
    }
}

/// `n` bytes as whole MiB when they are, else as bytes.
fn size_text(n: usize) -> String {
    if n % (1024 * 1024) == 0 {
        format!("{} MiB", n / (1024 * 1024))
    } else {
        format!("{n} bytes")
    }
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

/// A private copy of a runner-materialized repository in a temporary directory, removed when
/// dropped. Git's records of where the repository came from (`FETCH_HEAD`, reflogs) and the
/// paths the reviewer writes (`ignore`, e.g. a stale `.review/`) are not copied.
struct PrivateCopy {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl PrivateCopy {
    fn new(repo: &Path, ignore: &[String]) -> Result<Self, ReviewError> {
        let dir = crate::scratch::tempdir("runner-run-").map_err(|e| ReviewError::failed(format!("cannot create a run directory: {e}")))?;
        let path = dir.path().join("repo");
        let skip: Vec<PathBuf> = ignore
            .iter()
            .map(|p| PathBuf::from(p.trim_end_matches('/')))
            .chain([".git/FETCH_HEAD", ".git/logs", ".git/runner-ready"].map(PathBuf::from))
            .collect();
        copy_tree(repo, &path, Path::new(""), &skip).map_err(|e| ReviewError::failed(format!("cannot copy `{}` into a run directory: {e}", repo.display())))?;
        Ok(Self { path, _dir: dir })
    }
}

/// Copies a tree without following symlinks, skipping the relative paths in `skip`.
fn copy_tree(from: &Path, to: &Path, rel: &Path, skip: &[PathBuf]) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let rel = rel.join(&name);
        if skip.contains(&rel) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&src, &dst, &rel, skip)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// An advisory `flock(2)` on a directory, taken through a read-only descriptor of it and held
/// until dropped, or until the process ends however it ends. Nothing is written there.
/// Locks taken through two descriptors exclude each other, in one process or in two.
struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    fn open(dir: &Path) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC).open(dir)
    }

    /// `flock` with `op`; `false` when `LOCK_NB` was given and another holds the lock.
    fn flock(file: &std::fs::File, op: libc::c_int) -> std::io::Result<bool> {
        use std::os::fd::AsRawFd;
        loop {
            // SAFETY: flock on a descriptor this process owns; no memory is shared with it.
            if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
                return Ok(true);
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EWOULDBLOCK) => return Ok(false),
                _ => return Err(e),
            }
        }
    }

    /// The lock, when no one else holds it.
    fn try_take(dir: &Path) -> std::io::Result<Option<Self>> {
        let file = Self::open(dir)?;
        Ok(Self::flock(&file, libc::LOCK_EX | libc::LOCK_NB)?.then_some(Self { _file: file }))
    }

    /// Waits for the lock, blocking the thread: for blocking threads only.
    fn take_blocking(dir: &Path) -> std::io::Result<Self> {
        let file = Self::open(dir)?;
        Self::flock(&file, libc::LOCK_EX)?;
        Ok(Self { _file: file })
    }

    /// Waits for the lock without holding an async worker: on a thread of its own, blocked in
    /// `flock` so the kernel wakes it as the holder lets go (a waiter that polled could lose
    /// every turn to a holder that takes the lock again at once). The thread is not the
    /// runtime's, so an exit never waits for it; if the caller stops waiting, the lock is let
    /// go as soon as the thread gets it.
    async fn take(dir: &Path) -> std::io::Result<Self> {
        if let Some(lock) = Self::try_take(dir)? {
            return Ok(lock);
        }
        let (send, taken) = tokio::sync::oneshot::channel();
        let dir = dir.to_path_buf();
        std::thread::Builder::new().name("runner-dir-lock".into()).spawn(move || {
            let _ = send.send(Self::take_blocking(&dir));
        })?;
        taken.await.map_err(|_| std::io::Error::other("the thread waiting for the lock ended without it"))?
    }
}

/// Held while git adds or removes a worktree. `git worktree add` reads every other
/// worktree's admin files, and fails on one another add has created but not yet filled
/// ("failed to read .git/worktrees/…/commondir"): adds and removes on a repository take turns,
/// in this process by this mutex and across processes by a [`DirLock`] on the repository's
/// git common directory. They take milliseconds; the reviews in the worktrees still run side
/// by side.
static WORKTREE_ADMIN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How often an add that met another program's half-made worktree is tried again.
const WORKTREE_ADD_RETRIES: usize = 3;

/// How often a worktree's removal is tried before its directory is deleted instead.
const WORKTREE_REMOVE_TRIES: usize = 3;

/// The prefix of the directories runner's worktrees are made in, and of the worktrees' names.
const WORKTREE_PREFIX: &str = "runner-worktree-";

/// A detached worktree at a commit, removed when dropped.
struct Worktree {
    repo: PathBuf,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

/// The repository's git common directory (`.git` of the main worktree), where every
/// worktree's admin files are.
fn git_common_dir(repo: &Path) -> Result<PathBuf, ReviewError> {
    let common = git(repo, &["rev-parse", "--git-common-dir"]).map_err(|e| ReviewError::failed(e.to_string()))?;
    let common = PathBuf::from(common.trim());
    Ok(if common.is_absolute() { common } else { repo.join(common) })
}

/// The turns at a repository's worktree admin files: this process's, then every process's
/// (or why it could not be taken).
fn worktree_turn(repo: &Path) -> (std::sync::MutexGuard<'static, ()>, Result<DirLock, ReviewError>) {
    let own = WORKTREE_ADMIN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let shared = git_common_dir(repo).and_then(|common| {
        DirLock::take_blocking(&common).map_err(|e| ReviewError::failed(format!("cannot lock `{}` to add or remove a worktree: {e}", common.display())))
    });
    (own, shared)
}

/// Whether `path` is where runner makes a worktree: `…/runner-worktree-X/runner-worktree-X`.
fn is_runner_worktree(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str());
    let parent = path.parent().and_then(Path::file_name).and_then(|n| n.to_str());
    matches!((name, parent), (Some(n), Some(p)) if n.starts_with(WORKTREE_PREFIX) && n == p)
}

/// Removes the worktrees of `repo` that runner made and whose directory is gone — a runner
/// killed before it removed its worktree, its scratch directory swept since — as git's own
/// `worktree prune` would, but only those: a worktree of anyone else, there or not, is left as
/// it is, and so is every worktree whose directory exists. Run while holding
/// [`worktree_turn`]. Best effort: what cannot be removed is left for the next time.
fn prune_stale(repo: &Path) {
    let Ok(list) = git(repo, &["worktree", "list", "--porcelain"]) else { return };
    for block in list.split("\n\n") {
        let Some(path) = block.lines().find_map(|l| l.strip_prefix("worktree ")) else { continue };
        let path = Path::new(path);
        if is_runner_worktree(path) && !path.exists() {
            // Twice forced: removed even if the reviewer locked it.
            let _ = git(repo, &["worktree", "remove", "--force", "--force", &path.display().to_string()]);
        }
    }
    // An entry half made by an add that was killed before git wrote its `gitdir` file names no
    // worktree, so git lists none: runner's own (by name) go, under the shared turn, so no
    // add in flight is mid-way.
    let Ok(common) = git_common_dir(repo) else { return };
    let Ok(entries) = std::fs::read_dir(common.join("worktrees")) else { return };
    for entry in entries.flatten() {
        let runners = entry.file_name().to_str().is_some_and(|n| n.starts_with(WORKTREE_PREFIX));
        let half_made = entry.file_type().is_ok_and(|t| t.is_dir()) && std::fs::symlink_metadata(entry.path().join("gitdir")).is_err();
        if runners && half_made {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Worktree {
    fn add(repo: &Path, commit: &str) -> Result<Self, ReviewError> {
        let dir = crate::scratch::tempdir(WORKTREE_PREFIX).map_err(|e| ReviewError::failed(e.to_string()))?;
        // Git names the worktree's admin directory after the path's last component; a name
        // of its own keeps concurrent adds on one repository from racing for the same one.
        let name = dir.path().file_name().map_or_else(|| "tree".into(), |n| n.to_os_string());
        let path = dir.path().join(name);
        let (own_turn, shared_turn) = worktree_turn(repo);
        let shared_turn = shared_turn?;
        prune_stale(repo);
        let add = || git(repo, &["worktree", "add", "--detach", "--quiet", &path.display().to_string(), commit]);
        // Another program may be adding one too (git itself, outside runner's turns): its
        // half-written admin files are retried past, a few times.
        let mut added = add();
        for _ in 0..WORKTREE_ADD_RETRIES {
            match &added {
                Err(e) if e.to_string().contains(".git/worktrees/") && !path.exists() => {
                    std::thread::sleep(Duration::from_millis(50));
                    added = add();
                }
                _ => break,
            }
        }
        added.map_err(|e| ReviewError::failed(format!("failed to add a worktree: {e}")))?;
        drop((shared_turn, own_turn));
        Ok(Self { repo: repo.to_path_buf(), path, _dir: dir })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        // Without the shared turn (the common directory cannot be locked) the removal is still
        // tried: what it leaves, the next add prunes.
        let (_own_turn, _shared_turn) = worktree_turn(&self.repo);
        let path = self.path.display().to_string();
        for attempt in 0..WORKTREE_REMOVE_TRIES {
            if git(&self.repo, &["worktree", "remove", "--force", &path]).is_ok() {
                return;
            }
            if attempt + 1 < WORKTREE_REMOVE_TRIES {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // Git would not remove it: its directory goes, then its admin files as a stale one's.
        let _ = std::fs::remove_dir_all(&self.path);
        prune_stale(&self.repo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reviewer::command::OutputFormat;

    fn spec(program: &str, env: &[(&str, &str)]) -> CommandSpec {
        CommandSpec {
            program: program.into(),
            args: vec![],
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            pass_env: vec![],
            setup: vec![],
            cleanup: vec![],
            output: OutputFormat::Auto,
            isolation: Isolation::Serialize,
            ignore: vec![],
            inputs: vec![],
            endpoint: None,
            base_dir: PathBuf::from("/m"),
        }
    }

    fn endpoint(s: &CommandSpec) -> Option<String> {
        CommandReviewer::new(s.clone()).endpoint_in(&s.env, &BTreeMap::new())
    }

    #[test]
    fn worktrees_added_and_removed_at_once_on_one_repository_all_succeed() {
        use crate::subject::git::run_for_test;
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir");
        run_for_test(&repo, &["init", "-q"]);
        for i in 0..2 {
            std::fs::write(repo.join("a.txt"), format!("{i}\n")).expect("write");
            run_for_test(&repo, &["add", "a.txt"]);
            run_for_test(&repo, &["commit", "-q", "-m", &format!("c{i}")]);
        }
        let head = run_for_test(&repo, &["rev-parse", "HEAD"]);
        // Git alone fails one add in a few dozen here: another add's admin files half written.
        let failures: Vec<String> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..6)
                .map(|_| {
                    scope.spawn(|| {
                        (0..8)
                            .filter_map(|_| match Worktree::add(&repo, &head) {
                                Ok(tree) => (!tree.path.join("a.txt").is_file()).then(|| "no checkout".to_string()),
                                Err(e) => Some(e.to_string()),
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            threads.into_iter().flat_map(|t| t.join().unwrap_or_else(|_| vec!["panicked".into()])).collect()
        });
        assert!(failures.is_empty(), "{failures:?}");
        assert_eq!(run_for_test(&repo, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1, "every worktree removed");
    }

    /// A repository with two commits of `a.txt`, and its head.
    fn two_commit_repo(dir: &Path) -> (PathBuf, String) {
        use crate::subject::git::run_for_test;
        let repo = dir.join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir");
        run_for_test(&repo, &["init", "-q"]);
        for i in 0..2 {
            std::fs::write(repo.join("a.txt"), format!("{i}\n")).expect("write");
            run_for_test(&repo, &["add", "a.txt"]);
            run_for_test(&repo, &["commit", "-q", "-m", &format!("c{i}")]);
        }
        let head = run_for_test(&repo, &["rev-parse", "HEAD"]).trim().to_string();
        (repo, head)
    }

    /// The names of the repository's worktree admin directories.
    fn admin_entries(repo: &Path) -> BTreeSet<String> {
        match std::fs::read_dir(repo.join(".git/worktrees")) {
            Ok(entries) => entries.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect(),
            Err(_) => BTreeSet::new(),
        }
    }

    #[test]
    fn a_worktree_left_by_a_killed_runner_is_pruned_by_the_next_add_and_no_other() {
        use crate::subject::git::run_for_test;
        let dir = tempfile::tempdir().expect("tempdir");
        let (repo, head) = two_commit_repo(dir.path());
        // The user's own worktrees: one there, one whose directory is gone (on a drive not
        // mounted, say), and one whose name only looks like runner's.
        let (mine, gone, lookalike) = (dir.path().join("mine"), dir.path().join("gone"), dir.path().join("runner-worktree-x"));
        for tree in [&mine, &gone, &lookalike] {
            run_for_test(&repo, &["worktree", "add", "--detach", "--quiet", &tree.display().to_string(), &head]);
        }
        std::fs::remove_dir_all(&gone).expect("rm");
        std::fs::remove_dir_all(&lookalike).expect("rm");
        let users = admin_entries(&repo);
        assert_eq!(users.len(), 3, "{users:?}");
        // A runner killed with its worktree in place, then its scratch directory swept.
        let left = Worktree::add(&repo, &head).expect("add");
        let (left_name, scratch) = (left.path.file_name().expect("name").to_string_lossy().into_owned(), left._dir.path().to_path_buf());
        std::mem::forget(left);
        std::fs::remove_dir_all(&scratch).expect("sweep");
        assert!(admin_entries(&repo).contains(&left_name), "git still lists it");
        // And an entry an add killed mid-way left without its `gitdir` file.
        let common = git_common_dir(&repo).expect("common dir");
        std::fs::create_dir_all(common.join("worktrees/runner-worktree-half")).expect("mkdir");
        std::fs::write(common.join("worktrees/runner-worktree-half/HEAD"), &head).expect("write");
        // The next add prunes them, and only them.
        let next = Worktree::add(&repo, &head).expect("add");
        let next_name = next.path.file_name().expect("name").to_string_lossy().into_owned();
        let mut expected = users.clone();
        expected.insert(next_name);
        assert_eq!(admin_entries(&repo), expected, "the killed runner's entry is gone, the user's are all kept");
        drop(next);
        assert_eq!(admin_entries(&repo), users, "removed as it is dropped");
        assert!(run_for_test(&mine, &["status", "--porcelain"]).is_empty(), "the user's worktree still works");
    }

    #[tokio::test]
    async fn a_directory_lock_excludes_other_descriptors_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = DirLock::try_take(dir.path()).expect("open").expect("free");
        assert!(DirLock::try_take(dir.path()).expect("open").is_none(), "held through the first descriptor");
        let path = dir.path().to_path_buf();
        let waiter = tokio::spawn(async move { DirLock::take(&path).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished(), "a waiter waits while the first is held");
        drop(first);
        let second = waiter.await.expect("join").expect("taken once the first is dropped");
        assert!(DirLock::try_take(dir.path()).expect("open").is_none(), "held through the waiter's descriptor");
        // A waiter that stops waiting (its run cancelled) lets the lock go once it gets it.
        let gave_up = tokio::time::timeout(Duration::from_millis(50), DirLock::take(dir.path())).await;
        assert!(gave_up.is_err(), "no lock while the second is held");
        drop(second);
        let deadline = Instant::now() + Duration::from_secs(60);
        while DirLock::try_take(dir.path()).expect("open").is_none() {
            assert!(Instant::now() < deadline, "the lock stays taken after its waiter gave up");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(std::fs::read_dir(dir.path()).expect("read").count(), 0, "nothing written into the directory");
    }

    #[tokio::test]
    async fn a_serialized_review_waits_for_another_process_turn_in_the_repository() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (repo, head) = two_commit_repo(dir.path());
        let job = ReviewJob {
            cell: Cell { id: "c".into(), values: Default::default() },
            repeat: 1,
            subject: std::sync::Arc::new(crate::subject::Subject {
                id: "s".into(),
                repo_dir: repo.clone(),
                base_sha: head.clone(),
                head_sha: head,
                diff: String::new(),
                files: Vec::new(),
                stet_error: None,
                review_task: None,
                spec: None,
            }),
            timeout: Duration::from_secs(600),
            calls: None,
        };
        let reviewer = |isolation: Isolation| {
            let mut s = spec("sh", &[]);
            s.args = vec!["-c".into(), "echo '{\"findings\":[]}'".into()];
            s.isolation = isolation;
            CommandReviewer::new(s)
        };
        // Another process's lock on the repository, as its serialized review holds it.
        let held = DirLock::try_take(&repo).expect("open").expect("free");
        assert!(reviewer(Isolation::None).exclusive_hold(&job).await.expect("no hold").is_none(), "`none` holds nothing");
        reviewer(Isolation::None).review(&job).await.expect("`none` does not wait");
        // As the engine runs it: the hold first (before the run's time starts), then the review.
        let serialized = tokio::spawn(async move {
            let r = reviewer(Isolation::Serialize);
            let hold = r.exclusive_hold(&job).await?;
            let reviewed = r.review(&job).await.map(|o| o.findings.len());
            drop(hold);
            reviewed
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!serialized.is_finished(), "a serialized run waits for the repository");
        drop(held);
        assert_eq!(serialized.await.expect("join").expect("reviewed once the lock is free"), 0);
    }

    #[test]
    fn the_endpoint_follows_stets_variables_and_defaults() {
        assert_eq!(endpoint(&spec("stet", &[])).as_deref(), Some("http://localhost:11434"));
        assert_eq!(endpoint(&spec("/opt/bin/stet", &[("STET_OLLAMA_BASE_URL", "http://h:1")])).as_deref(), Some("http://h:1"));
        assert_eq!(endpoint(&spec("stet", &[("STET_PROVIDER", "OpenAI"), ("STET_OPENAI_BASE_URL", "http://o:2/v1")])).as_deref(), Some("http://o:2/v1"));
        assert_eq!(endpoint(&spec("./review.py", &[])), None, "unknown for another tool");
        let mut s = spec("./review.py", &[]);
        s.endpoint = Some("http://e:3".into());
        assert_eq!(endpoint(&s).as_deref(), Some("http://e:3"));
    }

    #[test]
    fn programs_given_as_paths_resolve_against_the_manifest_and_are_hashed() {
        let r = CommandReviewer::new(spec("./x.py", &[]));
        assert_eq!(r.resolve("./x.py"), "/m/x.py");
        assert_eq!(r.resolve("stet"), "stet");
        assert_eq!(r.files.get("program").map(String::as_str), Some("missing"));
        let cell = Cell { id: "c".into(), values: Default::default() };
        assert!(CommandReviewer::new(spec("stet", &[])).fingerprint(&cell).get("files").is_none(), "a PATH program keeps its old key");
    }

    #[test]
    fn cursor_uris_are_rebased_onto_the_subject_repository() {
        let (dir, repo) = (Path::new("/tmp/runner-run-x/repo"), Path::new("/w/.runner/cases/c1"));
        assert_eq!(rebase_uri("file:///tmp/runner-run-x/repo/a.py#L3", dir, repo), "file:///w/.runner/cases/c1/a.py#L3");
        assert_eq!(rebase_uri("file:///tmp/runner-run-x/repo2/a.py#L3", dir, repo), "file:///tmp/runner-run-x/repo2/a.py#L3");
        assert_eq!(rebase_uri("file:///elsewhere/a.py", dir, repo), "file:///elsewhere/a.py");
    }

    #[test]
    fn a_stet_worktree_run_is_keyed_apart_and_the_default_keeps_its_key() {
        let cell = Cell { id: "c".into(), values: Default::default() };
        let with = |program: &str, env: &[(&str, &str)], isolation: Isolation| {
            let mut s = spec(program, env);
            s.isolation = isolation;
            CommandReviewer::new(s).fingerprint(&cell)
        };
        // The fingerprint as it was before isolation could enter it: the default's key.
        let before = serde_json::json!({"program": "stet", "args": [], "env": {}, "setup": [], "output": "auto"});
        assert_eq!(with("stet", &[], Isolation::Serialize), before);
        assert_eq!(with("stet", &[], Isolation::None), before, "in place too: the checked-out branch");
        assert_eq!(with("stet", &[], Isolation::Worktree)["isolation"], "worktree");
        assert_eq!(with("./bin/review", &[("STET_MODEL", "m")], Isolation::Worktree)["isolation"], "worktree", "a wrapper that sets stet's variables");
        assert!(with("./review.py", &[], Isolation::Worktree).get("isolation").is_none(), "another tool keeps its key");
    }

    #[test]
    fn rebased_uris_are_clean_as_stets_own() {
        let (dir, repo) = (Path::new("/tmp/runner-worktree-x/tree"), crate::reviewer::lexical_clean(Path::new("/w/exp/../repo/./")));
        assert_eq!(rebase_uri("file:///tmp/runner-worktree-x/tree/calc.py#L10", dir, &repo), "file:///w/repo/calc.py#L10");
        assert_eq!(crate::reviewer::lexical_clean(Path::new("/a/../../b//c/..")), Path::new("/b"));
        assert_eq!(crate::reviewer::lexical_clean(Path::new("../a/./b/../c")), Path::new("../a/c"));
    }

    #[test]
    fn exit_2_says_what_stets_stderr_tells() {
        // The real stet's stderr when nothing listened (tests/fixtures/stet-real/); the server
        // accepting connections by the time runner probes it.
        let refused = "OpenAI-compat server (e.g. LM Studio) unreachable at http://127.0.0.1:18091/v1. Is the server running?\nDetails: ollama server unreachable\nGet \"http://127.0.0.1:18091/v1/models\": dial tcp 127.0.0.1:18091: connect: connection refused\n";
        assert!(exit_2_cause(refused).contains("could not reach it during the run"), "{}", exit_2_cause(refused));
        let five = "OpenAI-compat server (e.g. LM Studio) unreachable at http://h/v1. Is the server running?\nDetails: openai chat: ollama server unreachable: HTTP 503: loading model\n";
        assert_eq!(exit_2_cause(five), "the server failed the request with HTTP 503, a server error (stet retried it and gave up)");
        let four = "Ollama bad request at http://h:11434. ollama generate: bad request: HTTP 400: {\"error\":\"context too long\"}\n";
        assert!(exit_2_cause(four).starts_with("the server refused the request with HTTP 400"), "{}", exit_2_cause(four));
        let slow = "Ollama unreachable at http://h:11434. Is the server running? For local: ollama serve.\nDetails: ollama server unreachable\nPost \"http://h:11434/api/generate\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)\n";
        assert_eq!(exit_2_cause(slow), "a request to it timed out");
        assert!(!exit_2_cause("HTTP 5034 bytes").contains("5034") && !exit_2_cause("").contains("4xx"));
    }

    #[test]
    fn openai_temperature_zero_is_noted() {
        let env = |p: &str, t: &str| {
            [("STET_PROVIDER".to_string(), p.to_string()), ("STET_TEMPERATURE".to_string(), t.to_string())].into_iter().collect::<BTreeMap<_, _>>()
        };
        assert!(openai_temperature_note(&env("openai", "0")).is_some());
        assert!(openai_temperature_note(&env("openai", "0.0")).is_some());
        assert!(openai_temperature_note(&env("openai", "0.2")).is_none());
        assert!(openai_temperature_note(&env("ollama", "0")).is_none());
    }

    /// Whether process `pid` still runs (a zombie, killed and not yet reaped, does not).
    fn runs(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().to_string()))
            .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
    }

    #[tokio::test]
    async fn a_child_that_prints_without_end_is_killed_with_its_group_at_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut r = CommandReviewer::new(spec("sh", &[]));
        r.output_limit = 1024 * 1024;
        let env = base_env(dir.path());
        for (stream, redirect) in [("stdout", ""), ("stderr", " >&2")] {
            let pid_file = dir.path().join(format!("{stream}.pid"));
            // A process left in the background, then a writer that never stops; the timeout is
            // far off, so only the limit ends the run.
            let script = format!("sleep 600 & echo $! > '{}'; yes{redirect}", pid_file.display());
            let argv = ["sh".to_string(), "-c".to_string(), script];
            let e = match r.spawn(&argv, &env, dir.path(), Duration::from_secs(3600)).await {
                Ok(_) => panic!("{stream}: an endless writer ended"),
                Err(e) => e,
            };
            match &e {
                ReviewError::Failed { message, stderr_tail } => {
                    assert!(message.contains(&format!("printed more than 1 MiB on {stream}")) && message.contains("were killed"), "{message}");
                    if stream == "stderr" {
                        assert!(
                            stderr_tail.ends_with("y\n") && stderr_tail.len() <= STDERR_TAIL + 4,
                            "only the end of stderr is kept: {} bytes",
                            stderr_tail.len()
                        );
                    }
                }
                other => panic!("{stream}: {other}"),
            }
            let pid: i32 = std::fs::read_to_string(&pid_file).expect("pid file").trim().parse().expect("pid");
            let deadline = Instant::now() + Duration::from_secs(60);
            while runs(pid) {
                assert!(Instant::now() < deadline, "{stream}: the background process {pid} of the child's group still runs");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    #[test]
    fn a_tail_keeps_the_last_bytes() {
        let mut t = Tail::new(4);
        for piece in [&b"abc"[..], b"defgh", b"ij", b"", b"klmnopqrstu"] {
            t.push(piece);
            assert!(t.bytes.len() <= 2 * 4 + piece.len(), "bounded while reading");
        }
        assert_eq!(t.into_bytes(), b"rstu");
        let mut short = Tail::new(4);
        short.push(b"ab");
        assert_eq!(short.into_bytes(), b"ab");
    }

    #[tokio::test]
    async fn probing_tells_a_listening_endpoint_from_a_closed_one() {
        let live = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        assert!(probe(&format!("http://{}/v1", live.local_addr().expect("addr"))).await);
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        assert!(!probe(&format!("http://127.0.0.1:{port}")).await);
        assert!(!probe("not a url").await);
    }
}
