//! The private oracle (`oracle.json` beside `cases.public.json`): expected finding ids per
//! case, a catalog of findings with descriptions and, for line-anchored scoring, file, line
//! or range, category, severity and whether the finding is blocking; a ground-truth program
//! per case and its interpreter.
//!
//! The format is seed 002's, extended; a corpus in seed 002's exact format (no
//! interpreter, no location fields) is accepted as it is: `groundTruth` is an object
//! `{before, after, program}` with `before`/`after` `"pass"` or `"fail"`. The bare-string
//! `groundTruth` of earlier runner versions is still read (as `before: pass` and `after: fail`
//! for a finding case, `pass` for a clean one), but `corpus validate` rejects it. An oracle
//! without `groundTruth` (an external target's, whose changes have no program) reads as an
//! empty program; `corpus validate` and `exec` on a corpus require one.
//!
//! A case's id is its subject's id: a corpus case id, an external change id, or a commit SHA
//! for a git target's commits (`runner oracle import-github` writes one case per pull request,
//! keyed by its merge commit). A commit id is looked up by SHA prefix either way, so an oracle
//! keyed by full SHAs answers abbreviated subject ids and the reverse. Per finding, `resolved`
//! says whether its thread saw a code change (RQS v2 weighs it ×1.5); `skipped` lists what an
//! import left out, and why.

use crate::finding::{Category, LineRange, Severity};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const ORACLE_FILE: &str = "oracle.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Oracle {
    #[serde(deserialize_with = "version_one")]
    pub version: u32,
    pub findings: Vec<OracleFinding>,
    pub cases: Vec<OracleCase>,
    /// What an import left out of the oracle, each with why (read by no analysis).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// A source item an import did not turn into a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    /// What was left out, e.g. `pull #12 comment 345 (src/a.rs:10)`.
    pub source: String,
    pub reason: String,
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
    /// The oracle's own name for the finding's severity (a benchmark's `Critical`, `High`, …),
    /// kept beside runner's `severity` and `blocking`; recall is reported per label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity_label: Option<String>,
    /// Whether the finding's review thread was followed by a code change on its lines (`None`:
    /// not known); RQS v2 weighs a resolved finding ×1.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    /// A free-text class (seed 003's `state`, `validation`, …); recall is reported per class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The day the bug was fixed (`YYYY-MM-DD`; a mined oracle's fix date): recall is split
    /// at a reviewer's declared `training-cutoff` into bugs fixed before and after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
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

/// What a ground-truth program does on one source version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    #[default]
    Pass,
    /// Fails with an assertion failure of its interpreter.
    Fail,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
        }
    }
}

/// Seed 002's `groundTruth`: the program and what it must do on each version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GroundTruth {
    pub before: Outcome,
    pub after: Outcome,
    pub program: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "RawOracleCase")]
pub struct OracleCase {
    pub id: String,
    pub expected_finding_ids: Vec<String>,
    pub rationale: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
    /// Absent in seed 002's exact format, which runs every program as a Node ES module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<Interpreter>,
    /// Written only when there is a program (an external or git target's oracle has none).
    #[serde(skip_serializing_if = "GroundTruth::is_absent")]
    pub ground_truth: GroundTruth,
}

/// An oracle case as written: `groundTruth` an object, or the legacy bare program string.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawOracleCase {
    id: String,
    expected_finding_ids: Vec<String>,
    rationale: String,
    #[serde(default)]
    split: Option<Split>,
    #[serde(default)]
    interpreter: Option<Interpreter>,
    #[serde(default = "RawGroundTruth::absent")]
    ground_truth: RawGroundTruth,
}

enum RawGroundTruth {
    Object(GroundTruth),
    Legacy(String),
    /// No `groundTruth`: an oracle of changes without a program (an external target's);
    /// `corpus validate` requires one for a corpus.
    Absent,
}

impl RawGroundTruth {
    fn absent() -> Self {
        Self::Absent
    }
}

impl<'de> Deserialize<'de> for RawGroundTruth {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(program) => Ok(Self::Legacy(program)),
            value @ serde_json::Value::Object(_) => serde_json::from_value(value).map(Self::Object).map_err(|e| {
                D::Error::custom(format!(
                    "invalid `groundTruth`: {e} (expected {{\"before\": \"pass\"|\"fail\", \"after\": \"pass\"|\"fail\", \"program\": \"...\"}})"
                ))
            }),
            _ => Err(D::Error::custom("`groundTruth` must be an object {\"before\", \"after\", \"program\"}")),
        }
    }
}

impl From<RawOracleCase> for OracleCase {
    fn from(raw: RawOracleCase) -> Self {
        let ground_truth = match raw.ground_truth {
            RawGroundTruth::Object(g) => g,
            RawGroundTruth::Absent => GroundTruth::default(),
            RawGroundTruth::Legacy(program) => {
                GroundTruth { before: Outcome::Pass, after: if raw.expected_finding_ids.is_empty() { Outcome::Pass } else { Outcome::Fail }, program }
            }
        };
        Self {
            id: raw.id,
            expected_finding_ids: raw.expected_finding_ids,
            rationale: raw.rationale,
            split: raw.split,
            interpreter: raw.interpreter,
            ground_truth,
        }
    }
}

/// A `version` that must be the number 1; `1.0` is the same number (as in seed 002's
/// JavaScript, where `1.0 === 1`).
pub fn version_one<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    use serde::de::Error;
    let value = serde_json::Value::deserialize(deserializer)?;
    match value.as_f64() {
        Some(1.0) => Ok(1),
        _ => Err(D::Error::custom(format!("`version` must be 1, not {value}"))),
    }
}

impl GroundTruth {
    /// No program: what an oracle without `groundTruth` reads as.
    pub fn is_absent(&self) -> bool {
        *self == Self::default()
    }
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
    /// The case of a subject: by id, or for a commit id (7 to 64 hex digits) the one case whose
    /// commit id starts with it or is a prefix of it, in any letter case.
    pub fn case(&self, id: &str) -> Option<&OracleCase> {
        if let Some(case) = self.cases.iter().find(|c| c.id == id) {
            return Some(case);
        }
        if !is_commit_id(id) {
            return None;
        }
        let mut found = self.cases.iter().filter(|c| is_commit_id(&c.id) && same_commit(&c.id, id));
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }

    pub fn finding(&self, id: &str) -> Option<&OracleFinding> {
        self.findings.iter().find(|f| f.id == id)
    }

    /// The catalog entries a case expects, in the case's order.
    pub fn expected_for(&self, case_id: &str) -> Vec<&OracleFinding> {
        self.case(case_id).map(|c| c.expected_finding_ids.iter().filter_map(|id| self.finding(id)).collect()).unwrap_or_default()
    }
}

/// 7 to 64 hex digits: an abbreviated or full SHA-1 or SHA-256 commit id.
fn is_commit_id(id: &str) -> bool {
    (7..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Two commit ids of which one abbreviates the other.
fn same_commit(a: &str, b: &str) -> bool {
    let n = a.len().min(b.len());
    a[..n].eq_ignore_ascii_case(&b[..n])
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

/// Reads an oracle file (or `oracle.json` inside a directory) as seed 002's scorer does
/// (JavaScript's `JSON.parse`: a key repeated within an object takes its last value; `corpus
/// validate` still reports the repetition).
pub fn load_file(path: &Path) -> Result<Oracle, OracleError> {
    let path = if path.is_dir() { path.join(ORACLE_FILE) } else { path.to_path_buf() };
    let text = crate::subject::files::read_text(&path).map_err(|source| OracleError::Read { path: path.clone(), source })?;
    parse(&text).map_err(|message| OracleError::Parse { path, message })
}

/// The text of an oracle file, read as [`load_file`] reads it.
pub fn parse(text: &str) -> Result<Oracle, String> {
    crate::subject::files::parse_json_last_wins(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_oracle_loads() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("corpus/quickstart");
        let oracle = load(&dir).expect("readable").expect("present");
        assert!(oracle.cases.len() >= 12);
        assert!(oracle.cases.iter().filter(|c| c.is_clean()).count() >= 3);
        let first = &oracle.cases[0];
        assert!(!oracle.expected_for(&first.id).is_empty() || first.is_clean());
    }

    #[test]
    fn seed_002_exact_format_is_accepted() {
        let text = r#"{"version":1,"findings":[{"id":"F01","caseId":"case-01","description":"d"}],"cases":[{"id":"case-01","expectedFindingIds":["F01"],"groundTruth":{"before":"pass","after":"fail","program":"import assert from 'node:assert';"},"rationale":"r"}]}"#;
        let oracle: Oracle = serde_json::from_str(text).expect("parses");
        assert_eq!(oracle.cases[0].interpreter(), Interpreter::Node);
        assert_eq!(
            oracle.cases[0].ground_truth,
            GroundTruth { before: Outcome::Pass, after: Outcome::Fail, program: "import assert from 'node:assert';".into() }
        );
        let again: Oracle = serde_json::from_value(serde_json::to_value(&oracle).expect("json")).expect("round trip");
        assert_eq!(again, oracle);
    }

    #[test]
    fn the_reference_corpus_oracle_loads() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/seed002/oracle.json");
        let oracle = load_file(&path).expect("seed 002's published oracle");
        assert_eq!(oracle.cases.len(), 8);
        assert_eq!(oracle.case("case-06").map(|c| c.ground_truth.after), Some(Outcome::Pass));
        assert_eq!(oracle.case("case-01").map(|c| c.ground_truth.after), Some(Outcome::Fail));
    }

    #[test]
    fn the_legacy_string_form_is_still_read() {
        let text = r#"{"version":1.0,"findings":[{"id":"F01","description":"d"}],"cases":[
            {"id":"case-01","expectedFindingIds":["F01"],"rationale":"r","groundTruth":"p1"},
            {"id":"case-02","expectedFindingIds":[],"rationale":"r","groundTruth":"p2"}]}"#;
        let oracle: Oracle = serde_json::from_str(text).expect("parses");
        assert_eq!(oracle.cases[0].ground_truth, GroundTruth { before: Outcome::Pass, after: Outcome::Fail, program: "p1".into() });
        assert_eq!(oracle.cases[1].ground_truth, GroundTruth { before: Outcome::Pass, after: Outcome::Pass, program: "p2".into() });
    }

    #[test]
    fn malformed_ground_truth_and_versions_are_rejected() {
        let case =
            |gt: &str| format!(r#"{{"version":1,"findings":[],"cases":[{{"id":"case-01","expectedFindingIds":[],"rationale":"r","groundTruth":{gt}}}]}}"#);
        for bad in [
            r#"{"before":"pass","after":"maybe","program":"p"}"#,
            r#"{"before":"pass","after":"pass"}"#,
            r#"{"before":"pass","after":"pass","program":"p","x":1}"#,
            "null",
            "[]",
        ] {
            assert!(serde_json::from_str::<Oracle>(&case(bad)).is_err(), "{bad}");
        }
        let e = serde_json::from_str::<Oracle>(r#"{"version":2,"findings":[],"cases":[]}"#).expect_err("version 2");
        assert!(e.to_string().contains("`version` must be 1"), "{e}");
    }

    #[test]
    fn an_external_oracle_needs_no_ground_truth_and_keeps_its_severity_labels() {
        let text = r#"{"version":1,"findings":[{"id":"p-1/G1","caseId":"p-1","description":"d","severity":"error","blocking":true,"severityLabel":"Critical"}],
            "cases":[{"id":"p-1","expectedFindingIds":["p-1/G1"],"rationale":"r"}]}"#;
        let oracle: Oracle = serde_json::from_str(text).expect("parses");
        assert_eq!(oracle.cases[0].ground_truth, GroundTruth::default());
        let f = &oracle.findings[0];
        assert_eq!((f.file.as_deref(), f.line, f.severity_label.as_deref(), f.blocking), (None, None, Some("Critical"), true));
    }

    #[test]
    fn a_repeated_key_takes_its_last_value_as_in_seed_002s_javascript() {
        let text = r#"{"version":1,"findings":[{"id":"F09","id":"F01","description":"d"}],"cases":[
            {"id":"case-01","expectedFindingIds":[],"rationale":"r","expectedFindingIds":["F01"],
             "groundTruth":{"before":"fail","after":"fail","program":"p","before":"pass"}}]}"#;
        assert!(serde_json::from_str::<Oracle>(text).is_err(), "serde alone rejects it");
        let oracle = parse(text).expect("read last-wins");
        assert_eq!(oracle.findings[0].id, "F01");
        assert_eq!(oracle.cases[0].expected_finding_ids, ["F01"]);
        assert_eq!(oracle.cases[0].ground_truth.before, Outcome::Pass);
        assert!(parse(r#"{"version":1,"version":1,"findings":[],"cases":[],"label":"x"}"#).is_err(), "unknown keys stay errors");
    }

    #[test]
    fn commit_cases_are_found_by_sha_prefix_and_resolution_round_trips() {
        let full = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
        let text = format!(
            r##"{{"version":1,"findings":[{{"id":"pr7/101","caseId":"{full}","description":"d","file":"a.py","line":3,"blocking":true,"severityLabel":"blocking","resolved":true}}],
            "cases":[{{"id":"{full}","expectedFindingIds":["pr7/101"],"rationale":"#7"}},{{"id":"a1b2c3d4ffff0000000000000000000000000000","expectedFindingIds":[],"rationale":"x"}},{{"id":"case-01","expectedFindingIds":[],"rationale":"c"}}],
            "skipped":[{{"source":"pull #7 comment 102","reason":"written by a bot"}}]}}"##
        );
        let oracle: Oracle = serde_json::from_str(&text).expect("parses");
        assert_eq!(oracle.case(full).map(|c| c.id.as_str()), Some(full));
        assert_eq!(oracle.case(&full[..10]).map(|c| c.id.as_str()), Some(full), "abbreviated subject id");
        assert_eq!(oracle.case(&full[..10].to_uppercase()).map(|c| c.id.as_str()), Some(full), "any letter case");
        assert!(oracle.case("a1b2c3d4").is_none(), "ambiguous: two cases start with it");
        assert!(oracle.case("a1b2c3").is_none(), "too short to be a commit id");
        assert!(oracle.case("case-0").is_none(), "other ids match exactly");
        assert_eq!(oracle.expected_for(&full[..12]).first().and_then(|f| f.resolved), Some(true));
        let written = serde_json::to_value(&oracle).expect("json");
        assert!(written["cases"][0].get("groundTruth").is_none(), "no program, none written: {written}");
        assert_eq!(written["skipped"][0]["reason"], "written by a bot");
        let again: Oracle = serde_json::from_value(written).expect("round trip");
        assert_eq!(again, oracle);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let text = r#"{"version":1,"findings":[],"cases":[],"label":"x"}"#;
        assert!(serde_json::from_str::<Oracle>(text).is_err());
    }
}
