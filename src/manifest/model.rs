//! The validated experiment model: what a manifest means once every check has passed.

use serde::Serialize;
use crate::matrix::Matrix;
use crate::reviewer::spec::ReviewerSpec;
use crate::subject::TargetSpec;
use std::path::PathBuf;

/// The manifest format version this build reads.
pub const MANIFEST_VERSION: i64 = 1;

#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest file, as given.
    pub path: PathBuf,
    /// The directory relative paths in the manifest are resolved against.
    pub base_dir: PathBuf,
    pub experiment: Experiment,
    pub target: TargetSpec,
    pub matrix: Matrix,
    /// The reviewers, and how each cell picks one.
    pub reviewers: Reviewers,
    pub analyses: Vec<AnalysisSpec>,
    pub report: ReportSpec,
    pub cache_dir: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub name: String,
    pub description: String,
}

/// The matrix axis that picks a named reviewer per cell.
pub const REVIEWER_AXIS: &str = "reviewer";

/// The name a manifest's single `[reviewer]` table goes by.
pub const SINGLE_REVIEWER: &str = "reviewer";

/// An experiment's reviewers: one `[reviewer]`, or `[reviewers.NAME]` tables picked by the
/// matrix's `reviewer` axis.
#[derive(Debug, Clone)]
pub struct Reviewers {
    /// In manifest order (for `[reviewers.NAME]`, the order the tables are written).
    pub entries: Vec<NamedReviewer>,
    /// Whether the `reviewer` axis picks the reviewer of each cell (else there is exactly one).
    pub by_axis: bool,
}

impl Reviewers {
    /// The name of the reviewer that runs `cell`'s values.
    pub fn name_for<'a>(&'a self, reviewer_axis_value: Option<&'a str>) -> Option<&'a str> {
        match (self.by_axis, reviewer_axis_value) {
            (true, Some(name)) => self.entries.iter().find(|e| e.name == name).map(|e| e.name.as_str()),
            (true, None) => None,
            (false, _) => self.entries.first().map(|e| e.name.as_str()),
        }
    }

    pub fn get(&self, name: &str) -> Option<&ReviewerSpec> {
        self.entries.iter().find(|e| e.name == name).map(|e| &e.spec)
    }
}

/// One reviewer and the name cells and reports know it by.
#[derive(Debug, Clone)]
pub struct NamedReviewer {
    pub name: String,
    pub spec: ReviewerSpec,
}

/// One analysis the report shows.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisSpec {
    pub kind: AnalysisKind,
    /// Optional title shown in the report.
    pub title: Option<String>,
    /// The axis compared (overlap, RAG ablation) or grouped by (latency, distribution, …).
    pub axis: Option<String>,
    pub matching: MatchRule,
    /// How reported findings are matched to an oracle (fixture, aggregation, review-eval).
    pub oracle_rule: crate::analysis::matching::OracleRule,
    /// A person's adjudication record (`captured.adjudication.json`, from `runner adjudicate
    /// import`), resolved against the manifest's directory: applied over automatic matching
    /// for the runs it covers (fixture, review-eval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjudication: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnalysisKind {
    /// A1: overlap between the values of one axis.
    Overlap,
    /// A3: latency per run and per hunk.
    Latency,
    /// A4: Jaccard across repeats.
    Repeatability,
    /// A5: category and severity counts.
    Distribution,
    /// A6: finding-ID stability across repeats.
    IdStability,
    /// A7: schema validation of every reviewer's output.
    Schema,
    /// A10: RAG on versus off.
    RagAblation,
    /// Tokens and durations per cell.
    Cost,
    /// H2: TP, FP, FN, precision, recall and F1 against the oracle.
    Fixture,
    /// A8: the union of a cell's repeats against the average single run.
    Aggregation,
    /// A9: diff / file / repo context level of each finding.
    ContextLevel,
    /// Seed 003: found / partial / missed, recall, noise and cost per run and per case.
    ReviewEval,
}

impl AnalysisKind {
    pub const ALL: [AnalysisKind; 12] = [
        Self::Overlap,
        Self::Latency,
        Self::Repeatability,
        Self::Distribution,
        Self::IdStability,
        Self::Schema,
        Self::RagAblation,
        Self::Cost,
        Self::Fixture,
        Self::Aggregation,
        Self::ContextLevel,
        Self::ReviewEval,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Overlap => "overlap",
            Self::Latency => "latency",
            Self::Repeatability => "repeatability",
            Self::Distribution => "distribution",
            Self::IdStability => "id-stability",
            Self::Schema => "schema",
            Self::RagAblation => "rag-ablation",
            Self::Cost => "cost",
            Self::Fixture => "fixture",
            Self::Aggregation => "aggregation",
            Self::ContextLevel => "context-level",
            Self::ReviewEval => "review-eval",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// Kinds that match findings to an oracle and read the oracle-matching keys.
    pub fn uses_oracle(self) -> bool {
        matches!(self, Self::Fixture | Self::Aggregation | Self::ReviewEval)
    }
}

/// How two findings are judged the same (A1 fuzzy overlap, A4, A8).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MatchRule {
    /// Lines may differ by at most this much.
    pub line_tolerance: u32,
    /// Message similarity (0..1) must reach this.
    pub similarity: f64,
    /// How messages are compared (normalized Levenshtein unless the manifest says otherwise).
    pub measure: crate::analysis::matching::SimilarityMeasure,
}

impl Default for MatchRule {
    fn default() -> Self {
        Self { line_tolerance: 1, similarity: 0.6, measure: crate::analysis::matching::SimilarityMeasure::Levenshtein }
    }
}

#[derive(Debug, Clone)]
pub struct ReportSpec {
    /// Directory RESULTS.md and results.json are written to.
    pub output: PathBuf,
    /// Template overriding `templates/results.md.hbs`.
    pub template: Option<PathBuf>,
}
