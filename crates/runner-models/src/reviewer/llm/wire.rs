//! The two wire protocols: request bodies and answers for Ollama's `/api/chat` (streamed
//! NDJSON) and OpenAI-compatible `{base}/chat/completions`.

use serde::Serialize;
use serde_json::{json, Value};
use std::time::Duration;

/// One chat message.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

/// Sampling settings of one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub temperature: f64,
    pub seed: Option<u64>,
    pub max_tokens: u32,
    pub num_ctx: Option<u32>,
}

/// A model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    pub text: String,
    /// `stop`, `length`, … as the server said.
    pub finish_reason: Option<String>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub prompt_ms: Option<f64>,
    pub eval_ms: Option<f64>,
    pub total_ms: Option<f64>,
    pub load_ms: Option<f64>,
    /// The model name the server reports in its answer.
    pub model: Option<String>,
}

impl Completion {
    pub fn truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

/// Why one attempt at a request failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttemptError {
    /// No connection, or it broke before the answer was complete: retried.
    Connect(String),
    /// The connection broke while the answer's body was being read (a transport error,
    /// not a malformed answer): retried, and not a sign that the server is down.
    Dropped(String),
    /// The server answered with an error status; 429 and 5xx are retried.
    Status { status: u16, retry_after: Option<Duration>, message: String },
    /// The request took longer than `request-timeout`: not retried.
    Timeout(Duration),
    /// The answer could not be read: not retried.
    Protocol(String),
    /// The server reported an error inside a successful answer (Ollama's `{"error"}` line).
    Model(String),
    /// The answer was longer than runner reads ([`MAX_ANSWER_BYTES`]): not retried, since the
    /// same request would get the same answer. The text says by how much.
    TooLarge(String),
}

/// The most bytes of a model server's answer runner reads; a longer one fails the attempt.
pub(crate) const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// The most bytes of an error answer runner reads for its message; the rest is not read.
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// `n` bytes as whole MiB when they are, else as bytes.
fn size_text(n: usize) -> String {
    if n % (1024 * 1024) == 0 {
        format!("{} MiB", n / (1024 * 1024))
    } else {
        format!("{n} bytes")
    }
}

/// The error of an answer past `limit`: `detail` says how the excess showed.
fn too_large(limit: usize, detail: &str) -> AttemptError {
    AttemptError::TooLarge(format!("the server's answer exceeded {}: {detail}", size_text(limit)))
}

/// Fails an answer whose `Content-Length` already says it is longer than `limit`.
fn check_length(resp: &reqwest::Response, limit: usize) -> Result<(), AttemptError> {
    match resp.content_length() {
        Some(length) if length > limit as u64 => Err(too_large(limit, &format!("its Content-Length is {length} bytes; nothing of it was read"))),
        _ => Ok(()),
    }
}

/// Reads an answer's body as it arrives, at most `limit` bytes: an answer whose
/// `Content-Length` says it is longer fails before any of it is read, and one whose bytes go
/// past `limit` fails as they do (what was read is dropped, the connection closed).
pub(crate) async fn read_body(resp: &mut reqwest::Response, limit: usize, timeout: Duration) -> Result<Vec<u8>, AttemptError> {
    check_length(resp, limit)?;
    let mut body = Vec::with_capacity(resp.content_length().map_or(0, |n| n as usize));
    while let Some(chunk) = resp.chunk().await.map_err(|e| AttemptError::from_reqwest(&e, timeout))? {
        if body.len() + chunk.len() > limit {
            return Err(too_large(limit, &format!("more than {} bytes arrived before runner stopped reading", body.len() + chunk.len())));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Reads at most `limit` bytes of an error answer's body (for its message); the rest is left
/// unread. A body that breaks off gives what arrived.
async fn read_error_body(resp: &mut reqwest::Response, limit: usize) -> String {
    let mut body: Vec<u8> = Vec::new();
    while body.len() < limit {
        match resp.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk[..chunk.len().min(limit - body.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

impl AttemptError {
    pub(crate) fn retryable(&self) -> bool {
        match self {
            Self::Connect(_) | Self::Dropped(_) => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }

    /// Classifies a reqwest error.
    pub(crate) fn from_reqwest(e: &reqwest::Error, timeout: Duration) -> Self {
        if e.is_connect() {
            Self::Connect(describe(e))
        } else if e.is_timeout() {
            Self::Timeout(timeout)
        } else if e.is_body() || e.is_decode() {
            // runner decodes answers itself (serde_json on the bytes), so reqwest's body and
            // decode errors are both a body that could not be read to its end: a connection
            // closed or reset mid-answer.
            Self::Dropped(describe(e))
        } else {
            // Resets, closed connections, broken bodies.
            Self::Connect(describe(e))
        }
    }
}

/// A reqwest error with its causes (e.g. `error sending request …: … Connection refused`).
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// The message of an error body: `{"error":"…"}`, `{"error":{"message":"…"}}`, or the text.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        match v.get("error") {
            Some(Value::String(s)) => return s.clone(),
            Some(Value::Object(o)) => {
                if let Some(m) = o.get("message").and_then(Value::as_str) {
                    return m.to_string();
                }
            }
            _ => {}
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return m.to_string();
        }
    }
    let body = body.trim();
    if body.is_empty() {
        "(empty body)".into()
    } else {
        crate::reviewer::tail(body, 300)
    }
}

/// How long the server asks to wait: `retry-after-ms` (milliseconds, as OpenAI sends beside
/// `Retry-After`) when present, else `Retry-After` as seconds or an HTTP date.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name| headers.get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|t| t.parse::<f64>().ok()).filter(|ms| ms.is_finite() && *ms >= 0.0) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    parse_retry_after(text(reqwest::header::RETRY_AFTER.as_str())?, std::time::SystemTime::now())
}

pub(crate) fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Fails an attempt on a non-success status, reading the error body.
/// The body is read only up to [`MAX_ERROR_BODY_BYTES`].
pub(crate) async fn check_status(mut resp: reqwest::Response) -> Result<reqwest::Response, AttemptError> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let retry_after = retry_after(resp.headers());
    let body = read_error_body(&mut resp, MAX_ERROR_BODY_BYTES).await;
    Err(AttemptError::Status { status: status.as_u16(), retry_after, message: error_message(&body) })
}

fn ns_to_ms(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).map(|ns| ns / 1e6)
}

/// Ollama `/api/chat` request body. `format` is the JSON schema (absent on continuations,
/// where the model must go on from a partial answer).
pub(crate) fn ollama_body(model: &str, messages: &[Message], format: Option<&Value>, s: &Sampling) -> Value {
    let mut options = json!({ "temperature": s.temperature, "num_predict": s.max_tokens });
    if let Some(seed) = s.seed {
        options["seed"] = json!(seed);
    }
    if let Some(n) = s.num_ctx {
        options["num_ctx"] = json!(n);
    }
    let mut body = json!({ "model": model, "messages": messages, "stream": true, "options": options });
    if let Some(f) = format {
        body["format"] = f.clone();
    }
    body
}

/// Reads Ollama's streamed answer: one JSON object per line with `message.content` pieces,
/// the last with `done: true`, `done_reason` and the counts and durations (nanoseconds).
/// At most [`MAX_ANSWER_BYTES`] of the stream are read.
pub(crate) async fn ollama_read(mut resp: reqwest::Response, timeout: Duration) -> Result<Completion, AttemptError> {
    let limit = MAX_ANSWER_BYTES;
    check_length(&resp, limit)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Completion::default();
    let mut done = false;
    let mut read = 0usize;
    while let Some(chunk) = resp.chunk().await.map_err(|e| AttemptError::from_reqwest(&e, timeout))? {
        read += chunk.len();
        if read > limit {
            return Err(too_large(limit, &format!("more than {read} bytes of its stream arrived before runner stopped reading")));
        }
        // Only the new bytes are searched for a line's end: what was kept has none.
        let mut from = buf.len();
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf[from..].iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=from + pos).collect();
            done |= ollama_line(&line, &mut out)?;
            from = 0;
        }
    }
    if !buf.is_empty() {
        done |= ollama_line(&buf, &mut out)?;
    }
    if !done {
        return Err(AttemptError::Connect("the stream ended before its final `done` line".into()));
    }
    Ok(out)
}

/// Applies one NDJSON line; true when it was the final one.
pub(crate) fn ollama_line(line: &[u8], out: &mut Completion) -> Result<bool, AttemptError> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return Ok(false);
    }
    let v: Value =
        serde_json::from_str(text).map_err(|e| AttemptError::Protocol(format!("stream line is not JSON ({e}): {}", crate::reviewer::tail(text, 200))))?;
    if let Some(err) = v.get("error") {
        return Err(AttemptError::Model(err.as_str().map(str::to_string).unwrap_or_else(|| err.to_string())));
    }
    if let Some(piece) = v.pointer("/message/content").and_then(Value::as_str) {
        out.text.push_str(piece);
    }
    if out.model.is_none() {
        out.model = v.get("model").and_then(Value::as_str).map(str::to_string);
    }
    if v.get("done").and_then(Value::as_bool) != Some(true) {
        return Ok(false);
    }
    out.finish_reason = v.get("done_reason").and_then(Value::as_str).map(str::to_string).or_else(|| Some("stop".into()));
    // Fields that are zero may be absent.
    out.prompt_tokens = Some(v.get("prompt_eval_count").and_then(Value::as_u64).unwrap_or(0));
    out.completion_tokens = Some(v.get("eval_count").and_then(Value::as_u64).unwrap_or(0));
    out.prompt_ms = ns_to_ms(v.get("prompt_eval_duration")).or(Some(0.0));
    out.eval_ms = ns_to_ms(v.get("eval_duration")).or(Some(0.0));
    out.total_ms = ns_to_ms(v.get("total_duration"));
    out.load_ms = ns_to_ms(v.get("load_duration")).or(Some(0.0));
    Ok(true)
}

/// OpenAI-compatible `chat/completions` request body, not streamed.
pub(crate) fn openai_body(model: &str, messages: &[Message], schema: Option<&Value>, s: &Sampling) -> Value {
    let mut body = json!({
        "model": model,
        "messages": messages,
        "temperature": s.temperature,
        "max_tokens": s.max_tokens,
        "stream": false,
    });
    if let Some(seed) = s.seed {
        body["seed"] = json!(seed);
    }
    if let Some(schema) = schema {
        // The schema's `title` names it (a judge's verdict); a review's answer is `findings`.
        let name = schema.get("title").and_then(Value::as_str).unwrap_or("findings");
        body["response_format"] = json!({ "type": "json_schema", "json_schema": { "name": name, "strict": true, "schema": schema } });
    }
    body
}

/// Reads an OpenAI-compatible answer: `choices[0].message.content`, `finish_reason`, `usage`,
/// and llama.cpp's `timings` where present.
pub(crate) fn openai_parse(v: &Value) -> Result<Completion, AttemptError> {
    if let Some(err) = v.get("error") {
        return Err(AttemptError::Model(err.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| err.to_string())));
    }
    let choice = v.pointer("/choices/0").ok_or_else(|| AttemptError::Protocol("the answer has no `choices[0]`".into()))?;
    let text = choice.pointer("/message/content").and_then(Value::as_str).unwrap_or_default().to_string();
    Ok(Completion {
        text,
        finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_string),
        prompt_tokens: v.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
        completion_tokens: v.pointer("/usage/completion_tokens").and_then(Value::as_u64),
        prompt_ms: v.pointer("/timings/prompt_ms").and_then(Value::as_f64),
        eval_ms: v.pointer("/timings/predicted_ms").and_then(Value::as_f64),
        total_ms: None,
        load_ms: None,
        model: v.get("model").and_then(Value::as_str).map(str::to_string),
    })
}

/// Reads an OpenAI-compatible answer of at most [`MAX_ANSWER_BYTES`].
pub(crate) async fn openai_read(mut resp: reqwest::Response, timeout: Duration) -> Result<Completion, AttemptError> {
    let bytes = read_body(&mut resp, MAX_ANSWER_BYTES, timeout).await?;
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| AttemptError::Protocol(format!("the answer is not JSON ({e}): {}", crate::reviewer::tail(&String::from_utf8_lossy(&bytes), 200))))?;
    openai_parse(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_stream_lines_accumulate_to_a_completion() {
        let mut c = Completion::default();
        assert!(!ollama_line(br#"{"model":"m","created_at":"t","message":{"role":"assistant","content":"{\"find"},"done":false}"#, &mut c).expect("line"));
        assert!(!ollama_line(b"\n", &mut c).expect("blank"));
        assert!(!ollama_line(br#"{"model":"m","message":{"role":"assistant","content":"ings\":[]}"},"done":false}"#, &mut c).expect("line"));
        let last = br#"{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":5000000000,"load_duration":1000000,"prompt_eval_count":120,"prompt_eval_duration":300000000,"eval_count":7,"eval_duration":70000000}"#;
        assert!(ollama_line(last, &mut c).expect("final"));
        assert_eq!(c.text, "{\"findings\":[]}");
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        assert_eq!((c.prompt_tokens, c.completion_tokens), (Some(120), Some(7)));
        assert_eq!((c.prompt_ms, c.eval_ms, c.total_ms, c.load_ms), (Some(300.0), Some(70.0), Some(5000.0), Some(1.0)));
        let mut e = Completion::default();
        assert_eq!(ollama_line(br#"{"error":"model 'x' not found"}"#, &mut e), Err(AttemptError::Model("model 'x' not found".into())));
    }

    #[test]
    fn openai_answers_parse_with_llama_cpp_timings() {
        let v: Value = serde_json::from_str(r#"{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","content":"{\n  \"findings"}}],"model":"smollm2-135m","usage":{"completion_tokens":8,"prompt_tokens":170,"total_tokens":178},"timings":{"prompt_ms":546.2,"predicted_ms":311.0}}"#).expect("json");
        let c = openai_parse(&v).expect("parses");
        assert!(c.truncated());
        assert_eq!((c.prompt_tokens, c.completion_tokens), (Some(170), Some(8)));
        assert_eq!((c.prompt_ms, c.eval_ms), (Some(546.2), Some(311.0)));
        assert_eq!(c.model.as_deref(), Some("smollm2-135m"));
    }

    #[test]
    fn bodies_follow_the_documented_shapes() {
        let msgs = vec![Message { role: "system", content: "s".into() }, Message { role: "user", content: "u".into() }];
        let s = Sampling { temperature: 0.7, seed: Some(3), max_tokens: 64, num_ctx: Some(4096) };
        let schema = json!({"type":"object"});
        let o = ollama_body("m", &msgs, Some(&schema), &s);
        assert_eq!(o["stream"], true);
        assert_eq!(o["format"], schema);
        assert_eq!(o["options"], json!({"temperature":0.7,"seed":3,"num_ctx":4096,"num_predict":64}));
        let a = openai_body("m", &msgs, Some(&schema), &s);
        assert_eq!(a["max_tokens"], 64);
        assert_eq!(a["seed"], 3);
        assert_eq!(a["response_format"]["type"], "json_schema");
        assert_eq!(a["response_format"]["json_schema"]["schema"], schema);
        assert!(a.get("num_ctx").is_none());
    }

    #[test]
    fn error_bodies_and_retry_after() {
        assert_eq!(error_message(r#"{"error":"model \"x\" not found, try pulling it first"}"#), "model \"x\" not found, try pulling it first");
        assert_eq!(error_message(r#"{"error":{"code":400,"message":"too long","type":"invalid_request_error"}}"#), "too long");
        assert_eq!(error_message("Bad Gateway"), "Bad Gateway");
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("1.5", now), Some(Duration::from_millis(1500)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO), "a date in the past: retry at once");
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "3".parse().expect("value"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", "250".parse().expect("value"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)), "the precise form wins");
        assert_eq!(retry_after(&reqwest::header::HeaderMap::new()), None);
        assert!(AttemptError::Status { status: 503, retry_after: None, message: String::new() }.retryable());
        assert!(AttemptError::Status { status: 429, retry_after: None, message: String::new() }.retryable());
        assert!(!AttemptError::Status { status: 400, retry_after: None, message: String::new() }.retryable());
        assert!(!AttemptError::Timeout(Duration::from_secs(1)).retryable());
    }
}
