//! Execution: the only async module. Walks the plan's materialize → review edges on tokio
//! under a global `--jobs` limit, the reviewer's own limit and per-repository exclusivity;
//! takes results from the cache or runs the reviewer and stores them at once, so an
//! interrupted execution resumes where it stopped.

pub mod events;

pub use events::Event;

use crate::cache::{Guard, Lookup, RunRecord, Store};
use crate::finding::Finding;
use crate::plan::{Node, Plan};
use crate::reviewer::{ReviewError, ReviewJob, Reviewer};
use crate::target::{self, Subject};
use petgraph::Direction;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch, Mutex, Semaphore};

/// How an execution behaves; none of it reaches a cache key.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Global limit on concurrent reviews.
    pub jobs: usize,
    /// Call no reviewer; report what the cache lacks.
    pub frozen: bool,
    /// Ignore cached results (and overwrite them).
    pub refresh: bool,
    /// Where corpus cases are materialized.
    pub work_dir: PathBuf,
    pub experiment: String,
    pub timeout: Duration,
    pub reviewer_limit: Option<usize>,
}

/// The skip reason of a run that an interruption (Ctrl-C, SIGTERM) kept from finishing.
pub const INTERRUPTED: &str = "interrupted";

/// The skip reason of runs not started (or stopped) once the reviewer's server is known to be
/// unreachable; the run that found it so failed with the details.
pub const ENDPOINT_UNREACHABLE: &str = "endpoint unreachable: not started, or stopped, once a run found the server down";

/// What happened to one planned run.
#[derive(Debug, Clone)]
pub enum RunOutcome {
    Cached { record: Box<RunRecord>, findings: Vec<Finding> },
    Fresh { record: Box<RunRecord>, findings: Vec<Finding> },
    Failed(ReviewError),
    Skipped(String),
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

/// Runs every review the plan needs. `cancel` turning true stops new work and abandons
/// running reviews (their process groups are killed); what finished is already stored.
pub async fn execute(
    plan: &Plan,
    reviewer: Arc<dyn Reviewer>,
    cache: Arc<dyn Store>,
    options: &ExecOptions,
    emitter: &Emitter,
    cancel: watch::Receiver<bool>,
) -> Vec<RunOutcome> {
    // Held (shared) for the whole execution, so `cache gc` never removes what it writes or
    // reads; a read-only cache (a frozen check of a committed one) goes without.
    let lock_store = cache.clone();
    let _cache_lock = tokio::task::spawn_blocking(move || lock_store.hold().ok()).await.ok().flatten();
    let mut outcomes: Vec<Option<RunOutcome>> = vec![None; plan.runs.len()];
    let mut pending: Vec<usize> = Vec::new();
    for (i, run) in plan.runs.iter().enumerate() {
        if options.refresh {
            pending.push(i);
            continue;
        }
        match cache.lookup(&run.key) {
            Lookup::Hit { record, findings } => outcomes[i] = Some(RunOutcome::Cached { record, findings }),
            Lookup::Miss => pending.push(i),
            Lookup::Corrupt(detail) => {
                emitter.emit(Event::CacheCorrupt { run: run.label(), detail });
                pending.push(i);
            }
        }
    }
    emitter.emit(Event::Planned {
        experiment: options.experiment.clone(),
        runs: plan.runs.len(),
        cached: plan.runs.len() - pending.len(),
        to_run: if options.frozen { 0 } else { pending.len() },
    });
    for (i, outcome) in outcomes.iter().enumerate() {
        if let Some(RunOutcome::Cached { findings, .. }) = outcome {
            emitter.emit(Event::RunCached { run: plan.runs[i].label(), findings: findings.len() });
        }
    }
    if options.frozen {
        for &i in &pending {
            emitter.emit(Event::RunMissing { run: plan.runs[i].label() });
            outcomes[i] = Some(RunOutcome::Missing);
        }
        return outcomes.into_iter().map(|o| o.unwrap_or(RunOutcome::Missing)).collect();
    }

    if !pending.is_empty() {
        if let Err(error) = reviewer.preflight().await {
            for &i in &pending {
                emitter.emit(Event::RunFailed { run: plan.runs[i].label(), error: error.clone() });
                outcomes[i] = Some(RunOutcome::Failed(error.clone()));
            }
            return outcomes.into_iter().map(|o| o.unwrap_or(RunOutcome::Missing)).collect();
        }
    }
    let engine = Engine { plan, reviewer, cache, options, emitter };
    let subjects = engine.materialize(&pending).await;
    let mut ready = BTreeMap::new();
    let mut reviewable = Vec::new();
    for &i in &pending {
        let run = &plan.runs[i];
        match subjects.get(&run.subject_id) {
            Some(Err(e)) => {
                let reason = format!("subject `{}` could not be materialized: {e}", run.subject_id);
                emitter.emit(Event::RunSkipped { run: run.label(), reason: reason.clone() });
                outcomes[i] = Some(RunOutcome::Skipped(reason));
            }
            Some(Ok(subject)) => {
                ready.insert(run.subject_id.clone(), subject.clone());
                reviewable.push(i);
            }
            None => outcomes[i] = Some(RunOutcome::Skipped(format!("no subject `{}`", run.subject_id))),
        }
    }
    for (i, outcome) in engine.review(&reviewable, ready, cancel).await {
        outcomes[i] = Some(outcome);
    }
    outcomes.into_iter().map(|o| o.unwrap_or_else(|| RunOutcome::Skipped(INTERRUPTED.into()))).collect()
}

/// What every stage of one execution shares.
struct Engine<'a> {
    plan: &'a Plan,
    reviewer: Arc<dyn Reviewer>,
    cache: Arc<dyn Store>,
    options: &'a ExecOptions,
    emitter: &'a Emitter,
}

impl Engine<'_> {
    /// Materializes the subjects the pending runs need (their graph predecessors), on
    /// blocking threads, at most `--jobs` at once.
    async fn materialize(&self, pending: &[usize]) -> BTreeMap<String, Result<Arc<Subject>, String>> {
        let plan = self.plan;
        let review_nodes: BTreeMap<usize, petgraph::graph::NodeIndex> = plan
            .graph
            .node_indices()
            .filter_map(|n| match plan.graph[n] {
                Node::Review { run } => Some((run, n)),
                _ => None,
            })
            .collect();
        let mut needed: BTreeSet<&str> = BTreeSet::new();
        for node in pending.iter().filter_map(|i| review_nodes.get(i)) {
            for pred in plan.graph.neighbors_directed(*node, Direction::Incoming) {
                if let Node::Materialize { subject } = &plan.graph[pred] {
                    needed.insert(subject);
                }
            }
        }
        let limit = Arc::new(Semaphore::new(self.options.jobs.max(1)));
        let mut handles = Vec::new();
        for subject_id in needed {
            let Some(spec) = plan.subjects.get(subject_id).cloned() else { continue };
            let work_dir = self.options.work_dir.clone();
            let permit = limit.clone();
            handles.push((
                subject_id.to_string(),
                tokio::spawn(async move {
                    let _p = permit.acquire_owned().await;
                    tokio::task::spawn_blocking(move || target::materialize(&spec, &work_dir)).await
                }),
            ));
        }
        let mut subjects = BTreeMap::new();
        for (id, handle) in handles {
            let result = match handle.await {
                Ok(Ok(Ok(subject))) => Ok(Arc::new(subject)),
                Ok(Ok(Err(e))) => Err(e.to_string()),
                Ok(Err(e)) | Err(e) => Err(format!("materialization task failed: {e}")),
            };
            if let Err(e) = &result {
                self.emitter.emit(Event::MaterializeFailed { subject: id.clone(), error: e.clone() });
            }
            subjects.insert(id, result);
        }
        subjects
    }

    /// Reviews pending runs whose subjects are ready, under every limit.
    async fn review(&self, pending: &[usize], subjects: BTreeMap<String, Arc<Subject>>, cancel: watch::Receiver<bool>) -> Vec<(usize, RunOutcome)> {
        let (plan, options) = (self.plan, self.options);
        let global = Arc::new(Semaphore::new(options.jobs.max(1)));
        let per_reviewer = Arc::new(Semaphore::new(options.reviewer_limit.unwrap_or(options.jobs).max(1)));
        let scopes: Arc<StdMutex<HashMap<String, Arc<Mutex<()>>>>> = Arc::default();
        let unreachable: Arc<StdMutex<Option<String>>> = Arc::default();
        let mut tasks = tokio::task::JoinSet::new();
        let mut task_runs: HashMap<tokio::task::Id, usize> = HashMap::new();
        let mut results = Vec::new();
        for &i in pending {
            let run = &plan.runs[i];
            let Some(subject) = subjects.get(&run.subject_id).cloned() else {
                results.push((i, RunOutcome::Skipped(format!("no subject `{}`", run.subject_id))));
                continue;
            };
            let job = ReviewJob { cell: run.cell.clone(), repeat: run.repeat, subject, timeout: options.timeout };
            let ctx = TaskContext {
                index: i,
                label: run.label(),
                slot: run.slot(&options.experiment),
                key: run.key.clone(),
                inputs: run.inputs.clone(),
                experiment: options.experiment.clone(),
                reviewer: self.reviewer.clone(),
                cache: self.cache.clone(),
                emitter: self.emitter.clone(),
                global: global.clone(),
                per_reviewer: per_reviewer.clone(),
                scopes: scopes.clone(),
                unreachable: unreachable.clone(),
                cancel: cancel.clone(),
                refresh: options.refresh,
            };
            let handle = tasks.spawn(run_one(ctx, job));
            task_runs.insert(handle.id(), i);
        }
        while let Some(joined) = tasks.join_next_with_id().await {
            match joined {
                Ok((_, pair)) => results.push(pair),
                // A panicking reviewer fails its own run only.
                Err(e) => {
                    if let Some(&i) = task_runs.get(&e.id()) {
                        let error = ReviewError::failed(format!("the reviewer crashed: {e}"));
                        self.emitter.emit(Event::RunFailed { run: plan.runs[i].label(), error: error.clone() });
                        results.push((i, RunOutcome::Failed(error)));
                    }
                }
            }
        }
        results
    }
}

struct TaskContext {
    index: usize,
    label: String,
    slot: String,
    key: crate::cache::CacheKey,
    inputs: crate::cache::KeyInputs,
    experiment: String,
    reviewer: Arc<dyn Reviewer>,
    cache: Arc<dyn Store>,
    emitter: Emitter,
    global: Arc<Semaphore>,
    per_reviewer: Arc<Semaphore>,
    scopes: Arc<StdMutex<HashMap<String, Arc<Mutex<()>>>>>,
    unreachable: Arc<StdMutex<Option<String>>>,
    cancel: watch::Receiver<bool>,
    refresh: bool,
}

async fn run_one(mut ctx: TaskContext, job: ReviewJob) -> (usize, RunOutcome) {
    let i = ctx.index;
    // Scope lock first (held without a slot), then the reviewer's and the global limits.
    let scope_lock = ctx.reviewer.exclusive_scope(&job).map(|scope| {
        let mut map = ctx.scopes.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(scope).or_default().clone()
    });
    let acquire = async {
        let scope_guard = match &scope_lock {
            Some(m) => Some(m.clone().lock_owned().await),
            None => None,
        };
        let r = ctx.per_reviewer.clone().acquire_owned().await;
        let g = ctx.global.clone().acquire_owned().await;
        (scope_guard, r, g)
    };
    let guards = tokio::select! {
        g = acquire => g,
        _ = wait_cancel(&mut ctx.cancel) => return (i, RunOutcome::Skipped(INTERRUPTED.into())),
    };
    if ctx.unreachable.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
        return skip_unreachable(&ctx);
    }
    // One process at a time per run key: another `runner exec` on this cache may be running
    // it; wait for its lock, then take its result from the cache.
    let run_lock = tokio::select! {
        lock = lock_run(&ctx.cache, &ctx.key) => lock,
        _ = wait_cancel(&mut ctx.cancel) => return (i, RunOutcome::Skipped(INTERRUPTED.into())),
    };
    if !ctx.refresh {
        if let Lookup::Hit { record, findings } = ctx.cache.lookup(&ctx.key) {
            ctx.emitter.emit(Event::RunCached { run: ctx.label.clone(), findings: findings.len() });
            return (i, RunOutcome::Cached { record, findings });
        }
    }
    ctx.emitter.emit(Event::RunStarted { run: ctx.label.clone() });
    // A backstop above the reviewer's own timeout, for backends that cannot enforce one.
    let limit = job.timeout + Duration::from_secs(5);
    let result = tokio::select! {
        r = tokio::time::timeout(limit, ctx.reviewer.review(&job)) => match r {
            Ok(r) => r,
            Err(_) => Err(ReviewError::Timeout { seconds: job.timeout.as_secs_f64() }),
        },
        _ = wait_cancel(&mut ctx.cancel) => Err(ReviewError::Cancelled),
    };
    drop(guards);
    let _run_lock = run_lock;
    match result {
        Ok(output) => match store_success(&ctx, output).await {
            Ok((record, output)) => {
                ctx.emitter.emit(Event::RunFinished { run: ctx.label.clone(), findings: output.findings.len(), wall_ms: output.cost.wall_ms });
                (i, RunOutcome::Fresh { record: Box::new(record), findings: output.findings })
            }
            Err(e) => {
                let error = ReviewError::failed(format!("the review finished but could not be cached: {e}"));
                ctx.emitter.emit(Event::RunFailed { run: ctx.label.clone(), error: error.clone() });
                (i, RunOutcome::Failed(error))
            }
        },
        Err(ReviewError::Cancelled) => (i, RunOutcome::Skipped(INTERRUPTED.into())),
        Err(error) => {
            if error.is_unreachable() {
                let mut flag = ctx.unreachable.lock().unwrap_or_else(|p| p.into_inner());
                // The first run to find the server down reports it; runs in flight beside it
                // are skipped, so the summary says it once.
                if flag.is_some() {
                    drop(flag);
                    return skip_unreachable(&ctx);
                }
                *flag = Some(error.to_string());
            }
            let (cache, label, slot, key, e) = (ctx.cache.clone(), ctx.label.clone(), ctx.slot.clone(), ctx.key.clone(), error.clone());
            let _ = tokio::task::spawn_blocking(move || cache.store_failure(&label, &slot, &key, &e)).await;
            ctx.emitter.emit(Event::RunFailed { run: ctx.label.clone(), error: error.clone() });
            (i, RunOutcome::Failed(error))
        }
    }
}

/// Skips a run because the reviewer's server is known to be down (one run failed saying so).
fn skip_unreachable(ctx: &TaskContext) -> (usize, RunOutcome) {
    ctx.emitter.emit(Event::RunSkipped { run: ctx.label.clone(), reason: ENDPOINT_UNREACHABLE.into() });
    (ctx.index, RunOutcome::Skipped(ENDPOINT_UNREACHABLE.into()))
}

/// Takes the run key's lock, polling while another process holds it (a crash releases it).
/// `None` when no lock file can be made (a read-only cache): the run goes ahead unlocked.
async fn lock_run(cache: &Arc<dyn Store>, key: &crate::cache::CacheKey) -> Option<Guard> {
    loop {
        match cache.try_lock_run(key) {
            Ok(Some(lock)) => return Some(lock),
            Ok(None) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(_) => return None,
        }
    }
}

/// Stores a result on a blocking thread (files are fsynced) and hands the output back.
async fn store_success(ctx: &TaskContext, output: crate::reviewer::ReviewOutput) -> Result<(RunRecord, crate::reviewer::ReviewOutput), String> {
    let (cache, experiment, label, slot, key, inputs) =
        (ctx.cache.clone(), ctx.experiment.clone(), ctx.label.clone(), ctx.slot.clone(), ctx.key.clone(), ctx.inputs.clone());
    tokio::task::spawn_blocking(move || {
        cache.store_success(&experiment, &label, &slot, &key, &inputs, &output).map(|record| (record, output)).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())?
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

#[cfg(test)]
mod tests;
