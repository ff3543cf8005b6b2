//! Events the engine emits; reporters (progress bars, NDJSON, the summary) consume them.

use crate::reviewer::ReviewError;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The plan is known: how many runs, and how many the cache already has.
    Planned { experiment: String, runs: usize, cached: usize, to_run: usize },
    /// A cache entry failed verification and will be recomputed.
    CacheCorrupt { run: String, detail: String },
    MaterializeFailed { subject: String, error: String },
    RunCached { run: String, findings: usize },
    RunStarted { run: String },
    RunFinished { run: String, findings: usize, wall_ms: u64 },
    RunFailed { run: String, error: ReviewError },
    RunSkipped { run: String, reason: String },
    /// Frozen mode: this run is not in the cache.
    RunMissing { run: String },
    Interrupted,
}
