//! Adjudication by a person: a blind sheet exported from an experiment's cached results, and
//! its import into seed 002's captured-results format (and seed 003's per-run verdicts).
//!
//! `export` writes `sheet.csv` (one row per distinct reported finding of a case, in a seeded
//! shuffle, with no strategy, cell, model or repeat), `key.json` (which runs and findings each
//! anonymous row stands for; kept from the adjudicator), `cases.md` (the public case text and the
//! oracle's findings, for the adjudicator) and `README.md` (how to fill the sheet). `import`
//! reads the filled sheet with the key: strategies are cells, trials are repeats, cases are
//! subjects.
//!
//! Dispositions: seed 002's `verified` / `false_positive` / `unresolved`, or seed 003's
//! `found` / `partial` (a reported finding against an oracle finding; oracle findings no row
//! names are `missed`) and `real` / `rejected` (an extra). In seed 002 terms `found` is
//! `verified`, `rejected` is `false_positive`, and `partial` and `real` are `unresolved`
//! (neither verified nor noise until the oracle is updated).

use super::sheet::{self, Column, Rule, Spec};
use crate::analysis::corpus::score::{self, CapturePlan, CapturedResults, CapturedRun, Claim, Disposition, Metrics, Strategy};
use crate::analysis::matching::adjudication::{AdjudicatedFinding, AdjudicatedRun, Adjudication, Seed003Verdict};
use crate::analysis::matching::matcher::{describe_rule_for, match_case, Verdict};
use crate::analysis::spec::OracleRule;
use crate::cache::key::CacheKey;
use crate::cache::Lookup;
use crate::cache::Store;
use crate::finding::Finding;
use crate::ground_truth::oracle::{self, Oracle, OracleError};
use crate::subject::corpus::{self, CorpusError, PublicCase};
use crate::subject::TargetSpec;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const SHEET_FILE: &str = "sheet.csv";
pub const KEY_FILE: &str = "key.json";
pub const CASES_FILE: &str = "cases.md";
pub const README_FILE: &str = "README.md";

/// The sheet's columns; a person fills `disposition`, `oracle_id` and, if they like, `note`.
pub const SHEET_COLUMNS: [&str; 11] = ["item", "case", "file", "line", "severity", "category", "message", "suggestion", "disposition", "oracle_id", "note"];

pub const KEY_VERSION: u32 = 1;

/// What a sheet's anonymous items stand for. Kept from the adjudicator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    pub version: u32,
    pub experiment: String,
    pub manifest: String,
    /// The corpus directory (its `oracle.json` is what `import` checks against).
    pub corpus: PathBuf,
    pub seed: u64,
    pub cells: Vec<String>,
    pub repeats: u32,
    pub cases: Vec<String>,
    pub runs: Vec<KeyRun>,
    /// Item id → the (run, finding) occurrences the row stands for.
    pub items: BTreeMap<String, KeyItem>,
    /// When runner's automatic matcher filled the sheet (`export --fill matcher`): its rule,
    /// as RESULTS.md states it. `import` then labels the result machine-adjudicated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filled_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRun {
    pub cell: String,
    pub repeat: u32,
    pub case: String,
    pub cache_key: String,
    /// The run has a cached result; runs without one are omitted from the captured results
    /// (seed 002 counts them as misses).
    pub submitted: bool,
    /// The output met its reporting contract (no schema problems).
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// Where the run started among the runs of its case and trial: strategies start in an
    /// order rotated by one per case/trial block (the plan's `order`, from 0).
    #[serde(default)]
    pub order: u32,
    /// The stet ids of the run's findings, in the run's order.
    pub findings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyItem {
    pub case: String,
    /// Indexes into `runs` and into that run's `findings`.
    pub occurrences: Vec<(usize, usize)>,
}

#[derive(Debug, thiserror::Error)]
pub enum AdjudicationError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("failed to write `{path}`: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("failed to parse `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("failed to export a sheet: experiment `{0}` does not review a corpus; adjudication sheets need a corpus with an oracle")]
    NotCorpus(String),
    #[error(transparent)]
    Oracle(#[from] OracleError),
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error("failed to import `{path}`: {}", .problems.join("; "))]
    Invalid { path: PathBuf, problems: Vec<String> },
}

pub fn write_file(path: &Path, text: &str) -> Result<(), AdjudicationError> {
    std::fs::write(path, text).map_err(|source| AdjudicationError::Write { path: path.to_path_buf(), source })
}

/// What `export` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Exported {
    pub files: Vec<PathBuf>,
    pub rows: usize,
    pub findings: usize,
    pub runs_submitted: usize,
    pub runs_missing: usize,
}

/// The text a row shows; identical findings of a case (from any run) share one row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowContent {
    pub(crate) case: String,
    pub(crate) file: String,
    pub(crate) line: String,
    pub(crate) severity: String,
    pub(crate) category: String,
    pub(crate) message: String,
    pub(crate) suggestion: String,
}

impl RowContent {
    pub fn of(case: &str, f: &Finding) -> Self {
        let line = match f.range {
            Some(r) if r.is_valid() && r.end != r.start => format!("{}-{}", r.start, r.end),
            _ => f.anchor_line().to_string(),
        };
        Self {
            case: case.to_string(),
            file: f.file.clone(),
            line,
            severity: f.severity.to_string(),
            category: f.category.to_string(),
            message: f.message.trim().to_string(),
            suggestion: f.suggestion.clone().unwrap_or_default().trim().to_string(),
        }
    }
}

/// What a sheet is exported from: an experiment's planned runs and the cache that holds them.
pub struct SheetSource<'a> {
    pub experiment: &'a str,
    pub target: &'a TargetSpec,
    /// Every planned run, in plan order.
    pub runs: Vec<SheetRun<'a>>,
    /// The planned subjects (cases), in plan order.
    pub cases: Vec<String>,
    /// The cell ids, in matrix order.
    pub cells: Vec<String>,
    pub repeats: u32,
    pub cache: &'a dyn Store,
}

/// One planned run of a [`SheetSource`].
pub struct SheetRun<'a> {
    pub cell: &'a str,
    /// The cell's axis values (H4 groups runs by the other axes).
    pub matrix_cell: &'a crate::matrix::Cell,
    pub repeat: u32,
    pub case: &'a str,
    pub key: &'a CacheKey,
    /// Where the run started among its case and repeat's runs (the plan's rotation).
    pub order: u32,
}

/// What runner's automatic matcher says of one reported finding, best first when a row's
/// occurrences differ: found or partial for an oracle finding, else a rejected extra.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Filled {
    Rejected,
    Partial(String),
    Found(String),
}

impl Filled {
    fn columns(&self, case: &str) -> [String; 3] {
        let note = "filled by runner's automatic matcher, not a person".to_string();
        match self {
            Self::Found(id) => ["found".into(), id.clone(), note],
            Self::Partial(id) => ["partial".into(), id.clone(), note],
            Self::Rejected => ["rejected".into(), String::new(), format!("{note} (an extra of {case})")],
        }
    }
}

/// Exports a blind sheet of every cached finding of `source`'s runs into `out`. With `fill`,
/// runner's automatic matcher fills `disposition` and `oracle_id` by that rule (each run's
/// findings matched to its case's oracle findings, as the oracle analyses do): a
/// machine adjudication, recorded as such in the key.
pub fn export(source: &SheetSource<'_>, manifest_label: &str, out: &Path, seed: u64, fill: Option<&OracleRule>) -> Result<Exported, AdjudicationError> {
    let name = source.experiment.to_string();
    let TargetSpec::Corpus { dir, .. } = source.target else {
        return Err(AdjudicationError::NotCorpus(name));
    };
    let public: BTreeMap<String, PublicCase> = corpus::load_public_cases(dir)?.into_iter().map(|c| (c.id.clone(), c)).collect();
    let oracle = oracle::load(dir)?;

    let mut runs = Vec::new();
    let mut occurrences: BTreeMap<RowContent, Vec<(usize, usize)>> = BTreeMap::new();
    let mut filled: BTreeMap<RowContent, Filled> = BTreeMap::new();
    let mut findings_total = 0;
    for planned in &source.runs {
        let index = runs.len();
        let mut run = KeyRun {
            cell: planned.cell.to_string(),
            repeat: planned.repeat,
            case: planned.case.to_string(),
            cache_key: planned.key.0.clone(),
            order: planned.order,
            submitted: false,
            complete: false,
            metrics: None,
            findings: Vec::new(),
        };
        if let Lookup::Hit { record, findings } = source.cache.lookup(planned.key) {
            run.submitted = true;
            run.complete = record.schema_problems.is_empty();
            let cost = &record.cost;
            let total = match (cost.prompt_tokens, cost.completion_tokens) {
                (Some(p), Some(c)) => Some(p + c),
                _ => None,
            };
            // Only what the provider reported (seed 002): runner's own wall time is not the
            // provider's latency, and no metric at all leaves `metrics` out.
            let metrics = Metrics {
                latency_ms: cost.provider_ms(),
                input_tokens: cost.prompt_tokens.map(|v| v as f64),
                output_tokens: cost.completion_tokens.map(|v| v as f64),
                total_tokens: total.map(|v| v as f64),
            };
            run.metrics = (metrics != Metrics::default()).then_some(metrics);
            let matched = match (fill, oracle.as_ref()) {
                (Some(rule), Some(o)) => Some(match_case(&findings, &o.expected_for(planned.case), rule)),
                _ => None,
            };
            for (i, f) in findings.iter().enumerate() {
                run.findings.push(f.id.clone());
                let row = RowContent::of(planned.case, f);
                if let Some(m) = &matched {
                    let verdict = m.verdicts.iter().find(|v| v.reported == Some(i));
                    let says = match verdict.map(|v| (v.verdict, v.finding.clone())) {
                        Some((Verdict::Found, id)) => Filled::Found(id),
                        Some((Verdict::Partial, id)) => Filled::Partial(id),
                        _ => Filled::Rejected,
                    };
                    let best = filled.entry(row.clone()).or_insert(Filled::Rejected);
                    *best = (*best).clone().max(says);
                }
                occurrences.entry(row).or_default().push((index, i));
                findings_total += 1;
            }
        }
        runs.push(run);
    }

    // Cases in plan order; rows shuffled within each case, so a person can work case by case
    // and the order tells nothing about where a row came from.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let cases: Vec<String> = source.cases.clone();
    let mut ordered: Vec<(RowContent, Vec<(usize, usize)>)> = Vec::new();
    for case in &cases {
        let mut rows: Vec<(RowContent, Vec<(usize, usize)>)> =
            occurrences.iter().filter(|(r, _)| &r.case == case).map(|(r, o)| (r.clone(), o.clone())).collect();
        rows.shuffle(&mut rng);
        ordered.extend(rows);
    }
    let width = ordered.len().to_string().len().max(3);
    let mut lines = Vec::new();
    let mut items = BTreeMap::new();
    for (i, (row, occ)) in ordered.iter().enumerate() {
        let item = format!("A{:0width$}", i + 1);
        let shown = [&item, &row.case, &row.file, &row.line, &row.severity, &row.category, &row.message, &row.suggestion];
        let answer = match filled.get(row) {
            Some(f) => f.columns(&row.case).to_vec(),
            None => vec![String::new(); 3],
        };
        lines.push(shown.iter().map(|s| s.to_string()).chain(answer).collect());
        items.insert(item, KeyItem { case: row.case.clone(), occurrences: occ.clone() });
    }
    let sheet = sheet::write(&SHEET_COLUMNS, &lines).map_err(|e| AdjudicationError::Parse { path: out.join(SHEET_FILE), message: e.to_string() })?;

    let key = Key {
        version: KEY_VERSION,
        experiment: name.clone(),
        manifest: manifest_label.to_string(),
        corpus: dir.clone(),
        seed,
        cells: source.cells.clone(),
        repeats: source.repeats,
        cases: cases.clone(),
        runs,
        items,
        filled_by: fill.map(|rule| match oracle.as_ref() {
            Some(o) => describe_rule_for(rule, o),
            None => rule.describe(),
        }),
    };
    std::fs::create_dir_all(out).map_err(|source| AdjudicationError::Write { path: out.to_path_buf(), source })?;
    let files = [out.join(SHEET_FILE), out.join(KEY_FILE), out.join(CASES_FILE), out.join(README_FILE)];
    write_file(&files[0], &sheet)?;
    let key_text = serde_json::to_string_pretty(&key).map_err(|e| AdjudicationError::Parse { path: files[1].clone(), message: e.to_string() })?;
    write_file(&files[1], &(key_text + "\n"))?;
    write_file(&files[2], &cases_text(&cases, &public, oracle.as_ref(), &ordered))?;
    write_file(&files[3], &readme_text(&name, ordered.len()))?;
    let submitted = key.runs.iter().filter(|r| r.submitted).count();
    Ok(Exported { files: files.to_vec(), rows: ordered.len(), findings: findings_total, runs_submitted: submitted, runs_missing: key.runs.len() - submitted })
}

fn numbered(text: &str) -> String {
    let width = text.lines().count().to_string().len();
    text.lines().enumerate().map(|(i, l)| format!("{:>width$} │ {l}\n", i + 1)).collect()
}

/// The public case text and the oracle's findings, for the adjudicator (never for a reviewer).
fn cases_text(cases: &[String], public: &BTreeMap<String, PublicCase>, oracle: Option<&Oracle>, rows: &[(RowContent, Vec<(usize, usize)>)]) -> String {
    let mut out =
        String::from("# Cases to adjudicate\n\nFor the adjudicator only: this file holds the oracle's private findings. Never give it to a reviewer.\n");
    for id in cases {
        let Some(case) = public.get(id) else { continue };
        let n = rows.iter().filter(|(r, _)| &r.case == id).count();
        let plural = if n == 1 { "" } else { "s" };
        let _ = write!(out, "\n## {id} ({n} row{plural})\n\n**Review task.** {}\n\n**Spec.** {}\n\n", case.review_task.trim(), case.spec.trim());
        if let Some(o) = oracle {
            let expected = o.expected_for(id);
            if expected.is_empty() {
                out.push_str("**Oracle:** a clean case: no expected findings. Every reported finding is `false_positive` (or `unresolved`).\n\n");
            } else {
                out.push_str("**Oracle findings** (fill `oracle_id` with one of these when a row reports that defect):\n\n");
                for f in expected {
                    let at = match (&f.file, f.line) {
                        (Some(file), Some(line)) => format!(" ({file}:{line})"),
                        (Some(file), None) => format!(" ({file})"),
                        _ => String::new(),
                    };
                    let _ = writeln!(out, "- `{}`{at}: {}", f.id, f.description.trim());
                }
                out.push('\n');
            }
        }
        let _ = write!(
            out,
            "`{}` after the change (line numbers as findings use them):\n\n```\n{}```\n\n<details><summary>before the change</summary>\n\n```\n{}```\n\n</details>\n",
            case.source.path,
            numbered(&case.source.after),
            numbered(&case.source.before)
        );
    }
    out
}

fn readme_text(experiment: &str, rows: usize) -> String {
    format!(
        "# Adjudication sheet: {experiment}\n\n\
`{SHEET_FILE}` has {rows} rows: each distinct finding a reviewer reported on a case, in a shuffled order, with nothing\n\
that says which strategy, model or repeat reported it. `{CASES_FILE}` shows each case (the change and the oracle's\n\
findings). Do not open `{KEY_FILE}`: it maps rows back to runs, and is needed only by `runner adjudicate import`.\n\n\
For every row, fill `disposition` and, where it asks for one, `oracle_id`:\n\n\
| disposition | when | oracle_id |\n\
|---|---|---|\n\
| `verified` (or `found`) | the row reports that oracle finding: the same defect, at its place or another line | the oracle id, e.g. `F03` (required) |\n\
| `partial` | the same place with part of the defect, or the opposite conclusion | the oracle id (required) |\n\
| `false_positive` (or `rejected`) | not a real problem, or not worth a comment | empty, or a case-scoped id such as `case-06-fp-01` to say two rows are the same false positive |\n\
| `real` | a real defect the oracle lacks (verify it; add it to the oracle later) | empty or an id of your choice |\n\
| `unresolved` | you cannot decide | empty or an id of your choice |\n\n\
`note` is free text. Then:\n\n\
```\nrunner adjudicate import {SHEET_FILE} --key {KEY_FILE} --out captured-results.json\nrunner score captured-results.json --oracle <corpus>/oracle.json\n```\n"
    )
}

/// What `import` produced.
#[derive(Debug, Clone)]
pub struct Imported {
    pub captured: CapturedResults,
    pub adjudication: Adjudication,
    pub rows: usize,
    /// The oracle the sheet was checked against.
    pub oracle: PathBuf,
}

/// What one row became: its seed 002 claim, its seed 003 verdict on an oracle finding (for
/// `found`/`verified` and `partial`), and whether it is a `real` extra.
struct RowClaim {
    claim: Claim,
    verdict: Option<Seed003Verdict>,
    real: bool,
}

/// One filled row.
struct FilledRow {
    line: usize,
    item: String,
    disposition: String,
    oracle_id: String,
    note: String,
}

/// Reads a filled sheet with its key, checks every row, and builds seed 002's captured
/// results (strategies = cells, trials = repeats, cases = subjects) and the per-run record.
pub fn import(sheet_path: &Path, key_path: &Path, oracle_path: Option<&Path>) -> Result<Imported, AdjudicationError> {
    let key_text = crate::bounded::input_text(key_path).map_err(|source| AdjudicationError::Read { path: key_path.to_path_buf(), source })?;
    let key: Key = serde_json::from_str(&key_text).map_err(|e| AdjudicationError::Parse { path: key_path.to_path_buf(), message: e.to_string() })?;
    let oracle_file = match oracle_path {
        Some(p) if p.is_dir() => p.join(oracle::ORACLE_FILE),
        Some(p) => p.to_path_buf(),
        None => key.corpus.join(oracle::ORACLE_FILE),
    };
    let oracle = oracle::load_file(&oracle_file)?;
    let sheet_bytes = crate::bounded::input(sheet_path).map_err(|source| AdjudicationError::Read { path: sheet_path.to_path_buf(), source })?;
    let sheet_label = sheet_path.display().to_string();
    let mut problems = Vec::new();
    if key.version != KEY_VERSION {
        problems.push(format!("`{}`: key version {} is not {KEY_VERSION}", key_path.display(), key.version));
    }
    let checked = sheet::check(&sheet_spec(&key), &sheet_bytes);
    problems.extend(checked.problems.iter().map(|p| if p.line.is_some() { format!("{sheet_label}:{p}") } else { format!("{sheet_label}: {p}") }));
    let mut rows: Vec<FilledRow> = Vec::new();
    for r in &checked.rows {
        let Some(k) = key.items.get(&r.id) else { continue };
        if r.get("case") != k.case {
            problems.push(format!("{sheet_label}:{}: item `{}`: case `{}` does not match the key's `{}`", r.line, r.id, r.get("case"), k.case));
        }
        rows.push(FilledRow {
            line: r.line as usize,
            item: r.id.clone(),
            disposition: r.get("disposition").to_string(),
            oracle_id: r.get("oracle_id").to_string(),
            note: r.get("note").to_string(),
        });
    }

    // Each row becomes a claim (and a seed 003 verdict).
    let catalog: BTreeSet<&str> = oracle.findings.iter().map(|f| f.id.as_str()).collect();
    let mut claims: BTreeMap<String, RowClaim> = BTreeMap::new();
    let mut auto: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut taken: BTreeSet<String> = rows.iter().map(|r| r.oracle_id.clone()).filter(|s| !s.is_empty()).collect();
    for row in &rows {
        let Some(k) = key.items.get(&row.item) else { continue };
        let case = k.case.as_str();
        let at = format!("{sheet_label}:{}: item `{}`", row.line, row.item);
        let expected: Vec<&str> = oracle.case(case).map(|c| c.expected_finding_ids.iter().map(String::as_str).collect()).unwrap_or_default();
        let mut fresh = |kind: &'static str| -> String {
            loop {
                let n = auto.entry((case.to_string(), kind)).or_insert(0);
                *n += 1;
                let id = format!("{case}-{kind}-{:02}", n);
                if taken.insert(id.clone()) {
                    return id;
                }
            }
        };
        let oracle_id = row.oracle_id.as_str();
        let need_oracle = |problems: &mut Vec<String>| -> bool {
            if oracle_id.is_empty() {
                problems.push(format!("{at}: `{}` needs an `oracle_id` ({})", row.disposition, list_or_clean(&expected)));
                false
            } else if !expected.contains(&oracle_id) {
                problems.push(format!("{at}: `{oracle_id}` is not a finding `{case}` expects ({})", list_or_clean(&expected)));
                false
            } else {
                true
            }
        };
        let no_oracle = |problems: &mut Vec<String>| -> bool {
            if catalog.contains(oracle_id) {
                problems.push(format!(
                    "{at}: `{}` cannot name oracle finding `{oracle_id}`; use `verified`/`found` or `partial`, or a case-scoped id",
                    row.disposition
                ));
                false
            } else {
                true
            }
        };
        let claim = match row.disposition.as_str() {
            "verified" | "found" => need_oracle(&mut problems).then(|| RowClaim {
                claim: Claim { id: oracle_id.to_string(), disposition: Disposition::Verified },
                verdict: Some(Seed003Verdict::Found),
                real: false,
            }),
            "partial" => need_oracle(&mut problems).then(|| RowClaim {
                claim: Claim { id: format!("{case}-partial-{oracle_id}"), disposition: Disposition::Unresolved },
                verdict: Some(Seed003Verdict::Partial),
                real: false,
            }),
            "false_positive" | "rejected" => no_oracle(&mut problems).then(|| {
                if !oracle_id.is_empty() && !oracle_id.starts_with(&format!("{case}-")) {
                    problems.push(format!("{at}: false-positive id `{oracle_id}` must be scoped to its case, like `{case}-fp-01`"));
                }
                let id = if oracle_id.is_empty() { fresh("fp") } else { oracle_id.to_string() };
                RowClaim { claim: Claim { id, disposition: Disposition::FalsePositive }, verdict: None, real: false }
            }),
            "real" => no_oracle(&mut problems).then(|| {
                let id = if oracle_id.is_empty() { fresh("real") } else { oracle_id.to_string() };
                RowClaim { claim: Claim { id, disposition: Disposition::Unresolved }, verdict: None, real: true }
            }),
            "unresolved" => no_oracle(&mut problems).then(|| {
                let id = if oracle_id.is_empty() { fresh("unresolved") } else { oracle_id.to_string() };
                RowClaim { claim: Claim { id, disposition: Disposition::Unresolved }, verdict: None, real: false }
            }),
            // An empty or unknown disposition is reported by the sheet check.
            _ => None,
        };
        if let Some(c) = claim {
            claims.insert(row.item.clone(), c);
        }
    }
    if !problems.is_empty() {
        return Err(AdjudicationError::Invalid { path: sheet_path.to_path_buf(), problems });
    }

    // Back from rows to runs.
    let mut per_run: Vec<Vec<(String, &RowClaim)>> = vec![Vec::new(); key.runs.len()];
    for (item, k) in &key.items {
        let Some(c) = claims.get(item) else { continue };
        for &(run, _) in &k.occurrences {
            if let Some(list) = per_run.get_mut(run) {
                list.push((item.clone(), c));
            }
        }
    }
    let rows_by_item: BTreeMap<&str, &FilledRow> = rows.iter().map(|r| (r.item.as_str(), r)).collect();
    let trial = |repeat: u32| format!("trial-{repeat:02}");
    let mut strategies: Vec<Strategy> = key.cells.iter().map(|c| Strategy { name: c.clone(), runs: Vec::new() }).collect();
    let mut adjudicated = Vec::new();
    for (index, run) in key.runs.iter().enumerate() {
        if !run.submitted {
            continue;
        }
        let list = &per_run[index];
        // A verified oracle id wins over a partial claim on it in the same run.
        let verified: BTreeSet<&str> = list.iter().filter(|(_, c)| c.claim.disposition == Disposition::Verified).map(|(_, c)| c.claim.id.as_str()).collect();
        let mut run_claims: Vec<Claim> = list.iter().map(|(_, c)| c.claim.clone()).collect();
        run_claims.sort();
        run_claims.dedup();
        let expected: Vec<String> = oracle.case(&run.case).map(|c| c.expected_finding_ids.clone()).unwrap_or_default();
        let mut verdicts: BTreeMap<String, Seed003Verdict> = expected.iter().map(|id| (id.clone(), Seed003Verdict::Missed)).collect();
        let (mut real, mut rejected) = (0, 0);
        let mut reported = Vec::new();
        for (item, c) in list {
            match c.verdict {
                Some(v) => {
                    let oracle_id = rows_by_item.get(item.as_str()).map(|r| r.oracle_id.clone()).unwrap_or_default();
                    if let Some(slot) = verdicts.get_mut(&oracle_id) {
                        *slot = (*slot).min(v);
                    }
                }
                None if c.real => real += 1,
                None if c.claim.disposition == Disposition::FalsePositive => rejected += 1,
                None => {}
            }
            let occurrences = key.items.get(item).map(|k| k.occurrences.clone()).unwrap_or_default();
            let finding = occurrences.iter().find(|(r, _)| *r == index).and_then(|(_, f)| run.findings.get(*f).cloned()).unwrap_or_default();
            let row = rows_by_item.get(item.as_str());
            reported.push(AdjudicatedFinding {
                item: item.clone(),
                finding,
                disposition: row.map(|r| r.disposition.clone()).unwrap_or_default(),
                claim: c.claim.clone(),
                note: row.map(|r| r.note.clone()).unwrap_or_default(),
            });
        }
        run_claims.retain(|c| !(c.disposition == Disposition::Unresolved && verified.iter().any(|v| c.id == format!("{}-partial-{v}", run.case))));
        adjudicated.push(AdjudicatedRun {
            cell: run.cell.clone(),
            repeat: run.repeat,
            case: run.case.clone(),
            reported,
            oracle: verdicts,
            real_extras: real,
            rejected_extras: rejected,
        });
        if let Some(s) = strategies.iter_mut().find(|s| s.name == run.cell) {
            s.runs.push(CapturedRun {
                case_id: run.case.clone(),
                trial_id: trial(run.repeat),
                complete: run.complete,
                findings: run_claims,
                metrics: run.metrics.clone(),
            });
        }
    }
    let captured =
        CapturedResults { version: 1, plan: CapturePlan { case_ids: key.cases.clone(), trial_ids: (1..=key.repeats).map(trial).collect() }, strategies };
    let problems = score::check(&captured, &oracle);
    if !problems.is_empty() {
        return Err(AdjudicationError::Invalid { path: sheet_path.to_path_buf(), problems });
    }
    let method = match &key.filled_by {
        Some(rule) => format!("machine-adjudicated, not by a person: runner's automatic matcher filled {sheet_label} ({rule})"),
        None => format!("adjudicated by a person: {sheet_label}"),
    };
    let adjudication =
        Adjudication { version: 1, method, sheet: sheet_label, key: key_path.display().to_string(), experiment: key.experiment.clone(), runs: adjudicated };
    Ok(Imported { captured, adjudication, rows: rows.len(), oracle: oracle_file })
}

/// The dispositions a row may carry: seed 002's, then seed 003's.
pub const DISPOSITIONS: [&str; 7] = ["verified", "false_positive", "unresolved", "found", "partial", "real", "rejected"];

/// The checks an adjudication sheet gets: `item`, `case`, `disposition` and `oracle_id` are
/// required, the export's other columns optional.
fn sheet_spec(key: &Key) -> Spec {
    let columns = SHEET_COLUMNS
        .iter()
        .map(|&name| match name {
            "item" => Column::new(name, Rule::Id, true),
            "disposition" => Column::new(name, Rule::Label { allowed: DISPOSITIONS.iter().map(|d| d.to_string()).collect(), required: true }, true),
            "case" | "oracle_id" => Column::new(name, Rule::Text, true),
            _ => Column::new(name, Rule::Text, false),
        })
        .collect();
    Spec { columns, ids: key.items.keys().cloned().collect() }
}

fn list_or_clean(expected: &[&str]) -> String {
    if expected.is_empty() {
        "a clean case expects none".into()
    } else {
        format!("expected: {}", expected.iter().map(|e| format!("`{e}`")).collect::<Vec<_>>().join(", "))
    }
}

/// Writes the captured results to `out` and the adjudication record beside it.
pub fn write_imported(imported: &Imported, out: &Path) -> Result<Vec<PathBuf>, AdjudicationError> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| AdjudicationError::Write { path: parent.to_path_buf(), source })?;
    }
    let record = score::adjudication_path(out);
    let encode = |v: serde_json::Result<String>, path: &Path| v.map_err(|e| AdjudicationError::Parse { path: path.to_path_buf(), message: e.to_string() });
    write_file(out, &(encode(serde_json::to_string_pretty(&imported.captured), out)? + "\n"))?;
    write_file(&record, &(encode(serde_json::to_string_pretty(&imported.adjudication), &record)? + "\n"))?;
    Ok(vec![out.to_path_buf(), record])
}

#[cfg(test)]
mod tests;
