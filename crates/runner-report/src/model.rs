//! The versioned results model behind results.json and RESULTS.md. It depends only on the
//! manifest and the cached results, so a re-run from the cache reproduces it exactly.
//! Numbers are stored as numbers (`null` when undefined); the templates format them.
//! [`Results::read`] reads a results.json back, checking its schema version first.

use crate::analysis::AnalysisResult;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bumped when results.json changes shape. 2: numbers as numbers, typed table cells, run status.
pub(crate) const RESULTS_SCHEMA: u32 = 2;

/// The largest results.json read back (a million runs' rows fit many times over).
pub const MAX_RESULTS_BYTES: u64 = 1024 * crate::bounded::MIB;

/// Why a results.json could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("`{path}` is not a runner results.json: {message}")]
    Parse { path: PathBuf, message: String },
    #[error(
        "`{path}` has results schema {found}, and this runner reads schema {expected}: {}",
        if found > expected { "it was written by a newer runner; use that version" } else { "it was written by an older runner; run its experiment again (`runner exec MANIFEST --frozen` rewrites it from the cache)" }
    )]
    Schema { path: PathBuf, found: u32, expected: u32 },
}

/// The one field every results.json version has.
#[derive(Deserialize)]
struct SchemaProbe {
    schema_version: u32,
}

impl Results {
    /// Reads a results.json written by this runner's schema.
    pub fn read(path: &Path) -> Result<Self, ResultsError> {
        let text = crate::bounded::read_text(path, MAX_RESULTS_BYTES, crate::bounded::Links::Follow, "results files")
            .map_err(|source| ResultsError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text, path)
    }

    /// Parses results.json text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ResultsError> {
        let parse_error = |e: serde_json::Error| ResultsError::Parse { path: path.to_path_buf(), message: e.to_string() };
        let probe: SchemaProbe = serde_json::from_str(text).map_err(parse_error)?;
        if probe.schema_version != RESULTS_SCHEMA {
            return Err(ResultsError::Schema { path: path.to_path_buf(), found: probe.schema_version, expected: RESULTS_SCHEMA });
        }
        serde_json::from_str(text).map_err(parse_error)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub schema_version: u32,
    pub experiment: ExperimentInfo,
    /// The question the experiment asks: the title of its first `compare` analysis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The verdict lines of the experiment's comparisons, RESULTS.md's opening summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// Each cell's headline metric with its interval, RESULTS.md's first table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glance: Option<Glance>,
    pub matrix: MatrixInfo,
    pub reviewer: ReviewerInfo,
    pub target: TargetInfo,
    /// Distinct provenance entries of the runs (model files, servers, seeds, …).
    pub provenance: Vec<ProvenanceRow>,
    pub totals: Totals,
    pub cells: Vec<CellRow>,
    pub runs: Vec<RunRow>,
    pub failures: Vec<FailureRow>,
    /// The runs whose output broke the reviewer-output schema and was read leniently (a
    /// severity or category outside the closed sets mapped to the nearest, a field dropped),
    /// or whose pipeline stages failed or were cut short.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_problems: Vec<OutputProblemRow>,
    /// Shared with the execution that computed them (a 100k-cell analysis is not copied).
    pub analyses: Vec<Arc<AnalysisResult>>,
}

/// The first screen's table: one metric (the first compare analysis's first headline metric)
/// per cell, the mean over subjects (repeats pooled) with a bootstrap interval over subjects,
/// drawn with that analysis's resamples, seed, level and method.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Glance {
    pub metric: String,
    /// The interval's confidence level, e.g. 0.95.
    pub level: f64,
    /// `95%`, as the column is headed.
    pub level_label: String,
    pub rows: Vec<GlanceRow>,
}

/// One cell of [`Glance`]; `null` where the metric is undefined for every subject.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GlanceRow {
    pub cell: String,
    pub value: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Subjects with a value.
    pub subjects: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExperimentInfo {
    pub name: String,
    pub description: String,
    /// The manifest path as given on the command line.
    pub manifest: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixInfo {
    pub axes: Vec<AxisInfo>,
    pub repeat: u32,
    pub cells: usize,
    /// Subjects each cell is reviewed on: 1 for a git target (the cell's `ref`), every
    /// selected case for a corpus; `target.subjects` lists them all.
    pub subjects: usize,
    pub planned_runs: usize,
    /// `[matrix] exclude`'s entries, each as `` `axis=value`, … ``: the cells they drop are
    /// not among `cells`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AxisInfo {
    pub name: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReviewerInfo {
    pub kind: String,
    /// The reviewer's configurations as hashed into cache keys, with the cells using each.
    pub configs: Vec<ReviewerConfig>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReviewerConfig {
    /// Canonical JSON of the configuration.
    pub config: String,
    /// The cells that use it, or `all cells`.
    pub cells: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetInfo {
    pub kind: TargetKind,
    pub description: String,
    pub subjects: Vec<String>,
    /// Holdout cases this experiment ran because its manifest unsealed them.
    pub unsealed_holdout: Vec<String>,
    /// The resolved commits of git and eval subjects, so a reader sees exactly what was reviewed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<Revision>,
    /// For a history target: the commits selected, reviewed, skipped and sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryInfo>,
}

/// A history target's selection as RESULTS.md lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryInfo {
    /// ``the first-parent commits of `A..B` ``.
    pub selection: String,
    /// Commits the selection names.
    pub considered: usize,
    /// The commits reviewed, in review order (oldest first, or as listed).
    pub subjects: Vec<CommitRow>,
    /// The commits not reviewed, each with why (`note`).
    pub skipped: Vec<CommitRow>,
    /// The seeded sample, when one was taken.
    pub sample: Option<SampleInfo>,
    /// Changed lines past which a commit is skipped.
    pub max_diff_lines: u64,
}

/// One commit of a history target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommitRow {
    /// The full SHA (the subject's id).
    pub sha: String,
    pub short: String,
    /// The commit message's subject line.
    pub title: String,
    /// What the change is reviewed against (first parent, or the empty tree).
    pub base: String,
    pub base_short: String,
    /// Changed lines (added + removed) of its text files.
    pub lines: u64,
    pub files: usize,
    /// How it is reviewed when it is not a plain commit (a root or a merge), or why it is skipped.
    pub note: String,
}

/// A seeded sample of a history target's reviewable commits.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SampleInfo {
    pub size: usize,
    pub of: usize,
    pub seed: u64,
}

/// One subject's resolved range.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Revision {
    pub subject: String,
    pub base: String,
    pub head: String,
}

/// What kind of subjects the experiment reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Git,
    Corpus,
    Evals,
    External,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProvenanceRow {
    pub cells: String,
    pub entries: Vec<KeyValue>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Totals {
    pub planned: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub findings: usize,
    /// Summed wall time of the successful runs.
    pub review_seconds: f64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellRow {
    pub cell: String,
    /// Shared with the plan's runs of the cell.
    pub values: std::sync::Arc<crate::cache::key::CellText>,
    pub runs: usize,
    pub planned: usize,
    pub findings: usize,
    /// `null` when no run succeeded.
    pub findings_per_run: Option<f64>,
    pub seconds: f64,
    /// `null` when no run reported token counts.
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRow {
    pub cell: String,
    pub repeat: u32,
    pub subject: String,
    pub status: RunStatus,
    pub findings: usize,
    pub hunks: u32,
    /// `null` for a run without a result.
    pub seconds: Option<f64>,
    /// Short cache key, for `runner cache` lookups.
    pub key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailureRow {
    pub run: String,
    pub error: String,
    /// The last lines the reviewer wrote to stderr (at most [`FailureRow::STDERR_LINES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
}

impl FailureRow {
    /// How many of a failed run's last stderr lines a report keeps, as the terminal shows them.
    pub const STDERR_LINES: usize = 8;
    /// How many characters of each it keeps.
    const LINE_CHARS: usize = 300;

    /// The last [`Self::STDERR_LINES`] non-empty lines of `stderr`, each at most
    /// [`Self::LINE_CHARS`] characters.
    pub fn stderr_lines(stderr: &str) -> Vec<String> {
        let mut lines: Vec<String> =
            stderr.lines().rev().map(str::trim_end).filter(|l| !l.trim().is_empty()).take(Self::STDERR_LINES).map(|l| clip(l, Self::LINE_CHARS)).collect();
        lines.reverse();
        lines
    }
}

/// `text` cut to `chars` characters, `…` marking a cut.
fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// One run's deviations from the reviewer-output schema: the first few, and how many.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OutputProblemRow {
    pub run: String,
    /// The first [`OutputProblemRow::SHOWN`] problems.
    pub problems: Vec<String>,
    /// How many there are in all.
    pub count: usize,
}

impl OutputProblemRow {
    pub const SHOWN: usize = 3;
    /// How many characters of each problem it keeps.
    const PROBLEM_CHARS: usize = 300;

    /// The row of run `run` with `problems`: the first [`Self::SHOWN`], each cut to
    /// [`Self::PROBLEM_CHARS`] characters.
    pub fn new(run: String, problems: &[String]) -> Self {
        Self { run, problems: problems.iter().take(Self::SHOWN).map(|p| clip(p, Self::PROBLEM_CHARS)).collect(), count: problems.len() }
    }
}

/// What became of one planned run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Ok,
    Failed,
    Skipped,
    /// Frozen mode, and the cache lacks it.
    Missing,
}

impl RunStatus {
    /// The status as results.json writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Skipped => "skipped",
            RunStatus::Missing => "missing",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{render_markdown, DEFAULT_TEMPLATE};

    #[test]
    fn a_run_status_names_itself_as_results_json_writes_it() {
        for status in [RunStatus::Ok, RunStatus::Failed, RunStatus::Skipped, RunStatus::Missing] {
            assert_eq!(serde_json::to_value(status).expect("serializes"), serde_json::Value::from(status.as_str()));
        }
    }

    /// The committed results of the bundled experiments.
    fn committed() -> Vec<PathBuf> {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results");
        let mut dirs: Vec<PathBuf> =
            std::fs::read_dir(&root).expect("results/").map(|e| e.expect("entry").path()).filter(|p| p.join("results.json").is_file()).collect();
        dirs.sort();
        dirs
    }

    #[test]
    fn every_committed_results_json_reads_back_and_renders_its_results_md() {
        let dirs = committed();
        assert!(dirs.len() >= 3, "{dirs:?}");
        for dir in dirs {
            let path = dir.join("results.json");
            let results = Results::read(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(results.schema_version, RESULTS_SCHEMA);
            assert_eq!(results.runs.len(), results.matrix.planned_runs, "{}", path.display());
            // Written back, the typed model is the same document.
            let text = std::fs::read_to_string(&path).expect("read");
            let again: serde_json::Value = serde_json::to_value(&results).expect("serializes");
            let stored: serde_json::Value = serde_json::from_str(&text).expect("json");
            assert_eq!(again, stored, "{}", path.display());
            // And the numbers it holds render the committed RESULTS.md.
            let md = std::fs::read_to_string(dir.join("RESULTS.md")).expect("RESULTS.md");
            assert_eq!(render_markdown(&results, DEFAULT_TEMPLATE, "default").expect("renders"), md, "{}", dir.display());
        }
    }

    #[test]
    fn the_first_screen_is_the_question_the_verdicts_and_each_cells_headline_metric() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/quickstart");
        let results = Results::read(&dir.join("results.json")).unwrap_or_else(|e| panic!("{e}"));
        let md = render_markdown(&results, DEFAULT_TEMPLATE, "default").expect("renders");
        let at = |needle: &str| md.find(needle).unwrap_or_else(|| panic!("{needle:?} not in RESULTS.md:\n{md}"));
        assert!(at("# quickstart") < at("**The question:** Did changing `baseline` help?"));
        assert!(at("**The question:**") < at("## Summary\n\n- **recall**"));
        assert!(at("## Summary") < at("| Cell | recall | 95% interval | Subjects |"));
        assert!(at("| Cell | recall |") < at("## Details") && at("## Details") < at("| Manifest |"));
        // The table's values are the compared cells' means (every subject is paired here).
        let glance = results.glance.as_ref().expect("a glance");
        assert_eq!((glance.metric.as_str(), glance.rows.len()), ("recall", 2));
        let compare = results.analyses.iter().find(|a| a.kind == crate::analysis::spec::AnalysisKind::COMPARE).expect("compare");
        let data: crate::analysis::statistics::compare::CompareData = compare.data_as().expect("compare data");
        let recall = data.comparisons.iter().find(|c| c.metric.as_str() == "recall").expect("recall");
        assert_eq!((glance.rows[0].value, glance.rows[1].value), (recall.a_mean, recall.b_mean));
        assert_eq!(glance.rows[1].subjects, recall.subjects);
        for row in &glance.rows {
            let (value, low, high) = (row.value.expect("value"), row.low.expect("low"), row.high.expect("high"));
            assert!(low <= value && value <= high, "{row:?}");
        }
        assert!(
            md.contains(&format!(
                "| `baseline=heuristic` | {:.3} | [{:.3}, {:.3}] | 12 |",
                glance.rows[1].value.unwrap_or(0.0),
                glance.rows[1].low.unwrap_or(0.0),
                glance.rows[1].high.unwrap_or(0.0)
            )),
            "{md}"
        );
    }

    #[test]
    fn another_schema_version_is_refused_with_what_to_do() {
        let path = Path::new("old/results.json");
        let older = Results::parse(r#"{"schema_version": 1, "totals": {"review_seconds": "0.00"}}"#, path).expect_err("older");
        assert!(matches!(older, ResultsError::Schema { found: 1, expected: RESULTS_SCHEMA, .. }));
        assert!(older.to_string().contains("older runner") && older.to_string().contains("--frozen"), "{older}");
        let newer = Results::parse(&format!(r#"{{"schema_version": {}}}"#, RESULTS_SCHEMA + 1), path).expect_err("newer");
        assert!(newer.to_string().contains("newer runner"), "{newer}");
        let junk = Results::parse("[1, 2]", path).expect_err("not results");
        assert!(matches!(junk, ResultsError::Parse { .. }), "{junk}");
    }
}
