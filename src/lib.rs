//! `runner`: a declarative experiment runner for evaluating LLM code reviewers.
//!
//! ```text
//! Manifest ──expand──▶ Vec<PlannedRun> ──build──▶ Plan (a DAG of typed nodes: materialize → review → analyze → render)
//!    ──walk (tokio, limits, cache)──▶ events + node results ──▶ Results ──▶ RESULTS.md / results.json
//! ```
//!
//! The engine walks the plan's nodes; the core never prints, it emits [`exec::Event`]s
//! that reporters consume. The layers are crates (see ARCHITECTURE.md): the
//! lower ones are re-exported here under their module names, so `runner::finding` and
//! `crate::finding` name the same module, and the compiler holds every import to its layer.

pub use runner_cache::cache;
pub use runner_core::{agreement, bounded, config, finding, matrix, output_file, scratch, stats, text};
pub use runner_engine::{exec, manifest, plan};
pub use runner_eval::{analysis, study};
pub use runner_models::{judge, reviewer, smells};
pub use runner_report as report;
pub use runner_subject::{ground_truth, subject};

pub mod error;
pub mod experiment;
pub mod init;
pub mod scoring;
