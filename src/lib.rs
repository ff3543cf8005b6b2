//! `runner`: a declarative experiment runner for evaluating LLM code reviewers.
//!
//! ```text
//! Manifest ──expand──▶ Vec<PlannedRun> ──build──▶ Plan (petgraph DAG, checked acyclic)
//!    ──execute (tokio, limits, cache)──▶ events + outcomes ──analyses──▶ Results ──render──▶ RESULTS.md / results.json
//! ```
//!
//! Each stage's output is the next one's input; the core never prints, it emits
//! [`exec::Event`]s that reporters consume.

pub mod analysis;
pub mod cache;
pub mod config;
pub mod error;
pub mod exec;
pub mod experiment;
pub mod finding;
pub mod ground_truth;
pub mod manifest;
pub mod matrix;
pub mod plan;
pub mod rag;
pub mod report;
pub mod reviewer;
pub mod study;
pub mod subject;
