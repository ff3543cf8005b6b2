//! Events the engine emits; reporters (progress bars, NDJSON, the summary) consume them.

use crate::matrix::RunId;
use crate::reviewer::ReviewError;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The plan is known: how many runs, and how many the cache already has.
    Planned {
        experiment: String,
        runs: usize,
        cached: usize,
        to_run: usize,
    },
    /// A cache entry failed verification and will be recomputed.
    CacheCorrupt {
        run: RunId,
        detail: String,
    },
    /// A cache entry could not be read (too many open files, permissions, an I/O error); the
    /// run is run again.
    CacheUnreadable {
        run: RunId,
        detail: String,
    },
    MaterializeFailed {
        subject: String,
        error: String,
    },
    RunCached {
        run: RunId,
        findings: usize,
    },
    RunStarted {
        run: RunId,
    },
    RunFinished {
        run: RunId,
        findings: usize,
        wall_ms: u64,
    },
    RunFailed {
        run: RunId,
        error: ReviewError,
    },
    RunSkipped {
        run: RunId,
        reason: SkipReason,
    },
    /// Frozen mode: this run is not in the cache.
    RunMissing {
        run: RunId,
    },
    /// A scoring node (`Node::Score`) finished: how many calls it made and
    /// how many of them the cache answered.
    StageDone {
        node: String,
        calls: usize,
        cached: usize,
    },
    /// A scoring node failed; the analyses that read it say so.
    StageFailed {
        node: String,
        error: String,
    },
    Interrupted,
    /// Something the user should know that changes no result (a remote cache unreachable,
    /// so the execution went on with the local cache only).
    Warning {
        message: String,
    },
    /// The walk is over: what the reviews and scoring calls it ran cost (apart), what the
    /// cache saved, and how many runs and scoring calls `--max-cost` left unrun.
    Cost(super::CostReport),
    /// The execution is over: per model server it talked to, the concurrency its adaptive
    /// limit settled on (final, lowest, highest) and the 429s it met.
    Endpoints {
        endpoints: Vec<crate::reviewer::llm::adaptive::EndpointReport>,
    },
}

/// Why a planned run was not attempted, or was abandoned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkipReason {
    /// The execution was interrupted before the run finished; running it again completes it.
    Interrupted,
    /// The run's subject could not be materialized.
    SubjectFailed { subject: String, error: String },
    /// The plan names a subject that was not prepared.
    NoSubject { subject: String },
    /// An earlier run found the reviewer's model server unreachable, so this one was not started.
    ServerUnreachable { error: String },
    /// A node it requires (other than its subject) failed or was skipped.
    DependencyFailed { dependency: String, error: String },
    /// Frozen mode and the cache lacks the node's result (a scoring call).
    NotCached,
    /// The execution's cost budget (`--max-cost`) was reached before the run (or a scoring
    /// node's call) could start; running again with a larger budget continues from the cache.
    OverBudget { budget: String },
    /// `--shard`: the run belongs to another shard, whose execution runs it.
    OtherShard { shard: String },
    /// `--steal`: another worker holds the run's lease.
    Leased { holder: String },
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Interrupted => f.write_str("interrupted"),
            Self::SubjectFailed { subject, error } => write!(f, "subject `{subject}` could not be materialized: {error}"),
            Self::NoSubject { subject } => write!(f, "no subject `{subject}`"),
            // The run that found the server down carries the details; its skipped siblings
            // say so in words that repeat for all of them, so a summary folds them into one line.
            Self::ServerUnreachable { .. } => f.write_str("endpoint unreachable: not started, or stopped, once a run found the server down"),
            Self::DependencyFailed { dependency, error } => write!(f, "{dependency} failed: {error}"),
            Self::NotCached => f.write_str("not in the cache (frozen)"),
            Self::OtherShard { shard } => write!(f, "belongs to shard {shard}"),
            Self::Leased { holder } => write!(f, "taken by {holder}"),
            Self::OverBudget { budget } => write!(f, "over budget: not started once the reviews and scoring calls run had cost --max-cost {budget}"),
        }
    }
}
