//! SVG charts beside RESULTS.md's tables, derived from the results model alone (so any
//! results.json can be charted again), written as `plots/<analysis>-<name>.svg` next to
//! RESULTS.md and linked from it under their analysis.
//!
//! Three chart kinds, each a plain input struct that any analysis can fill:
//! - [`IntervalChart`]: a value per item with an interval (whiskers): a per-cell headline and
//!   its confidence interval, or a difference between two configurations and its interval
//!   (a vertical line marks 0 when the range crosses it);
//! - [`BarChart`]: grouped bars, one group per row (a category, a severity, a measure) and one
//!   bar per series (a cell);
//! - [`DistributionChart`]: a box-and-strip plot of many values per item (per-run seconds).
//!
//! [`Chart::render_svg`] draws one (see `svg.rs`). Which analysis gets which charts is decided
//! in one place, [`charts_of`]: an analysis kind that wants charts adds an arm there that reads
//! its own `data` and returns [`Named`] charts. A comparison analysis with bootstrap intervals,
//! for example, returns one `IntervalChart` whose points are the differences (`value` the
//! difference, `low`/`high` its interval bounds, `range: None` so the axis spans the data and
//! 0), its `interval` note naming the interval ("paired bootstrap, 95 %, 10 000 resamples").
//!
//! Determinism: the charts depend only on the results model; items are in matrix (cell) order
//! and in the closed sets' order (categories, severities); sizes, colours and number formats are
//! fixed; the SVG has no timestamp, id or random jitter. The same results give the same bytes.

mod svg;

use super::model::{Results, RunStatus};
use crate::analysis::corpus::review_eval::ReviewEvalData;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::AnalysisResult;
use crate::finding::{Category, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folder beside RESULTS.md that holds the charts.
pub(crate) const PLOTS_DIR: &str = "plots";

/// A chart with more marks than this (rows of an interval or distribution chart, bars of a
/// bar chart) is not drawn: nobody reads 100,000 bars, and its SVG would run to hundreds of
/// megabytes. RESULTS.md says so where the chart would be; the values are in results.json.
pub(crate) const MAX_CHART_MARKS: usize = 2_000;

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

/// One item of an [`IntervalChart`]: a value with an optional interval.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalPoint {
    pub label: String,
    /// `None`: undefined (drawn as `–`, no point).
    pub value: Option<f64>,
    /// The interval's bounds; both `None` for a value without an interval.
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// A value per item with whiskers for its interval, one row per item, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalChart {
    pub title: String,
    /// What the whiskers are, shown under the title (`Wilson 95 % interval …`); may be empty.
    pub interval: String,
    /// The x axis's caption.
    pub x_label: String,
    pub points: Vec<IntervalPoint>,
    /// A fixed x range (`(0, 1)` for a rate); `None`: from the data, always including 0.
    pub range: Option<(f64, f64)>,
    /// Decimals of the values written beside each row.
    pub digits: u8,
}

/// One series of a [`BarChart`]: a value per group (`None`: undefined, no bar).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// Grouped horizontal bars: one row per group, one bar per series in it, and a legend.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    /// Shown under the title; may be empty.
    pub note: String,
    pub x_label: String,
    pub groups: Vec<String>,
    pub series: Vec<Series>,
    /// A fixed x range; `None`: from 0 to a round number above the largest value.
    pub range: Option<(f64, f64)>,
    /// Decimals of the value written at the end of each bar.
    pub digits: u8,
}

/// The values of one item of a [`DistributionChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub label: String,
    pub values: Vec<f64>,
}

/// A box-and-strip plot per item: quartile box, median, whiskers to the extremes, every value
/// as a dot (up to 300 per item).
#[derive(Debug, Clone, PartialEq)]
pub struct DistributionChart {
    pub title: String,
    pub note: String,
    pub x_label: String,
    pub distributions: Vec<Distribution>,
    pub range: Option<(f64, f64)>,
    /// Decimals of the median written beside each row.
    pub digits: u8,
}

/// A chart of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Interval(IntervalChart),
    Bars(BarChart),
    Distribution(DistributionChart),
    /// A chart of more marks than are drawn ([`MAX_CHART_MARKS`]): its title and mark count
    /// only, so an undrawable chart holds no data.
    TooLarge {
        title: String,
        marks: usize,
    },
}

impl Chart {
    pub(crate) fn title(&self) -> &str {
        match self {
            Self::Interval(c) => &c.title,
            Self::Bars(c) => &c.title,
            Self::Distribution(c) => &c.title,
            Self::TooLarge { title, .. } => title,
        }
    }

    /// The chart itself when it is drawn; its title and mark count otherwise.
    pub(crate) fn or_too_large(self) -> Self {
        if self.drawn() {
            self
        } else {
            Self::TooLarge { title: self.title().to_string(), marks: self.marks() }
        }
    }

    /// How many marks it draws: an interval or distribution chart's rows, a bar chart's bars.
    pub(crate) fn marks(&self) -> usize {
        match self {
            Self::Interval(c) => c.points.len(),
            Self::Bars(c) => c.groups.len() * c.series.len(),
            Self::Distribution(c) => c.distributions.len(),
            Self::TooLarge { marks, .. } => *marks,
        }
    }

    /// Whether it is drawn (see [`MAX_CHART_MARKS`]).
    pub(crate) fn drawn(&self) -> bool {
        self.marks() <= MAX_CHART_MARKS
    }

    /// The chart as an SVG document.
    pub fn render_svg(&self) -> Result<String, PlotError> {
        match self {
            Self::Interval(c) => svg::interval(c),
            Self::Bars(c) => svg::bars(c),
            Self::Distribution(c) => svg::distributions(c),
            Self::TooLarge { title, marks } => Err(PlotError::TooLarge { title: title.clone(), marks: *marks }),
        }
    }
}

/// A chart an analysis asks for, with the short name its file is called by.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Named {
    /// Lower-case letters, digits and `-`: `seconds`, `category`.
    pub name: &'static str,
    pub chart: Chart,
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
    write_rendered(render_charts(&charts), dir)
}

/// The drawn charts' SVG text, by relative path: the work of [`write_charts`] that needs no
/// file, so it can run beside RESULTS.md's rendering.
pub fn render_charts(charts: &[ChartFile]) -> Vec<(String, Result<String, PlotError>)> {
    charts.iter().filter(|f| f.chart.drawn()).map(|f| (f.path.clone(), f.chart.render_svg())).collect()
}

/// Writes charts [`render_charts`] drew into `dir`; the first that failed to draw is the error.
pub fn write_rendered(rendered: Vec<(String, Result<String, PlotError>)>, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let plots = dir.join(PLOTS_DIR);
    let fail = |path: &Path, message: String| PlotError::Write { path: path.display().to_string(), message };
    let mut written = Vec::new();
    if std::fs::symlink_metadata(&plots).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(fail(&plots, "it is a symbolic link: charts are written only into a directory of the report's own".to_string()));
    }
    if !rendered.is_empty() {
        std::fs::create_dir_all(&plots).map_err(|e| fail(&plots, e.to_string()))?;
    }
    for (name, svg) in rendered {
        let svg = svg?;
        let path = dir.join(&name);
        crate::cache::store::atomic_write(&path, svg.as_bytes()).map_err(|e| fail(&path, e.to_string()))?;
        written.push(path);
    }
    Ok(written)
}

/// The charts one analysis gets, from its `data` and the results around it. The one place
/// that decides which analysis is charted how: add an arm for a new analysis kind here.
pub(crate) fn charts_of(analysis: &AnalysisResult, results: &Results) -> Vec<Named> {
    // Labels are made only for a chart that is drawn.
    let labels = || CellLabels::new(results);
    match analysis.kind {
        AnalysisKind::LATENCY => latency(results, labels).into_iter().collect(),
        AnalysisKind::DISTRIBUTION => distribution(analysis, labels),
        AnalysisKind::REVIEW_EVAL => review_eval(analysis, &labels()),
        AnalysisKind::RQS => rqs(analysis, &labels()).into_iter().collect(),
        AnalysisKind::COMPARE => compare(analysis).into_iter().collect(),
        AnalysisKind::RESOLUTION => resolution(analysis, &labels()).into_iter().collect(),
        _ => Vec::new(),
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

/// The Wilson score interval of `successes` out of `n` at 95 % (z = 1.959964); `None` when
/// `n` is 0.
pub(crate) fn wilson(successes: usize, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    const Z: f64 = 1.959_963_984_540_054;
    let (k, n) = (successes as f64, n as f64);
    let p = k / n;
    let z2 = Z * Z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = Z / denominator * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// A3: the seconds of every run with a result, per cell (results.json `runs`).
fn latency(results: &Results, labels: impl FnOnce() -> CellLabels) -> Option<Named> {
    const TITLE: &str = "Seconds per run, by cell";
    let seconds = |run: &super::model::RunRow| if run.status == RunStatus::Ok { run.seconds } else { None };
    if results.cells.len() > MAX_CHART_MARKS {
        // One box per cell: too many to draw.
        return results
            .runs
            .iter()
            .any(|r| seconds(r).is_some())
            .then(|| Named { name: "seconds", chart: Chart::TooLarge { title: TITLE.into(), marks: results.cells.len() } });
    }
    let mut per_cell: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for run in &results.runs {
        if let Some(s) = seconds(run) {
            per_cell.entry(run.cell.as_str()).or_default().push(s);
        }
    }
    if per_cell.is_empty() {
        return None;
    }
    let labels = labels();
    let distributions =
        results.cells.iter().map(|c| Distribution { label: labels.of(&c.cell), values: per_cell.remove(c.cell.as_str()).unwrap_or_default() }).collect();
    Some(Named {
        name: "seconds",
        chart: Chart::Distribution(DistributionChart {
            title: TITLE.into(),
            note: "Wall-clock time of each run with a result, as recorded when it ran. Box: quartiles; line: median; whiskers: fastest and slowest run.".into(),
            x_label: "seconds per run".into(),
            distributions,
            range: None,
            digits: 3,
        }),
    })
}

/// One row of A5's data: a cell's or axis value's findings by category and by severity.
#[derive(Deserialize)]
struct SpreadRow {
    source: Option<String>,
    #[serde(default)]
    by_category: Counts,
    #[serde(default)]
    by_severity: Counts,
}

/// A5's data read in one pass: how many rows it has, the rows themselves while there are no
/// more than a chart draws (a 100k-cell grid's are counted, not held), and the (table, key)
/// pairs with a non-zero count in any row. The data is one row object, or an array of them.
#[derive(Default)]
struct Spread {
    count: usize,
    rows: Vec<SpreadRow>,
    occurring: std::collections::HashSet<(&'static str, String)>,
}

impl Spread {
    fn add(&mut self, row: SpreadRow) {
        for (table, counts) in [("by_category", &row.by_category), ("by_severity", &row.by_severity)] {
            for (key, n) in &counts.0 {
                if *n > 0.0 {
                    self.occurring.insert((table, key.clone()));
                }
            }
        }
        self.count += 1;
        if self.count <= MAX_CHART_MARKS {
            self.rows.push(row);
        }
    }
}

impl<'de> Deserialize<'de> for Spread {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Spread;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an A5 row or an array of them")
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Spread, S::Error> {
                let mut spread = Spread::default();
                while let Some(row) = seq.next_element::<SpreadRow>()? {
                    spread.add(row);
                }
                Ok(spread)
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<Spread, M::Error> {
                let mut spread = Spread::default();
                spread.add(SpreadRow::deserialize(serde::de::value::MapAccessDeserializer::new(map))?);
                Ok(spread)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A JSON object of counts as a list: a few bytes per key, where a map would hold a node.
#[derive(Default)]
struct Counts(Vec<(String, f64)>);

impl Counts {
    fn get(&self, key: &str) -> Option<f64> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, n)| *n)
    }
}

impl<'de> Deserialize<'de> for Counts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Counts;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of counts")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Counts, M::Error> {
                let mut counts = Vec::new();
                while let Some(entry) = map.next_entry::<String, f64>()? {
                    counts.push(entry);
                }
                Ok(Counts(counts))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A5: findings per category and per severity, one bar per cell or axis value.
fn distribution(analysis: &AnalysisResult, labels: impl FnOnce() -> CellLabels) -> Vec<Named> {
    let Spread { count: row_count, rows, occurring } = analysis.data_as().unwrap_or_default();
    let count = |row: &SpreadRow, table: &str, key: &str| if table == "by_category" { &row.by_category } else { &row.by_severity }.get(key);
    let mut labels = Some(labels);
    let mut names: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let categories: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let severities: Vec<&str> = Severity::ALL.iter().map(|s| s.as_str()).collect();
    for (name, table, order, what) in [("category", "by_category", &categories, "stet category"), ("severity", "by_severity", &severities, "severity")] {
        let groups: Vec<&str> = order.iter().copied().filter(|k| occurring.contains(&(table, k.to_string()))).collect();
        if groups.is_empty() {
            continue;
        }
        let title = format!("Findings by {what}");
        // Past this, `rows` holds only the first rows: the chart is not drawn.
        if groups.len() * row_count > MAX_CHART_MARKS {
            out.push(Named { name, chart: Chart::TooLarge { title, marks: groups.len() * row_count } });
            continue;
        }
        if let Some(labels) = labels.take().map(|make| make()) {
            names = rows.iter().map(|r| labels.of(r.source.as_deref().unwrap_or("?"))).collect();
        }
        out.push(Named {
            name,
            chart: Chart::Bars(BarChart {
                title,
                note: "Findings over every successful run and subject; only the values that occur are shown.".into(),
                x_label: "findings".into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                series: rows
                    .iter()
                    .zip(&names)
                    .map(|(row, name)| Series { name: name.clone(), values: groups.iter().map(|g| Some(count(row, table, g).unwrap_or(0.0))).collect() })
                    .collect(),
                range: None,
                digits: 0,
            }),
        });
    }
    out
}

/// Seed 003: recall per cell with its Wilson interval, and recall by the oracle's severity.
/// Seed 001's resolution rate from git: resolved / counted findings per cell, with the
/// Wilson interval the analysis computed.
fn resolution(analysis: &AnalysisResult, labels: &CellLabels) -> Option<Named> {
    let cells: Vec<crate::analysis::rqs::resolution::CellData> = analysis.data_as().ok()?;
    if cells.iter().all(|c| c.resolution.posted == 0) {
        return None;
    }
    Some(Named {
        name: "rate",
        chart: Chart::Interval(IntervalChart {
            title: "Resolution rate per cell (a proxy)".into(),
            interval: "Whiskers: Wilson 95 % interval of resolved / counted findings (a later commit changed the flagged lines).".into(),
            x_label: "resolved / counted".into(),
            points: cells
                .iter()
                .map(|c| IntervalPoint { label: labels.of(&c.cell), value: c.resolution.rate, low: c.resolution.wilson_low, high: c.resolution.wilson_high })
                .collect(),
            range: Some((0.0, 1.0)),
            digits: 3,
        }),
    })
}

fn review_eval(analysis: &AnalysisResult, labels: &CellLabels) -> Vec<Named> {
    let Ok(data) = analysis.data_as::<ReviewEvalData>() else { return Vec::new() };
    if data.cells.is_empty() {
        return Vec::new();
    }
    let mut out = vec![Named {
        name: "recall",
        chart: Chart::Interval(IntervalChart {
            title: "Recall (strict) per cell".into(),
            interval:
                "Whiskers: Wilson 95 % interval of found / oracle findings, every repeat's verdict counted (repeats are not independent, so it is optimistic)."
                    .into(),
            x_label: "recall (strict)".into(),
            points: data
                .cells
                .iter()
                .map(|c| {
                    let interval = wilson(c.scores.counts.found, c.scores.counts.oracle);
                    IntervalPoint { label: labels.of(&c.cell), value: c.scores.recall_strict, low: interval.map(|i| i.0), high: interval.map(|i| i.1) }
                })
                .collect(),
            range: Some((0.0, 1.0)),
            digits: 3,
        }),
    }];
    if !data.severities.is_empty() {
        let oracle_count = |s: Severity| data.severities.values().filter(|v| **v == s).count();
        let severities: Vec<Severity> = Severity::ALL.into_iter().filter(|s| oracle_count(*s) > 0).collect();
        let recall = |cell: &crate::analysis::corpus::review_eval::CellEval, s: Severity| {
            let (mut found, mut all) = (0usize, 0usize);
            for f in cell.findings.values().filter(|f| data.severities.get(&f.finding) == Some(&s)) {
                found += f.found;
                all += f.found + f.partial + f.missed;
            }
            crate::analysis::ratio(found as f64, all as f64)
        };
        out.push(Named {
            name: "severity",
            chart: Chart::Bars(BarChart {
                title: "Recall (strict) by the oracle's severity".into(),
                note: "Found / verdicts on the oracle findings of each severity, over every repeat; the count is the oracle findings of that severity.".into(),
                x_label: "recall (strict)".into(),
                groups: severities
                    .iter()
                    .map(|s| {
                        let n = oracle_count(*s);
                        format!("{} ({n} oracle finding{})", s.as_str(), if n == 1 { "" } else { "s" })
                    })
                    .collect(),
                series: data.cells.iter().map(|c| Series { name: labels.of(&c.cell), values: severities.iter().map(|s| recall(c, *s)).collect() }).collect(),
                range: Some((0.0, 1.0)),
                digits: 3,
            }),
        });
    }
    out
}

/// RQS v2: the headline and the three measures it is the harmonic mean of, per cell.
fn rqs(analysis: &AnalysisResult, labels: &CellLabels) -> Option<Named> {
    let cells = analysis.data.get("cells")?.as_array()?;
    if cells.is_empty() {
        return None;
    }
    let measures = [
        ("weighted_recall", "severity-weighted recall"),
        ("precision_jury", "jury precision"),
        ("actionability", "actionability"),
        ("headline", "headline (harmonic mean)"),
    ];
    Some(Named {
        name: "scores",
        chart: Chart::Bars(BarChart {
            title: "RQS v2 per cell".into(),
            note: "The headline is the harmonic mean of the three measures above it; a value shown as – is undefined.".into(),
            x_label: "score".into(),
            groups: measures.iter().map(|(_, label)| label.to_string()).collect(),
            series: cells
                .iter()
                .map(|c| Series {
                    name: labels.of(c.get("cell").and_then(serde_json::Value::as_str).unwrap_or("?")),
                    values: measures.iter().map(|(key, _)| c.get(*key).and_then(serde_json::Value::as_f64)).collect(),
                })
                .collect(),
            range: Some((0.0, 1.0)),
            digits: 3,
        }),
    })
}

/// A comparison's differences B − A with their bootstrap intervals, one row per compared pair
/// of the headline metrics (all metrics when none is a headline).
fn compare(analysis: &AnalysisResult) -> Option<Named> {
    let data: crate::analysis::statistics::compare::CompareData = analysis.data_as().ok()?;
    // The title names B and A when every row compares the same two values.
    let first = data.comparisons.first()?;
    let one_pair = data.comparisons.iter().all(|c| c.a_label == first.a_label && c.b_label == first.b_label);
    let sides = if one_pair { format!("{} − {}", first.b_label, first.a_label) } else { format!("B − {}", first.a_label) };
    let points: Vec<IntervalPoint> = data
        .comparisons
        .iter()
        .filter(|c| data.headline.is_empty() || data.headline.contains(&c.metric))
        .filter_map(|c| {
            let value = c.difference?;
            let (low, high) = c.interval.map_or((value, value), |i| (i.low, i.high));
            let group = if c.group.is_empty() { String::new() } else { format!(" ({})", c.group) };
            let side = if one_pair { String::new() } else { format!("{}: ", c.b_label) };
            Some(IntervalPoint { label: format!("{side}{}{group}", c.metric.as_str()), value: Some(value), low: Some(low), high: Some(high) })
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    let method = match data.interval {
        crate::stats::IntervalMethod::Bca => "BCa",
        crate::stats::IntervalMethod::Percentile => "percentile",
    };
    Some(Named {
        name: "differences",
        chart: Chart::Interval(IntervalChart {
            title: format!("{}: {sides}", analysis.title),
            interval: format!(
                "paired {method} bootstrap {:.0} % interval over subjects ({} resamples, seed {})",
                data.level * 100.0,
                data.resamples,
                data.seed
            ),
            x_label: "difference B − A".into(),
            points,
            range: None,
            digits: 3,
        }),
    })
}

#[cfg(test)]
mod tests;
