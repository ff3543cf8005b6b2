//! Planning: pure and synchronous. Matrix expansion, cache keys, and the execution graph — a
//! petgraph DAG of typed [`Node`]s that the engine (`exec`) walks.
//!
//! The graph is acyclic by construction: every edge runs from an earlier stage to a later one
//! (materialize → review → the scoring stages, in their rank → analyze → render). The
//! scoring stages are declared above the engine and planned through a [`ScoringPlanner`].

pub(crate) mod score;
pub(crate) mod shard;
pub mod subjects;

pub use score::{NoScoring, PlanUnderway, ScoreTarget, ScoringPlanner, Stage};
pub use shard::Shard;
pub use subjects::Resolved;

use crate::analysis::spec::AnalysisKind;
use crate::cache::key::{review_key, CacheKey, KeyInputs};
use crate::manifest::{Manifest, REVIEWER_AXIS};
use crate::matrix::{expand, Cell};
use crate::reviewer::Reviewer;
use crate::subject::{SubjectSpec, TargetSpec};
use petgraph::graph::DiGraph;
/// A node's index in [`Plan::graph`], as a [`ScoringPlanner`] adds and links nodes by it.
pub use petgraph::graph::NodeIndex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One review to run (or take from the cache).
#[derive(Debug, Clone)]
pub struct PlannedRun {
    /// Shared by the cell's runs.
    pub cell: Arc<Cell>,
    /// 1-based repeat index.
    pub repeat: u32,
    pub subject_id: String,
    /// The name of the reviewer that runs it (`[reviewers.NAME]`, or `reviewer` for a single
    /// `[reviewer]` table).
    pub reviewer: String,
    pub key: CacheKey,
    /// What the key was computed from, kept to explain a cache miss.
    pub inputs: KeyInputs,
    /// Where the run starts among the runs of its subject and repeat (its block), from 0: the
    /// block's cells in matrix order, rotated by one per block ([`rotate`]), so that no
    /// strategy always goes first. Not part of the key.
    pub order: u32,
}

impl PlannedRun {
    /// The run's identity, unique within a plan.
    pub fn id(&self) -> crate::matrix::RunId {
        crate::matrix::RunId::new(self.cell.id.clone(), self.repeat, self.subject_id.clone())
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

/// A unit of work the engine schedules; each kind's executor is in `exec/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    /// Build a subject's repository (a corpus case's two commits) or resolve its diff. Not
    /// cached itself: it runs only when a dependent's result is not in the cache.
    Materialize { subject: String },
    /// One review run, `Plan::runs[run]`; cached under its key.
    Review { run: usize },
    /// A scoring stage's node: `member` (a jury's judge number, from 0; 0 for a stage of one
    /// producer) of `stage` on `target`. The engine runs its calls through the `Scorers` and
    /// does not interpret the stage.
    Score { stage: Stage, member: usize, target: ScoreTarget },
    /// Part `part` of the manifest's `[[analysis]]` number `index`, computed as soon as the runs
    /// of that part are done (a kind that computes in parts: `analysis::definition::Partition`);
    /// its analysis node puts the parts together.
    AnalyzePart { index: usize, part: String },
    /// The manifest's `[[analysis]]` number `index`, over every run's outcome.
    Analyze { index: usize },
    /// RESULTS.md and results.json from the analyses.
    Render,
}

impl Node {
    /// The node's kind, as `runner plan` lists it.
    pub fn kind(&self) -> NodeKind {
        match self {
            Self::Materialize { .. } => NodeKind::Materialize,
            Self::Review { .. } => NodeKind::Review,
            Self::Score { stage, .. } => NodeKind::Score(*stage),
            Self::AnalyzePart { .. } => NodeKind::AnalyzePart,
            Self::Analyze { .. } => NodeKind::Analyze,
            Self::Render => NodeKind::Render,
        }
    }
}

/// The kinds of [`Node`], in stage order (scoring stages by their rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeKind {
    Materialize,
    Review,
    Score(Stage),
    AnalyzePart,
    Analyze,
    Render,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Materialize => "materialize",
            Self::Review => "review",
            Self::Score(stage) => stage.name(),
            Self::AnalyzePart => "analyze-part",
            Self::Analyze => "analyze",
            Self::Render => "render",
        }
    }

    /// Whether nodes of this kind keep their results in the cache (a scoring node keeps each
    /// of its calls).
    pub fn cached(self) -> bool {
        matches!(self, Self::Review | Self::Score(_))
    }
}

impl serde::Serialize for NodeKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// What an edge means to its dependent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    /// The dependent needs the dependency's output: if the dependency fails or is skipped, the
    /// dependent is skipped.
    Requires,
    /// The dependent reads whatever the dependency produced, success or not (an analysis
    /// reports failed runs beside the others).
    Observes,
}

/// Everything an execution needs, built and checked before anything runs.
pub struct Plan {
    /// Shared with the runs of each cell.
    pub cells: Vec<Arc<Cell>>,
    pub subjects: BTreeMap<String, SubjectSpec>,
    pub runs: Vec<PlannedRun>,
    pub graph: DiGraph<Node, Dependency>,
    /// Axis names in manifest order.
    pub axis_order: Vec<String>,
    /// For a history target: the commits selected, reviewed (in this order), skipped and sampled.
    pub history: Option<crate::subject::history::History>,
}

impl Plan {
    /// The graph's node of each run, by run index.
    pub fn review_nodes(&self) -> Vec<NodeIndex> {
        let mut out = vec![NodeIndex::end(); self.runs.len()];
        for n in self.graph.node_indices() {
            if let Node::Review { run } = self.graph[n] {
                out[run] = n;
            }
        }
        out
    }

    /// How many nodes of each kind the graph has.
    pub fn node_counts(&self) -> BTreeMap<NodeKind, usize> {
        let mut counts = BTreeMap::new();
        for n in self.graph.node_weights() {
            *counts.entry(n.kind()).or_insert(0) += 1;
        }
        counts
    }
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
    #[error("no subject for ref `{0}`")]
    MissingSubject(String),
    #[error("no reviewer for cell `{0}`")]
    MissingReviewer(String),
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
    /// selected case for a corpus or an eval set, every reviewed commit of a history.
    pub subjects_per_cell: u64,
    pub repeat: u64,
    /// `None` when the product overflows 64 bits.
    pub runs: Option<u64>,
}

impl PlanSize {
    pub fn new(manifest: &Manifest, subjects: &BTreeMap<String, SubjectSpec>) -> Self {
        let product = manifest.matrix.axes.iter().try_fold(1u64, |n, axis| n.checked_mul(axis.values.len() as u64));
        // Cells `exclude` drops are counted over the axes it names, never by expanding: past
        // a million of their combinations, none is taken off (the check errs on the safe side).
        let cells = product.map(|p| p - manifest.matrix.excluded_cells(1_000_000).unwrap_or(0).min(p));
        let subjects_per_cell = match &manifest.target {
            TargetSpec::Git { .. } => 1,
            TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } | TargetSpec::External { .. } | TargetSpec::History { .. } => subjects.len() as u64,
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
    crate::analysis::spec::group_thousands(n)
}

/// What a `compare` analysis can conclude with the subjects the plan gives it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CompareReach {
    /// The analysis's position among the manifest's `[[analysis]]` tables (0-based).
    pub index: usize,
    pub axis: Option<String>,
    /// Pairs of cells it compares.
    pub pairs: usize,
    /// Subjects both cells of a pair are reviewed on: the fewest and the most over its pairs.
    pub fewest: usize,
    pub most: usize,
    /// The smallest p its test can give with the fewest subjects, every one differing
    /// (`stats::sign_flip_floor`); `None` without a subject.
    pub min_p: Option<f64>,
    pub alpha: f64,
}

impl CompareReach {
    /// Whether no outcome could be significant: the smallest attainable p is at least alpha.
    pub fn cannot_be_significant(&self) -> bool {
        self.min_p.is_none_or(|p| p >= self.alpha)
    }
}

/// For each `compare` analysis, how many subjects its pairs share and the smallest p they allow.
pub fn compare_reach(manifest: &Manifest, plan: &Plan) -> Vec<CompareReach> {
    let mut subjects_of: HashMap<&str, std::collections::BTreeSet<&str>> = HashMap::new();
    for run in &plan.runs {
        subjects_of.entry(run.cell.id.as_str()).or_default().insert(run.subject_id.as_str());
    }
    let empty = std::collections::BTreeSet::new();
    manifest
        .analyses
        .iter()
        .enumerate()
        .filter(|(_, spec)| spec.kind == AnalysisKind::COMPARE)
        .map(|(index, spec)| {
            let options = spec.compare().cloned().unwrap_or_default();
            let shared: Vec<usize> = crate::analysis::statistics::compare::planned_pairs(&plan.cells, &plan.axis_order, spec)
                .into_iter()
                .map(|(a, b)| {
                    let (sa, sb) = (subjects_of.get(a.id.as_str()).unwrap_or(&empty), subjects_of.get(b.id.as_str()).unwrap_or(&empty));
                    sa.intersection(sb).count()
                })
                .collect();
            let fewest = shared.iter().copied().min().unwrap_or(0);
            CompareReach {
                index,
                axis: spec.axis.clone(),
                pairs: shared.len(),
                fewest,
                most: shared.iter().copied().max().unwrap_or(0),
                min_p: crate::stats::sign_flip_floor(fewest, fewest, options.resamples),
                alpha: options.alpha,
            }
        })
        .collect()
}

/// One copy of each distinct reviewer configuration: a grid's cells mostly share one.
#[derive(Default)]
struct Interner(HashMap<String, Arc<serde_json::Value>>);

impl Interner {
    fn intern(&mut self, config: serde_json::Value) -> Arc<serde_json::Value> {
        // Serializing a `Value` cannot fail; its text is its identity.
        let text = serde_json::to_string(&config).unwrap_or_default();
        self.0.entry(text).or_insert_with(|| Arc::new(config)).clone()
    }
}

/// A reviewer's fingerprint for one run: its cell fingerprint, plus what the run reads
/// (`input`) for a reviewer that reads files per subject.
fn with_run_input(fingerprint: &serde_json::Value, input: serde_json::Value) -> serde_json::Value {
    let mut value = fingerprint.clone();
    if let Some(object) = value.as_object_mut() {
        object.insert("input".to_string(), input);
    }
    value
}

/// The reviewers of an experiment by name, as the plan and the engine use them.
pub type ReviewerSet = BTreeMap<String, Arc<dyn Reviewer>>;

/// Expands the matrix over the subjects and builds the DAG.
///
/// Run order: cells in matrix order; within a cell, repeats 1..=N; within a repeat, subjects
/// (the cell's `ref` for a git target, every case in corpus order for a corpus, the commits
/// oldest first for a history).
/// `scoring` adds the scoring stages' nodes ([`NoScoring`] for none).
pub fn build(manifest: &Manifest, subjects: impl Into<Resolved>, reviewers: &ReviewerSet, scoring: &dyn ScoringPlanner) -> Result<Plan, PlanError> {
    build_limited(manifest, subjects, reviewers, scoring, DEFAULT_MAX_RUNS)
}

/// [`build`], refusing before any expansion a plan of more than `max_runs` runs.
pub fn build_limited(
    manifest: &Manifest,
    subjects: impl Into<Resolved>,
    reviewers: &ReviewerSet,
    scoring: &dyn ScoringPlanner,
    max_runs: u64,
) -> Result<Plan, PlanError> {
    let Resolved { subjects, history } = subjects.into();
    PlanSize::new(manifest, &subjects).check(max_runs)?;
    let cells: Vec<Arc<Cell>> = expand(&manifest.matrix).into_iter().map(Arc::new).collect();
    let subject_order: Vec<String> = match (&manifest.target, &history) {
        (TargetSpec::History { .. }, Some(history)) => history.planned.iter().map(|c| c.sha.clone()).filter(|sha| subjects.contains_key(sha)).collect(),
        (TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } | TargetSpec::External { .. } | TargetSpec::History { .. }, _) => {
            let mut ids: Vec<&SubjectSpec> = subjects.values().collect();
            ids.sort_by(|a, b| a.id.cmp(&b.id));
            ids.into_iter().map(|s| s.id.clone()).collect()
        }
        (TargetSpec::Git { .. }, _) => Vec::new(),
    };
    let subjects_per_cell = if subject_order.is_empty() { 1 } else { subject_order.len() };
    let mut runs = Vec::with_capacity(cells.len() * manifest.matrix.repeat as usize * subjects_per_cell);
    let mut configs = Interner::default();
    for cell in &cells {
        let axis_value = cell.get(REVIEWER_AXIS).map(|v| v.render());
        let name = manifest.reviewers.name_for(axis_value.as_deref()).ok_or_else(|| PlanError::MissingReviewer(cell.id.clone()))?;
        let reviewer = reviewers.get(name).ok_or_else(|| PlanError::MissingReviewer(cell.id.clone()))?;
        // What every run of the cell shares, held once; cells of one configuration share it.
        let shared_config = configs.intern(reviewer.fingerprint(cell));
        let (shared_cell, cell_values) = (cell.clone(), KeyInputs::cell_values(cell));
        let cell_subjects: Vec<String> = match &manifest.target {
            TargetSpec::Git { .. } => vec![cell.get("ref").map(|v| v.render()).unwrap_or_default()],
            TargetSpec::Corpus { .. } | TargetSpec::Evals { .. } | TargetSpec::External { .. } | TargetSpec::History { .. } => subject_order.clone(),
        };
        for repeat in 1..=manifest.matrix.repeat {
            for subject_id in &cell_subjects {
                let subject = subjects.get(subject_id).ok_or_else(|| PlanError::MissingSubject(subject_id.clone()))?;
                // The review stage's key: its own inputs and the key of the subject it depends
                // on (the subject's content identity). See `cache::key`.
                let config = match reviewer.run_input(cell, subject_id, repeat) {
                    Some(input) => Arc::new(with_run_input(&shared_config, input)),
                    None => shared_config.clone(),
                };
                let inputs = KeyInputs::shared(reviewer.kind(), config, cell_values.clone(), &subject.identity, repeat);
                runs.push(PlannedRun {
                    cell: shared_cell.clone(),
                    repeat,
                    subject_id: subject_id.clone(),
                    reviewer: name.to_string(),
                    key: review_key(&inputs),
                    inputs,
                    order: 0,
                });
            }
        }
    }

    rotate(&mut runs);
    let mut graph = DiGraph::new();
    let mut materialize: BTreeMap<&str, NodeIndex> = BTreeMap::new();
    for id in subjects.keys() {
        materialize.insert(id, graph.add_node(Node::Materialize { subject: id.clone() }));
    }
    let reviews: Vec<NodeIndex> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let node = graph.add_node(Node::Review { run: i });
            if let Some(&m) = materialize.get(run.subject_id.as_str()) {
                graph.add_edge(m, node, Dependency::Requires);
            }
            node
        })
        .collect();
    let scoring = scoring.add_nodes(manifest, &mut PlanUnderway { runs: &runs, reviews: &reviews, materialize: &materialize, graph: &mut graph });
    let render = graph.add_node(Node::Render);
    let axis_order: Vec<String> = manifest.matrix.axes.iter().map(|a| a.name.clone()).collect();
    for (index, spec) in manifest.analyses.iter().enumerate() {
        let node = graph.add_node(Node::Analyze { index });
        for &review in &reviews {
            graph.add_edge(review, node, Dependency::Observes);
        }
        // Its parts, each observing its own runs, in the order their first run comes.
        let mut parts: Vec<(String, NodeIndex)> = Vec::new();
        let mut part_at: HashMap<String, usize> = HashMap::new();
        for (run, &review) in runs.iter().zip(&reviews) {
            let Some(part) = crate::analysis::part_of(spec, &run.cell, &axis_order) else { continue };
            let at = match part_at.get(&part) {
                Some(&at) => at,
                None => {
                    let part_node = graph.add_node(Node::AnalyzePart { index, part: part.clone() });
                    graph.add_edge(part_node, node, Dependency::Observes);
                    part_at.insert(part.clone(), parts.len());
                    parts.push((part, part_node));
                    parts.len() - 1
                }
            };
            graph.add_edge(review, parts[at].1, Dependency::Observes);
        }
        if spec.reads_scoring() {
            for &n in &scoring {
                graph.add_edge(n, node, Dependency::Observes);
            }
        }
        // An analysis that reads the subjects' diffs (context-level) waits for each.
        if spec.reads_subjects() {
            for &m in materialize.values() {
                graph.add_edge(m, node, Dependency::Observes);
            }
        }
        graph.add_edge(node, render, Dependency::Observes);
    }
    if manifest.analyses.is_empty() {
        for &review in &reviews {
            graph.add_edge(review, render, Dependency::Observes);
        }
    }
    // Held for the whole execution: without the slack of growing (a 100k-run plan has 600k edges).
    graph.shrink_to_fit();
    Ok(Plan { cells, subjects, runs, graph, axis_order, history })
}

/// Sets each run's start position in its block (the runs of one subject and repeat, in plan
/// order): block `b` (blocks numbered as they first appear) starts at its `b mod n`-th cell
/// and wraps around, so over `n` blocks each cell starts first once.
pub fn rotate(runs: &mut [PlannedRun]) {
    let mut blocks: HashMap<(u32, String), Vec<usize>> = HashMap::new();
    let mut order: Vec<(u32, String)> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let block = (run.repeat, run.subject_id.clone());
        let members = blocks.entry(block.clone()).or_default();
        if members.is_empty() {
            order.push(block);
        }
        members.push(i);
    }
    for (b, block) in order.iter().enumerate() {
        let members = &blocks[block];
        let m = members.len();
        for (k, &i) in members.iter().enumerate() {
            runs[i].order = ((k + m - b % m) % m) as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_block_starts_its_cells_one_further_along() {
        let cell = |id: &str| Arc::new(Cell { id: id.into(), values: Default::default() });
        let mut runs = Vec::new();
        for c in ["a", "b", "c"] {
            for repeat in 1..=2 {
                for subject in ["s1", "s2"] {
                    let inputs = KeyInputs::new("x", serde_json::Value::Null, &cell(c), subject, repeat);
                    runs.push(PlannedRun {
                        cell: cell(c),
                        repeat,
                        subject_id: subject.into(),
                        reviewer: "r".into(),
                        key: review_key(&inputs),
                        inputs,
                        order: 0,
                    });
                }
            }
        }
        rotate(&mut runs);
        let first = |repeat: u32, subject: &str| runs.iter().find(|r| r.repeat == repeat && r.subject_id == subject && r.order == 0).map(|r| r.cell.id.clone());
        // Blocks in plan order: (1, s1), (1, s2), (2, s1), (2, s2).
        let starts: Vec<Option<String>> = vec![first(1, "s1"), first(1, "s2"), first(2, "s1"), first(2, "s2")];
        assert_eq!(starts, [Some("a".into()), Some("b".into()), Some("c".into()), Some("a".into())]);
        let block: Vec<(String, u32)> = runs.iter().filter(|r| r.repeat == 1 && r.subject_id == "s2").map(|r| (r.cell.id.clone(), r.order)).collect();
        assert_eq!(block, [("a".into(), 2), ("b".into(), 0), ("c".into(), 1)]);
    }

    #[test]
    fn every_edge_runs_from_an_earlier_stage_to_a_later_one() {
        let manifest = crate::manifest::parse(
            std::path::Path::new("m.toml"),
            r#"version = 1
[experiment]
name = "x"
[target]
repo = "."
[matrix]
ref = ["HEAD~1", "HEAD~2"]
baseline = ["dry-run", "heuristic"]
repeat = 2
[reviewer]
kind = "builtin"
name = "{{baseline}}"
[[analysis]]
kind = "overlap"
axis = "baseline"
[[analysis]]
kind = "context-level"
[report]
output = "out"
"#,
        )
        .expect("manifest");
        let subjects: BTreeMap<String, SubjectSpec> = ["HEAD~1", "HEAD~2"]
            .iter()
            .map(|r| {
                let spec = SubjectSpec {
                    id: r.to_string(),
                    identity: format!("id-{r}"),
                    source: crate::subject::SubjectSource::Git { repo: ".".into(), base_sha: "a".into(), head_sha: "b".into() },
                    holdout: false,
                };
                (r.to_string(), spec)
            })
            .collect();
        let reviewers: ReviewerSet =
            manifest.reviewers.entries.iter().map(|e| (e.name.clone(), crate::reviewer::build::from_spec(&e.spec).expect("reviewer"))).collect();
        let plan = build(&manifest, subjects, &reviewers, &NoScoring).expect("plan");
        assert_eq!(plan.runs.len(), 2 * 2 * 2);
        assert_eq!(plan.size().subjects_per_cell, 1);
        for edge in plan.graph.edge_indices() {
            let (a, b) = plan.graph.edge_endpoints(edge).expect("endpoints");
            assert!(plan.graph[a].kind() < plan.graph[b].kind(), "{:?} → {:?}", plan.graph[a], plan.graph[b]);
        }
        let counts = plan.node_counts();
        assert_eq!(counts[&NodeKind::Materialize], 2);
        assert_eq!(counts[&NodeKind::Review], 8);
        assert_eq!(counts[&NodeKind::Analyze], 2);
        assert_eq!(counts[&NodeKind::Render], 1);
        assert!(petgraph::algo::toposort(&plan.graph, None).is_ok());

        // Held once: a run's cell is the plan's, and cells of one configuration share it.
        for run in &plan.runs {
            assert!(plan.cells.iter().any(|c| Arc::ptr_eq(c, &run.cell)), "{}", run.label());
        }
        let config_of = |baseline: &str, r: &str| {
            let run = plan.runs.iter().find(|run| run.cell.id.contains(&format!("baseline={baseline}")) && run.subject_id == r).expect("run");
            run.inputs.reviewer.clone()
        };
        assert!(Arc::ptr_eq(&config_of("dry-run", "HEAD~1"), &config_of("dry-run", "HEAD~2")));
        assert!(!Arc::ptr_eq(&config_of("dry-run", "HEAD~1"), &config_of("heuristic", "HEAD~1")));
        assert_ne!(config_of("dry-run", "HEAD~1"), config_of("heuristic", "HEAD~1"));
    }

    use crate::matrix::{Axis, AxisValue, Matrix};

    fn size(axes: &[usize], subjects: u64, repeat: u32) -> PlanSize {
        let matrix = Matrix::new(
            axes.iter().enumerate().map(|(i, n)| Axis { name: format!("a{i}"), values: (0..*n as i64).map(AxisValue::Int).collect() }).collect(),
            repeat,
        );
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
