//! The walk's bookkeeping: every node's state, the dependencies each pending node still waits
//! for, and the ready queue. A node is released once its dependencies are done; a node whose
//! `Requires` dependency failed is skipped, and so, transitively, are exactly its dependents.
//! What runs a released node is the engine's (`engine.rs`).

use super::budget::CostReport;
use super::stages::{NodeInputs, Scored};
use super::{Emitter, Event, RunOutcome, SkipReason};
use crate::cache::{Lookup, Store};
use crate::plan::{Dependency, Node, Plan, ScoreTarget};
use crate::subject::{Subject, SubjectSpec};
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

/// Builds a subject's repository and diff (on a blocking thread).
pub type Materializer = Arc<dyn Fn(&SubjectSpec, &Path) -> Result<Subject, String> + Send + Sync>;

/// What analyze and render nodes compute: the experiment supplies their meaning (the
/// manifest's analyses, its report), the engine decides when they run.
pub trait Conclusions: Sync {
    /// An analysis's result.
    type Analysis: Send + Sync + 'static;
    /// What one part of an analysis computed ahead of the rest ([`Node::AnalyzePart`]).
    type Part: Send + Sync + 'static;
    /// What rendering produced.
    type Report: Send + Sync + 'static;
    /// Why rendering failed.
    type Error: Send + std::fmt::Display + 'static;
    /// Part `part` of analysis number `index`, once its `runs` (plan order) are done, while
    /// other runs may still be under way.
    fn analyze_part(&self, index: usize, part: &str, runs: &[usize], view: &WalkView<'_, Self::Analysis, Self::Report>) -> Self::Part;
    /// Analysis number `index`, once every run it observes is done (and its parts, read through
    /// [`WalkView::parts`]).
    fn analyze(&self, index: usize, view: &WalkView<'_, Self::Analysis, Self::Report>) -> Self::Analysis;
    /// The reports, once every analysis is done. `analyses` is in manifest order.
    fn render(&self, view: &WalkView<'_, Self::Analysis, Self::Report>, analyses: &[&Self::Analysis]) -> Result<Self::Report, Self::Error>;
    /// Said once, before the walk, when reviews are to run: what only a render after fresh
    /// reviews needs may start beside them. An execution served from the cache is not told.
    fn reviews_ahead(&self) {}
}

/// The state of a node during and after the walk.
pub(super) enum State<A, R> {
    Pending,
    /// Materialization was not needed: every dependent was served from the cache.
    NotNeeded,
    Subject(Arc<Subject>),
    Run(RunOutcome),
    Scored(Arc<Scored>),
    /// A part of an analysis: the conclusions' `Part`, which the engine does not read.
    Part(Box<dyn std::any::Any + Send + Sync>),
    Analysis(Box<A>),
    Report(Box<R>),
    Failed(String),
    Skipped(SkipReason),
}

impl<A, R> State<A, R> {
    pub(super) fn succeeded(&self) -> bool {
        match self {
            Self::Subject(_) | Self::Scored(_) | Self::Part(_) | Self::Analysis(_) | Self::Report(_) | Self::NotNeeded => true,
            Self::Run(outcome) => outcome.success().is_some(),
            Self::Pending | Self::Failed(_) | Self::Skipped(_) => false,
        }
    }

    /// `--shard`: this node is another shard's work, and so are the nodes that require it.
    pub(super) fn other_shard(&self) -> Option<SkipReason> {
        match self {
            Self::Skipped(reason @ SkipReason::OtherShard { .. }) | Self::Run(RunOutcome::Skipped(reason @ SkipReason::OtherShard { .. })) => {
                Some(reason.clone())
            }
            _ => None,
        }
    }

    pub(super) fn error(&self) -> String {
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
    analyze_nodes: &'a [NodeIndex],
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

    /// A scoring node's answers ([`Node::Score`]).
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

    /// The parts of analysis `index` done so far, in plan order, each as the conclusions'
    /// `Part` type `P` (a part of any other type is not listed).
    pub fn parts<P: 'static>(&self, index: usize) -> Vec<&P> {
        let Some(&node) = self.analyze_nodes.get(index) else { return Vec::new() };
        let mut parts: Vec<NodeIndex> =
            self.plan.graph.neighbors_directed(node, Direction::Incoming).filter(|n| matches!(self.plan.graph[*n], Node::AnalyzePart { .. })).collect();
        parts.sort_unstable();
        parts
            .into_iter()
            .filter_map(|n| match &self.states[n.index()] {
                State::Part(part) => part.downcast_ref::<P>(),
                _ => None,
            })
            .collect()
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

/// Every run's cache lookup, in plan order, on as many threads as the machine has cores
/// (reading and verifying 100k entries is most of a fully cached execution). A hit also
/// remembers its slot, so `plan` explains a later miss against the key last used; best
/// effort, so a read-only cache still serves hits.
pub(super) fn look_up_runs(cache: &dyn Store, plan: &Plan, experiment: &str) -> Vec<Lookup> {
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
    let threads = super::cores().min(16);
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

/// The analyze nodes in manifest order.
pub(super) fn analysis_order(plan: &Plan) -> Vec<NodeIndex> {
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
pub(super) struct Walk<'a, A, R> {
    plan: &'a Plan,
    pub(super) states: Vec<State<A, R>>,
    /// Dependencies of each pending node not yet done.
    remaining: Vec<usize>,
    pub(super) ready: VecDeque<NodeIndex>,
    /// Ready nodes started only once `ready` is empty (`--steal`: other shards' reviews).
    pub(super) later: VecDeque<NodeIndex>,
    /// Which nodes go to `later`.
    pub(super) deferred: Vec<bool>,
    emitter: &'a Emitter,
}

impl<'a, A, R> Walk<'a, A, R> {
    /// The walk over `states` as the engine's phases left them: every pending node counts the
    /// pending dependencies it waits for, and those waiting for none are ready.
    pub(super) fn start(plan: &'a Plan, states: Vec<State<A, R>>, deferred: Vec<bool>, emitter: &'a Emitter) -> Self {
        let graph = &plan.graph;
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
        walk
    }

    /// Every node's final state.
    pub(super) fn into_states(self) -> Vec<State<A, R>> {
        self.states
    }

    /// Queues a node whose dependencies are all done.
    fn release(&mut self, node: NodeIndex) {
        if self.deferred[node.index()] {
            self.later.push_back(node);
        } else {
            self.ready.push_back(node);
        }
    }

    pub(super) fn view<'v>(
        &'v self,
        review_nodes: &'v [NodeIndex],
        materialize_nodes: &'v BTreeMap<String, NodeIndex>,
        scoring_nodes: &'v HashMap<Node, NodeIndex>,
        analyze_nodes: &'v [NodeIndex],
    ) -> WalkView<'v, A, R> {
        WalkView { plan: self.plan, states: &self.states, review_nodes, materialize_nodes, scoring_nodes, analyze_nodes }
    }

    /// Records a node's result and releases its dependents: a dependent that requires a
    /// failed node is skipped (and so, in turn, are its own dependents).
    pub(super) fn finish(&mut self, node: NodeIndex, state: State<A, R>) {
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

pub(super) fn is_scoring(node: &Node) -> bool {
    matches!(node, Node::Score { .. })
}

pub(super) fn is_done<A, R>(state: &State<A, R>) -> bool {
    !matches!(state, State::Pending)
}

/// What a scoring node's calls are computed from: its subject's identity, the findings of
/// the run it requires, the answers of the scoring nodes it requires.
pub(super) fn node_inputs<'s, A, R>(plan: &'s Plan, states: &'s [State<A, R>], node: NodeIndex) -> Result<NodeInputs<'s>, String> {
    let graph = &plan.graph;
    let (subject_id, reviewer) = match &graph[node] {
        Node::Score { target: ScoreTarget::Subject(subject), .. } => (subject.as_str(), ""),
        Node::Score { target: ScoreTarget::Run(run), .. } => (plan.runs[*run].subject_id.as_str(), plan.runs[*run].reviewer.as_str()),
        other => return Err(format!("{} is not a scoring node", describe(other))),
    };
    let subject = plan.subjects.get(subject_id).ok_or_else(|| format!("no subject `{subject_id}`"))?;
    let mut inputs = NodeInputs { subject: subject_id, subject_identity: &subject.identity, findings: None, reviewer, scored: Vec::new() };
    for edge in graph.edges_directed(node, Direction::Incoming) {
        match (&graph[edge.source()], &states[edge.source().index()]) {
            (Node::Review { .. }, State::Run(outcome)) => inputs.findings = outcome.success().map(|(_, findings)| findings),
            (Node::Score { stage, .. }, State::Scored(scored)) => inputs.scored.push((*stage, &scored.values)),
            _ => {}
        }
    }
    Ok(inputs)
}

/// A node as messages name it.
pub(super) fn describe(node: &Node) -> String {
    match node {
        Node::Materialize { subject } => format!("subject `{subject}`"),
        Node::Review { run } => format!("run {run}"),
        Node::Score { stage, member, target } => stage.describe(*member, target),
        Node::AnalyzePart { index, part } => format!("part `{part}` of analysis {}", index + 1),
        Node::Analyze { index } => format!("analysis {}", index + 1),
        Node::Render => "the report".to_string(),
    }
}
