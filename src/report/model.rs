//! The versioned results model behind results.json and RESULTS.md. It depends only on the
//! manifest and the cached results, so a re-run from the cache reproduces it exactly.

use crate::analysis::AnalysisResult;
use serde::Serialize;
use std::collections::BTreeMap;

/// Bumped when results.json changes shape.
pub const RESULTS_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub schema_version: u32,
    pub experiment: ExperimentInfo,
    pub matrix: MatrixInfo,
    pub reviewer: ReviewerInfo,
    pub target: TargetInfo,
    /// Distinct provenance entries of the runs (model files, servers, seeds, …).
    pub provenance: Vec<ProvenanceRow>,
    pub totals: Totals,
    pub cells: Vec<CellRow>,
    pub runs: Vec<RunRow>,
    pub failures: Vec<FailureRow>,
    pub analyses: Vec<AnalysisResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExperimentInfo {
    pub name: String,
    pub description: String,
    /// The manifest path as given on the command line.
    pub manifest: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct MatrixInfo {
    pub axes: Vec<AxisInfo>,
    pub repeat: u32,
    pub cells: usize,
    /// Subjects each cell is reviewed on: 1 for a git target (the cell's `ref`), every
    /// selected case for a corpus; `target.subjects` lists them all.
    pub subjects: usize,
    pub planned_runs: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct AxisInfo {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReviewerInfo {
    pub kind: String,
    /// The reviewer's configurations as hashed into cache keys, with the cells using each.
    pub configs: Vec<ReviewerConfig>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReviewerConfig {
    /// Canonical JSON of the configuration.
    pub config: String,
    /// The cells that use it, or `all cells`.
    pub cells: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetInfo {
    pub kind: String,
    pub description: String,
    pub subjects: Vec<String>,
    /// Holdout cases this experiment ran because its manifest unsealed them.
    pub unsealed_holdout: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProvenanceRow {
    pub cells: String,
    pub entries: Vec<KeyValue>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Totals {
    pub planned: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub findings: usize,
    pub review_seconds: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellRow {
    pub cell: String,
    pub values: BTreeMap<String, String>,
    pub runs: usize,
    pub planned: usize,
    pub findings: usize,
    pub findings_per_run: String,
    pub seconds: String,
    pub prompt_tokens: String,
    pub completion_tokens: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub cell: String,
    pub repeat: u32,
    pub subject: String,
    pub status: String,
    pub findings: usize,
    pub hunks: u32,
    pub seconds: String,
    /// Short cache key, for `runner cache` lookups.
    pub key: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailureRow {
    pub run: String,
    pub error: String,
}
