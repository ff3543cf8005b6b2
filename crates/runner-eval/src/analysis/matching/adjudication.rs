//! Adjudication records: a person's decisions on a run's reported findings
//! (`captured.adjudication.json`, as `runner adjudicate import` writes it), which the oracle
//! analyses apply over automatic matching. The sheets that produce them live in `study`.

use crate::analysis::matching::matcher::{Method, ScoredRun};
use crate::analysis::matching::rule::OracleRule;
use crate::analysis::corpus::score::Claim;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why an adjudication record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("failed to parse `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
}

/// The per-run record `import` writes beside the captured results: the method, every
/// adjudicated reported finding, and seed 003's verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adjudication {
    pub version: u32,
    pub method: String,
    pub sheet: String,
    pub key: String,
    pub experiment: String,
    pub runs: Vec<AdjudicatedRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdjudicatedRun {
    pub cell: String,
    pub repeat: u32,
    pub case: String,
    pub reported: Vec<AdjudicatedFinding>,
    /// Seed 003: each oracle finding the case expects is `found`, `partial` or `missed`.
    pub oracle: BTreeMap<String, Seed003Verdict>,
    /// Seed 003: extras (reported findings matched to no oracle finding) that are `real`.
    pub real_extras: usize,
    /// Seed 003: extras that are `rejected` (noise).
    pub rejected_extras: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdjudicatedFinding {
    pub item: String,
    /// The reviewer's finding id (stet's scheme).
    pub finding: String,
    /// As written in the sheet.
    pub disposition: String,
    /// The seed 002 claim it became.
    pub claim: Claim,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seed003Verdict {
    Found,
    Partial,
    Missed,
}

impl From<Seed003Verdict> for crate::analysis::matching::matcher::Verdict {
    fn from(v: Seed003Verdict) -> Self {
        match v {
            Seed003Verdict::Found => Self::Found,
            Seed003Verdict::Partial => Self::Partial,
            Seed003Verdict::Missed => Self::Missed,
        }
    }
}

impl AdjudicatedRun {
    /// The person's decisions as the matcher applies them: every oracle verdict with the report
    /// matched to it, and the extras named by the reviewer's finding id (`real` is real; `rejected` and
    /// `false_positive` are rejected; other dispositions leave the automatic verdict).
    pub(crate) fn to_adjudicated(&self) -> crate::analysis::matching::matcher::Adjudicated {
        use crate::analysis::matching::matcher::ExtraVerdict;
        let findings = self.oracle.iter().map(|(id, v)| (id.clone(), (*v).into())).collect();
        let extras = self
            .reported
            .iter()
            .filter(|f| !f.finding.is_empty())
            .filter_map(|f| match f.disposition.trim() {
                "real" => Some((f.finding.clone(), ExtraVerdict::Real)),
                "rejected" | "false_positive" => Some((f.finding.clone(), ExtraVerdict::Rejected)),
                _ => None,
            })
            .collect();
        let partial = format!("{}-partial-", self.case);
        let matches = self
            .reported
            .iter()
            .filter(|f| !f.finding.is_empty())
            .filter_map(|f| match f.disposition.trim() {
                "found" | "verified" => Some((f.claim.id.clone(), f.finding.clone())),
                "partial" => f.claim.id.strip_prefix(&partial).map(|o| (o.to_string(), f.finding.clone())),
                _ => None,
            })
            .collect();
        crate::analysis::matching::matcher::Adjudicated { findings, extras, matches }
    }
}

impl Adjudication {
    /// The run adjudicated for `cell`'s `repeat` on `case`, if any.
    pub(crate) fn run(&self, cell: &str, repeat: u32, case: &str) -> Option<&AdjudicatedRun> {
        self.runs.iter().find(|r| r.cell == cell && r.repeat == repeat && r.case == case)
    }
}

/// Reads an adjudication record (`captured.adjudication.json`, as `import` writes it).
pub fn load(path: &Path) -> Result<Adjudication, RecordError> {
    let text = crate::bounded::input_text(path).map_err(|source| RecordError::Read { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|e| RecordError::Parse { path: path.to_path_buf(), message: e.to_string() })
}

/// Applies a person's adjudication, where it covers a run, over automatic matching; returns the
/// method and notes naming the runs a person decided and those left to automatic matching.
/// Without an adjudication the method is automatic and there are no notes.
pub fn adjudicate(scored: &mut [ScoredRun<'_>], adjudication: Option<&Adjudication>, rule: &OracleRule) -> (Method, Vec<String>) {
    adjudicate_described(scored, adjudication, rule.describe())
}

/// [`adjudicate`], with the automatic rule given in words (e.g. [`describe_rule_for`]).
pub(crate) fn adjudicate_described(scored: &mut [ScoredRun<'_>], adjudication: Option<&Adjudication>, rule: String) -> (Method, Vec<String>) {
    let Some(adjudication) = adjudication else { return (Method::Automatic { rule }, Vec::new()) };
    let label = |r: &ScoredRun<'_>| format!("`{}` repeat {} on `{}`", r.view.cell.id, r.view.repeat, r.view.subject);
    let (mut decided, mut automatic) = (Vec::new(), Vec::new());
    for run in scored.iter_mut() {
        match adjudication.run(&run.view.cell.id, run.view.repeat, run.view.subject) {
            Some(a) => {
                a.to_adjudicated().apply(&mut run.case, run.view.findings);
                decided.push(label(run));
            }
            None => automatic.push(label(run)),
        }
    }
    let sheet = &adjudication.sheet;
    let list = |runs: &[String]| if runs.is_empty() { "none".to_string() } else { runs.join(", ") };
    let notes = vec![
        format!("Adjudicated by a person (sheet `{sheet}`): {} of {} runs — {}.", decided.len(), scored.len(), list(&decided)),
        format!("Automatic matching by the rule (no adjudication for them): {} runs — {}.", automatic.len(), list(&automatic)),
    ];
    (Method::Adjudication { source: sheet.clone(), rule }, notes)
}

impl crate::analysis::model::AnalysisInput<'_> {
    /// The adjudication `spec` names, when it names one that was loaded (the experiment hands
    /// the loaded records in as a `BTreeMap<PathBuf, Adjudication>` extra).
    pub fn adjudication(&self, spec: &crate::analysis::spec::AnalysisSpec) -> Option<&Adjudication> {
        let loaded = self.extras.get::<BTreeMap<PathBuf, Adjudication>>()?;
        spec.adjudication.as_ref().and_then(|p| loaded.get(p))
    }
}
