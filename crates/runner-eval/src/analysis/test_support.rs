//! Hand-built runs for the analyses' unit tests: a matrix, run records and findings.

use super::{model::AnalysisInput, model::RunView};
use crate::analysis::spec::{AnalysisKind, AnalysisSpec, MatchRule};
use crate::cache::key::{review_key, KeyInputs};
use crate::cache::RunRecord;
use crate::finding::{Category, Finding, Severity};
use crate::matrix::{expand, Cell};
use crate::matrix::{Axis, AxisValue, Matrix};
use crate::reviewer::Cost;
use std::collections::BTreeMap;

/// A finding at `file:line` with stet's id for its location and message.
pub(crate) fn finding(file: &str, line: u32, message: &str) -> Finding {
    let mut f = Finding {
        id: String::new(),
        file: file.into(),
        line,
        range: None,
        severity: Severity::Warning,
        category: Category::Correctness,
        confidence: 0.8,
        message: message.into(),
        suggestion: None,
        cursor_uri: None,
        evidence_lines: None,
    };
    f.assign_stet_id();
    f
}

/// The same finding with another category and severity.
pub(crate) fn with_kind(mut f: Finding, category: Category, severity: Severity) -> Finding {
    f.category = category;
    f.severity = severity;
    f
}

pub(crate) fn spec(kind: AnalysisKind, axis: Option<&str>) -> AnalysisSpec {
    AnalysisSpec {
        kind,
        title: None,
        axis: axis.map(str::to_string),
        matching: MatchRule::default(),
        oracle_rule: Default::default(),
        adjudication: None,
        options: Default::default(),
    }
}

pub(crate) fn s(v: &str) -> AxisValue {
    AxisValue::Str(v.into())
}

struct Stored {
    cell: usize,
    repeat: u32,
    subject: String,
    record: RunRecord,
    findings: Vec<Finding>,
    order: u32,
}

/// A matrix and the runs that succeeded in it.
pub(crate) struct Fixture {
    axis_order: Vec<String>,
    cells: Vec<std::sync::Arc<Cell>>,
    runs: Vec<Stored>,
    pub missing: Vec<crate::matrix::RunId>,
    pub repeat: u32,
    /// The reviewer fingerprint stored in every record added from now on.
    pub fingerprint: serde_json::Value,
}

impl Fixture {
    pub(crate) fn new(axes: &[(&str, Vec<AxisValue>)], repeat: u32) -> Self {
        let matrix = Matrix::new(axes.iter().map(|(n, v)| Axis { name: n.to_string(), values: v.clone() }).collect(), repeat);
        Self {
            axis_order: axes.iter().map(|(n, _)| n.to_string()).collect(),
            cells: expand(&matrix).into_iter().map(std::sync::Arc::new).collect(),
            runs: Vec::new(),
            missing: Vec::new(),
            repeat,
            fingerprint: serde_json::json!({ "baseline": "heuristic-1" }),
        }
    }

    /// Adds a successful run of the cell with id `cell`; returns its record to adjust cost etc.
    pub(crate) fn add(&mut self, cell: &str, repeat: u32, subject: &str, findings: Vec<Finding>) -> &mut RunRecord {
        let index = self.cells.iter().position(|c| c.id == cell).unwrap_or_else(|| panic!("no cell `{cell}`"));
        let inputs = KeyInputs::new("builtin", self.fingerprint.clone(), &self.cells[index], subject, repeat);
        let record = RunRecord {
            schema: 1,
            key: review_key(&inputs),
            experiment: "test".into(),
            label: format!("{cell} #{repeat} @{subject}"),
            inputs,
            findings: String::new(),
            raw: String::new(),
            finding_count: findings.len(),
            cost: Cost { wall_ms: 0, hunks: 1, ..Cost::default() },
            provenance: BTreeMap::new(),
            schema_problems: Vec::new(),
            counters: BTreeMap::new(),
            attachments: BTreeMap::new(),
        };
        self.runs.push(Stored { cell: index, repeat, subject: subject.into(), record, findings, order: 0 });
        &mut self.runs.last_mut().expect("just pushed").record
    }

    /// Sets where the run added last started in its block (the plan's rotation).
    pub(crate) fn started(&mut self, order: u32) {
        if let Some(run) = self.runs.last_mut() {
            run.order = order;
        }
    }

    pub(crate) fn input(&self) -> AnalysisInput<'_> {
        AnalysisInput {
            runs: self
                .runs
                .iter()
                .map(|r| RunView { cell: &self.cells[r.cell], repeat: r.repeat, subject: &r.subject, record: &r.record, findings: &r.findings, order: r.order })
                .collect(),
            cells: &self.cells,
            axis_order: &self.axis_order,
            missing: self.missing.clone(),
            repeat: self.repeat,
            oracle: None,
            extras: Default::default(),
            by_cell: Default::default(),
        }
    }
}
