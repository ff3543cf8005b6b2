//! The `pipeline` reviewer: a review strategy as stages of calls to other named reviewers.
//!
//! Each stage names a model (`openai`, `ollama`) or `command` reviewer of the manifest, a role
//! (review, verify, synthesize) and how many fresh instances it runs. A model stage's prompt
//! (handlebars, hashed into the key) sees the subject as a review's prompt does plus the
//! earlier stages' findings (`earlier`, `findings`) and, for a verifier, the claims it checks
//! (`claims`: the earlier review stages' findings of the selected severities and categories).
//! The last stage's findings are the run's findings; every call's raw answer is kept in the
//! run's raw output with when it started and which run made it.
//!
//! Every call is cached on its own through the run's [`Calls`](super::Calls), keyed by the
//! stage's fingerprint, the repeat, the instance and a hash of what it received: changing
//! one stage's prompt re-runs that stage's calls (and later ones only where what they receive
//! changed), and an interrupted run repeats no finished call. A model answer that cannot be
//! read (one that does not parse, or is cut at the token limit) is kept (and cached) as the
//! call's error, and the run goes on without its findings, noted in the run's schema
//! problems — unless every call its stage made failed: then the run fails, naming the stage
//! and its first failures, and those calls are not cached (a stage whose calls were stopped
//! for its budget made none, and did not fail). Anything else (a server that fails, a
//! timeout) fails the run.
//!
//! With a `total-budget`, each stage gets its share, and the share holds prompt and completion
//! tokens together: before a model call, its prompt tokens are estimated from the rendered
//! prompts' UTF-8 bytes (bytes per token learned from the provider-reported usage of the run's
//! earlier calls of the same reviewer, less a margin; the stage's `prompt-chars-per-token`
//! before any) and reserved from what the share leaves; the rest, at most the reviewer's
//! `max-tokens`, is the call's `max_tokens`. A call that cannot pay for its prompt is not made,
//! nor are its stage's later calls (recorded as stopped, "budget spent"); each call made is
//! charged what the provider reported. The allowance is part of the call's key.

pub mod spec;

pub use spec::{read_spec, Backend, PipelineSpec, Role, StageSpec};

use super::command::CommandReviewer;
use super::llm::LlmReviewer;
use super::{Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer};
use crate::finding::Finding;
use crate::matrix::Cell;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Version of the stage rules (what a stage receives, how calls are keyed); in the fingerprint.
pub const PIPELINE_VERSION: &str = "pipeline-2";

enum Runner {
    Llm(Box<LlmReviewer>),
    Command(Box<CommandReviewer>),
}

impl Runner {
    fn reviewer(&self) -> &dyn Reviewer {
        match self {
            Self::Llm(r) => r.as_ref(),
            Self::Command(r) => r.as_ref(),
        }
    }
}

pub struct PipelineReviewer {
    spec: PipelineSpec,
    runners: Vec<Runner>,
}

/// What one call produced, as cached.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Answer {
    findings: Vec<Finding>,
    raw: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// When the call started (UTC).
    started_at: String,
    cost: Cost,
    #[serde(default)]
    provenance: BTreeMap<String, Value>,
    #[serde(default)]
    schema_problems: Vec<String>,
    /// The UTF-8 bytes of the call's prompts, its estimated prompt tokens and the
    /// `max_tokens` it was given, when its stage has a budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompt_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompt_estimate: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// Not made: what was left of its stage's share could not pay for its prompt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    skipped: bool,
}

/// The margin applied to the bytes per token learned from a run's earlier calls.
pub const CALIBRATION_MARGIN: f64 = 0.9;

/// Per stage reviewer, the fewest bytes of prompt per token the provider reported for a run's
/// calls so far: the bound the run's later calls of that reviewer estimate their prompt with.
#[derive(Default)]
struct Calibration(BTreeMap<String, f64>);

impl Calibration {
    /// Bytes per 1,000 tokens assumed for a call of `stage`: the learned ratio less
    /// [`CALIBRATION_MARGIN`], else the stage's declared one.
    fn bytes_per_ktoken(&self, stage: &StageSpec) -> u64 {
        let ratio = self.0.get(&stage.reviewer).map_or(stage.chars_per_token, |r| r * CALIBRATION_MARGIN);
        ((ratio * 1000.0).floor() as u64).max(1)
    }

    fn learn(&mut self, stage: &StageSpec, answer: &Answer) {
        if let (Some(bytes), Some(tokens)) = (answer.prompt_bytes, answer.cost.prompt_tokens) {
            if bytes > 0 && tokens > 0 {
                let ratio = bytes as f64 / tokens as f64;
                let slot = self.0.entry(stage.reviewer.clone()).or_insert(ratio);
                *slot = slot.min(ratio);
            }
        }
    }
}

/// What a budgeted model call may spend, fixed before it is made (and part of its key):
/// what its stage's share leaves (`None`: a provider reported no tokens, so the spend is
/// unknown and only the share itself bounds the call) and the bytes per 1,000 tokens its
/// prompt is estimated with.
struct Allowance {
    left: Option<u64>,
    share: u64,
    bytes_per_ktoken: u64,
}

impl Allowance {
    fn key(&self) -> Value {
        json!({ "left": self.left, "bytes_per_ktoken": self.bytes_per_ktoken })
    }

    /// The prompt tokens `bytes` of prompt are estimated at (rounded up).
    fn estimate(&self, bytes: u64) -> u64 {
        (bytes * 1000).div_ceil(self.bytes_per_ktoken)
    }

    /// The call's `max_tokens` (at most `ceiling`), or `None` when what is left cannot pay for
    /// its estimated prompt and one completion token.
    fn max_tokens(&self, estimate: u64, ceiling: u32) -> Option<u32> {
        let left = self.left.unwrap_or(self.share);
        (estimate < left).then(|| (left - estimate).min(u64::from(ceiling)) as u32)
    }
}

impl Answer {
    /// Prompt plus completion tokens, when the provider reported both.
    fn tokens(&self) -> Option<u64> {
        Some(self.cost.prompt_tokens? + self.cost.completion_tokens?)
    }
}

/// One stage's calls in a run.
struct StageRun {
    findings: Vec<Finding>,
    /// The model that answered its first call, as its provenance names it.
    model: Option<String>,
    calls: Vec<Value>,
    spent: Option<u64>,
    stopped: u32,
    note: Option<String>,
}

impl PipelineReviewer {
    pub fn new(spec: PipelineSpec) -> Result<Self, ReviewError> {
        let mut runners = Vec::new();
        for stage in &spec.stages {
            runners.push(match &stage.backend {
                Some(Backend::Llm(llm)) => Runner::Llm(Box::new(LlmReviewer::new(llm.as_ref().clone())?)),
                Some(Backend::Command(c)) => Runner::Command(Box::new(CommandReviewer::new(c.as_ref().clone()))),
                None => return Err(ReviewError::failed(format!("stage `{}`'s reviewer `{}` was not resolved", stage.name, stage.reviewer))),
            });
        }
        Ok(Self { spec, runners })
    }

    pub fn spec(&self) -> &PipelineSpec {
        &self.spec
    }

    fn stage_fingerprint(&self, i: usize, cell: &Cell) -> Value {
        let stage = &self.spec.stages[i];
        let runner = self.runners[i].reviewer();
        let mut f = json!({
            "name": stage.name,
            "role": stage.role.as_str(),
            "instances": stage.instances,
            "reviewer_kind": runner.kind(),
            "reviewer": runner.fingerprint(cell),
        });
        if stage.role == Role::Verify {
            f["checks"] = json!({
                "severity": stage.severities.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "category": stage.categories.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            });
        }
        if let Some(budget) = stage.budget(self.spec.total_budget) {
            f["budget"] = json!(budget);
            f["prompt_chars_per_token"] = json!(stage.chars_per_token);
        }
        f
    }

    /// What stage `i` receives from the stages done before it (`earlier`, `findings`,
    /// `claims`), and whether it is a verifier with no claim to check (it makes no call).
    fn received<'f>(&self, i: usize, done: impl Iterator<Item = (usize, &'f [Finding])> + Clone) -> (Value, bool) {
        let stage = &self.spec.stages[i];
        let earlier: Vec<Value> = done
            .clone()
            .map(|(j, findings)| json!({ "name": self.spec.stages[j].name, "role": self.spec.stages[j].role.as_str(), "findings": shown(findings) }))
            .collect();
        let mut seen = BTreeSet::new();
        let merged: Vec<Finding> = done.clone().flat_map(|(_, f)| f.iter()).filter(|f| seen.insert(f.id.clone())).cloned().collect();
        let claims: Vec<Finding> = if stage.role == Role::Verify {
            let mut seen = BTreeSet::new();
            done.filter(|(j, _)| self.spec.stages[*j].role == Role::Review)
                .flat_map(|(_, f)| f.iter())
                .filter(|f| stage.severities.is_empty() || stage.severities.contains(&f.severity))
                .filter(|f| stage.categories.is_empty() || stage.categories.contains(&f.category))
                .filter(|f| seen.insert(f.id.clone()))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        let no_claims = stage.role == Role::Verify && claims.is_empty();
        (json!({ "earlier": earlier, "findings": shown(&merged), "claims": shown(&claims) }), no_claims)
    }

    /// The inputs one call is cached under (the engine adds the subject's identity).
    fn call_inputs(fingerprint: &Value, repeat: u32, instance: u32, received: &Value, allowance: Option<&Allowance>) -> Value {
        let received_hash = blake3::hash(&serde_json::to_vec(received).unwrap_or_default()).to_hex().to_string();
        let mut inputs = json!({ "pipeline": PIPELINE_VERSION, "stage": fingerprint, "repeat": repeat, "instance": instance, "received": received_hash });
        if let Some(a) = allowance {
            inputs["allowance"] = a.key();
        }
        inputs
    }

    /// The allowance of stage `i`'s next call, when it is a model stage with a budget.
    fn allowance(&self, i: usize, spent: Option<u64>, calibration: &Calibration) -> Option<Allowance> {
        let stage = &self.spec.stages[i];
        let share = stage.budget(self.spec.total_budget)?;
        matches!(self.runners[i], Runner::Llm(_)).then(|| Allowance {
            left: spent.map(|s| share.saturating_sub(s)),
            share,
            bytes_per_ktoken: calibration.bytes_per_ktoken(stage),
        })
    }

    /// Per stage, what the call cache holds of a run's calls: walked from the first stage,
    /// each stage's calls computed from the cached answers of the stages before it (and, with
    /// a budget, of the calls before it).
    pub fn tally(&self, cell: &Cell, repeat: u32, calls: &dyn super::CallCache) -> Vec<super::StageCalls> {
        let mut out = Vec::new();
        let mut done: Vec<(usize, Vec<Finding>)> = Vec::new();
        let mut calibration = Calibration::default();
        let mut known = true;
        for (i, stage) in self.spec.stages.iter().enumerate() {
            let mut tally = super::StageCalls { stage: stage.name.clone(), ..super::StageCalls::default() };
            if !known {
                tally.unknown = stage.instances;
                out.push(tally);
                continue;
            }
            let (received, no_claims) = self.received(i, done.iter().map(|(j, f)| (*j, f.as_slice())));
            let fingerprint = self.stage_fingerprint(i, cell);
            let budget = stage.budget(self.spec.total_budget);
            let (mut findings, mut seen, mut spent) = (Vec::new(), BTreeSet::new(), Some(0));
            let instances = if no_claims { 0 } else { stage.instances };
            for instance in 0..instances {
                if let (Some(b), Some(s)) = (budget, spent) {
                    if s >= b && matches!(self.runners[i], Runner::Command(_)) {
                        break;
                    }
                }
                let allowance = self.allowance(i, spent, &calibration);
                match calls
                    .lookup(&Self::call_inputs(&fingerprint, repeat, instance, &received, allowance.as_ref()))
                    .and_then(|v| serde_json::from_value::<Answer>(v).ok())
                {
                    Some(answer) if answer.skipped => {
                        tally.cached += 1;
                        break;
                    }
                    Some(answer) => {
                        tally.cached += 1;
                        spent = spent.zip(answer.tokens()).map(|(s, t)| s + t);
                        calibration.learn(stage, &answer);
                        findings.extend(answer.findings.into_iter().filter(|f| seen.insert(f.id.clone())));
                    }
                    None => {
                        known = false;
                        if allowance.is_some() {
                            // What this call spends sets the next one's allowance (its key).
                            tally.to_run += 1;
                            tally.unknown += instances - instance - 1;
                            break;
                        }
                        tally.to_run += 1;
                    }
                }
            }
            done.push((i, findings));
            out.push(tally);
        }
        out
    }

    async fn run(&self, job: &ReviewJob) -> Result<ReviewOutput, ReviewError> {
        let run_id = format!("{} #{} @{}", job.cell.id, job.repeat, job.subject.id);
        let mut done: Vec<(usize, StageRun)> = Vec::new();
        let mut out = ReviewOutput::default();
        let mut cost = Cost::default();
        let mut calibration = Calibration::default();
        for i in 0..self.spec.stages.len() {
            let (received, no_claims) = self.received(i, done.iter().map(|(j, s)| (*j, s.findings.as_slice())));
            let run = if no_claims {
                StageRun { findings: Vec::new(), model: None, calls: Vec::new(), spent: Some(0), stopped: 0, note: Some("no claim to verify".into()) }
            } else {
                self.run_stage(i, job, &received, &run_id, &mut cost, &mut calibration).await?
            };
            done.push((i, run));
        }
        let budget = self.spec.total_budget;
        let mut stages_raw = Vec::new();
        let mut allocation = serde_json::Map::new();
        let mut models = serde_json::Map::new();
        let bump = |out: &mut ReviewOutput, key: String, n: u64| *out.counters.entry(key).or_insert(0) += n;
        for (i, run) in &done {
            let stage = &self.spec.stages[*i];
            let stage_budget = stage.budget(budget);
            if let Some(b) = stage_budget {
                allocation.insert(stage.name.clone(), json!(b));
            }
            if let Some(model) = &run.model {
                models.insert(stage.name.clone(), json!(model));
            }
            bump(&mut out, format!("stage.{}.calls", stage.name), run.calls.len() as u64);
            if let Some(spent) = run.spent {
                bump(&mut out, format!("stage.{}.tokens", stage.name), spent);
            }
            if run.stopped > 0 {
                bump(&mut out, format!("stage.{}.stopped", stage.name), u64::from(run.stopped));
                out.schema_problems.push(format!("stage `{}` spent its budget: {} of its calls were not made", stage.name, run.stopped));
            }
            for call in &run.calls {
                if let Some(e) = call.get("error").and_then(Value::as_str) {
                    bump(&mut out, "calls_failed".into(), 1);
                    out.schema_problems.push(format!("stage `{}` call {} failed: {e}", stage.name, call["instance"]));
                }
                if call["cached"] == json!(true) {
                    bump(&mut out, "calls_cached".into(), 1);
                }
                // A prompt the provider counted above its estimate: the bound did not hold.
                if let (Some(reported), Some(estimate)) = (call["prompt_tokens"].as_u64(), call["prompt_estimate"].as_u64()) {
                    if reported > estimate {
                        bump(&mut out, "prompt_underestimates".into(), 1);
                    }
                }
            }
            bump(&mut out, "calls".into(), run.calls.len() as u64);
            stages_raw.push(json!({
                "name": stage.name,
                "role": stage.role.as_str(),
                "reviewer": stage.reviewer,
                "family": stage.family,
                "budget": stage_budget,
                "spent": run.spent,
                "stopped": run.stopped,
                "note": run.note,
                "findings": run.findings.len(),
                "calls": run.calls,
            }));
        }
        let Some((last, final_run)) = done.pop() else { return Err(ReviewError::failed("a pipeline without stages")) };
        if final_run.calls.is_empty() && final_run.note.is_none() {
            out.schema_problems.push(format!("the final stage `{}` made no call", self.spec.stages[last].name));
        }
        out.findings = final_run.findings;
        out.cost = cost;
        out.provenance
            .insert("pipeline".into(), json!(self.spec.stages.iter().map(|s| format!("{}:{}×{}", s.name, s.role.as_str(), s.instances)).collect::<Vec<_>>()));
        if !models.is_empty() {
            out.provenance.insert("stage_models".into(), Value::Object(models));
        }
        if let Some(total) = budget {
            out.provenance.insert("total_budget".into(), json!(total));
            out.provenance.insert("allocation".into(), Value::Object(allocation));
        }
        out.raw = serde_json::to_string(&json!({ "run": run_id, "stages": stages_raw })).unwrap_or_default();
        Ok(out)
    }

    /// Runs one stage's instances in turn: each from the run's call cache when it is there,
    /// else called and stored. With a budget, a model call first reserves its estimated
    /// prompt tokens from what its stage's share leaves and gets the rest (at most its
    /// reviewer's `max-tokens`) as `max_tokens`; a call that cannot pay for its prompt is not
    /// made, and neither are the stage's later ones. Each call is charged what the provider
    /// reported.
    async fn run_stage(
        &self,
        i: usize,
        job: &ReviewJob,
        received: &Value,
        run_id: &str,
        cost: &mut Cost,
        calibration: &mut Calibration,
    ) -> Result<StageRun, ReviewError> {
        let stage = &self.spec.stages[i];
        let budget = stage.budget(self.spec.total_budget);
        let fingerprint = self.stage_fingerprint(i, &job.cell);
        let mut run = StageRun { findings: Vec::new(), model: None, calls: Vec::new(), spent: Some(0), stopped: 0, note: None };
        let mut seen = BTreeSet::new();
        // Failed calls' answers, stored once the stage is known not to have failed as a whole.
        let mut unstored: Vec<(Value, Value)> = Vec::new();
        for instance in 0..stage.instances {
            if let (Some(b), Some(spent), Runner::Command(_)) = (budget, run.spent, &self.runners[i]) {
                if spent >= b {
                    run.stopped = stage.instances - instance;
                    run.note = Some(format!("budget of {b} tokens spent after {instance} of {} calls", stage.instances));
                    break;
                }
            }
            let allowance = self.allowance(i, run.spent, calibration);
            let inputs = Self::call_inputs(&fingerprint, job.repeat, instance, received, allowance.as_ref());
            let cached = match &job.calls {
                Some(calls) => {
                    let (calls, inputs) = (calls.clone(), inputs.clone());
                    tokio::task::spawn_blocking(move || calls.0.lookup(&inputs)).await.ok().flatten().and_then(|v| serde_json::from_value::<Answer>(v).ok())
                }
                None => None,
            };
            let hit = cached.is_some();
            let answer = match cached {
                Some(answer) => answer,
                None => {
                    let answer = self.call(i, job, received, stage, instance, allowance.as_ref()).await?;
                    if let Some(calls) = &job.calls {
                        let value = serde_json::to_value(&answer).map_err(|e| ReviewError::failed(format!("a call's answer does not serialize: {e}")))?;
                        if answer.error.is_some() {
                            // Stored once a call of the stage has succeeded: a stage whose every
                            // call failed fails the run, and its calls are asked again.
                            unstored.push((inputs.clone(), value));
                        } else {
                            store(calls, inputs.clone(), value, &stage.name).await?;
                        }
                    }
                    answer
                }
            };
            if answer.skipped {
                let left = allowance.as_ref().map_or(0, |a| a.left.unwrap_or(a.share));
                run.stopped = stage.instances - instance;
                run.note = Some(format!(
                    "budget spent: call {} of {} needs about {} prompt tokens, its stage's share has {left} left",
                    instance + 1,
                    stage.instances,
                    answer.prompt_estimate.unwrap_or(0)
                ));
                break;
            }
            run.spent = match (run.spent, answer.tokens()) {
                (Some(s), Some(t)) => Some(s + t),
                _ => None,
            };
            calibration.learn(stage, &answer);
            add_cost(cost, &answer.cost);
            if run.calls.is_empty() {
                if let Some(model) = describe_model(&answer.provenance) {
                    run.model = Some(model);
                }
            }
            run.findings.extend(answer.findings.iter().filter(|f| seen.insert(f.id.clone())).cloned());
            run.calls.push(json!({
                "instance": instance + 1,
                "call": &blake3::hash(&serde_json::to_vec(&inputs).unwrap_or_default()).to_hex()[..16],
                "cached": hit,
                "run": run_id,
                "started_at": answer.started_at,
                "runner_wall_ms": answer.cost.wall_ms,
                "prompt_bytes": answer.prompt_bytes,
                "prompt_estimate": answer.prompt_estimate,
                "max_tokens": answer.max_tokens,
                "prompt_tokens": answer.cost.prompt_tokens,
                "completion_tokens": answer.cost.completion_tokens,
                "provider_ms": answer.cost.provider_ms(),
                "model": answer.provenance.get("model"),
                "findings": answer.findings.len(),
                "error": answer.error,
                "raw": answer.raw,
            }));
        }
        if run.spent.is_none() && budget.is_some() {
            run.note.get_or_insert_with(|| "the provider reported no tokens: spend unknown, each call bounded by its stage's share only".into());
        }
        if let Some(e) = all_failed(&stage.name, &run.calls) {
            return Err(e);
        }
        if let Some(calls) = &job.calls {
            for (inputs, value) in unstored {
                store(calls, inputs, value, &stage.name).await?;
            }
        }
        Ok(run)
    }

    /// One call of a stage's reviewer; a model answer that cannot be read (cut at the token
    /// limit, not JSON) is kept as the call's error. Anything else (the server, the timeout, a
    /// command that fails) fails the run, and nothing of that call is cached.
    async fn call(
        &self,
        i: usize,
        job: &ReviewJob,
        received: &Value,
        stage: &StageSpec,
        instance: u32,
        allowance: Option<&Allowance>,
    ) -> Result<Answer, ReviewError> {
        let started_at = utc_now();
        let started = Instant::now();
        let mut sent = (None, None, None);
        let result = match &self.runners[i] {
            Runner::Llm(r) => {
                let mut extra = received.clone();
                extra["stage"] = json!({ "name": stage.name, "role": stage.role.as_str(), "instance": instance + 1, "instances": stage.instances });
                let mut max_tokens = None;
                if let Some(a) = allowance {
                    let bytes = r.prompt_bytes(job, &extra)?;
                    let estimate = a.estimate(bytes);
                    max_tokens = a.max_tokens(estimate, r.max_tokens());
                    sent = (Some(bytes), Some(estimate), max_tokens);
                    if max_tokens.is_none() {
                        return Ok(Answer { skipped: true, prompt_bytes: Some(bytes), prompt_estimate: Some(estimate), ..Answer::default() });
                    }
                }
                r.review_with(job, &extra, u64::from(instance), max_tokens).await?
            }
            Runner::Command(r) => Ok(r.review(job).await?),
        };
        let mut answer = match result {
            Ok(o) => Answer {
                findings: o.findings,
                raw: o.raw,
                error: None,
                started_at,
                cost: Cost { units: Vec::new(), ..o.cost },
                provenance: o.provenance,
                schema_problems: o.schema_problems,
                ..Answer::default()
            },
            Err((message, cost, text)) => Answer { error: Some(message), started_at, cost, raw: text, ..Answer::default() },
        };
        // runner's own wall time of the call, kept apart from the provider's timings.
        answer.cost.wall_ms = started.elapsed().as_millis() as u64;
        (answer.prompt_bytes, answer.prompt_estimate, answer.max_tokens) = sent;
        Ok(answer)
    }
}

/// How many failed calls a stage's error names.
const FAILURES_NAMED: usize = 3;

/// The run's error when a stage made calls and every one of them failed (its answers cut at the
/// token limit or unreadable): the later stages and the run's findings would rest on nothing,
/// as a model reviewer's run with that answer fails. Calls not made (stopped for the budget)
/// are not calls that failed.
fn all_failed(stage: &str, calls: &[Value]) -> Option<ReviewError> {
    let errors: Vec<(&Value, &str)> = calls.iter().filter_map(|c| Some((&c["instance"], c.get("error")?.as_str()?))).collect();
    if calls.is_empty() || errors.len() < calls.len() {
        return None;
    }
    let named: Vec<String> = errors.iter().take(FAILURES_NAMED).map(|(instance, e)| format!("call {instance}: {}", super::tail(e, 300))).collect();
    let more = errors.len().saturating_sub(FAILURES_NAMED);
    Some(ReviewError::failed(format!(
        "every call of stage `{stage}` failed ({} of {}): {}{}",
        errors.len(),
        calls.len(),
        named.join("; "),
        if more > 0 { format!("; and {more} more") } else { String::new() }
    )))
}

/// Stores one call's answer in the run's call cache.
async fn store(calls: &super::Calls, inputs: Value, value: Value, stage: &str) -> Result<(), ReviewError> {
    let calls = calls.clone();
    tokio::task::spawn_blocking(move || calls.0.store(&inputs, &value))
        .await
        .map_err(|e| ReviewError::failed(format!("storing a call crashed: {e}")))?
        .map_err(|e| ReviewError::failed(format!("storing stage `{stage}`'s call failed: {e}")))
}

fn add_cost(total: &mut Cost, c: &Cost) {
    // runner's wall time of the calls as each ran (a call served from the cache keeps its own).
    total.wall_ms += c.wall_ms;
    total.hunks = total.hunks.max(c.hunks);
    total.add_reported(c);
}

/// A model as its call's provenance names it: `smollm2-135m (SmolLM2-135M-Instruct.Q4_1.gguf,
/// Q4_1, sha256 3f1e2a…, xllamacpp … (llama.cpp …))`, from what is known.
fn describe_model(provenance: &BTreeMap<String, Value>) -> Option<String> {
    let text = |k: &str| provenance.get(k).and_then(Value::as_str);
    let model = text("model")?;
    let mut details = Vec::new();
    details.extend(text("model_file").map(str::to_string));
    details.extend(text("quantization").map(str::to_string));
    details.extend(text("model_sha256").map(|s| format!("sha256 {}…", &s[..s.len().min(12)])));
    details.extend(text("server").map(str::to_string));
    Some(if details.is_empty() { model.to_string() } else { format!("{model} ({})", details.join(", ")) })
}

/// Findings as a stage prompt sees them: numbered from 1.
fn shown(findings: &[Finding]) -> Vec<Value> {
    findings
        .iter()
        .enumerate()
        .map(|(i, f)| json!({ "index": i + 1, "file": f.file, "line": f.line, "severity": f.severity.as_str(), "category": f.category.as_str(), "message": f.message }))
        .collect()
}

/// The current UTC time as RFC 3339 with milliseconds (`2026-12-02T10:40:00.123Z`).
pub fn utc_now() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    utc_text(now.as_millis() as i64)
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC (Howard Hinnant's civil-from-days).
fn utc_text(millis: i64) -> String {
    let (days, ms_of_day) = (millis.div_euclid(86_400_000), millis.rem_euclid(86_400_000));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, ms) = (ms_of_day / 3_600_000, ms_of_day / 60_000 % 60, ms_of_day / 1000 % 60, ms_of_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
}

impl Reviewer for PipelineReviewer {
    fn kind(&self) -> &'static str {
        "pipeline"
    }

    fn fingerprint(&self, cell: &Cell) -> Value {
        json!({
            "version": PIPELINE_VERSION,
            "total_budget": self.spec.total_budget,
            "stages": (0..self.spec.stages.len()).map(|i| self.stage_fingerprint(i, cell)).collect::<Vec<_>>(),
        })
    }

    fn planned_calls(&self, cell: &Cell, repeat: u32, calls: &dyn super::CallCache) -> Option<Vec<super::StageCalls>> {
        Some(self.tally(cell, repeat, calls))
    }

    fn exclusive_scope(&self, job: &ReviewJob) -> Option<String> {
        self.runners.iter().find_map(|r| r.reviewer().exclusive_scope(job))
    }

    fn exclusive_hold<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<Option<crate::reviewer::Hold>, ReviewError>> {
        Box::pin(async move {
            match self.runners.iter().find(|r| r.reviewer().exclusive_scope(job).is_some()) {
                Some(r) => r.reviewer().exclusive_hold(job).await,
                None => Ok(None),
            }
        })
    }

    fn secrets(&self) -> Vec<String> {
        self.runners.iter().flat_map(|r| r.reviewer().secrets()).collect()
    }

    fn preflight(&self) -> BoxFuture<'_, Result<(), ReviewError>> {
        Box::pin(async move {
            for r in &self.runners {
                r.reviewer().preflight().await?;
            }
            Ok(())
        })
    }

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            match tokio::time::timeout(job.timeout, self.run(job)).await {
                Ok(result) => result,
                Err(_) => Err(ReviewError::Timeout { seconds: job.timeout.as_secs_f64() }),
            }
        })
    }
}

#[cfg(test)]
mod tests;
