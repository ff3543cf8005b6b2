//! `runner-cache`: the content-addressed result store. Keys, run records, the local store
//! and the remote (S3-compatible) layer. Depends on the crates below it, up to `runner-models`
//! (run records carry a reviewer's outcome).

use runner_core::{bounded, finding, matrix};
use runner_models::reviewer;

pub mod cache;
