//! Seed 002's captured results (`{version, plan: {caseIds, trialIds}, strategies: [{name,
//! runs: [{caseId, trialId, complete, findings: [{id, disposition}], metrics?}]}]}`), read
//! with the seed's own strictness (unknown keys are errors; a key repeated within an object
//! takes its last value, as in the seed's JavaScript).
//!
//! One strategy is replayed (`strategy`, or the file's only one). Its runs map onto runner's:
//! subject = `caseId`; repeat N = the N-th trial of `plan.trialIds` (in the order the plan
//! lists them). Each claim becomes a finding about the whole change (file `""`, no line) whose
//! id is the claim's id (`F01`, `case-06-fp-01`) and whose message names the claim and its
//! disposition; the file holds no text, location, severity or category, so those are
//! runner's defaults (info, maintainability). `metrics` become the run's cost
//! (`latencyMs` → wall time, `inputTokens`/`outputTokens` → prompt/completion tokens);
//! `complete: false` is counted (`seed002_incomplete`). A trial the file omits has no part:
//! the replay's `missing` policy decides.

use super::{Part, Replayed, DEFAULT_CATEGORY, DEFAULT_SEVERITY};
use crate::finding::Finding;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Captured {
    version: serde_json::Value,
    plan: Plan,
    strategies: Vec<Strategy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Plan {
    #[allow(dead_code)]
    case_ids: Vec<String>,
    trial_ids: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Strategy {
    name: String,
    runs: Vec<Run>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Run {
    case_id: String,
    trial_id: String,
    complete: bool,
    findings: Vec<Claim>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metrics: Option<Metrics>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Claim {
    id: String,
    disposition: String,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Metrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_tokens: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output_tokens: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    total_tokens: Option<f64>,
}

/// One strategy's runs, by (case, repeat).
#[derive(Debug)]
pub(crate) struct Seed002File {
    pub parts: BTreeMap<(String, u32), Part>,
    /// How many trials the plan declares.
    pub trials: usize,
}

/// The dispositions seed 002 defines.
const DISPOSITIONS: [&str; 3] = ["verified", "false_positive", "unresolved"];

/// Reads the runs of one strategy of a captured-results file.
pub(crate) fn parse(text: &str, strategy: Option<&str>) -> Result<Seed002File, String> {
    // As seed 002's scorer reads it (`JSON.parse`): a repeated key takes its last value.
    let captured: Captured = crate::subject::files::parse_json_last_wins(text).map_err(|e| format!("not seed 002's captured results: {e}"))?;
    if captured.version.as_f64() != Some(1.0) {
        return Err(format!("`version` must be 1, not {}", captured.version));
    }
    let names: Vec<&str> = captured.strategies.iter().map(|s| s.name.as_str()).collect();
    let chosen = match strategy {
        Some(name) => captured
            .strategies
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| format!("no strategy `{name}`; the file has {}", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")))?,
        None => match captured.strategies.as_slice() {
            [only] => only,
            [] => return Err("the file has no strategy".into()),
            _ => return Err(format!("the file has {} strategies ({}): choose one with `strategy`", names.len(), names.join(", "))),
        },
    };
    let mut parts = BTreeMap::new();
    for (i, run) in chosen.runs.iter().enumerate() {
        let at = format!("strategy `{}` runs[{i}]", chosen.name);
        let Some(position) = captured.plan.trial_ids.iter().position(|t| *t == run.trial_id) else {
            return Err(format!("{at}: trial `{}` is not in `plan.trialIds`", run.trial_id));
        };
        let repeat = position as u32 + 1;
        let mut replayed = Replayed::default();
        for (j, claim) in run.findings.iter().enumerate() {
            if !DISPOSITIONS.contains(&claim.disposition.as_str()) {
                return Err(format!("{at}.findings[{j}]: disposition `{}` is not one of {}", claim.disposition, DISPOSITIONS.join(", ")));
            }
            if claim.id.trim().is_empty() {
                return Err(format!("{at}.findings[{j}]: empty claim `id`"));
            }
            replayed.findings.push(Finding {
                id: claim.id.clone(),
                file: String::new(),
                line: 0,
                range: None,
                severity: DEFAULT_SEVERITY,
                category: DEFAULT_CATEGORY,
                confidence: 1.0,
                message: format!("seed 002 claim {} ({})", claim.id, claim.disposition),
                suggestion: None,
                cursor_uri: None,
                evidence_lines: None,
            });
        }
        if !run.complete {
            replayed.counters.insert("seed002_incomplete".into(), 1);
        }
        if let Some(m) = &run.metrics {
            let whole = |v: Option<f64>| v.filter(|n| n.is_finite() && *n >= 0.0).map(|n| n.round() as u64);
            replayed.latency_ms = whole(m.latency_ms);
            replayed.prompt_tokens = whole(m.input_tokens);
            replayed.completion_tokens = whole(m.output_tokens);
        }
        replayed.provenance.insert("replay_strategy".into(), chosen.name.clone());
        replayed.provenance.insert("replay_trial".into(), run.trial_id.clone());
        let raw = serde_json::to_string(run).map_err(|e| format!("{at}: {e}"))?;
        if parts.insert((run.case_id.clone(), repeat), Part { raw, replayed }).is_some() {
            return Err(format!("{at}: case `{}` trial `{}` appears twice", run.case_id, run.trial_id));
        }
    }
    Ok(Seed002File { parts, trials: captured.plan.trial_ids.len() })
}
