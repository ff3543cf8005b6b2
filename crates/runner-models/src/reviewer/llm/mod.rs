//! LLM reviewers: runner reviews diffs itself through Ollama's native API (`ollama`) or an
//! OpenAI-compatible server (`openai`).
//!
//! One run reviews one subject for one cell and repeat: the diff is split into units (hunks,
//! files or the whole change), each unit gets RAG-lite definitions and a prompt rendered from
//! handlebars templates, one request (plus continuations when the answer was cut at the token
//! limit and `on-truncation = "continue"`), and its answer is parsed tolerantly and normalized
//! to stet's findings the way stet does ([`normalize`]). Requests go through [`transport`]:
//! per-endpoint limits, several base URLs, retries with backoff, fail-fast on unknown models
//! and unreachable servers ([`ReviewError::Unreachable`], exit code 2).
//!
//! The cache key ([`Reviewer::fingerprint`]) holds everything that changes the answer: the
//! protocol, the model name, the prompt templates' text (hashed), the response schema
//! (hashed), the unit, temperature, seed, token limits, the RAG setting and the
//! normalization rules. It leaves out base URLs (the same model answers the same wherever it
//! is served, and several URLs only spread load), concurrency, retries, timeouts and the API
//! key. Which model file and server actually answered is recorded per run in its provenance
//! (from `models-json`, the manifest's `provenance` table and what the server reports), and a
//! server that serves another file than `models-json` names fails the run.

pub mod adaptive;
#[cfg(test)]
pub(crate) mod fake_server;
pub(crate) mod normalize;
pub(crate) mod prompt;
pub mod spec;
pub(crate) mod transport;
pub(crate) mod wire;

pub use spec::{read_spec, LlmSpec, OnTruncation, PromptTemplate, Protocol, UnitKind};

use super::parse::extract_model_findings;
use super::{template, Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer, UnitCost};
use crate::matrix::Cell;
use crate::rag;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use transport::{unreachable, Endpoint, Failure, Policy, ServerInfo, Transport};
use wire::{AttemptError, Completion, Message, Sampling};

/// Version of the normalization rules ([`normalize`]); part of the fingerprint.
pub const NORMALIZE_VERSION: &str = "stet-evidence-1";

/// The temperature used when neither the cell nor the manifest sets one (stet's default).
pub const DEFAULT_TEMPERATURE: f64 = 0.2;

/// The settings one cell and repeat resolve to.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub model: String,
    pub temperature: f64,
    /// The seed of this repeat.
    pub seed: Option<u64>,
    /// The seed as configured, before `seed-per-repeat`.
    pub base_seed: Option<u64>,
    pub rag_max_definitions: u32,
    /// This call's own `max_tokens` (a pipeline stage's allowance), in place of `max-tokens`;
    /// such a call makes one request.
    pub max_tokens: Option<u32>,
}

pub struct LlmReviewer {
    spec: LlmSpec,
    transport: Transport,
    schema_single: Value,
    schema_multi: Value,
    models_json: OnceLock<Result<Value, String>>,
    /// The hashes the fingerprint holds of the system prompt, the prompt and the response
    /// schemas, the same for every cell: computed once, not once per run.
    text_hashes: OnceLock<[String; 3]>,
}

/// What one request asks: the messages, the answer's schema and the sampling settings.
struct Ask<'a> {
    messages: &'a [Message],
    schema: Option<&'a Value>,
    sampling: &'a Sampling,
}

/// Why a review failed: the model's answer (it stopped at the token limit, it does not
/// parse), or anything else.
enum RunFailure {
    /// What was wrong, what the answers cost (as the provider reported), and their text.
    Answer(String, Cost, String),
    Review(ReviewError),
}

/// What a unit's answers cost, as the provider reported it.
fn answers_cost(answers: &[Completion]) -> Cost {
    let mut cost = Cost::default();
    for a in answers {
        let reported =
            Cost { prompt_tokens: a.prompt_tokens, completion_tokens: a.completion_tokens, prompt_eval_ms: a.prompt_ms, eval_ms: a.eval_ms, ..Cost::default() };
        cost.add_reported(&Cost { requests: 1, model_total_ms: a.total_ms, load_ms: a.load_ms, ..reported });
    }
    cost
}

impl From<ReviewError> for RunFailure {
    fn from(e: ReviewError) -> Self {
        Self::Review(e)
    }
}

impl RunFailure {
    fn into_error(self) -> ReviewError {
        match self {
            Self::Answer(message, ..) => ReviewError::failed(message),
            Self::Review(e) => e,
        }
    }
}

/// What one unit's exchange with the model produced.
struct Exchange {
    text: String,
    answers: Vec<Completion>,
    endpoint: String,
    requests: u32,
    /// Time spent waiting for a free endpoint slot (queueing, not the model's latency).
    waited: std::time::Duration,
}

fn short_hash(text: &str) -> String {
    let hex = blake3::hash(text.as_bytes()).to_hex();
    format!("blake3:{}", &hex[..16])
}

impl LlmReviewer {
    /// The `max-tokens` each request may ask for.
    pub fn max_tokens(&self) -> u32 {
        self.spec.max_tokens
    }

    pub fn new(spec: LlmSpec) -> Result<Self, ReviewError> {
        let policy =
            Policy { retries: spec.retries, base_delay: spec.retry_base_delay, max_delay: spec.retry_max_delay, request_timeout: spec.request_timeout };
        let urls: Vec<&str> = spec.base_urls.iter().chain(spec.endpoints.values().flatten()).map(String::as_str).collect();
        let transport = Transport::new(policy, spec.connect_timeout, spec.max_concurrency_per_endpoint).only_to(&urls);
        let schema_single = prompt::response_schema(&spec, false, None);
        let schema_multi = prompt::response_schema(&spec, true, None);
        Ok(Self { spec, transport, schema_single, schema_multi, models_json: OnceLock::new(), text_hashes: OnceLock::new() })
    }

    pub fn spec(&self) -> &LlmSpec {
        &self.spec
    }

    /// Resolves model, temperature, seed and RAG setting: the cell's axes win over the manifest.
    pub fn params(&self, cell: &Cell, repeat: u32) -> Result<Params, ReviewError> {
        let model = match &self.spec.model {
            Some(t) => template::render(t, &template::variables(cell, 0, None)).map_err(ReviewError::failed)?,
            None => {
                cell.get("model").map(|v| v.render()).ok_or_else(|| ReviewError::failed("no model: add a `model` axis or `model = \"…\"` to [reviewer]"))?
            }
        };
        let temperature = match cell.get("temperature") {
            Some(v) => v.as_f64().ok_or_else(|| ReviewError::failed(format!("axis `temperature` value `{v}` is not a number")))?,
            None => self.spec.temperature.unwrap_or(DEFAULT_TEMPERATURE),
        };
        let base_seed = match cell.get("seed") {
            Some(v) => {
                Some(v.as_i64().filter(|s| *s >= 0).ok_or_else(|| ReviewError::failed(format!("axis `seed` value `{v}` is not a non-negative integer")))? as u64)
            }
            None => self.spec.seed,
        };
        let seed = base_seed.map(|s| if self.spec.seed_per_repeat { s + u64::from(repeat.saturating_sub(1)) } else { s });
        let rag_max_definitions = match cell.get("rag_symbol_max_definitions") {
            Some(v) => v
                .as_i64()
                .filter(|n| *n >= 0)
                .ok_or_else(|| ReviewError::failed(format!("axis `rag_symbol_max_definitions` value `{v}` is not a non-negative integer")))?
                as u32,
            None => self.spec.rag_max_definitions,
        };
        Ok(Params { model, temperature, seed, base_seed, rag_max_definitions, max_tokens: None })
    }

    fn pool(&self, model: &str, api_key: Option<&str>) -> Result<Vec<Arc<Endpoint>>, ReviewError> {
        let urls = self.spec.endpoints.get(model).unwrap_or(&self.spec.base_urls);
        let mut pool = Vec::new();
        for raw in urls {
            let url = spec::expand_env(raw).map_err(|e| ReviewError::failed(format!("base URL for model `{model}`: {e}")))?;
            if !url.starts_with("http://") && !url.starts_with("https://") {
                return Err(ReviewError::failed(format!("base URL `{url}` (from `{raw}`) for model `{model}` is not an http(s) URL")));
            }
            pool.push(self.transport.endpoint(&url, api_key));
        }
        if pool.is_empty() {
            return Err(ReviewError::failed(format!("no base URL for model `{model}`")));
        }
        Ok(pool)
    }

    fn api_key(&self) -> Result<Option<String>, ReviewError> {
        spec::api_key_from_env(self.spec.api_key_env.as_deref(), "`api-key-env`").map_err(unreachable)
    }

    /// This model's entry in `models-json` and the file's `server` block.
    fn models_entry(&self, model: &str) -> Result<Option<(Value, Value)>, ReviewError> {
        let Some(path) = &self.spec.models_json else { return Ok(None) };
        let doc = self.models_json.get_or_init(|| {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("failed to read `models-json` `{}`: {e}; run scripts/model-server/install.sh or remove `models-json`", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("`models-json` `{}` is not JSON: {e}", path.display()))
        });
        let doc = doc.as_ref().map_err(|e| ReviewError::failed(e.clone()))?;
        let models = doc.get("models").and_then(Value::as_array).cloned().unwrap_or_default();
        let Some(entry) = models.iter().find(|m| m.get("name").and_then(Value::as_str) == Some(model)).cloned() else {
            let names: Vec<&str> = models.iter().filter_map(|m| m.get("name").and_then(Value::as_str)).collect();
            return Err(ReviewError::failed(format!("model `{model}` is not in `{}` (it lists: {})", path.display(), names.join(", "))));
        };
        Ok(Some((entry, doc.get("server").cloned().unwrap_or(Value::Null))))
    }

    /// Provenance known before any request: sampling, `models-json`, the manifest's table.
    fn base_provenance(&self, p: &Params) -> Result<BTreeMap<String, Value>, ReviewError> {
        let mut prov = BTreeMap::new();
        prov.insert("protocol".into(), json!(self.spec.protocol.as_str()));
        prov.insert("model".into(), json!(p.model));
        prov.insert("temperature".into(), json!(p.temperature));
        prov.insert("seed".into(), p.seed.map(Value::from).unwrap_or_else(|| json!("none")));
        prov.insert("max_tokens".into(), json!(self.spec.max_tokens));
        if let Some((entry, server)) = self.models_entry(&p.model)? {
            let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            if let Some(file) = text(&entry, "file") {
                prov.insert("model_file".into(), json!(file.rsplit('/').next().unwrap_or(&file)));
            }
            for (from, to) in [("sha256", "model_sha256"), ("quantization", "quantization"), ("model", "model_source")] {
                if let Some(v) = text(&entry, from) {
                    prov.insert(to.into(), json!(v));
                }
            }
            let server_text = match (text(&server, "package"), text(&server, "version"), text(&server, "llama_cpp")) {
                (Some(pkg), Some(ver), Some(build)) => Some(format!("{pkg} {ver} (llama.cpp {build})")),
                (Some(pkg), Some(ver), None) => Some(format!("{pkg} {ver}")),
                _ => text(&entry, "xllamacpp_version").map(|v| format!("xllamacpp {v}")),
            };
            if let Some(s) = server_text {
                prov.insert("server".into(), json!(s));
            }
        }
        Ok(prov)
    }

    /// Adds what the server reported, checking it against `models-json`, then the manifest's
    /// own `provenance` entries (which win).
    fn finish_provenance(&self, prov: &mut BTreeMap<String, Value>, model: &str, info: &ServerInfo, endpoint: &str) -> Result<(), ReviewError> {
        if let (Some(served), Some(Value::String(listed))) = (&info.model_file, prov.get("model_file")) {
            if served != listed {
                return Err(unreachable(format!(
                    "`{endpoint}` serves `{served}` for model `{model}`, but `models-json` lists `{listed}`; the recorded sha256 would be wrong"
                )));
            }
        }
        for (key, value) in [("model_file", &info.model_file), ("quantization", &info.quantization), ("server", &info.server), ("model_digest", &info.digest)] {
            if let Some(v) = value {
                prov.entry(key.to_string()).or_insert_with(|| json!(v));
            }
        }
        if let Some(declared) = self.spec.provenance.get(model) {
            for (k, v) in declared {
                prov.insert(k.replace('-', "_"), json!(v));
            }
        }
        Ok(())
    }

    /// Checks, before any review request, that an endpoint of the pool answers and serves the
    /// model (fail fast), and learns what it serves for the provenance.
    async fn preflight(
        &self,
        pool: &[Arc<Endpoint>],
        model: &str,
        api_key: Option<&str>,
        waited: &mut std::time::Duration,
    ) -> Result<(String, ServerInfo), ReviewError> {
        loop {
            let wait_started = Instant::now();
            let acquired = self.transport.acquire(pool).await;
            *waited += wait_started.elapsed();
            let slot = acquired.map_err(|reasons| self.all_down(pool, model, reasons))?;
            let endpoint = slot.endpoint.clone();
            match self.transport.check(self.spec.protocol, &endpoint, model, api_key).await {
                Ok(info) => return Ok((endpoint.url.clone(), info)),
                Err(Failure::Down(reason)) => self.transport.mark_down(&endpoint, reason),
                Err(Failure::Fatal(e)) => return Err(e),
            }
        }
    }

    fn all_down(&self, pool: &[Arc<Endpoint>], model: &str, reasons: String) -> ReviewError {
        if pool.len() == 1 {
            unreachable(reasons.split_once(": ").map(|(_, r)| r.to_string()).unwrap_or(reasons))
        } else {
            unreachable(format!("no base URL for model `{model}` can be reached: {reasons}"))
        }
    }

    /// One request (with retries and endpoint fail-over) for a unit.
    async fn request(
        &self,
        pool: &[Arc<Endpoint>],
        model: &str,
        ask: &Ask<'_>,
        api_key: Option<&str>,
        waited: &mut std::time::Duration,
    ) -> Result<(Completion, u32, String), ReviewError> {
        loop {
            let wait_started = Instant::now();
            let acquired = self.transport.acquire(pool).await;
            *waited += wait_started.elapsed();
            let mut slot = acquired.map_err(|reasons| self.all_down(pool, model, reasons))?;
            let endpoint = slot.endpoint.clone();
            match self.transport.check(self.spec.protocol, &endpoint, model, api_key).await {
                Ok(_) => {}
                Err(Failure::Down(reason)) => {
                    self.transport.mark_down(&endpoint, reason);
                    continue;
                }
                Err(Failure::Fatal(e)) => return Err(e),
            };
            let result = self.transport.with_retries(&endpoint, slot.take_permit(), model, || self.send(&endpoint, model, ask, api_key)).await;
            drop(slot);
            match result {
                Ok((completion, attempts)) => {
                    if let (Some(p), Some(c)) = (completion.prompt_tokens, completion.completion_tokens) {
                        endpoint.controller.record_tokens(p + c);
                    }
                    return Ok((completion, attempts, endpoint.url.clone()));
                }
                Err(Failure::Down(reason)) => self.transport.mark_down(&endpoint, reason),
                Err(Failure::Fatal(e)) => return Err(e),
            }
        }
    }

    async fn send(&self, endpoint: &Endpoint, model: &str, ask: &Ask<'_>, api_key: Option<&str>) -> Result<Completion, AttemptError> {
        let timeout = self.spec.request_timeout;
        let base = &endpoint.url;
        let (url, body) = match self.spec.protocol {
            Protocol::Ollama => (format!("{base}/api/chat"), wire::ollama_body(model, ask.messages, ask.schema, ask.sampling)),
            Protocol::OpenAi => (format!("{base}/chat/completions"), wire::openai_body(model, ask.messages, ask.schema, ask.sampling)),
        };
        let mut req = self.transport.http()?.post(&url).json(&body);
        if let Some(key) = api_key {
            req = req.bearer_auth(key);
        }
        let resp = self.transport.send(endpoint, req).await?;
        match self.spec.protocol {
            Protocol::Ollama => wire::ollama_read(resp, timeout).await,
            Protocol::OpenAi => wire::openai_read(resp, timeout).await,
        }
    }

    /// One request outside a review (a judge's verdict, a claims generator's answer), through
    /// the same endpoints, limits, retries and fail-fast checks as a review's. Returns the
    /// answer, the number of HTTP attempts and the time spent waiting for a free endpoint.
    pub async fn complete(
        &self,
        model: &str,
        messages: &[Message],
        schema: Option<&Value>,
        sampling: &Sampling,
    ) -> Result<(Completion, u32, std::time::Duration), ReviewError> {
        let api_key = self.api_key()?;
        let pool = self.pool(model, api_key.as_deref())?;
        let mut waited = std::time::Duration::ZERO;
        let (completion, attempts, _endpoint) = self.request(&pool, model, &Ask { messages, schema, sampling }, api_key.as_deref(), &mut waited).await?;
        Ok((completion, attempts, waited))
    }

    /// What is known of the model that answers `p.model`: sampling, `models-json`, what the
    /// server reports (checked against `models-json`) and the manifest's `provenance` table.
    pub async fn served_provenance(&self, p: &Params) -> Result<BTreeMap<String, Value>, ReviewError> {
        let api_key = self.api_key()?;
        let pool = self.pool(&p.model, api_key.as_deref())?;
        let mut waited = std::time::Duration::ZERO;
        let (endpoint, info) = self.preflight(&pool, &p.model, api_key.as_deref(), &mut waited).await?;
        let mut provenance = self.base_provenance(p)?;
        self.finish_provenance(&mut provenance, &p.model, &info, &endpoint)?;
        Ok(provenance)
    }

    /// Asks for one unit's review, continuing a truncated answer when configured to.
    async fn exchange(
        &self,
        pool: &[Arc<Endpoint>],
        p: &Params,
        prompts: &prompt::Prompts,
        schema: &Value,
        api_key: Option<&str>,
        label: &str,
    ) -> Result<Exchange, RunFailure> {
        let max_tokens = p.max_tokens;
        let limit = max_tokens.unwrap_or(self.spec.max_tokens);
        let sampling = Sampling { temperature: p.temperature, seed: p.seed, max_tokens: limit, num_ctx: self.spec.num_ctx };
        let base = vec![Message { role: "system", content: prompts.system.clone() }, Message { role: "user", content: prompts.user.clone() }];
        // A call given its own `max_tokens` (a pipeline stage's share of a budget) is one
        // request: a continuation would send the prompt again, past what was reserved.
        let rounds = match (self.spec.on_truncation, max_tokens) {
            (OnTruncation::Continue, None) => 1 + self.spec.max_continuations,
            _ => 1,
        };
        let mut text = String::new();
        let mut answers = Vec::new();
        let mut requests = 0;
        let mut last = String::new();
        let mut waited = std::time::Duration::ZERO;
        for round in 0..rounds {
            let mut messages = base.clone();
            if round > 0 {
                // The partial answer as the assistant's turn: the server continues it.
                messages.push(Message { role: "assistant", content: text.clone() });
            }
            // Ollama would restart a schema-constrained answer from its beginning, so a
            // continuation there goes without `format`; llama.cpp applies the grammar to the
            // partial answer plus its continuation.
            let schema = if round > 0 && self.spec.protocol == Protocol::Ollama { None } else { Some(schema) };
            let (c, attempts, endpoint) = self.request(pool, &p.model, &Ask { messages: &messages, schema, sampling: &sampling }, api_key, &mut waited).await?;
            requests += attempts;
            if round == 0 || c.text.starts_with(&text) {
                text = c.text.clone();
            } else {
                text.push_str(&c.text);
            }
            let truncated = c.truncated();
            answers.push(c);
            last = endpoint;
            if !truncated {
                return Ok(Exchange { text, answers, endpoint: last, requests, waited });
            }
        }
        let how = match (self.spec.on_truncation, max_tokens) {
            (_, Some(_)) => "; this call's `max_tokens` was what its stage's share of the budget left after its prompt".to_string(),
            (OnTruncation::Fail, None) => "; raise `max-tokens` or set `on-truncation = \"continue\"`".to_string(),
            (OnTruncation::Continue, None) => format!(" and was still cut after {} continuations; raise `max-tokens`", self.spec.max_continuations),
        };
        let tail: String = text.chars().rev().take(120).collect::<Vec<_>>().into_iter().rev().collect();
        Err(RunFailure::Answer(
            format!(
                "model `{}` stopped at the token limit (max-tokens = {limit}, finish_reason `length`) reviewing `{label}` at `{}`{how}; the answer was not parsed; it ended: {tail:?}",
                p.model, last
            ),
            answers_cost(&answers),
            text,
        ))
    }

    /// One review of `job` whose prompts also see `extra`'s variables and whose seed (when
    /// one is set) is moved on by `seed_offset`: a pipeline stage's call of this reviewer.
    /// The inner `Err` is the answer's own failure (cut at the token limit, unreadable): the
    /// model answered; the outer one is everything else (the server, the timeout).
    /// A failed answer comes with what it cost and its text. `max_tokens`, when given,
    /// replaces the reviewer's own for this call, and the call makes one request.
    pub async fn review_with(
        &self,
        job: &ReviewJob,
        extra: &Value,
        seed_offset: u64,
        max_tokens: Option<u32>,
    ) -> Result<Result<ReviewOutput, (String, Cost, String)>, ReviewError> {
        match tokio::time::timeout(job.timeout, self.run(job, Some(extra), seed_offset, max_tokens)).await {
            Ok(Ok(output)) => Ok(Ok(output)),
            Ok(Err(RunFailure::Answer(message, cost, text))) => Ok(Err((message, cost, text))),
            Ok(Err(RunFailure::Review(e))) => Err(e),
            Err(_) => Err(ReviewError::Timeout { seconds: job.timeout.as_secs_f64() }),
        }
    }

    /// The UTF-8 bytes of the prompts (system and user, every unit) a call of this reviewer
    /// with `extra` would send for `job`: what a pipeline estimates a call's prompt tokens
    /// from before making it. Symbol definitions, when configured, are looked up as the call
    /// would (blocking).
    pub fn prompt_bytes(&self, job: &ReviewJob, extra: &Value) -> Result<u64, ReviewError> {
        let p = self.params(&job.cell, job.repeat)?;
        let mut bytes = 0;
        for unit in &prompt::units(&job.subject.files, self.spec.unit) {
            let definitions = if p.rag_max_definitions > 0 {
                rag::resolve(&rag::Request {
                    repo: &job.subject.repo_dir,
                    commit: &job.subject.head_sha,
                    code: prompt::new_side_code(unit),
                    exclude: unit.spans(),
                    max_definitions: p.rag_max_definitions as usize,
                    max_lines: self.spec.rag_max_lines as usize,
                })
                .map_err(|e| ReviewError::failed(format!("failed to look up symbol definitions for `{}`: {e}", unit.label)))?
            } else {
                Vec::new()
            };
            let prompts = prompt::render(&self.spec, &job.subject, unit, &definitions, Some(extra)).map_err(ReviewError::failed)?;
            bytes += (prompts.system.len() + prompts.user.len()) as u64;
        }
        Ok(bytes)
    }

    async fn run(&self, job: &ReviewJob, extra: Option<&Value>, seed_offset: u64, max_tokens: Option<u32>) -> Result<ReviewOutput, RunFailure> {
        let started = Instant::now();
        let mut p = self.params(&job.cell, job.repeat)?;
        p.seed = p.seed.map(|s| s + seed_offset);
        p.max_tokens = max_tokens;
        let units = prompt::units(&job.subject.files, self.spec.unit);
        let mut out = ReviewOutput::default();
        let mut cost = Cost { hunks: units.iter().map(prompt::Unit::hunk_count).sum(), ..Cost::default() };
        let mut raw_units = Vec::new();
        let mut seen = BTreeSet::new();
        let mut waited = std::time::Duration::ZERO;
        let api_key = if units.is_empty() { None } else { self.api_key()? };
        let pool = if units.is_empty() { Vec::new() } else { self.pool(&p.model, api_key.as_deref())? };
        // The server first: an unknown model or a dead server fails before anything else.
        let served = if units.is_empty() { None } else { Some(self.preflight(&pool, &p.model, api_key.as_deref(), &mut waited).await?) };
        let mut provenance = self.base_provenance(&p)?;
        if let Some((endpoint, info)) = &served {
            self.finish_provenance(&mut provenance, &p.model, info, endpoint)?;
        }
        let bump = |out: &mut ReviewOutput, key: &str, n: u64| *out.counters.entry(key.to_string()).or_insert(0) += n;
        for unit in &units {
            let unit_started = Instant::now();
            let definitions = if p.rag_max_definitions > 0 {
                let repo = job.subject.repo_dir.clone();
                let commit = job.subject.head_sha.clone();
                let code = prompt::new_side_code(unit);
                let exclude = unit.spans();
                let (max_definitions, max_lines) = (p.rag_max_definitions as usize, self.spec.rag_max_lines as usize);
                tokio::task::spawn_blocking(move || rag::resolve(&rag::Request { repo: &repo, commit: &commit, code, exclude, max_definitions, max_lines }))
                    .await
                    .map_err(|e| ReviewError::failed(format!("symbol lookup crashed: {e}")))?
                    .map_err(|e| ReviewError::failed(format!("failed to look up symbol definitions for `{}`: {e}", unit.label)))?
            } else {
                Vec::new()
            };
            let prompts = prompt::render(&self.spec, &job.subject, unit, &definitions, extra).map_err(ReviewError::failed)?;
            let lines = self.spec.constrain_lines.then(|| prompt::reviewed_lines(unit));
            let schema = prompt::response_schema(&self.spec, unit.files.len() > 1, lines.as_deref());
            let ex = self.exchange(&pool, &p, &prompts, &schema, api_key.as_deref(), &unit.label).await?;
            waited += ex.waited;
            let items = extract_model_findings(&ex.text).map_err(|e| {
                RunFailure::Answer(
                    format!(
                        "failed to read model `{}`'s answer for `{}`: {e}; it began: {}",
                        p.model,
                        unit.label,
                        ex.text.chars().take(160).collect::<String>()
                    ),
                    answers_cost(&ex.answers),
                    ex.text.clone(),
                )
            })?;
            let normalized = normalize::normalize(items, unit, &job.subject.repo_dir, &mut seen);
            let mut unit_cost = UnitCost {
                unit: unit.label.clone(),
                hunks: unit.hunk_count(),
                requests: ex.requests,
                findings: normalized.findings.len() as u32,
                ..UnitCost::default()
            };
            let reported = answers_cost(&ex.answers);
            unit_cost.prompt_tokens = reported.prompt_tokens;
            unit_cost.completion_tokens = reported.completion_tokens;
            unit_cost.prompt_eval_ms = reported.prompt_eval_ms;
            unit_cost.eval_ms = reported.eval_ms;
            unit_cost.wall_ms = unit_started.elapsed().saturating_sub(ex.waited).as_millis() as u64;
            cost.add_reported(&Cost { requests: ex.requests, ..reported });
            cost.units.push(unit_cost);
            for (k, v) in normalized.counters {
                bump(&mut out, &k, v);
            }
            bump(&mut out, "continuations", ex.answers.len().saturating_sub(1) as u64);
            bump(&mut out, "rag_definitions", definitions.len() as u64);
            out.schema_problems.extend(normalized.schema_problems);
            out.findings.extend(normalized.findings);
            raw_units.push(json!({
                "unit": unit.label,
                "endpoint": ex.endpoint,
                "requests": ex.requests,
                "definitions": definitions.iter().map(|d| format!("{} {}:{}", d.symbol, d.file, d.line)).collect::<Vec<_>>(),
                "answers": ex.answers.iter().map(|a| json!({ "finish_reason": a.finish_reason, "model": a.model, "text": a.text })).collect::<Vec<_>>(),
            }));
        }
        bump(&mut out, "units", units.len() as u64);
        // Latency is the review's own time: waiting for a busy endpoint is queueing.
        cost.wall_ms = started.elapsed().saturating_sub(waited).as_millis() as u64;
        bump(&mut out, "endpoint_wait_ms", waited.as_millis() as u64);
        out.cost = cost;
        out.provenance = provenance;
        out.raw = serde_json::to_string(&json!({ "units": raw_units })).unwrap_or_default();
        Ok(out)
    }
}

impl Reviewer for LlmReviewer {
    fn kind(&self) -> &'static str {
        self.spec.protocol.as_str()
    }

    /// An execution has runs of this reviewer to do: its HTTP client is built beside the work
    /// before the first request (subjects, cache lookups), not in front of it.
    fn preflight(&self) -> BoxFuture<'_, Result<(), ReviewError>> {
        self.transport.warm_up();
        Box::pin(async { Ok(()) })
    }

    /// The first run's server check, asked before the run starts: each endpoint of the cell's
    /// pool is checked as a run checks it (an answer, or a fatal error, is kept for every run
    /// of the model; a server that cannot be reached is marked down, as a run would mark it).
    fn ask_ahead(self: Arc<Self>, cell: &Cell) -> Option<BoxFuture<'static, ()>> {
        let model = self.params(cell, 1).ok()?.model;
        let api_key = self.api_key().ok()?;
        let pool = self.pool(&model, api_key.as_deref()).ok()?;
        Some(Box::pin(async move {
            let checks = pool.iter().map(|endpoint| async {
                if let Err(Failure::Down(reason)) = self.transport.check(self.spec.protocol, endpoint, &model, api_key.as_deref()).await {
                    self.transport.mark_down(endpoint, reason);
                }
            });
            futures::future::join_all(checks).await;
        }))
    }

    /// The API key and what `${VAR}` brings into base URLs (see `redact`'s URL rule).
    fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self.spec.api_key_env.iter().filter_map(|v| std::env::var(v).ok()).collect();
        let urls = self.spec.base_urls.iter().chain(self.spec.endpoints.values().flatten());
        for name in urls.flat_map(|u| crate::reviewer::redact::env_references(u)) {
            if let Ok(value) = std::env::var(&name) {
                out.extend(crate::reviewer::redact::secret_parts_of_url_value(&value));
            }
        }
        out
    }

    fn fingerprint(&self, cell: &Cell) -> Value {
        let p = match self.params(cell, 1) {
            Ok(p) => p,
            Err(e) => return json!({ "invalid": e.to_string() }),
        };
        let rag = if p.rag_max_definitions == 0 {
            json!({ "max_definitions": 0 })
        } else {
            json!({ "max_definitions": p.rag_max_definitions, "max_lines": self.spec.rag_max_lines, "version": rag::RAG_VERSION })
        };
        let [system_prompt, prompt, response_schema] = self.text_hashes.get_or_init(|| {
            [
                short_hash(&self.spec.system_prompt.text),
                short_hash(&self.spec.prompt.text),
                short_hash(&format!("{}{}{}", prompt::SCHEMA_VERSION, self.schema_single, self.schema_multi)),
            ]
        });
        let mut f = json!({
            "protocol": self.spec.protocol.as_str(),
            "model": p.model,
            "temperature": p.temperature,
            "seed": p.base_seed,
            "seed_per_repeat": self.spec.seed_per_repeat,
            "max_tokens": self.spec.max_tokens,
            "unit": self.spec.unit.as_str(),
            "system_prompt": system_prompt,
            "prompt": prompt,
            "response_schema": response_schema,
            "constrain_lines": self.spec.constrain_lines,
            "rag": rag,
            "on_truncation": self.spec.on_truncation.as_str(),
            "normalize": NORMALIZE_VERSION,
        });
        if self.spec.on_truncation == OnTruncation::Continue {
            f["max_continuations"] = json!(self.spec.max_continuations);
        }
        if let Some(n) = self.spec.num_ctx {
            f["num_ctx"] = json!(n);
        }
        f
    }

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            match tokio::time::timeout(job.timeout, self.run(job, None, 0, None)).await {
                Ok(result) => result.map_err(RunFailure::into_error),
                Err(_) => Err(ReviewError::Timeout { seconds: job.timeout.as_secs_f64() }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::AxisValue;

    fn cell(pairs: &[(&str, AxisValue)]) -> Cell {
        Cell { id: "c".into(), values: pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect() }
    }

    fn reviewer(f: impl FnOnce(&mut LlmSpec)) -> LlmReviewer {
        let mut spec = LlmSpec::new(Protocol::OpenAi, "http://127.0.0.1:9/v1");
        f(&mut spec);
        LlmReviewer::new(spec).expect("reviewer")
    }

    #[test]
    fn axes_win_over_the_manifest_and_seeds_follow_repeats() {
        let r = reviewer(|s| {
            s.temperature = Some(0.1);
            s.seed = Some(100);
            s.seed_per_repeat = true;
            s.rag_max_definitions = 4;
        });
        let c = cell(&[("model", AxisValue::Str("m".into())), ("temperature", AxisValue::Float(0.7)), ("rag_symbol_max_definitions", AxisValue::Int(0))]);
        let p = r.params(&c, 3).expect("params");
        assert_eq!(p, Params { model: "m".into(), temperature: 0.7, seed: Some(102), base_seed: Some(100), rag_max_definitions: 0, max_tokens: None });
        let plain = cell(&[("model", AxisValue::Str("m".into()))]);
        let p = r.params(&plain, 1).expect("params");
        assert_eq!((p.temperature, p.seed, p.rag_max_definitions), (0.1, Some(100), 4));
        let with_seed_axis = cell(&[("model", AxisValue::Str("m".into())), ("seed", AxisValue::Int(7))]);
        assert_eq!(r.params(&with_seed_axis, 2).expect("params").seed, Some(8));
    }

    #[test]
    fn fingerprint_holds_what_changes_output_and_nothing_else() {
        let c = cell(&[("model", AxisValue::Str("m".into()))]);
        let base = reviewer(|_| {}).fingerprint(&c);
        assert_eq!(base["model"], "m");
        assert_eq!(base["protocol"], "openai");
        assert!(base.get("num_ctx").is_none());
        let text = base.to_string();
        assert!(!text.contains("127.0.0.1"), "URLs stay out of the key: {text}");
        // Output-changing settings change it.
        type Change = Box<dyn Fn(&mut LlmSpec)>;
        let changes: Vec<Change> = vec![
            Box::new(|s| s.prompt.text.push('!')),
            Box::new(|s| s.system_prompt.text.push('!')),
            Box::new(|s| s.max_tokens = 7),
            Box::new(|s| s.unit = UnitKind::File),
            Box::new(|s| s.seed = Some(1)),
            Box::new(|s| s.temperature = Some(1.5)),
            Box::new(|s| s.max_findings = 2),
            Box::new(|s| s.rag_max_definitions = 3),
            Box::new(|s| s.on_truncation = OnTruncation::Continue),
        ];
        for (i, change) in changes.iter().enumerate() {
            assert_ne!(reviewer(|s| change(s)).fingerprint(&c), base, "change {i} must change the key");
        }
        // Transport settings do not.
        let same = reviewer(|s| {
            s.base_urls = vec!["http://elsewhere:1/v1".into(), "http://b:2/v1".into()];
            s.retries = 9;
            s.max_concurrency_per_endpoint = 4;
            s.request_timeout = std::time::Duration::from_secs(1);
            s.api_key_env = Some("KEY".into());
            s.rag_max_lines = 99;
        });
        assert_eq!(same.fingerprint(&cell(&[("model", AxisValue::Str("m".into())), ("rag_symbol_max_definitions", AxisValue::Int(0))])), {
            let mut b = base.clone();
            b["rag"] = json!({"max_definitions": 0});
            b
        });
    }

    #[tokio::test]
    async fn an_answer_past_the_limit_fails_the_run_once_with_what_it_exceeded() {
        use fake_server::{FakeServer, Reply};
        let server = FakeServer::start(|path, _| match path {
            "/v1/models" => Reply::Json(200, json!({ "data": [{ "id": "m" }] })),
            "/v1/chat/completions" => Reply::Endless { status: 200, announce: None },
            _ => Reply::Json(404, json!({ "error": { "message": "File Not Found" } })),
        });
        let r = reviewer(|s| {
            s.base_urls = vec![format!("{}/v1", server.url)];
            s.rag_max_definitions = 0;
            s.retry_base_delay = std::time::Duration::from_millis(1);
        });
        let e = r.review(&fake_server::one_hunk_job(cell(&[("model", AxisValue::Str("m".into()))]))).await.expect_err("an endless answer fails the run");
        assert!(matches!(&e, ReviewError::Failed { message, .. } if message.contains("the server's answer exceeded 32 MiB")), "{e}");
        assert_eq!(server.count("/v1/chat/completions"), 1, "an answer too long is not asked again");
    }
}
