//! Planning: pure and synchronous. Matrix expansion, cache keys, and the petgraph DAG
//! (materialize → review → analysis → report), checked acyclic once.

pub mod matrix;

pub use matrix::{expand, Cell};

use crate::cache::key::{review_key, CacheKey, KeyInputs};
use crate::manifest::{Manifest, TargetSpec};
use crate::reviewer::Reviewer;
use crate::target::SubjectSpec;
use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::BTreeMap;

/// One review to run (or take from the cache).
#[derive(Debug, Clone)]
pub struct PlannedRun {
    pub cell: Cell,
    /// 1-based repeat index.
    pub repeat: u32,
    pub subject_id: String,
    pub key: CacheKey,
    /// What the key was computed from, kept to explain a cache miss.
    pub inputs: KeyInputs,
}

impl PlannedRun {
    /// Human-readable and unique within a plan: `cell #repeat @subject`.
    pub fn label(&self) -> String {
        format!("{} #{} @{}", self.cell.id, self.repeat, self.subject_id)
    }

    /// Identity of the run's slot in the experiment, independent of its inputs' content:
    /// used to find the previous entry for the same slot when explaining a miss.
    pub fn slot(&self, experiment: &str) -> String {
        format!("{experiment}\0{}\0{}\0{}", self.cell.id, self.repeat, self.subject_id)
    }
}

/// A node of the execution graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Materialize { subject: String },
    Review { run: usize },
    Analysis { index: usize },
    Report,
}

/// Everything an execution needs, built and checked before anything runs.
pub struct Plan {
    pub cells: Vec<Cell>,
    pub subjects: BTreeMap<String, SubjectSpec>,
    pub runs: Vec<PlannedRun>,
    pub graph: DiGraph<Node, ()>,
    /// Nodes in a valid execution order.
    pub order: Vec<NodeIndex>,
    /// Axis names in manifest order.
    pub axis_order: Vec<String>,
}

impl Plan {
    /// Cells × subjects per cell × repeats, counted from the planned runs themselves.
    pub fn size(&self) -> PlanSize {
        let first = self.runs.first();
        let subjects_per_cell = first.map_or(0, |f| self.runs.iter().filter(|r| r.cell.id == f.cell.id && r.repeat == f.repeat).count());
        let repeat = self.runs.iter().map(|r| r.repeat).max().unwrap_or(0);
        PlanSize {
            cells: Some(self.cells.len() as u64),
            subjects_per_cell: subjects_per_cell as u64,
            repeat: u64::from(repeat),
            runs: Some(self.runs.len() as u64),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("the plan has a cycle through node {0:?}")]
    Cycle(Node),
    #[error("no subject for ref `{0}`")]
    MissingSubject(String),
    #[error("{}", too_large(.0, *.1))]
    TooLarge(PlanSize, u64),
}

/// Runs a plan may hold unless `--max-runs` allows more: expanding is linear in the runs,
/// and a typo such as `repeat = 10000` over a large matrix would otherwise exhaust memory.
pub const DEFAULT_MAX_RUNS: u64 = 1_000_000;

/// How many runs a manifest plans, computed from the axes before anything is expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanSize {
    /// `None` when the product overflows 64 bits.
    pub cells: Option<u64>,
    /// Subjects each cell is reviewed on: 1 for a git target (the cell's `ref`), every
    /// selected case for a corpus or an eval set.
    pub subjects_per_cell: u64,
    pub repeat: u64,
    /// `None` when the product overflows 64 bits.
    pub runs: Option<u64>,
}

impl PlanSize {
    pub fn new(manifest: &Manifest, subjects: &BTreeMap<String, SubjectSpec>) -> Self {
        let cells = manifest.matrix.axes.iter().try_fold(1u64, |n, axis| n.checked_mul(axis.values.len() as u64));
        let subjects_per_cell = match &manifest.target {
            TargetSpec::Git { .. } => 1,
            TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } => subjects.len() as u64,
        };
        let repeat = u64::from(manifest.matrix.repeat);
        let runs = cells.and_then(|c| c.checked_mul(subjects_per_cell)).and_then(|n| n.checked_mul(repeat));
        Self { cells, subjects_per_cell, repeat, runs }
    }

    /// Refuses a plan over `max_runs` runs (or one whose count overflows).
    pub fn check(&self, max_runs: u64) -> Result<u64, PlanError> {
        match self.runs {
            Some(runs) if runs <= max_runs => Ok(runs),
            _ => Err(PlanError::TooLarge(*self, max_runs)),
        }
    }
}

impl std::fmt::Display for PlanSize {
    /// `4 cells × 1 subject × 2 repeats = 8 runs`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = |n: Option<u64>, one: &str, many: &str| match n {
            Some(n) => format!("{} {}", thousands(n), if n == 1 { one } else { many }),
            None => format!("more than {} {many}", thousands(u64::MAX)),
        };
        write!(
            f,
            "{} × {} × {} = {}",
            count(self.cells, "cell", "cells"),
            count(Some(self.subjects_per_cell), "subject", "subjects"),
            count(Some(self.repeat), "repeat", "repeats"),
            count(self.runs, "run", "runs")
        )
    }
}

fn too_large(size: &PlanSize, limit: u64) -> String {
    match size.runs {
        Some(runs) => format!(
            "the matrix plans {size}, more than the limit of {} runs: shrink the matrix or `repeat`, or pass `--max-runs {runs}` to allow it",
            thousands(limit)
        ),
        None => format!("the matrix plans {size}: the count does not fit in 64 bits; shrink the matrix or `repeat`"),
    }
}

/// `1280000000` → `1,280,000,000`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Expands the matrix over the subjects and builds the DAG.
///
/// Run order: cells in matrix order; within a cell, repeats 1..=N; within a repeat, subjects
/// (the cell's `ref` for a git target, every case in corpus order for a corpus).
pub fn build(manifest: &Manifest, subjects: BTreeMap<String, SubjectSpec>, reviewer: &dyn Reviewer) -> Result<Plan, PlanError> {
    build_limited(manifest, subjects, reviewer, DEFAULT_MAX_RUNS)
}

/// [`build`], refusing before any expansion a plan of more than `max_runs` runs.
pub fn build_limited(manifest: &Manifest, subjects: BTreeMap<String, SubjectSpec>, reviewer: &dyn Reviewer, max_runs: u64) -> Result<Plan, PlanError> {
    PlanSize::new(manifest, &subjects).check(max_runs)?;
    let cells = expand(&manifest.matrix);
    let subject_order: Vec<String> = match &manifest.target {
        TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } => {
            let mut ids: Vec<&SubjectSpec> = subjects.values().collect();
            ids.sort_by(|a, b| a.id.cmp(&b.id));
            ids.into_iter().map(|s| s.id.clone()).collect()
        }
        TargetSpec::Git { .. } => Vec::new(),
    };
    let mut runs = Vec::new();
    for cell in &cells {
        let fingerprint = reviewer.fingerprint(cell);
        let cell_subjects: Vec<String> = match &manifest.target {
            TargetSpec::Git { .. } => vec![cell.get("ref").map(|v| v.render()).unwrap_or_default()],
            TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } => subject_order.clone(),
        };
        for repeat in 1..=manifest.matrix.repeat {
            for subject_id in &cell_subjects {
                let subject = subjects.get(subject_id).ok_or_else(|| PlanError::MissingSubject(subject_id.clone()))?;
                let inputs = KeyInputs::new(reviewer.kind(), fingerprint.clone(), cell, &subject.identity, repeat);
                runs.push(PlannedRun { cell: cell.clone(), repeat, subject_id: subject_id.clone(), key: review_key(&inputs), inputs });
            }
        }
    }

    let mut graph = DiGraph::new();
    let mut materialize: BTreeMap<&str, NodeIndex> = BTreeMap::new();
    for id in subjects.keys() {
        materialize.insert(id, graph.add_node(Node::Materialize { subject: id.clone() }));
    }
    let report = graph.add_node(Node::Report);
    let analyses: Vec<NodeIndex> = (0..manifest.analyses.len()).map(|index| graph.add_node(Node::Analysis { index })).collect();
    for &a in &analyses {
        graph.add_edge(a, report, ());
    }
    for (i, run) in runs.iter().enumerate() {
        let node = graph.add_node(Node::Review { run: i });
        if let Some(&m) = materialize.get(run.subject_id.as_str()) {
            graph.add_edge(m, node, ());
        }
        for &a in &analyses {
            graph.add_edge(node, a, ());
        }
        if analyses.is_empty() {
            graph.add_edge(node, report, ());
        }
    }
    let order = toposort(&graph, None).map_err(|cycle| PlanError::Cycle(graph[cycle.node_id()].clone()))?;
    Ok(Plan {
        cells,
        subjects,
        runs,
        graph,
        order,
        axis_order: manifest.matrix.axes.iter().map(|a| a.name.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Axis, AxisValue, Matrix};

    fn size(axes: &[usize], subjects: u64, repeat: u32) -> PlanSize {
        let matrix = Matrix {
            axes: axes.iter().enumerate().map(|(i, n)| Axis { name: format!("a{i}"), values: (0..*n as i64).map(AxisValue::Int).collect() }).collect(),
            repeat,
        };
        let cells = matrix.axes.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64));
        let runs = cells.and_then(|c| c.checked_mul(subjects)).and_then(|n| n.checked_mul(u64::from(repeat)));
        PlanSize { cells, subjects_per_cell: subjects, repeat: u64::from(repeat), runs }
    }

    #[test]
    fn sizes_read_as_arithmetic_and_overflow_is_refused() {
        assert_eq!(size(&[2, 2], 1, 2).to_string(), "4 cells × 1 subject × 2 repeats = 8 runs");
        assert_eq!(size(&[], 16, 1).to_string(), "1 cell × 16 subjects × 1 repeat = 16 runs");
        assert_eq!(size(&[2, 2], 1, 2).check(8).expect("within"), 8);
        let too_many = size(&[2, 2], 1, 2).check(7).expect_err("over").to_string();
        assert!(too_many.contains("= 8 runs, more than the limit of 7 runs") && too_many.contains("--max-runs 8"), "{too_many}");
        let overflow = size(&[1 << 16; 5], 1, 1);
        assert_eq!(overflow.cells, None);
        let message = overflow.check(u64::MAX).expect_err("overflow").to_string();
        assert!(message.contains("does not fit in 64 bits") && !message.contains("--max-runs"), "{message}");
        assert_eq!(thousands(12_800_000_000_000), "12,800,000,000,000");
    }
}
