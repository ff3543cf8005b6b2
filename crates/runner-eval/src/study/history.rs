//! A2 from stet's `.review/history.jsonl`: sessions told apart, actionability per session and
//! over sessions, per-reason counts, per-model comparison, and what stet's `stats quality`
//! reports instead, under stet's own names.
//!
//! # The format read
//!
//! One JSON record a line (CONTRACTS.md): `{"diff_ref", "review_output":[finding…],
//! "user_action":{"dismissed_ids", "dismissals":[{"finding_id","reason","prompt_context"}],
//! "finished_at"}, "run_config":{"model",…}, "prompt_tokens", …}`. Each `stet dismiss` appends
//! a full record (it repeats the findings; reasons appear only there); `stet finish` appends
//! one record carrying all `dismissed_ids`, `finished_at` and the token counts (only when the
//! session had findings).
//!
//! # How sessions are identified (rules chosen where CONTRACTS.md and METRICS.md are silent)
//!
//! - A record whose `user_action.finished_at` is a non-empty string is a **finish record**;
//!   any other record is a **dismiss record**.
//! - A session is keyed `diff_ref@finished_at` of its finish record (METRICS.md: "diff_ref +
//!   finished_at"); that key is what a side file names.
//! - Stet holds one session per repository at a time, so records are grouped in file order:
//!   the dismiss records since the previous finish record join the next finish record when
//!   every id they dismiss is among the finish record's `dismissed_ids` (the finish record
//!   carries all of them). `diff_ref` is not used to group: a `stet run` after fixes may move
//!   it within a session.
//! - Dismiss records that do not join (their session was replaced by `stet start` with a new
//!   baseline, or the history ends before `stet finish`) form **unfinished** sessions, one per
//!   run of consecutive records with the same `diff_ref`, keyed `diff_ref@unfinished:LINE`
//!   (LINE: the first record's line). They are listed but not in the means or totals (A2 is
//!   over finished sessions).
//! - The finish record is authoritative for the counts: findings = `len(review_output)`,
//!   dismissed = the number of distinct `dismissed_ids` (seed 000's formula; an id dismissed
//!   that is not among the findings still counts, as in the seed). Reasons come from the
//!   `dismissals` of all the session's records, one per `finding_id` (the latest wins), only
//!   for ids the finish record dismissed; a dismissed id with no recorded reason counts under
//!   `unrecorded`.
//! - A session with no findings has actionability `null` and is left out of the mean.
//!
//! # Stet's `stats quality`
//!
//! METRICS.md: it counts every history line as a session and sums `review_output` (and the
//! dismissals) over records. So each dismiss record adds its session's findings once more,
//! and, when dismiss records carry the ids and reasons dismissed so far, those again. Its
//! fields and formulas (`stats quality --format=json` of the real stet, checked against its
//! output in `tests/fixtures/stet-real/`), every sum over records:
//!
//! - `sessions_count` (records), `total_findings` (Σ `review_output`), `total_dismissed`
//!   (Σ `dismissed_ids`);
//! - `dismissal_rate` = dismissed / findings; `acceptance_rate` = (findings − dismissed) /
//!   findings — the formula of A2's actionability (seed 000's `actionability_rate`), but over
//!   records;
//! - `false_positive_rate` = `false_positive` dismissals / findings;
//! - `actionability` = `already_correct` dismissals / dismissed: stet's own actionability,
//!   the share of dismissals that said the code was already correct, not A2's;
//! - `clean_commit_rate` = records without findings / records;
//! - `finding_density` = findings per 1,000 tokens (`prompt_tokens` + `completion_tokens`,
//!   else `usage`'s), absent when no record has tokens;
//! - `dismissals_by_reason` (dismissals with a non-empty reason), `category_breakdown`
//!   (findings by `category`).
//!
//! A rate whose denominator is zero is 0, as stet prints it.
//!
//! Malformed lines (not JSON, not an object, no `review_output` array, fields of the wrong
//! type, blank lines) are skipped and listed with their line number and why.

use crate::analysis::corpus::score::JsNumber;
use crate::stats::wilson_interval;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The dismissal reasons stet knows, in its order.
pub const REASONS: [&str; 4] = ["false_positive", "already_correct", "wrong_suggestion", "out_of_scope"];
/// The reason counted for a dismissed id whose records carry no reason.
pub const UNRECORDED: &str = "unrecorded";
/// The confidence level of the per-model Wilson intervals.
pub const LEVEL: f64 = 0.95;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("side file `{path}`: {message} (expected a CSV with the header `session,model`)")]
    SideFile { path: PathBuf, message: String },
}

/// A line that was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub line: usize,
    pub why: String,
}

/// One parsed history record.
#[derive(Debug, Clone)]
struct Record {
    line: usize,
    diff_ref: String,
    findings: usize,
    dismissed_ids: Vec<String>,
    /// (finding_id, reason)
    dismissals: Vec<(String, String)>,
    /// The dismissals' non-empty reasons, as stet counts them.
    reasons_given: Vec<String>,
    /// Each finding's `category` (empty when it has none).
    categories: Vec<String>,
    /// Prompt plus completion tokens (the record's own counts, else `usage`'s).
    tokens: u64,
    finished_at: Option<String>,
    model: Option<String>,
    /// `review_output` as written.
    posted: Vec<Value>,
}

/// One review session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    /// `diff_ref@finished_at`, or `diff_ref@unfinished:LINE`.
    pub key: String,
    pub diff_ref: String,
    pub finished_at: Option<String>,
    pub finished: bool,
    /// The history lines of its records.
    pub lines: Vec<usize>,
    pub model: String,
    /// Where `model` came from: `side file`, `run_config` or `unknown`.
    pub model_source: String,
    pub findings: usize,
    pub dismissed: usize,
    /// 1 − dismissed/findings; `None` without findings.
    pub actionability: Option<f64>,
    pub reasons: BTreeMap<String, usize>,
    /// The findings posted: the finish record's `review_output` (an unfinished session's last
    /// record's), as written.
    #[serde(skip)]
    pub posted: Vec<Value>,
    /// The ids dismissed (the finish record's `dismissed_ids`).
    #[serde(skip)]
    pub dismissed_ids: BTreeSet<String>,
}

/// A2 over the finished sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub sessions: usize,
    pub unfinished_sessions: usize,
    pub total_findings: usize,
    pub total_dismissed: usize,
    /// Mean of the sessions' actionability (sessions with findings).
    pub mean_actionability: Option<f64>,
    /// 1 − total_dismissed / total_findings.
    pub pooled_actionability: Option<f64>,
    pub reason_breakdown: BTreeMap<String, usize>,
}

/// What stet's `stats quality --format=json` reports for the same file: its fields, names,
/// order and formulas (see the module's documentation); numbers written as stet (Go) writes
/// them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StetQuality {
    /// Records, each counted as a session.
    pub sessions_count: usize,
    pub total_findings: usize,
    pub total_dismissed: usize,
    /// total_dismissed / total_findings.
    #[serde(serialize_with = "go_float")]
    pub dismissal_rate: f64,
    /// (total_findings − total_dismissed) / total_findings: A2's actionability formula, over records.
    #[serde(serialize_with = "go_float")]
    pub acceptance_rate: f64,
    /// `false_positive` dismissals / total_findings.
    #[serde(serialize_with = "go_float")]
    pub false_positive_rate: f64,
    /// `already_correct` dismissals / total_dismissed: stet's actionability, not A2's.
    #[serde(serialize_with = "go_float")]
    pub actionability: f64,
    /// Records without findings / sessions_count.
    #[serde(serialize_with = "go_float")]
    pub clean_commit_rate: f64,
    /// Findings per 1,000 tokens; absent when no record has tokens.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "go_float_option")]
    pub finding_density: Option<f64>,
    pub dismissals_by_reason: BTreeMap<String, usize>,
    pub category_breakdown: BTreeMap<String, usize>,
}

/// A float as stet's JSON (Go's `encoding/json`) writes it: integral values without a fraction.
fn go_float<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    JsNumber(*value).serialize(serializer)
}

fn go_float_option<S: serde::Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    value.map(JsNumber).serialize(serializer)
}

impl StetQuality {
    /// `stats quality` over the readable records, as stet computes it.
    fn of(records: &[Record]) -> Self {
        let mut dismissals_by_reason = BTreeMap::new();
        let mut category_breakdown = BTreeMap::new();
        for record in records {
            for reason in &record.reasons_given {
                *dismissals_by_reason.entry(reason.clone()).or_insert(0) += 1;
            }
            for category in &record.categories {
                *category_breakdown.entry(category.clone()).or_insert(0) += 1;
            }
        }
        let sessions_count = records.len();
        let total_findings: usize = records.iter().map(|r| r.findings).sum();
        let total_dismissed: usize = records.iter().map(|r| r.dismissed_ids.len()).sum();
        let clean = records.iter().filter(|r| r.findings == 0).count();
        let tokens: u64 = records.iter().map(|r| r.tokens).sum();
        let share = |n: usize, of: usize| if of > 0 { n as f64 / of as f64 } else { 0.0 };
        let reason = |name: &str| dismissals_by_reason.get(name).copied().unwrap_or(0);
        Self {
            sessions_count,
            total_findings,
            total_dismissed,
            dismissal_rate: share(total_dismissed, total_findings),
            acceptance_rate: if total_findings > 0 { (total_findings as f64 - total_dismissed as f64) / total_findings as f64 } else { 0.0 },
            false_positive_rate: share(reason("false_positive"), total_findings),
            actionability: share(reason("already_correct"), total_dismissed),
            clean_commit_rate: share(clean, sessions_count),
            finding_density: (tokens > 0 && total_findings > 0).then(|| total_findings as f64 / (tokens as f64 / 1000.0)),
            dismissals_by_reason,
            category_breakdown,
        }
    }
}

/// One model's sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRow {
    pub model: String,
    pub sessions: usize,
    pub findings: usize,
    pub dismissed: usize,
    pub mean_actionability: Option<f64>,
    pub pooled_actionability: Option<f64>,
    /// Wilson interval (95 %) of the share of findings not dismissed.
    pub wilson_low: Option<f64>,
    pub wilson_high: Option<f64>,
    pub reasons: BTreeMap<String, usize>,
}

/// The whole A2 report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct A2Report {
    pub history: String,
    pub side_file: Option<String>,
    pub lines_read: usize,
    pub skipped: Vec<Skipped>,
    pub sessions: Vec<Session>,
    pub summary: Summary,
    pub stet_stats_quality: StetQuality,
    /// Why stet's numbers differ from A2's, one sentence each.
    pub differences: Vec<String>,
    pub models: Vec<ModelRow>,
    /// Side-file rows naming no session, and similar notes.
    pub warnings: Vec<String>,
}

/// A side file: session key → model, with the line of each row.
#[derive(Debug, Clone, Default)]
pub struct SideFile {
    pub path: String,
    pub models: BTreeMap<String, (u64, String)>,
}

impl SideFile {
    /// Reads `session,model` (header required; other columns ignored).
    pub fn load(path: &Path) -> Result<Self, HistoryError> {
        let text = crate::bounded::input_text(path).map_err(|source| HistoryError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Self, HistoryError> {
        let err = |message: String| HistoryError::SideFile { path: path.to_path_buf(), message };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut reader = csv::ReaderBuilder::new().has_headers(true).trim(csv::Trim::All).from_reader(text.as_bytes());
        let headers = reader.headers().map_err(|e| err(e.to_string()))?.clone();
        let column = |name: &str| headers.iter().position(|h| h == name).ok_or_else(|| err(format!("no `{name}` column")));
        let (session, model) = (column("session")?, column("model")?);
        let mut models = BTreeMap::new();
        for row in reader.records() {
            let row = row.map_err(|e| err(e.to_string()))?;
            let line = row.position().map(|p| p.line()).unwrap_or(0);
            let key = row.get(session).unwrap_or("").to_string();
            let name = row.get(model).unwrap_or("").to_string();
            if key.is_empty() || name.is_empty() {
                return Err(err(format!("line {line}: empty `session` or `model`")));
            }
            if let Some((first, _)) = models.get(&key) {
                return Err(err(format!("line {line}: session `{key}` already tagged on line {first}")));
            }
            models.insert(key, (line, name));
        }
        Ok(Self { path: path.display().to_string(), models })
    }
}

/// Reads the history file and analyzes it. A line that is not UTF-8 is skipped with its
/// reason, as a line that is not JSON is: one bad byte does not reject the whole history.
pub fn load(history: &Path, side: Option<&SideFile>) -> Result<A2Report, HistoryError> {
    let bytes = crate::bounded::input(history).map_err(|source| HistoryError::Read { path: history.to_path_buf(), source })?;
    Ok(analyze_lines(byte_lines(&bytes), &history.display().to_string(), side))
}

/// The file's lines as [`str::lines`] splits them (on `\n`, a `\r` before it dropped, no
/// empty line after a final newline), each as text or, when it is not UTF-8, why not.
fn byte_lines(bytes: &[u8]) -> impl Iterator<Item = Result<&str, String>> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let pieces = if bytes.is_empty() { None } else { Some(body.split(|b| *b == b'\n')) };
    pieces.into_iter().flatten().map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        std::str::from_utf8(line).map_err(|e| format!("not UTF-8 text (an invalid byte at column {})", e.valid_up_to() + 1))
    })
}

fn parse_line(line: usize, text: &str) -> Result<Record, String> {
    if text.trim().is_empty() {
        return Err("blank line".into());
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
    let diff_ref = match object.get("diff_ref") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err("`diff_ref` is not a string".into()),
    };
    let posted = object.get("review_output").and_then(Value::as_array).ok_or("no `review_output` array")?.clone();
    let findings = posted.len();
    let categories = posted.iter().map(|f| f.get("category").and_then(Value::as_str).unwrap_or("").to_string()).collect();
    // stet prefers the record's own counts, else `usage`'s.
    let count = |name: &str| object.get(name).or_else(|| object.get("usage").and_then(|u| u.get(name))).and_then(Value::as_u64).unwrap_or(0);
    let tokens = count("prompt_tokens").saturating_add(count("completion_tokens"));
    let mut dismissed_ids = Vec::new();
    let mut dismissals = Vec::new();
    let mut reasons_given = Vec::new();
    let mut finished_at = None;
    match object.get("user_action") {
        None | Some(Value::Null) => {}
        Some(Value::Object(action)) => {
            match action.get("dismissed_ids") {
                None | Some(Value::Null) => {}
                Some(Value::Array(ids)) => {
                    for id in ids {
                        dismissed_ids.push(id.as_str().ok_or("`user_action.dismissed_ids` holds a non-string")?.to_string());
                    }
                }
                Some(_) => return Err("`user_action.dismissed_ids` is not an array".into()),
            }
            match action.get("dismissals") {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        let id = item.get("finding_id").and_then(Value::as_str).ok_or("a dismissal without a string `finding_id`")?;
                        let reason = match item.get("reason") {
                            None | Some(Value::Null) => UNRECORDED,
                            Some(Value::String(r)) if r.is_empty() => UNRECORDED,
                            Some(Value::String(r)) => {
                                reasons_given.push(r.clone());
                                r.as_str()
                            }
                            Some(_) => return Err("a dismissal whose `reason` is not a string".into()),
                        };
                        dismissals.push((id.to_string(), reason.to_string()));
                    }
                }
                Some(_) => return Err("`user_action.dismissals` is not an array".into()),
            }
            match action.get("finished_at") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s.is_empty() => {}
                Some(Value::String(s)) => finished_at = Some(s.clone()),
                Some(_) => return Err("`user_action.finished_at` is not a string".into()),
            }
        }
        Some(_) => return Err("`user_action` is not an object".into()),
    }
    let model = object.get("run_config").and_then(|c| c.get("model")).and_then(Value::as_str).filter(|m| !m.is_empty()).map(str::to_string);
    Ok(Record { line, diff_ref, findings, dismissed_ids, dismissals, reasons_given, categories, tokens, finished_at, model, posted })
}

/// The ids a dismiss record dismisses (its `dismissed_ids` and its dismissals' ids).
fn ids_dismissed(record: &Record) -> impl Iterator<Item = &String> {
    record.dismissed_ids.iter().chain(record.dismissals.iter().map(|(id, _)| id))
}

fn ratio(dismissed: usize, findings: usize) -> Option<f64> {
    (findings > 0).then(|| 1.0 - dismissed as f64 / findings as f64)
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let values: Vec<f64> = values.collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn session_of(records: &[Record], finish: Option<&Record>, side: Option<&SideFile>) -> Session {
    let first = &records[0];
    let last = records.last().unwrap_or(first);
    let (key, finished_at, findings, dismissed_set): (String, Option<String>, usize, BTreeSet<String>) = match finish {
        Some(f) => (
            format!("{}@{}", f.diff_ref, f.finished_at.clone().unwrap_or_default()),
            f.finished_at.clone(),
            f.findings,
            f.dismissed_ids.iter().cloned().collect(),
        ),
        None => {
            (format!("{}@unfinished:{}", first.diff_ref, first.line), None, last.findings, records.iter().flat_map(|r| ids_dismissed(r).cloned()).collect())
        }
    };
    let mut reason_of: BTreeMap<&str, &str> = BTreeMap::new();
    for record in records {
        for (id, reason) in &record.dismissals {
            reason_of.insert(id, reason);
        }
    }
    let mut reasons = BTreeMap::new();
    for id in &dismissed_set {
        let reason = reason_of.get(id.as_str()).copied().unwrap_or(UNRECORDED);
        *reasons.entry(reason.to_string()).or_insert(0) += 1;
    }
    let (model, model_source) = match side.and_then(|s| s.models.get(&key)) {
        Some((_, m)) => (m.clone(), "side file"),
        None => match finish.and_then(|f| f.model.clone()).or_else(|| records.iter().rev().find_map(|r| r.model.clone())) {
            Some(m) => (m, "run_config"),
            None => ("unknown".to_string(), "unknown"),
        },
    };
    let dismissed = dismissed_set.len();
    let posted = finish.unwrap_or(last).posted.clone();
    Session {
        key,
        diff_ref: last.diff_ref.clone(),
        finished_at,
        finished: finish.is_some(),
        lines: records.iter().map(|r| r.line).collect(),
        model,
        model_source: model_source.to_string(),
        findings,
        dismissed,
        actionability: ratio(dismissed, findings),
        reasons,
        posted,
        dismissed_ids: dismissed_set,
    }
}

/// Unfinished sessions from dismiss records that joined no finish record: one per run of
/// consecutive records with the same `diff_ref`.
fn unfinished(records: Vec<Record>, side: Option<&SideFile>, sessions: &mut Vec<Session>) {
    let mut group: Vec<Record> = Vec::new();
    for record in records {
        if group.last().is_some_and(|g| g.diff_ref != record.diff_ref) {
            sessions.push(session_of(&group, None, side));
            group.clear();
        }
        group.push(record);
    }
    if !group.is_empty() {
        sessions.push(session_of(&group, None, side));
    }
}

fn add_reasons(into: &mut BTreeMap<String, usize>, from: &BTreeMap<String, usize>) {
    for (reason, n) in from {
        *into.entry(reason.clone()).or_insert(0) += n;
    }
}

/// Analyzes the text of a history file; `source` names it in the report.
pub fn analyze(text: &str, source: &str, side: Option<&SideFile>) -> A2Report {
    analyze_lines(text.lines().map(Ok), source, side)
}

/// [`analyze`] over lines, each text or why it cannot be read.
fn analyze_lines<'a>(lines: impl Iterator<Item = Result<&'a str, String>>, source: &str, side: Option<&SideFile>) -> A2Report {
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    for (index, line) in lines.enumerate() {
        let number = index + 1;
        match line.and_then(|line| parse_line(number, line)) {
            Ok(record) => records.push(record),
            Err(why) => skipped.push(Skipped { line: number, why }),
        }
    }

    // Stet's own numbers: every record a session, everything summed over records.
    let stet = StetQuality::of(&records);

    let mut sessions = Vec::new();
    let mut pending: Vec<Record> = Vec::new();
    let lines_read = records.len();
    for record in records {
        if record.finished_at.is_none() {
            pending.push(record);
            continue;
        }
        let all: BTreeSet<&String> = record.dismissed_ids.iter().collect();
        let (joined, orphans): (Vec<Record>, Vec<Record>) = std::mem::take(&mut pending).into_iter().partition(|r| ids_dismissed(r).all(|id| all.contains(id)));
        unfinished(orphans, side, &mut sessions);
        let mut group = joined;
        group.push(record.clone());
        sessions.push(session_of(&group, Some(&record), side));
    }
    unfinished(pending, side, &mut sessions);

    let finished: Vec<&Session> = sessions.iter().filter(|s| s.finished).collect();
    let mut reason_breakdown = BTreeMap::new();
    for s in &finished {
        add_reasons(&mut reason_breakdown, &s.reasons);
    }
    let total_findings: usize = finished.iter().map(|s| s.findings).sum();
    let total_dismissed: usize = finished.iter().map(|s| s.dismissed).sum();
    let summary = Summary {
        sessions: finished.len(),
        unfinished_sessions: sessions.len() - finished.len(),
        total_findings,
        total_dismissed,
        mean_actionability: mean(finished.iter().filter_map(|s| s.actionability)),
        pooled_actionability: ratio(total_dismissed, total_findings),
        reason_breakdown,
    };

    let mut by_model: BTreeMap<&str, Vec<&Session>> = BTreeMap::new();
    for s in &finished {
        by_model.entry(s.model.as_str()).or_default().push(s);
    }
    let models = by_model
        .into_iter()
        .map(|(model, list)| {
            let findings: usize = list.iter().map(|s| s.findings).sum();
            let dismissed: usize = list.iter().map(|s| s.dismissed).sum();
            let mut reasons = BTreeMap::new();
            for s in &list {
                add_reasons(&mut reasons, &s.reasons);
            }
            let interval = wilson_interval(findings.saturating_sub(dismissed) as u64, findings as u64, LEVEL);
            ModelRow {
                model: model.to_string(),
                sessions: list.len(),
                findings,
                dismissed,
                mean_actionability: mean(list.iter().filter_map(|s| s.actionability)),
                pooled_actionability: ratio(dismissed, findings),
                wilson_low: interval.map(|i| i.0),
                wilson_high: interval.map(|i| i.1),
                reasons,
            }
        })
        .collect();

    let mut warnings = Vec::new();
    if let Some(side) = side {
        for (key, (line, _)) in &side.models {
            if !sessions.iter().any(|s| &s.key == key) {
                warnings.push(format!("side file line {line}: no session `{key}` in the history"));
            }
        }
    }
    for s in &finished {
        if s.dismissed > s.findings {
            warnings.push(format!("session `{}` dismissed {} ids but has {} findings", s.key, s.dismissed, s.findings));
        }
    }

    let differences = differences(&summary, &stet, &sessions);
    A2Report {
        history: source.to_string(),
        side_file: side.map(|s| s.path.clone()),
        lines_read,
        skipped,
        sessions,
        summary,
        stet_stats_quality: stet,
        differences,
        models,
        warnings,
    }
}

fn differences(summary: &Summary, stet: &StetQuality, sessions: &[Session]) -> Vec<String> {
    let mut out = Vec::new();
    let repeated: usize = sessions.iter().filter(|s| s.finished).map(|s| s.lines.len() - 1).sum();
    let unfinished: usize = sessions.iter().filter(|s| !s.finished).map(|s| s.lines.len()).sum();
    if stet.sessions_count != summary.sessions {
        out.push(format!(
            "stet counts each of its {} records as a session (`sessions_count`); there are {} finished sessions (dismiss records repeating a finished session: {}; records of unfinished sessions: {}).",
            stet.sessions_count, summary.sessions, repeated, unfinished
        ));
    }
    if stet.total_findings != summary.total_findings {
        out.push(format!(
            "stet sums `review_output` over every record: {} findings, against {} in the finished sessions' finish records (+{}).",
            stet.total_findings,
            summary.total_findings,
            stet.total_findings as i64 - summary.total_findings as i64
        ));
    }
    if stet.total_dismissed != summary.total_dismissed {
        out.push(format!(
            "stet sums `dismissed_ids` over every record: {} dismissed, against {} distinct ids in the finish records.",
            stet.total_dismissed, summary.total_dismissed
        ));
    }
    if stet.dismissals_by_reason != summary.reason_breakdown {
        out.push("stet sums `dismissals[].reason` over every record (a reason repeated by a later dismiss record counts again; an empty reason not at all); A2 counts one reason per dismissed id of a finished session.".to_string());
    }
    if out.is_empty() {
        out.push("No difference: every record is its own finished session.".to_string());
    }
    out
}

fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"))
}

fn reason_columns(report: &A2Report) -> Vec<String> {
    let mut columns: Vec<String> = REASONS.iter().map(|r| r.to_string()).collect();
    let mut extra: BTreeSet<String> = BTreeSet::new();
    for map in report.sessions.iter().map(|s| &s.reasons).chain(std::iter::once(&report.stet_stats_quality.dismissals_by_reason)) {
        extra.extend(map.keys().filter(|k| !REASONS.contains(&k.as_str())).cloned());
    }
    columns.extend(extra);
    columns
}

fn cell(map: &BTreeMap<String, usize>, key: &str) -> String {
    map.get(key).copied().unwrap_or(0).to_string()
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

impl A2Report {
    /// Whether no line could be read (the command then exits non-zero).
    pub fn is_empty(&self) -> bool {
        self.lines_read == 0
    }

    /// The Markdown report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let reasons = reason_columns(self);
        out.push_str("# A2: actionability from stet's history\n\n");
        out.push_str(&format!("History: `{}`", self.history));
        if let Some(side) = &self.side_file {
            out.push_str(&format!("; models from `{side}`"));
        }
        out.push_str(&format!(". {} records read, {} lines skipped.\n\n", self.lines_read, self.skipped.len()));
        if !self.skipped.is_empty() {
            out.push_str("## Skipped lines\n\n| line | why |\n|---:|---|\n");
            for s in &self.skipped {
                out.push_str(&format!("| {} | {} |\n", s.line, escape(&s.why)));
            }
            out.push('\n');
        }
        let (s, q) = (&self.summary, &self.stet_stats_quality);
        out.push_str("## Summary (finished sessions)\n\n");
        out.push_str(
            "Stet's column is what `stet stats quality` reports, under its names: what A2 calls actionability (1 − dismissed/findings) stet calls \
             `acceptance_rate`; stet's `actionability` is `already_correct` dismissals / dismissed.\n\n",
        );
        out.push_str("| | A2 (sessions) | stet `stats quality` (records) | stet's name |\n|---|---:|---:|---|\n");
        out.push_str(&format!("| sessions | {} | {} | `sessions_count` |\n", s.sessions, q.sessions_count));
        out.push_str(&format!("| findings | {} | {} | `total_findings` |\n", s.total_findings, q.total_findings));
        out.push_str(&format!("| dismissed | {} | {} | `total_dismissed` |\n", s.total_dismissed, q.total_dismissed));
        out.push_str(&format!("| mean actionability (per session: 1 − dismissed/findings) | {} | | |\n", number(s.mean_actionability)));
        out.push_str(&format!(
            "| pooled actionability (1 − dismissed/findings) | {} | {} | `acceptance_rate` |\n",
            number(s.pooled_actionability),
            number(Some(q.acceptance_rate))
        ));
        out.push_str(&format!("| dismissed/findings | | {} | `dismissal_rate` |\n", number(Some(q.dismissal_rate))));
        out.push_str(&format!("| false_positive/findings | | {} | `false_positive_rate` |\n", number(Some(q.false_positive_rate))));
        out.push_str(&format!("| already_correct/dismissed | | {} | `actionability` |\n", number(Some(q.actionability))));
        out.push_str(&format!("| records without findings/records | | {} | `clean_commit_rate` |\n", number(Some(q.clean_commit_rate))));
        out.push_str(&format!("| findings per 1,000 tokens | | {} | `finding_density` |\n", number(q.finding_density)));
        for r in &reasons {
            out.push_str(&format!("| {r} | {} | {} | `dismissals_by_reason` |\n", cell(&s.reason_breakdown, r), cell(&q.dismissals_by_reason, r)));
        }
        for (category, n) in &q.category_breakdown {
            let shown = if category.is_empty() { "(none)".to_string() } else { escape(category) };
            out.push_str(&format!("| category {shown} | | {n} | `category_breakdown` |\n"));
        }
        out.push_str("\nWhy stet's numbers differ:\n\n");
        for d in &self.differences {
            out.push_str(&format!("- {d}\n"));
        }
        if s.unfinished_sessions > 0 {
            out.push_str(&format!("\n{} unfinished session(s) (no finish record) are listed below but left out of A2.\n", s.unfinished_sessions));
        }
        out.push_str("\n## Sessions\n\nA session is `diff_ref@finished_at`, the key a side file names.\n\n| session | model | lines | findings | dismissed | actionability |");
        for r in &reasons {
            out.push_str(&format!(" {r} |"));
        }
        out.push_str("\n|---|---|---|---:|---:|---:|");
        out.push_str(&"---:|".repeat(reasons.len()));
        out.push('\n');
        for session in &self.sessions {
            let lines = session.lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ");
            let flag = if session.finished { "" } else { " (unfinished)" };
            out.push_str(&format!(
                "| `{}`{flag} | {} | {lines} | {} | {} | {} |",
                escape(&session.key),
                escape(&session.model),
                session.findings,
                session.dismissed,
                number(session.actionability)
            ));
            for r in &reasons {
                out.push_str(&format!(" {} |", cell(&session.reasons, r)));
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "\n## Models\n\nWilson interval ({:.0} %) over findings of the share not dismissed.\n\n| model | sessions | findings | dismissed | mean actionability | pooled | interval |",
            LEVEL * 100.0
        ));
        for r in &reasons {
            out.push_str(&format!(" {r} |"));
        }
        out.push_str("\n|---|---:|---:|---:|---:|---:|---|");
        out.push_str(&"---:|".repeat(reasons.len()));
        out.push('\n');
        for m in &self.models {
            let interval = match (m.wilson_low, m.wilson_high) {
                (Some(l), Some(h)) => format!("[{l:.3}, {h:.3}]"),
                _ => "—".to_string(),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {interval} |",
                escape(&m.model),
                m.sessions,
                m.findings,
                m.dismissed,
                number(m.mean_actionability),
                number(m.pooled_actionability)
            ));
            for r in &reasons {
                out.push_str(&format!(" {} |", cell(&m.reasons, r)));
            }
            out.push('\n');
        }
        if !self.warnings.is_empty() {
            out.push_str("\n## Warnings\n\n");
            for w in &self.warnings {
                out.push_str(&format!("- {}\n", escape(w)));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn findings(prefix: &str, n: usize) -> Vec<Value> {
        (1..=n)
            .map(|i| json!({"id": format!("{prefix}{i}"), "file": "calc.py", "line": i, "severity": "warning", "category": "correctness", "confidence": 0.8, "message": format!("issue {i}")}))
            .collect()
    }

    /// One record in CONTRACTS.md's `history.jsonl` shape.
    fn record(diff_ref: &str, prefix: &str, n: usize, ids: &[&str], dismissals: &[(&str, &str)], finished_at: Option<&str>, model: &str) -> String {
        let mut action = serde_json::Map::new();
        if !ids.is_empty() {
            action.insert("dismissed_ids".into(), json!(ids));
        }
        if !dismissals.is_empty() {
            let d: Vec<Value> = dismissals.iter().map(|(id, r)| json!({"finding_id": id, "reason": r, "prompt_context": "calc.py:1"})).collect();
            action.insert("dismissals".into(), json!(d));
        }
        let mut rec = json!({"diff_ref": diff_ref, "review_output": findings(prefix, n), "run_config": {"model": model, "strictness": "default", "rag_symbol_max_definitions": 10}});
        if let Some(at) = finished_at {
            action.insert("finished_at".into(), json!(at));
            rec["prompt_tokens"] = json!(1200);
            rec["completion_tokens"] = json!(300);
            rec["eval_duration_ns"] = json!(5_000_000);
        }
        rec["user_action"] = Value::Object(action);
        rec.to_string()
    }

    /// Line by line:
    /// 1–3 session A (4 findings): dismiss a1 (false_positive), dismiss a2 (wrong_suggestion), finish
    ///     with [a1, a2] → 2 dismissed, actionability 1 − 2/4 = 0.5.
    /// 4   malformed (truncated JSON).
    /// 5   session B (3 findings), nothing dismissed, finish → 1.0.
    /// 6–8 session C (5 findings): dismiss c1 (already_correct), dismiss c2 (out_of_scope), finish
    ///     with [c1, c2] → 1 − 2/5 = 0.6.
    /// 9   a dismiss record of session D (2 findings) that never finished.
    /// A2 by hand over A, B, C: 12 findings, 4 dismissed, mean (0.5 + 1.0 + 0.6)/3 = 0.7, pooled
    /// 1 − 4/12; one dismissal of each reason.
    /// Stet (METRICS.md: every record a session, summed): 8 records; findings 4+4+4+3+5+5+5+2 = 32;
    /// dismissed_ids 1+2+2+0+1+2+2+1 = 11; rate 1 − 11/32; reasons summed over records:
    /// false_positive 1+1+1 = 3 (lines 1, 2, 9), wrong_suggestion 1, already_correct 2 (6, 7),
    /// out_of_scope 1.
    fn history() -> String {
        let q = "qwen2.5-coder:7b";
        [
            record("aaa1111", "a", 4, &["a1"], &[("a1", "false_positive")], None, q),
            record("aaa1111", "a", 4, &["a1", "a2"], &[("a1", "false_positive"), ("a2", "wrong_suggestion")], None, q),
            record("aaa1111", "a", 4, &["a1", "a2"], &[], Some("2026-11-30T10:00:00Z"), q),
            r#"{"diff_ref":"bbb2222","review_output":[{"id":"b1""#.to_string(),
            record("bbb2222", "b", 3, &[], &[], Some("2026-11-30T11:00:00Z"), "llama3.1:8b"),
            record("ccc3333", "c", 5, &["c1"], &[("c1", "already_correct")], None, q),
            record("ccc3333", "c", 5, &["c1", "c2"], &[("c1", "already_correct"), ("c2", "out_of_scope")], None, q),
            record("ccc3333", "c", 5, &["c1", "c2"], &[], Some("2026-11-30T12:00:00Z"), q),
            record("ddd4444", "d", 2, &["d1"], &[("d1", "false_positive")], None, q),
        ]
        .join("\n")
            + "\n"
    }

    fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn sessions_match_the_hand_count() {
        let r = analyze(&history(), "history.jsonl", None);
        assert_eq!(r.lines_read, 8);
        assert_eq!(r.skipped.len(), 1);
        assert_eq!(r.skipped[0].line, 4);
        assert!(r.skipped[0].why.starts_with("not JSON"), "{}", r.skipped[0].why);
        let keys: Vec<&str> = r.sessions.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["aaa1111@2026-11-30T10:00:00Z", "bbb2222@2026-11-30T11:00:00Z", "ccc3333@2026-11-30T12:00:00Z", "ddd4444@unfinished:9"]);
        let a = &r.sessions[0];
        assert_eq!((a.lines.clone(), a.findings, a.dismissed), (vec![1, 2, 3], 4, 2));
        assert!(close(a.actionability, 0.5));
        assert_eq!(a.reasons, counts(&[("false_positive", 1), ("wrong_suggestion", 1)]));
        assert!(close(r.sessions[1].actionability, 1.0));
        assert!(r.sessions[1].reasons.is_empty());
        assert!(close(r.sessions[2].actionability, 0.6));
        assert!(!r.sessions[3].finished);

        let s = &r.summary;
        assert_eq!((s.sessions, s.unfinished_sessions, s.total_findings, s.total_dismissed), (3, 1, 12, 4));
        assert!(close(s.mean_actionability, 0.7));
        assert!(close(s.pooled_actionability, 1.0 - 4.0 / 12.0));
        assert_eq!(s.reason_breakdown, counts(&[("false_positive", 1), ("already_correct", 1), ("wrong_suggestion", 1), ("out_of_scope", 1)]));
    }

    #[test]
    fn stet_double_counts_where_metrics_says() {
        let r = analyze(&history(), "history.jsonl", None);
        let q = &r.stet_stats_quality;
        assert_eq!((q.sessions_count, q.total_findings, q.total_dismissed), (8, 32, 11));
        assert_eq!(q.dismissals_by_reason, counts(&[("false_positive", 3), ("already_correct", 2), ("wrong_suggestion", 1), ("out_of_scope", 1)]));
        assert_eq!(r.differences.len(), 4, "{:?}", r.differences);
        assert!(r.differences[1].contains("32 findings, against 12"), "{}", r.differences[1]);
    }

    #[test]
    fn stets_rates_under_its_names_and_formulas() {
        let q = analyze(&history(), "history.jsonl", None).stet_stats_quality;
        // 8 records, 32 findings, 11 dismissed ids; reasons: 3 false_positive, 2 already_correct.
        assert_eq!(q.acceptance_rate, 21.0 / 32.0, "what A2's actionability formula gives over records");
        assert_eq!(q.dismissal_rate, 11.0 / 32.0);
        assert_eq!(q.false_positive_rate, 3.0 / 32.0);
        assert_eq!(q.actionability, 2.0 / 11.0, "already_correct / dismissed");
        assert_eq!(q.clean_commit_rate, 0.0);
        // Tokens only in the three finish records: 3 × (1200 + 300).
        assert_eq!(q.finding_density, Some(32.0 / 4.5));
        assert_eq!(q.category_breakdown, counts(&[("correctness", 32)]));
        let json = serde_json::to_value(&q).expect("json");
        let keys: Vec<&str> = json.as_object().expect("object").keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 11, "{keys:?}");
        assert_eq!(json["clean_commit_rate"], serde_json::json!(0), "0, as stet prints it");

        // Nothing to divide: every rate 0, no density; an empty reason is not counted.
        let text = record("fff", "f", 0, &[], &[], Some("2026-11-30T15:00:00Z"), "m")
            .replace("\"prompt_tokens\":1200", "\"prompt_tokens\":0")
            .replace("\"completion_tokens\":300", "\"completion_tokens\":0")
            + "\n"
            + &record("ggg", "g", 1, &["g1"], &[("g1", "")], None, "m");
        let q = analyze(&text, "h", None).stet_stats_quality;
        assert_eq!((q.sessions_count, q.total_findings, q.clean_commit_rate, q.finding_density), (2, 1, 0.5, None));
        assert_eq!((q.acceptance_rate, q.actionability), (0.0, 0.0));
        assert!(q.dismissals_by_reason.is_empty());
        let markdown = analyze(&history(), "history.jsonl", None).render();
        assert!(markdown.contains("| pooled actionability (1 − dismissed/findings) | 0.667 | 0.656 | `acceptance_rate` |"), "{markdown}");
        assert!(markdown.contains("| already_correct/dismissed | | 0.182 | `actionability` |"), "{markdown}");
    }

    #[test]
    fn one_record_sessions_agree_with_stet() {
        let text = record("eee", "e", 4, &["e1"], &[("e1", "false_positive")], Some("2026-11-30T13:00:00Z"), "m") + "\n";
        let r = analyze(&text, "h", None);
        assert_eq!(r.stet_stats_quality.total_findings, r.summary.total_findings);
        assert_eq!(r.stet_stats_quality.dismissals_by_reason, r.summary.reason_breakdown);
        assert_eq!(r.stet_stats_quality.acceptance_rate, 0.75);
        assert_eq!(r.summary.pooled_actionability, Some(0.75));
        assert_eq!(r.differences, ["No difference: every record is its own finished session."]);
    }

    #[test]
    fn models_from_run_config_with_wilson_intervals() {
        let r = analyze(&history(), "history.jsonl", None);
        let names: Vec<&str> = r.models.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(names, ["llama3.1:8b", "qwen2.5-coder:7b"]);
        let qwen = &r.models[1];
        // A and C: 9 findings, 4 dismissed, mean (0.5 + 0.6) / 2; 5 of 9 not dismissed.
        assert_eq!((qwen.sessions, qwen.findings, qwen.dismissed), (2, 9, 4));
        assert!(close(qwen.mean_actionability, 0.55));
        let (low, high) = wilson_interval(5, 9, 0.95).expect("9 trials");
        assert!(close(qwen.wilson_low, low) && close(qwen.wilson_high, high));
        assert_eq!(qwen.reasons, counts(&[("false_positive", 1), ("already_correct", 1), ("wrong_suggestion", 1), ("out_of_scope", 1)]));
    }

    #[test]
    fn a_side_file_tags_sessions_and_names_unknown_keys() {
        let csv = "session,model\nbbb2222@2026-11-30T11:00:00Z,gpt-4o-mini\nzzz@2026-01-01T00:00:00Z,other\n";
        let side = SideFile::parse(csv, Path::new("models.csv")).expect("a valid side file");
        let r = analyze(&history(), "history.jsonl", Some(&side));
        assert_eq!(r.sessions[1].model, "gpt-4o-mini");
        assert_eq!(r.sessions[1].model_source, "side file");
        assert_eq!(r.sessions[0].model_source, "run_config");
        assert!(r.models.iter().any(|m| m.model == "gpt-4o-mini"));
        assert_eq!(r.warnings, ["side file line 3: no session `zzz@2026-01-01T00:00:00Z` in the history"]);
    }

    #[test]
    fn a_side_file_without_the_columns_is_refused() {
        let e = SideFile::parse("diff_ref,model\nx,y\n", Path::new("m.csv")).unwrap_err();
        assert!(e.to_string().contains("no `session` column"), "{e}");
    }

    #[test]
    fn an_orphaned_dismiss_record_does_not_join_the_next_session() {
        // `stet start` replaced session X (dismissed x1) before it finished; session Y finished.
        let text = [
            record("xxx", "x", 3, &["x1"], &[("x1", "out_of_scope")], None, "m"),
            record("yyy", "y", 2, &["y1"], &[("y1", "false_positive")], None, "m"),
            record("yyy", "y", 2, &["y1"], &[], Some("2026-11-30T14:00:00Z"), "m"),
        ]
        .join("\n");
        let r = analyze(&text, "h", None);
        assert_eq!(r.sessions.len(), 2);
        assert_eq!(r.sessions[0].key, "xxx@unfinished:1");
        assert_eq!(r.sessions[1].lines, [2, 3]);
        assert_eq!(r.summary.reason_breakdown, counts(&[("false_positive", 1)]));
    }

    #[test]
    fn malformed_lines_say_why_and_an_unreadable_file_is_empty() {
        let text = "[1]\n\n{\"diff_ref\":\"a\"}\n{\"diff_ref\":\"a\",\"review_output\":[],\"user_action\":{\"dismissed_ids\":\"x\"}}\n";
        let r = analyze(text, "h", None);
        let why: Vec<(usize, &str)> = r.skipped.iter().map(|s| (s.line, s.why.as_str())).collect();
        assert_eq!(why, [(1, "not a JSON object"), (2, "blank line"), (3, "no `review_output` array"), (4, "`user_action.dismissed_ids` is not an array")]);
        assert!(r.is_empty());
        assert!(r.render().contains("0 records read, 4 lines skipped."));
    }

    #[test]
    fn a_line_that_is_not_utf8_is_skipped_and_the_rest_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("history.jsonl");
        let good = record("r1", "a", 2, &[], &[], Some("t1"), "m");
        let mut bytes = format!("{good}\r\n").into_bytes();
        bytes.extend_from_slice(b"{\"diff_ref\":\"\xff\"}\n");
        bytes.extend_from_slice(format!("{}\n", record("r2", "b", 1, &[], &[], Some("t2"), "m")).as_bytes());
        let r = load(&path_with(&path, &bytes), None).expect("read");
        assert_eq!(r.lines_read, 2, "{:?}", r.skipped);
        let why: Vec<(usize, &str)> = r.skipped.iter().map(|s| (s.line, s.why.as_str())).collect();
        assert_eq!(why, [(2, "not UTF-8 text (an invalid byte at column 14)")]);
        // The same lines as text read the same.
        assert_eq!(byte_lines(b"a\r\n\nb").collect::<Vec<_>>(), "a\r\n\nb".lines().map(Ok).collect::<Vec<_>>());
        assert_eq!(byte_lines(b"a\n").count(), 1);
        assert_eq!(byte_lines(b"").count(), 0);
    }

    fn path_with(path: &Path, bytes: &[u8]) -> PathBuf {
        std::fs::write(path, bytes).expect("write");
        path.to_path_buf()
    }
}
