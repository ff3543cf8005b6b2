//! Seed 003's gold-set loop: extras a person adjudicated `real` become proposed oracle
//! additions (`runner oracle propose`), each a new finding with the reported file, line and
//! message, a new id and its case, in a patch that names the oracle version it applies to and
//! the version it makes (content hashes, so a patch cannot be applied to an oracle that moved).

use crate::analysis::matching::adjudication::{self, Adjudication};
use crate::ground_truth::evalcase;
use crate::ground_truth::oracle::{self, Oracle, OracleFinding};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub const PATCH_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ProposeError {
    #[error(transparent)]
    Record(#[from] adjudication::RecordError),
    #[error(transparent)]
    Oracle(#[from] oracle::OracleError),
    #[error(transparent)]
    EvalCase(#[from] evalcase::EvalCaseError),
    #[error("failed to read `{path}`: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
}

/// Where the oracle came from: a corpus's `oracle.json` or an eval set's `case.md` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OracleKind {
    OracleJson,
    EvalSet,
}

/// A proposed oracle patch (`oracle.patch.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OraclePatch {
    pub version: u32,
    /// The oracle the patch was computed against, as given.
    pub oracle: String,
    pub oracle_kind: OracleKind,
    /// The oracle's version the patch applies to (a content hash of the oracle).
    pub applies_to: String,
    /// The version of the oracle with the additions.
    pub makes: String,
    /// The adjudication record the additions come from.
    pub adjudication: String,
    pub additions: Vec<Addition>,
}

/// One proposed finding: verify it in the code before adding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Addition {
    pub case: String,
    pub finding: OracleFinding,
    /// For an eval set: the line to add to the case's `case.md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_md_line: Option<String>,
    /// Where the report came from: each run that reported it, and the sheet's item.
    pub item: String,
    pub reported_as: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// The loaded oracle and how it was stored.
pub fn load_oracle(path: &Path) -> Result<(Oracle, OracleKind), ProposeError> {
    let is_eval_set = path.is_dir() && !path.join(oracle::ORACLE_FILE).is_file();
    if is_eval_set {
        let cases = evalcase::load_dir(path)?;
        Ok((evalcase::to_oracle(&cases), OracleKind::EvalSet))
    } else {
        Ok((oracle::load_file(path)?, OracleKind::OracleJson))
    }
}

/// The version of an oracle: a blake3 hash of its JSON.
pub fn oracle_version(oracle: &Oracle) -> String {
    let json = serde_json::to_string(oracle).unwrap_or_default();
    format!("blake3:{}", &blake3::hash(json.as_bytes()).to_hex()[..16])
}

/// A sheet row's location and message, by item.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SheetRow {
    pub file: String,
    pub line: Option<u32>,
    pub category: String,
    pub message: String,
}

/// Reads an adjudication sheet's `item`, `file`, `line`, `category` and `message` columns.
pub fn read_sheet(path: &Path) -> Result<BTreeMap<String, SheetRow>, ProposeError> {
    let fail = |message: String| ProposeError::Read { path: path.to_path_buf(), message };
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_path(path).map_err(|e| fail(e.to_string()))?;
    let headers = reader.headers().map_err(|e| fail(e.to_string()))?.clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let Some(item) = col("item") else { return Err(fail("the sheet has no `item` column".into())) };
    let (file, line, category, message) = (col("file"), col("line"), col("category"), col("message"));
    let mut rows = BTreeMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| fail(e.to_string()))?;
        let get = |i: Option<usize>| i.and_then(|i| record.get(i)).map(|s| s.trim().to_string()).unwrap_or_default();
        let id = get(Some(item));
        if id.is_empty() {
            continue;
        }
        rows.insert(id, SheetRow { file: get(file), line: get(line).parse().ok().filter(|l| *l > 0), category: get(category), message: get(message) });
    }
    Ok(rows)
}

/// The path a record names, tried as written and then beside the record.
fn beside(record: &Path, named: &str) -> PathBuf {
    let as_written = PathBuf::from(named);
    if as_written.exists() {
        return as_written;
    }
    let dir = record.parent().unwrap_or(Path::new("."));
    let joined = dir.join(named);
    if joined.exists() {
        return joined;
    }
    as_written.file_name().map(|n| dir.join(n)).filter(|p| p.exists()).unwrap_or(as_written)
}

/// The oracle a record was adjudicated against: the corpus named by its key.
pub fn default_oracle(record_path: &Path, record: &Adjudication) -> Result<PathBuf, ProposeError> {
    let key_path = beside(record_path, &record.key);
    let text = std::fs::read_to_string(&key_path).map_err(|e| ProposeError::Read { path: key_path.clone(), message: e.to_string() })?;
    let key: serde_json::Value = serde_json::from_str(&text).map_err(|e| ProposeError::Read { path: key_path.clone(), message: e.to_string() })?;
    let corpus = key["corpus"].as_str().ok_or_else(|| ProposeError::Invalid(format!("`{}` names no corpus; give `--oracle`", key_path.display())))?;
    Ok(PathBuf::from(corpus).join(oracle::ORACLE_FILE))
}

/// The next free number of `F<n>` ids (after `prefix`), and the widest zero-padding in use.
fn next_number<'a>(ids: impl Iterator<Item = &'a str>, prefix: &str) -> (u32, usize) {
    let mut max = 0;
    let mut width = 1;
    for id in ids {
        if let Some(digits) = id.strip_prefix(prefix).and_then(|r| r.strip_prefix('F')) {
            if let Ok(n) = digits.parse::<u32>() {
                max = max.max(n);
                width = width.max(digits.len());
            }
        }
    }
    (max + 1, width)
}

/// The additions a record proposes to `oracle`: one per distinct real extra (by case and
/// sheet item, then by location and message), in record order.
pub fn propose(record: &Adjudication, sheet: &BTreeMap<String, SheetRow>, oracle: &Oracle, kind: OracleKind) -> Result<Vec<Addition>, ProposeError> {
    let mut additions: Vec<Addition> = Vec::new();
    let mut taken: BTreeSet<String> = oracle.findings.iter().map(|f| f.id.clone()).collect();
    for run in &record.runs {
        if !oracle.cases.iter().any(|c| c.id == run.case) {
            return Err(ProposeError::Invalid(format!("case `{}` (cell `{}` repeat {}) is not in the oracle", run.case, run.cell, run.repeat)));
        }
        for f in run.reported.iter().filter(|f| f.disposition.trim() == "real") {
            let Some(row) = sheet.get(&f.item) else {
                return Err(ProposeError::Invalid(format!("item `{}` of case `{}` is not in the sheet `{}`", f.item, run.case, record.sheet)));
            };
            let reported_as = format!("{} repeat {}: {}", run.cell, run.repeat, f.finding);
            let same = |a: &Addition| {
                a.case == run.case
                    && (a.item == f.item
                        || (a.finding.file.as_deref() == Some(row.file.as_str()) && a.finding.line == row.line && a.finding.description == row.message))
            };
            if let Some(a) = additions.iter_mut().find(|a| same(a)) {
                a.reported_as.push(reported_as);
                continue;
            }
            let prefix = match kind {
                OracleKind::EvalSet => format!("{}/", run.case),
                OracleKind::OracleJson => String::new(),
            };
            let (n, width) = next_number(taken.iter().map(String::as_str), &prefix);
            let local = format!("F{n:0width$}");
            let id = format!("{prefix}{local}");
            taken.insert(id.clone());
            let class = (!row.category.is_empty()).then(|| row.category.clone());
            let file = (!row.file.is_empty()).then(|| row.file.clone());
            let case_md_line = match (kind, &file, row.line) {
                (OracleKind::EvalSet, Some(file), Some(line)) => {
                    Some(format!("{local} | {file}:{line} | {} | {}", class.as_deref().unwrap_or("unclassified"), row.message.replace('\n', " ")))
                }
                _ => None,
            };
            additions.push(Addition {
                case: run.case.clone(),
                finding: OracleFinding {
                    id,
                    case_id: Some(run.case.clone()),
                    description: row.message.clone(),
                    file,
                    line: row.line,
                    range: None,
                    category: crate::finding::Category::parse_lenient(&row.category),
                    severity: None,
                    blocking: true,
                    severity_label: None,
                    resolved: None,
                    class: if kind == OracleKind::EvalSet { class } else { None },
                    fixed: None,
                },
                case_md_line,
                item: f.item.clone(),
                reported_as: vec![reported_as],
                note: f.note.clone(),
            });
        }
    }
    Ok(additions)
}

/// `oracle` with the additions: each a new finding its case expects.
pub fn apply(oracle: &Oracle, additions: &[Addition]) -> Oracle {
    let mut out = oracle.clone();
    for a in additions {
        out.findings.push(a.finding.clone());
        if let Some(case) = out.cases.iter_mut().find(|c| c.id == a.case) {
            case.expected_finding_ids.push(a.finding.id.clone());
        }
    }
    out
}

/// Reads the record, its sheet and the oracle (`oracle_path`, or the corpus the record's key
/// names) and builds the patch.
pub fn build(record_path: &Path, oracle_path: Option<&Path>) -> Result<OraclePatch, ProposeError> {
    let record = adjudication::load(record_path)?;
    let oracle_path = match oracle_path {
        Some(p) => p.to_path_buf(),
        None => default_oracle(record_path, &record)?,
    };
    let (oracle, kind) = load_oracle(&oracle_path)?;
    let sheet = read_sheet(&beside(record_path, &record.sheet))?;
    let additions = propose(&record, &sheet, &oracle, kind)?;
    Ok(OraclePatch {
        version: PATCH_VERSION,
        oracle: oracle_path.display().to_string(),
        oracle_kind: kind,
        applies_to: oracle_version(&oracle),
        makes: oracle_version(&apply(&oracle, &additions)),
        adjudication: record_path.display().to_string(),
        additions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::corpus::score::{Claim, Disposition};
    use crate::analysis::matching::adjudication::{AdjudicatedFinding, AdjudicatedRun};

    fn reported(item: &str, finding: &str, disposition: &str) -> AdjudicatedFinding {
        AdjudicatedFinding {
            item: item.into(),
            finding: finding.into(),
            disposition: disposition.into(),
            claim: Claim { id: format!("c-{finding}"), disposition: Disposition::Unresolved },
            note: if disposition == "real" { "checked in the code".into() } else { String::new() },
        }
    }

    fn record() -> Adjudication {
        let run = |cell: &str, reported: Vec<AdjudicatedFinding>| AdjudicatedRun {
            cell: cell.into(),
            repeat: 1,
            case: "shell".into(),
            reported,
            oracle: BTreeMap::new(),
            real_extras: 0,
            rejected_extras: 0,
        };
        Adjudication {
            version: 1,
            method: "adjudicated by a person: sheet.csv".into(),
            sheet: "sheet.csv".into(),
            key: "key.json".into(),
            experiment: "x".into(),
            runs: vec![
                run("m=a", vec![reported("i1", "r1", "real"), reported("i2", "r2", "rejected"), reported("i3", "r3", "found")]),
                run("m=b", vec![reported("i1", "r9", "real")]),
            ],
        }
    }

    fn sheet() -> BTreeMap<String, SheetRow> {
        let row = |file: &str, line, message: &str| SheetRow { file: file.into(), line: Some(line), category: "bug".into(), message: message.into() };
        BTreeMap::from([
            ("i1".to_string(), row("src/thumb.py", 3, "the file handle leaks when convert fails")),
            ("i2".to_string(), row("src/thumb.py", 1, "rename os")),
            ("i3".to_string(), row("src/thumb.py", 4, "shell injection")),
        ])
    }

    fn eval_oracle() -> Oracle {
        let sha = "1".repeat(40);
        let text = format!("Case: shell\nRange: {sha}..{sha}\nSource: PR #7\n\nFindings:\n\nF1 | src/thumb.py:4 | security | untrusted input reaches a shell\nF2 | src/thumb.py:9 | state | x\n");
        evalcase::to_oracle(&[evalcase::parse(Path::new("case.md"), &text).expect("case")])
    }

    #[test]
    fn real_extras_become_new_findings_of_their_case_once() {
        let oracle = eval_oracle();
        let additions = propose(&record(), &sheet(), &oracle, OracleKind::EvalSet).expect("proposed");
        assert_eq!(additions.len(), 1, "{additions:?}");
        let a = &additions[0];
        assert_eq!((a.case.as_str(), a.finding.id.as_str()), ("shell", "shell/F3"));
        assert_eq!((a.finding.file.as_deref(), a.finding.line), (Some("src/thumb.py"), Some(3)));
        assert_eq!(a.finding.description, "the file handle leaks when convert fails");
        assert_eq!(a.case_md_line.as_deref(), Some("F3 | src/thumb.py:3 | bug | the file handle leaks when convert fails"));
        assert_eq!(a.reported_as, vec!["m=a repeat 1: r1", "m=b repeat 1: r9"]);
        let patched = apply(&oracle, &additions);
        assert_eq!(patched.expected_for("shell").len(), 3);
        assert_ne!(oracle_version(&oracle), oracle_version(&patched));
        assert_eq!(oracle_version(&oracle), oracle_version(&eval_oracle()));
    }

    #[test]
    fn oracle_json_ids_continue_the_numbering_and_unknown_cases_are_refused() {
        let mut oracle = eval_oracle();
        for (i, f) in oracle.findings.iter_mut().enumerate() {
            f.id = format!("F{:02}", i + 7);
        }
        let additions = propose(&record(), &sheet(), &oracle, OracleKind::OracleJson).expect("proposed");
        assert_eq!(additions[0].finding.id, "F09");
        assert_eq!(additions[0].case_md_line, None);
        let mut other = record();
        other.runs[0].case = "nope".into();
        let e = propose(&other, &sheet(), &oracle, OracleKind::OracleJson).expect_err("unknown case");
        assert!(e.to_string().contains("case `nope`"), "{e}");
    }
}
