//! `runner report`: one self-contained static HTML page from results.json — the summary,
//! every analysis table (RESULTS.md's tables), the plots beside results.json, the findings
//! per subject with the subject's diff beside them, filters by cell, reviewer and verdict,
//! and with a second execution, both side by side. Everything is inline (CSS, JS, SVG as
//! `data:` images, which run no script); every text is HTML-escaped by the template engine;
//! nothing depends on the clock, so the page of a frozen execution is byte-stable.

use super::model::Results;
use super::render::RenderError;
use super::show::{Shown, ShownStatus};
use crate::analysis::{AnalysisResult, Table};
use crate::plan::Plan;
use base64::Engine as _;
use handlebars::Handlebars;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The page template (`templates/report.html.hbs`), with its CSS and script inline.
pub const TEMPLATE: &str = include_str!("../../../templates/report.html.hbs");

/// The table partial: every table of the page.
const TABLE_PARTIAL: &str = concat!(
    "<div class=\"scroll\"><table id=\"{{id}}\" class=\"{{class}}\"><thead><tr>{{#each columns}}<th{{#if numeric}} class=\"num\"{{/if}}>{{name}}</th>{{/each}}</tr></thead><tbody>\n",
    "{{#each rows}}<tr{{#if cell}} data-cell=\"{{cell}}\"{{/if}}{{#if reviewer}} data-reviewer=\"{{reviewer}}\"{{/if}}>{{#each cells}}<td{{#if numeric}} class=\"num\"{{/if}}>{{> md spans}}</td>{{/each}}</tr>\n{{/each}}",
    "</tbody></table></div>"
);

/// Spans of inline Markdown (see [`Span`]).
const MD_PARTIAL: &str =
    "{{#each this}}{{#if code}}<code>{{text}}</code>{{else}}{{#if strong}}<strong>{{text}}</strong>{{else}}{{text}}{{/if}}{{/if}}{{/each}}";

/// A subject's diff is cut after this many lines (the page says so).
const MAX_DIFF_LINES: usize = 4000;

/// One execution on the page.
#[derive(Debug, Clone)]
pub struct Side {
    /// results.json as given on the command line.
    pub results_path: String,
    pub results: Results,
    /// What its runs said, or why that could not be read (no manifest, no cache).
    pub findings: Result<Shown, String>,
    /// Each subject's diff, or why it is not shown.
    pub diffs: BTreeMap<String, SubjectDiff>,
    /// `plots/*.svg` beside results.json, by file name.
    pub plots: Vec<Plot>,
}

/// A subject's diff on the page.
#[derive(Debug, Clone, PartialEq)]
pub enum SubjectDiff {
    /// The unified diff the reviewers saw.
    Text(String),
    /// Why it could not be obtained.
    Failed(String),
    /// Not built: the execution that wrote the page served every review of the subject from
    /// the cache, and builds no repository for a page (`runner report` does).
    NotBuilt,
}

impl SubjectDiff {
    pub fn is_shown(&self) -> bool {
        matches!(self, Self::Text(_))
    }
}

/// What the page says of a subject whose diff this execution did not build.
const NOT_BUILT: &str =
    "No diff here: every review of this subject came from the cache, so the execution that wrote this page built nothing for it. runner report on its results.json shows the page with the diff.";

/// An SVG chart beside results.json.
#[derive(Debug, Clone)]
pub struct Plot {
    pub name: String,
    pub svg: Vec<u8>,
}

/// The manifest a results.json names (`experiment.manifest`, relative to the project root it
/// was executed from): looked for under the project root of results.json (the nearest
/// directory above it holding `.git`), then under each directory above results.json (a tree
/// without git), then relative to the current directory — so it is found from any directory.
pub fn manifest_of(results_path: &Path, results: &Results) -> Result<PathBuf, String> {
    let label = Path::new(&results.experiment.manifest);
    if label.is_absolute() {
        return if label.is_file() { Ok(label.to_path_buf()) } else { Err(format!("the manifest `{}` it names does not exist", label.display())) };
    }
    let dir = results_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut candidates = Vec::new();
    if let Ok(dir) = dir.canonicalize() {
        if let Some(root) = dir.ancestors().find(|a| a.join(".git").exists()) {
            candidates.push(root.join(label));
        }
        candidates.extend(dir.ancestors().map(|a| a.join(label)));
    }
    candidates.push(label.to_path_buf());
    candidates.into_iter().find(|c| c.is_file()).ok_or_else(|| {
        format!(
            "the manifest `{}` it names was found neither at the project root of `{}`, nor in a directory above it, nor in the current directory (pass `--manifest`)",
            label.display(),
            results_path.display()
        )
    })
}

/// `plots/*.svg` beside `results_path`, sorted by file name (regular files only, 8 MiB at most each).
pub fn read_plots(results_path: &Path) -> Vec<Plot> {
    let dir = results_path.parent().unwrap_or(Path::new(".")).join("plots");
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut plots: Vec<Plot> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            if !name.to_ascii_lowercase().ends_with(".svg") {
                return None;
            }
            Some(Plot { svg: crate::bounded::read(&e.path(), 8 * crate::bounded::MIB, crate::bounded::Links::Refuse, "charts").ok()?, name })
        })
        .collect();
    plots.sort_by(|a, b| a.name.cmp(&b.name));
    plots
}

/// The diffs of the subjects results.json recorded, as the reviewers saw them: each
/// materialized the way `exec` does (a corpus case as its two-commit repository under
/// `work_dir`; a git range read from its repository) from the manifest's current plan. A
/// subject the plan no longer has, or has under another identity than the one its recorded
/// runs were reviewed under (`shown`'s records), is not built and the page says why; so is a
/// subject that cannot be materialized.
pub fn recorded_diffs(results: &Results, shown: Option<&Shown>, plan: &Plan, work_dir: &Path) -> BTreeMap<String, SubjectDiff> {
    let mut reviewed: BTreeMap<&str, &str> = BTreeMap::new();
    for run in shown.map(|s| s.runs.as_slice()).unwrap_or_default() {
        if let Some(identity) = &run.subject_identity {
            reviewed.entry(run.subject.as_str()).or_insert(identity.as_str());
        }
    }
    results
        .target
        .subjects
        .iter()
        .map(|id| {
            let diff = match plan.subjects.get(id) {
                None => SubjectDiff::Failed("the manifest no longer plans this subject".to_string()),
                Some(spec) if reviewed.get(id.as_str()).is_some_and(|i| *i != spec.identity) => SubjectDiff::Failed(
                    "the manifest's target has changed it since its runs were reviewed (another identity), so the diff they saw cannot be built".to_string(),
                ),
                Some(spec) => crate::subject::materialize(spec, work_dir).map_or_else(|e| SubjectDiff::Failed(e.to_string()), |s| SubjectDiff::Text(s.diff)),
            };
            (id.clone(), diff)
        })
        .collect()
}

/// The diffs of an execution's subjects from what its walk built (`built`, by subject id):
/// nothing is materialized here, and a subject the walk did not build is [`SubjectDiff::NotBuilt`].
pub fn built_diffs<'s>(subjects: impl Iterator<Item = &'s str>, built: &BTreeMap<&str, &crate::subject::Subject>) -> BTreeMap<String, SubjectDiff> {
    subjects.map(|id| (id.to_string(), built.get(id).map_or(SubjectDiff::NotBuilt, |s| SubjectDiff::Text(s.diff.clone())))).collect()
}

/// Renders the page: one execution, or two side by side (`sides[0]` is A).
pub fn render(sides: &[Side]) -> Result<String, RenderError> {
    let page = Page::build(sides);
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::html_escape);
    let fail = |message: String| RenderError::Render { template: "templates/report.html.hbs".to_string(), message };
    hb.register_partial("table", TABLE_PARTIAL).map_err(|e| fail(e.to_string()))?;
    hb.register_partial("md", MD_PARTIAL).map_err(|e| fail(e.to_string()))?;
    hb.render_template(TEMPLATE, &page).map_err(|e| RenderError::Render { template: "templates/report.html.hbs".to_string(), message: e.to_string() })
}

#[derive(Serialize)]
struct Page {
    title: String,
    nav: Vec<NavItem>,
    compare: bool,
    sides: Vec<SideView>,
    analyses: Vec<AnalysisPair>,
    filters: Filters,
    findings_total: usize,
    /// How verdicts were computed, per execution that has an oracle.
    verdict_rules: Vec<String>,
    subjects: Vec<SubjectView>,
}

#[derive(Serialize)]
struct NavItem {
    id: &'static str,
    name: &'static str,
}

#[derive(Serialize)]
struct Filters {
    cells: Vec<String>,
    reviewers: Vec<String>,
    verdicts: Vec<String>,
}

#[derive(Serialize)]
struct SideView {
    /// `a` or `b`: the prefix of its element ids.
    id: String,
    /// `A` or `B`.
    name: String,
    results_path: String,
    experiment: String,
    description: Vec<Span>,
    /// The comparisons' verdict lines (results.json `summary`).
    verdicts: Vec<Vec<Span>>,
    facts: Vec<Fact>,
    configs: Vec<Fact>,
    config_count: usize,
    provenance: Vec<Fact>,
    provenance_count: usize,
    cells: TableView,
    failures: Option<TableView>,
    runs: TableView,
    plots: Vec<PlotView>,
    notes: Vec<Vec<Span>>,
}

#[derive(Serialize)]
struct Fact {
    key: String,
    value: Vec<Span>,
}

#[derive(Serialize)]
struct PlotView {
    name: String,
    data: String,
}

#[derive(Serialize)]
struct TableView {
    id: String,
    class: &'static str,
    title: String,
    columns: Vec<ColumnView>,
    rows: Vec<RowView>,
    row_count: usize,
    collapsed: bool,
}

#[derive(Serialize)]
struct ColumnView {
    name: String,
    numeric: bool,
}

#[derive(Serialize)]
struct RowView {
    cells: Vec<CellView>,
    /// The cell id this row is about, for the cell filter.
    cell: Option<String>,
    reviewer: Option<String>,
}

#[derive(Serialize)]
struct CellView {
    spans: Vec<Span>,
    numeric: bool,
}

/// A piece of text with RESULTS.md's inline Markdown (`` `code` ``, `**strong**`) read
/// into flags, so the page shows it formatted while every character is still escaped.
#[derive(Serialize, Debug, PartialEq)]
struct Span {
    text: String,
    code: bool,
    strong: bool,
}

/// `` `code` `` and `**strong**` of a Markdown text as spans; an unpaired mark stays text.
fn spans(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let parts: Vec<&str> = text.split('`').collect();
    let paired = parts.len() % 2 == 1;
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 && (paired || i + 1 < parts.len()) {
            out.push(Span { text: part.to_string(), code: true, strong: false });
            continue;
        }
        let part = if i % 2 == 1 { format!("`{part}") } else { part.to_string() };
        let pieces: Vec<&str> = part.split("**").collect();
        let bold_paired = pieces.len() % 2 == 1;
        for (j, piece) in pieces.iter().enumerate() {
            let strong = j % 2 == 1 && (bold_paired || j + 1 < pieces.len());
            let text = if j % 2 == 1 && !strong { format!("**{piece}") } else { piece.to_string() };
            if !text.is_empty() {
                out.push(Span { text, code: false, strong });
            }
        }
    }
    out
}

/// The text of `spans` without its marks.
fn plain(spans: &[Span]) -> String {
    spans.iter().map(|s| s.text.as_str()).collect()
}

#[derive(Serialize)]
struct AnalysisPair {
    id: String,
    heading: String,
    sides: Vec<AnalysisView>,
}

#[derive(Serialize)]
struct AnalysisView {
    side: String,
    present: bool,
    description: Vec<Span>,
    rule: Option<Vec<Span>>,
    tables: Vec<TableView>,
    notes: Vec<Vec<Span>>,
}

#[derive(Serialize)]
struct SubjectView {
    id: String,
    anchor: String,
    diffs: Vec<DiffView>,
    findings: Vec<FindingRow>,
    finding_count: usize,
    /// Runs of this subject with nothing to show from the cache.
    unavailable: Vec<String>,
}

#[derive(Serialize)]
struct DiffView {
    /// Which execution's materialization; empty when one.
    label: String,
    lines: Vec<DiffLine>,
    note: Option<String>,
}

#[derive(Serialize)]
struct DiffLine {
    id: String,
    class: &'static str,
    old: String,
    new: String,
    text: String,
    flagged: bool,
}

#[derive(Serialize)]
struct FindingRow {
    side: String,
    run: String,
    cell: String,
    repeat: u32,
    reviewer: String,
    verdict: String,
    verdict_label: String,
    location: String,
    severity: String,
    category: String,
    confidence: String,
    message: String,
    suggestion: Option<String>,
    /// The id of the diff line it points at, when the diff has it.
    target: Option<String>,
}

impl Page {
    fn build(sides: &[Side]) -> Page {
        let compare = sides.len() > 1;
        let ids = ["a", "b"];
        let views: Vec<SideView> = sides.iter().zip(ids).map(|(s, id)| side_view(s, id)).collect();
        let analyses = pair_analyses(sides, &ids);

        let mut cells: Vec<String> = Vec::new();
        let mut reviewers: BTreeSet<String> = BTreeSet::new();
        let mut verdicts: BTreeSet<String> = BTreeSet::new();
        for side in sides {
            for c in &side.results.cells {
                if !cells.contains(&c.cell) {
                    cells.push(c.cell.clone());
                }
            }
        }
        // Findings per subject, in the first side's subject order, then any the second adds.
        let mut subject_order: Vec<String> = Vec::new();
        for side in sides {
            for s in &side.results.target.subjects {
                if !subject_order.contains(s) {
                    subject_order.push(s.clone());
                }
            }
        }
        let mut counter = 0usize;
        let mut findings_total = 0;
        let mut subjects = Vec::new();
        for (index, subject) in subject_order.iter().enumerate() {
            // The diff: the first side's, and the second's only when it differs.
            let mut diffs: Vec<(String, &SubjectDiff)> = Vec::new();
            for (side, id) in sides.iter().zip(ids) {
                if let Some(d) = side.diffs.get(subject) {
                    if !diffs.iter().any(|(_, other)| *other == d) {
                        diffs.push((id.to_ascii_uppercase(), d));
                    }
                }
            }
            let flagged: BTreeSet<(String, u32)> = sides
                .iter()
                .filter_map(|s| s.findings.as_ref().ok())
                .flat_map(|shown| shown.runs.iter().filter(|r| r.subject == *subject))
                .flat_map(|r| r.findings.iter().map(|f| (f.file.trim_start_matches("./").to_string(), f.line)))
                .collect();
            let single = diffs.len() <= 1;
            let mut line_ids: BTreeMap<(String, u32), String> = BTreeMap::new();
            let mut diff_views: Vec<DiffView> = diffs
                .into_iter()
                .map(|(label, d)| {
                    let label = if single { String::new() } else { label };
                    match d {
                        SubjectDiff::Text(text) => {
                            let (lines, note) = diff_lines(text, &mut counter, &flagged, &mut line_ids);
                            DiffView { label, lines, note }
                        }
                        SubjectDiff::Failed(why) => DiffView { label, lines: Vec::new(), note: Some(format!("The diff could not be obtained: {why}")) },
                        SubjectDiff::NotBuilt => DiffView { label, lines: Vec::new(), note: Some(NOT_BUILT.to_string()) },
                    }
                })
                .collect();
            if diff_views.is_empty() {
                diff_views.push(DiffView { label: String::new(), lines: Vec::new(), note: Some("No diff is available for this subject.".to_string()) });
            }
            let mut findings = Vec::new();
            let mut unavailable = Vec::new();
            for (side, id) in sides.iter().zip(ids) {
                let Ok(shown) = &side.findings else { continue };
                for run in shown.runs.iter().filter(|r| r.subject == *subject) {
                    if run.status != ShownStatus::Cached {
                        unavailable.push(format!(
                            "{}{}: {}",
                            if compare { format!("{} ", id.to_ascii_uppercase()) } else { String::new() },
                            run.run,
                            run.status.as_str()
                        ));
                    }
                    for f in &run.findings {
                        let verdict = f.verdict.as_ref().map(|v| v.verdict.clone()).unwrap_or_else(|| "unscored".to_string());
                        verdicts.insert(verdict.clone());
                        reviewers.insert(run.reviewer.clone());
                        findings_total += 1;
                        findings.push(FindingRow {
                            side: id.to_string(),
                            run: run.run.clone(),
                            cell: run.cell.clone(),
                            repeat: run.repeat,
                            reviewer: run.reviewer.clone(),
                            verdict_label: f.verdict.as_ref().map(|v| v.label()).unwrap_or_else(|| "unscored".to_string()),
                            verdict,
                            location: f.location(),
                            severity: f.severity.clone(),
                            category: f.category.clone(),
                            confidence: format!("{:.2}", f.confidence),
                            message: f.message.clone(),
                            suggestion: f.suggestion.clone(),
                            target: line_ids.get(&(f.file.trim_start_matches("./").to_string(), f.line)).cloned(),
                        });
                    }
                }
            }
            subjects.push(SubjectView {
                id: subject.clone(),
                anchor: format!("subject-{index}"),
                diffs: diff_views,
                finding_count: findings.len(),
                findings,
                unavailable,
            });
        }
        let title = match sides {
            [a, b] => format!("{} vs {}", a.results.experiment.name, b.results.experiment.name),
            [a, ..] => a.results.experiment.name.clone(),
            [] => "runner report".to_string(),
        };
        // The verdicts in a fixed order, those that occur.
        let order = ["found", "partial", "noise", "unscored"];
        let verdicts = order.iter().filter(|v| verdicts.contains(**v)).map(|v| v.to_string()).collect();
        let nav = [("summary", "Summary"), ("analyses", "Analyses"), ("plots", "Plots"), ("findings", "Findings"), ("runs", "Runs")];
        Page {
            title,
            nav: nav.into_iter().map(|(id, name)| NavItem { id, name }).collect(),
            compare,
            sides: views,
            analyses,
            filters: Filters { cells, reviewers: reviewers.into_iter().filter(|r| !r.is_empty()).collect(), verdicts },
            findings_total,
            verdict_rules: sides
                .iter()
                .zip(ids)
                .filter_map(|(s, id)| {
                    let rule = s.findings.as_ref().ok()?.rule.as_ref()?;
                    Some(if compare { format!("{}: {rule}", id.to_ascii_uppercase()) } else { rule.clone() })
                })
                .collect(),
            subjects,
        }
    }
}

fn side_view(side: &Side, id: &str) -> SideView {
    let r = &side.results;
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let fact = |key: &str, value: String| Fact { key: key.to_string(), value: spans(&value) };
    let mut facts = vec![
        fact("Manifest", format!("`{}`", r.experiment.manifest)),
        fact("Target", format!("{}: {}", kind_name(r), r.target.description)),
        fact("Reviewer", format!("`{}`", r.reviewer.kind)),
        fact(
            "Matrix",
            format!(
                "{}repeat {}",
                r.matrix
                    .axes
                    .iter()
                    .map(|a| format!("`{}` ∈ {{{}}} × ", a.name, a.values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")))
                    .collect::<String>(),
                r.matrix.repeat
            ),
        ),
        fact(
            "Runs",
            format!(
                "{} of {} succeeded ({} × {} × {}){}",
                r.totals.succeeded,
                r.totals.planned,
                plural(r.matrix.cells, "cell", "cells"),
                plural(r.matrix.subjects, "subject", "subjects"),
                plural(r.matrix.repeat as usize, "repeat", "repeats"),
                if r.totals.failed > 0 { format!(", **{} without a result**", r.totals.failed) } else { String::new() }
            ),
        ),
        fact("Findings", format!("{} in {:.2} s of review time", r.totals.findings, r.totals.review_seconds)),
    ];
    if r.totals.prompt_tokens > 0 || r.totals.completion_tokens > 0 {
        facts.push(fact("Tokens", format!("{} prompt, {} completion", r.totals.prompt_tokens, r.totals.completion_tokens)));
    }
    if !r.target.unsealed_holdout.is_empty() {
        facts.push(fact(
            "Holdout",
            format!(
                "**unsealed** (`[target] unseal-holdout = true`): {}",
                r.target.unsealed_holdout.iter().map(|h| format!("`{h}`")).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let mut cells = TableView::new(
        format!("{id}-cells"),
        "cells-table",
        "",
        &["Cell", "Runs", "Findings", "Findings / run", "Review s", "Prompt tokens", "Completion tokens"],
        &[false, true, true, true, true, true, true],
    );
    for c in &r.cells {
        cells.push(
            vec![
                c.cell.clone(),
                format!("{}/{}", c.runs, c.planned),
                c.findings.to_string(),
                num(c.findings_per_run, 2),
                format!("{:.2}", c.seconds),
                c.prompt_tokens.map_or("–".into(), |t| t.to_string()),
                c.completion_tokens.map_or("–".into(), |t| t.to_string()),
            ],
            Some(c.cell.clone()),
            None,
        );
    }
    let failures = (!r.failures.is_empty()).then(|| {
        let mut t = TableView::new(format!("{id}-failures"), "failures-table", "Runs without a result", &["Run", "Error"], &[false, false]);
        for f in &r.failures {
            t.push(vec![f.run.clone(), f.error.clone()], None, None);
        }
        t
    });
    let reviewer_of: BTreeMap<&str, &str> =
        side.findings.as_ref().map(|s| s.runs.iter().map(|run| (run.run.as_str(), run.reviewer.as_str())).collect()).unwrap_or_default();
    let mut runs = TableView::new(
        format!("{id}-runs"),
        "runs-table",
        &format!("All {} runs", r.runs.len()),
        &["Cell", "Repeat", "Subject", "Status", "Findings", "Hunks", "Seconds", "Key"],
        &[false, true, false, false, true, true, true, false],
    );
    runs.collapsed = true;
    for run in &r.runs {
        let label = format!("{} #{} @{}", run.cell, run.repeat, run.subject);
        runs.push(
            vec![
                run.cell.clone(),
                run.repeat.to_string(),
                run.subject.clone(),
                run.status.as_str().to_string(),
                run.findings.to_string(),
                run.hunks.to_string(),
                num(run.seconds, 2),
                run.key.clone(),
            ],
            Some(run.cell.clone()),
            reviewer_of.get(label.as_str()).filter(|r| !r.is_empty()).map(|r| r.to_string()),
        );
    }
    SideView {
        id: id.to_string(),
        name: id.to_ascii_uppercase(),
        results_path: side.results_path.clone(),
        experiment: r.experiment.name.clone(),
        description: spans(&r.experiment.description),
        verdicts: r.summary.iter().map(|line| spans(line)).collect(),
        facts,
        config_count: r.reviewer.configs.len(),
        provenance_count: r.provenance.len(),
        configs: r
            .reviewer
            .configs
            .iter()
            .map(|c| Fact { key: c.cells.clone(), value: vec![Span { text: c.config.clone(), code: true, strong: false }] })
            .collect(),
        provenance: r
            .provenance
            .iter()
            .map(|p| Fact { key: p.cells.clone(), value: spans(&p.entries.iter().map(|e| format!("{} `{}`", e.key, e.value)).collect::<Vec<_>>().join("; ")) })
            .collect(),
        cells,
        failures,
        runs,
        plots: side.plots.iter().map(|p| PlotView { name: p.name.clone(), data: base64::engine::general_purpose::STANDARD.encode(&p.svg) }).collect(),
        notes: side.findings.as_ref().err().map(|why| format!("Findings cannot be shown: {why}")).into_iter().map(|n| spans(&n)).collect(),
    }
}

fn kind_name(r: &Results) -> &'static str {
    match r.target.kind {
        super::model::TargetKind::Git => "git",
        super::model::TargetKind::Corpus => "corpus",
        super::model::TargetKind::Evals => "evals",
        super::model::TargetKind::External => "external",
    }
}

fn num(v: Option<f64>, digits: u8) -> String {
    crate::analysis::format_number(v, Some(digits))
}

impl TableView {
    fn new(id: String, class: &'static str, title: &str, columns: &[&str], numeric: &[bool]) -> Self {
        TableView {
            id,
            class,
            title: title.to_string(),
            columns: columns.iter().zip(numeric).map(|(c, n)| ColumnView { name: c.to_string(), numeric: *n }).collect(),
            rows: Vec::new(),
            row_count: 0,
            collapsed: false,
        }
    }

    /// Appends a row; its cells are right-aligned where their column is numeric.
    fn push(&mut self, cells: Vec<String>, cell: Option<String>, reviewer: Option<String>) {
        let cells =
            cells.into_iter().enumerate().map(|(i, text)| CellView { spans: spans(&text), numeric: self.columns.get(i).is_some_and(|c| c.numeric) }).collect();
        self.rows.push(RowView { cells, cell, reviewer });
        self.row_count = self.rows.len();
    }

    /// An analysis table: cells rendered as RESULTS.md renders them; a row whose first cell
    /// is a cell id is tagged with it for the cell filter.
    fn of(table: &Table, id: String, cell_ids: &BTreeSet<String>) -> Self {
        let align = table.align();
        let mut view = TableView {
            id,
            class: "analysis-table",
            title: table.title.clone(),
            columns: table.columns.iter().enumerate().map(|(i, c)| ColumnView { name: c.clone(), numeric: align.get(i) == Some(&"---:") }).collect(),
            rows: Vec::new(),
            row_count: 0,
            collapsed: table.collapsed(),
        };
        for row in table.each_row() {
            let cells: Vec<String> = row.iter().map(|c| c.render()).collect();
            let cell = cells.first().map(|c| plain(&spans(c))).filter(|c| cell_ids.contains(c.as_str()));
            view.push(cells, cell, None);
        }
        view
    }
}

/// An analysis's kind, seed test id and title: how the two sides' analyses are paired.
type AnalysisKey = (String, String, String);

/// The analyses of both sides, paired by kind, seed test id and title (in A's order, then
/// B's unpaired ones).
fn pair_analyses(sides: &[Side], ids: &[&str]) -> Vec<AnalysisPair> {
    let key = |a: &AnalysisResult| (a.kind.as_str().to_string(), a.test_id.clone(), a.title.clone());
    let mut order: Vec<AnalysisKey> = Vec::new();
    let mut by_side: Vec<BTreeMap<AnalysisKey, Vec<(usize, &AnalysisResult)>>> = Vec::new();
    for side in sides {
        let mut map: BTreeMap<_, Vec<_>> = BTreeMap::new();
        for (i, a) in side.results.analyses.iter().enumerate() {
            let k = key(a);
            let list = map.entry(k.clone()).or_insert_with(Vec::new);
            list.push((i, a.as_ref()));
            let nth = list.len();
            if order.iter().filter(|o| **o == k).count() < nth {
                order.push(k);
            }
        }
        by_side.push(map);
    }
    let mut seen: BTreeMap<AnalysisKey, usize> = BTreeMap::new();
    order
        .into_iter()
        .enumerate()
        .map(|(n, k)| {
            let nth = *seen.entry(k.clone()).and_modify(|c| *c += 1).or_insert(0);
            let views = sides
                .iter()
                .zip(&by_side)
                .zip(ids)
                .map(|((side, map), id)| {
                    let cell_ids: BTreeSet<String> = side.results.cells.iter().map(|c| c.cell.clone()).collect();
                    match map.get(&k).and_then(|l| l.get(nth)) {
                        Some((i, a)) => AnalysisView {
                            side: id.to_string(),
                            present: true,
                            description: spans(&a.description),
                            rule: a.rule.as_deref().map(spans),
                            tables: a.tables.iter().enumerate().map(|(j, t)| TableView::of(t, format!("{id}-analysis-{i}-table-{j}"), &cell_ids)).collect(),
                            notes: a.notes.iter().map(|n| spans(n)).collect(),
                        },
                        None => {
                            AnalysisView { side: id.to_string(), present: false, description: Vec::new(), rule: None, tables: Vec::new(), notes: Vec::new() }
                        }
                    }
                })
                .collect();
            let heading = if k.1.is_empty() { k.2.clone() } else { format!("{} · {}", k.2, k.1) };
            AnalysisPair { id: format!("analysis-{n}"), heading, sides: views }
        })
        .collect()
}

/// A unified diff as page lines: each with its old and new line numbers and a class; lines
/// a finding points at are flagged, and their ids recorded for the findings' links.
fn diff_lines(
    text: &str,
    counter: &mut usize,
    flagged: &BTreeSet<(String, u32)>,
    line_ids: &mut BTreeMap<(String, u32), String>,
) -> (Vec<DiffLine>, Option<String>) {
    let mut out = Vec::new();
    let (mut file, mut old_file) = (String::new(), String::new());
    let (mut old, mut new, mut left_old, mut left_new) = (0u32, 0u32, 0u32, 0u32);
    let total = text.lines().count();
    for raw in text.lines().take(MAX_DIFF_LINES) {
        *counter += 1;
        let id = format!("dl-{counter}");
        let in_hunk = left_old > 0 || left_new > 0;
        let (class, o, n) = if in_hunk && (raw.starts_with(' ') || raw.is_empty()) {
            left_old = left_old.saturating_sub(1);
            left_new = left_new.saturating_sub(1);
            old += 1;
            new += 1;
            ("ctx", old.to_string(), new.to_string())
        } else if in_hunk && raw.starts_with('-') {
            left_old = left_old.saturating_sub(1);
            old += 1;
            ("del", old.to_string(), String::new())
        } else if in_hunk && raw.starts_with('+') {
            left_new = left_new.saturating_sub(1);
            new += 1;
            ("add", String::new(), new.to_string())
        } else if raw.starts_with("@@") {
            if let Some((o0, ol, n0, nl)) = hunk_header(raw) {
                (old, left_old, new, left_new) = (o0.saturating_sub(1), ol, n0.saturating_sub(1), nl);
            }
            ("hunk", String::new(), String::new())
        } else {
            if let Some(path) = raw.strip_prefix("+++ ") {
                file = strip_side(path).unwrap_or_else(|| old_file.clone());
            } else if let Some(path) = raw.strip_prefix("--- ") {
                old_file = strip_side(path).unwrap_or_default();
            } else if raw.starts_with("diff --git ") {
                file.clear();
                old_file.clear();
            }
            ("meta", String::new(), String::new())
        };
        let key = (file.clone(), new);
        let is_flagged = (class == "add" || class == "ctx") && flagged.contains(&key);
        if is_flagged {
            line_ids.entry(key).or_insert_with(|| id.clone());
        }
        out.push(DiffLine { id, class, old: o, new: n, text: raw.to_string(), flagged: is_flagged });
    }
    let note = (total > MAX_DIFF_LINES).then(|| format!("The diff has {total} lines; the first {MAX_DIFF_LINES} are shown."));
    (out, note)
}

/// `a/path` or `b/path` (git's sides) as `path`; `None` for `/dev/null`.
fn strip_side(path: &str) -> Option<String> {
    let path = path.split('\t').next().unwrap_or(path);
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")).unwrap_or(path).to_string())
}

/// `@@ -a,b +c,d @@` as (a, b, c, d); a missing count is 1.
fn hunk_header(line: &str) -> Option<(u32, u32, u32, u32)> {
    let mut parts = line.split_whitespace().skip(1);
    let range = |s: &str| -> Option<(u32, u32)> {
        let (start, len) = s.split_once(',').unwrap_or((s, "1"));
        Some((start.parse().ok()?, len.parse().ok()?))
    };
    let (a, b) = range(parts.next()?.strip_prefix('-')?)?;
    let (c, d) = range(parts.next()?.strip_prefix('+')?)?;
    Some((a, b, c, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_markdown_becomes_spans_and_an_unpaired_mark_stays_text() {
        let s = |text: &str, code: bool, strong: bool| Span { text: text.to_string(), code, strong };
        assert_eq!(spans("a `b` **c** d"), vec![s("a ", false, false), s("b", true, false), s(" ", false, false), s("c", false, true), s(" d", false, false)]);
        assert_eq!(spans("x ` y"), vec![s("x ", false, false), s("` y", false, false)]);
        assert_eq!(spans("**x"), vec![s("**x", false, false)]);
        assert_eq!(plain(&spans("`model=a` <b>")), "model=a <b>");
    }

    #[test]
    fn diff_lines_carry_both_line_numbers_and_flag_what_findings_point_at() {
        let diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,3 @@\n a\n-b\n+c\n+d\n";
        let flagged: BTreeSet<(String, u32)> = [("x.py".to_string(), 3)].into_iter().collect();
        let (mut counter, mut ids) = (0, BTreeMap::new());
        let (lines, note) = diff_lines(diff, &mut counter, &flagged, &mut ids);
        assert!(note.is_none());
        let shape: Vec<(&str, &str, &str, bool)> = lines.iter().map(|l| (l.class, l.old.as_str(), l.new.as_str(), l.flagged)).collect();
        assert_eq!(
            shape,
            [
                ("meta", "", "", false),
                ("meta", "", "", false),
                ("meta", "", "", false),
                ("hunk", "", "", false),
                ("ctx", "1", "1", false),
                ("del", "2", "", false),
                ("add", "", "2", false),
                ("add", "", "3", true)
            ]
        );
        assert_eq!(ids.get(&("x.py".to_string(), 3)).map(String::as_str), Some("dl-8"));
        assert_eq!(hunk_header("@@ -5 +7,0 @@ fn"), Some((5, 1, 7, 0)));
    }
}
