//! Analyses: pure functions from finished runs to tables. One file per kind; each result is
//! serializable (results.json) and rendered generically (RESULTS.md).

pub mod aggregation;
pub mod context_level;
pub mod matching;

use crate::cache::RunRecord;
use crate::finding::Finding;
use crate::ground_truth::oracle::Oracle;
use crate::manifest::{AnalysisKind, AnalysisSpec};
use crate::plan::Cell;
use serde::Serialize;
use std::collections::BTreeMap;

/// One successful run as analyses see it.
#[derive(Debug, Clone, Copy)]
pub struct RunView<'a> {
    pub cell: &'a Cell,
    pub repeat: u32,
    pub subject: &'a str,
    pub record: &'a RunRecord,
    pub findings: &'a [Finding],
}

/// Everything an analysis may read.
pub struct AnalysisInput<'a> {
    /// Successful runs, in plan order.
    pub runs: Vec<RunView<'a>>,
    /// Every cell of the matrix, in matrix order.
    pub cells: &'a [Cell],
    /// Axis names in manifest order.
    pub axis_order: &'a [String],
    /// Planned runs that produced no result (failed, skipped, missing), by label.
    pub missing: Vec<String>,
    pub repeat: u32,
    /// The target's oracle: a corpus's `oracle.json`, or an eval set's case findings.
    pub oracle: Option<&'a Oracle>,
    /// Changed files and hunk spans per subject, for context-level tagging (A9); subjects whose
    /// diff could not be read are absent.
    pub scopes: Option<&'a BTreeMap<String, context_level::DiffScope>>,
}

/// A table a person reads at a glance.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// An analysis's result.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisResult {
    pub kind: AnalysisKind,
    /// The seed test it implements, e.g. `A1`.
    pub test_id: &'static str,
    pub title: String,
    /// One or two sentences on what is measured and how.
    pub description: String,
    /// The matching rule and thresholds used, when findings are matched.
    pub rule: Option<String>,
    pub tables: Vec<Table>,
    /// The machine-readable result (the seed document's output JSON where it defines one).
    pub data: serde_json::Value,
    pub notes: Vec<String>,
}

/// Computes one analysis.
pub fn compute(spec: &AnalysisSpec, input: &AnalysisInput<'_>) -> AnalysisResult {
    match spec.kind {
        AnalysisKind::Fixture => return crate::ground_truth::fixture::compute(spec, input),
        AnalysisKind::Aggregation => return aggregation::compute(spec, input),
        AnalysisKind::ContextLevel => return context_level::compute(spec, input),
        AnalysisKind::ReviewEval => return crate::ground_truth::review_eval::compute(spec, input),
        _ => {}
    }
    AnalysisResult {
        kind: spec.kind,
        test_id: "",
        title: spec.title.clone().unwrap_or_else(|| spec.kind.as_str().to_string()),
        description: String::new(),
        rule: None,
        tables: Vec::new(),
        data: serde_json::Value::Null,
        notes: Vec::new(),
    }
}

/// Formats a ratio with a fixed number of decimals, or `–` when undefined.
pub fn fmt_ratio(value: Option<f64>) -> String {
    value.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".to_string())
}
