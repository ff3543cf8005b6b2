//! The scoring executor: a scoring node's calls, computed from what it requires, spawned
//! under their endpoints' limits (`stages.rs` is how the calls run).

use super::super::parts::{EngineParts, Resources, Tasks};
use super::super::stages::{run_node, NodeError};
use super::super::walk::{node_inputs, Conclusions, State, Walk};
use super::super::SkipReason;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use std::sync::Arc;

/// Spawns scoring node `node`.
pub(in crate::exec) fn score<'a, C: Conclusions>(
    parts: &EngineParts<'a, C>,
    node: NodeIndex,
    walk: &mut Walk<'a, C::Analysis, C::Report>,
    resources: &Resources<'a>,
    tasks: &mut Tasks<C::Analysis, C::Report>,
) {
    let graph = &parts.plan.graph;
    let Some(shared) = resources.stages.clone() else {
        walk.finish(node, State::Failed("the experiment declares no scoring stages".to_string()));
        return;
    };
    let calls = match node_inputs(parts.plan, &walk.states, node).and_then(|inputs| shared.scorers.calls(&graph[node], &inputs)) {
        Ok(calls) => calls,
        Err(e) => {
            walk.finish(node, State::Failed(e));
            return;
        }
    };
    let subject = graph.edges_directed(node, Direction::Incoming).find_map(|e| match &walk.states[e.source().index()] {
        State::Subject(s) => Some(s.clone()),
        _ => None,
    });
    tasks.spawn(node, async move {
        match run_node(shared, calls, subject).await {
            Ok(scored) => State::Scored(Arc::new(scored)),
            Err(NodeError::Interrupted) => State::Skipped(SkipReason::Interrupted),
            Err(NodeError::NotCached) => State::Skipped(SkipReason::NotCached),
            Err(NodeError::OverBudget(budget)) => State::Skipped(SkipReason::OverBudget { budget }),
            Err(NodeError::Failed(e)) => State::Failed(e),
        }
    });
}
