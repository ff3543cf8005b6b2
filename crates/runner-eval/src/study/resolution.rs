//! Resolution rate from git, offline: of the findings stet posted (`.review/history.jsonl`),
//! how many had their flagged lines changed by a later commit? Seed 001's online metric (did
//! the author change the flagged code?), computed from the repository's history instead of a
//! pull request's timeline. It is a proxy: a later change to those lines may be unrelated to
//! the finding, and a fix made elsewhere is not seen.
//!
//! # The rule
//!
//! - Sessions are A2's (`history::analyze`: `diff_ref@finished_at`, unfinished ones too); a
//!   session's findings are its finish record's `review_output` (an unfinished session's last
//!   record's), one per distinct `id`; a finding is dismissed when the finish record's
//!   `dismissed_ids` holds it.
//! - The reviewed commit is the session's `diff_ref`. The later commits are the first `window`
//!   commits after it on the first-parent line of `--head` (HEAD), as `subject::trace` walks.
//! - A finding's lines are its `range` (else `line`), widened by `tolerance` on each side; it
//!   is resolved when one of those commits changed or removed one of those lines, followed
//!   through the commits before it (moves and renames).
//! - Not counted, and listed: findings with no later commit yet (pending), and findings that
//!   cannot be traced — no file or line, a file the reviewed commit lacks, a reviewed commit
//!   missing from the repository or not an ancestor of the head.
//! - Rates are resolved / posted with 95 % Wilson intervals (`stats::wilson_interval`), per
//!   session, model (side file, else `run_config.model`), category and severity, for findings
//!   kept and, apart, for findings the user dismissed.

use super::history::{self, A2Report, SideFile};
pub use crate::analysis::rqs::resolution::{definition, Rate, LEVEL};
use crate::analysis::rqs::resolution::{Outcome, Pending, Resolver};
use crate::subject::git::GitError;
use crate::subject::trace::Span;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// How many later commits are looked at.
    pub window: usize,
    /// Lines either side of the flagged ones that count.
    pub tolerance: u32,
}

/// Kept findings and dismissed ones of one group, apart.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    pub kept: Rate,
    pub dismissed: Rate,
}

impl Row {
    fn count(&mut self, dismissed: bool, resolved: bool) {
        if dismissed {
            self.dismissed.add(resolved);
        } else {
            self.kept.add(resolved);
        }
    }

    fn finish(mut self) -> Self {
        self.kept = self.kept.finish();
        self.dismissed = self.dismissed.finish();
        self
    }
}

/// One session's part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRow {
    pub session: String,
    pub model: String,
    pub finished: bool,
    pub diff_ref: String,
    /// Later commits looked at (fewer than the window near the head).
    pub commits: usize,
    pub kept: Rate,
    pub dismissed: Rate,
    pub pending: usize,
    pub not_traced: usize,
}

/// One finding's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingRow {
    pub session: String,
    pub id: String,
    pub file: String,
    pub line: u32,
    pub severity: String,
    pub category: String,
    pub dismissed: bool,
    /// `resolved`, `unresolved`, `pending` or `not traced`.
    pub outcome: String,
    /// The commit that changed the lines, when resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_by: Option<String>,
    /// Why it was not traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolutionReport {
    pub definition: String,
    pub history: String,
    pub repo: String,
    pub head: String,
    pub side_file: Option<String>,
    pub window: usize,
    pub tolerance: u32,
    pub lines_read: usize,
    pub skipped_lines: Vec<history::Skipped>,
    pub overall: Row,
    pub sessions: Vec<SessionRow>,
    pub models: Vec<Row>,
    pub categories: Vec<Row>,
    pub severities: Vec<Row>,
    pub pending: usize,
    pub not_traced: usize,
    pub findings: Vec<FindingRow>,
}

fn text_of(finding: &Value, key: &str) -> String {
    finding.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn int_of(value: Option<&Value>) -> Option<u32> {
    value.and_then(Value::as_u64).filter(|n| *n > 0).map(|n| n.min(u32::MAX as u64) as u32)
}

/// The lines a finding flags: its valid `range`, else its `line`.
fn span_of(finding: &Value) -> Option<Span> {
    let range = finding.get("range").and_then(|r| Some((int_of(r.get("start"))?, int_of(r.get("end"))?))).filter(|(s, e)| s <= e);
    match (range, int_of(finding.get("line"))) {
        (Some((start, end)), _) => Some(Span::new(start, end)),
        (None, Some(line)) => Some(Span::new(line, line)),
        _ => None,
    }
}

/// Computes the report for an A2 reading of the history against `repo`.
pub fn compute(a2: &A2Report, repo: &Path, head: &str, options: Options) -> Result<ResolutionReport, GitError> {
    let traced = crate::analysis::rqs::resolution::Options { window: options.window, tolerance: options.tolerance, pending: Pending::NoLaterCommit };
    let mut resolver = Resolver::new(repo, head, traced)?;
    let mut findings = Vec::new();
    let mut sessions = Vec::new();
    for session in &a2.sessions {
        let walk = resolver.walk(&session.diff_ref)?;
        let mut row = SessionRow {
            session: session.key.clone(),
            model: session.model.clone(),
            finished: session.finished,
            diff_ref: session.diff_ref.clone(),
            commits: walk.steps.len(),
            kept: Rate::default(),
            dismissed: Rate::default(),
            pending: 0,
            not_traced: 0,
        };
        let mut seen = BTreeSet::new();
        for finding in &session.posted {
            let id = text_of(finding, "id");
            if !id.is_empty() && !seen.insert(id.clone()) {
                continue;
            }
            let file = text_of(finding, "file");
            let span = span_of(finding);
            let dismissed = session.dismissed_ids.contains(&id);
            let outcome = resolver.trace(&walk, &file, span)?;
            match &outcome {
                Outcome::Pending { .. } => row.pending += 1,
                Outcome::NotTraced(_) => row.not_traced += 1,
                Outcome::Resolved { .. } | Outcome::Unresolved => {
                    let resolved = matches!(outcome, Outcome::Resolved { .. });
                    if dismissed {
                        row.dismissed.add(resolved);
                    } else {
                        row.kept.add(resolved);
                    }
                }
            }
            findings.push(FindingRow {
                session: session.key.clone(),
                id,
                file: file.clone(),
                line: span.map_or(0, |s| s.start),
                severity: Some(text_of(finding, "severity")).filter(|s| !s.is_empty()).unwrap_or_else(|| "unknown".into()),
                category: Some(text_of(finding, "category")).filter(|s| !s.is_empty()).unwrap_or_else(|| "unknown".into()),
                dismissed,
                outcome: outcome.as_str().into(),
                reason: outcome.reason(options.window),
                changed_by: match outcome {
                    Outcome::Resolved { commit } => Some(commit),
                    _ => None,
                },
            });
        }
        row.kept = row.kept.finish();
        row.dismissed = row.dismissed.finish();
        sessions.push(row);
    }

    let model_of: BTreeMap<&str, &str> = sessions.iter().map(|s| (s.session.as_str(), s.model.as_str())).collect();
    let mut overall = Row { name: "all".into(), ..Row::default() };
    let (mut models, mut categories, mut severities): (BTreeMap<String, Row>, BTreeMap<String, Row>, BTreeMap<String, Row>) = Default::default();
    for f in findings.iter().filter(|f| f.outcome == "resolved" || f.outcome == "unresolved") {
        let resolved = f.outcome == "resolved";
        let model = model_of.get(f.session.as_str()).copied().unwrap_or("unknown");
        overall.count(f.dismissed, resolved);
        for (map, name) in [(&mut models, model), (&mut categories, f.category.as_str()), (&mut severities, f.severity.as_str())] {
            map.entry(name.to_string()).or_insert_with(|| Row { name: name.to_string(), ..Row::default() }).count(f.dismissed, resolved);
        }
    }
    let rows = |map: BTreeMap<String, Row>| map.into_values().map(Row::finish).collect::<Vec<_>>();
    let severities = {
        let mut list = rows(severities);
        let order = |name: &str| crate::finding::Severity::ALL.iter().position(|s| s.as_str() == name).unwrap_or(usize::MAX);
        list.sort_by_key(|r| order(&r.name));
        list
    };
    Ok(ResolutionReport {
        definition: definition(options.window, options.tolerance),
        history: a2.history.clone(),
        repo: repo.display().to_string(),
        head: resolver.head().to_string(),
        side_file: a2.side_file.clone(),
        window: options.window,
        tolerance: options.tolerance,
        lines_read: a2.lines_read,
        skipped_lines: a2.skipped.clone(),
        overall: overall.finish(),
        pending: sessions.iter().map(|s| s.pending).sum(),
        not_traced: sessions.iter().map(|s| s.not_traced).sum(),
        sessions,
        models: rows(models),
        categories: rows(categories),
        severities,
        findings,
    })
}

/// Reads the history (with the side file, if any) and computes the report.
pub fn load(history_path: &Path, side: Option<&SideFile>, repo: &Path, head: &str, options: Options) -> Result<ResolutionReport, ResolutionError> {
    let a2 = history::load(history_path, side)?;
    Ok(compute(&a2, repo, head, options)?)
}

#[derive(Debug, thiserror::Error)]
pub enum ResolutionError {
    #[error(transparent)]
    History(#[from] history::HistoryError),
    #[error(transparent)]
    Git(#[from] GitError),
}

fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"))
}

fn rate_cells(rate: &Rate) -> String {
    let interval = match (rate.wilson_low, rate.wilson_high) {
        (Some(l), Some(h)) => format!("[{l:.3}, {h:.3}]"),
        _ => "—".to_string(),
    };
    format!("{} / {} | {} | {interval}", rate.resolved, rate.posted, number(rate.rate))
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

impl ResolutionReport {
    /// Whether no history line could be read (the command then exits non-zero).
    pub fn is_empty(&self) -> bool {
        self.lines_read == 0
    }

    fn table(out: &mut String, title: &str, what: &str, rows: &[Row]) {
        out.push_str(&format!(
            "\n## {title}\n\n| {what} | kept: resolved / posted | rate | 95 % Wilson | dismissed: resolved / posted | rate | 95 % Wilson |\n|---|---:|---:|---|---:|---:|---|\n"
        ));
        for r in rows {
            out.push_str(&format!("| {} | {} | {} |\n", escape(&r.name), rate_cells(&r.kept), rate_cells(&r.dismissed)));
        }
    }

    /// The Markdown report.
    pub fn render(&self) -> String {
        let mut out = String::from("# Resolution rate from git (a proxy)\n\n");
        out.push_str(&format!("{}\n\n", self.definition));
        out.push_str(&format!("History: `{}`", self.history));
        if let Some(side) = &self.side_file {
            out.push_str(&format!("; models from `{side}`"));
        }
        out.push_str(&format!(
            "; repository `{}` at `{}`; window {} commits, tolerance ±{} lines. {} records read, {} lines skipped. {} findings pending (no later commit yet), {} not traced; neither is counted.\n",
            self.repo,
            self.head,
            self.window,
            self.tolerance,
            self.lines_read,
            self.skipped_lines.len(),
            self.pending,
            self.not_traced
        ));
        out.push_str("\nKept findings are those the user did not dismiss; dismissed ones are counted apart.\n");
        Self::table(&mut out, "Overall", "findings", std::slice::from_ref(&self.overall));
        out.push_str("\n## Sessions\n\n| session | model | later commits | kept: resolved / posted | rate | 95 % Wilson | dismissed: resolved / posted | rate | 95 % Wilson | pending | not traced |\n|---|---|---:|---:|---:|---|---:|---:|---|---:|---:|\n");
        for s in &self.sessions {
            let flag = if s.finished { "" } else { " (unfinished)" };
            out.push_str(&format!(
                "| `{}`{flag} | {} | {} | {} | {} | {} | {} |\n",
                escape(&s.session),
                escape(&s.model),
                s.commits,
                rate_cells(&s.kept),
                rate_cells(&s.dismissed),
                s.pending,
                s.not_traced
            ));
        }
        Self::table(&mut out, "Models", "model", &self.models);
        Self::table(&mut out, "Categories", "category", &self.categories);
        Self::table(&mut out, "Severities", "severity", &self.severities);
        let listed: Vec<&FindingRow> = self.findings.iter().filter(|f| f.reason.is_some()).collect();
        if !listed.is_empty() {
            out.push_str("\n## Not counted\n\n| session | finding | file | line | why |\n|---|---|---|---:|---|\n");
            for f in listed {
                let id: String = f.id.chars().take(12).collect();
                out.push_str(&format!(
                    "| `{}` | `{id}` | {} | {} | {} |\n",
                    escape(&f.session),
                    escape(&f.file),
                    f.line,
                    escape(f.reason.as_deref().unwrap_or(""))
                ));
            }
        }
        if !self.skipped_lines.is_empty() {
            out.push_str("\n## Skipped history lines\n\n| line | why |\n|---:|---|\n");
            for s in &self.skipped_lines {
                out.push_str(&format!("| {} | {} |\n", s.line, escape(&s.why)));
            }
        }
        out
    }
}
