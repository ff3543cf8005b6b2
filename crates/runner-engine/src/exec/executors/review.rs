//! The review executor: run `run_index` on its materialized subject, under its reviewer's
//! limits (`review.rs` is what one review does).

use super::super::parts::{EngineParts, Nodes, Resources, Tasks};
use super::super::review::{run, run_calls, ReviewTask};
use super::super::walk::{Conclusions, State, Walk};
use super::super::RunOutcome;
use crate::reviewer::{ReviewError, ReviewJob};
use petgraph::graph::NodeIndex;

/// Spawns the review of run `run_index`; returns whether it spawned (a run without its
/// subject or reviewer fails at once).
pub(in crate::exec) fn review<'a, C: Conclusions>(
    parts: &EngineParts<'a, C>,
    nodes: &Nodes,
    node: NodeIndex,
    run_index: usize,
    walk: &mut Walk<'a, C::Analysis, C::Report>,
    resources: &Resources<'a>,
    tasks: &mut Tasks<C::Analysis, C::Report>,
) -> bool {
    let (plan, options) = (parts.plan, parts.options);
    let planned = &plan.runs[run_index];
    let subject = nodes.materialize.get(&planned.subject_id).and_then(|m| match &walk.states[m.index()] {
        State::Subject(s) => Some(s.clone()),
        _ => None,
    });
    let (Some(subject), Some(reviewer)) = (subject, parts.reviewers.get(&planned.reviewer)) else {
        walk.finish(node, State::Run(RunOutcome::Failed(ReviewError::failed(format!("no subject or reviewer for {}", planned.label())))));
        return false;
    };
    let limits = options.reviewers.get(&planned.reviewer).copied().unwrap_or_default();
    let shared = resources.reviews.clone();
    let task = ReviewTask {
        label: planned.id(),
        slot: planned.slot(&options.experiment),
        key: planned.key.clone(),
        inputs: planned.inputs.clone(),
        reviewer_name: planned.reviewer.clone(),
        reviewer: reviewer.clone(),
        per_reviewer: resources.per_reviewer.get(planned.reviewer.as_str()).cloned().unwrap_or_else(|| resources.global.clone()),
        redactor: resources.redactors.get(planned.reviewer.as_str()).cloned().unwrap_or_default(),
        job: ReviewJob {
            cell: crate::matrix::Cell::clone(&planned.cell),
            repeat: planned.repeat,
            subject,
            timeout: limits.timeout,
            calls: Some(run_calls(&shared, &planned.inputs.subject)),
        },
    };
    tasks.spawn(node, async move { State::Run(run(shared, task).await) });
    true
}
