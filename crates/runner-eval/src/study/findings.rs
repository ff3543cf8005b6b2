//! Seed 000's finding studies H7 (suggestion quality) and H8 (severity calibration): a blind
//! sheet sampled from an experiment's cached findings, and the import that checks it and
//! computes the seed's analysis.
//!
//! Sampling: a sheet row is a distinct finding of one cell (identical findings of a cell's
//! repeats share a row; for H7 only findings with a suggestion). Rows are grouped in strata by
//! (cell, severity); each stratum is shuffled with the seed, then strata give one row each in
//! turn until the sample size is reached (equal allocation, capped by what a stratum holds), so
//! every cell and every severity is represented. The sheet's order is a second seeded shuffle;
//! it never shows the cell, model, reviewer or repeat — those are in the key, kept apart.
//!
//! Analysis: H7, per cell, the distribution of `correct_safe | partial | wrong | harmful` and
//! the shares correct_safe and harmful with 95 % Wilson intervals; H8, per cell, the
//! misclassification rate (`too_high` + `too_low` over all) with its Wilson interval, and the
//! confusion matrix reported severity × the rater's severity (the suggested one, or the
//! reported one when `correct`).

use super::adjudication::{write_file, AdjudicationError, RowContent, SheetSource};
use super::sheet::{self, Column, Rule, Spec};
use crate::agreement::{cohen_kappa, fleiss_kappa, majority_vote, percent_agreement, Vote as AgreementVote};
use crate::cache::Lookup;
use crate::finding::Severity;
use crate::stats::wilson_interval;
use crate::subject::corpus::{self, CaseSource};
use crate::subject::TargetSpec;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const SHEET_FILE: &str = "sheet.csv";
pub const KEY_FILE: &str = "key.json";
pub const README_FILE: &str = "README.md";
pub const RESULT_JSON: &str = "result.json";
pub const RESULT_MD: &str = "result.md";
pub const KEY_VERSION: u32 = 1;
/// Seed 000 asks for 30–50 findings; the default sample is 40.
pub const DEFAULT_SAMPLE: usize = 40;

/// The columns every finding-study sheet shows.
/// `context` is the code around the finding's line (older sheets without it still import).
const SHOWN: [&str; 9] = ["item", "case", "file", "line", "context", "severity", "category", "message", "suggestion"];
/// Lines shown before and after a finding's line (or range) in `context`.
pub const CONTEXT_LINES: u32 = 2;
/// At most this many lines of a long range are shown.
const CONTEXT_MAX: usize = 12;
pub const H1_LABELS: [&str; 4] = ["actionable", "false_positive", "wrong_suggestion", "out_of_scope"];
pub const H7_LABELS: [&str; 4] = ["correct_safe", "partial", "wrong", "harmful"];
pub const H8_LABELS: [&str; 3] = ["correct", "too_high", "too_low"];
pub const H4_LABELS: [&str; 2] = ["valid", "invalid"];

/// Which study a sheet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Study {
    /// Blind triage.
    H1,
    /// Suggestion quality.
    H7,
    /// Severity calibration.
    H8,
    /// Human validity of the findings only one tool reported.
    H4,
}

impl Study {
    fn name(self) -> &'static str {
        match self {
            Self::H1 => "H1 blind triage",
            Self::H7 => "H7 suggestion quality",
            Self::H8 => "H8 severity calibration",
            Self::H4 => "H4 validity of unique findings",
        }
    }
    /// The label columns a rater fills, after the shown ones.
    fn label_columns(self) -> &'static [&'static str] {
        match self {
            Self::H1 => &["label", "note", "rater"],
            Self::H7 => &["quality", "note", "rater"],
            Self::H8 => &["verdict", "suggested_severity", "note", "rater"],
            Self::H4 => &["validity", "note", "rater"],
        }
    }
    fn spec(self, key: &StudyKey) -> Spec {
        let strings = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut columns: Vec<Column> =
            SHOWN.iter().map(|&c| if c == "item" { Column::new(c, Rule::Id, true) } else { Column::new(c, Rule::Text, false) }).collect();
        match self {
            Self::H1 => columns.push(Column::new("label", Rule::Label { allowed: strings(&H1_LABELS), required: true }, true)),
            Self::H4 => columns.push(Column::new("validity", Rule::Label { allowed: strings(&H4_LABELS), required: true }, true)),
            Self::H7 => columns.push(Column::new("quality", Rule::Label { allowed: strings(&H7_LABELS), required: true }, true)),
            Self::H8 => {
                columns.push(Column::new("verdict", Rule::Label { allowed: strings(&H8_LABELS), required: true }, true));
                let severities: Vec<String> = Severity::ALL.iter().map(|s| s.as_str().to_string()).collect();
                columns.push(Column::new(
                    "suggested_severity",
                    Rule::Suggested { allowed: severities, on: "verdict".into(), none_when: "correct".into() },
                    true,
                ));
            }
        }
        columns.push(Column::new("note", Rule::Text, false));
        columns.push(Column::new("rater", Rule::Rater, true));
        Spec { columns, ids: key.items.keys().cloned().collect() }
    }
}

/// What a finding-study sheet's anonymous rows stand for. Kept from the rater.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyKey {
    pub version: u32,
    pub study: Study,
    pub experiment: String,
    pub manifest: String,
    pub seed: u64,
    /// The sample size asked for, and how many distinct findings were eligible.
    pub sample: usize,
    pub eligible: usize,
    pub cells: Vec<String>,
    pub items: BTreeMap<String, StudyItem>,
    /// H4: the axis whose values are the tools compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axis: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyItem {
    pub cell: String,
    pub case: String,
    pub severity: String,
    /// (repeat, stet finding id) of each run that reported the finding.
    pub occurrences: Vec<(u32, String)>,
}

/// What `export` wrote.
#[derive(Debug, Clone)]
pub struct Exported {
    pub files: Vec<PathBuf>,
    pub rows: usize,
    pub eligible: usize,
}

/// A sampling candidate: its cell, what the row shows, and (repeat, finding id) per run.
type Candidate = (String, RowContent, Vec<(u32, String)>);

/// Distinct findings: (cell, what the row shows) → (repeat, stet id) of each run that reported it.
type Distinct = BTreeMap<(String, RowContent), Vec<(u32, String)>>;

/// Exports a blind H1, H7 or H8 sheet of `sample` findings of `source`'s cached runs into `out`.
pub fn export(source: &SheetSource<'_>, study: Study, manifest_label: &str, out: &Path, seed: u64, sample: usize) -> Result<Exported, AdjudicationError> {
    let mut distinct: Distinct = BTreeMap::new();
    for run in &source.runs {
        if let Lookup::Hit { findings, .. } = source.cache.lookup(run.key) {
            for f in findings.iter().filter(|f| study != Study::H7 || f.suggestion.as_deref().is_some_and(|s| !s.trim().is_empty())) {
                distinct.entry((run.cell.to_string(), RowContent::of(run.case, f))).or_default().push((run.repeat, f.id.clone()));
            }
        }
    }
    write_sample(source, study, manifest_label, out, seed, sample, distinct, None)
}

/// Exports a blind H4 sheet: the findings each value of `axis` (each tool) reported that no
/// other value's run of the same case, repeat and other axes matched (`rule`, as the overlap
/// analysis's "found by one value only"), sampled as the other studies are.
#[allow(clippy::too_many_arguments)]
pub fn export_unique(
    source: &SheetSource<'_>,
    axis: &str,
    axis_order: &[String],
    rule: &crate::analysis::spec::MatchRule,
    manifest_label: &str,
    out: &Path,
    seed: u64,
    sample: usize,
) -> Result<Exported, AdjudicationError> {
    // (other axes, case, repeat) → value → (cell, findings).
    type Slot = BTreeMap<String, (String, crate::cache::Findings)>;
    let mut slots: BTreeMap<(String, String, u32), Slot> = BTreeMap::new();
    for run in &source.runs {
        let Some(value) = run.matrix_cell.get(axis).map(|v| v.render()) else { continue };
        if let Lookup::Hit { findings, .. } = source.cache.lookup(run.key) {
            let slot = (run.matrix_cell.id_without(axis, axis_order), run.case.to_string(), run.repeat);
            slots.entry(slot).or_default().insert(value, (run.cell.to_string(), findings));
        }
    }
    let mut distinct: Distinct = BTreeMap::new();
    for ((_, case, repeat), by_value) in &slots {
        if by_value.len() < 2 {
            continue;
        }
        for (value, (cell, findings)) in by_value {
            let others: Vec<&crate::finding::Finding> = by_value.iter().filter(|(v, _)| *v != value).flat_map(|(_, (_, f))| f.iter()).collect();
            for f in findings.iter().filter(|f| !others.iter().any(|g| crate::analysis::matching::matcher::fuzzy_match(f, g, rule))) {
                distinct.entry((cell.clone(), RowContent::of(case, f))).or_default().push((*repeat, f.id.clone()));
            }
        }
    }
    write_sample(source, Study::H4, manifest_label, out, seed, sample, distinct, Some(axis.to_string()))
}

#[allow(clippy::too_many_arguments)]
fn write_sample(
    source: &SheetSource<'_>,
    study: Study,
    manifest_label: &str,
    out: &Path,
    seed: u64,
    sample: usize,
    distinct: Distinct,
    axis: Option<String>,
) -> Result<Exported, AdjudicationError> {
    let eligible = distinct.len();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut strata: BTreeMap<(String, String), Vec<Candidate>> = BTreeMap::new();
    for ((cell, row), occ) in distinct {
        strata.entry((cell.clone(), row.severity.clone())).or_default().push((cell, row, occ));
    }
    for rows in strata.values_mut() {
        rows.shuffle(&mut rng);
        rows.reverse(); // taken from the back with `pop`, in shuffled order
    }
    let mut chosen = Vec::new();
    while chosen.len() < sample && strata.values().any(|s| !s.is_empty()) {
        for rows in strata.values_mut() {
            if chosen.len() < sample {
                if let Some(r) = rows.pop() {
                    chosen.push(r);
                }
            }
        }
    }
    chosen.shuffle(&mut rng);

    let width = chosen.len().to_string().len().max(3);
    // The code around each line, from the case's source after the change (corpus targets; a
    // repository target's sheet leaves `context` empty).
    let sources: BTreeMap<String, CaseSource> = match source.target {
        TargetSpec::Corpus { dir, .. } => corpus::load_public_cases(dir)?.into_iter().map(|c| (c.id, c.source)).collect(),
        _ => BTreeMap::new(),
    };
    let mut header: Vec<&str> = SHOWN.to_vec();
    header.extend(study.label_columns());
    let mut lines = Vec::new();
    let mut items = BTreeMap::new();
    for (i, (cell, row, occ)) in chosen.into_iter().enumerate() {
        let item = format!("S{:0width$}", i + 1);
        let context = sources.get(&row.case).map(|s| code_context(s, &row.file, &row.line)).unwrap_or_default();
        let shown = [&item, &row.case, &row.file, &row.line, &context, &row.severity, &row.category, &row.message, &row.suggestion];
        lines.push(shown.iter().map(|s| s.to_string()).chain(study.label_columns().iter().map(|_| String::new())).collect());
        items.insert(item, StudyItem { cell, case: row.case.clone(), severity: row.severity.clone(), occurrences: occ });
    }
    let key = StudyKey {
        version: KEY_VERSION,
        study,
        experiment: source.experiment.to_string(),
        manifest: manifest_label.to_string(),
        seed,
        sample,
        eligible,
        cells: source.cells.clone(),
        items,
        axis,
    };
    std::fs::create_dir_all(out).map_err(|source| AdjudicationError::Write { path: out.to_path_buf(), source })?;
    let files = [out.join(SHEET_FILE), out.join(KEY_FILE), out.join(README_FILE)];
    let text = sheet::write(&header, &lines).map_err(|e| AdjudicationError::Parse { path: files[0].clone(), message: e.to_string() })?;
    write_file(&files[0], &text)?;
    let key_text = serde_json::to_string_pretty(&key).map_err(|e| AdjudicationError::Parse { path: files[1].clone(), message: e.to_string() })?;
    write_file(&files[1], &(key_text + "\n"))?;
    write_file(&files[2], &instructions(study, &key))?;
    Ok(Exported { files: files.to_vec(), rows: lines.len(), eligible })
}

/// Lines around `line` (`12` or `12-14`) of the source after the change, each `NN: text`, when
/// `file` is the case's file and the line lies in it; otherwise empty.
pub fn code_context(source: &CaseSource, file: &str, line: &str) -> String {
    if source.path != file {
        return String::new();
    }
    let mut ends = line.split('-').map(|n| n.trim().parse::<u32>().ok());
    let (Some(Some(start)), end) = (ends.next(), ends.next()) else { return String::new() };
    let end = end.flatten().unwrap_or(start).max(start);
    let lines: Vec<&str> = source.after.lines().collect();
    if start == 0 || start as usize > lines.len() {
        return String::new();
    }
    let from = start.saturating_sub(CONTEXT_LINES).max(1);
    let to = (end + CONTEXT_LINES).min(lines.len() as u32);
    let width = to.to_string().len();
    (from..=to).take(CONTEXT_MAX).map(|n| format!("{n:>width$}: {}", lines[n as usize - 1].trim_end())).collect::<Vec<_>>().join("\n")
}

fn instructions(study: Study, key: &StudyKey) -> String {
    let labels = match study {
        Study::H1 => "Fill `label` for each row: what would you do with this finding in review?\n\n\
| `label` | meaning |\n|---|---|\n| `actionable` | a real issue in the change, worth acting on as the message (and suggestion, if any) says |\n\
| `false_positive` | there is no such issue (the code is fine, or the message describes nothing real) |\n\
| `wrong_suggestion` | the issue is real but the suggested fix is wrong |\n| `out_of_scope` | real, perhaps, but not about this change (untouched code, a matter for another review) |\n\
\nWith several raters, each labels a copy of the sheet alone and writes their name in `rater`; import all the copies at once.\n",
        Study::H7 => "Fill `quality` for each row: would applying the `suggestion` fix the issue the message names?\n\n\
| `quality` | meaning |\n|---|---|\n| `correct_safe` | it fixes the issue and breaks nothing |\n| `partial` | it helps but leaves part of the issue, or needs more work |\n\
| `wrong` | it does not fix the issue (or there is no issue to fix) |\n| `harmful` | applying it introduces a defect or makes things worse |\n",
        Study::H4 => "Each row is a finding that only one of the tools compared reported (no other tool's run of the case matched it). \
Fill `validity` for each row: is it a real problem of the change, at or near its line?\n\n\
| `validity` | meaning |\n|---|---|\n| `valid` | a real problem of the change |\n| `invalid` | no such problem (the code is fine, or the message describes nothing real) |\n",
        Study::H8 => "Fill `verdict` for each row: is the reported `severity` (error > warning > info > nitpick) what you would give it?\n\n\
| `verdict` | `suggested_severity` |\n|---|---|\n| `correct` | empty |\n| `too_high` | the severity you would give (lower) |\n| `too_low` | the severity you would give (higher) |\n",
    };
    format!(
        "# {} sheet: {}\n\n{} rows sampled from {} eligible findings (seed {}). Read each finding against the case's diff \
(the `case` column names it in the corpus; `context` shows the code around the line after the change). {labels}\n`note` is free text; `rater` names who labelled the row. \
Do not open `{KEY_FILE}` until you are done. Then:\n\n```\nrunner study import {SHEET_FILE} --key {KEY_FILE} --out result\n```\n",
        study.name(),
        key.experiment,
        key.items.len(),
        key.eligible,
        key.seed
    )
}

/// A share with its 95 % Wilson interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Share {
    pub count: u64,
    pub of: u64,
    pub rate: Option<f64>,
    pub wilson95: Option<(f64, f64)>,
}

impl Share {
    fn new(count: u64, of: u64) -> Self {
        Self { count, of, rate: (of > 0).then(|| count as f64 / of as f64), wilson95: wilson_interval(count, of, 0.95) }
    }
    fn render(&self) -> String {
        match (self.rate, self.wilson95) {
            (Some(r), Some((lo, hi))) => format!("{}/{} = {:.1} % [{:.1}, {:.1}]", self.count, self.of, r * 100.0, lo * 100.0, hi * 100.0),
            _ => format!("{}/{}", self.count, self.of),
        }
    }
}

/// One cell's (or all cells') result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellResult {
    pub cell: String,
    pub n: u64,
    /// Label → count, in the study's label order.
    pub labels: BTreeMap<String, u64>,
    /// H7: correct_safe and harmful; H8: misclassified (too_high + too_low).
    pub shares: BTreeMap<String, Share>,
}

/// H1's agreement between raters, computed on their own labels before any aggregation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RaterAgreement {
    /// `Cohen's κ` (two raters) or `Fleiss' κ` (three or more).
    pub method: String,
    pub raters: usize,
    pub items: usize,
    /// None where κ is undefined (every rating the same label).
    pub kappa: Option<f64>,
    /// Observed agreement: p_o (Cohen) or P̄ (Fleiss).
    pub observed: Option<f64>,
    /// Chance agreement: p_e (Cohen) or P̄_e (Fleiss).
    pub chance: Option<f64>,
}

/// H1's aggregation rule, as the report states it.
pub const H1_AGGREGATION: &str = "each finding takes the label most of its raters gave (a plurality); \
a finding whose top labels tie is `tied`: counted in n, not as actionable (precision's denominator, not its numerator)";

/// What `import` computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyResult {
    pub study: Study,
    pub experiment: String,
    pub sheet: String,
    pub raters: Vec<String>,
    /// Per cell in the key's order, then `all`.
    pub cells: Vec<CellResult>,
    /// H8: reported severity → the rater's severity → count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confusion: Option<BTreeMap<String, BTreeMap<String, u64>>>,
    /// H1 with several raters (one sheet each): κ before aggregation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<RaterAgreement>,
    /// H1: how several raters' labels became one per finding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<String>,
    /// H1 with several raters: each rater's own precision over every finding, before aggregation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_rater: Vec<(String, Share)>,
    /// H1: the finding-level labels after aggregation (item → label, `tied` for a tie), so
    /// other analyses (H5, H6) read the same labels the tables count.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub decided: BTreeMap<String, String>,
}

/// The label H1 gives a finding whose raters tie.
pub const TIED: &str = "tied";

/// Reads a filled sheet with its key, checks every row, and computes the study's analysis.
pub fn import(sheet_path: &Path, key_path: &Path) -> Result<StudyResult, AdjudicationError> {
    import_sheets(&[sheet_path.to_path_buf()], key_path)
}

/// One checked sheet: its label as reported and its rows.
struct Read {
    label: String,
    rows: Vec<sheet::Row>,
}

/// Reads a study's key.
pub fn read_key(key_path: &Path) -> Result<StudyKey, AdjudicationError> {
    let key_text = crate::bounded::input_text(key_path).map_err(|source| AdjudicationError::Read { path: key_path.to_path_buf(), source })?;
    serde_json::from_str(&key_text).map_err(|e| AdjudicationError::Parse { path: key_path.to_path_buf(), message: e.to_string() })
}

/// Reads filled sheets with their key — one sheet, or for H1 one per rater, each labelling
/// every row — checks every row of each, and computes the study's analysis.
pub fn import_sheets(sheet_paths: &[PathBuf], key_path: &Path) -> Result<StudyResult, AdjudicationError> {
    let (key, sheets) = read_sheets(sheet_paths, key_path)?;
    Ok(analyse(&key, &sheets))
}

/// What a row of a checked sheet showed and what its rater wrote, for analyses that read the
/// findings' text (H6).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowText {
    pub category: String,
    pub message: String,
    /// Each rater's note, in sheet order, empty ones left out.
    pub notes: Vec<String>,
}

/// [`import_sheets`], with each row's text (from the first sheet that has the row).
pub fn import_with_text(sheet_paths: &[PathBuf], key_path: &Path) -> Result<(StudyKey, StudyResult, BTreeMap<String, RowText>), AdjudicationError> {
    let (key, sheets) = read_sheets(sheet_paths, key_path)?;
    let result = analyse(&key, &sheets);
    let mut text: BTreeMap<String, RowText> = BTreeMap::new();
    for s in &sheets {
        for r in &s.rows {
            let t = text.entry(r.id.clone()).or_insert_with(|| RowText {
                category: r.get("category").to_string(),
                message: r.get("message").to_string(),
                notes: Vec::new(),
            });
            if !r.get("note").is_empty() {
                t.notes.push(r.get("note").to_string());
            }
        }
    }
    Ok((key, result, text))
}

/// Reads the key and every sheet, each checked; all problems at once.
fn read_sheets(sheet_paths: &[PathBuf], key_path: &Path) -> Result<(StudyKey, Vec<Read>), AdjudicationError> {
    let key = read_key(key_path)?;
    let mut problems = Vec::new();
    if key.version != KEY_VERSION {
        problems.push(format!("`{}`: key version {} is not {KEY_VERSION}", key_path.display(), key.version));
    }
    let Some(first) = sheet_paths.first() else {
        return Err(AdjudicationError::Invalid { path: key_path.to_path_buf(), problems: vec!["no sheet to import: name the filled sheet".into()] });
    };
    if sheet_paths.len() > 1 && key.study != Study::H1 {
        problems.push(format!("{} sheets given: only H1 takes several (one per rater); import each {} sheet on its own", sheet_paths.len(), key.study.name()));
    }
    let spec = key.study.spec(&key);
    let mut sheets = Vec::new();
    for path in sheet_paths {
        let bytes = crate::bounded::input(path).map_err(|source| AdjudicationError::Read { path: path.to_path_buf(), source })?;
        let label = path.display().to_string();
        let checked = sheet::check(&spec, &bytes);
        problems.extend(checked.problems.iter().map(|p| if p.line.is_some() { format!("{label}:{p}") } else { format!("{label}: {p}") }));
        for r in &checked.rows {
            if let Some(item) = key.items.get(&r.id) {
                if !r.get("severity").is_empty() && r.get("severity") != item.severity {
                    problems.push(format!(
                        "{label}:{}: item `{}`: column `severity`: `{}` is not the exported `{}`",
                        r.line,
                        r.id,
                        r.get("severity"),
                        item.severity
                    ));
                }
            }
        }
        sheets.push(Read { label, rows: checked.rows });
    }
    // Several sheets: one rater each, and no rater twice.
    if sheets.len() > 1 && key.study == Study::H1 {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for s in &sheets {
            let raters = sheet_rater(s);
            if raters.len() > 1 {
                problems.push(format!(
                    "{}: column `rater`: the sheet names {} raters ({}); give each rater a sheet of their own",
                    s.label,
                    raters.len(),
                    raters.join(", ")
                ));
            }
            for r in raters {
                if let Some(other) = seen.insert(r.clone(), s.label.clone()) {
                    problems.push(format!("{}: column `rater`: `{r}` also labelled `{other}`; each rater fills one sheet", s.label));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(AdjudicationError::Invalid { path: first.clone(), problems });
    }
    Ok((key, sheets))
}

/// The distinct raters a sheet names.
fn sheet_rater(s: &Read) -> Vec<String> {
    let mut r: Vec<String> = s.rows.iter().map(|r| r.get("rater").to_string()).filter(|r| !r.is_empty()).collect();
    r.sort();
    r.dedup();
    r
}

fn analyse(key: &StudyKey, sheets: &[Read]) -> StudyResult {
    let study = key.study;
    let mut raters: Vec<String> = sheets.iter().flat_map(|s| s.rows.iter().map(|r| r.get("rater").to_string())).collect();
    raters.sort();
    raters.dedup();
    let label = sheets.iter().map(|s| s.label.clone()).collect::<Vec<_>>().join(", ");
    let mut groups: Vec<String> = key.cells.clone();
    groups.push("all".into());
    let in_cell = |cell: &str, id: &str| cell == "all" || key.items.get(id).is_some_and(|i| i.cell == cell);

    if study == Study::H1 {
        // Each item's labels, one per sheet, in sheet order.
        let mut ratings: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in sheets {
            for r in &s.rows {
                ratings.entry(r.id.clone()).or_default().push(r.get("label").to_string());
            }
        }
        let agreement = (sheets.len() > 1).then(|| {
            let items: Vec<&Vec<String>> = ratings.values().filter(|v| v.len() == sheets.len()).collect();
            if sheets.len() == 2 {
                let a: Vec<&str> = items.iter().map(|v| v[0].as_str()).collect();
                let b: Vec<&str> = items.iter().map(|v| v[1].as_str()).collect();
                let k = cohen_kappa(&a, &b);
                let observed = k.as_ref().map(|k| k.p_o).or_else(|| percent_agreement(&a, &b));
                RaterAgreement {
                    method: "Cohen's κ".into(),
                    raters: 2,
                    items: items.len(),
                    kappa: k.as_ref().map(|k| k.kappa),
                    observed,
                    chance: k.as_ref().map(|k| k.p_e),
                }
            } else {
                let rows: Vec<Vec<&str>> = items.iter().map(|v| v.iter().map(String::as_str).collect()).collect();
                let k = fleiss_kappa(&rows);
                RaterAgreement {
                    method: "Fleiss' κ".into(),
                    raters: sheets.len(),
                    items: items.len(),
                    kappa: k.as_ref().map(|k| k.kappa),
                    observed: k.as_ref().map(|k| k.p_bar),
                    chance: k.as_ref().map(|k| k.p_e),
                }
            }
        });
        let decided: BTreeMap<String, String> = ratings
            .iter()
            .map(|(id, labels)| {
                let label = match majority_vote(labels) {
                    AgreementVote::Winner { label, .. } => label,
                    AgreementVote::Tie { .. } | AgreementVote::NoVotes => TIED.to_string(),
                };
                (id.clone(), label)
            })
            .collect();
        let cells = groups
            .iter()
            .map(|cell| {
                let labels: Vec<&str> = decided.iter().filter(|(id, _)| in_cell(cell, id)).map(|(_, l)| l.as_str()).collect();
                let n = labels.len() as u64;
                let count = |l: &str| labels.iter().filter(|x| **x == l).count() as u64;
                let counts: BTreeMap<String, u64> = H1_LABELS.iter().chain(std::iter::once(&TIED)).map(|l| (l.to_string(), count(l))).collect();
                CellResult { cell: cell.clone(), n, labels: counts, shares: BTreeMap::from([("precision".to_string(), Share::new(count("actionable"), n))]) }
            })
            .collect();
        let per_rater = if sheets.len() > 1 {
            sheets
                .iter()
                .map(|s| {
                    let name = sheet_rater(s).join(", ");
                    let actionable = s.rows.iter().filter(|r| r.get("label") == "actionable").count() as u64;
                    (name, Share::new(actionable, s.rows.len() as u64))
                })
                .collect()
        } else {
            Vec::new()
        };
        let aggregation =
            if sheets.len() > 1 { H1_AGGREGATION.to_string() } else { "one sheet: each finding's label is its one rating (no aggregation)".to_string() };
        return StudyResult {
            study,
            experiment: key.experiment.clone(),
            sheet: label,
            raters,
            cells,
            confusion: None,
            agreement,
            aggregation: Some(aggregation),
            per_rater,
            decided,
        };
    }

    let rows: Vec<&sheet::Row> = sheets.iter().flat_map(|s| s.rows.iter()).collect();
    let (label_column, labels): (&str, &[&str]) = match study {
        Study::H7 => ("quality", &H7_LABELS),
        Study::H4 => ("validity", &H4_LABELS),
        _ => ("verdict", &H8_LABELS),
    };
    let cells = groups
        .iter()
        .map(|cell| {
            let rows: Vec<&&sheet::Row> = rows.iter().filter(|r| in_cell(cell, &r.id)).collect();
            let n = rows.len() as u64;
            let count = |l: &str| rows.iter().filter(|r| r.get(label_column) == l).count() as u64;
            let counts: BTreeMap<String, u64> = labels.iter().map(|l| (l.to_string(), count(l))).collect();
            let shares = match study {
                Study::H7 => BTreeMap::from([
                    ("correct_safe".to_string(), Share::new(count("correct_safe"), n)),
                    ("harmful".to_string(), Share::new(count("harmful"), n)),
                ]),
                Study::H4 => BTreeMap::from([("valid".to_string(), Share::new(count("valid"), n))]),
                _ => BTreeMap::from([("misclassified".to_string(), Share::new(count("too_high") + count("too_low"), n))]),
            };
            CellResult { cell: cell.clone(), n, labels: counts, shares }
        })
        .collect();
    let confusion = (study == Study::H8).then(|| {
        let mut m: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for r in &rows {
            let Some(item) = key.items.get(&r.id) else { continue };
            let human = if r.get("verdict") == "correct" { item.severity.clone() } else { r.get("suggested_severity").to_string() };
            *m.entry(item.severity.clone()).or_default().entry(human).or_insert(0) += 1;
        }
        m
    });
    StudyResult {
        study,
        experiment: key.experiment.clone(),
        sheet: label,
        raters,
        cells,
        confusion,
        agreement: None,
        aggregation: None,
        per_rater: Vec::new(),
        decided: BTreeMap::new(),
    }
}

fn fmt3(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into())
}

impl StudyResult {
    /// The result as Markdown.
    pub fn to_markdown(&self) -> String {
        if self.study == Study::H1 {
            return self.h1_markdown();
        }
        let mut s = format!("# {}: {}\n\nSheet `{}`, labelled by {}.\n\n", self.study.name(), self.experiment, self.sheet, self.raters.join(", "));
        let (labels, shares): (&[&str], &[&str]) = match self.study {
            Study::H7 => (&H7_LABELS, &["correct_safe", "harmful"]),
            Study::H4 => (&H4_LABELS, &["valid"]),
            _ => (&H8_LABELS, &["misclassified"]),
        };
        let _ = writeln!(s, "| cell | n | {} | {} |", labels.join(" | "), shares.iter().map(|h| format!("{h} (95 % Wilson)")).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(s, "|---|---:|{}{}", "---:|".repeat(labels.len()), "---|".repeat(shares.len()));
        for c in &self.cells {
            let counts: Vec<String> = labels.iter().map(|l| c.labels.get(*l).copied().unwrap_or(0).to_string()).collect();
            let rendered: Vec<String> = shares.iter().map(|h| c.shares.get(*h).map(Share::render).unwrap_or_default()).collect();
            let _ = writeln!(s, "| {} | {} | {} | {} |", c.cell, c.n, counts.join(" | "), rendered.join(" | "));
        }
        if let Some(m) = &self.confusion {
            let order: Vec<&str> = Severity::ALL.iter().map(|v| v.as_str()).collect();
            let _ = writeln!(s, "\nConfusion matrix, all cells: reported severity (rows) × the rater's severity (columns).\n");
            let _ = writeln!(s, "| reported \\ rater | {} |", order.join(" | "));
            let _ = writeln!(s, "|---|{}", "---:|".repeat(order.len()));
            for r in &order {
                let row: Vec<String> = order.iter().map(|c| m.get(*r).and_then(|x| x.get(*c)).copied().unwrap_or(0).to_string()).collect();
                let _ = writeln!(s, "| {r} | {} |", row.join(" | "));
            }
        }
        s
    }
}

impl StudyResult {
    fn h1_markdown(&self) -> String {
        let sheets = if self.per_rater.is_empty() {
            format!("Sheet `{}`, labelled by {}.", self.sheet, self.raters.join(", "))
        } else {
            format!("Sheets {}, one per rater: {}.", self.sheet.split(", ").map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "), self.raters.join(", "))
        };
        let mut s = format!("# {}: {}\n\n{sheets}\n\n", self.study.name(), self.experiment);
        if let Some(a) = &self.agreement {
            let _ = writeln!(
                s,
                "Agreement before aggregation: {} = {} over {} findings rated by all {} raters (observed agreement {}, chance {}).\n",
                a.method,
                fmt3(a.kappa),
                a.items,
                a.raters,
                fmt3(a.observed),
                fmt3(a.chance)
            );
        }
        if let Some(rule) = &self.aggregation {
            let _ = writeln!(s, "Aggregation: {rule}. Precision is the share labelled `actionable`.\n");
        }
        let mut columns: Vec<&str> = H1_LABELS.to_vec();
        if !self.per_rater.is_empty() {
            columns.push(TIED);
        }
        let _ = writeln!(s, "| cell | n | {} | precision (95 % Wilson) |", columns.join(" | "));
        let _ = writeln!(s, "|---|---:|{}---|", "---:|".repeat(columns.len()));
        for c in &self.cells {
            let counts: Vec<String> = columns.iter().map(|l| c.labels.get(*l).copied().unwrap_or(0).to_string()).collect();
            let precision = c.shares.get("precision").map(Share::render).unwrap_or_default();
            let _ = writeln!(s, "| {} | {} | {} | {precision} |", c.cell, c.n, counts.join(" | "));
        }
        if !self.per_rater.is_empty() {
            let _ = writeln!(s, "\nEach rater's own precision over every finding, before aggregation.\n\n| rater | precision (95 % Wilson) |\n|---|---|");
            for (rater, share) in &self.per_rater {
                let _ = writeln!(s, "| {rater} | {} |", share.render());
            }
        }
        s
    }
}

/// Writes `result.json` and `result.md` into `out`.
pub fn write_result(result: &StudyResult, out: &Path) -> Result<Vec<PathBuf>, AdjudicationError> {
    std::fs::create_dir_all(out).map_err(|source| AdjudicationError::Write { path: out.to_path_buf(), source })?;
    let (json, md) = (out.join(RESULT_JSON), out.join(RESULT_MD));
    let text = serde_json::to_string_pretty(result).map_err(|e| AdjudicationError::Parse { path: json.clone(), message: e.to_string() })?;
    write_file(&json, &(text + "\n"))?;
    write_file(&md, &result.to_markdown())?;
    Ok(vec![json, md])
}

#[cfg(test)]
mod tests;
