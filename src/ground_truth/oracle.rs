//! The private oracle (`oracle.json` beside `cases.public.json`): expected finding ids per
//! case, a catalog of findings with descriptions and, for line-anchored scoring, file, line
//! or range, category, severity and whether the finding is blocking; a ground-truth program
//! per case and its interpreter.
//!
//! The format is seed 002's, extended; a corpus in seed 002's exact format (no
//! interpreter, no location fields) is accepted as it is.

use crate::finding::{Category, LineRange, Severity};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const ORACLE_FILE: &str = "oracle.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Oracle {
    pub version: u32,
    pub findings: Vec<OracleFinding>,
    pub cases: Vec<OracleCase>,
}

/// One known defect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OracleFinding {
    /// `F01`, `F02`, … unique across the corpus.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_id: Option<String>,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<LineRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    #[serde(default)]
    pub blocking: bool,
}

/// Which half of a tuning/holdout split a case belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    Tuning,
    Holdout,
}

/// How a case's ground-truth program is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interpreter {
    /// An ES module run with `node` (seed 002's default).
    Node,
    Python3,
    /// A Rust program compiled with `rustc` and run.
    Rust,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OracleCase {
    pub id: String,
    pub expected_finding_ids: Vec<String>,
    pub rationale: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
    /// Absent in seed 002's exact format, which runs every program as a Node ES module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<Interpreter>,
    pub ground_truth: String,
}

impl Interpreter {
    pub fn name(self) -> &'static str {
        match self {
            Self::Node => "node",
            Self::Python3 => "python3",
            Self::Rust => "rust",
        }
    }
}

impl OracleCase {
    pub fn is_clean(&self) -> bool {
        self.expected_finding_ids.is_empty()
    }

    pub fn interpreter(&self) -> Interpreter {
        self.interpreter.unwrap_or(Interpreter::Node)
    }
}

impl Oracle {
    pub fn case(&self, id: &str) -> Option<&OracleCase> {
        self.cases.iter().find(|c| c.id == id)
    }

    pub fn finding(&self, id: &str) -> Option<&OracleFinding> {
        self.findings.iter().find(|f| f.id == id)
    }

    /// The catalog entries a case expects, in the case's order.
    pub fn expected_for(&self, case_id: &str) -> Vec<&OracleFinding> {
        self.case(case_id)
            .map(|c| c.expected_finding_ids.iter().filter_map(|id| self.finding(id)).collect())
            .unwrap_or_default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("failed to parse `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
}

/// Reads `oracle.json` from a corpus directory; `Ok(None)` when the corpus has none.
pub fn load(dir: &Path) -> Result<Option<Oracle>, OracleError> {
    let path = dir.join(ORACLE_FILE);
    match load_file(&path) {
        Err(OracleError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        other => other.map(Some),
    }
}

/// Reads an oracle file (or `oracle.json` inside a directory).
pub fn load_file(path: &Path) -> Result<Oracle, OracleError> {
    let path = if path.is_dir() { path.join(ORACLE_FILE) } else { path.to_path_buf() };
    let text = crate::target::files::read_text(&path).map_err(|source| OracleError::Read { path: path.clone(), source })?;
    serde_json::from_str(&text).map_err(|e| OracleError::Parse { path, message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_oracle_loads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/quickstart");
        let oracle = load(&dir).expect("readable").expect("present");
        assert!(oracle.cases.len() >= 12);
        assert!(oracle.cases.iter().filter(|c| c.is_clean()).count() >= 3);
        let first = &oracle.cases[0];
        assert!(!oracle.expected_for(&first.id).is_empty() || first.is_clean());
    }

    #[test]
    fn seed_002_exact_format_is_accepted() {
        let text = r#"{"version":1,"findings":[{"id":"F01","description":"d"}],"cases":[{"id":"case-01","expectedFindingIds":["F01"],"rationale":"r","groundTruth":"import assert from 'node:assert';"}]}"#;
        let oracle: Oracle = serde_json::from_str(text).expect("parses");
        assert_eq!(oracle.cases[0].interpreter(), Interpreter::Node);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text = r#"{"version":1,"findings":[],"cases":[],"label":"x"}"#;
        assert!(serde_json::from_str::<Oracle>(text).is_err());
    }
}
