//! Reviewers: what turns one matrix cell on one subject into findings.
//!
//! One file per backend. The engine sees only the [`Reviewer`] trait, so tests drive it with
//! fake backends and every backend is scheduled, limited, timed and cached the same way.

pub mod bind;
pub mod build;
pub mod builtin;
pub mod command;
pub mod llm;
pub(crate) mod output_schema;
pub mod parse;
pub mod pipeline;
pub mod redact;
pub mod replay;
pub mod spec;
pub(crate) mod template;

#[cfg(test)]
mod no_leak;

use crate::finding::Finding;
use crate::matrix::Cell;
use crate::subject::Subject;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Everything one review run needs.
#[derive(Debug, Clone)]
pub struct ReviewJob {
    pub cell: Cell,
    pub repeat: u32,
    pub subject: Arc<Subject>,
    pub timeout: Duration,
    /// Where a reviewer that makes several calls per run (a pipeline) keeps each call's
    /// answer; `None`: nowhere (every call runs).
    pub calls: Option<Calls>,
}

/// A cache of one run's calls, each under its own content key: the engine keys them by the
/// run's subject identity and `inputs` (everything else that determines the answer), so an
/// interrupted run repeats no finished call and a changed stage re-runs only its own calls.
/// Calls block (disk): run them off the async threads.
pub trait CallCache: Send + Sync {
    /// The answer stored for `inputs`, when there is one (never under `--refresh`).
    fn lookup(&self, inputs: &serde_json::Value) -> Option<serde_json::Value>;
    /// Stores the answer for `inputs`.
    fn store(&self, inputs: &serde_json::Value, answer: &serde_json::Value) -> Result<(), String>;
}

/// One stage's calls of a planned run, by what the call cache holds ([`Reviewer::planned_calls`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageCalls {
    pub stage: String,
    pub cached: u32,
    pub to_run: u32,
    /// Calls whose inputs depend on calls still to run.
    pub unknown: u32,
}

/// A run's [`CallCache`].
#[derive(Clone)]
pub struct Calls(pub Arc<dyn CallCache>);

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Calls")
    }
}

/// What a run cost, from the reviewer's own reports where it has them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Wall-clock time of the review, measured by runner.
    pub wall_ms: u64,
    /// Units reviewed (hunks for per-hunk reviewers).
    pub hunks: u32,
    /// Model requests made.
    #[serde(default)]
    pub requests: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Model-reported generation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_ms: Option<f64>,
    /// Model-reported prompt processing time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_eval_ms: Option<f64>,
    /// Model-reported time for the whole request (Ollama's `total_duration`), where reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_total_ms: Option<f64>,
    /// Model-reported load time (Ollama's `load_duration`), where reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_ms: Option<f64>,
    /// Cost of each reviewed unit (a hunk, a file or the whole change) for reviewers that
    /// send one request per unit; empty for the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<UnitCost>,
}

impl Cost {
    /// Adds what `other` reports of requests, tokens and model timings (a value either side
    /// lacks counts as what the other has); its wall time, hunks and units are the caller's.
    pub fn add_reported(&mut self, other: &Cost) {
        fn add<T: std::ops::Add<Output = T> + Copy>(total: &mut Option<T>, v: Option<T>) {
            if let Some(v) = v {
                *total = Some(match *total {
                    Some(t) => t + v,
                    None => v,
                });
            }
        }
        self.requests += other.requests;
        add(&mut self.prompt_tokens, other.prompt_tokens);
        add(&mut self.completion_tokens, other.completion_tokens);
        add(&mut self.eval_ms, other.eval_ms);
        add(&mut self.prompt_eval_ms, other.prompt_eval_ms);
        add(&mut self.model_total_ms, other.model_total_ms);
        add(&mut self.load_ms, other.load_ms);
    }

    /// The provider-reported time of the run's requests: the whole requests' where the provider
    /// reports it (Ollama), else prompt processing plus generation (llama.cpp's timings);
    /// `None` when the provider gave neither (runner's own `wall_ms` is never a substitute).
    pub fn provider_ms(&self) -> Option<f64> {
        self.model_total_ms.or(match (self.prompt_eval_ms, self.eval_ms) {
            (Some(p), Some(e)) => Some(p + e),
            _ => None,
        })
    }
}

/// What reviewing one unit (a hunk, a file or the whole change) cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitCost {
    /// `file` or `file:start-end` (new-side lines) or `*` for the whole change.
    pub unit: String,
    /// Hunks in the unit.
    pub hunks: u32,
    /// Requests made for the unit (retries and continuations included).
    pub requests: u32,
    pub wall_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_eval_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_ms: Option<f64>,
    /// Findings kept for the unit.
    pub findings: u32,
}

/// A successful run's result.
#[derive(Debug, Clone, Default)]
pub struct ReviewOutput {
    pub findings: Vec<Finding>,
    /// The reviewer's raw output (stdout, model text), kept for audits.
    pub raw: String,
    pub cost: Cost,
    /// Where the findings came from: model file hash, server version, seed, …
    pub provenance: BTreeMap<String, serde_json::Value>,
    /// Problems the output had against stet's schema (A7); the run still succeeds.
    pub schema_problems: Vec<String>,
    /// Counters worth reporting, e.g. findings dropped for pointing outside the reviewed lines.
    pub counters: BTreeMap<String, u64>,
    /// Files the reviewer left that would otherwise be lost (stet's `history.jsonl` from a
    /// private run directory), by name; stored as cache objects named in the run record.
    pub attachments: BTreeMap<String, String>,
}

/// Why a run failed.
#[derive(Debug, Clone, thiserror::Error, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReviewError {
    /// The reviewer's model server could not be reached (stet's exit code 2).
    #[error("model server unreachable: {message}")]
    Unreachable { message: String, stderr_tail: String },
    #[error("timed out after {seconds:.1}s")]
    Timeout { seconds: f64 },
    #[error("{message}")]
    Failed { message: String, stderr_tail: String },
    #[error("cancelled")]
    Cancelled,
}

impl ReviewError {
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed { message: message.into(), stderr_tail: String::new() }
    }

    pub fn stderr_tail(&self) -> &str {
        match self {
            Self::Unreachable { stderr_tail, .. } | Self::Failed { stderr_tail, .. } => stderr_tail,
            _ => "",
        }
    }

    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }
}

/// What [`Reviewer::exclusive_hold`] holds: let go when dropped.
pub type Hold = Box<dyn std::any::Any + Send>;

/// A reviewer backend.
pub trait Reviewer: Send + Sync {
    /// `builtin`, `command`, `ollama`, `openai`, …
    fn kind(&self) -> &'static str;

    /// Everything in this reviewer's resolved configuration that can change its output for
    /// `cell`, as JSON. It feeds the cache key: never concurrency, timeouts, paths or secrets.
    fn fingerprint(&self, cell: &Cell) -> serde_json::Value;

    /// Whether a failed run of this reviewer fails the same way every time: its output a pure
    /// function of its input, as the built-in reviewers' are (a diff line over 64 KiB fails
    /// them on every try). A frozen execution takes such a run's recorded failure as its result
    /// rather than calling the run missing.
    fn failures_are_deterministic(&self) -> bool {
        false
    }

    /// Runs that return the same scope key run one at a time (a CLI that keeps per-repository
    /// state); `None` lets runs overlap freely.
    fn exclusive_scope(&self, _job: &ReviewJob) -> Option<String> {
        None
    }

    /// A hold on this run's exclusive scope that other processes respect too (a serialized
    /// command reviewer's repository directory, locked with `flock`), taken by the engine
    /// before the run's time starts and kept until it ends: waiting for another process's turn
    /// is neither the run's time nor a slot's. `None`: nothing to hold.
    fn exclusive_hold<'a>(&'a self, _job: &'a ReviewJob) -> BoxFuture<'a, Result<Option<Hold>, ReviewError>> {
        Box::pin(async { Ok(None) })
    }

    /// The secret values this reviewer uses (keys, passed-through variables), which the engine
    /// redacts from everything a run leaves behind.
    fn secrets(&self) -> Vec<String> {
        Vec::new()
    }

    /// The model server `job` talks to, where the reviewer knows it. When a run finds it
    /// unreachable, only the runs against the same endpoint stop; `None` (unknown) stops all.
    fn endpoint(&self, _job: &ReviewJob) -> Option<String> {
        None
    }

    /// Checks, once before any run starts, that the reviewer can run at all (its program
    /// exists, its server answers). A failure fails every pending run with that error.
    fn preflight(&self) -> BoxFuture<'_, Result<(), ReviewError>> {
        Box::pin(async { Ok(()) })
    }

    /// What the first run of `cell` would ask before its first request, asked ahead beside
    /// the walk's first subjects (an LLM reviewer: whether its server answers and serves the
    /// cell's model). Nothing waits for it: the run reads what it learned, or asks itself.
    fn ask_ahead(self: Arc<Self>, _cell: &Cell) -> Option<BoxFuture<'static, ()>> {
        None
    }

    /// What one run reads beyond the cell's configuration, for a reviewer whose output depends
    /// on files read per subject (a replayed capture: the blake3 of its bytes). Hashed into
    /// that run's key as the fingerprint's `input`; `None`, every other reviewer's answer,
    /// leaves keys as they were.
    fn run_input(&self, _cell: &Cell, _subject: &str, _repeat: u32) -> Option<serde_json::Value> {
        None
    }

    /// Why no run of this reviewer could start, known without running anything (a command
    /// reviewer's program missing or not executable), for `runner validate`: checked once per
    /// reviewer, as the engine's preflight is.
    fn setup_problem(&self) -> Option<String> {
        None
    }

    /// Why one run would fail from its inputs alone, before anything runs (a replayed
    /// capture that is missing, malformed or outside the project), for `runner validate`.
    fn input_problem(&self, _cell: &Cell, _subject: &str, _repeat: u32) -> Option<String> {
        None
    }

    /// For a reviewer that caches calls of its own (a pipeline): per stage, how many of the
    /// calls of `cell`'s run `repeat` the run's call cache `calls` holds, how many are to run,
    /// and how many cannot be known yet (they depend on answers still to come). `None` for
    /// every other reviewer.
    fn planned_calls(&self, _cell: &Cell, _repeat: u32, _calls: &dyn CallCache) -> Option<Vec<StageCalls>> {
        None
    }

    /// Reviews one subject for one cell and repeat.
    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>>;
}

/// What a reviewer reads of a subject besides its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectNeeds {
    /// A repository to run in (a command reviewer).
    Repository,
    /// The change's diff.
    Diff,
    /// Nothing: its findings come from elsewhere.
    Nothing,
}

/// A path cleaned lexically, as Go's `filepath.Clean` (stet's paths) does: `.` dropped, `..`
/// taking away the component before it, doubled slashes removed; symlinks are not read.
pub fn lexical_clean(path: &std::path::Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => match out.components().next_back() {
                Some(std::path::Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`; a relative path keeps its leading `..`.
                Some(std::path::Component::RootDir | std::path::Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    out
}

/// Keeps the last `max` bytes of a text, on a character boundary.
pub fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}
