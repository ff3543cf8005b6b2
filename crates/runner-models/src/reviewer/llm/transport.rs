//! Talking to model servers robustly: endpoints whose concurrency adapts to the server
//! ([`adaptive`](super::adaptive): one controller per server and API key, shared by every
//! user in the process, under each user's own limit), load spread over several base URLs,
//! retries with exponential backoff and jitter (honouring `Retry-After`), fail-fast on unknown
//! models and unreachable servers, and a one-time check per endpoint and model that also
//! reports what the server serves.
//!
//! The retry rule: connection errors, 5xx and 429 are retried, each failed attempt counting
//! against `retries` — except a 429 while the server is serving: a request's first 429, and
//! any later one after some request to the same endpoint succeeded since its previous 429, is
//! free (at most [`RATE_LIMIT_RETRIES`] of them per request). Sustained rate limiting thus
//! slows runs down without failing them, while a server that answers nothing but 429 (a
//! spent quota) still fails them once the retries are used up.

use super::adaptive::{key_identity, Controller, Outcome, Permit, RateHeaders, Registry};
use super::spec::Protocol;
use super::wire::{check_status, read_body, AttemptError, MAX_ANSWER_BYTES};
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

/// The most 429s one request takes without counting them against `retries`.
pub(crate) const RATE_LIMIT_RETRIES: u32 = 32;

/// Retry and timeout settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    pub retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub request_timeout: Duration,
}

impl Policy {
    /// Delay before retry number `attempt` (0-based): `base × 2^attempt`, capped, with
    /// "equal jitter" (a uniform draw from half to all of it); a server's `Retry-After` wins,
    /// capped at `max_delay`.
    pub(crate) fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
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
pub(crate) struct ServerInfo {
    /// e.g. `ollama 0.5.7`, `llama.cpp (build_info b0-unknown)`.
    pub server: Option<String>,
    /// File name of the model the server loaded (llama.cpp `/props`).
    pub model_file: Option<String>,
    pub quantization: Option<String>,
    /// Ollama's digest of the model.
    pub digest: Option<String>,
}

/// One base URL, as one user (a reviewer, a judge, an embedder) sees it.
pub(crate) struct Endpoint {
    /// Expanded, without a trailing `/`.
    pub url: String,
    /// This user's own limit (`max-concurrency-per-endpoint`, a judge's `max-concurrency`).
    permits: Arc<Semaphore>,
    /// The server's adaptive limit, shared with every other user of the same URL and key.
    pub controller: Arc<Controller>,
    down: StdMutex<Option<String>>,
    checked: Mutex<BTreeMap<String, Result<ServerInfo, ReviewError>>>,
    /// What an OpenAI-compatible server said of itself (the models it lists, its provenance),
    /// asked by the first model checked there and read by every other: one `GET /models`
    /// and `GET /props` per server, not per model.
    served: StdMutex<Option<Served>>,
}

/// An OpenAI-compatible server's model list (ids and aliases) and what it says of itself.
#[derive(Clone)]
struct Served {
    names: Vec<String>,
    info: ServerInfo,
}

impl Endpoint {
    fn down_reason(&self) -> Option<String> {
        self.down.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn mark_down(&self, reason: String) {
        self.down.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(reason);
    }
}

/// A free place on an endpoint: this user's permit, held while the request (retries
/// included) runs, and a place under the server's adaptive limit for its first attempt.
pub(crate) struct Slot {
    pub endpoint: Arc<Endpoint>,
    _own: OwnedSemaphorePermit,
    shared: Option<Permit>,
}

impl Slot {
    /// The place under the adaptive limit, for [`Transport::with_retries`].
    pub(crate) fn take_permit(&mut self) -> Option<Permit> {
        self.shared.take()
    }
}

/// How a request sequence ended badly.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The endpoint could not be reached after every retry: try another one.
    Down(String),
    /// Nothing to gain from another endpoint.
    Fatal(ReviewError),
}

/// A base URL and the hash of the API key used there.
type EndpointId = (String, Option<String>);

/// The HTTP client and every endpoint it has used.
pub(crate) struct Transport {
    /// Built on first use: a TLS client parses its root certificates, which an execution
    /// served entirely from the cache never needs.
    http: Arc<std::sync::OnceLock<Result<reqwest::Client, String>>>,
    connect_timeout: Duration,
    pub policy: Policy,
    per_endpoint: usize,
    endpoints: StdMutex<BTreeMap<EndpointId, Arc<Endpoint>>>,
    rotate: AtomicUsize,
    /// Whether the client loads the system's and the bundled root certificates: a transport
    /// whose every URL is plain `http://` (a local model server) needs none, and reading them
    /// costs several milliseconds before the first request.
    roots: bool,
}

impl Transport {
    /// A transport with no client yet: [`Transport::http`] builds it on the first request.
    pub(crate) fn new(policy: Policy, connect_timeout: Duration, per_endpoint: usize) -> Self {
        Self {
            http: Arc::new(std::sync::OnceLock::new()),
            connect_timeout,
            policy,
            per_endpoint: per_endpoint.max(1),
            endpoints: StdMutex::new(BTreeMap::new()),
            rotate: AtomicUsize::new(0),
            roots: true,
        }
    }

    /// This transport talks only to `urls` (base URLs as configured, `${VAR}` expanded here):
    /// when every one is plain `http://` and no proxy the environment names is reached over
    /// TLS, its client is built without root certificates.
    pub(crate) fn only_to(mut self, urls: &[&str]) -> Self {
        let plain = |url: &str| url.starts_with("http://");
        let proxies_plain = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"].iter().all(|v| std::env::var(v).map_or(true, |p| p.is_empty() || plain(&p)));
        let urls_plain = !urls.is_empty() && urls.iter().all(|raw| super::spec::expand_env(raw).is_ok_and(|url| plain(&url)));
        self.roots = !(urls_plain && proxies_plain);
        self
    }

    /// The HTTP client, built the first time a request needs it.
    pub(crate) fn http(&self) -> Result<&reqwest::Client, AttemptError> {
        self.http.get_or_init(self.client_builder()).as_ref().map_err(|e| AttemptError::Protocol(e.clone()))
    }

    /// What builds this transport's client, wherever it is built.
    fn client_builder(&self) -> impl FnOnce() -> Result<reqwest::Client, String> + Send + 'static {
        let (connect_timeout, request_timeout, roots) = (self.connect_timeout, self.policy.request_timeout, self.roots);
        move || build_client(connect_timeout, request_timeout, roots)
    }

    /// Builds the HTTP client on a thread of its own, for an execution about to send
    /// requests: parsing the TLS roots then overlaps the work before the first request.
    pub(crate) fn warm_up(&self) {
        if self.http.get().is_some() {
            return;
        }
        let (http, build) = (self.http.clone(), self.client_builder());
        std::thread::spawn(move || http.get_or_init(build).is_ok());
    }

    /// The endpoint for an (expanded) base URL used with `api_key`, shared by every model and
    /// run of this user that uses it; its controller is shared process-wide.
    pub(crate) fn endpoint(&self, url: &str, api_key: Option<&str>) -> Arc<Endpoint> {
        let url = url.trim_end_matches('/').to_string();
        let mut map = self.endpoints.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((url.clone(), api_key.map(key_identity)))
            .or_insert_with(|| {
                Arc::new(Endpoint {
                    controller: Registry::global().controller(&url, api_key, self.per_endpoint),
                    url,
                    permits: Arc::new(Semaphore::new(self.per_endpoint)),
                    down: StdMutex::new(None),
                    checked: Mutex::new(BTreeMap::new()),
                    served: StdMutex::new(None),
                })
            })
            .clone()
    }

    /// Waits for a free slot on any endpoint of the pool that is not down (this user's limit,
    /// then the server's adaptive one), starting the search at a rotating position so load
    /// spreads. `Err` lists why each one is down.
    pub(crate) async fn acquire(&self, pool: &[Arc<Endpoint>]) -> Result<Slot, String> {
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
                async move {
                    let own = sem.acquire_owned().await.ok()?;
                    let shared = e.controller.acquire().await;
                    Some(Slot { endpoint: e, _own: own, shared: Some(shared) })
                }
                .boxed()
            })
            .collect();
        let (first, _, _) = select_all(waits).await;
        first.ok_or_else(|| "the endpoint's limiter was closed".to_string())
    }

    pub(crate) fn mark_down(&self, endpoint: &Endpoint, reason: String) {
        endpoint.mark_down(reason);
    }

    /// Runs `attempt` against `endpoint` until it succeeds, retrying connection errors, 429
    /// and 5xx with backoff (the module's retry rule), each attempt under the endpoint's
    /// adaptive limit (`permit` for the first, when the caller holds one) and reported to it.
    /// Returns the value and the number of attempts made.
    pub(crate) async fn with_retries<T, F, Fut>(&self, endpoint: &Endpoint, permit: Option<Permit>, model: &str, attempt: F) -> Result<(T, u32), Failure>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        self.retrying_on(Some(endpoint), permit, attempt).await.map_err(|(e, n)| classify(e, &endpoint.url, model, n))
    }

    /// Sends one request to `endpoint`: its `x-ratelimit-*` headers pace the endpoint, and an
    /// error status becomes the attempt's error.
    pub(crate) async fn send(&self, endpoint: &Endpoint, request: reqwest::RequestBuilder) -> Result<reqwest::Response, AttemptError> {
        let sent = tokio::time::Instant::now();
        let resp = request.send().await.map_err(|e| AttemptError::from_reqwest(&e, self.policy.request_timeout))?;
        endpoint.controller.observe(&RateHeaders::from_headers(resp.headers()), self.policy.max_delay, sent);
        check_status(resp).await
    }

    async fn retrying<T, F, Fut>(&self, attempt: F) -> Result<(T, u32), (AttemptError, u32)>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        self.retrying_on(None, None, attempt).await
    }

    /// The retry loop; on failure, the last attempt's error and the number of attempts. Once
    /// `endpoint` is known to be down (another request found it so), no retry is made. With
    /// an endpoint, each attempt holds a place under its adaptive limit (given back before any
    /// backoff) and reports how it ended.
    async fn retrying_on<T, F, Fut>(&self, endpoint: Option<&Endpoint>, mut permit: Option<Permit>, mut attempt: F) -> Result<(T, u32), (AttemptError, u32)>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        let mut n = 0u32;
        // Failed attempts counted against `retries`, and 429s (counted or not).
        let (mut counted, mut throttled, mut free) = (0u32, 0u32, 0u32);
        // The endpoint's successes when this request met its previous 429.
        let mut progress_mark: Option<u64> = None;
        loop {
            n += 1;
            if let (Some(e), None) = (endpoint, &permit) {
                permit = Some(e.controller.acquire().await);
            }
            let started = tokio::time::Instant::now();
            let result = attempt().await;
            if let (Some(e), Some(p)) = (endpoint, permit.take()) {
                e.controller.record(&p, outcome_of(&result, started.elapsed()));
            }
            match result {
                Ok(v) => return Ok((v, n)),
                Err(e) if e.retryable() => {
                    let rate_limited = is_rate_limit(&e);
                    let is_free = match endpoint {
                        Some(ep) if rate_limited && free < RATE_LIMIT_RETRIES => {
                            let now = ep.controller.successes();
                            let progressed = progress_mark.is_none_or(|mark| now > mark);
                            progress_mark = Some(now);
                            progressed
                        }
                        _ => false,
                    };
                    if is_free {
                        free += 1;
                    } else {
                        counted += 1;
                        if counted > self.policy.retries {
                            return Err((e, n));
                        }
                    }
                    let retry_after = match &e {
                        AttemptError::Status { retry_after, .. } => *retry_after,
                        _ => None,
                    };
                    // A 429's backoff grows with the 429s this request met, free or not; when
                    // the server's x-ratelimit headers hold the endpoint, the hold is the wait.
                    let is_429 = matches!(e, AttemptError::Status { status: 429, .. });
                    let exponent = if is_429 {
                        throttled += 1;
                        throttled - 1
                    } else {
                        counted.saturating_sub(1)
                    };
                    let held = is_429 && retry_after.is_none() && endpoint.is_some_and(|ep| ep.controller.hold().is_some());
                    if !held {
                        tokio::time::sleep(self.policy.delay(exponent, retry_after)).await;
                    }
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
    pub(crate) async fn check(&self, protocol: Protocol, endpoint: &Endpoint, model: &str, api_key: Option<&str>) -> Result<ServerInfo, Failure> {
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
            Protocol::OpenAi => self.check_openai(endpoint, model, api_key).await,
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
        let mut req = self.http()?.get(url);
        if let Some(key) = api_key {
            req = req.bearer_auth(key);
        }
        let timeout = self.policy.request_timeout;
        let resp = req.send().await.map_err(|e| AttemptError::from_reqwest(&e, timeout))?;
        let mut resp = check_status(resp).await?;
        let bytes = read_body(&mut resp, MAX_ANSWER_BYTES, timeout).await?;
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

    async fn check_openai(&self, endpoint: &Endpoint, model: &str, api_key: Option<&str>) -> Result<ServerInfo, Failure> {
        let base = endpoint.url.as_str();
        let known = endpoint.served.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let served = match known {
            Some(served) => served,
            None => {
                let served = self.ask_openai_server(base, model, api_key).await?;
                *endpoint.served.lock().unwrap_or_else(|p| p.into_inner()) = Some(served.clone());
                served
            }
        };
        // llama.cpp answers any model name with its one model; catch a wrong name here.
        let mut names = served.names;
        if !names.is_empty() && !names.iter().any(|n| n == model) {
            names.dedup();
            return Err(Failure::Fatal(unreachable(format!("model `{model}` is not served at `{base}` (it serves: {})", names.join(", ")))));
        }
        Ok(served.info)
    }

    /// An OpenAI-compatible server's model list and what it says of itself (`model` names the
    /// model being checked, for the error).
    async fn ask_openai_server(&self, base: &str, model: &str, api_key: Option<&str>) -> Result<Served, Failure> {
        let models_url = format!("{base}/models");
        let mut info = ServerInfo::default();
        let mut names: Vec<String> = Vec::new();
        match self.retrying(|| self.get_json(&models_url, api_key)).await {
            Ok((v, _)) => {
                let data = v.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
                for m in &data {
                    if let Some(id) = m.get("id").and_then(Value::as_str) {
                        names.push(id.to_string());
                    }
                    for alias in m.get("aliases").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                        names.push(alias.to_string());
                    }
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
        Ok(Served { names, info })
    }
}

/// The HTTP client every request of a transport goes through.
fn build_client(connect_timeout: Duration, request_timeout: Duration, roots: bool) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .tls_built_in_root_certs(roots)
        .connect_timeout(connect_timeout)
        .timeout(request_timeout)
        .user_agent(concat!("runner/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("failed to build the HTTP client: {e}"))
}

/// What an attempt's result tells the endpoint's controller.
fn outcome_of<T>(result: &Result<T, AttemptError>, latency: Duration) -> Outcome {
    match result {
        Ok(_) => Outcome::Success(latency),
        Err(AttemptError::Status { status: 429, .. }) => Outcome::Throttled,
        Err(AttemptError::Status { status: 503, .. }) => Outcome::Overloaded,
        Err(_) => Outcome::Other,
    }
}

/// A 429 that says the server is rate limiting (not one saying the account's quota is spent,
/// which waiting does not fix: OpenAI's `insufficient_quota`).
fn is_rate_limit(e: &AttemptError) -> bool {
    matches!(e, AttemptError::Status { status: 429, message, .. } if !message.contains("exceeded your current quota"))
}

pub(crate) fn unreachable(message: String) -> ReviewError {
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
        AttemptError::TooLarge(msg) => Failure::Fatal(ReviewError::failed(format!("{msg} (`{url}`, model `{model}`, {tries})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transport_to_plain_http_servers_only_loads_no_root_certificates() {
        let t = |urls: &[&str]| Transport::new(policy(), Duration::from_secs(1), 1).only_to(urls).roots;
        assert!(!t(&["http://127.0.0.1:8080/v1", "http://localhost:11434"]), "local servers need no roots");
        assert!(t(&["http://127.0.0.1:8080/v1", "https://api.example.com/v1"]), "one TLS server needs them");
        assert!(t(&["http://${RUNNER_TEST_SURELY_UNSET_VAR}/v1"]), "a URL that does not expand is not known to be plain");
        assert!(t(&[]), "no URL known");
        assert!(Transport::new(policy(), Duration::from_secs(1), 1).roots, "roots by default");
    }

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

    fn status(status: u16, message: &str) -> AttemptError {
        AttemptError::Status { status, retry_after: None, message: message.into() }
    }

    /// Every attempt answers `code` with `message`: how many attempts `with_retries` made, and
    /// how it ended.
    async fn always(t: &Transport, e: &Endpoint, code: u16, message: &str) -> (u32, Result<((), u32), Failure>) {
        let mut calls = 0;
        let r = t
            .with_retries(e, None, "m", || {
                calls += 1;
                let answer = status(code, message);
                async move { Err(answer) }
            })
            .await;
        (calls, r)
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_at_the_limit_and_on_fatal_errors() {
        let t = Transport::new(policy(), Duration::from_secs(1), 1);
        let e = t.endpoint("http://retry-limit.invalid", None);
        let (calls, r) = always(&t, &e, 503, "busy").await;
        assert_eq!(calls, 4, "1 try + 3 retries");
        assert!(matches!(r, Err(Failure::Fatal(ReviewError::Failed { message, .. })) if message.contains("503") && message.contains("4 attempts")));
        let (calls, r) = always(&t, &e, 400, "bad").await;
        assert_eq!(calls, 1, "no retry on 400");
        assert!(r.is_err());
        let mut calls = 0;
        let r = t
            .with_retries(&e, None, "m", || {
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

    #[tokio::test(start_paused = true)]
    async fn a_429_is_free_while_the_endpoint_serves_others_and_counts_when_it_serves_none() {
        let t = Transport::new(Policy { retries: 1, ..policy() }, Duration::from_secs(1), 64);
        let e = t.endpoint("http://free-429.invalid", None);
        // Four 429s, each after another request to the endpoint succeeded: none counts, so
        // one retry allowed is enough. (Each cuts the limit, 16 → 8 → 4 → 2 → 1; the other
        // request needs a place beside this one's.)
        let mut calls = 0;
        let controller = e.controller.clone();
        let r = t
            .with_retries(&e, None, "m", || {
                calls += 1;
                let (n, c) = (calls, controller.clone());
                async move {
                    if n > 4 {
                        return Ok(n);
                    }
                    let other = c.acquire().await;
                    c.record(&other, Outcome::Success(Duration::from_millis(5)));
                    Err(status(429, "rate limit reached"))
                }
            })
            .await
            .map_err(|_| "failed");
        assert_eq!(r.expect("the fifth attempt succeeds"), (5, 5));
        // 429s with no other success in between: the first is free, then they count.
        let (calls, r) = always(&t, &e, 429, "rate limit reached").await;
        assert_eq!(calls, 3, "1 free 429 + 1 try + 1 retry");
        assert!(matches!(r, Err(Failure::Fatal(ReviewError::Failed { message, .. })) if message.contains("429") && message.contains("3 attempts")));
        // A spent quota is not a rate limit: every 429 counts.
        let (calls, _) = always(&t, &e, 429, "You exceeded your current quota, please check your plan and billing details.").await;
        assert_eq!(calls, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_delays_the_retry_and_429s_cut_the_shared_limit() {
        let t = Transport::new(Policy { max_delay: Duration::from_secs(10), ..policy() }, Duration::from_secs(1), 8);
        let e = t.endpoint("http://retry-after.invalid", Some("sk-a"));
        let started = tokio::time::Instant::now();
        let mut calls = 0;
        let r = t
            .with_retries(&e, None, "m", || {
                calls += 1;
                let n = calls;
                async move {
                    if n == 1 {
                        Err(AttemptError::Status { status: 429, retry_after: Some(Duration::from_secs(5)), message: "slow down".into() })
                    } else {
                        Ok(n)
                    }
                }
            })
            .await
            .map_err(|_| "failed");
        assert_eq!(r.expect("retried"), (2, 2));
        assert_eq!(started.elapsed(), Duration::from_secs(5), "Retry-After honoured, in virtual time");
        assert_eq!(e.controller.limit(), 4, "the 429 halved the endpoint's limit");
        // Another user of the same server and key shares the controller; another key does not.
        let judge = Transport::new(policy(), Duration::from_secs(1), 2);
        assert!(Arc::ptr_eq(&judge.endpoint("http://retry-after.invalid/", Some("sk-a")).controller, &e.controller));
        assert!(!Arc::ptr_eq(&judge.endpoint("http://retry-after.invalid", Some("sk-b")).controller, &e.controller));
    }

    /// Sends one request to `server`'s `path` and reads the answer with `read`, retried by
    /// `t`'s policy.
    async fn ask<F, Fut>(t: &Transport, url: &str, read: F) -> Result<((), u32), Failure>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: Future<Output = Result<(), AttemptError>>,
    {
        let e = t.endpoint(url, None);
        let target = format!("{url}/answer");
        t.with_retries(&e, None, "m", || {
            let (t, e, target, read) = (t, &e, &target, &read);
            async move { read(t.send(e, t.http()?.post(target).json(&serde_json::json!({}))).await?).await }
        })
        .await
    }

    #[tokio::test]
    async fn answers_past_the_limit_fail_at_once_and_are_not_read_to_their_end() {
        use super::super::fake_server::{FakeServer, Reply};
        use super::super::wire;
        // A long timeout and backoff: only the limit may end these requests, and a retry
        // would show as a second request.
        let t =
            Transport::new(Policy { request_timeout: Duration::from_secs(300), base_delay: Duration::from_millis(1), ..policy() }, Duration::from_secs(5), 1);
        let timeout = Duration::from_secs(300);
        let openai = |resp| async move { wire::openai_read(resp, timeout).await.map(|_| ()) };
        let ollama = |resp| async move { wire::ollama_read(resp, timeout).await.map(|_| ()) };
        let chunked = FakeServer::start(|_, _| Reply::Endless { status: 200, announce: None });
        let announced = FakeServer::start(|_, _| Reply::Endless { status: 200, announce: Some(600 * 1024 * 1024) });
        let cases = [
            (&chunked, ask(&t, &chunked.url, openai).await, "bytes arrived before runner stopped reading"),
            (&announced, ask(&t, &announced.url, openai).await, "its Content-Length is 629145600 bytes"),
            (&chunked, ask(&t, &chunked.url, ollama).await, "bytes of its stream arrived before runner stopped reading"),
            (&announced, ask(&t, &announced.url, ollama).await, "its Content-Length is 629145600 bytes"),
        ];
        for (i, (_, result, says)) in cases.iter().enumerate() {
            match result {
                Err(Failure::Fatal(ReviewError::Failed { message, .. })) => {
                    assert!(
                        message.contains("the server's answer exceeded 32 MiB") && message.contains(says) && message.contains("1 attempt"),
                        "case {i}: {message}"
                    )
                }
                Err(Failure::Fatal(e)) => panic!("case {i}: {e}"),
                Err(Failure::Down(e)) => panic!("case {i}: down: {e}"),
                Ok(_) => panic!("case {i}: an endless answer was read"),
            }
        }
        assert_eq!((chunked.count("/answer"), announced.count("/answer")), (2, 2), "each request made once: not retried");
        // The client hung up: the server's writes failed long before 600 MB.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while chunked.endless_closed.load(std::sync::atomic::Ordering::SeqCst) < 2 || announced.endless_closed.load(std::sync::atomic::Ordering::SeqCst) < 2 {
            assert!(std::time::Instant::now() < deadline, "the servers still write");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let written = chunked.endless_written.load(std::sync::atomic::Ordering::SeqCst);
        assert!(written < 2 * 48 * 1024 * 1024, "{written} bytes written for two answers cut at 32 MiB");
    }

    #[tokio::test]
    async fn an_error_answer_is_read_only_for_its_message() {
        use super::super::fake_server::{FakeServer, Reply};
        use super::super::wire;
        let t = Transport::new(Policy { retries: 0, request_timeout: Duration::from_secs(300), ..policy() }, Duration::from_secs(5), 1);
        let server = FakeServer::start(|_, _| Reply::Endless { status: 500, announce: None });
        let r = ask(&t, &server.url, |resp| async move { wire::openai_read(resp, Duration::from_secs(300)).await.map(|_| ()) }).await;
        assert!(matches!(&r, Err(Failure::Fatal(ReviewError::Failed { message, .. })) if message.contains("answered 500")), "{:?}", r.err());
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while server.endless_closed.load(std::sync::atomic::Ordering::SeqCst) < 1 {
            assert!(std::time::Instant::now() < deadline, "the server still writes");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let written = server.endless_written.load(std::sync::atomic::Ordering::SeqCst);
        assert!(written < 32 * 1024 * 1024, "{written} bytes written for an error body read up to 64 KiB");
    }

    #[tokio::test]
    async fn acquire_spreads_and_skips_down_endpoints() {
        let t = Transport::new(policy(), Duration::from_secs(1), 1);
        let a = t.endpoint("http://a/", None);
        let b = t.endpoint("http://b", None);
        assert_eq!(a.url, "http://a");
        let pool = vec![a.clone(), b.clone()];
        let s1 = t.acquire(&pool).await.expect("one");
        let s2 = t.acquire(&pool).await.expect("two");
        assert_ne!(s1.endpoint.url, s2.endpoint.url, "the second request goes to the free endpoint");
        drop((s1, s2));
        t.mark_down(&a, "refused".into());
        match t.acquire(std::slice::from_ref(&a)).await {
            Ok(_) => panic!("a pool with only a down endpoint has nothing to give"),
            Err(e) => assert!(e.contains("`http://a`: refused"), "{e}"),
        }
        let s3 = t.acquire(&pool).await.expect("b is live");
        assert_eq!(s3.endpoint.url, "http://b");
    }
}
