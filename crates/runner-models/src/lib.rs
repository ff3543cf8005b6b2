//! `runner-models`: what is asked. Every reviewer kind, the judges and the embedder of RQS v2,
//! and the static analyzers (smells). Depends on `runner-core` and `runner-subject`.

use runner_core::{config, finding, matrix, sandbox, scratch};
#[cfg(test)]
use runner_subject::ground_truth;
use runner_subject::{rag, subject};

pub mod judge;
pub mod reviewer;
pub mod smells;
