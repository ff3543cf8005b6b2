//! What the engine and its executors share: the parts of one execution, the graph's nodes by
//! kind, the limits and shared state of the walk, and the spawned tasks.

use super::review::ReviewShared;
use super::stages::{Scorers, StageShared};
use super::walk::{analysis_order, is_scoring, Materializer, State};
use super::{Emitter, ExecOptions};
use crate::cache::Store;
use crate::plan::{Node, Plan, ReviewerSet};
use crate::reviewer::redact::Redactor;
use petgraph::graph::NodeIndex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::sync::{watch, Semaphore};

/// Everything one execution needs, handed to the engine at once.
pub struct EngineParts<'a, C> {
    pub plan: &'a Plan,
    pub reviewers: &'a ReviewerSet,
    /// The scoring calls' meaning (judges, claims, analyzers, embedder); `None` when the
    /// experiment declares no scoring stage.
    pub scorers: Option<Arc<dyn Scorers>>,
    /// Builds a subject's repository and diff.
    pub materializer: Materializer,
    pub cache: Arc<dyn Store>,
    pub options: &'a ExecOptions,
    /// The analyze and render nodes' meaning.
    pub conclusions: &'a C,
    pub emitter: &'a Emitter,
    /// Turning true stops new materializations and reviews and abandons running reviews
    /// (their process groups are killed); what finished is already stored, and the analyses
    /// and reports still run over it.
    pub cancel: watch::Receiver<bool>,
}

/// The plan's nodes by kind.
pub(super) struct Nodes {
    /// The review node of each run, in plan order.
    pub review: Vec<NodeIndex>,
    pub materialize: BTreeMap<String, NodeIndex>,
    pub scoring: HashMap<Node, NodeIndex>,
    /// The analyze nodes in manifest order.
    pub analyze: Vec<NodeIndex>,
}

impl Nodes {
    pub(super) fn of(plan: &Plan) -> Self {
        let graph = &plan.graph;
        let materialize = graph
            .node_indices()
            .filter_map(|n| match &graph[n] {
                Node::Materialize { subject } => Some((subject.clone(), n)),
                _ => None,
            })
            .collect();
        let scoring = graph.node_indices().filter(|n| is_scoring(&graph[*n])).map(|n| (graph[n].clone(), n)).collect();
        Self { review: plan.review_nodes(), materialize, scoring, analyze: analysis_order(plan) }
    }
}

/// What the walk's executors share: the limits, the redactors and the shared state of the
/// reviews and the scoring calls.
pub(super) struct Resources<'r> {
    pub global: Arc<Semaphore>,
    /// Materializations at once: one per core but one, at most `--jobs`. They are CPU-bound git
    /// processes; started all together they finish all together, and the first review waits
    /// for the last of them. They take no `--jobs` place, so the subjects after the first are
    /// built while its reviews wait on their servers.
    pub materializing: Arc<Semaphore>,
    pub per_reviewer: HashMap<&'r str, Arc<Semaphore>>,
    pub redactors: HashMap<&'r str, Arc<Redactor>>,
    pub reviews: ReviewShared,
    pub stages: Option<StageShared>,
}

/// The walk's spawned tasks and which node each one is.
pub(super) struct Tasks<A, R> {
    pub set: tokio::task::JoinSet<(NodeIndex, State<A, R>)>,
    pub nodes: HashMap<tokio::task::Id, NodeIndex>,
}

impl<A: Send + 'static, R: Send + 'static> Tasks<A, R> {
    /// Spawns the work of `node`.
    pub(super) fn spawn(&mut self, node: NodeIndex, work: impl std::future::Future<Output = State<A, R>> + Send + 'static) {
        let handle = self.set.spawn(async move { (node, work.await) });
        self.nodes.insert(handle.id(), node);
    }
}
