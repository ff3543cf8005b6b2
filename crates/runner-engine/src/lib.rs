//! `runner-engine`: manifests in, a typed DAG planned, and the engine that walks it on tokio.
//! Depends on every crate below it; nothing below knows it exists.

use runner_cache::cache;
use runner_core::{config, finding, matrix, stats};
use runner_eval::analysis;
use runner_models::{judge, reviewer, smells};
use runner_subject::{ground_truth, subject};

pub mod exec;
pub mod manifest;
pub mod plan;
