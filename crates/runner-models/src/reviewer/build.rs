//! The one place a reviewer table becomes a reviewer: one arm per kind. It sits beside the
//! kinds rather than in `reviewer/mod.rs`, so the kinds depend on the trait and the trait on
//! none of them.

use super::spec::{ReviewerKindSpec as K, ReviewerSpec};
use super::{builtin, command, llm, pipeline, replay, ReviewError, Reviewer};
use std::sync::Arc;

/// Builds the reviewer a manifest declares.
pub fn from_spec(spec: &ReviewerSpec) -> Result<Arc<dyn Reviewer>, ReviewError> {
    Ok(match &spec.kind {
        K::Builtin(b) => Arc::new(builtin::BuiltinReviewer::new(b.clone())),
        K::Command(c) => Arc::new(command::CommandReviewer::new(c.as_ref().clone())),
        K::Llm(l) => Arc::new(llm::LlmReviewer::new(l.as_ref().clone())?),
        K::Replay(r) => Arc::new(replay::ReplayReviewer::new(r.clone())),
        K::Pipeline(p) => Arc::new(pipeline::PipelineReviewer::new(p.as_ref().clone())?),
    })
}
