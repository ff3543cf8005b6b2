//! The engine: one execution of a plan, in named phases. Before anything runs, the phases
//! settle every node they can — `seed_from_cache` (reviews the cache has), `shard` (other
//! machines' runs), `announce` (the plan's counts; a frozen execution's missing runs),
//! `preflight` (each reviewer checked once), `seed_scoring` (scoring nodes whose every call
//! is cached) and `prune_materialization` (subjects nothing left needs). `drive` then walks
//! the rest, handing each ready node to its executor (`executors/`).

use super::budget::{Meter, Spent};
use super::executors;
use super::parts::{EngineParts, Nodes, Resources, Tasks};
use super::review::ReviewShared;
use super::stages::{self, StageShared};
use super::walk::{describe, is_done, is_scoring, look_up_runs, node_inputs, Conclusions, Execution, State, Walk};
use super::{Event, RunOutcome, SkipReason};
use crate::cache::Lookup;
use crate::plan::{Dependency, Node};
use crate::reviewer::redact::Redactor;
use crate::reviewer::ReviewError;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex as StdMutex};
use tokio::sync::Semaphore;

/// One execution of a plan: its parts and the graph's nodes by kind.
pub struct Engine<'a, C: Conclusions> {
    parts: EngineParts<'a, C>,
    nodes: Nodes,
}

/// A cache sync running beside the rest of the walk.
type EarlySync = tokio::task::JoinHandle<Result<(), crate::cache::CacheError>>;

impl<'a, C: Conclusions> Engine<'a, C> {
    pub fn new(parts: EngineParts<'a, C>) -> Self {
        let nodes = Nodes::of(parts.plan);
        Self { parts, nodes }
    }

    /// Runs the execution: the phases that settle what they can, then the walk of the rest.
    pub async fn run(self) -> Execution<C::Analysis, C::Report, C::Error> {
        // Held (shared) for the whole execution, so `cache gc` never removes what it writes or
        // reads; a read-only cache (a frozen check of a committed one) goes without.
        let lock_store = self.parts.cache.clone();
        let _cache_lock = tokio::task::spawn_blocking(move || lock_store.hold().ok()).await.ok().flatten();
        let plan = self.parts.plan;
        let mut states: Vec<State<C::Analysis, C::Report>> = plan.graph.node_indices().map(|_| State::Pending).collect();
        let mut pending_runs = self.seed_from_cache(&mut states).await;
        let deferred = self.shard(&mut states, &mut pending_runs);
        self.announce(&mut states, pending_runs);
        self.preflight(&mut states).await;
        self.seed_scoring(&mut states);
        self.prune_materialization(&mut states);
        if self.nodes.review.iter().any(|n| matches!(states[n.index()], State::Pending)) {
            self.parts.conclusions.reviews_ahead();
        }
        let meter = Arc::new(Meter::new(self.parts.options.max_cost));
        let mut walk = Walk::start(plan, states, deferred, self.parts.emitter);
        let (render_error, background_syncs) = self.drive(&mut walk, &meter).await;
        // Everything stored is made durable at once (entries are written without an fsync each):
        // started once the last reviews were all in flight (or when the first analysis was
        // ready), beside them; again once the last review was stored, beside the analyses and
        // the reports; and again here for whatever was written since (a no-op when nothing was).
        let mut synced = Vec::new();
        for handle in background_syncs {
            synced.extend(handle.await.ok());
        }
        let sync_store = self.parts.cache.clone();
        let last = tokio::task::spawn_blocking(move || sync_store.sync()).await.ok();
        if let Some(Err(e)) = synced.into_iter().chain(last).find(Result::is_err) {
            self.parts.emitter.emit(Event::Warning { message: format!("the cache could not be synced to disk: {e}") });
        }
        self.collect(walk.into_states(), render_error, &meter)
    }

    /// Reviews the cache already has are done before the walk starts; a remote cache fetches
    /// the ones it has first, in parallel. Returns how many runs are still to do.
    async fn seed_from_cache(&self, states: &mut [State<C::Analysis, C::Report>]) -> usize {
        let (plan, options, emitter) = (self.parts.plan, self.parts.options, self.parts.emitter);
        if !options.refresh {
            let (store, keys) = (self.parts.cache.clone(), plan.runs.iter().map(|r| r.key.clone()).collect::<Vec<_>>());
            let _ = tokio::task::spawn_blocking(move || store.prefetch(&keys)).await;
        }
        let mut pending_runs = 0usize;
        let lookups =
            if options.refresh { plan.runs.iter().map(|_| Lookup::Miss).collect() } else { look_up_runs(self.parts.cache.as_ref(), plan, &options.experiment) };
        for (i, lookup) in lookups.into_iter().enumerate() {
            let run = &plan.runs[i];
            match lookup {
                Lookup::Hit { record, findings } => states[self.nodes.review[i].index()] = State::Run(RunOutcome::Cached { record, findings }),
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
        pending_runs
    }

    /// A shard executes its own runs only; the rest are other machines' work, or, with
    /// `--steal`, started after its own, each under a lease. Returns which nodes are deferred.
    fn shard(&self, states: &mut [State<C::Analysis, C::Report>], pending_runs: &mut usize) -> Vec<bool> {
        let (plan, options) = (self.parts.plan, self.parts.options);
        let mut deferred = vec![false; plan.graph.node_count()];
        let Some(shard) = options.shard else { return deferred };
        for (i, run) in plan.runs.iter().enumerate() {
            let node = self.nodes.review[i].index();
            if !matches!(states[node], State::Pending) || shard.contains(&run.key) {
                continue;
            }
            if options.steal.is_some() {
                deferred[node] = true;
            } else {
                let owner = crate::plan::Shard { index: crate::plan::Shard::of(&run.key, shard.count), count: shard.count };
                states[node] = State::Run(RunOutcome::Skipped(SkipReason::OtherShard { shard: owner.to_string() }));
                *pending_runs -= 1;
            }
        }
        deferred
    }

    /// Tells the reporters what the plan holds and what the cache settled; a frozen execution
    /// marks every run still to do as missing.
    fn announce(&self, states: &mut [State<C::Analysis, C::Report>], pending_runs: usize) {
        let (plan, options, emitter) = (self.parts.plan, self.parts.options, self.parts.emitter);
        emitter.emit(Event::Planned {
            experiment: options.experiment.clone(),
            runs: plan.runs.len(),
            cached: plan.runs.len() - pending_runs,
            to_run: if options.frozen { 0 } else { pending_runs },
        });
        for (i, run) in plan.runs.iter().enumerate() {
            if let State::Run(RunOutcome::Cached { findings, .. }) = &states[self.nodes.review[i].index()] {
                emitter.emit(Event::RunCached { run: run.id(), findings: findings.len() });
            }
        }
        for (i, run) in plan.runs.iter().enumerate() {
            if let State::Run(RunOutcome::Skipped(reason @ SkipReason::OtherShard { .. })) = &states[self.nodes.review[i].index()] {
                emitter.emit(Event::RunSkipped { run: run.id(), reason: reason.clone() });
            }
        }
        if options.frozen {
            for (i, run) in plan.runs.iter().enumerate() {
                let state = &mut states[self.nodes.review[i].index()];
                if !matches!(state, State::Pending) {
                    continue;
                }
                // A reviewer that fails the same way every time failed this run before: that
                // failure is its result, as it was when it ran.
                let deterministic = self.parts.reviewers.get(&run.reviewer).is_some_and(|r| r.failures_are_deterministic());
                match deterministic.then(|| self.parts.cache.failure(&run.key)).flatten() {
                    Some(recorded) => {
                        emitter.emit(Event::RunFailed { run: run.id(), error: recorded.error.clone() });
                        *state = State::Run(RunOutcome::Failed(recorded.error));
                    }
                    None => {
                        emitter.emit(Event::RunMissing { run: run.id() });
                        *state = State::Run(RunOutcome::Missing);
                    }
                }
            }
        }
    }

    /// Each reviewer that still has runs to do is checked once before any starts; a failed
    /// check fails that reviewer's runs.
    async fn preflight(&self, states: &mut [State<C::Analysis, C::Report>]) {
        let (plan, reviewers) = (self.parts.plan, self.parts.reviewers);
        let mut preflighted: BTreeMap<&str, Result<(), ReviewError>> = BTreeMap::new();
        for (i, run) in plan.runs.iter().enumerate() {
            if !matches!(states[self.nodes.review[i].index()], State::Pending) || preflighted.contains_key(run.reviewer.as_str()) {
                continue;
            }
            let result = match reviewers.get(&run.reviewer) {
                Some(reviewer) => {
                    let checked = reviewer.preflight().await.map_err(|e| Redactor::new(reviewer.secrets()).error(e));
                    // What its first run would ask before its first request is asked now,
                    // beside the first subjects' builds.
                    if let Some(ask) = checked.is_ok().then(|| Arc::clone(reviewer).ask_ahead(&run.cell)).flatten() {
                        tokio::spawn(ask);
                    }
                    checked
                }
                None => Err(ReviewError::failed(format!("no reviewer named `{}`", run.reviewer))),
            };
            preflighted.insert(run.reviewer.as_str(), result);
        }
        for (i, run) in plan.runs.iter().enumerate() {
            if let Some(Err(error)) = preflighted.get(run.reviewer.as_str()) {
                let state = &mut states[self.nodes.review[i].index()];
                if matches!(state, State::Pending) {
                    self.parts.emitter.emit(Event::RunFailed { run: run.id(), error: error.clone() });
                    *state = State::Run(RunOutcome::Failed(error.clone()));
                }
            }
        }
    }

    /// Scoring nodes whose every call the cache has are done before the walk too: their keys
    /// need no repository, only their subject's identity and what they score.
    fn seed_scoring(&self, states: &mut [State<C::Analysis, C::Report>]) {
        let (plan, options) = (self.parts.plan, self.parts.options);
        let graph = &plan.graph;
        let mut scoring_order: Vec<NodeIndex> = self.nodes.scoring.values().copied().collect();
        scoring_order.sort_unstable();
        for n in scoring_order {
            let requires = || graph.edges_directed(n, Direction::Incoming).filter(|e| *e.weight() == Dependency::Requires);
            let settled = |e: &petgraph::graph::EdgeReference<'_, Dependency>| !matches!(graph[e.source()], Node::Materialize { .. });
            if let Some(failed) = requires().find(|e| settled(e) && is_done(&states[e.source().index()]) && !states[e.source().index()].succeeded()) {
                let source = &states[failed.source().index()];
                let reason = source
                    .other_shard()
                    .unwrap_or_else(|| SkipReason::DependencyFailed { dependency: describe(&graph[failed.source()]), error: source.error() });
                states[n.index()] = State::Skipped(reason);
                continue;
            }
            if requires().any(|e| settled(&e) && !is_done(&states[e.source().index()])) {
                continue;
            }
            let Some(scorers) = &self.parts.scorers else {
                states[n.index()] = State::Failed("the experiment declares no scoring stages".to_string());
                continue;
            };
            let calls = match node_inputs(plan, states, n).and_then(|inputs| scorers.calls(&graph[n], &inputs)) {
                Ok(calls) => calls,
                Err(e) => {
                    states[n.index()] = State::Failed(e);
                    continue;
                }
            };
            if options.refresh {
                continue;
            }
            if let Some(scored) = stages::all_cached(self.parts.cache.as_ref(), scorers.as_ref(), &calls) {
                states[n.index()] = State::Scored(Arc::new(scored));
            } else if options.frozen {
                states[n.index()] = State::Skipped(SkipReason::NotCached);
            }
        }
    }

    /// A subject is materialized only for a dependent that still has to run.
    fn prune_materialization(&self, states: &mut [State<C::Analysis, C::Report>]) {
        let graph = &self.parts.plan.graph;
        for n in self.nodes.materialize.values() {
            if !graph.edges_directed(*n, Direction::Outgoing).any(|e| matches!(states[e.target().index()], State::Pending)) {
                states[n.index()] = State::NotNeeded;
            }
        }
    }

    /// The limits and shared state the executors use.
    fn resources(&self, meter: &Arc<Meter>) -> Resources<'a> {
        let EngineParts { reviewers, options, cache, cancel, emitter, scorers, .. } = &self.parts;
        let (reviewers, options) = (*reviewers, *options);
        let writers = super::writes::Writers::for_jobs(options.jobs);
        let global = Arc::new(Semaphore::new(options.jobs.max(1)));
        let per_reviewer = reviewers
            .keys()
            .map(|name| {
                let limit = options.reviewers.get(name).and_then(|l| l.max_concurrency).unwrap_or(options.jobs);
                (name.as_str(), Arc::new(Semaphore::new(limit.max(1))))
            })
            .collect();
        let redactors = reviewers.iter().map(|(name, r)| (name.as_str(), Arc::new(Redactor::new(r.secrets())))).collect();
        let stages = scorers.clone().map(|scorers| StageShared {
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
        let reviews = ReviewShared {
            cache: cache.clone(),
            refresh: options.refresh,
            emitter: (*emitter).clone(),
            experiment: options.experiment.clone(),
            global: global.clone(),
            scopes: Arc::default(),
            unreachable: Arc::new(StdMutex::new(HashMap::new())),
            meter: meter.clone(),
            cancel: cancel.clone(),
            lease: options.steal,
            writers,
        };
        // One core is left to the reviews (theirs are mostly waits, but sending and storing
        // take a core too), so a first wave starts while later subjects build.
        let materializing = Arc::new(Semaphore::new(super::cores().saturating_sub(1).max(1).min(options.jobs.max(1))));
        Resources { global, materializing, per_reviewer, redactors, reviews, stages }
    }

    /// Walks the nodes the phases left pending: each ready node goes to its executor, and a
    /// finished task releases its dependents. Returns the render node's error, if it failed,
    /// and the cache syncs it started: once the reviews still to finish were all in flight
    /// (those before them are stored by then, and the machine waits on servers), or else when
    /// the first analysis became ready; and once the last review was stored (each review's
    /// task ends once its entries are written), beside the analyses and the reports.
    async fn drive(&self, walk: &mut Walk<'a, C::Analysis, C::Report>, meter: &Arc<Meter>) -> (Option<C::Error>, Vec<EarlySync>) {
        let resources = self.resources(meter);
        let mut tasks = Tasks { set: tokio::task::JoinSet::new(), nodes: HashMap::new() };
        let mut render_error = None;
        let jobs = self.parts.options.jobs.max(1);
        let mut own_reviews_in_flight = 0usize;
        let mut early_sync: Option<EarlySync> = None;
        let mut late_sync: Option<EarlySync> = None;
        // Reviews still to finish: once the last of them are all in flight, what they wait on
        // is their servers, and the cache syncs what the others stored meanwhile.
        let reviews_to_run = self.nodes.review.iter().filter(|n| matches!(walk.states[n.index()], State::Pending)).count();
        let mut reviews_left = reviews_to_run;
        loop {
            if early_sync.is_none() && reviews_left < reviews_to_run && reviews_left <= jobs {
                early_sync = Some(self.sync_in_background());
            }
            // Deferred reviews (`--steal`: other shards' runs) start only once every review of
            // this shard has a slot, so none of them waits behind one of another shard's.
            while let Some(node) = walk.ready.pop_front().or_else(|| if own_reviews_in_flight < jobs { walk.later.pop_front() } else { None }) {
                if early_sync.is_none() && matches!(self.parts.plan.graph[node], Node::Analyze { .. }) {
                    early_sync = Some(self.sync_in_background());
                }
                let spawned_review = self.dispatch(node, walk, &resources, &mut tasks, &mut render_error);
                if spawned_review && !walk.deferred[node.index()] {
                    own_reviews_in_flight += 1;
                }
            }
            let Some(joined) = tasks.set.join_next_with_id().await else { break };
            let id = match &joined {
                Ok((id, _)) => *id,
                Err(e) => e.id(),
            };
            let node = tasks.nodes.get(&id).copied();
            if let Some(n) = node.filter(|n| matches!(self.parts.plan.graph[*n], Node::Review { .. })) {
                reviews_left = reviews_left.saturating_sub(1);
                if !walk.deferred[n.index()] {
                    own_reviews_in_flight -= 1;
                }
                if reviews_left == 0 && late_sync.is_none() {
                    late_sync = Some(self.sync_in_background());
                }
            }
            match joined {
                Ok((_, (node, state))) => walk.finish(node, state),
                Err(e) => {
                    if let Some(node) = node {
                        self.crashed(node, walk, &e);
                    }
                }
            }
        }
        (render_error, early_sync.into_iter().chain(late_sync).collect())
    }

    /// Makes what the cache holds durable on a blocking thread, beside the rest of the walk.
    fn sync_in_background(&self) -> EarlySync {
        let store = self.parts.cache.clone();
        tokio::task::spawn_blocking(move || store.sync())
    }

    /// Hands one ready node to its executor; returns whether it spawned a review.
    fn dispatch(
        &self,
        node: NodeIndex,
        walk: &mut Walk<'a, C::Analysis, C::Report>,
        resources: &Resources<'a>,
        tasks: &mut Tasks<C::Analysis, C::Report>,
        render_error: &mut Option<C::Error>,
    ) -> bool {
        let interrupted = *self.parts.cancel.borrow();
        match &self.parts.plan.graph[node] {
            Node::Materialize { .. } | Node::Review { .. } if interrupted => walk.finish(node, State::Skipped(SkipReason::Interrupted)),
            n if is_scoring(n) && interrupted => walk.finish(node, State::Skipped(SkipReason::Interrupted)),
            Node::Materialize { subject } => executors::materialize(&self.parts, node, subject, walk, resources, tasks),
            Node::Review { run } => return executors::review(&self.parts, &self.nodes, node, *run, walk, resources, tasks),
            n if is_scoring(n) => executors::score(&self.parts, node, walk, resources, tasks),
            // Analyses and their parts run in the walk, the ready ones side by side: they only read.
            Node::Analyze { .. } | Node::AnalyzePart { .. } => executors::analyze_ready(&self.parts, &self.nodes, node, walk),
            Node::Render => executors::render(&self.parts, &self.nodes, node, walk, render_error),
            _ => walk.finish(node, State::Failed(format!("{} has no executor", describe(&self.parts.plan.graph[node])))),
        }
        false
    }

    /// A task that panicked fails its own node only; a crashed reviewer fails its run.
    fn crashed(&self, node: NodeIndex, walk: &mut Walk<'a, C::Analysis, C::Report>, error: &tokio::task::JoinError) {
        let plan = self.parts.plan;
        let state = match &plan.graph[node] {
            Node::Review { run } => {
                let error = ReviewError::failed(format!("the reviewer crashed: {error}"));
                self.parts.emitter.emit(Event::RunFailed { run: plan.runs[*run].id(), error: error.clone() });
                State::Run(RunOutcome::Failed(error))
            }
            _ => State::Failed(format!("the task crashed: {error}")),
        };
        walk.finish(node, state);
    }

    /// The execution's result from the final node states: each run's outcome, the analyses
    /// in manifest order, the report, and what it all cost.
    fn collect(
        &self,
        mut states: Vec<State<C::Analysis, C::Report>>,
        render_error: Option<C::Error>,
        meter: &Meter,
    ) -> Execution<C::Analysis, C::Report, C::Error> {
        let graph = &self.parts.plan.graph;
        let mut outcomes = Vec::with_capacity(self.parts.plan.runs.len());
        for n in &self.nodes.review {
            outcomes.push(match std::mem::replace(&mut states[n.index()], State::Pending) {
                State::Run(outcome) => outcome,
                _ => RunOutcome::Skipped(SkipReason::Interrupted),
            });
        }
        let mut analyses = Vec::new();
        for &n in &self.nodes.analyze {
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
        self.parts.emitter.emit(Event::Cost(cost.clone()));
        Execution { outcomes, analyses, report, cost }
    }
}
