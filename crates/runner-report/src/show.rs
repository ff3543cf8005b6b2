//! What reviewers said: the findings of selected runs, read from the cache (never by running
//! a reviewer), with each finding's verdict against the oracle when the target has one.
//! `runner show` prints them ([`render_text`], or JSON); the HTML report lists them per subject.
//! The runs are a manifest's current plan ([`collect`]), the runs a results.json recorded
//! ([`collect_recorded`]: their keys, whatever the manifest says now), one run by key or label
//! ([`collect_run`]), or an execution's own outcomes ([`from_outcomes`], read from nothing).

use super::model::{Results, RunRow};
use crate::analysis::matching::matcher::{match_case, Verdict};
use crate::analysis::spec::OracleRule;
use crate::cache::{CacheKey, Findings, Lookup, RunRecord, Store};
use crate::exec::RunOutcome;
use crate::finding::Finding;
use crate::ground_truth::oracle::Oracle;
use crate::plan::{Plan, PlannedRun};
use serde::Serialize;
use std::collections::HashMap;

/// Which runs to show; every `None` selects all.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// A cell id (`model=a,rag=0`), or some of its `axis=value` pairs (`model=a`).
    pub cell: Option<String>,
    /// A subject id, or the start of exactly one (a commit's short SHA, as RESULTS.md prints it).
    pub subject: Option<String>,
    pub repeat: Option<u32>,
    /// A cache key or a prefix of one (results.json's and RESULTS.md's `key` column).
    pub key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    #[error("no planned run matches {what}; {hint}")]
    NoMatch { what: String, hint: String },
    #[error("no run results.json records matches {what}; {hint}")]
    NoRecordedMatch { what: String, hint: String },
    #[error("subject `{prefix}` is ambiguous: {count} subjects start with it ({some}); give more of it")]
    AmbiguousSubject { prefix: String, count: usize, some: String },
    #[error("`{0}` is neither a manifest, a results.json, a run key (hex digits, at least 6, as results.json's `key` column prints them) nor a run label (`cell #repeat @subject`)")]
    BadKey(String),
    #[error("no run in the cache `{cache}` has a key starting with `{prefix}`: pass the experiment's manifest or results.json, or `--cache-dir`")]
    UnknownKey { prefix: String, cache: String },
    #[error("`{results}`: {why}")]
    Manifest { results: String, why: String },
    #[error("no run in the cache `{cache}` is labelled `{label}`: pass the experiment's manifest or results.json (with `--cell`, `--subject`, `--repeat`), or `--cache-dir`")]
    UnknownLabel { label: String, cache: String },
    #[error("key prefix `{prefix}` is ambiguous in `{cache}`: {count} runs start with it; give more digits")]
    Ambiguous { prefix: String, cache: String, count: usize },
}

impl Selection {
    /// Whether it names anything (a selection of nothing selects every run).
    fn narrows(&self) -> bool {
        self.cell.is_some() || self.subject.is_some() || self.repeat.is_some() || self.key.is_some()
    }

    /// Whether the cell `id`, whose values `value_of` gives by axis, is selected.
    fn cell_matches(&self, id: &str, value_of: impl Fn(&str) -> Option<String>) -> bool {
        let Some(wanted) = &self.cell else { return true };
        if wanted == id {
            return true;
        }
        let pairs: Vec<(&str, &str)> = wanted.split(',').filter_map(|p| p.split_once('=')).collect();
        !pairs.is_empty() && pairs.len() == wanted.split(',').count() && pairs.iter().all(|(axis, value)| value_of(axis).is_some_and(|v| v == *value))
    }

    /// The selection with its subject resolved among `subjects`: an id as it is, or the one id
    /// it starts (a commit's short SHA); an unknown one is left for the caller to report.
    fn resolved<'s>(&self, subjects: impl Iterator<Item = &'s str>) -> Result<Selection, ShowError> {
        let Some(wanted) = &self.subject else { return Ok(self.clone()) };
        let mut starting: Vec<&str> = Vec::new();
        for id in subjects {
            if id == wanted {
                return Ok(self.clone());
            }
            if id.starts_with(wanted.as_str()) && !starting.contains(&id) {
                starting.push(id);
            }
        }
        match starting.as_slice() {
            [] => Ok(self.clone()),
            [one] => Ok(Selection { subject: Some(one.to_string()), ..self.clone() }),
            many => {
                Err(ShowError::AmbiguousSubject { prefix: wanted.clone(), count: many.len(), some: list(&many.iter().take(3).copied().collect::<Vec<_>>()) })
            }
        }
    }

    fn matches(&self, run: &PlannedRun) -> bool {
        self.cell_matches(&run.cell.id, |axis| run.cell.values.get(axis).map(|v| v.render()))
            && self.subject.as_ref().is_none_or(|s| *s == run.subject_id)
            && self.repeat.is_none_or(|r| r == run.repeat)
            && self.key.as_ref().is_none_or(|k| run.key.0.starts_with(&k.to_ascii_lowercase()))
    }

    /// A recorded run, but for its key (see [`Self::key_matches`]).
    fn matches_recorded(&self, row: &RunRow, values: Option<&crate::cache::key::CellText>) -> bool {
        self.cell_matches(&row.cell, |axis| values.and_then(|v| v.get(axis).cloned()))
            && self.subject.as_ref().is_none_or(|s| *s == row.subject)
            && self.repeat.is_none_or(|r| r == row.repeat)
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.cell {
            parts.push(format!("cell `{c}`"));
        }
        if let Some(s) = &self.subject {
            parts.push(format!("subject `{s}`"));
        }
        if let Some(r) = self.repeat {
            parts.push(format!("repeat {r}"));
        }
        if let Some(k) = &self.key {
            parts.push(format!("key `{k}`"));
        }
        if parts.is_empty() {
            "the selection".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// Where a shown run's findings came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum ShownStatus {
    /// Read from the cache.
    Cached,
    /// Not in the cache: never run, or its last attempt failed (the error, when recorded).
    NotCached(Option<String>),
    /// In the cache but failing verification.
    Corrupt(String),
    /// In the cache but not readable (too many open files, permissions, an I/O error).
    Unreadable(String),
}

impl ShownStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Cached => "cached",
            Self::NotCached(_) => "not in the cache",
            Self::Corrupt(_) => "corrupt in the cache",
            Self::Unreadable(_) => "unreadable in the cache",
        }
    }
}

/// One finding as shown, with its verdict against the oracle.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownFinding {
    pub file: String,
    pub line: u32,
    /// The last line of its range, when the reviewer gave one past `line`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    pub severity: String,
    pub category: String,
    pub confidence: f64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// `found`, `partial` (with the oracle finding) or `noise`; `None` without an oracle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<FindingVerdict>,
}

/// A reported finding against the subject's oracle findings (automatic matching).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingVerdict {
    /// `found`, `partial` or `noise`.
    pub verdict: String,
    /// The oracle finding it matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<String>,
}

impl FindingVerdict {
    /// `found F01`, `partial F02`, `noise`.
    pub fn label(&self) -> String {
        match &self.oracle {
            Some(id) => format!("{} {id}", self.verdict),
            None => self.verdict.clone(),
        }
    }
}

/// One run and what its reviewer said.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownRun {
    /// `cell #repeat @subject`.
    pub run: String,
    pub experiment: String,
    pub cell: String,
    pub repeat: u32,
    pub subject: String,
    /// The reviewer's name (`reviewer` for a single `[reviewer]` table); empty when only the
    /// cache record is known.
    pub reviewer: String,
    /// The full cache key.
    pub key: String,
    #[serde(flatten)]
    pub status: ShownStatus,
    pub findings: Vec<ShownFinding>,
    /// A pipeline run's stages, each call with its raw answer (empty for other reviewers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<ShownStage>,
    /// The identity of the subject as it was reviewed (from the run's record), when known.
    #[serde(skip)]
    pub subject_identity: Option<String>,
}

/// One stage of a pipeline run, as its run's raw output records it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ShownStage {
    pub name: String,
    pub role: String,
    pub reviewer: String,
    #[serde(default)]
    pub family: Option<String>,
    /// Its share of the run's total budget, in tokens.
    #[serde(default)]
    pub budget: Option<u64>,
    /// Provider-reported tokens its calls spent (`None`: not reported).
    #[serde(default)]
    pub spent: Option<u64>,
    /// Calls not made because its budget was spent.
    #[serde(default)]
    pub stopped: u32,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub calls: Vec<ShownCall>,
}

/// One call of a stage.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ShownCall {
    pub instance: u32,
    pub started_at: String,
    /// The run that made it (`cell #repeat @subject`).
    pub run: String,
    pub cached: bool,
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// Under a budget: the prompt tokens reserved before the call, and the `max_tokens` it got.
    #[serde(default)]
    pub prompt_estimate: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Provider-reported time.
    #[serde(default)]
    pub provider_ms: Option<f64>,
    /// runner's own wall time of the call.
    #[serde(default)]
    pub runner_wall_ms: u64,
    #[serde(default)]
    pub error: Option<String>,
    /// The reviewer's raw output for the call.
    pub raw: String,
}

/// A pipeline run's stages from its raw output (nothing for other reviewers).
fn stages_of(store: &dyn Store, record: &RunRecord) -> Vec<ShownStage> {
    if record.inputs.reviewer_kind != "pipeline" {
        return Vec::new();
    }
    let Ok(raw) = store.raw_output(record) else { return Vec::new() };
    serde_json::from_str::<serde_json::Value>(&raw).ok().and_then(|v| serde_json::from_value(v["stages"].clone()).ok()).unwrap_or_default()
}

/// The model's answer texts in a call's raw output (an `openai`/`ollama` reviewer's), or the
/// raw output itself.
fn answer_texts(raw: &str) -> Vec<String> {
    let parsed: Option<serde_json::Value> = serde_json::from_str(raw).ok();
    let texts: Vec<String> = parsed
        .as_ref()
        .and_then(|v| v["units"].as_array())
        .map(|units| units.iter().flat_map(|u| u["answers"].as_array().into_iter().flatten()).filter_map(|a| a["text"].as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    if texts.is_empty() && !raw.is_empty() {
        vec![raw.to_string()]
    } else {
        texts
    }
}

/// The shown runs of one selection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    pub experiment: String,
    /// The rule verdicts were computed under, when the target has an oracle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    pub runs: Vec<ShownRun>,
}

/// The findings of the planned runs `selection` picks, read through `store` (a read-only
/// lookup: nothing is run or locked). With an oracle, each finding of a subject it knows
/// carries its verdict under `rule`.
pub fn collect(experiment: &str, plan: &Plan, store: &dyn Store, oracle: Option<(&Oracle, &OracleRule)>, selection: &Selection) -> Result<Shown, ShowError> {
    let selection = selection.resolved(plan.subjects.keys().map(String::as_str))?;
    let selected: Vec<&PlannedRun> = plan.runs.iter().filter(|r| selection.matches(r)).collect();
    if selected.is_empty() && selection.narrows() {
        let cells: Vec<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
        let subjects: Vec<&str> = plan.subjects.keys().map(String::as_str).collect();
        let repeats = plan.runs.iter().map(|r| r.repeat).max().unwrap_or(0);
        return Err(ShowError::NoMatch {
            what: selection.describe(),
            hint: format!("cells: {}; subjects: {}; repeats 1..={repeats}", list(&cells), list(&subjects)),
        });
    }
    let keys: Vec<&CacheKey> = selected.iter().map(|r| &r.key).collect();
    let lookups = store.lookup_batch(&keys);
    let runs = selected
        .into_iter()
        .zip(lookups)
        .map(|(run, lookup)| {
            let read = read_run(store, &run.key, lookup);
            let verdicts = oracle.and_then(|(o, rule)| verdicts(&read.findings, &run.subject_id, o, rule));
            ShownRun {
                run: run.label(),
                experiment: experiment.to_string(),
                cell: run.cell.id.clone(),
                repeat: run.repeat,
                subject: run.subject_id.clone(),
                reviewer: run.reviewer.clone(),
                key: run.key.0.clone(),
                status: read.status,
                findings: shown_findings(&read.findings, verdicts),
                stages: read.stages,
                subject_identity: read.subject_identity,
            }
        })
        .collect();
    Ok(Shown { experiment: experiment.to_string(), rule: oracle.map(|(_, rule)| rule.describe()), runs })
}

/// What results.json recorded, and what the manifest it names says now.
pub struct Recorded<'a> {
    pub results: &'a Results,
    /// The manifest's current plan: the full key of a recorded run it still plans, and the
    /// reviewer of each cell it still has.
    pub plan: &'a Plan,
    /// The manifest's reviewer when it has only one: the reviewer of a recorded cell the plan
    /// no longer has and whose values name none.
    pub sole_reviewer: Option<&'a str>,
}

/// The findings of the runs results.json recorded that `selection` picks, whatever its
/// manifest plans now: each run is read under the key results.json recorded for it (its
/// first digits, completed from the plan when the plan still has that run, else from the
/// cache's keys), through `store`. With an oracle, each finding of a subject it knows
/// carries its verdict under `rule`; a recorded failure is shown as recorded.
pub fn collect_recorded(recorded: &Recorded<'_>, store: &dyn Store, oracle: Option<(&Oracle, &OracleRule)>, selection: &Selection) -> Result<Shown, ShowError> {
    let results = recorded.results;
    let experiment = results.experiment.name.as_str();
    let selection = selection.resolved(results.target.subjects.iter().chain(results.runs.iter().map(|r| &r.subject)).map(String::as_str))?;
    let values: HashMap<&str, &crate::cache::key::CellText> = results.cells.iter().map(|c| (c.cell.as_str(), c.values.as_ref())).collect();
    let planned: HashMap<(&str, u32, &str), &PlannedRun> =
        recorded.plan.runs.iter().map(|r| ((r.cell.id.as_str(), r.repeat, r.subject_id.as_str()), r)).collect();
    let reviewer_of_cell: HashMap<&str, &str> = recorded.plan.runs.iter().map(|r| (r.cell.id.as_str(), r.reviewer.as_str())).collect();
    let wanted_key = selection.key.as_ref().map(|k| k.to_ascii_lowercase());
    let mut selected: Vec<(&RunRow, Option<CacheKey>)> = Vec::new();
    for row in results.runs.iter().filter(|row| selection.matches_recorded(row, values.get(row.cell.as_str()).copied())) {
        let plan_run = planned.get(&(row.cell.as_str(), row.repeat, row.subject.as_str())).copied();
        let recorded_key = row.key.to_ascii_lowercase();
        match &wanted_key {
            // A prefix at most as long as the recorded one is compared with it...
            Some(k) if k.len() <= recorded_key.len() && !recorded_key.starts_with(k.as_str()) => continue,
            // ...a longer one with the full key.
            Some(k) if k.len() > recorded_key.len() && !k.starts_with(recorded_key.as_str()) => continue,
            _ => {}
        }
        let full = full_key(&recorded_key, plan_run.map(|r| &r.key), store);
        if let Some(k) = wanted_key.as_ref().filter(|k| k.len() > recorded_key.len()) {
            if !full.as_ref().is_some_and(|f| f.0.starts_with(k.as_str())) {
                continue;
            }
        }
        selected.push((row, full));
    }
    if selected.is_empty() && selection.narrows() {
        let cells: Vec<&str> = results.cells.iter().map(|c| c.cell.as_str()).collect();
        let subjects: Vec<&str> = results.target.subjects.iter().map(String::as_str).collect();
        let repeats = results.runs.iter().map(|r| r.repeat).max().unwrap_or(0);
        return Err(ShowError::NoRecordedMatch {
            what: selection.describe(),
            hint: format!("cells: {}; subjects: {}; repeats 1..={repeats}", list(&cells), list(&subjects)),
        });
    }
    let failures: HashMap<&str, &str> = results.failures.iter().map(|f| (f.run.as_str(), f.error.as_str())).collect();
    let keys: Vec<&CacheKey> = selected.iter().filter_map(|(_, k)| k.as_ref()).collect();
    let mut lookups = store.lookup_batch(&keys).into_iter();
    let runs = selected
        .into_iter()
        .map(|(row, full)| {
            let label = crate::matrix::RunId::new(row.cell.clone(), row.repeat, row.subject.clone()).to_string();
            let read = match &full {
                Some(key) => read_run(store, key, lookups.next().unwrap_or(Lookup::Miss)),
                None => Read::missing(None),
            };
            let read = match read.status {
                // A run the cache lacks that results.json recorded as failed: its recorded error.
                ShownStatus::NotCached(None) => Read { status: ShownStatus::NotCached(failures.get(label.as_str()).map(|e| e.to_string())), ..read },
                _ => read,
            };
            let verdicts = oracle.and_then(|(o, rule)| verdicts(&read.findings, &row.subject, o, rule));
            let reviewer = reviewer_of_cell
                .get(row.cell.as_str())
                .map(|r| r.to_string())
                .or_else(|| values.get(row.cell.as_str()).and_then(|v| v.get("reviewer").cloned()))
                .or_else(|| recorded.sole_reviewer.map(str::to_string))
                .unwrap_or_default();
            ShownRun {
                run: label,
                experiment: experiment.to_string(),
                cell: row.cell.clone(),
                repeat: row.repeat,
                subject: row.subject.clone(),
                reviewer,
                key: full.map_or_else(|| row.key.clone(), |k| k.0),
                status: read.status,
                findings: shown_findings(&read.findings, verdicts),
                stages: read.stages,
                subject_identity: read.subject_identity,
            }
        })
        .collect();
    Ok(Shown { experiment: experiment.to_string(), rule: oracle.map(|(_, rule)| rule.describe()), runs })
}

/// The full key of a run results.json recorded by its first digits: the planned run's when
/// it starts with them, else the one key of the local cache that does (`None`: none, or more
/// than one).
fn full_key(recorded: &str, planned: Option<&CacheKey>, store: &dyn Store) -> Option<CacheKey> {
    if recorded.len() < 6 || recorded.len() > 64 || !recorded.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if let Some(key) = planned.filter(|k| k.0.starts_with(recorded)) {
        return Some(key.clone());
    }
    if recorded.len() == 64 {
        return Some(CacheKey(recorded.to_string()));
    }
    let mut keys = store.run_keys_with_prefix(recorded);
    (keys.len() == 1).then(|| keys.remove(0))
}

/// An execution's own runs, from the outcomes its walk holds (nothing is read: `exec --html`):
/// a run that has no result is shown as not in the cache, with its error when it failed. With
/// an oracle, each finding of a subject it knows carries its verdict under `rule`. No
/// pipeline stages: they are in the runs' raw output, which the walk does not hold.
pub fn from_outcomes<'r>(experiment: &str, runs: impl Iterator<Item = (&'r PlannedRun, &'r RunOutcome)>, oracle: Option<(&Oracle, &OracleRule)>) -> Shown {
    let runs = runs
        .map(|(run, outcome)| {
            let (status, findings, identity): (ShownStatus, &[Finding], Option<String>) = match (outcome.success(), outcome) {
                (Some((record, findings)), _) => (ShownStatus::Cached, findings, Some(record.inputs.subject.clone())),
                (None, RunOutcome::Failed(error)) => (ShownStatus::NotCached(Some(error.to_string())), &[], None),
                (None, _) => (ShownStatus::NotCached(None), &[], None),
            };
            let verdicts = oracle.and_then(|(o, rule)| verdicts(findings, &run.subject_id, o, rule));
            ShownRun {
                run: run.label(),
                experiment: experiment.to_string(),
                cell: run.cell.id.clone(),
                repeat: run.repeat,
                subject: run.subject_id.clone(),
                reviewer: run.reviewer.clone(),
                key: run.key.0.clone(),
                status,
                findings: shown_findings(findings, verdicts),
                stages: Vec::new(),
                subject_identity: identity,
            }
        })
        .collect();
    Shown { experiment: experiment.to_string(), rule: oracle.map(|(_, rule)| rule.describe()), runs }
}

/// A run named without a manifest, from the cache records alone (no reviewer name, no
/// verdicts): by its cache key or a prefix of one (results.json's `key` column), or by its
/// label `cell #repeat @subject` (RESULTS.md's run column), which can name the same run of
/// several experiments: each is shown.
pub fn collect_run(store: &dyn Store, id: &str) -> Result<Shown, ShowError> {
    let id = id.trim();
    let cache_name = store.location();
    if parse_label(id).is_some() {
        let mut records: Vec<RunRecord> = store.list_runs().into_iter().filter_map(Result::ok).filter(|r| r.label == id).collect();
        if records.is_empty() {
            return Err(ShowError::UnknownLabel { label: id.to_string(), cache: cache_name });
        }
        records.sort_by(|a, b| (&a.experiment, &a.key.0).cmp(&(&b.experiment, &b.key.0)));
        let runs: Vec<ShownRun> = records.iter().map(|r| record_run(store, &r.key)).collect();
        let experiment = if runs.iter().all(|r| r.experiment == runs[0].experiment) { runs[0].experiment.clone() } else { String::new() };
        return Ok(Shown { experiment, rule: None, runs });
    }
    let prefix = id.to_ascii_lowercase();
    if prefix.len() < 6 || prefix.len() > 64 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ShowError::BadKey(prefix));
    }
    let keys = store.run_keys_with_prefix(&prefix);
    let key = match keys.as_slice() {
        [] => return Err(ShowError::UnknownKey { prefix, cache: cache_name }),
        [key] => key.clone(),
        many => return Err(ShowError::Ambiguous { prefix, cache: cache_name, count: many.len() }),
    };
    let run = record_run(store, &key);
    Ok(Shown { experiment: run.experiment.clone(), rule: None, runs: vec![run] })
}

/// One run from its cache record.
fn record_run(store: &dyn Store, key: &CacheKey) -> ShownRun {
    let (status, findings, record) = match store.lookup(key) {
        Lookup::Hit { record, findings } => (ShownStatus::Cached, findings, Some(record)),
        Lookup::Miss => (ShownStatus::NotCached(None), Findings::default(), None),
        Lookup::Corrupt(detail) => (ShownStatus::Corrupt(detail), Findings::default(), None),
        Lookup::Unreadable(detail) => (ShownStatus::Unreadable(detail), Findings::default(), None),
    };
    let stages = record.as_ref().map(|r| stages_of(store, r)).unwrap_or_default();
    let label = record.as_ref().map(|r| r.label.clone()).unwrap_or_default();
    let (cell, repeat, subject) = parse_label(&label).unwrap_or_default();
    ShownRun {
        run: label,
        subject_identity: record.as_ref().map(|r| r.inputs.subject.clone()),
        experiment: record.map(|r| r.experiment).unwrap_or_default(),
        cell,
        repeat,
        subject,
        reviewer: String::new(),
        key: key.0.clone(),
        status,
        findings: shown_findings(&findings, None),
        stages,
    }
}

/// `cell #repeat @subject` back into its parts.
fn parse_label(label: &str) -> Option<(String, u32, String)> {
    let (rest, subject) = label.rsplit_once(" @")?;
    let (cell, repeat) = rest.rsplit_once(" #")?;
    Some((cell.to_string(), repeat.parse().ok()?, subject.to_string()))
}

fn list(items: &[&str]) -> String {
    const MAX: usize = 12;
    let shown: Vec<String> = items.iter().take(MAX).map(|i| format!("`{i}`")).collect();
    if items.len() > MAX {
        format!("{} and {} more", shown.join(", "), items.len() - MAX)
    } else {
        shown.join(", ")
    }
}

/// What one run's lookup gave.
struct Read {
    status: ShownStatus,
    findings: Findings,
    stages: Vec<ShownStage>,
    subject_identity: Option<String>,
}

impl Read {
    fn missing(error: Option<String>) -> Self {
        Read { status: ShownStatus::NotCached(error), findings: Findings::default(), stages: Vec::new(), subject_identity: None }
    }
}

/// A run's cached findings from its lookup, or why there are none (its recorded failure).
fn read_run(store: &dyn Store, key: &CacheKey, lookup: Lookup) -> Read {
    let failed = |status| Read { status, ..Read::missing(None) };
    match lookup {
        Lookup::Hit { findings, record } => {
            Read { status: ShownStatus::Cached, findings, stages: stages_of(store, &record), subject_identity: Some(record.inputs.subject.clone()) }
        }
        Lookup::Miss => Read::missing(store.failure(key).map(|f| f.error.to_string())),
        Lookup::Corrupt(detail) => failed(ShownStatus::Corrupt(detail)),
        Lookup::Unreadable(detail) => failed(ShownStatus::Unreadable(detail)),
    }
}

/// Each finding's verdict on `subject`, in report order; `None` when the oracle lacks the subject.
fn verdicts(findings: &[Finding], subject: &str, oracle: &Oracle, rule: &OracleRule) -> Option<Vec<FindingVerdict>> {
    oracle.case(subject)?;
    let matched = match_case(findings, &oracle.expected_for(subject), rule);
    let mut out = vec![FindingVerdict { verdict: "noise".to_string(), oracle: None }; findings.len()];
    for v in &matched.verdicts {
        if let (Some(index), Verdict::Found | Verdict::Partial) = (v.reported, v.verdict) {
            if let Some(slot) = out.get_mut(index) {
                *slot = FindingVerdict { verdict: v.verdict.as_str().to_string(), oracle: Some(v.finding.clone()) };
            }
        }
    }
    Some(out)
}

fn shown_findings(findings: &[Finding], verdicts: Option<Vec<FindingVerdict>>) -> Vec<ShownFinding> {
    let mut verdicts = verdicts.map(Vec::into_iter);
    findings
        .iter()
        .map(|f| {
            let (start, end) = f.span();
            ShownFinding {
                file: f.file.clone(),
                line: start,
                end_line: (end > start).then_some(end),
                severity: f.severity.as_str().to_string(),
                category: f.category.as_str().to_string(),
                confidence: f.confidence,
                message: f.message.clone(),
                suggestion: f.suggestion.clone().filter(|s| !s.trim().is_empty()),
                verdict: verdicts.as_mut().and_then(Iterator::next),
            }
        })
        .collect()
}

impl ShownFinding {
    /// `file:line` or `file:start-end`.
    pub fn location(&self) -> String {
        match self.end_line {
            Some(end) => format!("{}:{}-{end}", self.file, self.line),
            None => format!("{}:{}", self.file, self.line),
        }
    }
}

/// `runner show`'s plain text: each run with its status, then its findings.
pub fn render_text(shown: &Shown) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let cached = shown.runs.iter().filter(|r| r.status == ShownStatus::Cached).count();
    let findings: usize = shown.runs.iter().map(|r| r.findings.len()).sum();
    let _ = writeln!(
        out,
        "{}: {} run{} selected, {cached} in the cache, {findings} finding{}",
        if shown.experiment.is_empty() { "runner" } else { &shown.experiment },
        shown.runs.len(),
        if shown.runs.len() == 1 { "" } else { "s" },
        if findings == 1 { "" } else { "s" }
    );
    if let Some(rule) = &shown.rule {
        let _ = writeln!(out, "verdicts against the oracle: {rule}");
    }
    for run in &shown.runs {
        let _ = writeln!(out);
        let mut reviewer = if run.reviewer.is_empty() { String::new() } else { format!(", reviewer `{}`", run.reviewer) };
        if run.experiment != shown.experiment {
            reviewer.push_str(&format!(", experiment `{}`", run.experiment));
        }
        let what = match &run.status {
            ShownStatus::Cached => format!("{} finding{}", run.findings.len(), if run.findings.len() == 1 { "" } else { "s" }),
            ShownStatus::NotCached(None) => "not in the cache (never run, or run elsewhere): nothing to show".to_string(),
            ShownStatus::NotCached(Some(error)) => format!("not in the cache; its last attempt failed: {}", one_line(error)),
            ShownStatus::Corrupt(detail) => format!("corrupt in the cache: {}", one_line(detail)),
            ShownStatus::Unreadable(detail) => format!("unreadable in the cache: {}", one_line(detail)),
        };
        let _ = writeln!(out, "{}  (key {}{reviewer}): {what}", run.run, short(&run.key));
        for f in &run.findings {
            let verdict = f.verdict.as_ref().map(|v| format!("  [{}]", v.label())).unwrap_or_default();
            let _ = writeln!(out, "  {}  {} {}{verdict}", f.location(), f.severity, f.category);
            for line in f.message.lines() {
                let _ = writeln!(out, "      {}", sanitize(line));
            }
            if let Some(s) = &f.suggestion {
                let mut lines = s.lines();
                if let Some(first) = lines.next() {
                    let _ = writeln!(out, "      suggestion: {}", sanitize(first));
                }
                for line in lines {
                    let _ = writeln!(out, "        {}", sanitize(line));
                }
            }
        }
        for stage in &run.stages {
            render_stage(&mut out, stage);
        }
    }
    out
}

/// A pipeline stage: its budget and spend, then each call with its raw answer.
fn render_stage(out: &mut String, stage: &ShownStage) {
    use std::fmt::Write;
    let calls = stage.calls.len();
    let mut head = format!("  stage {} ({}): {calls} call{}", stage.name, stage.role, if calls == 1 { "" } else { "s" });
    match (stage.spent, stage.budget) {
        (Some(spent), Some(budget)) => head.push_str(&format!(", {spent} of {budget} tokens")),
        (Some(spent), None) => head.push_str(&format!(", {spent} tokens")),
        (None, _) => head.push_str(", tokens not reported"),
    }
    if stage.stopped > 0 {
        head.push_str(&format!(", {} stopped", stage.stopped));
    }
    if let Some(note) = &stage.note {
        head.push_str(&format!(" ({})", one_line(note)));
    }
    let _ = writeln!(out, "{head}");
    for call in &stage.calls {
        let tokens = match (call.prompt_tokens, call.completion_tokens) {
            (Some(p), Some(c)) => format!("{p}+{c} tokens"),
            _ => "tokens not reported".to_string(),
        };
        let allowance = match (call.prompt_estimate, call.max_tokens) {
            (Some(e), Some(m)) => format!(" (prompt estimated {e}, max_tokens {m})"),
            _ => String::new(),
        };
        let tokens = format!("{tokens}{allowance}");
        let provider = call.provider_ms.map(|ms| format!(", provider {ms:.0} ms")).unwrap_or_default();
        let cached = if call.cached { ", from the cache" } else { "" };
        let _ =
            writeln!(out, "    call {} at {} by `{}`: {tokens}{provider}, runner {} ms{cached}", call.instance, call.started_at, call.run, call.runner_wall_ms);
        if let Some(e) = &call.error {
            let _ = writeln!(out, "      failed: {}", one_line(e));
        }
        for text in answer_texts(&call.raw) {
            for line in text.lines() {
                let _ = writeln!(out, "      | {}", sanitize(line));
            }
        }
    }
}

fn short(key: &str) -> &str {
    &key[..12.min(key.len())]
}

fn one_line(text: &str) -> String {
    sanitize(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Reviewer text printed to a terminal: control characters (escape sequences) shown as `�`.
fn sanitize(text: &str) -> String {
    runner_core::terminal::sanitize(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Category, Severity};

    fn finding(file: &str, line: u32, message: &str) -> Finding {
        Finding {
            id: "x".into(),
            file: file.into(),
            line,
            range: None,
            severity: Severity::Warning,
            category: Category::Bug,
            confidence: 0.5,
            message: message.into(),
            suggestion: Some("fix it\nnow".into()),
            cursor_uri: None,
            evidence_lines: None,
        }
    }

    #[test]
    fn labels_parse_back_into_their_parts() {
        assert_eq!(parse_label("model=a,t=0 #2 @case-01"), Some(("model=a,t=0".into(), 2, "case-01".into())));
        assert_eq!(parse_label("no label"), None);
    }

    #[test]
    fn text_shows_every_field_and_neutralizes_escape_sequences() {
        let shown = Shown {
            experiment: "e".into(),
            rule: None,
            runs: vec![ShownRun {
                run: "c #1 @s".into(),
                experiment: "e".into(),
                cell: "c".into(),
                repeat: 1,
                subject: "s".into(),
                reviewer: "r".into(),
                key: "0123456789abcdef".into(),
                status: ShownStatus::Cached,
                findings: shown_findings(&[finding("a.py", 3, "bad \u{1b}[31mred")], None),
                stages: Vec::new(),
                subject_identity: None,
            }],
        };
        let text = render_text(&shown);
        assert!(text.contains("c #1 @s  (key 0123456789ab, reviewer `r`): 1 finding"), "{text}");
        assert!(text.contains("  a.py:3  warning bug\n      bad \u{fffd}[31mred\n      suggestion: fix it\n        now\n"), "{text}");
    }

    #[test]
    fn a_cell_is_selected_by_its_id_or_some_of_its_values() {
        use crate::matrix::{AxisValue, Cell};
        let cell = Cell {
            id: "model=a,rag=0".into(),
            values: [("model".to_string(), AxisValue::Str("a".into())), ("rag".to_string(), AxisValue::Str("0".into()))].into_iter().collect(),
        };
        let pick = |c: &str| Selection { cell: Some(c.into()), ..Selection::default() }.cell_matches(&cell.id, |axis| cell.get(axis).map(|v| v.render()));
        assert!(pick("model=a,rag=0") && pick("model=a") && pick("rag=0"));
        assert!(!pick("model=b") && !pick("model") && !pick("model=a,x"));
    }

    #[test]
    fn a_subject_is_selected_by_its_id_or_the_start_of_exactly_one() {
        let subjects = ["ada57217f36fd0f51fd260e5f8cdaf89d1e8e4d3", "ada5f00d00000000000000000000000000000000", "case-01"];
        let pick = |s: &str| Selection { subject: Some(s.into()), ..Selection::default() }.resolved(subjects.iter().copied()).map(|s| s.subject);
        assert_eq!(pick("ada5721").ok().flatten().as_deref(), Some(subjects[0]), "a short SHA as RESULTS.md prints it");
        assert_eq!(pick("case-01").ok().flatten().as_deref(), Some("case-01"));
        assert_eq!(pick("case-09").ok().flatten().as_deref(), Some("case-09"), "an unknown subject is left to be reported");
        assert!(matches!(pick("ada5"), Err(ShowError::AmbiguousSubject { count: 2, .. })));
    }
}
