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
    /// The run's identity, unique within a plan.
    pub fn id(&self) -> crate::exec::RunId {
        crate::exec::RunId::new(self.cell.id.clone(), self.repeat, self.subject_id.clone())
    }

    /// Human-readable and unique within a plan: `cell #repeat @subject`.
    pub fn label(&self) -> String {
        self.id().to_string()
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

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("the plan has a cycle through node {0:?}")]
    Cycle(Node),
    #[error("no subject for ref `{0}`")]
    MissingSubject(String),
}

/// Expands the matrix over the subjects and builds the DAG.
///
/// Run order: cells in matrix order; within a cell, repeats 1..=N; within a repeat, subjects
/// (the cell's `ref` for a git target, every case in corpus order for a corpus).
pub fn build(manifest: &Manifest, subjects: BTreeMap<String, SubjectSpec>, reviewer: &dyn Reviewer) -> Result<Plan, PlanError> {
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
