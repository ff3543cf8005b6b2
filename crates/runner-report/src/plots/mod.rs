//! SVG charts beside RESULTS.md's tables, derived from the results model alone (so any
//! results.json can be charted again), written as `plots/<analysis>-<name>.svg` next to
//! RESULTS.md and linked from it under their analysis.
//!
//! The charts are plain data an analysis kind declares (`analysis::chart`: [`IntervalChart`],
//! [`BarChart`], [`DistributionChart`]) from its own `data` and the cells ([`ChartCells`],
//! answered here from the results model); [`RenderSvg`] draws one (see `svg.rs`), and
//! [`charts`] names each file after its analysis.
//!
//! Determinism: the charts depend only on the results model; items are in matrix (cell) order
//! and in the closed sets' order (categories, severities); sizes, colours and number formats are
//! fixed; the SVG has no timestamp, id or random jitter. The same results give the same bytes.

mod svg;

use super::model::{Results, RunRow, RunStatus};
pub use crate::analysis::chart::*;
use crate::analysis::AnalysisResult;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folder beside RESULTS.md that holds the charts.
pub(crate) const PLOTS_DIR: &str = "plots";

/// Why a chart could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("failed to draw a chart: {0}")]
    Draw(String),
    #[error("failed to write chart `{path}`: {message}")]
    Write { path: String, message: String },
    #[error("chart `{title}` has {marks} marks, more than the {MAX_CHART_MARKS} drawn")]
    TooLarge { title: String, marks: usize },
}

/// Drawing a chart: its SVG document.
pub trait RenderSvg {
    /// The chart as an SVG document.
    fn render_svg(&self) -> Result<String, PlotError>;
}

impl RenderSvg for Chart {
    fn render_svg(&self) -> Result<String, PlotError> {
        match self {
            Self::Interval(c) => svg::interval(c),
            Self::Bars(c) => svg::bars(c),
            Self::Distribution(c) => svg::distributions(c),
            Self::TooLarge { title, marks } => Err(PlotError::TooLarge { title: title.clone(), marks: *marks }),
        }
    }
}

/// A chart placed in the report: which analysis it belongs to and its file.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartFile {
    /// The analysis's index in `Results::analyses`.
    pub analysis: usize,
    /// The path relative to RESULTS.md: `plots/latency-seconds.svg`.
    pub path: String,
    pub chart: Chart,
}

/// What a template sees of a chart, under its analysis's `plots`: its title, and its path, or
/// (`path` null) why it was not drawn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlotLink {
    pub title: String,
    pub path: Option<String>,
    /// `null` for a drawn chart.
    pub not_drawn: Option<String>,
}

/// Every chart of the results, in analysis order. Files are named after the analysis's kind
/// (`latency-seconds.svg`); a kind's second and later analyses get their ordinal
/// (`latency-2-seconds.svg`).
pub(crate) fn charts(results: &Results) -> Vec<ChartFile> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (index, analysis) in results.analyses.iter().enumerate() {
        let kind = analysis.kind.as_str();
        let ordinal = {
            let n = seen.entry(kind).or_insert(0);
            *n += 1;
            *n
        };
        for named in charts_of(analysis, results) {
            let stem = if ordinal == 1 { format!("{kind}-{}", named.name) } else { format!("{kind}-{ordinal}-{}", named.name) };
            out.push(ChartFile { analysis: index, path: format!("{PLOTS_DIR}/{stem}.svg"), chart: named.chart.or_too_large() });
        }
    }
    out
}

/// The charts of each analysis as templates link them (`analyses[i].plots`).
pub fn links(results: &Results) -> Vec<Vec<PlotLink>> {
    links_of(results, &charts(results))
}

/// [`links`] of charts already computed.
pub(crate) fn links_of(results: &Results, charts: &[ChartFile]) -> Vec<Vec<PlotLink>> {
    let mut out = vec![Vec::new(); results.analyses.len()];
    for file in charts {
        if let Some(list) = out.get_mut(file.analysis) {
            let title = file.chart.title().replace(['[', ']'], "");
            list.push(if file.chart.drawn() {
                PlotLink { title, path: Some(file.path.clone()), not_drawn: None }
            } else {
                let reason = format!("{} marks are too many to draw (at most {MAX_CHART_MARKS}); the values are in results.json", file.chart.marks());
                PlotLink { title, path: None, not_drawn: Some(reason) }
            });
        }
    }
    out
}

/// Writes every chart drawn under `dir/plots/`; returns the paths written. No chart, no `plots/`
/// folder. (Charts no longer drawn are removed by [`super::outputs::Outputs::commit`], which
/// knows which files there runner wrote.)
pub fn write(results: &Results, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    write_charts(charts(results), dir)
}

/// [`write`] of charts already computed.
pub fn write_charts(charts: Vec<ChartFile>, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    Ok(write_rendered(render_charts(&charts), dir)?.into_iter().map(|(path, _)| path).collect())
}

/// The drawn charts' SVG text, by relative path: the work of [`write_charts`] that needs no
/// file, so it can run beside RESULTS.md's rendering.
pub fn render_charts(charts: &[ChartFile]) -> Vec<(String, Result<String, PlotError>)> {
    charts.iter().filter(|f| f.chart.drawn()).map(|f| (f.path.clone(), f.chart.render_svg())).collect()
}

/// How many threads write charts at once.
const CHART_WRITERS: usize = 8;

/// Writes charts [`render_charts`] drew into `dir`; the first that failed to draw is the error.
/// Returns each chart's path with whether its file changed.
pub fn write_rendered(rendered: Vec<(String, Result<String, PlotError>)>, dir: &Path) -> Result<Vec<(PathBuf, bool)>, PlotError> {
    let plots = dir.join(PLOTS_DIR);
    let fail = |path: &Path, message: String| PlotError::Write { path: path.display().to_string(), message };
    let mut written = Vec::new();
    if std::fs::symlink_metadata(&plots).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(fail(&plots, "it is a symbolic link: charts are written only into a directory of the report's own".to_string()));
    }
    if !rendered.is_empty() {
        std::fs::create_dir_all(&plots).map_err(|e| fail(&plots, e.to_string()))?;
    }
    let charts: Vec<(PathBuf, String)> = rendered.into_iter().map(|(name, svg)| svg.map(|svg| (dir.join(name), svg))).collect::<Result<_, _>>()?;
    // A file's sync waits on the disk, not on a core: up to `CHART_WRITERS` are written side by side.
    let write = |(path, svg): &(PathBuf, String)| crate::cache::store::atomic_replace(path, svg.as_bytes()).map_err(|e| fail(path, e.to_string()));
    let share = charts.len().div_ceil(CHART_WRITERS).max(1);
    let results: Vec<Result<bool, PlotError>> = std::thread::scope(|scope| {
        let writers: Vec<_> = charts.chunks(share).map(|chunk| (chunk, scope.spawn(move || chunk.iter().map(write).collect::<Vec<_>>()))).collect();
        writers
            .into_iter()
            .flat_map(|(chunk, w)| w.join().unwrap_or_else(|_| chunk.iter().map(|(path, _)| Err(fail(path, "the writer panicked".to_string()))).collect()))
            .collect()
    });
    for ((path, _), changed) in charts.into_iter().zip(results) {
        written.push((path, changed?));
    }
    Ok(written)
}

/// The charts one analysis gets: those its kind declares (`analysis::Definition::charts`),
/// from its `data` and the cells around it.
pub(crate) fn charts_of(analysis: &AnalysisResult, results: &Results) -> Vec<Named> {
    crate::analysis::definition_of(analysis.kind).map_or_else(Vec::new, |definition| definition.charts(analysis, &Cells::new(results)))
}

/// The cells of a results model as a chart sees them; labels are made only for a chart that
/// asks for one.
struct Cells<'r> {
    results: &'r Results,
    labels: std::cell::OnceCell<CellLabels>,
}

impl<'r> Cells<'r> {
    fn new(results: &'r Results) -> Self {
        Self { results, labels: std::cell::OnceCell::new() }
    }
}

impl ChartCells for Cells<'_> {
    fn label(&self, cell: &str) -> String {
        self.labels.get_or_init(|| CellLabels::new(self.results)).of(cell)
    }

    fn count(&self) -> usize {
        self.results.cells.len()
    }

    fn any_run_seconds(&self) -> bool {
        self.results.runs.iter().any(|r| run_seconds(r).is_some())
    }

    fn run_seconds(&self) -> Vec<(String, Vec<f64>)> {
        let mut per_cell: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for run in &self.results.runs {
            if let Some(s) = run_seconds(run) {
                per_cell.entry(run.cell.as_str()).or_default().push(s);
            }
        }
        if per_cell.is_empty() {
            return Vec::new();
        }
        self.results.cells.iter().map(|c| (self.label(&c.cell), per_cell.remove(c.cell.as_str()).unwrap_or_default())).collect()
    }
}

/// A run's recorded seconds, when it has a result.
fn run_seconds(run: &RunRow) -> Option<f64> {
    if run.status == RunStatus::Ok {
        run.seconds
    } else {
        None
    }
}

/// Short, readable labels for the cells: the values of the axes that vary (`gemma3-270m,
/// rag_symbol_max_definitions=5`; a lone varying axis shows its value alone), in axis order.
struct CellLabels(BTreeMap<String, String>);

impl CellLabels {
    fn new(results: &Results) -> Self {
        let varying: Vec<&str> = results.matrix.axes.iter().filter(|a| a.values.len() > 1).map(|a| a.name.as_str()).collect();
        let map = results
            .cells
            .iter()
            .map(|c| {
                let parts: Vec<String> = varying
                    .iter()
                    .filter_map(|axis| {
                        let v = c.values.get(*axis)?;
                        Some(if varying.len() == 1 || *axis == "model" || *axis == "reviewer" { v.clone() } else { format!("{axis}={v}") })
                    })
                    .collect();
                let label = if parts.is_empty() { c.cell.clone() } else { parts.join(", ") };
                (c.cell.clone(), label)
            })
            .collect();
        Self(map)
    }

    /// The label of a cell id, or the text itself when it names no cell.
    fn of(&self, cell: &str) -> String {
        self.0.get(cell).cloned().unwrap_or_else(|| cell.to_string())
    }
}

#[cfg(test)]
mod tests;
