//! Execution: the only module that spawns and limits work. It walks the plan's DAG of typed
//! nodes on tokio — a node starts when its dependencies are done, under the global `--jobs`
//! limit and the limit of the resource it uses (the reviewer, the repository) — taking
//! results from the cache where it can and storing new ones as they finish, so an
//! interrupted execution resumes where it stopped.

pub(crate) mod budget;
mod engine;
pub(crate) mod events;
mod executors;
mod parts;
mod review;
pub(crate) mod stages;
mod walk;
mod writes;

pub use budget::{Budget, CallCost, CallsSpent, CostReport, Spent};
pub use engine::Engine;
pub use events::{Event, SkipReason};
pub use parts::EngineParts;
pub use review::call_cache;
pub use stages::{Call, CallFuture, NodeInputs, Scored, Scorers};
pub use walk::{Conclusions, Execution, Materializer, ScoredView, ScoringTally, WalkView};

use crate::cache::{Findings, RunRecord};
use crate::finding::Finding;
use crate::reviewer::ReviewError;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How an execution behaves; none of it reaches a cache key.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Global limit on concurrent materializations and reviews.
    pub jobs: usize,
    /// Call no reviewer; report what the cache lacks.
    pub frozen: bool,
    /// Ignore cached results (and overwrite them).
    pub refresh: bool,
    /// Where corpus cases are materialized.
    pub work_dir: PathBuf,
    pub experiment: String,
    /// Each reviewer's own limits, by reviewer name.
    pub reviewers: BTreeMap<String, ReviewerLimits>,
    /// Start no new review once the reviews run so far cost this much (`--max-cost`).
    pub max_cost: Option<Budget>,
    /// Execute only this shard's runs (`--shard i/n`); the others are left to other
    /// machines, and no report is written.
    pub shard: Option<crate::plan::Shard>,
    /// `--steal`: once its own runs are started, the shard also takes other shards' runs that
    /// no worker has started, each under a lease of this long (`None`: no stealing).
    pub steal: Option<Duration>,
}

/// One reviewer's scheduling limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReviewerLimits {
    /// At most this many of its runs at once (within `--jobs`).
    pub max_concurrency: Option<usize>,
    /// A run that takes longer is killed.
    pub timeout: Duration,
}

impl Default for ReviewerLimits {
    fn default() -> Self {
        Self { max_concurrency: None, timeout: Duration::from_secs(600) }
    }
}

/// What happened to one planned run.
#[derive(Debug, Clone)]
pub enum RunOutcome {
    Cached {
        record: Box<RunRecord>,
        findings: Findings,
    },
    Fresh {
        record: Box<RunRecord>,
        findings: Findings,
    },
    Failed(ReviewError),
    Skipped(SkipReason),
    /// Frozen mode and not cached.
    Missing,
}

impl RunOutcome {
    pub fn success(&self) -> Option<(&RunRecord, &[Finding])> {
        match self {
            Self::Cached { record, findings } | Self::Fresh { record, findings } => Some((record, findings)),
            _ => None,
        }
    }

    pub fn is_interrupted(&self) -> bool {
        matches!(self, Self::Skipped(SkipReason::Interrupted))
    }

    /// Not started because the execution's cost budget was reached.
    pub fn is_over_budget(&self) -> bool {
        matches!(self, Self::Skipped(SkipReason::OverBudget { .. }))
    }

    /// Left to another shard's execution (`--shard`).
    pub fn is_other_shard(&self) -> bool {
        matches!(self, Self::Skipped(SkipReason::OtherShard { .. } | SkipReason::Leased { .. }))
    }
}

/// Sends events to whoever listens; a closed channel is not an error.
#[derive(Clone)]
pub struct Emitter(Option<mpsc::UnboundedSender<Event>>);

impl Emitter {
    pub fn new(tx: mpsc::UnboundedSender<Event>) -> Self {
        Self(Some(tx))
    }

    pub fn silent() -> Self {
        Self(None)
    }

    pub fn emit(&self, event: Event) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(event);
        }
    }
}

async fn wait_cancel(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow() {
            return;
        }
        if rx.changed().await.is_err() {
            // The sender is gone: no cancellation can come any more.
            std::future::pending::<()>().await;
        }
    }
}

/// How many threads CPU-bound work of the walk uses at once: the machine's cores.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests;
