//! `runner`: a declarative experiment runner for evaluating LLM code reviewers.
//!
//! ```text
//! Manifest ──expand──▶ Vec<PlannedRun> ──build──▶ Plan (a DAG of typed nodes: materialize → review → analyze → render)
//!    ──walk (tokio, limits, cache)──▶ events + node results ──▶ Results ──▶ RESULTS.md / results.json
//! ```
//!
//! The engine walks the plan's nodes; the core never prints, it emits [`exec::Event`]s
//! that reporters consume. Modules are layered (see ARCHITECTURE.md); `tests/it/layers.rs`
//! holds every import to its layer.

pub mod analysis;
pub mod bounded;
pub mod cache;
pub mod config;
pub mod error;
pub mod exec;
pub mod experiment;
pub mod finding;
pub mod ground_truth;
pub mod init;
pub mod judge;
pub mod manifest;
pub mod matrix;
pub mod plan;
pub(crate) mod rag;
pub mod report;
pub mod reviewer;
pub mod scoring;
pub mod scratch;
pub mod smells;
pub mod stats;
pub mod study;
pub mod subject;
pub mod text;
