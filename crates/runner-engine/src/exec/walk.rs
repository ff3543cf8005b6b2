//! The walk: every node of the plan's DAG runs once its dependencies are done. Cached review
//! nodes are done before the walk starts, and a subject is materialized only when a node that
//! still has to run needs it (a review not in the cache, an analysis that reads diffs), so a
//! fully cached execution builds no repository. A node whose
//! `Requires` dependency failed is skipped, and so, transitively, are exactly its dependents.

use super::budget::{CostReport, Meter, Spent};
use super::review::{self, ReviewShared, ReviewTask};
use super::stages::{self, NodeInputs, Scored, Scorers, StageShared};
use super::{Emitter, Event, ExecOptions, RunOutcome, SkipReason};
use crate::cache::{Lookup, Store};
use crate::plan::{Dependency, Node, Plan, ReviewerSet};
use crate::reviewer::redact::Redactor;
use crate::reviewer::{ReviewError, ReviewJob};
use crate::subject::{Subject, SubjectSpec};
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex as StdMutex};
use tokio::sync::{watch, Semaphore};

/// Builds a subject's repository and diff (on a blocking thread).
pub type Materializer = Arc<dyn Fn(&SubjectSpec, &Path) -> Result<Subject, String> + Send + Sync>;

/// What analyze and render nodes compute: the experiment supplies their meaning (the
/// manifest's analyses, its report), the engine decides when they run.
pub trait Conclusions: Sync {
    /// An analysis's result.
    type Analysis: Send + Sync + 'static;
    /// What rendering produced.
    type Report: Send + Sync + 'static;
    /// Why rendering failed.
    type Error: Send + std::fmt::Display + 'static;
    /// Analysis number `index`, once every run it observes is done.
    fn analyze(&self, index: usize, view: &WalkView<'_, Self::Analysis, Self::Report>) -> Self::Analysis;
    /// The reports, once every analysis is done. `analyses` is in manifest order.
    fn render(&self, view: &WalkView<'_, Self::Analysis, Self::Report>, analyses: &[&Self::Analysis]) -> Result<Self::Report, Self::Error>;
}

/// A spawned node's result.
type Finished<A, R> = (NodeIndex, State<A, R>);

/// The state of a node during and after the walk.
enum State<A, R> {
    Pending,
    /// Materialization was not needed: every dependent was served from the cache.
    NotNeeded,
    Subject(Arc<Subject>),
    Run(RunOutcome),
    Scored(Arc<Scored>),
    Analysis(Box<A>),
    Report(Box<R>),
    Failed(String),
    Skipped(SkipReason),
}

impl<A, R> State<A, R> {
    fn succeeded(&self) -> bool {
        match self {
            Self::Subject(_) | Self::Scored(_) | Self::Analysis(_) | Self::Report(_) | Self::NotNeeded => true,
            Self::Run(outcome) => outcome.success().is_some(),
            Self::Pending | Self::Failed(_) | Self::Skipped(_) => false,
        }
    }

    /// `--shard`: this node is another shard's work, and so are the nodes that require it.
    fn other_shard(&self) -> Option<SkipReason> {
        match self {
            Self::Skipped(reason @ SkipReason::OtherShard { .. }) | Self::Run(RunOutcome::Skipped(reason @ SkipReason::OtherShard { .. })) => {
                Some(reason.clone())
            }
            _ => None,
        }
    }

    fn error(&self) -> String {
        match self {
            Self::Failed(e) => e.clone(),
            Self::Skipped(reason) => reason.to_string(),
            Self::Run(RunOutcome::Failed(e)) => e.to_string(),
            Self::Run(RunOutcome::Skipped(reason)) => reason.to_string(),
            Self::Run(RunOutcome::Missing) => "not in the cache".to_string(),
            _ => String::new(),
        }
    }
}

/// Read access to what the walk has produced so far, for analyze and render nodes.
pub struct WalkView<'a, A, R> {
    plan: &'a Plan,
    states: &'a [State<A, R>],
    review_nodes: &'a [NodeIndex],
    materialize_nodes: &'a BTreeMap<String, NodeIndex>,
    scoring_nodes: &'a HashMap<Node, NodeIndex>,
}

/// How many scoring nodes ended which way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScoringTally {
    pub done: usize,
    /// Failed, or skipped because something they require failed.
    pub failed: usize,
    pub interrupted: usize,
    /// Frozen mode and not in the cache.
    pub not_cached: usize,
    /// `--max-cost` was reached before all their calls could start.
    pub over_budget: usize,
}

/// A scoring node's result as analyses read it.
#[derive(Debug, Clone)]
pub enum ScoredView<'a> {
    /// Not in the plan (the stage is not declared) or not done.
    Absent,
    Done(&'a Scored),
    /// Failed or skipped, and why.
    Failed(String),
}

impl<A, R> WalkView<'_, A, R> {
    /// The outcome of run `i` (plan order), once its node is done.
    pub fn run(&self, i: usize) -> Option<&RunOutcome> {
        match self.review_nodes.get(i).map(|n| &self.states[n.index()]) {
            Some(State::Run(outcome)) => Some(outcome),
            _ => None,
        }
    }

    /// Every run's outcome in plan order; a run not done reads as interrupted.
    pub fn runs(&self) -> Vec<&RunOutcome> {
        const INTERRUPTED: &RunOutcome = &RunOutcome::Skipped(SkipReason::Interrupted);
        (0..self.plan.runs.len()).map(|i| self.run(i).unwrap_or(INTERRUPTED)).collect()
    }

    /// A scoring node's answers: [`Node::Claims`], [`Node::Smells`], [`Node::Judge`], [`Node::Match`] or [`Node::Embed`].
    pub fn scored(&self, node: &Node) -> ScoredView<'_> {
        match self.scoring_nodes.get(node).map(|n| &self.states[n.index()]) {
            Some(State::Scored(scored)) => ScoredView::Done(scored),
            Some(State::Failed(e)) => ScoredView::Failed(e.clone()),
            Some(State::Skipped(reason)) => ScoredView::Failed(reason.to_string()),
            _ => ScoredView::Absent,
        }
    }

    /// How the scoring nodes ended so far.
    pub fn scoring_tally(&self) -> ScoringTally {
        let mut tally = ScoringTally::default();
        for n in self.scoring_nodes.values() {
            match &self.states[n.index()] {
                State::Scored(_) => tally.done += 1,
                State::Skipped(SkipReason::Interrupted) | State::Pending => tally.interrupted += 1,
                State::Skipped(SkipReason::NotCached) => tally.not_cached += 1,
                State::Skipped(SkipReason::OverBudget { .. }) => tally.over_budget += 1,
                _ => tally.failed += 1,
            }
        }
        tally
    }

    /// The materialized subjects.
    pub fn subjects(&self) -> BTreeMap<&str, &Subject> {
        self.materialize_nodes
            .iter()
            .filter_map(|(id, n)| match &self.states[n.index()] {
                State::Subject(s) => Some((id.as_str(), s.as_ref())),
                _ => None,
            })
            .collect()
    }
}

/// What an execution produced, node by node.
pub struct Execution<A, R, E> {
    /// Each run's outcome, in plan order.
    pub outcomes: Vec<RunOutcome>,
    /// Each analysis's result, in manifest order.
    pub analyses: Vec<A>,
    /// The render node's result; `None` if it did not run.
    pub report: Option<Result<R, E>>,
    /// What the reviews run cost, what the cache saved, and what the budget left unrun.
    pub cost: CostReport,
}

/// Walks the plan. `cancel` turning true stops new materializations and reviews and abandons
/// running reviews (their process groups are killed); what finished is already stored, and
/// the analyses and reports still run over it.
#[allow(clippy::too_many_arguments)]
pub async fn execute<C: Conclusions>(
    plan: &Plan,
    reviewers: &ReviewerSet,
    scorers: Option<Arc<dyn Scorers>>,
    materializer: Materializer,
    cache: Arc<dyn Store>,
    options: &ExecOptions,
    conclusions: &C,
    emitter: &Emitter,
    cancel: watch::Receiver<bool>,
) -> Execution<C::Analysis, C::Report, C::Error> {
    // Held (shared) for the whole execution, so `cache gc` never removes what it writes or
    // reads; a read-only cache (a frozen check of a committed one) goes without.
    let lock_store = cache.clone();
    let _cache_lock = tokio::task::spawn_blocking(move || lock_store.hold().ok()).await.ok().flatten();
    let graph = &plan.graph;
    let mut states: Vec<State<C::Analysis, C::Report>> = graph.node_indices().map(|_| State::Pending).collect();
    let review_nodes = plan.review_nodes();
    let materialize_nodes: BTreeMap<String, NodeIndex> = graph
        .node_indices()
        .filter_map(|n| match &graph[n] {
            Node::Materialize { subject } => Some((subject.clone(), n)),
            _ => None,
        })
        .collect();

    // Reviews the cache already has are done before the walk starts; a remote cache
    // fetches the ones it has first, in parallel.
    if !options.refresh {
        let (store, keys) = (cache.clone(), plan.runs.iter().map(|r| r.key.clone()).collect::<Vec<_>>());
        let _ = tokio::task::spawn_blocking(move || store.prefetch(&keys)).await;
    }
    let mut pending_runs = 0usize;
    let lookups = if options.refresh { plan.runs.iter().map(|_| Lookup::Miss).collect() } else { look_up_runs(cache.as_ref(), plan, &options.experiment) };
    for (i, lookup) in lookups.into_iter().enumerate() {
        let run = &plan.runs[i];
        match lookup {
            Lookup::Hit { record, findings } => {
                states[review_nodes[i].index()] = State::Run(RunOutcome::Cached { record, findings });
            }
            Lookup::Miss => pending_runs += 1,
            Lookup::Corrupt(detail) => {
                emitter.emit(Event::CacheCorrupt { run: run.id(), detail });
                pending_runs += 1;
            }
            Lookup::Unreadable(detail) => {
                emitter.emit(Event::CacheUnreadable { run: run.id(), detail });
                pending_runs += 1;
            }
        }
    }
    // A shard executes its own runs only; the rest are other machines' work, or, with
    // `--steal`, started after its own, each under a lease.
    let mut deferred = vec![false; graph.node_count()];
    if let Some(shard) = options.shard {
        for (i, run) in plan.runs.iter().enumerate() {
            let state = &mut states[review_nodes[i].index()];
            if matches!(state, State::Pending) && !shard.contains(&run.key) && options.steal.is_some() {
                deferred[review_nodes[i].index()] = true;
            } else if matches!(state, State::Pending) && !shard.contains(&run.key) {
                let owner = crate::plan::Shard { index: crate::plan::Shard::of(&run.key, shard.count), count: shard.count };
                *state = State::Run(RunOutcome::Skipped(SkipReason::OtherShard { shard: owner.to_string() }));
                pending_runs -= 1;
            }
        }
    }
    emitter.emit(Event::Planned {
        experiment: options.experiment.clone(),
        runs: plan.runs.len(),
        cached: plan.runs.len() - pending_runs,
        to_run: if options.frozen { 0 } else { pending_runs },
    });
    for (i, run) in plan.runs.iter().enumerate() {
        if let State::Run(RunOutcome::Cached { findings, .. }) = &states[review_nodes[i].index()] {
            emitter.emit(Event::RunCached { run: run.id(), findings: findings.len() });
        }
    }
    for (i, run) in plan.runs.iter().enumerate() {
        if let State::Run(RunOutcome::Skipped(reason @ SkipReason::OtherShard { .. })) = &states[review_nodes[i].index()] {
            emitter.emit(Event::RunSkipped { run: run.id(), reason: reason.clone() });
        }
    }
    if options.frozen {
        for (i, run) in plan.runs.iter().enumerate() {
            let state = &mut states[review_nodes[i].index()];
            if matches!(state, State::Pending) {
                emitter.emit(Event::RunMissing { run: run.id() });
                *state = State::Run(RunOutcome::Missing);
            }
        }
    }

    // Each reviewer that still has runs to do is checked once before any starts.
    let mut preflighted: BTreeMap<&str, Result<(), ReviewError>> = BTreeMap::new();
    for (i, run) in plan.runs.iter().enumerate() {
        if !matches!(states[review_nodes[i].index()], State::Pending) || preflighted.contains_key(run.reviewer.as_str()) {
            continue;
        }
        let result = match reviewers.get(&run.reviewer) {
            Some(reviewer) => reviewer.preflight().await.map_err(|e| Redactor::new(reviewer.secrets()).error(e)),
            None => Err(ReviewError::failed(format!("no reviewer named `{}`", run.reviewer))),
        };
        preflighted.insert(run.reviewer.as_str(), result);
    }
    for (i, run) in plan.runs.iter().enumerate() {
        if let Some(Err(error)) = preflighted.get(run.reviewer.as_str()) {
            let state = &mut states[review_nodes[i].index()];
            if matches!(state, State::Pending) {
                emitter.emit(Event::RunFailed { run: run.id(), error: error.clone() });
                *state = State::Run(RunOutcome::Failed(error.clone()));
            }
        }
    }

    // Scoring nodes whose every call the cache has are done before the walk too: their keys
    // need no repository, only their subject's identity and what they score.
    let scoring_nodes: HashMap<Node, NodeIndex> = graph.node_indices().filter(|n| is_scoring(&graph[*n])).map(|n| (graph[n].clone(), n)).collect();
    let mut scoring_order: Vec<NodeIndex> = scoring_nodes.values().copied().collect();
    scoring_order.sort_unstable();
    for &n in &scoring_order {
        let requires = || graph.edges_directed(n, Direction::Incoming).filter(|e| *e.weight() == Dependency::Requires);
        if let Some(failed) = requires()
            .find(|e| !matches!(graph[e.source()], Node::Materialize { .. }) && is_done(&states[e.source().index()]) && !states[e.source().index()].succeeded())
        {
            let source = &states[failed.source().index()];
            let reason =
                source.other_shard().unwrap_or_else(|| SkipReason::DependencyFailed { dependency: describe(&graph[failed.source()]), error: source.error() });
            states[n.index()] = State::Skipped(reason);
            continue;
        }
        if requires().any(|e| !matches!(graph[e.source()], Node::Materialize { .. }) && !is_done(&states[e.source().index()])) {
            continue;
        }
        let Some(scorers) = &scorers else {
            states[n.index()] = State::Failed("the experiment declares no scoring stages".to_string());
            continue;
        };
        let calls = match node_inputs(plan, &states, n).and_then(|inputs| scorers.calls(&graph[n], &inputs)) {
            Ok(calls) => calls,
            Err(e) => {
                states[n.index()] = State::Failed(e);
                continue;
            }
        };
        if options.refresh {
            continue;
        }
        if let Some(scored) = stages::all_cached(cache.as_ref(), scorers.as_ref(), &calls) {
            states[n.index()] = State::Scored(Arc::new(scored));
        } else if options.frozen {
            states[n.index()] = State::Skipped(SkipReason::NotCached);
        }
    }

    // A subject is materialized only for a dependent that still has to run.
    for n in materialize_nodes.values() {
        let needed = graph.edges_directed(*n, Direction::Outgoing).any(|e| matches!(states[e.target().index()], State::Pending));
        if !needed {
            states[n.index()] = State::NotNeeded;
        }
    }

    let writers = super::writes::Writers::for_jobs(options.jobs);
    let meter = Arc::new(Meter::new(options.max_cost));
    let stage_shared = scorers.clone().map(|scorers| StageShared {
        cache: cache.clone(),
        scorers,
        experiment: options.experiment.clone(),
        refresh: options.refresh,
        frozen: options.frozen,
        endpoints: Arc::default(),
        cancel: cancel.clone(),
        writers: writers.clone(),
        meter: meter.clone(),
    });
    let mut walk = Walk { plan, states, remaining: vec![0; graph.node_count()], ready: VecDeque::new(), later: VecDeque::new(), deferred, emitter };
    for n in graph.node_indices() {
        if matches!(walk.states[n.index()], State::Pending) {
            walk.remaining[n.index()] =
                graph.edges_directed(n, Direction::Incoming).filter(|e| matches!(walk.states[e.source().index()], State::Pending)).count();
            if walk.remaining[n.index()] == 0 {
                walk.release(n);
            }
        }
    }

    let global = Arc::new(Semaphore::new(options.jobs.max(1)));
    let per_reviewer: HashMap<&str, Arc<Semaphore>> = reviewers
        .keys()
        .map(|name| {
            let limit = options.reviewers.get(name).and_then(|l| l.max_concurrency).unwrap_or(options.jobs);
            (name.as_str(), Arc::new(Semaphore::new(limit.max(1))))
        })
        .collect();
    let redactors: HashMap<&str, Arc<Redactor>> = reviewers.iter().map(|(name, r)| (name.as_str(), Arc::new(Redactor::new(r.secrets())))).collect();
    let shared = ReviewShared {
        cache: cache.clone(),
        refresh: options.refresh,
        emitter: emitter.clone(),
        experiment: options.experiment.clone(),
        global: global.clone(),
        scopes: Arc::default(),
        unreachable: Arc::new(StdMutex::new(HashMap::new())),
        meter: meter.clone(),
        cancel: cancel.clone(),
        lease: options.steal,
        writers,
    };
    let mut tasks: tokio::task::JoinSet<Finished<C::Analysis, C::Report>> = tokio::task::JoinSet::new();
    let mut task_nodes: HashMap<tokio::task::Id, NodeIndex> = HashMap::new();
    let mut render_error: Option<C::Error> = None;
    let analyze_nodes = analysis_order(plan);
    let mut own_reviews_in_flight = 0usize;
    loop {
        // Deferred reviews (`--steal`: other shards' runs) start only once every review of
        // this shard has a slot, so none of them waits behind one of another shard's.
        while let Some(node) = walk.ready.pop_front().or_else(|| if own_reviews_in_flight < options.jobs.max(1) { walk.later.pop_front() } else { None }) {
            let interrupted = *cancel.borrow();
            match &graph[node] {
                Node::Materialize { .. } | Node::Review { .. } if interrupted => walk.finish(node, State::Skipped(SkipReason::Interrupted)),
                Node::Materialize { subject } => {
                    let Some(spec) = plan.subjects.get(subject).cloned() else {
                        walk.finish(node, State::Failed(format!("no subject `{subject}`")));
                        continue;
                    };
                    let (materializer, work_dir, permit) = (materializer.clone(), options.work_dir.clone(), global.clone());
                    let handle = tasks.spawn(async move {
                        let _permit = permit.acquire_owned().await;
                        let result = tokio::task::spawn_blocking(move || materializer(&spec, &work_dir)).await;
                        let state = match result {
                            Ok(Ok(subject)) => State::Subject(Arc::new(subject)),
                            Ok(Err(e)) => State::Failed(e),
                            Err(e) => State::Failed(format!("materialization task failed: {e}")),
                        };
                        (node, state)
                    });
                    task_nodes.insert(handle.id(), node);
                }
                Node::Review { run } => {
                    let run_index = *run;
                    let planned = &plan.runs[run_index];
                    let subject = materialize_nodes.get(&planned.subject_id).and_then(|m| match &walk.states[m.index()] {
                        State::Subject(s) => Some(s.clone()),
                        _ => None,
                    });
                    let (Some(subject), Some(reviewer)) = (subject, reviewers.get(&planned.reviewer)) else {
                        walk.finish(node, State::Run(RunOutcome::Failed(ReviewError::failed(format!("no subject or reviewer for {}", planned.label())))));
                        continue;
                    };
                    let limits = options.reviewers.get(&planned.reviewer).copied().unwrap_or_default();
                    let task = ReviewTask {
                        label: planned.id(),
                        slot: planned.slot(&options.experiment),
                        key: planned.key.clone(),
                        inputs: planned.inputs.clone(),
                        reviewer_name: planned.reviewer.clone(),
                        reviewer: reviewer.clone(),
                        per_reviewer: per_reviewer.get(planned.reviewer.as_str()).cloned().unwrap_or_else(|| global.clone()),
                        redactor: redactors.get(planned.reviewer.as_str()).cloned().unwrap_or_default(),
                        job: ReviewJob {
                            cell: crate::matrix::Cell::clone(&planned.cell),
                            repeat: planned.repeat,
                            subject,
                            timeout: limits.timeout,
                            calls: Some(review::run_calls(&shared, &planned.inputs.subject)),
                        },
                    };
                    let shared = shared.clone();
                    let handle = tasks.spawn(async move { (node, State::Run(review::run(shared, task).await)) });
                    task_nodes.insert(handle.id(), node);
                    if !walk.deferred[node.index()] {
                        own_reviews_in_flight += 1;
                    }
                }
                Node::Claims { .. } | Node::Smells { .. } | Node::Judge { .. } | Node::Match { .. } | Node::Embed { .. } if interrupted => {
                    walk.finish(node, State::Skipped(SkipReason::Interrupted))
                }
                Node::Claims { .. } | Node::Smells { .. } | Node::Judge { .. } | Node::Match { .. } | Node::Embed { .. } => {
                    let Some(shared) = stage_shared.clone() else {
                        walk.finish(node, State::Failed("the experiment declares no scoring stages".to_string()));
                        continue;
                    };
                    let calls = match node_inputs(plan, &walk.states, node).and_then(|inputs| shared.scorers.calls(&graph[node], &inputs)) {
                        Ok(calls) => calls,
                        Err(e) => {
                            walk.finish(node, State::Failed(e));
                            continue;
                        }
                    };
                    let subject = graph.edges_directed(node, Direction::Incoming).find_map(|e| match &walk.states[e.source().index()] {
                        State::Subject(s) => Some(s.clone()),
                        _ => None,
                    });
                    let handle = tasks.spawn(async move {
                        let state = match stages::run_node(shared, calls, subject).await {
                            Ok(scored) => State::Scored(Arc::new(scored)),
                            Err(stages::NodeError::Interrupted) => State::Skipped(SkipReason::Interrupted),
                            Err(stages::NodeError::NotCached) => State::Skipped(SkipReason::NotCached),
                            Err(stages::NodeError::OverBudget(budget)) => State::Skipped(SkipReason::OverBudget { budget }),
                            Err(stages::NodeError::Failed(e)) => State::Failed(e),
                        };
                        (node, state)
                    });
                    task_nodes.insert(handle.id(), node);
                }
                // Analyses run in the walk, the ready ones side by side: they only read.
                Node::Analyze { index } => {
                    let mut batch = vec![(node, *index)];
                    walk.ready.retain(|&n| match &graph[n] {
                        Node::Analyze { index } => {
                            batch.push((n, *index));
                            false
                        }
                        _ => true,
                    });
                    let (view, conclusions) = (&walk.view(&review_nodes, &materialize_nodes, &scoring_nodes), &conclusions);
                    // As many at once as there are cores: each holds its own working memory.
                    let mut results: Vec<C::Analysis> = Vec::with_capacity(batch.len());
                    for chunk in batch.chunks(cores()) {
                        std::thread::scope(|scope| {
                            let handles: Vec<_> = chunk.iter().map(|&(_, index)| scope.spawn(move || conclusions.analyze(index, view))).collect();
                            results.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))));
                        });
                    }
                    for ((node, _), result) in batch.into_iter().zip(results) {
                        walk.finish(node, State::Analysis(Box::new(result)));
                    }
                }
                Node::Render => {
                    let analyses: Vec<&C::Analysis> = analyze_nodes
                        .iter()
                        .filter_map(|n| match &walk.states[n.index()] {
                            State::Analysis(a) => Some(a.as_ref()),
                            _ => None,
                        })
                        .collect();
                    let state = match conclusions.render(&walk.view(&review_nodes, &materialize_nodes, &scoring_nodes), &analyses) {
                        Ok(report) => State::Report(Box::new(report)),
                        Err(e) => {
                            let state = State::Failed(e.to_string());
                            render_error = Some(e);
                            state
                        }
                    };
                    walk.finish(node, state);
                }
            }
        }
        let Some(joined) = tasks.join_next_with_id().await else { break };
        let id = match &joined {
            Ok((id, _)) => *id,
            Err(e) => e.id(),
        };
        if task_nodes.get(&id).is_some_and(|n| matches!(graph[*n], Node::Review { .. }) && !walk.deferred[n.index()]) {
            own_reviews_in_flight -= 1;
        }
        match joined {
            Ok((_, (node, state))) => walk.finish(node, state),
            // A panicking reviewer fails its own run only.
            Err(e) => {
                if let Some(&node) = task_nodes.get(&e.id()) {
                    let state = match &graph[node] {
                        Node::Review { run } => {
                            let error = ReviewError::failed(format!("the reviewer crashed: {e}"));
                            emitter.emit(Event::RunFailed { run: plan.runs[*run].id(), error: error.clone() });
                            State::Run(RunOutcome::Failed(error))
                        }
                        _ => State::Failed(format!("the task crashed: {e}")),
                    };
                    walk.finish(node, state);
                }
            }
        }
    }

    // Everything stored is made durable at once (entries are written without an fsync each).
    let sync_store = cache.clone();
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || sync_store.sync()).await {
        emitter.emit(Event::Warning { message: format!("the cache could not be synced to disk: {e}") });
    }
    let mut states = walk.states;
    let mut outcomes = Vec::with_capacity(plan.runs.len());
    for n in &review_nodes {
        outcomes.push(match std::mem::replace(&mut states[n.index()], State::Pending) {
            State::Run(outcome) => outcome,
            _ => RunOutcome::Skipped(SkipReason::Interrupted),
        });
    }
    let mut analyses = Vec::new();
    for &n in &analyze_nodes {
        if let State::Analysis(a) = std::mem::replace(&mut states[n.index()], State::Pending) {
            analyses.push(*a);
        }
    }
    let report = graph.node_indices().find(|n| graph[*n] == Node::Render).and_then(|n| match std::mem::replace(&mut states[n.index()], State::Pending) {
        State::Report(r) => Some(Ok(*r)),
        _ => None,
    });
    let report = report.or_else(|| render_error.map(Err));
    let mut saved = Spent::default();
    for outcome in &outcomes {
        if let RunOutcome::Cached { record, .. } = outcome {
            saved.add_cost(&record.cost);
        }
    }
    let cost = meter.report(saved, outcomes.iter().filter(|o| o.is_over_budget()).count());
    emitter.emit(Event::Cost(cost.clone()));
    Execution { outcomes, analyses, report, cost }
}

/// Every run's cache lookup, in plan order, on as many threads as the machine has cores
/// (reading and verifying 100k entries is most of a fully cached execution). A hit also
/// remembers its slot, so `plan` explains a later miss against the key last used; best
/// effort, so a read-only cache still serves hits.
fn look_up_runs(cache: &dyn Store, plan: &Plan, experiment: &str) -> Vec<Lookup> {
    let look_up = |runs: &[crate::plan::PlannedRun]| {
        let keys: Vec<&crate::cache::CacheKey> = runs.iter().map(|run| &run.key).collect();
        let mut lookups = cache.lookup_batch(&keys);
        for (run, lookup) in runs.iter().zip(&mut lookups) {
            if let Lookup::Hit { record, .. } = lookup {
                let _ = cache.remember_slot(&run.slot(experiment), &run.key);
                // The record's inputs are the plan's (the key is their hash): hold them once.
                if record.inputs == run.inputs {
                    record.inputs = run.inputs.clone();
                }
            }
        }
        lookups
    };
    let threads = cores().min(16);
    if threads == 1 || plan.runs.len() < 256 {
        return look_up(&plan.runs);
    }
    let chunk = plan.runs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = plan.runs.chunks(chunk).map(|runs| scope.spawn(move || look_up(runs))).collect();
        // A worker that panicked loses nothing but its lookups: those runs count as misses.
        workers
            .into_iter()
            .zip(plan.runs.chunks(chunk))
            .flat_map(|(w, runs)| w.join().unwrap_or_else(|_| runs.iter().map(|_| Lookup::Miss).collect()))
            .collect()
    })
}

/// How many threads CPU-bound work of the walk uses at once: the machine's cores.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The analyze nodes in manifest order.
fn analysis_order(plan: &Plan) -> Vec<NodeIndex> {
    let mut nodes: Vec<(usize, NodeIndex)> = plan
        .graph
        .node_indices()
        .filter_map(|n| match plan.graph[n] {
            Node::Analyze { index } => Some((index, n)),
            _ => None,
        })
        .collect();
    nodes.sort_unstable();
    nodes.into_iter().map(|(_, n)| n).collect()
}

/// The walk's bookkeeping: node states, unmet dependencies, the ready queue.
struct Walk<'a, A, R> {
    plan: &'a Plan,
    states: Vec<State<A, R>>,
    /// Dependencies of each pending node not yet done.
    remaining: Vec<usize>,
    ready: VecDeque<NodeIndex>,
    /// Ready nodes started only once `ready` is empty (`--steal`: other shards' reviews).
    later: VecDeque<NodeIndex>,
    /// Which nodes go to `later`.
    deferred: Vec<bool>,
    emitter: &'a Emitter,
}

impl<A, R> Walk<'_, A, R> {
    /// Queues a node whose dependencies are all done.
    fn release(&mut self, node: NodeIndex) {
        if self.deferred[node.index()] {
            self.later.push_back(node);
        } else {
            self.ready.push_back(node);
        }
    }

    fn view<'v>(
        &'v self,
        review_nodes: &'v [NodeIndex],
        materialize_nodes: &'v BTreeMap<String, NodeIndex>,
        scoring_nodes: &'v HashMap<Node, NodeIndex>,
    ) -> WalkView<'v, A, R> {
        WalkView { plan: self.plan, states: &self.states, review_nodes, materialize_nodes, scoring_nodes }
    }

    /// Records a node's result and releases its dependents: a dependent that requires a
    /// failed node is skipped (and so, in turn, are its own dependents).
    fn finish(&mut self, node: NodeIndex, state: State<A, R>) {
        let graph = &self.plan.graph;
        match (&graph[node], &state) {
            (Node::Materialize { subject }, State::Failed(error)) => {
                self.emitter.emit(Event::MaterializeFailed { subject: subject.clone(), error: error.clone() })
            }
            (n, State::Scored(scored)) if is_scoring(n) => {
                self.emitter.emit(Event::StageDone { node: describe(n), calls: scored.values.len(), cached: scored.cached })
            }
            (n, State::Failed(error)) if is_scoring(n) => self.emitter.emit(Event::StageFailed { node: describe(n), error: error.clone() }),
            // An interrupted node is not a failure: the interruption is reported once, and
            // running again completes it.
            // Nor is one the budget left unrun: the cost event counts its calls.
            (n, State::Skipped(reason))
                if is_scoring(n) && *reason != SkipReason::Interrupted && !matches!(reason, SkipReason::OtherShard { .. } | SkipReason::OverBudget { .. }) =>
            {
                self.emitter.emit(Event::StageFailed { node: describe(n), error: reason.to_string() })
            }
            _ => {}
        }
        self.states[node.index()] = state;
        let mut released = Vec::new();
        let mut done = vec![node];
        while let Some(node) = done.pop() {
            let failure = (!self.states[node.index()].succeeded()).then(|| self.states[node.index()].error());
            let other_shard = self.states[node.index()].other_shard();
            for edge in graph.edges_directed(node, Direction::Outgoing) {
                let next = edge.target();
                if !matches!(self.states[next.index()], State::Pending) {
                    continue;
                }
                match (&failure, edge.weight()) {
                    (Some(error), Dependency::Requires) => {
                        let reason = match (&other_shard, &graph[node]) {
                            (Some(reason), _) => reason.clone(),
                            (None, Node::Materialize { subject }) => SkipReason::SubjectFailed { subject: subject.clone(), error: error.clone() },
                            (None, other) => SkipReason::DependencyFailed { dependency: describe(other), error: error.clone() },
                        };
                        self.states[next.index()] = match &graph[next] {
                            Node::Review { run } => {
                                self.emitter.emit(Event::RunSkipped { run: self.plan.runs[*run].id(), reason: reason.clone() });
                                State::Run(RunOutcome::Skipped(reason))
                            }
                            _ => State::Skipped(reason),
                        };
                        // A skipped node is done: its own dependents are released or skipped in turn.
                        done.push(next);
                    }
                    _ => {
                        let left = &mut self.remaining[next.index()];
                        *left = left.saturating_sub(1);
                        if *left == 0 {
                            released.push(next);
                        }
                    }
                }
            }
        }
        // A subject's reviews are queued in their block's rotated order (`PlannedRun::order`);
        // they then race for their limits' slots, so starts follow it only as far as those do.
        released.sort_by_key(|&n| match &graph[n] {
            Node::Review { run } => (1, self.plan.runs[*run].repeat, self.plan.runs[*run].order),
            _ => (0, 0, 0),
        });
        for next in released {
            self.release(next);
        }
    }
}

fn is_scoring(node: &Node) -> bool {
    matches!(node, Node::Claims { .. } | Node::Smells { .. } | Node::Judge { .. } | Node::Match { .. } | Node::Embed { .. })
}

fn is_done<A, R>(state: &State<A, R>) -> bool {
    !matches!(state, State::Pending)
}

/// What a scoring node's calls are computed from: its subject's identity, the findings of
/// the run it requires, the claims and smells it requires.
fn node_inputs<'s, A, R>(plan: &'s Plan, states: &'s [State<A, R>], node: NodeIndex) -> Result<NodeInputs<'s>, String> {
    let graph = &plan.graph;
    let subject_id = match &graph[node] {
        Node::Claims { subject } | Node::Smells { subject } | Node::Embed { of: crate::plan::Embedded::References { subject } } => subject.as_str(),
        Node::Judge { run, .. } | Node::Match { run, .. } | Node::Embed { of: crate::plan::Embedded::Review { run } } => plan.runs[*run].subject_id.as_str(),
        other => return Err(format!("{} is not a scoring node", describe(other))),
    };
    let subject = plan.subjects.get(subject_id).ok_or_else(|| format!("no subject `{subject_id}`"))?;
    let reviewer = match &graph[node] {
        Node::Judge { run, .. } | Node::Match { run, .. } | Node::Embed { of: crate::plan::Embedded::Review { run } } => plan.runs[*run].reviewer.as_str(),
        _ => "",
    };
    let mut inputs = NodeInputs { subject: subject_id, subject_identity: &subject.identity, findings: None, reviewer, claims: None, smells: None };
    for edge in graph.edges_directed(node, Direction::Incoming) {
        match (&graph[edge.source()], &states[edge.source().index()]) {
            (Node::Review { .. }, State::Run(outcome)) => inputs.findings = outcome.success().map(|(_, findings)| findings),
            (Node::Claims { .. }, State::Scored(scored)) => inputs.claims = Some(&scored.values),
            (Node::Smells { .. }, State::Scored(scored)) => inputs.smells = Some(&scored.values),
            _ => {}
        }
    }
    Ok(inputs)
}

/// A node as messages name it.
fn describe(node: &Node) -> String {
    match node {
        Node::Materialize { subject } => format!("subject `{subject}`"),
        Node::Review { run } => format!("run {run}"),
        Node::Claims { subject } => format!("the claims of `{subject}`"),
        Node::Smells { subject } => format!("the smells of `{subject}`"),
        Node::Judge { run, judge } => format!("judge {} on run {run}", judge + 1),
        Node::Match { run, judge } => format!("judge {}'s matching of run {run}", judge + 1),
        Node::Embed { of: crate::plan::Embedded::References { subject } } => format!("the pseudo-reference embeddings of `{subject}`"),
        Node::Embed { of: crate::plan::Embedded::Review { run } } => format!("the review embeddings of run {run}"),
        Node::Analyze { index } => format!("analysis {}", index + 1),
        Node::Render => "the report".to_string(),
    }
}
