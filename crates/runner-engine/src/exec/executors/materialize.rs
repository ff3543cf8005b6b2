//! The materialize executor: a subject's repository and diff, built on a blocking thread,
//! one core each. It takes no `--jobs` place: those are the reviews', and a subject built
//! while the reviews before it wait on their servers is ready when their places free up.

use super::super::parts::{EngineParts, Resources, Tasks};
use super::super::walk::{Conclusions, State, Walk};
use petgraph::graph::NodeIndex;
use std::sync::Arc;

/// Spawns the materialization of `subject`.
pub(in crate::exec) fn materialize<'a, C: Conclusions>(
    parts: &EngineParts<'a, C>,
    node: NodeIndex,
    subject: &str,
    walk: &mut Walk<'a, C::Analysis, C::Report>,
    resources: &Resources<'a>,
    tasks: &mut Tasks<C::Analysis, C::Report>,
) {
    let Some(spec) = parts.plan.subjects.get(subject).cloned() else {
        walk.finish(node, State::Failed(format!("no subject `{subject}`")));
        return;
    };
    let (materializer, work_dir) = (parts.materializer.clone(), parts.options.work_dir.clone());
    let core = resources.materializing.clone();
    tasks.spawn(node, async move {
        let _core = core.acquire_owned().await;
        match tokio::task::spawn_blocking(move || materializer(&spec, &work_dir)).await {
            Ok(Ok(subject)) => State::Subject(Arc::new(subject)),
            Ok(Err(e)) => State::Failed(e),
            Err(e) => State::Failed(format!("materialization task failed: {e}")),
        }
    });
}
