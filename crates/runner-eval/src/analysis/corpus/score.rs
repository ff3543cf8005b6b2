//! Seed 002's scorer, exactly (METRICS.md, "Seed 002: the scorer's exact formulas"): human
//! adjudicated captured results in that document's format, scored per strategy against an
//! oracle — precision, recall over planned opportunities, unique verified and expected,
//! completeness, clean-case false-positive rate, coverage and metric summaries. `--json`
//! prints the reference scorer's output exactly: `{version, strategies: [{strategy, runs,
//! coverage, findings, precision, recall, completeness, observedCompleteness,
//! cleanCaseFalsePositiveRate, metrics}]}`, with numbers as JavaScript prints them.

use crate::ground_truth::oracle::Oracle;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `captured-results.json`, as seed 002 documents it. Unknown keys anywhere are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapturedResults {
    #[serde(deserialize_with = "crate::ground_truth::oracle::version_one")]
    pub version: u32,
    pub plan: CapturePlan,
    pub strategies: Vec<Strategy>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapturePlan {
    pub case_ids: Vec<String>,
    pub trial_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Strategy {
    pub name: String,
    pub runs: Vec<CapturedRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapturedRun {
    pub case_id: String,
    pub trial_id: String,
    /// The reviewer output met its reporting/evidence contract (not a verdict).
    pub complete: bool,
    pub findings: Vec<Claim>,
    /// Only provider-reported values; omitted when none were supplied (never `null`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present_metrics")]
    pub metrics: Option<Metrics>,
}

/// One adjudicated claim: an oracle id (verified) or a case-scoped id such as `case-06-fp-01`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub disposition: Disposition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    Verified,
    FalsePositive,
    Unresolved,
}

impl Disposition {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::FalsePositive => "false_positive",
            Self::Unresolved => "unresolved",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "verified" => Some(Self::Verified),
            "false_positive" => Some(Self::FalsePositive),
            "unresolved" => Some(Self::Unresolved),
            _ => None,
        }
    }
}

/// Provider-reported telemetry; a missing value stays missing. Any non-negative finite
/// number is accepted (token counts need not be integers, as in seed 002's scorer); `null`,
/// arrays and unknown names are errors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<f64>,
    pub output_tokens: Option<f64>,
    pub total_tokens: Option<f64>,
}

impl Metrics {
    /// The supplied values by their seed 002 name, in seed 002's order.
    fn values(&self) -> [(&'static str, Option<f64>); 4] {
        [("latencyMs", self.latency_ms), ("inputTokens", self.input_tokens), ("outputTokens", self.output_tokens), ("totalTokens", self.total_tokens)]
    }
}

impl Serialize for Metrics {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let present: Vec<(&str, f64)> = self.values().into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
        let mut map = serializer.serialize_map(Some(present.len()))?;
        for (k, v) in present {
            map.serialize_entry(k, &JsNumber(v))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Metrics {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(deserializer)?;
        let serde_json::Value::Object(map) = value else {
            let kind = match value {
                serde_json::Value::Null => "null",
                serde_json::Value::Array(_) => "an array",
                _ => "not an object",
            };
            return Err(D::Error::custom(format!(
                "`metrics` must be an object such as {{\"latencyMs\": 1200, \"totalTokens\": 900}} (omit it when the provider reported nothing), not {kind}"
            )));
        };
        let mut m = Metrics::default();
        for (name, v) in map {
            let slot = match name.as_str() {
                "latencyMs" => &mut m.latency_ms,
                "inputTokens" => &mut m.input_tokens,
                "outputTokens" => &mut m.output_tokens,
                "totalTokens" => &mut m.total_tokens,
                _ => return Err(D::Error::custom(format!("unsupported metric `{name}`; the metrics are {}", METRIC_NAMES.join(", ")))),
            };
            match v.as_f64().filter(|n| v.is_number() && n.is_finite() && *n >= 0.0) {
                Some(n) => *slot = Some(n),
                None => {
                    return Err(D::Error::custom(format!("`metrics.{name}` must be a non-negative number, not {v} (omit a value the provider did not report)")))
                }
            }
        }
        Ok(m)
    }
}

/// `metrics` when the key is present: `null` is an error, not "absent".
fn present_metrics<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Metrics>, D::Error> {
    Metrics::deserialize(deserializer).map(Some)
}

/// A number as JavaScript's `JSON.stringify` writes it: integral values without a fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct JsNumber(pub f64);

impl Serialize for JsNumber {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
            serializer.serialize_i64(v as i64)
        } else {
            serializer.serialize_f64(v)
        }
    }
}

fn js_opt<S: serde::Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    value.map(JsNumber).serialize(serializer)
}

pub(crate) const METRIC_NAMES: [&str; 4] = ["latencyMs", "inputTokens", "outputTokens", "totalTokens"];

#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("failed to parse `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("failed to score `{path}`: {}", .problems.join("; "))]
    Invalid { path: PathBuf, problems: Vec<String> },
}

/// Reads a captured-results file as seed 002's scorer does (JavaScript's `JSON.parse`: a key
/// repeated within an object takes its last value); unknown keys and malformed values are
/// errors, with their line and column.
pub fn load_captured(path: &Path) -> Result<CapturedResults, ScoreError> {
    let text = crate::subject::files::read_text(path).map_err(|source| ScoreError::Read { path: path.to_path_buf(), source })?;
    parse_captured(&text).map_err(|message| ScoreError::Parse { path: path.to_path_buf(), message })
}

/// The text of a captured-results file, read as [`load_captured`] reads it.
pub fn parse_captured(text: &str) -> Result<CapturedResults, String> {
    crate::subject::files::parse_json_last_wins(text).map_err(|e| e.to_string())
}

/// Every problem that makes captured results unscorable against `oracle`, at once.
pub fn check(captured: &CapturedResults, oracle: &Oracle) -> Vec<String> {
    let mut problems = Vec::new();
    if captured.version != 1 {
        problems.push(format!("`version` must be 1, not {}", captured.version));
    }
    // The oracle, as seed 002's scorer indexes it: unique case ids, and no finding id expected twice.
    let mut cases = BTreeSet::new();
    let mut expected_by: BTreeMap<&str, &str> = BTreeMap::new();
    for c in &oracle.cases {
        if !cases.insert(c.id.as_str()) {
            problems.push(format!("the oracle lists case `{}` twice", c.id));
        }
        for id in &c.expected_finding_ids {
            if let Some(other) = expected_by.insert(id, &c.id) {
                problems.push(format!("the oracle expects finding `{id}` twice (in `{other}` and `{}`); oracle finding ids are unique", c.id));
            }
        }
    }
    let plan = &captured.plan;
    if plan.case_ids.is_empty() {
        problems.push("`plan.caseIds` is empty".into());
    }
    if plan.trial_ids.is_empty() {
        problems.push("`plan.trialIds` is empty".into());
    }
    let mut seen = BTreeSet::new();
    for id in &plan.case_ids {
        if !seen.insert(id) {
            problems.push(format!("case `{id}` is listed twice in `plan.caseIds`"));
        }
        if oracle.case(id).is_none() {
            problems.push(format!("planned case `{id}` is not in the oracle"));
        }
    }
    let mut seen = BTreeSet::new();
    for id in &plan.trial_ids {
        if !seen.insert(id) {
            problems.push(format!("trial `{id}` is listed twice in `plan.trialIds`"));
        }
    }
    let planned: Vec<_> = plan.case_ids.iter().filter_map(|id| oracle.case(id)).collect();
    if !planned.is_empty() {
        if !planned.iter().any(|c| c.is_clean()) {
            problems.push("`plan.caseIds` needs at least one clean case".into());
        }
        if !planned.iter().any(|c| !c.is_clean()) {
            problems.push("`plan.caseIds` needs at least one finding case".into());
        }
    }
    // As in seed 002's scorer: no strategy at all, an empty name or an empty trial id is fine.
    let mut names = BTreeSet::new();
    for strategy in &captured.strategies {
        let s = &strategy.name;
        if !names.insert(s) {
            problems.push(format!("strategy `{s}` is listed twice"));
        }
        let mut pairs = BTreeSet::new();
        for run in &strategy.runs {
            let at = format!("strategy `{s}`, run `{}`/`{}`", run.case_id, run.trial_id);
            if !plan.case_ids.contains(&run.case_id) {
                problems.push(format!("{at}: case `{}` is not in `plan.caseIds`", run.case_id));
            }
            if !plan.trial_ids.contains(&run.trial_id) {
                problems.push(format!("{at}: trial `{}` is not in `plan.trialIds`", run.trial_id));
            }
            if !pairs.insert((&run.case_id, &run.trial_id)) {
                problems.push(format!("{at}: duplicate result for this case and trial"));
            }
            if let Some(m) = &run.metrics {
                for (name, value) in m.values() {
                    if value.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                        problems.push(format!("{at}: `metrics.{name}` must be a non-negative number"));
                    }
                }
            }
            let expected: BTreeSet<&str> = oracle.case(&run.case_id).map(|c| c.expected_finding_ids.iter().map(String::as_str).collect()).unwrap_or_default();
            let mut dispositions: BTreeMap<&str, Disposition> = BTreeMap::new();
            for claim in &run.findings {
                if let Some(previous) = dispositions.insert(&claim.id, claim.disposition) {
                    if previous != claim.disposition {
                        problems.push(format!("{at}: finding `{}` is both `{}` and `{}`", claim.id, previous.as_str(), claim.disposition.as_str()));
                    }
                }
                match claim.disposition {
                    Disposition::Verified if !expected.contains(claim.id.as_str()) => problems.push(format!(
                        "{at}: verified finding `{}` is not one of the case's expected ids ({})",
                        claim.id,
                        if expected.is_empty() {
                            "none: a clean case".to_string()
                        } else {
                            expected.iter().map(|e| format!("`{e}`")).collect::<Vec<_>>().join(", ")
                        }
                    )),
                    // A `false_positive` or `unresolved` claim may use any id, an oracle id too.
                    _ => {}
                }
            }
        }
    }
    problems
}

/// Coverage of one class of cases (clean or finding).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassCoverage {
    pub expected_runs: usize,
    pub submitted_runs: usize,
    pub omitted_runs: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseTrial {
    pub case_id: String,
    pub trial_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Classes {
    pub clean: ClassCoverage,
    pub finding: ClassCoverage,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub expected_runs: usize,
    pub submitted_runs: usize,
    /// Planned cases with at least one omitted trial, in plan order.
    pub omitted_cases: Vec<String>,
    /// Planned (case, trial) pairs without a submitted run, in plan order.
    pub omitted_case_trials: Vec<CaseTrial>,
    pub classes: Classes,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingCounts {
    pub verified: usize,
    pub false_positives: usize,
    pub unresolved: usize,
    pub unique_verified: usize,
    pub unique_expected: usize,
}

/// Observations over supplied values only; `total` and `mean` are absent (not null) when
/// none were supplied. `runs` is the number of submitted runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetricSummary {
    pub observations: usize,
    pub runs: usize,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "js_opt")]
    pub total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "js_opt")]
    pub mean: Option<f64>,
}

/// The four metric summaries, in seed 002's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSummaries(pub Vec<(String, MetricSummary)>);

impl MetricSummaries {
    pub fn get(&self, name: &str) -> Option<&MetricSummary> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, m)| m)
    }
}

impl std::ops::Index<&str> for MetricSummaries {
    type Output = MetricSummary;
    fn index(&self, name: &str) -> &MetricSummary {
        static NONE: MetricSummary = MetricSummary { observations: 0, runs: 0, total: None, mean: None };
        self.get(name).unwrap_or(&NONE)
    }
}

impl Serialize for MetricSummaries {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// One strategy's score, field for field the reference scorer's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyScore {
    pub strategy: String,
    /// Submitted runs.
    pub runs: usize,
    pub coverage: Coverage,
    pub findings: FindingCounts,
    /// verified / (verified + false_positive); `null` on 0/0.
    #[serde(serialize_with = "js_opt")]
    pub precision: Option<f64>,
    /// verified / (Σ planned cases |expected ids| × |trialIds|): omitted runs count as misses.
    #[serde(serialize_with = "js_opt")]
    pub recall: Option<f64>,
    /// Runs with `complete: true` / planned runs.
    #[serde(serialize_with = "js_opt")]
    pub completeness: Option<f64>,
    /// Runs with `complete: true` / submitted runs.
    #[serde(serialize_with = "js_opt")]
    pub observed_completeness: Option<f64>,
    /// Submitted clean-case runs with ≥ 1 false positive / submitted clean-case runs.
    #[serde(serialize_with = "js_opt")]
    pub clean_case_false_positive_rate: Option<f64>,
    pub metrics: MetricSummaries,
}

/// The whole score document. It serializes as the reference scorer prints it
/// (`{version, strategies}`); the rest is for the human rendering.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    pub version: u32,
    pub strategies: Vec<StrategyScore>,
    /// Which method produced the dispositions, e.g. "adjudicated by a person: sheet.csv".
    #[serde(skip)]
    pub method: String,
    #[serde(skip)]
    pub results: String,
    #[serde(skip)]
    pub oracle: String,
    #[serde(skip)]
    pub case_ids: Vec<String>,
    #[serde(skip)]
    pub trial_ids: Vec<String>,
    #[serde(skip)]
    pub clean_cases: Vec<String>,
    #[serde(skip)]
    pub finding_cases: Vec<String>,
    /// Σ over planned cases of |expected ids| × |trialIds|.
    #[serde(skip)]
    pub finding_opportunities: usize,
}

fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Scores checked captured results. Call [`check`] first: this assumes it found nothing.
pub fn score(captured: &CapturedResults, oracle: &Oracle, method: &str, results: &str, oracle_label: &str) -> Score {
    let plan = &captured.plan;
    let trials = plan.trial_ids.len();
    let expected_of = |case: &str| -> Vec<&str> { oracle.case(case).map(|c| c.expected_finding_ids.iter().map(String::as_str).collect()).unwrap_or_default() };
    let is_clean = |case: &str| expected_of(case).is_empty();
    let clean_cases: Vec<String> = plan.case_ids.iter().filter(|c| is_clean(c)).cloned().collect();
    let finding_cases: Vec<String> = plan.case_ids.iter().filter(|c| !is_clean(c)).cloned().collect();
    let opportunities: usize = plan.case_ids.iter().map(|c| expected_of(c).len() * trials).sum();
    let unique_expected: BTreeSet<(&str, &str)> = plan.case_ids.iter().flat_map(|c| expected_of(c).into_iter().map(move |id| (c.as_str(), id))).collect();

    let strategies = captured
        .strategies
        .iter()
        .map(|strategy| {
            let mut counts = FindingCounts::default();
            let mut unique_verified: BTreeSet<(&str, &str)> = BTreeSet::new();
            let mut complete = 0;
            let (mut clean_runs, mut clean_runs_with_fp) = (0, 0);
            let mut submitted: BTreeSet<(&str, &str)> = BTreeSet::new();
            let mut metric_values: Vec<(&str, Vec<f64>)> = METRIC_NAMES.iter().map(|n| (*n, Vec::new())).collect();
            for run in &strategy.runs {
                submitted.insert((&run.case_id, &run.trial_id));
                // A repeated (id, disposition) within a run counts once.
                let claims: BTreeSet<(&str, Disposition)> = run.findings.iter().map(|c| (c.id.as_str(), c.disposition)).collect();
                let mut fp = 0;
                for (id, disposition) in claims {
                    match disposition {
                        Disposition::Verified => {
                            counts.verified += 1;
                            unique_verified.insert((&run.case_id, id));
                        }
                        Disposition::FalsePositive => {
                            counts.false_positives += 1;
                            fp += 1;
                        }
                        Disposition::Unresolved => counts.unresolved += 1,
                    }
                }
                if run.complete {
                    complete += 1;
                }
                if is_clean(&run.case_id) {
                    clean_runs += 1;
                    if fp > 0 {
                        clean_runs_with_fp += 1;
                    }
                }
                if let Some(m) = &run.metrics {
                    for (name, value) in m.values() {
                        if let (Some(v), Some((_, list))) = (value, metric_values.iter_mut().find(|(n, _)| *n == name)) {
                            list.push(v);
                        }
                    }
                }
            }
            let class = |cases: &[String]| {
                let sub = submitted.iter().filter(|(c, _)| cases.iter().any(|x| x == c)).count();
                let expected_runs = cases.len() * trials;
                ClassCoverage { expected_runs, submitted_runs: sub, omitted_runs: expected_runs - sub }
            };
            let expected_runs = plan.case_ids.len() * trials;
            let omitted_case_trials: Vec<CaseTrial> = plan
                .case_ids
                .iter()
                .flat_map(|c| plan.trial_ids.iter().map(move |t| (c, t)))
                .filter(|(c, t)| !submitted.contains(&(c.as_str(), t.as_str())))
                .map(|(c, t)| CaseTrial { case_id: c.clone(), trial_id: t.clone() })
                .collect();
            let coverage = Coverage {
                expected_runs,
                submitted_runs: submitted.len(),
                omitted_cases: plan.case_ids.iter().filter(|c| omitted_case_trials.iter().any(|p| p.case_id == **c)).cloned().collect(),
                omitted_case_trials,
                classes: Classes { clean: class(&clean_cases), finding: class(&finding_cases) },
            };
            let runs = submitted.len();
            let metrics = MetricSummaries(
                metric_values
                    .into_iter()
                    .map(|(name, values)| {
                        let total: f64 = values.iter().sum();
                        let summary = if values.is_empty() {
                            MetricSummary { observations: 0, runs, total: None, mean: None }
                        } else {
                            MetricSummary { observations: values.len(), runs, total: Some(total), mean: Some(total / values.len() as f64) }
                        };
                        (name.to_string(), summary)
                    })
                    .collect(),
            );
            counts.unique_verified = unique_verified.len();
            counts.unique_expected = unique_expected.len();
            StrategyScore {
                strategy: strategy.name.clone(),
                runs,
                precision: ratio(counts.verified, counts.verified + counts.false_positives),
                recall: ratio(counts.verified, opportunities),
                completeness: ratio(complete, expected_runs),
                observed_completeness: ratio(complete, runs),
                clean_case_false_positive_rate: ratio(clean_runs_with_fp, clean_runs),
                findings: counts,
                coverage,
                metrics,
            }
        })
        .collect();
    Score {
        version: 1,
        method: method.to_string(),
        results: results.to_string(),
        oracle: oracle_label.to_string(),
        case_ids: plan.case_ids.clone(),
        trial_ids: plan.trial_ids.clone(),
        clean_cases,
        finding_cases,
        finding_opportunities: opportunities,
        strategies,
    }
}

/// The method used when nothing says otherwise: seed 002's results are adjudicated by a person.
pub const DEFAULT_METHOD: &str = "adjudicated by a person (seed 002 captured results)";

/// `captured-results.json` → `captured-results.adjudication.json`: the record
/// `runner adjudicate import` writes beside the results it produced, naming its method.
pub fn adjudication_path(results: &Path) -> PathBuf {
    let stem = results.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "results".into());
    results.with_file_name(format!("{stem}.adjudication.json"))
}

/// The method recorded beside `results`, if any.
pub fn recorded_method(results: &Path) -> Option<String> {
    let text = crate::bounded::input_text(&adjudication_path(results)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("method")?.as_str().map(str::to_string)
}

/// A rate for people: up to four decimals, trailing zeros dropped; `–` for null.
pub fn fmt_rate(value: Option<f64>) -> String {
    match value {
        None => "–".into(),
        Some(v) => {
            let s = format!("{v:.4}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            s.to_string()
        }
    }
}

fn fmt_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

impl Score {
    /// What a person reads at a glance: one table row per strategy, then coverage and
    /// metrics per strategy.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "score of `{}` against `{}`", self.results, self.oracle);
        let _ = writeln!(out, "method: {}", self.method);
        let _ = writeln!(
            out,
            "plan: {} cases ({} clean, {} with findings) × {} trials; {} finding opportunities",
            self.case_ids.len(),
            self.clean_cases.len(),
            self.finding_cases.len(),
            self.trial_ids.len(),
            self.finding_opportunities
        );
        if self.strategies.is_empty() {
            let _ = writeln!(out, "no strategies");
            return out;
        }
        let shown = |s: &StrategyScore| if s.strategy.is_empty() { "\"\"".to_string() } else { s.strategy.clone() };
        let width = self.strategies.iter().map(|s| shown(s).chars().count()).max().unwrap_or(8).max(8);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<width$}  {:>9}  {:>6}  {:>8}  {:>3}  {:>5}  {:>7}  {:>8}  {:>8}  {:>8}  {:>5}",
            "strategy", "precision", "recall", "verified", "FP", "unres", "unique", "complete", "observed", "clean FP", "runs"
        );
        for s in &self.strategies {
            let _ = writeln!(
                out,
                "{:<width$}  {:>9}  {:>6}  {:>8}  {:>3}  {:>5}  {:>7}  {:>8}  {:>8}  {:>8}  {:>5}",
                shown(s),
                fmt_rate(s.precision),
                fmt_rate(s.recall),
                s.findings.verified,
                s.findings.false_positives,
                s.findings.unresolved,
                format!("{}/{}", s.findings.unique_verified, s.findings.unique_expected),
                fmt_rate(s.completeness),
                fmt_rate(s.observed_completeness),
                fmt_rate(s.clean_case_false_positive_rate),
                format!("{}/{}", s.coverage.submitted_runs, s.coverage.expected_runs),
            );
        }
        for s in &self.strategies {
            let c = &s.coverage;
            let _ = writeln!(out);
            let _ = writeln!(out, "{}:", shown(s));
            let _ = writeln!(
                out,
                "  coverage: {}/{} runs submitted (clean {}/{}, finding {}/{})",
                c.submitted_runs,
                c.expected_runs,
                c.classes.clean.submitted_runs,
                c.classes.clean.expected_runs,
                c.classes.finding.submitted_runs,
                c.classes.finding.expected_runs
            );
            if !c.omitted_cases.is_empty() {
                let _ = writeln!(out, "  cases with an omitted trial: {}", c.omitted_cases.join(", "));
            }
            if !c.omitted_case_trials.is_empty() {
                let pairs: Vec<String> = c.omitted_case_trials.iter().map(|p| format!("{}/{}", p.case_id, p.trial_id)).collect();
                let _ = writeln!(out, "  omitted runs (count as misses): {}", pairs.join(", "));
            }
            if s.clean_case_false_positive_rate.is_none() {
                let _ = writeln!(out, "  clean-case false-positive rate: – (no clean-case runs submitted)");
            }
            let metrics: Vec<String> = METRIC_NAMES
                .iter()
                .filter_map(|name| s.metrics.get(name).map(|m| (name, m)))
                .map(|(name, m)| match (m.total, m.mean) {
                    (Some(total), Some(mean)) => format!("{name} {} obs, total {}, mean {}", m.observations, fmt_number(total), fmt_number(mean)),
                    _ => format!("{name} missing"),
                })
                .collect();
            let _ = writeln!(out, "  metrics: {}", metrics.join("; "));
        }
        out
    }
}

#[cfg(test)]
mod tests;
