//! Embeddings from a real embedding model behind an HTTP server: OpenAI-compatible
//! `POST {base}/embeddings` (llama.cpp's server in embedding mode, vLLM, hosted APIs) or
//! Ollama's `POST {base}/api/embed` (vectors compare with [`crate::text::cosine`]).
//!
//! An [`Embedder`] sends the texts in batches of `batch-size`, one batch at a time, and hands
//! back one vector per text in the order given; it checks that the server answered once per
//! text and that every vector has the same dimension (and the one `models-json` lists, when
//! it is set). Requests go through the LLM reviewer's [`Transport`]: retries with backoff on
//! connection errors, 429 and 5xx (honouring `Retry-After`), a once-per-server check that it
//! serves the model (an unknown model fails fast), and what the server says it serves.
//!
//! The cache key ([`Embedder::fingerprint`]) follows the LLM reviewer's rule: the protocol and
//! the model name, never base URLs, batch size, retries, timeouts or the API key. Which model
//! file actually answered is provenance ([`Embedder::identity`]): what the server reports
//! (`/v1/models` id, llama.cpp's `/props` model file, Ollama's digest) and, with
//! `models-json`, the file and sha256 that `scripts/model-server/install.sh` recorded; a
//! server that serves another file than `models-json` names is an error.

use crate::config::TableReader;
use crate::reviewer::llm::spec::{api_key_from_env, check_api_key_env, check_url, read_models_json, read_retries_and_timeouts};
use crate::reviewer::llm::spec::{expand_env, Protocol};
use crate::reviewer::llm::transport::{Endpoint, Failure, Policy, ServerInfo, Transport};
use crate::reviewer::llm::wire::{self, AttemptError};
use crate::reviewer::ReviewError;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Which wire protocol an embedding server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedProtocol {
    /// `POST {base}/embeddings` with `{"model","input":[…]}` → `data[i].embedding`.
    OpenAi,
    /// Ollama's `POST {base}/api/embed` with `{"model","input":[…]}` → `embeddings[i]`.
    Ollama,
}

impl EmbedProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Ollama => "ollama",
        }
    }

    fn transport_protocol(self) -> Protocol {
        match self {
            Self::OpenAi => Protocol::OpenAi,
            Self::Ollama => Protocol::Ollama,
        }
    }

    /// Where a server of this protocol usually listens.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "http://127.0.0.1:8080/v1",
            Self::Ollama => "http://localhost:11434",
        }
    }
}

/// A resolved embedder configuration (the manifest's embedder table).
#[derive(Debug, Clone, PartialEq)]
pub struct EmbedderSpec {
    pub protocol: EmbedProtocol,
    /// The server's base URL: `…/v1` for OpenAI-compatible servers, the root for Ollama.
    /// May hold `${VAR}` / `${VAR:-default}`, expanded by [`Embedder::new`].
    pub base_url: String,
    pub model: String,
    /// Environment variable holding the API key (sent as a bearer token; never stored).
    pub api_key_env: Option<String>,
    /// Texts per request.
    pub batch_size: usize,
    pub retries: u32,
    pub retry_base_delay: Duration,
    pub retry_max_delay: Duration,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// `.models/MODELS.json` of the model-server scripts; the entry named `model` gives the
    /// model file, its sha256 and the dimension.
    pub models_json: Option<PathBuf>,
}

impl EmbedderSpec {
    /// A spec with every default.
    pub fn new(protocol: EmbedProtocol, base_url: &str, model: &str) -> Self {
        Self {
            protocol,
            base_url: base_url.to_string(),
            model: model.to_string(),
            api_key_env: None,
            batch_size: 32,
            retries: 3,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(5),
            models_json: None,
        }
    }
}

/// Why embedding failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// The configuration cannot work (a URL that is not http(s), an unset variable).
    #[error("{0}")]
    Config(String),
    /// The server could not be reached, or does not serve the model.
    #[error("embedding server unreachable: {0}")]
    Unreachable(String),
    /// The server answered, but not with what was asked for.
    #[error("{0}")]
    Failed(String),
}

impl From<ReviewError> for EmbedError {
    fn from(e: ReviewError) -> Self {
        match e {
            ReviewError::Unreachable { message, .. } => Self::Unreachable(message),
            other => Self::Failed(other.to_string()),
        }
    }
}

/// The vectors of [`Embedder::embed`], one per text in the order given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Embedded {
    pub vectors: Vec<Vec<f32>>,
    /// Input tokens as the server counted them (`usage.prompt_tokens`, Ollama's
    /// `prompt_eval_count`); 0 when it reports none.
    pub tokens: u64,
    /// HTTP requests made, retries included.
    pub requests: u32,
    /// Wall time of the whole call.
    pub seconds: f64,
}

impl Embedded {
    /// The vectors' dimension; `None` when there are none.
    pub fn dimension(&self) -> Option<usize> {
        self.vectors.first().map(Vec::len)
    }
}

/// One batch's answer.
struct Batch {
    vectors: Vec<Vec<f32>>,
    tokens: Option<u64>,
}

/// Talks to one embedding server.
pub struct Embedder {
    spec: EmbedderSpec,
    /// `spec.base_url` expanded, without a trailing `/`.
    base: String,
    transport: Transport,
    models_json: OnceLock<Result<Option<Value>, String>>,
}

impl Embedder {
    pub fn new(spec: EmbedderSpec) -> Result<Self, EmbedError> {
        let base = expand_env(&spec.base_url).map_err(|e| EmbedError::Config(format!("embedder `base-url`: {e}")))?;
        if !base.starts_with("http://") && !base.starts_with("https://") {
            return Err(EmbedError::Config(format!("embedder base URL `{base}` (from `{}`) is not an http(s) URL", spec.base_url)));
        }
        if spec.batch_size == 0 {
            return Err(EmbedError::Config("embedder `batch-size` must be at least 1".into()));
        }
        let policy =
            Policy { retries: spec.retries, base_delay: spec.retry_base_delay, max_delay: spec.retry_max_delay, request_timeout: spec.request_timeout };
        let transport = Transport::new(policy, spec.connect_timeout, 1).only_to(&[spec.base_url.as_str()]);
        let base = base.trim_end_matches('/').to_string();
        Ok(Self { spec, base, transport, models_json: OnceLock::new() })
    }

    pub fn spec(&self) -> &EmbedderSpec {
        &self.spec
    }

    /// What changes the vectors: the protocol and the model name (see the module doc).
    pub fn fingerprint(&self) -> Value {
        json!({ "protocol": self.spec.protocol.as_str(), "model": self.spec.model })
    }

    fn api_key(&self) -> Result<Option<String>, EmbedError> {
        api_key_from_env(self.spec.api_key_env.as_deref(), "the embedder's `api-key-env`").map_err(EmbedError::Config)
    }

    /// This model's entry in `models-json`, if one is configured.
    fn models_entry(&self) -> Result<Option<Value>, EmbedError> {
        let entry = self.models_json.get_or_init(|| {
            let Some(path) = &self.spec.models_json else { return Ok(None) };
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("failed to read `models-json` `{}`: {e}; run scripts/model-server/install.sh or remove `models-json`", path.display()))?;
            let doc: Value = serde_json::from_str(&text).map_err(|e| format!("`models-json` `{}` is not JSON: {e}", path.display()))?;
            let models = doc.get("models").and_then(Value::as_array).cloned().unwrap_or_default();
            match models.iter().find(|m| m.get("name").and_then(Value::as_str) == Some(self.spec.model.as_str())) {
                Some(m) => Ok(Some(m.clone())),
                None => {
                    let names: Vec<&str> = models.iter().filter_map(|m| m.get("name").and_then(Value::as_str)).collect();
                    Err(format!("embedding model `{}` is not in `{}` (it lists: {})", self.spec.model, path.display(), names.join(", ")))
                }
            }
        });
        entry.clone().map_err(EmbedError::Config)
    }

    /// Checks (once) that the server answers and serves the model; what it says it serves.
    async fn check(&self, endpoint: &Endpoint, api_key: Option<&str>) -> Result<ServerInfo, EmbedError> {
        match self.transport.check(self.spec.protocol.transport_protocol(), endpoint, &self.spec.model, api_key).await {
            Ok(info) => Ok(info),
            Err(Failure::Down(reason)) => Err(EmbedError::Unreachable(reason)),
            Err(Failure::Fatal(e)) => Err(e.into()),
        }
    }

    /// Fails when the server serves another file than `models-json` lists.
    fn check_against_models_json(&self, info: &ServerInfo) -> Result<(), EmbedError> {
        let Some(entry) = self.models_entry()? else { return Ok(()) };
        let listed = entry.get("file").and_then(Value::as_str).map(|f| f.rsplit('/').next().unwrap_or(f).to_string());
        if let (Some(served), Some(listed)) = (&info.model_file, listed) {
            if *served != listed {
                return Err(EmbedError::Unreachable(format!(
                    "`{}` serves `{served}` for embedding model `{}`, but `models-json` lists `{listed}`; the recorded sha256 would be wrong",
                    self.base, self.spec.model
                )));
            }
        }
        Ok(())
    }

    /// Embeds `texts`, `batch-size` at a time, keeping their order.
    pub async fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let started = Instant::now();
        let mut out = Embedded::default();
        if texts.is_empty() {
            return Ok(out);
        }
        let api_key = self.api_key()?;
        let endpoint = self.transport.endpoint(&self.base, api_key.as_deref());
        let pool = [endpoint.clone()];
        // The dimension every vector must have: what `models-json` lists, else the first one's.
        let listed = self.models_entry()?.and_then(|e| e.get("dimension").and_then(Value::as_u64)).map(|d| (d as usize, "`models-json` lists".to_string()));
        let mut want: Option<(usize, String)> = listed;
        {
            let _slot = self.transport.acquire(&pool).await.map_err(EmbedError::Unreachable)?;
            let info = self.check(&endpoint, api_key.as_deref()).await?;
            self.check_against_models_json(&info)?;
        }
        let mut offset = 0usize;
        for chunk in texts.chunks(self.spec.batch_size) {
            let mut slot = self.transport.acquire(&pool).await.map_err(EmbedError::Unreachable)?;
            let result = self.transport.with_retries(&endpoint, slot.take_permit(), &self.spec.model, || self.send(&endpoint, chunk, api_key.as_deref())).await;
            drop(slot);
            let (batch, attempts) = match result {
                Ok(v) => v,
                Err(Failure::Down(reason)) => {
                    self.transport.mark_down(&endpoint, reason.clone());
                    return Err(EmbedError::Unreachable(reason));
                }
                Err(Failure::Fatal(e)) => return Err(e.into()),
            };
            out.requests += attempts;
            if batch.vectors.len() != chunk.len() {
                return Err(EmbedError::Failed(format!(
                    "`{}` answered {} embeddings for {} texts (model `{}`)",
                    self.base,
                    batch.vectors.len(),
                    chunk.len(),
                    self.spec.model
                )));
            }
            for (i, v) in batch.vectors.iter().enumerate() {
                let at = offset + i + 1;
                match &want {
                    None => want = Some((v.len(), format!("text {at} has"))),
                    Some((d, whose)) if *d != v.len() => {
                        return Err(EmbedError::Failed(format!(
                            "embedding model `{}` at `{}` gave text {at} a vector of dimension {}, but {whose} dimension {d}",
                            self.spec.model,
                            self.base,
                            v.len()
                        )));
                    }
                    Some(_) => {}
                }
            }
            if let Some(t) = batch.tokens {
                endpoint.controller.record_tokens(t);
                out.tokens += t;
            }
            out.vectors.extend(batch.vectors);
            offset += chunk.len();
        }
        out.seconds = started.elapsed().as_secs_f64();
        Ok(out)
    }

    async fn send(&self, endpoint: &Endpoint, texts: &[String], api_key: Option<&str>) -> Result<Batch, AttemptError> {
        let timeout = self.spec.request_timeout;
        let url = match self.spec.protocol {
            EmbedProtocol::OpenAi => format!("{}/embeddings", self.base),
            EmbedProtocol::Ollama => format!("{}/api/embed", self.base),
        };
        let body = json!({ "model": self.spec.model, "input": texts });
        let mut req = self.transport.http()?.post(&url).json(&body);
        if let Some(key) = api_key {
            req = req.bearer_auth(key);
        }
        let mut resp = match self.transport.send(endpoint, req).await {
            // llama.cpp answers 500 for an input longer than its batch; retrying cannot help.
            Err(AttemptError::Status { message, .. }) if message.contains("too large to process") => {
                return Err(AttemptError::Model(format!(
                    "{message}; runner does not truncate texts: shorten them, or start the server with a larger context (`CTX`) if the model has the positions for it"
                )));
            }
            other => other?,
        };
        let bytes = wire::read_body(&mut resp, wire::MAX_ANSWER_BYTES, timeout).await?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| AttemptError::Protocol(format!("the embeddings answer is not JSON: {e}")))?;
        if let Some(err) = v.get("error") {
            return Err(AttemptError::Model(err.as_str().map(str::to_string).unwrap_or_else(|| err.to_string())));
        }
        match self.spec.protocol {
            EmbedProtocol::OpenAi => read_openai(&v, texts.len()),
            EmbedProtocol::Ollama => read_ollama(&v),
        }
    }

    /// What the server reports about the model it serves, and what `models-json` says, for
    /// provenance. Best effort: a server that cannot be asked gives `"unreachable"`.
    pub async fn identity(&self) -> Value {
        let mut id = json!({ "protocol": self.spec.protocol.as_str(), "model": self.spec.model });
        match self.models_entry() {
            Ok(Some(entry)) => {
                for (from, to) in [("file", "model_file"), ("sha256", "model_sha256"), ("model", "model_source"), ("quantization", "quantization")] {
                    if let Some(v) = entry.get(from).and_then(Value::as_str) {
                        id[to] = json!(if from == "file" { v.rsplit('/').next().unwrap_or(v) } else { v });
                    }
                }
                for key in ["dimension", "pooling", "source_package", "source_version", "xllamacpp_version"] {
                    if let Some(v) = entry.get(key) {
                        id[key] = v.clone();
                    }
                }
            }
            Ok(None) => {}
            Err(e) => id["models_json_error"] = json!(e.to_string()),
        }
        let api_key = match self.api_key() {
            Ok(k) => k,
            Err(e) => {
                id["unreachable"] = json!(e.to_string());
                return id;
            }
        };
        let endpoint: Arc<Endpoint> = self.transport.endpoint(&self.base, api_key.as_deref());
        match self.check(&endpoint, api_key.as_deref()).await {
            Ok(info) => {
                let served = json!({
                    "server": info.server,
                    "model_file": info.model_file,
                    "quantization": info.quantization,
                    "digest": info.digest,
                });
                let served: serde_json::Map<String, Value> =
                    served.as_object().map(|o| o.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default();
                id["served"] = Value::Object(served);
            }
            Err(e) => id["unreachable"] = json!(e.to_string()),
        }
        id
    }
}

/// A JSON array of numbers as a vector; `None` when it is anything else.
fn as_vector(v: &Value) -> Option<Vec<f32>> {
    let items = v.as_array()?;
    if items.is_empty() {
        return None;
    }
    items.iter().map(|x| x.as_f64().filter(|f| f.is_finite()).map(|f| f as f32)).collect()
}

/// OpenAI's `{"data":[{"index","embedding"}],"usage":{"prompt_tokens"}}`, placed by `index`
/// when every item has one.
fn read_openai(v: &Value, asked: usize) -> Result<Batch, AttemptError> {
    let data = v.get("data").and_then(Value::as_array).ok_or_else(|| {
        // llama.cpp answers `/embeddings` (without `/v1`) in its own shape: a bare array.
        let hint = if v.is_array() {
            ": it is a bare array, as llama.cpp's own `/embeddings` answers; the OpenAI-compatible endpoint is under `/v1` (`base-url = \"http://host:port/v1\"`)"
        } else {
            " (is `base-url` the OpenAI-compatible root, ending in `/v1`?)"
        };
        AttemptError::Protocol(format!("the answer has no `data` array of embeddings{hint}"))
    })?;
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; data.len()];
    let indexed = data.iter().all(|d| d.get("index").and_then(Value::as_u64).is_some());
    for (i, item) in data.iter().enumerate() {
        let vector = item.get("embedding").and_then(as_vector).ok_or_else(|| {
            AttemptError::Protocol(format!(
                "`data[{i}].embedding` is not a vector of numbers (a server without pooling answers one vector per token; start it with pooling, e.g. `--pooling mean`)"
            ))
        })?;
        let at = if indexed { item.get("index").and_then(Value::as_u64).unwrap_or(0) as usize } else { i };
        if at >= data.len().max(asked) || vectors.get(at).is_some_and(Option::is_some) {
            return Err(AttemptError::Protocol(format!("`data[{i}].index` = {at} is out of range or repeated for {asked} inputs")));
        }
        if let Some(slot) = vectors.get_mut(at) {
            *slot = Some(vector);
        }
    }
    let vectors = vectors.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| AttemptError::Protocol("the answer's `index` values leave gaps".into()))?;
    Ok(Batch { vectors, tokens: v.pointer("/usage/prompt_tokens").and_then(Value::as_u64) })
}

/// Ollama's `{"embeddings":[[…]],"prompt_eval_count"}`.
fn read_ollama(v: &Value) -> Result<Batch, AttemptError> {
    let list = v.get("embeddings").and_then(Value::as_array).ok_or_else(|| AttemptError::Protocol("the answer has no `embeddings` array".into()))?;
    let vectors = list
        .iter()
        .enumerate()
        .map(|(i, e)| as_vector(e).ok_or_else(|| AttemptError::Protocol(format!("`embeddings[{i}]` is not a vector of numbers"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Batch { vectors, tokens: v.get("prompt_eval_count").and_then(Value::as_u64) })
}

const PROVIDERS: [&str; 2] = ["openai", "ollama"];

/// Reads an embedder table (kebab-case keys: `provider`, `base-url`, `model`, `api-key-env`,
/// `batch-size`, `retries`, `retry-base-delay`, `retry-max-delay`, `request-timeout`,
/// `connect-timeout`, `models-json`). Every problem goes to `t.problems()` with its location;
/// the caller ends with `t.finish()`, which reports unknown keys with a did-you-mean, as for
/// every other table. Paths are relative to `base_dir` (the manifest's directory).
pub fn read_embedder_spec(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<EmbedderSpec> {
    let problems = t.problems();
    let mut ok = true;
    let protocol = match t.string("provider") {
        Some(p) => match p.get_ref().as_str() {
            "openai" => Some(EmbedProtocol::OpenAi),
            "ollama" => Some(EmbedProtocol::Ollama),
            other => {
                let help = match crate::config::did_you_mean(other, PROVIDERS) {
                    Some(best) => format!("did you mean `{best}`? (providers: {})", PROVIDERS.join(", ")),
                    None => format!("providers: {} (an OpenAI-compatible `/v1/embeddings`, or Ollama's `/api/embed`)", PROVIDERS.join(", ")),
                };
                problems.push_with_help(p.span(), format!("unknown embedding provider `{other}`"), help);
                None
            }
        },
        None => {
            if !t.has("provider") {
                problems.push_with_help(t.span(), format!("missing key `provider` in {}", t.name()), "provider = \"openai\" or \"ollama\"");
            }
            None
        }
    };
    let model = match t.string("model") {
        Some(m) if m.get_ref().trim().is_empty() => {
            problems.push(m.span(), "`model` must not be empty");
            None
        }
        Some(m) => Some(m.into_inner()),
        None => {
            if !t.has("model") {
                problems.push_with_help(
                    t.span(),
                    format!("missing key `model` in {}", t.name()),
                    "the name the server serves the embedding model under, e.g. `minilm-l6-v2`",
                );
            }
            None
        }
    };
    let mut spec = EmbedderSpec::new(protocol.unwrap_or(EmbedProtocol::OpenAi), "", model.as_deref().unwrap_or_default());
    spec.base_url = protocol.unwrap_or(EmbedProtocol::OpenAi).default_base_url().to_string();
    if let Some(url) = t.string("base-url") {
        ok &= check_url(t, &url);
        spec.base_url = url.into_inner();
    }
    if let Some(name) = t.string("api-key-env") {
        ok &= check_api_key_env(t, &name);
        spec.api_key_env = Some(name.into_inner());
    }
    if let Some(v) = t.integer("batch-size", 1, 4096) {
        spec.batch_size = *v.get_ref() as usize;
    }
    read_retries_and_timeouts(
        t,
        &mut spec.retries,
        [&mut spec.retry_base_delay, &mut spec.retry_max_delay, &mut spec.request_timeout, &mut spec.connect_timeout],
        &mut ok,
    );
    spec.models_json = read_models_json(t, base_dir);
    (ok && protocol.is_some() && model.is_some()).then_some(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Problems;
    use std::sync::Mutex;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    // ------------------------------------------------------------ a fake HTTP server

    /// (method, path, body)
    type Seen = (String, String, Value);
    /// Answers the n-th (0-based) request of a path with a status and a JSON body.
    type Handler = Arc<dyn Fn(&str, usize, &Value) -> (u16, Value) + Send + Sync>;

    struct Fake {
        url: String,
        seen: Arc<Mutex<Vec<Seen>>>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl Fake {
        fn posts(&self) -> Vec<Value> {
            self.seen.lock().expect("lock").iter().filter(|(m, _, _)| m == "POST").map(|(_, _, b)| b.clone()).collect()
        }
    }

    async fn fake(handler: Handler) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let counts: Arc<Mutex<std::collections::BTreeMap<String, usize>>> = Arc::default();
        let s = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let (seen, counts, handler) = (s.clone(), counts.clone(), handler.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, seen, counts, handler).await;
                });
            }
        });
        Fake { url, seen, task }
    }

    async fn serve(
        mut stream: TcpStream,
        seen: Arc<Mutex<Vec<Seen>>>,
        counts: Arc<Mutex<std::collections::BTreeMap<String, usize>>>,
        handler: Handler,
    ) -> std::io::Result<()> {
        loop {
            let mut buf = Vec::new();
            let mut tmp = [0u8; 4096];
            let header_end = loop {
                if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break pos + 4;
                }
                let n = stream.read(&mut tmp).await?;
                if n == 0 {
                    return Ok(());
                }
                buf.extend_from_slice(&tmp[..n]);
            };
            let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
            let mut parts = head.lines().next().unwrap_or_default().split_whitespace();
            let method = parts.next().unwrap_or_default().to_string();
            let path = parts.next().unwrap_or_default().to_string();
            let length: usize = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0);
            let mut body = buf[header_end..].to_vec();
            while body.len() < length {
                let n = stream.read(&mut tmp).await?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&tmp[..n]);
            }
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let n = {
                let mut c = counts.lock().expect("lock");
                let e = c.entry(path.clone()).or_insert(0);
                *e += 1;
                *e - 1
            };
            seen.lock().expect("lock").push((method, path.clone(), body.clone()));
            let (status, answer) = handler(&path, n, &body);
            let text = answer.to_string();
            let reply = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}", text.len());
            stream.write_all(reply.as_bytes()).await?;
        }
    }

    /// A deterministic 3-dimensional "embedding" of a text: its length, its first byte, 1.
    fn vec_of(text: &str) -> Value {
        json!([text.len() as f64, f64::from(text.bytes().next().unwrap_or(0)), 1.0])
    }

    fn inputs(body: &Value) -> Vec<String> {
        body["input"].as_array().expect("input array").iter().map(|s| s.as_str().expect("text").to_string()).collect()
    }

    /// An OpenAI-compatible server (llama.cpp-like: /v1/models, /props) serving model `m`;
    /// `embed` answers the n-th embeddings request.
    fn openai_server(embed: impl Fn(usize, &Value) -> (u16, Value) + Send + Sync + 'static) -> Handler {
        Arc::new(move |path, n, body| match path {
            "/v1/models" => (200, json!({ "object": "list", "data": [{ "id": "m", "meta": { "ftype": "all F32" } }] })),
            "/props" => (200, json!({ "model_path": "/x/.models/all-MiniLM-L6-v2.F32.gguf", "build_info": "b0-unknown" })),
            "/v1/embeddings" => embed(n, body),
            _ => (404, json!({ "error": { "message": "File Not Found" } })),
        })
    }

    /// Answers in reverse order with `index`, as the OpenAI format allows.
    fn openai_answer(body: &Value) -> (u16, Value) {
        let texts = inputs(body);
        let mut data: Vec<Value> = texts.iter().enumerate().map(|(i, t)| json!({ "object": "embedding", "index": i, "embedding": vec_of(t) })).collect();
        data.reverse();
        (200, json!({ "object": "list", "model": body["model"], "data": data, "usage": { "prompt_tokens": texts.len() * 3, "total_tokens": texts.len() * 3 } }))
    }

    fn spec(protocol: EmbedProtocol, url: &str, model: &str) -> EmbedderSpec {
        let mut s = EmbedderSpec::new(protocol, url, model);
        s.retry_base_delay = Duration::from_millis(1);
        s.retry_max_delay = Duration::from_millis(5);
        s.request_timeout = Duration::from_secs(30);
        s
    }

    fn texts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test]
    async fn openai_wire_sends_model_and_inputs_and_places_answers_by_index() {
        let f = fake(openai_server(|_, body| openai_answer(body))).await;
        let e = Embedder::new(spec(EmbedProtocol::OpenAi, &format!("{}/v1/", f.url), "m")).expect("embedder");
        let out = e.embed(&texts(&["a", "bb", "ccc"])).await.expect("embedded");
        assert_eq!(out.vectors, vec![vec![1.0, 97.0, 1.0], vec![2.0, 98.0, 1.0], vec![3.0, 99.0, 1.0]]);
        assert_eq!((out.tokens, out.requests, out.dimension()), (9, 1, Some(3)));
        let posts = f.posts();
        assert_eq!(posts, vec![json!({ "model": "m", "input": ["a", "bb", "ccc"] })]);
        let paths: Vec<String> = f.seen.lock().expect("lock").iter().map(|(_, p, _)| p.clone()).collect();
        assert_eq!(paths, ["/v1/models", "/props", "/v1/embeddings"], "one model check, then the request");
        let id = e.identity().await;
        assert_eq!(id["served"]["model_file"], "all-MiniLM-L6-v2.F32.gguf");
        assert_eq!(id["served"]["server"], "llama.cpp (build_info b0-unknown)");
    }

    #[tokio::test]
    async fn ollama_wire_uses_api_embed_and_prompt_eval_count() {
        let f = fake(Arc::new(|path, _, body| match path {
            "/api/tags" => (200, json!({ "models": [{ "name": "all-minilm:latest", "digest": "sha256:1b22" }] })),
            "/api/version" => (200, json!({ "version": "0.12.3" })),
            "/api/embed" => {
                let list: Vec<Value> = inputs(body).iter().map(|t| vec_of(t)).collect();
                (200, json!({ "model": body["model"], "embeddings": list, "prompt_eval_count": 7 }))
            }
            _ => (404, json!({ "error": "not found" })),
        }))
        .await;
        let e = Embedder::new(spec(EmbedProtocol::Ollama, &f.url, "all-minilm")).expect("embedder");
        let out = e.embed(&texts(&["x", "yy"])).await.expect("embedded");
        assert_eq!(out.vectors, vec![vec![1.0, 120.0, 1.0], vec![2.0, 121.0, 1.0]]);
        assert_eq!(out.tokens, 7);
        assert_eq!(f.posts(), vec![json!({ "model": "all-minilm", "input": ["x", "yy"] })]);
        let id = e.identity().await;
        assert_eq!(id["served"]["digest"], "sha256:1b22");
        assert_eq!(id["served"]["server"], "ollama 0.12.3");
    }

    #[tokio::test]
    async fn batches_keep_the_order_of_the_texts() {
        let f = fake(openai_server(|_, body| openai_answer(body))).await;
        let mut s = spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m");
        s.batch_size = 2;
        let e = Embedder::new(s).expect("embedder");
        let list = texts(&["a", "bb", "ccc", "dddd", "eeeee"]);
        let out = e.embed(&list).await.expect("embedded");
        let lengths: Vec<f32> = out.vectors.iter().map(|v| v[0]).collect();
        assert_eq!(lengths, [1.0, 2.0, 3.0, 4.0, 5.0]);
        let batches: Vec<Vec<String>> = f.posts().iter().map(inputs).collect();
        assert_eq!(batches, vec![texts(&["a", "bb"]), texts(&["ccc", "dddd"]), texts(&["eeeee"])]);
        assert_eq!((out.tokens, out.requests), (15, 3));
    }

    #[tokio::test]
    async fn unequal_dimensions_and_missing_vectors_are_errors() {
        // Across batches: the second batch's vectors are longer.
        let f = fake(openai_server(|n, body| {
            let texts = inputs(body);
            let width = if n == 0 { 3 } else { 4 };
            let data: Vec<Value> = texts.iter().enumerate().map(|(i, _)| json!({ "index": i, "embedding": vec![0.5; width] })).collect();
            (200, json!({ "data": data }))
        }))
        .await;
        let mut s = spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m");
        s.batch_size = 1;
        let err = Embedder::new(s).expect("embedder").embed(&texts(&["a", "b"])).await.expect_err("mismatch");
        assert!(matches!(&err, EmbedError::Failed(m) if m.contains("text 2") && m.contains("dimension 4") && m.contains("text 1 has dimension 3")), "{err}");

        // Within a batch, and one vector too few.
        let f = fake(openai_server(|n, _| match n {
            0 => (200, json!({ "data": [{ "embedding": [1.0, 2.0] }, { "embedding": [1.0] }] })),
            _ => (200, json!({ "data": [{ "embedding": [1.0, 2.0] }] })),
        }))
        .await;
        let e = Embedder::new(spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m")).expect("embedder");
        let err = e.embed(&texts(&["a", "b"])).await.expect_err("mismatch");
        assert!(err.to_string().contains("dimension 1"), "{err}");
        let err = e.embed(&texts(&["a", "b"])).await.expect_err("count");
        assert!(err.to_string().contains("answered 1 embeddings for 2 texts"), "{err}");

        // A server without pooling answers per-token vectors: named, not retried.
        let f = fake(openai_server(|_, _| (200, json!({ "data": [{ "index": 0, "embedding": [[1.0], [2.0]] }] })))).await;
        let err = Embedder::new(spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m")).expect("embedder").embed(&texts(&["a"])).await.expect_err("nested");
        assert!(err.to_string().contains("pooling"), "{err}");
        assert_eq!(f.posts().len(), 1);
    }

    #[tokio::test]
    async fn a_503_then_200_is_retried_and_counted() {
        let f = fake(openai_server(|n, body| if n == 0 { (503, json!({ "error": { "message": "Loading model" } })) } else { openai_answer(body) })).await;
        let e = Embedder::new(spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m")).expect("embedder");
        let out = e.embed(&texts(&["a"])).await.expect("second try succeeds");
        assert_eq!(out.vectors, vec![vec![1.0, 97.0, 1.0]]);
        assert_eq!(out.requests, 2);
        assert_eq!(f.posts().len(), 2);

        // Without retries the 503 is the answer, named with URL and model.
        let f = fake(openai_server(|_, _| (503, json!({ "error": { "message": "Loading model" } })))).await;
        let mut s = spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m");
        s.retries = 0;
        let err = Embedder::new(s).expect("embedder").embed(&texts(&["a"])).await.expect_err("503");
        assert!(err.to_string().contains("503") && err.to_string().contains("`m`"), "{err}");
    }

    #[tokio::test]
    async fn a_text_longer_than_the_context_is_not_retried() {
        // llama.cpp's exact answer (observed, see scripts/model-server/OBSERVED.md).
        let too_long = json!({ "error": { "code": 500, "message": "input (602 tokens) is too large to process. increase the physical batch size (current batch size: 512)", "type": "server_error" } });
        let f = fake(openai_server(move |_, _| (500, too_long.clone()))).await;
        let err =
            Embedder::new(spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m")).expect("embedder").embed(&texts(&["long"])).await.expect_err("too long");
        assert!(matches!(&err, EmbedError::Failed(m) if m.contains("602 tokens") && m.contains("does not truncate")), "{err}");
        assert_eq!(f.posts().len(), 1, "not retried");
    }

    #[tokio::test]
    async fn an_unknown_model_or_a_dead_server_fails_fast() {
        let f = fake(openai_server(|_, body| openai_answer(body))).await;
        let err =
            Embedder::new(spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "other")).expect("embedder").embed(&texts(&["a"])).await.expect_err("unknown");
        assert!(matches!(&err, EmbedError::Unreachable(m) if m.contains("`other` is not served") && m.contains("it serves: m")), "{err}");
        assert!(f.posts().is_empty(), "no embeddings request for a model the server does not serve");

        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let mut s = spec(EmbedProtocol::OpenAi, &format!("http://127.0.0.1:{port}/v1"), "m");
        s.retries = 1;
        let e = Embedder::new(s).expect("embedder");
        let err = e.embed(&texts(&["a"])).await.expect_err("down");
        assert!(matches!(&err, EmbedError::Unreachable(m) if m.contains(&format!("127.0.0.1:{port}"))), "{err}");
        assert!(e.identity().await["unreachable"].is_string());
    }

    #[tokio::test]
    async fn models_json_names_the_file_and_dimension() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("MODELS.json");
        let write = |file: &str, dim: u64| {
            std::fs::write(
                &path,
                json!({ "models": [{ "name": "m", "kind": "embedding", "file": format!(".models/{file}"), "sha256": "ab12", "dimension": dim, "pooling": "mean" }] })
                    .to_string(),
            )
            .expect("write")
        };
        let f = fake(openai_server(|_, body| openai_answer(body))).await;
        let embedder = |p: &Path| {
            let mut s = spec(EmbedProtocol::OpenAi, &format!("{}/v1", f.url), "m");
            s.models_json = Some(p.to_path_buf());
            Embedder::new(s).expect("embedder")
        };
        write("all-MiniLM-L6-v2.F32.gguf", 3);
        let e = embedder(&path);
        assert_eq!(e.embed(&texts(&["a"])).await.expect("ok").dimension(), Some(3));
        let id = e.identity().await;
        assert_eq!(
            (id["model_sha256"].as_str(), id["model_file"].as_str(), id["dimension"].as_u64()),
            (Some("ab12"), Some("all-MiniLM-L6-v2.F32.gguf"), Some(3))
        );

        write("all-MiniLM-L6-v2.F32.gguf", 384);
        let err = embedder(&path).embed(&texts(&["a"])).await.expect_err("dimension");
        assert!(err.to_string().contains("`models-json` lists dimension 384"), "{err}");
        write("other.gguf", 3);
        let err = embedder(&path).embed(&texts(&["a"])).await.expect_err("file");
        assert!(err.to_string().contains("lists `other.gguf`"), "{err}");
    }

    #[test]
    fn fingerprint_holds_protocol_and_model_only() {
        let mut s = EmbedderSpec::new(EmbedProtocol::OpenAi, "http://127.0.0.1:8094/v1", "minilm-l6-v2");
        let base = Embedder::new(s.clone()).expect("embedder").fingerprint();
        assert_eq!(base, json!({ "protocol": "openai", "model": "minilm-l6-v2" }));
        s.base_url = "https://elsewhere/v1".into();
        s.api_key_env = Some("KEY".into());
        s.batch_size = 3;
        s.retries = 9;
        assert_eq!(Embedder::new(s.clone()).expect("embedder").fingerprint(), base);
        s.model = "other".into();
        assert_ne!(Embedder::new(s).expect("embedder").fingerprint(), base);
        let bad = Embedder::new(EmbedderSpec::new(EmbedProtocol::Ollama, "localhost:11434", "m"));
        assert!(matches!(bad, Err(EmbedError::Config(m)) if m.contains("not an http(s) URL")));
    }

    /// Reads `body` as an embedder table; the spec and the rendered problems.
    fn read(body: &str) -> (Option<EmbedderSpec>, Vec<String>) {
        let (doc, errors) = toml::de::DeTable::parse_recoverable(body);
        assert!(errors.is_empty(), "{errors:?}");
        let problems = Problems::default();
        let t = TableReader::new(&problems, doc.get_ref(), 0..body.len(), "[embedder]");
        let spec = read_embedder_spec(&t, Path::new("experiments"));
        t.finish();
        let list = problems.into_sorted().into_iter().map(|d| format!("{}{}", d.message, d.help.map(|h| format!(" ({h})")).unwrap_or_default())).collect();
        (spec, list)
    }

    #[test]
    fn a_full_table_reads() {
        let (spec, problems) = read(
            "provider = \"openai\"\nbase-url = \"${EMBED_URL:-http://127.0.0.1:8094/v1}\"\nmodel = \"minilm-l6-v2\"\napi-key-env = \"EMBED_KEY\"\nbatch-size = 8\nretries = 1\nrequest-timeout = \"30s\"\nmodels-json = \"../.models/MODELS.json\"\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        let spec = spec.expect("valid");
        assert_eq!(spec.protocol, EmbedProtocol::OpenAi);
        assert_eq!(spec.base_url, "${EMBED_URL:-http://127.0.0.1:8094/v1}");
        assert_eq!((spec.batch_size, spec.retries, spec.request_timeout), (8, 1, Duration::from_secs(30)));
        assert_eq!(spec.api_key_env.as_deref(), Some("EMBED_KEY"));
        assert_eq!(spec.models_json, Some(PathBuf::from(".models/MODELS.json")));
        let (spec, _) = read("provider = \"ollama\"\nmodel = \"all-minilm\"\n");
        let spec = spec.expect("valid");
        assert_eq!((spec.base_url.as_str(), spec.batch_size), ("http://localhost:11434", 32));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_reported() {
        let (spec, problems) = read("provider = \"opnai\"\nmodel = \"m\"\nbatch-sise = 3\nbase-url = \"localhost:1\"\nretries = 99\nrequest-timeout = \"soon\"\napi-key-env = \"sk-1\"\n");
        assert!(spec.is_none());
        let text = problems.join("\n");
        for needle in [
            "unknown embedding provider `opnai` (did you mean `openai`?",
            "unknown key `batch-sise` in [embedder] (did you mean `batch-size`?)",
            "`localhost:1` is not an http(s) URL",
            "`retries`",
            "`request-timeout` must be a duration",
            "`api-key-env` must name an environment variable",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
        }
        let (spec, problems) = read("base-url = \"http://h/v1\"\n");
        assert!(spec.is_none());
        assert!(problems.iter().any(|p| p.contains("missing key `provider`")) && problems.iter().any(|p| p.contains("missing key `model`")), "{problems:?}");
    }

    #[test]
    fn server_answers_are_read_strictly() {
        assert!(read_openai(&json!({ "data": [{ "index": 1, "embedding": [1.0] }, { "index": 1, "embedding": [2.0] }] }), 2).is_err(), "a repeated index");
        let bare = read_openai(&json!([{ "index": 0, "embedding": [[1.0]] }]), 1).err().map(|e| format!("{e:?}")).unwrap_or_default();
        assert!(bare.contains("under `/v1`"), "llama.cpp's own shape names the fix: {bare}");
        assert!(read_openai(&json!({ "data": [{ "index": 0, "embedding": [] }] }), 1).is_err(), "an empty vector");
        assert!(read_openai(&json!({ "data": [{ "index": 0, "embedding": ["x"] }] }), 1).is_err(), "not numbers");
        assert!(read_openai(&json!({ "object": "list" }), 1).is_err(), "no data");
        assert!(read_ollama(&json!({ "embeddings": [[1.0], null] })).is_err());
        let b = read_openai(&json!({ "data": [{ "embedding": [1.0] }, { "embedding": [2.0] }] }), 2).expect("unindexed keeps order");
        assert_eq!((b.vectors, b.tokens), (vec![vec![1.0], vec![2.0]], None));
    }
}
