//! The review node: one run of a reviewer on a subject, under its scope lock, its reviewer's
//! limit and the global limit, stored in the cache the moment it finishes.

use super::budget::Meter;
use super::{wait_cancel, Emitter, Event, RunOutcome, SkipReason};
use crate::cache::{CacheKey, Guard, KeyInputs, Lease, Lookup, RunRecord, Store};
use crate::matrix::RunId;
use crate::reviewer::redact::Redactor;
use crate::reviewer::{CallCache, Calls, Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Mutex, Semaphore};

/// Shared by every review of one execution.
#[derive(Clone)]
pub(super) struct ReviewShared {
    pub cache: Arc<dyn Store>,
    /// Ignore cached results: a run another process stored meanwhile is run again.
    pub refresh: bool,
    pub emitter: Emitter,
    pub experiment: String,
    pub global: Arc<Semaphore>,
    /// Repository (or other) scopes whose runs must not overlap.
    pub scopes: Arc<StdMutex<HashMap<String, Arc<Mutex<()>>>>>,
    /// Model servers found unreachable, with the first error's text.
    pub unreachable: Arc<StdMutex<HashMap<Down, String>>>,
    /// What the reviews run so far cost, against `--max-cost`.
    pub meter: Arc<Meter>,
    pub cancel: watch::Receiver<bool>,
    /// `--steal`: each run starts only under a lease this long that no other worker holds.
    pub lease: Option<Duration>,
    /// Bounds the cache writes in flight (on blocking threads).
    pub writers: super::writes::Writers,
}

/// One review to do.
pub(super) struct ReviewTask {
    pub label: RunId,
    pub slot: String,
    pub key: CacheKey,
    pub inputs: KeyInputs,
    pub reviewer_name: String,
    pub reviewer: Arc<dyn Reviewer>,
    pub per_reviewer: Arc<Semaphore>,
    /// Removes the reviewer's secrets from everything its run produced.
    pub redactor: Arc<Redactor>,
    pub job: ReviewJob,
}

/// What an unreachable server stops: the runs against its endpoint, or, for a reviewer that
/// does not say which server a run uses, every later run of that reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Down {
    Endpoint(String),
    Reviewer(String),
}

pub(super) async fn run(mut shared: ReviewShared, task: ReviewTask) -> RunOutcome {
    let job = &task.job;
    // Over budget already: no need to wait for a slot.
    if !shared.meter.may_start() {
        return skip_over_budget(&shared, &task);
    }
    // Scope lock first (held without a slot), then the reviewer's and the global limits.
    let scope_lock = task.reviewer.exclusive_scope(job).map(|scope| {
        let mut map = shared.scopes.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(scope).or_default().clone()
    });
    let acquire = async {
        let scope_guard = match &scope_lock {
            Some(m) => Some(m.clone().lock_owned().await),
            None => None,
        };
        // Other processes' turn in the scope, waited for before any slot is taken and before
        // the run's time starts.
        let hold = task.reviewer.exclusive_hold(job).await;
        let r = task.per_reviewer.clone().acquire_owned().await;
        let g = shared.global.clone().acquire_owned().await;
        (scope_guard, hold, r, g)
    };
    let (scope_guard, hold, per_reviewer, global) = tokio::select! {
        g = acquire => g,
        _ = wait_cancel(&mut shared.cancel) => return RunOutcome::Skipped(SkipReason::Interrupted),
    };
    let hold = match hold {
        Ok(hold) => hold,
        Err(error) => return record(&shared, &task, Err(error), None, None).await,
    };
    let guards = (scope_guard, hold, per_reviewer, global);
    let endpoint = task.reviewer.endpoint(job);
    let down = {
        let map = shared.unreachable.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&Down::Reviewer(task.reviewer_name.clone())).or_else(|| endpoint.clone().and_then(|e| map.get(&Down::Endpoint(e)))).cloned()
    };
    if let Some(error) = down {
        return skip_unreachable(&shared, &task, error);
    }
    // One process at a time per run key: another `runner exec` on this cache may be running
    // it; wait for its lock, then take its result from the cache.
    let run_lock = tokio::select! {
        lock = lock_run(&shared.cache, &task.key) => lock,
        _ = wait_cancel(&mut shared.cancel) => return RunOutcome::Skipped(SkipReason::Interrupted),
    };
    if !shared.refresh {
        if let Lookup::Hit { record, findings } = shared.cache.lookup(&task.key) {
            shared.emitter.emit(Event::RunCached { run: task.label.clone(), findings: findings.len() });
            return RunOutcome::Cached { record, findings };
        }
    }
    if let Some(ttl) = shared.lease {
        let (cache, key) = (shared.cache.clone(), task.key.clone());
        match tokio::task::spawn_blocking(move || cache.lease(&key, ttl)).await.unwrap_or(Lease::Granted) {
            Lease::Granted => {}
            Lease::Done => {
                if let Lookup::Hit { record, findings } = shared.cache.lookup(&task.key) {
                    shared.emitter.emit(Event::RunCached { run: task.label.clone(), findings: findings.len() });
                    return RunOutcome::Cached { record, findings };
                }
            }
            Lease::Held { holder } => {
                let reason = SkipReason::Leased { holder };
                shared.emitter.emit(Event::RunSkipped { run: task.label.clone(), reason: reason.clone() });
                return RunOutcome::Skipped(reason);
            }
        }
    }
    // The budget is checked as the run would start (its slot held), so at most the reviews
    // already in flight take the incurred cost past it.
    if !shared.meter.may_start() {
        return skip_over_budget(&shared, &task);
    }
    shared.emitter.emit(Event::RunStarted { run: task.label.clone() });
    // A backstop above the reviewer's own timeout, for backends that cannot enforce one.
    let limit = job.timeout + Duration::from_secs(5);
    let started = Instant::now();
    let result = tokio::select! {
        r = tokio::time::timeout(limit, task.reviewer.review(job)) => match r {
            Ok(r) => r,
            Err(_) => Err(ReviewError::Timeout { seconds: job.timeout.as_secs_f64() }),
        },
        _ = wait_cancel(&mut shared.cancel) => Err(ReviewError::Cancelled),
    };
    // Counted before the slot is released, so the next run to start sees it. A failed run
    // reports no tokens; its wall time counts.
    match &result {
        Ok(output) => shared.meter.add(&output.cost),
        Err(ReviewError::Cancelled) => {}
        Err(_) => shared.meter.add(&Cost { wall_ms: started.elapsed().as_millis() as u64, ..Cost::default() }),
    }
    // A writer's place is taken before the slot is given back (a result to store will need
    // one), so fast reviews cannot outrun the writers with finished results waiting in memory.
    let writer = match &result {
        Err(ReviewError::Cancelled) => None,
        _ => shared.writers.permit().await.ok(),
    };
    drop(guards);
    let _run_lock = run_lock;
    // Every outcome is redacted as it enters the engine, before any writer sees it.
    let result = result.map(|o| task.redactor.output(o)).map_err(|e| task.redactor.error(e));
    record(&shared, &task, result, endpoint, writer).await
}

/// Stores a finished review's result (a success, or a failure for `plan` to explain) and
/// tells the reporters; the first run to find its server unreachable marks it down.
async fn record(
    shared: &ReviewShared,
    task: &ReviewTask,
    result: Result<ReviewOutput, ReviewError>,
    endpoint: Option<String>,
    writer: Option<super::writes::Permit>,
) -> RunOutcome {
    match result {
        Ok(output) => match store_success(shared, task, output, writer).await {
            Ok((record, output)) => {
                shared.emitter.emit(Event::RunFinished { run: task.label.clone(), findings: output.findings.len(), wall_ms: output.cost.wall_ms });
                RunOutcome::Fresh { record: Box::new(record), findings: output.findings.into() }
            }
            Err(e) => {
                let error = ReviewError::failed(format!("the review finished but could not be cached: {e}"));
                shared.emitter.emit(Event::RunFailed { run: task.label.clone(), error: error.clone() });
                RunOutcome::Failed(error)
            }
        },
        Err(ReviewError::Cancelled) => RunOutcome::Skipped(SkipReason::Interrupted),
        Err(error) => {
            if error.is_unreachable() {
                let key = endpoint.map_or_else(|| Down::Reviewer(task.reviewer_name.clone()), Down::Endpoint);
                let mut down = shared.unreachable.lock().unwrap_or_else(|p| p.into_inner());
                // The first run to find the server down reports it; runs in flight beside it
                // are skipped with the same reason, so the summary says it once.
                if let Some(first) = down.get(&key).cloned() {
                    drop(down);
                    return skip_unreachable(shared, task, first);
                }
                down.insert(key, error.to_string());
            }
            let (cache, label, slot, key, e) = (shared.cache.clone(), task.label.to_string(), task.slot.clone(), task.key.clone(), error.clone());
            let write = move || cache.store_failure(&label, &slot, &key, &e);
            let _ = match writer {
                Some(permit) => super::writes::Writers::run_with(permit, write).await,
                None => shared.writers.run(write).await,
            };
            shared.emitter.emit(Event::RunFailed { run: task.label.clone(), error: error.clone() });
            RunOutcome::Failed(error)
        }
    }
}

/// Skips a run because the execution's cost budget is reached.
fn skip_over_budget(shared: &ReviewShared, task: &ReviewTask) -> RunOutcome {
    let budget = shared.meter.budget.map(|b| b.to_string()).unwrap_or_default();
    let reason = SkipReason::OverBudget { budget };
    shared.emitter.emit(Event::RunSkipped { run: task.label.clone(), reason: reason.clone() });
    RunOutcome::Skipped(reason)
}

/// Skips a run because its reviewer's server is known to be down (one run failed saying so).
fn skip_unreachable(shared: &ReviewShared, task: &ReviewTask, error: String) -> RunOutcome {
    let reason = SkipReason::ServerUnreachable { error };
    shared.emitter.emit(Event::RunSkipped { run: task.label.clone(), reason: reason.clone() });
    RunOutcome::Skipped(reason)
}

/// Takes the run key's lock, polling while another process holds it (a crash releases it).
/// `None` when no lock file can be made (a read-only cache): the run goes ahead unlocked.
async fn lock_run(cache: &Arc<dyn Store>, key: &CacheKey) -> Option<Guard> {
    loop {
        match cache.try_lock_run(key) {
            Ok(Some(lock)) => return Some(lock),
            Ok(None) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(_) => return None,
        }
    }
}

/// Stores a result on a blocking thread, within the writer bound, and
/// hands the output back.
async fn store_success(
    shared: &ReviewShared,
    task: &ReviewTask,
    output: ReviewOutput,
    writer: Option<super::writes::Permit>,
) -> Result<(RunRecord, ReviewOutput), String> {
    let (cache, experiment, label, slot, key, inputs) =
        (shared.cache.clone(), shared.experiment.clone(), task.label.to_string(), task.slot.clone(), task.key.clone(), task.inputs.clone());
    let write = move || cache.store_success(&experiment, &label, &slot, &key, &inputs, &output).map(|record| (record, output)).map_err(|e| e.to_string());
    match writer {
        Some(permit) => super::writes::Writers::run_with(permit, write).await?,
        None => shared.writers.run(write).await?,
    }
}

/// The stage name a reviewer's own calls (a pipeline's stage calls) are cached under.
pub(super) const RUN_CALL_STAGE: &str = "pipeline";

/// One run's calls, cached each under [`crate::cache::key::stage_key`] of the subject's
/// identity and the call's inputs, as scoring calls are.
struct RunCalls {
    cache: Arc<dyn Store>,
    experiment: String,
    subject: String,
    refresh: bool,
}

impl RunCalls {
    fn inputs(&self, inputs: &serde_json::Value) -> serde_json::Value {
        serde_json::json!({ "subject": self.subject, "call": inputs })
    }
}

impl CallCache for RunCalls {
    fn lookup(&self, inputs: &serde_json::Value) -> Option<serde_json::Value> {
        if self.refresh {
            return None;
        }
        match self.cache.lookup_value(&crate::cache::key::stage_key(RUN_CALL_STAGE, &self.inputs(inputs))) {
            crate::cache::ValueLookup::Hit(value) => Some(value),
            crate::cache::ValueLookup::Miss | crate::cache::ValueLookup::Corrupt(_) => None,
        }
    }

    fn store(&self, inputs: &serde_json::Value, answer: &serde_json::Value) -> Result<(), String> {
        let inputs = self.inputs(inputs);
        let key = crate::cache::key::stage_key(RUN_CALL_STAGE, &inputs);
        self.cache.store_value(&self.experiment, RUN_CALL_STAGE, &key, &inputs, answer).map_err(|e| e.to_string())
    }
}

/// The call cache of a run of the subject whose content identity is `subject`.
pub(super) fn run_calls(shared: &ReviewShared, subject: &str) -> Calls {
    Calls(Arc::new(RunCalls { cache: shared.cache.clone(), experiment: shared.experiment.clone(), subject: subject.to_string(), refresh: shared.refresh }))
}

/// The call cache of a run of `subject` in `cache`, for reading what it holds (`runner plan`).
pub fn call_cache(cache: Arc<dyn Store>, experiment: &str, subject: &str) -> Calls {
    Calls(Arc::new(RunCalls { cache, experiment: experiment.to_string(), subject: subject.to_string(), refresh: false }))
}
