//! The executors: what runs each kind of ready node the engine hands them. Each spawns its
//! node's work as a task (or, for analyses and the render node, does it in the walk) and
//! records the result through the walk.

mod conclude;
mod materialize;
mod review;
mod score;

pub(super) use conclude::{analyze_ready, render};
pub(super) use materialize::materialize;
pub(super) use review::review;
pub(super) use score::score;
