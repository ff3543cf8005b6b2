//! The analyze and render executors. Analyses run in the walk itself, the ready ones side by
//! side on as many threads as there are cores (they only read what the walk produced); the
//! render node runs once every analysis is done.

use super::super::cores;
use super::super::parts::{EngineParts, Nodes};
use super::super::walk::{Conclusions, State, Walk};
use crate::plan::Node;
use petgraph::graph::NodeIndex;

/// Runs analysis `index` and every other analysis ready with it.
pub(in crate::exec) fn analyze_ready<'a, C: Conclusions>(
    parts: &EngineParts<'a, C>,
    nodes: &Nodes,
    node: NodeIndex,
    index: usize,
    walk: &mut Walk<'a, C::Analysis, C::Report>,
) {
    let graph = &parts.plan.graph;
    let mut batch = vec![(node, index)];
    walk.ready.retain(|&n| match &graph[n] {
        Node::Analyze { index } => {
            batch.push((n, *index));
            false
        }
        _ => true,
    });
    let conclusions = parts.conclusions;
    let mut results: Vec<C::Analysis> = Vec::with_capacity(batch.len());
    {
        let view = &walk.view(&nodes.review, &nodes.materialize, &nodes.scoring);
        // As many at once as there are cores: each holds its own working memory.
        for chunk in batch.chunks(cores()) {
            std::thread::scope(|scope| {
                let handles: Vec<_> = chunk.iter().map(|&(_, index)| scope.spawn(move || conclusions.analyze(index, view))).collect();
                results.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))));
            });
        }
    }
    for ((node, _), result) in batch.into_iter().zip(results) {
        walk.finish(node, State::Analysis(Box::new(result)));
    }
}

/// Renders the reports from every analysis done, in manifest order; a failure is kept in
/// `render_error` for the execution's result.
pub(in crate::exec) fn render<'a, C: Conclusions>(
    parts: &EngineParts<'a, C>,
    nodes: &Nodes,
    node: NodeIndex,
    walk: &mut Walk<'a, C::Analysis, C::Report>,
    render_error: &mut Option<C::Error>,
) {
    let analyses: Vec<&C::Analysis> = nodes
        .analyze
        .iter()
        .filter_map(|n| match &walk.states[n.index()] {
            State::Analysis(a) => Some(a.as_ref()),
            _ => None,
        })
        .collect();
    let state = match parts.conclusions.render(&walk.view(&nodes.review, &nodes.materialize, &nodes.scoring), &analyses) {
        Ok(report) => State::Report(Box::new(report)),
        Err(e) => {
            let state = State::Failed(e.to_string());
            *render_error = Some(e);
            state
        }
    };
    walk.finish(node, state);
}
