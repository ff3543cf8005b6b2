//! `runner-eval`: what is computed from finished runs. Every analysis (metrics per seed,
//! matching, statistics and comparisons, RQS v2) and the human studies. Depends on the crates
//! below it, up to `runner-cache`.

use runner_cache::cache;
use runner_core::{agreement, bounded, config, finding, matrix, stats, text};
use runner_models::{judge, reviewer};
use runner_subject::{ground_truth, subject};

pub mod analysis;
pub mod study;
