//! The validated experiment model: what a manifest means once every check has passed.

use crate::analysis::spec::AnalysisSpec;
use crate::matrix::Matrix;
use crate::reviewer::spec::ReviewerSpec;
use crate::subject::TargetSpec;
use serde::Serialize;
use std::path::PathBuf;

/// The manifest format version this build reads.
pub(crate) const MANIFEST_VERSION: i64 = 1;

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
    /// RQS v2's scoring resources: the jury, the pseudo-references, the embedder.
    pub scoring: Scoring,
    /// A git target's `head` and `ref` values as the manifest check resolved them (revision →
    /// commit SHA, one git process), so planning does not ask git again; empty where they were
    /// not checked or one did not resolve.
    pub resolved_revisions: std::collections::BTreeMap<String, String>,
}

/// What scores reviews beyond the oracle (RQS v2): `[judges.NAME]`, `[pseudo-references]`
/// (a claims model and static analyzers) and `[embedder]`. All optional; an `rqs` analysis
/// reads what is declared.
#[derive(Debug, Clone, Default)]
pub struct Scoring {
    /// The jury, in manifest order.
    pub judges: Vec<crate::judge::spec::JudgeSpec>,
    pub claims: Option<crate::judge::spec::ClaimsSpec>,
    pub analyzers: Vec<crate::smells::AnalyzerKind>,
    /// `[pseudo-references] analyzer-versions`: each analyzer's exact version by the name that
    /// runs (`ruff`, `jshint`, `clippy` or `rustc`), as its keys hold it; empty when not pinned.
    /// A live execution checks the installed analyzers against it; a frozen one reads it
    /// instead of asking the installed tools.
    pub analyzer_versions: std::collections::BTreeMap<String, String>,
    pub embedder: Option<crate::judge::embed::EmbedderSpec>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub name: String,
    pub description: String,
}

/// The matrix axis that picks a named reviewer per cell.
pub const REVIEWER_AXIS: &str = "reviewer";

/// The name a manifest's single `[reviewer]` table goes by.
pub(crate) const SINGLE_REVIEWER: &str = "reviewer";

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

#[derive(Debug, Clone)]
pub struct ReportSpec {
    /// Directory RESULTS.md and results.json are written to.
    pub output: PathBuf,
    /// Template overriding `templates/results.md.hbs`.
    pub template: Option<PathBuf>,
    /// Also write report.html (`runner report`'s page) beside RESULTS.md.
    pub html: bool,
    /// Overwrite files in `output` that runner did not write (`exec --force`; no manifest sets it).
    pub force: bool,
}
