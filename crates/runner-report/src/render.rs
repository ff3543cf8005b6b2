//! Rendering results through handlebars templates (strict: a missing field is an error).
//! The model holds numbers; the templates format them with the helpers registered here:
//! `{{fmt value digits=N}}`, `{{show cell}}` (a table cell) and `{{share count total}}`.

use super::model::{
    CellRow, CommitRow, ExperimentInfo, FailureRow, Glance, MatrixInfo, OutputProblemRow, ProvenanceRow, Results, ReviewerInfo, RunRow, SampleInfo, TargetInfo,
    Totals,
};
use super::plots::PlotLink;
use crate::analysis::spec::AnalysisKind;
use crate::analysis::{format_number, format_share, Table, TableCell};
use handlebars::{handlebars_helper, Context, Handlebars};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The built-in RESULTS.md template (`templates/results.md.hbs`).
pub(crate) const DEFAULT_TEMPLATE: &str = include_str!("../../../templates/results.md.hbs");

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("failed to read template `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("failed to render `{template}`: {message}")]
    Render { template: String, message: String },
    #[error("failed to write `{path}`: {source}")]
    Write { path: String, source: std::io::Error },
    #[error(transparent)]
    Plot(#[from] super::plots::PlotError),
    #[error(transparent)]
    Outputs(#[from] super::outputs::OutputsError),
}

/// How reports go into their directory.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Overwrite files there that runner did not write (`--force`).
    pub force: bool,
    /// The caller writes report.html beside them: it is checked and listed with them.
    pub html: bool,
    /// A directory (in the work directory) noting what each report directory was last
    /// rendered from ([`RenderStamp`]): when results.json, the template and the runner binary
    /// are what they were and the rendered files are as runner left them, RESULTS.md and the
    /// charts are not rendered again. `None`: always render.
    pub stamps: Option<std::path::PathBuf>,
    /// Whether the reports may be unchanged (every run came from the cache): only then is
    /// results.json compared with what the stamp knows before anything renders, so an
    /// execution that ran reviews serializes results.json once.
    pub maybe_unchanged: bool,
}

/// What a report directory's RESULTS.md and charts were rendered from and what they held:
/// the runner binary (version, size and modification time, so a rebuilt runner renders
/// again), the template's hash, the file list, and each rendered file's hash (a file edited or
/// removed since is rendered again). Kept in the work directory, never beside the reports.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct RenderStamp {
    runner: String,
    template: String,
    names: Vec<String>,
    files: Vec<(String, String)>,
}

impl RenderStamp {
    /// The stamp's file for report directory `dir`: named by the blake3 of its absolute path.
    fn path(stamps: &Path, dir: &Path) -> std::path::PathBuf {
        let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        stamps.join(format!("{}.json", blake3::hash(absolute.as_os_str().as_encoded_bytes()).to_hex()))
    }

    /// This runner binary, as far as rendering can tell it apart from another build.
    fn runner() -> String {
        let exe = std::env::current_exe().ok().and_then(|p| std::fs::metadata(p).ok());
        let (len, modified) =
            exe.map_or((0, 0), |m| (m.len(), m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())));
        format!("{} {len} {modified}", env!("CARGO_PKG_VERSION"))
    }

    /// The rendered files' hashes as they are on disk; `None` when one is missing or unreadable.
    fn hashes(dir: &Path, names: &[String]) -> Option<Vec<(String, String)>> {
        names
            .iter()
            .filter(|n| *n != "results.json" && *n != HTML_FILE)
            .map(|n| {
                let bytes = crate::bounded::read(&dir.join(n), 64 * crate::bounded::MIB, crate::bounded::Links::Refuse, "reports").ok()?;
                Some((n.clone(), blake3::hash(&bytes).to_hex().to_string()))
            })
            .collect()
    }
}

/// report.html's name in the report directory.
pub const HTML_FILE: &str = "report.html";

fn engine() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(escape_markdown_cell);
    hb.register_helper("fmt", Box::new(fmt));
    hb.register_helper("show", Box::new(show));
    hb.register_helper("share", Box::new(share));
    hb.register_helper("short_id", Box::new(short_id));
    hb.register_helper("untrusted", Box::new(untrusted));
    hb
}

// `{{untrusted text}}`: text from outside (a commit message, a reviewer's error) made inert in
// Markdown: no HTML (`<img onerror>`), no link or image (`![](url)`), no terminal control or
// bidirectional override characters; the cell escaping still applies after it.
handlebars_helper!(untrusted: |text: str| inert_markdown(text));

/// `text` with what GitHub would render as markup (HTML tags, links, images) escaped, and
/// control and bidirectional-override characters removed.
pub(crate) fn inert_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            '\n' | '\t' => out.push(' '),
            c if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}') => {}
            c => out.push(c),
        }
    }
    out
}

// `{{short_id subject}}`: a full commit SHA (40 or 64 hex digits) as its first 7; any other text
// as it is.
handlebars_helper!(short_id: |text: str| short_sha(text).to_string());

fn short_sha(text: &str) -> &str {
    if matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        crate::subject::history::short(text)
    } else {
        text
    }
}

// `{{fmt value digits=2}}`: a number with that many decimals (integers as they are when
// `digits` is not given); `null` shows as `–`. Anything else is shown as is.
handlebars_helper!(fmt: |value: Json, {digits: i64 = -1}| format_json_number(value, u8::try_from(digits).ok()));

// `{{show cell}}`: a table cell (text, count, number or share) as RESULTS.md shows it.
handlebars_helper!(show: |cell: Json| match TableCell::deserialize(cell) {
    Ok(cell) => cell.render(),
    Err(_) => format_json_number(cell, None),
});

// `{{share count total}}`: `5 (41.7%)`, or the count alone when either is zero.
handlebars_helper!(share: |count: u64, total: u64| format_share(count, total));

fn format_json_number(value: &serde_json::Value, digits: Option<u8>) -> String {
    match value {
        serde_json::Value::Null => format_number(None, digits),
        serde_json::Value::Number(n) if digits.is_none() && (n.is_u64() || n.is_i64()) => n.to_string(),
        serde_json::Value::Number(n) => format_number(n.as_f64(), digits),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Table cells must not break the Markdown table: escape pipes and flatten newlines.
fn escape_markdown_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// RESULTS.md lists at most this many rows of one table (the cells, the runs, the failures,
/// an analysis's table); a longer one shows its first rows and says how many more there are.
/// results.json always holds every row.
pub(crate) const MARKDOWN_ROWS: usize = 1_000;

// Every row RESULTS.md shows of an analysis's table is held as cells (see `Table::fold`).
const _: () = assert!(Table::HELD_ROWS >= MARKDOWN_ROWS);

/// What templates render: the results model with every list capped at [`MARKDOWN_ROWS`]
/// (`omitted` says how many rows each left out), each analysis with the charts drawn for it
/// (`plots`: a list of `{title, path, not_drawn}`, `path` relative to RESULTS.md). An
/// analysis's machine-readable `data` is not in it: it is in results.json. Serialized from
/// borrowed views, so a 100k-cell model is never copied whole.
#[derive(Serialize)]
struct MarkdownView<'a> {
    schema_version: u32,
    experiment: &'a ExperimentInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    question: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    summary: &'a [String],
    /// Runs without a result and the subjects each headline verdict used; `null` when every
    /// run has a result.
    shortfall: Option<Shortfall>,
    /// Whether RESULTS.md has a Summary: verdict lines, runs without a result, or output read
    /// leniently.
    summary_section: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    glance: Option<&'a Glance>,
    matrix: &'a MatrixInfo,
    /// `matrix.excluded`, always present (results.json leaves it out when empty).
    matrix_excluded: &'a [String],
    reviewer: &'a ReviewerInfo,
    target: &'a TargetInfo,
    provenance: &'a [ProvenanceRow],
    totals: &'a Totals,
    /// The shown cells, for a template of the user's own; the built-in template prints
    /// `cell_lines`, so its view leaves them out.
    #[serde(skip_serializing_if = "Option::is_none")]
    cells: Option<&'a [CellRow]>,
    /// The shown cells as the lines of the Cells table, written natively.
    cell_lines: String,
    /// The shown runs, for a template of the user's own (the built-in one prints `run_lines`).
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<&'a [RunRow]>,
    /// The shown runs as the lines of the runs table, written natively.
    run_lines: String,
    failures: &'a [FailureRow],
    output_problems: &'a [OutputProblemRow],
    /// How many runs `output_problems` holds in all.
    output_problem_runs: usize,
    /// A history target's commits, capped.
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<HistoryView<'a>>,
    omitted: Omitted,
    shown_rows: usize,
    analyses: Vec<AnalysisView<'a>>,
}

/// A history target's selection as templates see it: the commits reviewed and skipped, each
/// list capped, with `omitted` and `skipped_omitted` counting what is left out.
#[derive(Serialize)]
struct HistoryView<'a> {
    selection: &'a str,
    considered: usize,
    reviewed: usize,
    subjects: &'a [CommitRow],
    omitted: usize,
    skipped_count: usize,
    skipped: &'a [CommitRow],
    skipped_omitted: usize,
    /// Whether any reviewed commit has a note (a root commit, a merge).
    noted: bool,
    sample: &'a Option<SampleInfo>,
    max_diff_lines: u64,
}

/// How many rows of the model's own lists RESULTS.md leaves out.
#[derive(Serialize)]
struct Omitted {
    cells: usize,
    runs: usize,
    failures: usize,
    output_problems: usize,
}

/// What the Summary says when runs have no result: how many, and for each headline
/// comparison how many subjects its verdict paired and which it lost to those runs.
#[derive(Serialize)]
struct Shortfall {
    failed: usize,
    planned: usize,
    comparisons: Vec<PairedSubjects>,
    /// Headline comparisons beyond those listed.
    more: usize,
}

#[derive(Serialize)]
struct PairedSubjects {
    /// `**f1**, `b` vs `a``, as the verdict line names the comparison.
    label: String,
    /// Subjects with a value on both sides: those the verdict used.
    used: usize,
    /// The subjects a run without a result in either cell left out, the first
    /// [`SHOWN_SUBJECTS`] of them: `` `abc1234`, `def5678` and 3 more ``; empty when none.
    left_out: String,
}

/// Headline comparisons and left-out subjects the Summary names at most.
const SHOWN_COMPARISONS: usize = 10;
const SHOWN_SUBJECTS: usize = 10;

/// The Summary's account of runs without a result: `None` when every run has one.
fn shortfall(results: &Results) -> Option<Shortfall> {
    use crate::analysis::statistics::compare::CompareData;
    use std::collections::{BTreeSet, HashSet};
    if results.totals.failed == 0 {
        return None;
    }
    // (cell, subject) of every run without a result.
    let lost: HashSet<(&str, &str)> =
        results.runs.iter().filter(|r| r.status != super::model::RunStatus::Ok).map(|r| (r.cell.as_str(), r.subject.as_str())).collect();
    let mut comparisons = Vec::new();
    for analysis in results.analyses.iter().filter(|a| a.kind == AnalysisKind::COMPARE && !a.headline.is_empty()) {
        let Ok(data) = analysis.data_as::<CompareData>() else { continue };
        for c in data.comparisons.iter().filter(|c| data.headline.contains(&c.metric)) {
            let subjects_of = |cell: &str| data.cells.iter().find(|m| m.cell == cell).and_then(|m| m.metrics.get(c.metric.as_str())).map(|v| &v.subjects);
            let used: BTreeSet<&str> = match (subjects_of(&c.a), subjects_of(&c.b)) {
                (Some(a), Some(b)) => a.keys().filter(|s| b.contains_key(*s)).map(String::as_str).collect(),
                _ => BTreeSet::new(),
            };
            // A subject that kept a value on both sides (another repeat's) is not left out.
            let left: BTreeSet<&str> =
                lost.iter().filter(|(cell, subject)| (*cell == c.a || *cell == c.b) && !used.contains(subject)).map(|(_, subject)| *subject).collect();
            let names: Vec<String> = left.iter().take(SHOWN_SUBJECTS).map(|s| format!("`{}`", short_sha(s))).collect();
            let left_out = match names.split_last() {
                None => String::new(),
                Some(_) if left.len() > names.len() => format!("{} and {} more", names.join(", "), left.len() - names.len()),
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            };
            let group = if c.group.is_empty() { String::new() } else { format!(" ({})", c.group) };
            comparisons.push(PairedSubjects {
                label: format!("**{}**, `{}` vs `{}`{group}", c.metric.as_str(), c.b_label, c.a_label),
                used: used.len(),
                left_out,
            });
        }
    }
    let more = comparisons.len().saturating_sub(SHOWN_COMPARISONS);
    comparisons.truncate(SHOWN_COMPARISONS);
    Some(Shortfall { failed: results.totals.failed, planned: results.totals.planned, comparisons, more })
}

#[derive(Serialize)]
struct AnalysisView<'a> {
    kind: AnalysisKind,
    test_id: &'a str,
    title: &'a str,
    description: &'a str,
    rule: &'a Option<String>,
    tables: Vec<TableView<'a>>,
    notes: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    headline: &'a [String],
    plots: Vec<PlotLink>,
}

/// A table as templates see it: the derived fields of [`Table`]'s own serialization, its
/// rows capped, and `omitted`, the rows left out.
#[derive(Serialize)]
struct TableView<'a> {
    title: &'a str,
    columns: &'a [String],
    align: Vec<&'static str>,
    /// The rows as cells (`{{show this}}` renders one), for a template of the user's own; the
    /// built-in template reads `markdown_rows`, so its view leaves them out.
    #[serde(skip_serializing_if = "Option::is_none")]
    rows: Option<&'a [Vec<TableCell>]>,
    /// The same rows as the lines of a Markdown table, each cell shown and escaped as
    /// `{{show this}}` shows it, without the last line's break: written out directly, a table
    /// of thousands of cells costs no template evaluation per cell.
    markdown_rows: String,
    row_count: usize,
    collapsed: bool,
    omitted: usize,
}

/// The first [`MARKDOWN_ROWS`] items of a list, and how many are left out.
fn capped<T>(items: &[T]) -> (&[T], usize) {
    let shown = items.len().min(MARKDOWN_ROWS);
    (&items[..shown], items.len() - shown)
}

impl<'a> TableView<'a> {
    /// The view of `table`; with `cells`, its rows as cells too.
    fn new(table: &'a Table, cells: bool) -> Self {
        // A folded table holds as cells at least the rows shown.
        let (rows, _) = capped(&table.rows);
        Self {
            title: &table.title,
            columns: &table.columns,
            align: Table::align_rows(table.columns.len(), rows),
            rows: cells.then_some(rows),
            markdown_rows: markdown_rows(rows),
            row_count: table.row_count(),
            collapsed: table.collapsed(),
            omitted: table.row_count() - rows.len(),
        }
    }
}

/// `rows` as Markdown table lines: `|`, then ` cell |` for each cell, shown as `{{show}}` shows
/// it and escaped as every template value is; the lines joined by line breaks.
fn markdown_rows(rows: &[Vec<TableCell>]) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push('|');
        for cell in row {
            out.push(' ');
            let shown = cell.render();
            if shown.contains(['|', '\n']) {
                out.push_str(&escape_markdown_cell(&shown));
            } else {
                out.push_str(&shown);
            }
            out.push_str(" |");
        }
    }
    out
}

/// The Cells table's rows as the built-in template once wrote them one helper call at a time
/// (`| `{{cell}}` | {{runs}}/{{planned}} | {{findings}} | {{fmt findings_per_run digits=2}} |
/// {{fmt seconds digits=2}} | {{fmt prompt_tokens}} | {{fmt completion_tokens}} |`), the same
/// bytes written directly; the lines joined by line breaks.
fn cell_lines(cells: &[CellRow]) -> String {
    let lines = cells.iter().map(|c| {
        format!(
            "| `{}` | {}/{} | {} | {} | {} | {} | {} |",
            escape_markdown_cell(&c.cell),
            c.runs,
            c.planned,
            c.findings,
            format_number(c.findings_per_run.filter(|x| x.is_finite()), Some(2)),
            format_number(Some(c.seconds).filter(|x| x.is_finite()), Some(2)),
            c.prompt_tokens.map_or_else(|| format_number(None, None), |n| n.to_string()),
            c.completion_tokens.map_or_else(|| format_number(None, None), |n| n.to_string()),
        )
    });
    lines.collect::<Vec<_>>().join("\n")
}

/// The runs table's rows as the built-in template once wrote them (`| `{{cell}}` | {{repeat}} |
/// {{short_id subject}} | {{status}} | {{findings}} | {{hunks}} | {{fmt seconds digits=2}} |
/// `{{key}}` |`), written directly; the lines joined by line breaks.
fn run_lines(runs: &[RunRow]) -> String {
    let lines = runs.iter().map(|r| {
        format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | `{}` |",
            escape_markdown_cell(&r.cell),
            r.repeat,
            escape_markdown_cell(short_sha(&r.subject)),
            r.status.as_str(),
            r.findings,
            r.hunks,
            format_number(r.seconds.filter(|x| x.is_finite()), Some(2)),
            escape_markdown_cell(&r.key),
        )
    });
    lines.collect::<Vec<_>>().join("\n")
}

/// The context a report template renders against; with `row_cells`, each table's rows are in it
/// as cells too (a template of the user's own may read them; the built-in one does not).
fn context(results: &Results, charts: &[super::plots::ChartFile], row_cells: bool) -> Result<Context, RenderError> {
    let links = super::plots::links_of(results, charts);
    let (cells, cells_omitted) = capped(&results.cells);
    let (runs, runs_omitted) = capped(&results.runs);
    let (failures, failures_omitted) = capped(&results.failures);
    let (output_problems, output_problems_omitted) = capped(&results.output_problems);
    let shortfall = shortfall(results);
    let view = MarkdownView {
        schema_version: results.schema_version,
        experiment: &results.experiment,
        question: results.question.as_deref(),
        summary: &results.summary,
        summary_section: !results.summary.is_empty() || shortfall.is_some() || !results.output_problems.is_empty(),
        shortfall,
        glance: results.glance.as_ref(),
        matrix: &results.matrix,
        matrix_excluded: &results.matrix.excluded,
        reviewer: &results.reviewer,
        target: &results.target,
        provenance: &results.provenance,
        totals: &results.totals,
        cell_lines: cell_lines(cells),
        cells: row_cells.then_some(cells),
        run_lines: run_lines(runs),
        runs: row_cells.then_some(runs),
        failures,
        output_problems,
        output_problem_runs: results.output_problems.len(),
        history: results.target.history.as_ref().map(|h| {
            let (subjects, omitted) = capped(&h.subjects);
            let (skipped, skipped_omitted) = capped(&h.skipped);
            HistoryView {
                selection: &h.selection,
                considered: h.considered,
                reviewed: h.subjects.len(),
                subjects,
                omitted,
                skipped_count: h.skipped.len(),
                skipped,
                skipped_omitted,
                noted: h.subjects.iter().any(|c| !c.note.is_empty()),
                sample: &h.sample,
                max_diff_lines: h.max_diff_lines,
            }
        }),
        omitted: Omitted { cells: cells_omitted, runs: runs_omitted, failures: failures_omitted, output_problems: output_problems_omitted },
        shown_rows: MARKDOWN_ROWS,
        analyses: results
            .analyses
            .iter()
            .zip(links)
            .map(|(a, plots)| AnalysisView {
                kind: a.kind,
                test_id: &a.test_id,
                title: &a.title,
                description: &a.description,
                rule: &a.rule,
                tables: a.tables.iter().map(|t| TableView::new(t, row_cells)).collect(),
                notes: &a.notes,
                headline: &a.headline,
                plots,
            })
            .collect(),
    };
    let value = serde_json::to_value(&view).map_err(|e| RenderError::Render { template: "results".into(), message: e.to_string() })?;
    Ok(Context::from(value))
}

/// Renders RESULTS.md with the given template text.
pub fn render_markdown(results: &Results, template: &str, template_name: &str) -> Result<String, RenderError> {
    render_markdown_with(results, &super::plots::charts(results), template, template_name)
}

/// [`render_markdown`] with the results' charts already computed.
fn render_markdown_with(results: &Results, charts: &[super::plots::ChartFile], template: &str, template_name: &str) -> Result<String, RenderError> {
    let fail = |e: String| RenderError::Render { template: template_name.to_string(), message: e };
    let cells = template != DEFAULT_TEMPLATE;
    match compiled(template) {
        Some(compiled) => {
            let mut hb = engine();
            hb.register_template(template_name, compiled);
            hb.render_with_context(template_name, &context(results, charts, cells)?).map_err(|e| fail(e.to_string()))
        }
        // Compiled again here for its error, worded as it always was.
        None => engine().render_template_with_context(template, &context(results, charts, cells)?).map_err(|e| fail(e.to_string())),
    }
}

/// Templates compiled in this process, by the blake3 of their text: compiling the report
/// template is a good part of rendering RESULTS.md, and [`precompile`] does it while the
/// reviews run.
static COMPILED: std::sync::Mutex<Vec<(blake3::Hash, handlebars::Template)>> = std::sync::Mutex::new(Vec::new());

/// The template compiled from `text` (from [`COMPILED`], or compiled now and kept); `None`
/// when it does not compile.
fn compiled(text: &str) -> Option<handlebars::Template> {
    let hash = blake3::hash(text.as_bytes());
    if let Some((_, t)) = COMPILED.lock().ok()?.iter().find(|(h, _)| *h == hash) {
        return Some(t.clone());
    }
    let template = handlebars::Template::compile(text).ok()?;
    if let Ok(mut kept) = COMPILED.lock() {
        kept.push((hash, template.clone()));
    }
    Some(template)
}

/// Compiles the report template (the built-in one, or `template_override`) ahead of the
/// render, so the render after the last review does not: an execution calls it on another
/// thread as it starts. A template that does not compile is left for the render to report.
pub fn precompile(template_override: Option<&Path>) {
    let text = match template_override {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(_) => return,
        },
        None => DEFAULT_TEMPLATE.to_string(),
    };
    let _ = compiled(&text);
}

/// Compiles the report template (the built-in one, or `template_override`) and renders it
/// strictly against `results`, so that a syntax error or an unknown variable is reported
/// with the template's file, line and column before anything runs.
pub fn check_template(results: &Results, template_override: Option<&Path>) -> Result<(), RenderError> {
    let (template, name) = match template_override {
        Some(path) => {
            (std::fs::read_to_string(path).map_err(|source| RenderError::Read { path: path.display().to_string(), source })?, path.display().to_string())
        }
        None => (DEFAULT_TEMPLATE.to_string(), "templates/results.md.hbs".to_string()),
    };
    let mut hb = engine();
    let fail = |message: String| RenderError::Render { template: name.clone(), message };
    hb.register_template_string(&name, &template).map_err(|e| fail(e.to_string()))?;
    let cells = template != DEFAULT_TEMPLATE;
    hb.render_with_context(&name, &context(results, &super::plots::charts(results), cells)?).map(|_| ()).map_err(|e| fail(e.to_string()))
}

/// The report files a render wrote: every file of the report (`files`), and those whose bytes
/// it changed (`changed`) — the one record of what an execution changed, as it wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    pub files: Vec<std::path::PathBuf>,
    pub changed: Vec<std::path::PathBuf>,
}

impl Written {
    /// Adds a file, changed or left as it was.
    pub fn add(&mut self, path: std::path::PathBuf, changed: bool) {
        if changed {
            self.changed.push(path.clone());
        }
        self.files.push(path);
    }

    /// Adds another render's files.
    pub fn extend(&mut self, other: Written) {
        self.files.extend(other.files);
        self.changed.extend(other.changed);
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Writes RESULTS.md, results.json and the charts (`plots/*.svg`) into `dir`; returns their
/// paths, and which of them changed. Nothing is written over a file runner did not write there
/// (see [`super::outputs`]) unless `options.force`; charts runner wrote there before and no
/// longer draws are removed.
pub fn write_reports(results: &Results, dir: &Path, template_override: Option<&Path>, options: WriteOptions) -> Result<Written, RenderError> {
    let (template, name) = match template_override {
        Some(path) => {
            (std::fs::read_to_string(path).map_err(|source| RenderError::Read { path: path.display().to_string(), source })?, path.display().to_string())
        }
        None => (DEFAULT_TEMPLATE.to_string(), "templates/results.md.hbs".to_string()),
    };
    let md_path = dir.join("RESULTS.md");
    let json_path = dir.join("results.json");
    let outputs = super::outputs::Outputs::open(dir, options.force)?;
    let stamp_path = options.stamps.as_deref().map(|stamps| RenderStamp::path(stamps, dir));
    let template_hash = blake3::hash(template.as_bytes()).to_hex().to_string();
    if let Some(files) =
        stamp_path.as_deref().filter(|_| options.maybe_unchanged).and_then(|p| unchanged_reports(p, dir, results, &template_hash, options.html))
    {
        return Ok(Written { files, changed: Vec::new() });
    }
    // results.json is written while RESULTS.md renders beside it, and replaces the one there
    // only once RESULTS.md has rendered and nothing that is not runner's is in the way: a
    // template that fails, or a file runner did not write, leaves both as they were.
    let charts = super::plots::charts(results);
    let mut names: Vec<String> = ["RESULTS.md", "results.json"].map(String::from).into();
    names.extend(charts.iter().filter(|c| c.chart.drawn()).map(|c| c.path.clone()));
    if options.html {
        names.push(HTML_FILE.to_string());
    }
    // results.json is written and the charts drawn while RESULTS.md renders; RESULTS.md is
    // then written while results.json reaches the disk beside it, and renamed into place after it.
    let (rendered, svgs) = std::thread::scope(|scope| {
        let (md_done, md_result) = std::sync::mpsc::channel::<bool>();
        let json = scope.spawn(|| write_json(&json_path, results, move || md_result.recv().unwrap_or(false)));
        let svgs = scope.spawn(|| super::plots::render_charts(&charts));
        let markdown =
            outputs.check(names.iter().map(String::as_str)).map_err(RenderError::from).and_then(|()| render_markdown_with(results, &charts, &template, &name));
        let _ = md_done.send(markdown.is_ok());
        let md_error = |e: crate::cache::CacheError| RenderError::Write { path: md_path.display().to_string(), source: std::io::Error::other(e.to_string()) };
        let md_staged = markdown.and_then(|markdown| crate::cache::store::stage_replace(&md_path, markdown.as_bytes()).map_err(md_error));
        let json = json
            .join()
            .unwrap_or_else(|_| Err(RenderError::Write { path: json_path.display().to_string(), source: std::io::Error::other("the writer panicked") }));
        // RESULTS.md takes its place after results.json: another execution that looks at the
        // directory meanwhile finds a runner results.json beside any new RESULTS.md, and so
        // takes the directory's reports for runner's, never for files in the way.
        let md_changed = md_staged.and_then(|staged| match (staged, &json) {
            (Some(staged), Ok(_)) => staged.persist().map(|()| true).map_err(md_error),
            // Unchanged; or results.json failed, and the execution with it: nothing replaced.
            _ => Ok(false),
        });
        let svgs = svgs.join().unwrap_or_default();
        (md_changed.and_then(|md_changed| json.map(|json_changed| (md_changed, json_changed))), svgs)
    });
    let (md_changed, json_changed) = rendered?;
    let mut written = Written::default();
    written.add(md_path, md_changed);
    written.add(json_path, json_changed);
    for (path, changed) in super::plots::write_rendered(svgs, dir)? {
        written.add(path, changed);
    }
    outputs.commit(&names)?;
    if let Some(path) = stamp_path {
        // A stamp that cannot be written costs the next execution a render, nothing more.
        if let Some(files) = RenderStamp::hashes(dir, &names) {
            let stamp = RenderStamp { runner: RenderStamp::runner(), template: template_hash, names, files };
            if let Ok(text) = serde_json::to_vec(&stamp) {
                let _ = path.parent().map(std::fs::create_dir_all);
                let _ = crate::cache::store::atomic_write(&path, &text);
            }
        }
    }
    Ok(written)
}

/// The report files, when the directory's reports are those its stamp at `stamp_path` says
/// were rendered from this very results.json (compared byte for byte as it streams, nothing
/// written), template and runner, and are still as runner left them; `None`: render.
fn unchanged_reports(stamp_path: &Path, dir: &Path, results: &Results, template_hash: &str, html: bool) -> Option<Vec<std::path::PathBuf>> {
    let text = crate::bounded::read(stamp_path, crate::bounded::MIB, crate::bounded::Links::Refuse, "render stamps").ok()?;
    let stamp: RenderStamp = serde_json::from_slice(&text).ok()?;
    if stamp.template != template_hash || stamp.runner != RenderStamp::runner() || stamp.names.iter().any(|n| n == HTML_FILE) != html {
        return None;
    }
    if RenderStamp::hashes(dir, &stamp.names)? != stamp.files {
        return None;
    }
    // A results.json that differs is not written here: the comparison stops at its first
    // difference, and the reports are then rendered and written together as usual.
    if !crate::cache::store::same_as_file(&dir.join("results.json"), |out| serialize_json(out, results)).ok()? {
        return None;
    }
    Some(stamp.names.iter().filter(|n| *n != HTML_FILE).map(|n| dir.join(n)).collect())
}

/// results.json, pretty-printed with a final newline, streamed to its file (see
/// [`crate::cache::store::atomic_write_streamed`]: never held whole in memory, left as it is
/// when its bytes are unchanged, and replacing a changed file only if `proceed` says so once
/// it is written). Returns whether it replaced the file.
fn write_json(path: &Path, results: &Results, proceed: impl FnOnce() -> bool) -> Result<bool, RenderError> {
    crate::cache::store::atomic_write_streamed(path, |out| serialize_json(out, results), proceed)
        .map_err(|source| RenderError::Write { path: path.display().to_string(), source })
}

/// results.json's bytes, streamed to `out`. An error `out` returns comes back as it was (a
/// comparison that stops at a difference reads its own error back).
fn serialize_json(out: &mut dyn std::io::Write, results: &Results) -> std::io::Result<()> {
    // Buffered in front of the stream: the serializer's many small writes stay inlined.
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, out);
    super::pretty::to_writer_pretty(&mut buffered, results).map_err(std::io::Error::from)?;
    std::io::Write::write_all(&mut buffered, b"\n")?;
    std::io::Write::flush(&mut buffered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tables_are_capped_in_results_md_and_huge_charts_not_drawn() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/quickstart/results.json");
        let mut results = Results::read(&path).unwrap_or_else(|e| panic!("{e}"));
        // More cells than a chart draws rows, and so more than RESULTS.md lists.
        let n = super::super::plots::MAX_CHART_MARKS + 7;
        let more = n - MARKDOWN_ROWS;
        results.cells = (0..n).map(|i| CellRow { cell: format!("c{i}"), ..results.cells[0].clone() }).collect();
        results.runs = (0..n).map(|i| RunRow { cell: format!("c{i}"), ..results.runs[0].clone() }).collect();
        let latency = results.analyses.iter().position(|a| a.kind == AnalysisKind::LATENCY).expect("latency");
        let mut analysis = (*results.analyses[latency]).clone();
        let row = analysis.tables[0].rows[0].clone();
        analysis.tables[0].rows = vec![row; n];
        results.analyses[latency] = std::sync::Arc::new(analysis);
        let md = render_markdown(&results, DEFAULT_TEMPLATE, "default").expect("renders");
        let cell_rows = md.lines().filter(|l| l.starts_with("| `c") && l.contains(&format!("/{}", results.cells[0].planned))).count();
        assert!(md.contains(&format!("*The first {MARKDOWN_ROWS} cells; {more} more are in results.json.*")), "cells note");
        assert!(md.contains(&format!("*The first {MARKDOWN_ROWS} runs; {more} more are in results.json.*")), "runs note");
        assert!(md.contains(&format!("*The first {MARKDOWN_ROWS} rows; {more} more are in results.json.*")), "table note");
        assert_eq!(cell_rows, MARKDOWN_ROWS, "the cells table lists the first rows only");
        // The latency chart has a row per cell: over the limit, it is named, not drawn.
        let links = super::super::plots::links(&results);
        assert!(links[latency].iter().all(|l| l.path.is_none() && l.not_drawn.is_some()), "{:?}", links[latency]);
        assert!(md.contains("*Seconds per run, by cell: not drawn: "), "not-drawn note");
        let dir = tempfile::tempdir().expect("tempdir");
        let written = write_reports(&results, dir.path(), None, WriteOptions::default()).expect("writes");
        assert!(!written.files.iter().any(|p| p.ends_with("plots/latency-seconds.svg")), "{written:?}");
        // results.json keeps every row.
        let back = Results::read(&dir.path().join("results.json")).expect("reads back");
        assert_eq!((back.cells.len(), back.runs.len(), back.analyses[latency].tables[0].rows.len()), (n, n, n));
    }

    /// Runs without a result are in the Summary, with the subjects each verdict paired and
    /// those it lost; the failure table holds each failure's last stderr lines, inert; runs
    /// whose output was read with problems are counted and listed.
    #[test]
    fn runs_without_a_result_and_output_read_with_problems_are_reported() {
        use crate::analysis::statistics::compare::CompareData;
        use crate::model::RunStatus;
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/quickstart/results.json");
        let mut results = Results::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let untouched = render_markdown(&results, DEFAULT_TEMPLATE, "default").expect("renders");
        assert!(!untouched.contains("have no result") && !untouched.contains("read with problems"), "{untouched}");
        // case-01's run in the heuristic cell failed: its values are gone from the comparison.
        let compare = results.analyses.iter().position(|a| a.kind == AnalysisKind::COMPARE).expect("compare");
        let mut analysis = (*results.analyses[compare]).clone();
        let mut data: CompareData = analysis.data_as().expect("compare data");
        let heuristic = data.cells.iter().position(|c| c.cell == "baseline=heuristic").expect("heuristic cell");
        for values in data.cells[heuristic].metrics.values_mut() {
            values.subjects.remove("case-01");
        }
        analysis.data = serde_json::to_value(&data).expect("json").into();
        results.analyses[compare] = std::sync::Arc::new(analysis);
        let run = results.runs.iter_mut().find(|r| r.cell == "baseline=heuristic" && r.subject == "case-01").expect("run");
        run.status = RunStatus::Failed;
        // And one repeat of case-09's in the other cell: the subject keeps its other repeat's value.
        let run = results.runs.iter_mut().find(|r| r.cell == "baseline=dry-run" && r.subject == "case-09" && r.repeat == 2).expect("run");
        run.status = RunStatus::Skipped;
        results.totals.failed = 2;
        let stderr = format!("{}\nTraceback:\n\n  boom | <b>bold</b>\n\u{1b}[31mred\n", (1..=10).map(|i| format!("early {i}")).collect::<Vec<_>>().join("\n"));
        results.failures = vec![
            FailureRow { run: "baseline=heuristic #1 @case-01".into(), error: "`x` exited with exit code 1".into(), stderr: FailureRow::stderr_lines(&stderr) },
            // A run without stderr: one skipped.
            FailureRow { run: "baseline=dry-run #2 @case-09".into(), error: "skipped: endpoint unreachable".into(), stderr: Vec::new() },
        ];
        let problems: Vec<String> =
            (0..5).map(|i| format!("findings[{i}]: severity \"critical\" is not one of error, warning, info, nitpick; read as `error`")).collect();
        results.output_problems = vec![OutputProblemRow::new("baseline=dry-run #1 @case-02".into(), &problems)];
        let md = render_markdown(&results, DEFAULT_TEMPLATE, "default").expect("renders");
        let summary = &md[md.find("## Summary").expect("summary")..md.find("## Details").expect("details")];
        assert!(
            summary.contains(
                "- **2 of 64 runs have no result** (see *Runs without a result*); each verdict pairs the subjects with a value on both sides:\n  - **recall**, `heuristic` vs `dry-run`: 11 subjects, without `case-01` (a run without a result).\n"
            ),
            "{summary}"
        );
        assert!(summary.contains("- **1 run's output was read with problems**"), "{summary}");
        // Without verdict lines, the Summary still counts them.
        let mut bare = results.clone();
        bare.summary.clear();
        let md_bare = render_markdown(&bare, DEFAULT_TEMPLATE, "default").expect("renders without verdicts");
        assert!(md_bare.contains("## Summary\n\n- **2 of 64 runs have no result**"), "{md_bare}");
        // The last 8 non-empty stderr lines, markup and escapes made inert, the pipe escaped.
        assert!(
            md.contains("| `baseline=heuristic #1 @case-01` | `x` exited with exit code 1 | early 6<br>early 7<br>early 8<br>early 9<br>early 10<br>Traceback:<br>  boom \\| &lt;b&gt;bold&lt;/b&gt;<br>\\[31mred |"),
            "{md}"
        );
        assert!(md.contains("| `baseline=dry-run #2 @case-09` | skipped: endpoint unreachable |  |\n"), "{md}");
        assert!(md.contains("## Problems in reviewers' output"), "{md}");
        assert!(md.contains("| `baseline=dry-run #1 @case-02` | findings\\[0\\]: severity \"critical\" is not one of error, warning, info, nitpick; read as `error`<br>findings\\[1\\]:"), "{md}");
        assert!(md.contains("<br>(5 in all) |"), "{md}");
        // results.json keeps them, and reads back.
        let dir = tempfile::tempdir().expect("tempdir");
        write_json(&dir.path().join("results.json"), &results, || true).expect("writes");
        let back = Results::read(&dir.path().join("results.json")).expect("reads back");
        assert_eq!(back.failures[0].stderr.len(), FailureRow::STDERR_LINES);
        assert_eq!((back.output_problems[0].problems.len(), back.output_problems[0].count), (OutputProblemRow::SHOWN, 5));
    }

    #[cfg(unix)]
    #[test]
    fn an_unchanged_results_json_is_left_in_place_and_a_changed_one_replaced() {
        use std::os::unix::fs::MetadataExt;
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/quickstart/results.json");
        let mut results = Results::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().expect("tempdir");
        let json = dir.path().join("results.json");
        write_json(&json, &results, || true).expect("first write");
        let (first, inode) = (std::fs::read(&json).expect("read"), std::fs::metadata(&json).expect("meta").ino());
        write_json(&json, &results, || true).expect("same again");
        assert_eq!(std::fs::metadata(&json).expect("meta").ino(), inode, "identical bytes: the file is not replaced");
        assert_eq!(std::fs::read(&json).expect("read"), first);
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1, "no temporary file is left");
        results.experiment.description.push('!');
        write_json(&json, &results, || true).expect("changed");
        assert_ne!(std::fs::metadata(&json).expect("meta").ino(), inode, "changed bytes: the file is replaced");
        assert_eq!(Results::read(&json).expect("reads back").experiment.description, results.experiment.description);
    }

    #[test]
    fn a_template_that_fails_to_render_leaves_both_reports_as_they_were() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/quickstart/results.json");
        let mut results = Results::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().expect("tempdir");
        write_reports(&results, dir.path(), None, WriteOptions::default()).expect("first reports");
        let read = |name: &str| std::fs::read(dir.path().join(name)).expect("read");
        let (md, json) = (read("RESULTS.md"), read("results.json"));
        results.experiment.description.push_str(" (changed)");
        let failing = dir.path().join("failing.md.hbs");
        std::fs::write(&failing, "{{experiment.name}} {{no_such_field}}").expect("template");
        assert!(write_reports(&results, dir.path(), Some(&failing), WriteOptions::default()).is_err(), "an unknown field fails in strict mode");
        assert_eq!((read("RESULTS.md"), read("results.json")), (md, json.clone()), "neither report is replaced");
        assert!(
            std::fs::read_dir(dir.path()).expect("list").all(|e| !e.expect("entry").file_name().to_string_lossy().starts_with(".tmp")),
            "no temporary file is left"
        );
        write_reports(&results, dir.path(), None, WriteOptions::default()).expect("reports again");
        assert_ne!(read("results.json"), json, "with a template that renders, the changed results are written");
    }

    fn render(template: &str, data: serde_json::Value) -> String {
        engine().render_template(template, &data).expect("renders")
    }

    #[test]
    fn numbers_are_formatted_by_the_templates() {
        let data = serde_json::json!({"s": 1.23456, "n": 1500, "none": null, "zero": 0.0});
        assert_eq!(render("{{fmt s digits=2}} {{fmt s digits=0}} {{fmt n}} {{fmt none digits=3}} {{fmt zero digits=2}}", data), "1.23 1 1500 – 0.00");
        assert_eq!(render("{{share 5 12}} {{share 0 12}}", serde_json::json!({})), "5 (41.7%) 0");
    }

    #[test]
    fn table_cells_render_by_kind_and_text_is_escaped() {
        let cells = vec![
            TableCell::Int(3),
            TableCell::Text("a | b\nc".into()),
            TableCell::Num { num: Some(0.5), digits: 3 },
            TableCell::Num { num: None, digits: 3 },
            TableCell::Share { count: 4, of: 8 },
            TableCell::Delta { delta: Some(1.0), digits: 0 },
            TableCell::Delta { delta: Some(-0.5), digits: 2 },
        ];
        let data = serde_json::json!({ "cells": cells });
        let back: Vec<TableCell> = serde_json::from_value(data["cells"].clone()).expect("reads back");
        assert_eq!(back, cells, "each kind reads back as itself");
        assert_eq!(render("{{#each cells}}[{{show this}}]{{/each}}", data), "[3][a \\| b c][0.500][–][4 (50.0%)][+1][-0.50]");
    }

    #[test]
    fn templates_see_each_analysis_with_its_charts() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/quickstart/results.json");
        let results = Results::read(&path).expect("committed results");
        let template = "{{#each analyses}}{{kind}}:{{#each plots}} {{path}} ({{title}}){{/each}};{{/each}}";
        let out = render_markdown(&results, template, "t").expect("renders");
        assert!(out.contains("latency: plots/latency-seconds.svg (Seconds per run, by cell);"), "{out}");
        assert!(out.contains("distribution: plots/distribution-category.svg (Findings by stet category) plots/distribution-severity.svg"), "{out}");
        // An analysis without charts has an empty list, so strict templates can always iterate it.
        assert!(out.contains("schema:;"), "{out}");
        check_template(&results, None).expect("the default template links them");
    }

    #[test]
    fn a_missing_field_is_an_error() {
        assert!(engine().render_template("{{fmt nothing digits=2}}", &serde_json::json!({})).is_err());
    }
}

#[cfg(test)]
mod stamp_tests {
    use super::*;

    #[test]
    fn unchanged_reports_are_not_rendered_again_and_anything_changed_is() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("results/quickstart/results.json");
        let mut results = Results::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().expect("tempdir");
        let (out, stamps) = (dir.path().join("out"), dir.path().join("renders"));
        let options = || WriteOptions { stamps: Some(stamps.clone()), maybe_unchanged: true, ..WriteOptions::default() };
        write_reports(&results, &out, None, options()).expect("first");
        let md = out.join("RESULTS.md");
        let rendered = std::fs::read_to_string(&md).expect("RESULTS.md");
        let stamp_file = RenderStamp::path(&stamps, &out);
        let stamp: RenderStamp = serde_json::from_slice(&std::fs::read(&stamp_file).expect("a stamp is kept")).expect("stamp");
        assert!(stamp.files.iter().any(|(n, _)| n == "RESULTS.md") && !stamp.files.iter().any(|(n, _)| n == "results.json"), "{stamp:?}");

        // A RESULTS.md edited by hand is rendered again, and it alone is said to have changed.
        std::fs::write(&md, "edited").expect("edit");
        let again = write_reports(&results, &out, None, options()).expect("again");
        assert_eq!(std::fs::read_to_string(&md).expect("RESULTS.md"), rendered, "restored");
        assert_eq!(again.changed, vec![md.clone()], "{again:?}");

        // With the stamp saying the edited file is what was rendered, nothing is rendered:
        // the skip is real (the file stays as the stamp knows it).
        std::fs::write(&md, "as stamped").expect("edit");
        let mut files = stamp.files.clone();
        for (name, hash) in &mut files {
            if name == "RESULTS.md" {
                *hash = blake3::hash(b"as stamped").to_hex().to_string();
            }
        }
        let forged = RenderStamp { files, ..stamp };
        std::fs::write(&stamp_file, serde_json::to_vec(&forged).expect("json")).expect("forge");
        let written = write_reports(&results, &out, None, options()).expect("skipped");
        assert_eq!(std::fs::read_to_string(&md).expect("RESULTS.md"), "as stamped", "not rendered again");
        assert!(written.files.iter().any(|p| p.ends_with("RESULTS.md")) && written.files.iter().any(|p| p.ends_with("results.json")), "{written:?}");
        assert!(written.changed.is_empty(), "a skipped render changed nothing: {written:?}");
        // An execution that ran reviews does not look: it renders, and says what it changed.
        let fresh = write_reports(&results, &out, None, WriteOptions { maybe_unchanged: false, ..options() }).expect("fresh runs");
        assert_eq!(std::fs::read_to_string(&md).expect("RESULTS.md"), rendered, "rendered again");
        assert_eq!(fresh.changed, vec![md.clone()], "only RESULTS.md differed from what it wrote: {fresh:?}");

        // A changed results.json is rendered, and a changed template too.
        results.experiment.name.push_str(" (changed)");
        write_reports(&results, &out, None, options()).expect("changed results");
        assert!(std::fs::read_to_string(&md).expect("RESULTS.md").contains("(changed)"));
        let template = dir.path().join("t.hbs");
        std::fs::write(&template, "# {{experiment.name}} by template\n").expect("template");
        write_reports(&results, &out, Some(&template), options()).expect("template");
        assert!(std::fs::read_to_string(&md).expect("RESULTS.md").ends_with("by template\n"));
    }

    #[test]
    fn outside_text_is_inert_in_markdown() {
        let hostile = "Fix <img src=x onerror=alert(1)> ![](https://t.example/p.png) [x](javascript:1)\u{1b}[31m\u{202e}cod\0e\nnext";
        assert_eq!(inert_markdown(hostile), "Fix &lt;img src=x onerror=alert(1)&gt; !\\[\\](https://t.example/p.png) \\[x\\](javascript:1)\\[31mcode next");
        assert_eq!(inert_markdown("Plain `code` and a | pipe"), "Plain `code` and a | pipe", "the cell escaping handles pipes");
    }
}
