//! Talking to model servers robustly: endpoints with their own concurrency limits, load
//! spread over several base URLs, retries with exponential backoff and jitter (honouring
//! `Retry-After`), fail-fast on unknown models and unreachable servers, and a one-time
//! check per endpoint and model that also reports what the server serves.

use super::spec::Protocol;
use super::wire::{check_status, AttemptError};
use crate::reviewer::ReviewError;
use futures::future::{select_all, BoxFuture, FutureExt};
use rand::Rng;
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

/// Retry and timeout settings.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub request_timeout: Duration,
}

impl Policy {
    /// Delay before retry number `attempt` (0-based): `base × 2^attempt`, capped, with
    /// "equal jitter" (a uniform draw from half to all of it); a server's `Retry-After` wins,
    /// capped at `max_delay`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(self.max_delay);
        }
        let exp = self.base_delay.saturating_mul(2u32.saturating_pow(attempt.min(20))).min(self.max_delay);
        let factor: f64 = rand::rng().random_range(0.5..=1.0);
        exp.mul_f64(factor)
    }
}

/// What a server says about itself and a model, for provenance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerInfo {
    /// e.g. `ollama 0.5.7`, `llama.cpp (build_info b0-unknown)`.
    pub server: Option<String>,
    /// File name of the model the server loaded (llama.cpp `/props`).
    pub model_file: Option<String>,
    pub quantization: Option<String>,
    /// Ollama's digest of the model.
    pub digest: Option<String>,
}

/// One base URL.
pub struct Endpoint {
    /// Expanded, without a trailing `/`.
    pub url: String,
    permits: Arc<Semaphore>,
    down: StdMutex<Option<String>>,
    checked: Mutex<BTreeMap<String, Result<ServerInfo, ReviewError>>>,
}

impl Endpoint {
    fn down_reason(&self) -> Option<String> {
        self.down.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn mark_down(&self, reason: String) {
        self.down.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(reason);
    }
}

/// A free place on an endpoint: hold the permit while the request runs.
type Slot = (Arc<Endpoint>, OwnedSemaphorePermit);

/// How a request sequence ended badly.
#[derive(Debug)]
pub enum Failure {
    /// The endpoint could not be reached after every retry: try another one.
    Down(String),
    /// Nothing to gain from another endpoint.
    Fatal(ReviewError),
}

/// The HTTP client and every endpoint it has used.
pub struct Transport {
    pub http: reqwest::Client,
    pub policy: Policy,
    per_endpoint: usize,
    endpoints: StdMutex<BTreeMap<String, Arc<Endpoint>>>,
    rotate: AtomicUsize,
}

impl Transport {
    pub fn new(policy: Policy, connect_timeout: Duration, per_endpoint: usize) -> Result<Self, ReviewError> {
        let http = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .timeout(policy.request_timeout)
            .user_agent(concat!("runner/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ReviewError::failed(format!("failed to build the HTTP client: {e}")))?;
        Ok(Self { http, policy, per_endpoint: per_endpoint.max(1), endpoints: StdMutex::new(BTreeMap::new()), rotate: AtomicUsize::new(0) })
    }

    /// The endpoint for an (expanded) base URL, shared by every model and run that uses it.
    pub fn endpoint(&self, url: &str) -> Arc<Endpoint> {
        let url = url.trim_end_matches('/').to_string();
        let mut map = self.endpoints.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(url.clone())
            .or_insert_with(|| {
                Arc::new(Endpoint {
                    url,
                    permits: Arc::new(Semaphore::new(self.per_endpoint)),
                    down: StdMutex::new(None),
                    checked: Mutex::new(BTreeMap::new()),
                })
            })
            .clone()
    }

    /// Waits for a free slot on any endpoint of the pool that is not down, starting the
    /// search at a rotating position so load spreads. `Err` lists why each one is down.
    pub async fn acquire(&self, pool: &[Arc<Endpoint>]) -> Result<Slot, String> {
        let live: Vec<Arc<Endpoint>> = pool.iter().filter(|e| e.down_reason().is_none()).cloned().collect();
        if live.is_empty() {
            let reasons: Vec<String> = pool.iter().map(|e| format!("`{}`: {}", e.url, e.down_reason().unwrap_or_default())).collect();
            return Err(reasons.join("; "));
        }
        let start = self.rotate.fetch_add(1, Ordering::Relaxed) % live.len();
        let ordered: Vec<Arc<Endpoint>> = live[start..].iter().chain(&live[..start]).cloned().collect();
        let waits: Vec<BoxFuture<'static, Option<Slot>>> = ordered
            .into_iter()
            .map(|e| {
                let sem = e.permits.clone();
                async move { sem.acquire_owned().await.ok().map(|p| (e, p)) }.boxed()
            })
            .collect();
        let (first, _, _) = select_all(waits).await;
        first.ok_or_else(|| "the endpoint's limiter was closed".to_string())
    }

    pub fn mark_down(&self, endpoint: &Endpoint, reason: String) {
        endpoint.mark_down(reason);
    }

    /// Runs `attempt` until it succeeds, retrying connection errors, 429 and 5xx with backoff.
    /// Returns the value and the number of attempts made.
    pub async fn with_retries<T, F, Fut>(&self, url: &str, model: &str, attempt: F) -> Result<(T, u32), Failure>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        let endpoint = self.endpoint(url);
        self.retrying_on(Some(&endpoint), attempt).await.map_err(|(e, n)| classify(e, url, model, n))
    }

    async fn retrying<T, F, Fut>(&self, attempt: F) -> Result<(T, u32), (AttemptError, u32)>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        self.retrying_on(None, attempt).await
    }

    /// The retry loop; on failure, the last attempt's error and the number of attempts. Once
    /// `endpoint` is known to be down (another request found it so), no retry is made.
    async fn retrying_on<T, F, Fut>(&self, endpoint: Option<&Endpoint>, mut attempt: F) -> Result<(T, u32), (AttemptError, u32)>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        let mut n = 0u32;
        loop {
            n += 1;
            match attempt().await {
                Ok(v) => return Ok((v, n)),
                Err(e) if e.retryable() && n <= self.policy.retries => {
                    let retry_after = match &e {
                        AttemptError::Status { retry_after, .. } => *retry_after,
                        _ => None,
                    };
                    tokio::time::sleep(self.policy.delay(n - 1, retry_after)).await;
                    if let Some(reason) = endpoint.and_then(Endpoint::down_reason) {
                        return Err((AttemptError::Connect(reason), n));
                    }
                }
                Err(e) => return Err((e, n)),
            }
        }
    }

    /// Checks once per endpoint and model that the server answers and serves the model, and
    /// learns what it can about the server. Unknown models fail fast.
    pub async fn check(&self, protocol: Protocol, endpoint: &Endpoint, model: &str, api_key: Option<&str>) -> Result<ServerInfo, Failure> {
        let mut checked = endpoint.checked.lock().await;
        if let Some(done) = checked.get(model) {
            return done.clone().map_err(Failure::Fatal);
        }
        // Another run's check (which this one waited for) found the server down: the whole
        // retry sequence is not repeated for every run that queued behind it.
        if let Some(reason) = endpoint.down_reason() {
            return Err(Failure::Down(reason));
        }
        let result = match protocol {
            Protocol::Ollama => self.check_ollama(&endpoint.url, model, api_key).await,
            Protocol::OpenAi => self.check_openai(&endpoint.url, model, api_key).await,
        };
        match result {
            Ok(info) => {
                checked.insert(model.to_string(), Ok(info.clone()));
                Ok(info)
            }
            Err(Failure::Fatal(e)) => {
                checked.insert(model.to_string(), Err(e.clone()));
                Err(Failure::Fatal(e))
            }
            Err(down) => Err(down),
        }
    }

    async fn get_json(&self, url: &str, api_key: Option<&str>) -> Result<Value, AttemptError> {
        let mut req = self.http.get(url);
        if let Some(key) = api_key {
            req = req.bearer_auth(key);
        }
        let timeout = self.policy.request_timeout;
        let resp = req.send().await.map_err(|e| AttemptError::from_reqwest(&e, timeout))?;
        let resp = check_status(resp).await?;
        let bytes = resp.bytes().await.map_err(|e| AttemptError::from_reqwest(&e, timeout))?;
        serde_json::from_slice(&bytes).map_err(|e| AttemptError::Protocol(format!("`{url}` did not answer JSON: {e}")))
    }

    async fn check_ollama(&self, base: &str, model: &str, api_key: Option<&str>) -> Result<ServerInfo, Failure> {
        let tags_url = format!("{base}/api/tags");
        let tags = match self.retrying(|| self.get_json(&tags_url, api_key)).await {
            Ok((v, _)) => v,
            Err((AttemptError::Status { status: 404, .. }, _)) => {
                return Err(Failure::Fatal(unreachable(format!(
                    "`{base}` does not speak Ollama's API (GET /api/tags answered 404) for model `{model}`; for an OpenAI-compatible server use kind = \"openai\" with its `/v1` base URL"
                ))));
            }
            Err((e, n)) => return Err(classify(e, base, model, n)),
        };
        let models = tags.get("models").and_then(Value::as_array).cloned().unwrap_or_default();
        let found = models.iter().find(|m| {
            let name = m.get("name").or_else(|| m.get("model")).and_then(Value::as_str).unwrap_or_default();
            name == model || name == format!("{model}:latest") || format!("{name}:latest") == model
        });
        let Some(found) = found else {
            let names: Vec<&str> = models.iter().filter_map(|m| m.get("name").and_then(Value::as_str)).collect();
            return Err(Failure::Fatal(unreachable(format!(
                "model `{model}` is not available at `{base}` (it has: {}); pull it with `ollama pull {model}`",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ))));
        };
        let version = self.get_json(&format!("{base}/api/version"), api_key).await.ok();
        Ok(ServerInfo {
            server: version.and_then(|v| v.get("version").and_then(Value::as_str).map(|s| format!("ollama {s}"))),
            model_file: None,
            quantization: found.pointer("/details/quantization_level").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string),
            digest: found.get("digest").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string),
        })
    }

    async fn check_openai(&self, base: &str, model: &str, api_key: Option<&str>) -> Result<ServerInfo, Failure> {
        let models_url = format!("{base}/models");
        let mut info = ServerInfo::default();
        match self.retrying(|| self.get_json(&models_url, api_key)).await {
            Ok((v, _)) => {
                let data = v.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
                let mut names: Vec<String> = Vec::new();
                for m in &data {
                    if let Some(id) = m.get("id").and_then(Value::as_str) {
                        names.push(id.to_string());
                    }
                    for alias in m.get("aliases").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                        names.push(alias.to_string());
                    }
                }
                // llama.cpp answers any model name with its one model; catch a wrong name here.
                if !names.is_empty() && !names.iter().any(|n| n == model) {
                    names.dedup();
                    return Err(Failure::Fatal(unreachable(format!("model `{model}` is not served at `{base}` (it serves: {})", names.join(", ")))));
                }
                info.quantization = data.first().and_then(|m| m.pointer("/meta/ftype")).and_then(Value::as_str).map(str::to_string);
            }
            // Some servers have no model list; the first request will tell.
            Err((AttemptError::Status { status: 404, .. }, _)) => {}
            Err((e, n)) => return Err(classify(e, base, model, n)),
        }
        // llama.cpp's server tells which file it loaded.
        let root = base.strip_suffix("/v1").unwrap_or(base);
        if let Ok(props) = self.get_json(&format!("{root}/props"), api_key).await {
            info.model_file = props.get("model_path").and_then(Value::as_str).map(|p| p.rsplit(['/', '\\']).next().unwrap_or(p).to_string());
            if let Some(q) = props.get("model_ftype").and_then(Value::as_str) {
                info.quantization = Some(q.to_string());
            }
            if let Some(b) = props.get("build_info").and_then(Value::as_str) {
                info.server = Some(format!("llama.cpp (build_info {b})"));
            }
        }
        Ok(info)
    }
}

pub fn unreachable(message: String) -> ReviewError {
    ReviewError::Unreachable { message, stderr_tail: String::new() }
}

/// Turns the last attempt's error into how the request sequence ended.
fn classify(e: AttemptError, url: &str, model: &str, attempts: u32) -> Failure {
    let tries = if attempts == 1 { "1 attempt".to_string() } else { format!("{attempts} attempts") };
    match e {
        AttemptError::Connect(msg) => Failure::Down(format!("cannot reach `{url}` for model `{model}` after {tries}: {msg}")),
        AttemptError::Dropped(msg) => {
            Failure::Fatal(ReviewError::failed(format!("`{url}` dropped the connection mid-answer for model `{model}` after {tries}: {msg}")))
        }
        AttemptError::Status { status: 404, message, .. } => Failure::Fatal(unreachable(format!("`{url}` answered 404 for model `{model}`: {message}"))),
        AttemptError::Status { status: s @ (401 | 403), message, .. } => {
            Failure::Fatal(unreachable(format!("`{url}` refused model `{model}` ({s}): {message}; check the key named by `api-key-env`")))
        }
        AttemptError::Status { status, message, .. } if status == 429 || status >= 500 => {
            Failure::Fatal(ReviewError::failed(format!("`{url}` answered {status} for model `{model}` after {tries}: {message}")))
        }
        AttemptError::Status { status, message, .. } => {
            Failure::Fatal(ReviewError::failed(format!("`{url}` rejected the request for model `{model}` ({status}): {message}")))
        }
        AttemptError::Timeout(d) => {
            Failure::Fatal(ReviewError::failed(format!("request to `{url}` for model `{model}` timed out after {:.0}s (`request-timeout`)", d.as_secs_f64())))
        }
        AttemptError::Protocol(msg) => Failure::Fatal(ReviewError::failed(format!("`{url}` sent an answer runner cannot read for model `{model}`: {msg}"))),
        AttemptError::Model(msg) => Failure::Fatal(ReviewError::failed(format!("model `{model}` at `{url}` reported an error: {msg}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy { retries: 3, base_delay: Duration::from_millis(100), max_delay: Duration::from_secs(1), request_timeout: Duration::from_secs(5) }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let p = policy();
        for attempt in 0..6 {
            let full = (Duration::from_millis(100) * 2u32.pow(attempt)).min(Duration::from_secs(1));
            let d = p.delay(attempt, None);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?} not in [{:?}, {full:?}]", full / 2);
        }
        assert_eq!(p.delay(0, Some(Duration::from_millis(300))), Duration::from_millis(300));
        assert_eq!(p.delay(0, Some(Duration::from_secs(60))), Duration::from_secs(1), "Retry-After is capped");
    }

    #[test]
    fn classification_names_url_and_model() {
        let down = classify(AttemptError::Connect("connection refused".into()), "http://h:1", "m", 4);
        assert!(matches!(&down, Failure::Down(m) if m.contains("`http://h:1`") && m.contains("`m`") && m.contains("4 attempts")));
        let missing = classify(AttemptError::Status { status: 404, retry_after: None, message: "model 'm' not found".into() }, "http://h:1", "m", 1);
        assert!(matches!(missing, Failure::Fatal(ReviewError::Unreachable { .. })));
        let bad = classify(AttemptError::Status { status: 400, retry_after: None, message: "context too long".into() }, "http://h:1", "m", 1);
        assert!(matches!(bad, Failure::Fatal(ReviewError::Failed { .. })));
    }

    #[tokio::test]
    async fn retries_stop_at_the_limit_and_on_fatal_errors() {
        let t = Transport::new(Policy { base_delay: Duration::from_millis(1), ..policy() }, Duration::from_secs(1), 1).expect("client");
        let mut calls = 0;
        let r: Result<((), u32), Failure> = t
            .with_retries("http://h", "m", || {
                calls += 1;
                async { Err(AttemptError::Status { status: 503, retry_after: None, message: "busy".into() }) }
            })
            .await;
        assert_eq!(calls, 4, "1 try + 3 retries");
        assert!(matches!(r, Err(Failure::Fatal(ReviewError::Failed { message, .. })) if message.contains("503") && message.contains("4 attempts")));
        let mut calls = 0;
        let r: Result<((), u32), Failure> = t
            .with_retries("http://h", "m", || {
                calls += 1;
                async { Err(AttemptError::Status { status: 400, retry_after: None, message: "bad".into() }) }
            })
            .await;
        assert_eq!(calls, 1, "no retry on 400");
        assert!(r.is_err());
        let mut calls = 0;
        let r = t
            .with_retries("http://h", "m", || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 3 {
                        Err(AttemptError::Connect("reset".into()))
                    } else {
                        Ok(n)
                    }
                }
            })
            .await
            .map_err(|_| "failed");
        assert_eq!(r.expect("third try succeeds"), (3, 3));
    }

    #[tokio::test]
    async fn acquire_spreads_and_skips_down_endpoints() {
        let t = Transport::new(policy(), Duration::from_secs(1), 1).expect("client");
        let a = t.endpoint("http://a/");
        let b = t.endpoint("http://b");
        assert_eq!(a.url, "http://a");
        let pool = vec![a.clone(), b.clone()];
        let (e1, p1) = t.acquire(&pool).await.expect("one");
        let (e2, p2) = t.acquire(&pool).await.expect("two");
        assert_ne!(e1.url, e2.url, "the second request goes to the free endpoint");
        drop((p1, p2));
        t.mark_down(&a, "refused".into());
        match t.acquire(std::slice::from_ref(&a)).await {
            Ok(_) => panic!("a pool with only a down endpoint has nothing to give"),
            Err(e) => assert!(e.contains("`http://a`: refused"), "{e}"),
        }
        let (e3, _p3) = t.acquire(&pool).await.expect("b is live");
        assert_eq!(e3.url, "http://b");
    }
}
