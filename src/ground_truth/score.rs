//! Seed 002's scorer, exactly (METRICS.md, "Seed 002: the scorer's exact formulas"): human
//! adjudicated captured results in that document's format, scored per strategy against an
//! oracle — precision, recall over planned opportunities, unique verified and expected,
//! completeness, clean-case false-positive rate, coverage and metric summaries.

use super::oracle::Oracle;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `captured-results.json`, as seed 002 documents it. Unknown keys anywhere are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapturedResults {
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
    /// Only provider-reported values; omitted when none were supplied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    pub fn as_str(self) -> &'static str {
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

/// Provider-reported telemetry; a missing value stays missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
}

impl Metrics {
    /// The supplied values by their seed 002 name.
    fn values(&self) -> [(&'static str, Option<f64>); 4] {
        [
            ("latencyMs", self.latency_ms),
            ("inputTokens", self.input_tokens.map(|v| v as f64)),
            ("outputTokens", self.output_tokens.map(|v| v as f64)),
            ("totalTokens", self.total_tokens.map(|v| v as f64)),
        ]
    }
}

pub const METRIC_NAMES: [&str; 4] = ["latencyMs", "inputTokens", "outputTokens", "totalTokens"];

#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("failed to read `{path}`: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("failed to parse `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("failed to score `{path}`: {}", .problems.join("; "))]
    Invalid { path: PathBuf, problems: Vec<String> },
}

/// Reads a captured-results file; unknown keys and malformed values are errors with their
/// line and column.
pub fn load_captured(path: &Path) -> Result<CapturedResults, ScoreError> {
    let text = crate::target::files::read_text(path).map_err(|source| ScoreError::Read { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|e| ScoreError::Parse { path: path.to_path_buf(), message: e.to_string() })
}

/// Every problem that makes captured results unscorable against `oracle`, at once.
pub fn check(captured: &CapturedResults, oracle: &Oracle) -> Vec<String> {
    let mut problems = Vec::new();
    if captured.version != 1 {
        problems.push(format!("`version` must be 1, not {}", captured.version));
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
        if id.is_empty() {
            problems.push("`plan.trialIds` has an empty id".into());
        }
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
    if captured.strategies.is_empty() {
        problems.push("`strategies` is empty".into());
    }
    let catalog: BTreeSet<&str> = oracle.findings.iter().map(|f| f.id.as_str()).collect();
    let mut names = BTreeSet::new();
    for strategy in &captured.strategies {
        let s = &strategy.name;
        if s.is_empty() {
            problems.push("a strategy has an empty `name`".into());
        } else if !names.insert(s) {
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
                if let Some(l) = m.latency_ms {
                    if !(l.is_finite() && l >= 0.0) {
                        problems.push(format!("{at}: `metrics.latencyMs` must be a non-negative number, not {l}"));
                    }
                }
            }
            let expected: BTreeSet<&str> = oracle.case(&run.case_id).map(|c| c.expected_finding_ids.iter().map(String::as_str).collect()).unwrap_or_default();
            let mut dispositions: BTreeMap<&str, Disposition> = BTreeMap::new();
            for claim in &run.findings {
                if claim.id.trim().is_empty() {
                    problems.push(format!("{at}: a finding has an empty `id`"));
                    continue;
                }
                if let Some(previous) = dispositions.insert(&claim.id, claim.disposition) {
                    if previous != claim.disposition {
                        problems.push(format!(
                            "{at}: finding `{}` is both `{}` and `{}`",
                            claim.id,
                            previous.as_str(),
                            claim.disposition.as_str()
                        ));
                    }
                }
                match claim.disposition {
                    Disposition::Verified if !expected.contains(claim.id.as_str()) => problems.push(format!(
                        "{at}: verified finding `{}` is not one of the case's expected ids ({})",
                        claim.id,
                        if expected.is_empty() { "none: a clean case".to_string() } else { expected.iter().map(|e| format!("`{e}`")).collect::<Vec<_>>().join(", ") }
                    )),
                    Disposition::FalsePositive if catalog.contains(claim.id.as_str()) => problems.push(format!(
                        "{at}: oracle finding `{}` cannot be a false positive; give each false positive a case-scoped id such as `{}-fp-01`",
                        claim.id, run.case_id
                    )),
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
    pub cases: usize,
    pub expected_runs: usize,
    pub submitted_runs: usize,
    pub omitted_runs: usize,
    pub omitted_cases: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseTrial {
    pub case_id: String,
    pub trial_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub expected_runs: usize,
    pub submitted_runs: usize,
    pub omitted_runs: usize,
    /// Planned cases with no submitted run at all.
    pub omitted_cases: Vec<String>,
    /// Planned (case, trial) pairs without a submitted run.
    pub omitted_pairs: Vec<CaseTrial>,
    pub clean: ClassCoverage,
    pub finding: ClassCoverage,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingCounts {
    pub verified: usize,
    pub false_positive: usize,
    pub unresolved: usize,
}

/// Observations, total and mean over supplied values only; `null` when none were supplied.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetricSummary {
    pub observations: usize,
    pub total: Option<f64>,
    pub mean: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyScore {
    pub name: String,
    pub findings: FindingCounts,
    /// verified / (verified + false_positive); `null` on 0/0.
    pub precision: Option<f64>,
    /// verified / (Σ planned cases |expected ids| × |trialIds|): omitted runs count as misses.
    pub recall: Option<f64>,
    pub unique_verified: usize,
    pub unique_expected: usize,
    /// Runs with `complete: true` / planned runs.
    pub completeness: Option<f64>,
    /// Runs with `complete: true` / submitted runs.
    pub observed_completeness: Option<f64>,
    /// Submitted clean-case runs with ≥ 1 false positive / submitted clean-case runs.
    pub clean_case_false_positive_rate: Option<f64>,
    pub coverage: Coverage,
    pub metrics: BTreeMap<String, MetricSummary>,
}

/// The whole score document.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Score {
    /// Which method produced the dispositions, e.g. "adjudicated by a person: sheet.csv".
    pub method: String,
    pub results: String,
    pub oracle: String,
    pub case_ids: Vec<String>,
    pub trial_ids: Vec<String>,
    pub clean_cases: Vec<String>,
    pub finding_cases: Vec<String>,
    /// Σ over planned cases of |expected ids| × |trialIds|.
    pub finding_opportunities: usize,
    pub strategies: Vec<StrategyScore>,
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
            let mut metric_values: BTreeMap<&str, Vec<f64>> = METRIC_NAMES.iter().map(|n| (*n, Vec::new())).collect();
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
                            counts.false_positive += 1;
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
                        if let (Some(v), Some(list)) = (value, metric_values.get_mut(name)) {
                            list.push(v);
                        }
                    }
                }
            }
            let class = |cases: &[String]| {
                let sub = submitted.iter().filter(|(c, _)| cases.iter().any(|x| x == c)).count();
                let expected_runs = cases.len() * trials;
                ClassCoverage {
                    cases: cases.len(),
                    expected_runs,
                    submitted_runs: sub,
                    omitted_runs: expected_runs - sub,
                    omitted_cases: cases.iter().filter(|c| !submitted.iter().any(|(s, _)| s == c)).cloned().collect(),
                }
            };
            let expected_runs = plan.case_ids.len() * trials;
            let coverage = Coverage {
                expected_runs,
                submitted_runs: submitted.len(),
                omitted_runs: expected_runs - submitted.len(),
                omitted_cases: plan.case_ids.iter().filter(|c| !submitted.iter().any(|(s, _)| s == c)).cloned().collect(),
                omitted_pairs: plan
                    .case_ids
                    .iter()
                    .flat_map(|c| plan.trial_ids.iter().map(move |t| (c, t)))
                    .filter(|(c, t)| !submitted.contains(&(c.as_str(), t.as_str())))
                    .map(|(c, t)| CaseTrial { case_id: c.clone(), trial_id: t.clone() })
                    .collect(),
                clean: class(&clean_cases),
                finding: class(&finding_cases),
            };
            let metrics = metric_values
                .into_iter()
                .map(|(name, values)| {
                    let total: f64 = values.iter().sum();
                    let summary = if values.is_empty() {
                        MetricSummary::default()
                    } else {
                        MetricSummary { observations: values.len(), total: Some(total), mean: Some(total / values.len() as f64) }
                    };
                    (name.to_string(), summary)
                })
                .collect();
            StrategyScore {
                name: strategy.name.clone(),
                precision: ratio(counts.verified, counts.verified + counts.false_positive),
                recall: ratio(counts.verified, opportunities),
                unique_verified: unique_verified.len(),
                unique_expected: unique_expected.len(),
                completeness: ratio(complete, expected_runs),
                observed_completeness: ratio(complete, submitted.len()),
                clean_case_false_positive_rate: ratio(clean_runs_with_fp, clean_runs),
                findings: counts,
                coverage,
                metrics,
            }
        })
        .collect();
    Score {
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
    let text = std::fs::read_to_string(adjudication_path(results)).ok()?;
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
        let width = self.strategies.iter().map(|s| s.name.chars().count()).max().unwrap_or(8).max(8);
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
                s.name,
                fmt_rate(s.precision),
                fmt_rate(s.recall),
                s.findings.verified,
                s.findings.false_positive,
                s.findings.unresolved,
                format!("{}/{}", s.unique_verified, s.unique_expected),
                fmt_rate(s.completeness),
                fmt_rate(s.observed_completeness),
                fmt_rate(s.clean_case_false_positive_rate),
                format!("{}/{}", s.coverage.submitted_runs, s.coverage.expected_runs),
            );
        }
        for s in &self.strategies {
            let c = &s.coverage;
            let _ = writeln!(out);
            let _ = writeln!(out, "{}:", s.name);
            let _ = writeln!(
                out,
                "  coverage: {}/{} runs submitted (clean {}/{}, finding {}/{})",
                c.submitted_runs, c.expected_runs, c.clean.submitted_runs, c.clean.expected_runs, c.finding.submitted_runs, c.finding.expected_runs
            );
            if !c.omitted_cases.is_empty() {
                let _ = writeln!(out, "  omitted cases: {}", c.omitted_cases.join(", "));
            }
            if !c.omitted_pairs.is_empty() {
                let pairs: Vec<String> = c.omitted_pairs.iter().map(|p| format!("{}/{}", p.case_id, p.trial_id)).collect();
                let _ = writeln!(out, "  omitted runs (count as misses): {}", pairs.join(", "));
            }
            if s.clean_case_false_positive_rate.is_none() {
                let _ = writeln!(out, "  clean-case false-positive rate: – (no clean-case runs submitted)");
            }
            let metrics: Vec<String> = METRIC_NAMES
                .iter()
                .filter_map(|name| s.metrics.get(*name).map(|m| (name, m)))
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
