//! The `ollama` reviewer against a fake Ollama server that follows the documented wire format
//! (CONTRACTS.md): `GET /api/tags`, `GET /api/version`, `POST /api/chat` streamed as NDJSON in
//! chunked HTTP with a final `done: true` line carrying the durations, `{"error": …}` bodies,
//! 404 for an unknown model, 500 then success, 429 with `Retry-After`. No real program here
//! speaks Ollama's native protocol, so this fake is its test double; the OpenAI-compatible
//! protocol is tested against a real llama.cpp server in `llm_real_server.rs`.

use crate::fake_http::{read_request, write_json, Request};
use runner::finding::Severity;
use runner::matrix::AxisValue;
use runner::matrix::Cell;
use runner::reviewer::llm::{LlmReviewer, LlmSpec, OnTruncation, Protocol, UnitKind};
use runner::reviewer::{ReviewError, ReviewJob, Reviewer};
use runner::subject::diff::parse_unified_diff;
use runner::subject::Subject;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------- the fake server

/// One request the fake received.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// What the fake answers to one `/api/chat` request.
#[derive(Clone)]
enum Reply {
    /// 200, `application/x-ndjson`, chunked, one chunk per line.
    Stream(Vec<Value>),
    /// A status with a JSON body and extra headers.
    Status(u16, Value, Vec<(String, String)>),
}

type ChatHandler = Arc<dyn Fn(usize, &Value) -> Reply + Send + Sync>;

struct Fake {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    fn chats(&self) -> Vec<Value> {
        self.seen.lock().expect("lock").iter().filter(|s| s.path == "/api/chat").map(|s| s.body.clone()).collect()
    }
}

const MODEL: &str = "qwen3:8b";
/// As the only "model": a server that answers every path with 404, like llama.cpp for `/api/*`.
const NOT_OLLAMA: &str = "!not-ollama";

/// Starts a fake Ollama serving `models`; `chat` answers the n-th (0-based) chat request.
async fn fake(models: &[&str], chat: ChatHandler) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let chats = Arc::new(AtomicUsize::new(0));
    let models: Vec<String> = models.iter().map(|m| m.to_string()).collect();
    let (s, f, m) = (seen.clone(), in_flight.clone(), max_in_flight.clone());
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let (seen, in_flight, max_in_flight, chats, models, chat) = (s.clone(), f.clone(), m.clone(), chats.clone(), models.clone(), chat.clone());
            tokio::spawn(async move {
                let _ = serve(stream, seen, in_flight, max_in_flight, chats, models, chat).await;
            });
        }
    });
    Fake { url, seen, in_flight, max_in_flight, task }
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    mut stream: TcpStream,
    seen: Arc<Mutex<Vec<Seen>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    chats: Arc<AtomicUsize>,
    models: Vec<String>,
    chat: ChatHandler,
) -> std::io::Result<()> {
    let speaks_ollama = models.first().map(String::as_str) != Some(NOT_OLLAMA);
    while let Some(Request { method, path, authorization, body }) = read_request(&mut stream).await? {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock().expect("lock").push(Seen { path: path.clone(), authorization, body: body.clone() });
        match (method.as_str(), path.as_str()) {
            _ if !speaks_ollama => {
                write_json(&mut stream, 404, &json!({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}), &[]).await?
            }
            ("GET", "/api/tags") => {
                let list: Vec<Value> = models
                    .iter()
                    .map(|m| json!({"name": m, "model": m, "modified_at": "2025-01-01T00:00:00Z", "size": 5_000_000_000u64, "digest": "a6990ed6be412c6a217614b0ec8e9cd6800a743d5dd7e1d7fbe5c8ee2e1af2c9", "details": {"format": "gguf", "family": "qwen3", "parameter_size": "8.2B", "quantization_level": "Q4_K_M"}}))
                    .collect();
                write_json(&mut stream, 200, &json!({ "models": list }), &[]).await?;
            }
            ("GET", "/api/version") => write_json(&mut stream, 200, &json!({"version": "0.6.2"}), &[]).await?,
            ("POST", "/api/chat") => {
                let n = chats.fetch_add(1, Ordering::SeqCst);
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                max_in_flight.fetch_max(now, Ordering::SeqCst);
                let model = body.get("model").and_then(Value::as_str).unwrap_or_default();
                let reply = if models.iter().any(|m| m == model) {
                    chat(n, &body)
                } else {
                    Reply::Status(404, json!({"error": format!("model '{model}' not found")}), vec![])
                };
                let result = match reply {
                    Reply::Status(status, body, headers) => write_json(&mut stream, status, &body, &headers).await,
                    Reply::Stream(lines) => {
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n";
                        let mut r = stream.write_all(head.as_bytes()).await;
                        for line in lines {
                            if r.is_err() {
                                break;
                            }
                            // A short pause makes each line its own network read.
                            tokio::time::sleep(Duration::from_millis(15)).await;
                            let data = format!("{line}\n");
                            r = stream.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes()).await;
                        }
                        if r.is_ok() {
                            r = stream.write_all(b"0\r\n\r\n").await;
                        }
                        r
                    }
                };
                in_flight.fetch_sub(1, Ordering::SeqCst);
                result?;
            }
            _ => write_json(&mut stream, 404, &json!({"error": "404 page not found"}), &[]).await?,
        }
    }
    Ok(())
}

/// Ollama's stream for an answer: the text in a few pieces, then the final line.
fn stream_of(text: &str, done_reason: &str) -> Reply {
    let mut lines = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(12) {
        lines.push(json!({"model": MODEL, "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": piece.iter().collect::<String>()}, "done": false}));
    }
    lines.push(json!({
        "model": MODEL, "created_at": "2025-01-01T00:00:01Z", "message": {"role": "assistant", "content": ""},
        "done": true, "done_reason": done_reason,
        "total_duration": 2_500_000_000u64, "load_duration": 20_000_000u64,
        "prompt_eval_count": 412, "prompt_eval_duration": 800_000_000u64,
        "eval_count": 57, "eval_duration": 1_600_000_000u64
    }));
    Reply::Stream(lines)
}

// ---------------------------------------------------------------- fixtures

const DIFF: &str = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n";

const ANSWER: &str = r#"{"findings":[{"line":10,"severity":"error","category":"bug","message":"avg divides by zero when xs is empty.","suggestion":"Return 0 for an empty list."},{"line":99,"severity":"info","category":"style","message":"Outside the hunk."}]}"#;

fn subject(repo: &Path) -> Arc<Subject> {
    Arc::new(Subject {
        id: "case-01".into(),
        repo_dir: repo.to_path_buf(),
        base_sha: "HEAD~1".into(),
        head_sha: "HEAD".into(),
        diff: DIFF.into(),
        files: parse_unified_diff(DIFF),
        stet_error: None,
        review_task: Some("Review the new averaging helper.".into()),
        spec: Some("avg(xs) returns the mean; avg([]) returns 0.".into()),
    })
}

fn spec(url: &str, f: impl FnOnce(&mut LlmSpec)) -> LlmSpec {
    let mut s = LlmSpec::new(Protocol::Ollama, url);
    s.temperature = Some(0.4);
    s.seed = Some(42);
    s.num_ctx = Some(8192);
    s.max_tokens = 512;
    s.rag_max_definitions = 0;
    s.retries = 3;
    s.retry_base_delay = Duration::from_millis(20);
    s.connect_timeout = Duration::from_secs(2);
    s.request_timeout = Duration::from_secs(20);
    f(&mut s);
    s
}

fn job(subject: Arc<Subject>, repeat: u32) -> ReviewJob {
    let cell = Cell { id: format!("model={MODEL}"), values: [("model".to_string(), AxisValue::Str(MODEL.into()))].into_iter().collect() };
    ReviewJob { cell, repeat, subject, timeout: Duration::from_secs(60), calls: None }
}

async fn review(spec: LlmSpec) -> Result<runner::reviewer::ReviewOutput, ReviewError> {
    let reviewer = LlmReviewer::new(spec).expect("reviewer");
    reviewer.review(&job(subject(Path::new("/nonexistent/repo")), 1)).await
}

fn always(reply: Reply) -> ChatHandler {
    Arc::new(move |_, _| reply.clone())
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn streamed_answer_becomes_stet_findings_with_cost_and_provenance() {
    let server = fake(&[MODEL], always(stream_of(&format!("```json\n{ANSWER}\n```"), "stop"))).await;
    let out = review(spec(&server.url, |_| {})).await.expect("review succeeds");

    assert_eq!(out.findings.len(), 1, "{:?}", out.findings);
    let f = &out.findings[0];
    assert_eq!((f.file.as_str(), f.line, f.severity), ("calc.py", 10, Severity::Error));
    assert_eq!(f.id, runner::finding::stet_finding_id("calc.py", 10, None, "avg divides by zero when xs is empty."));
    assert_eq!(out.counters["findings_dropped_outside_hunk"], 1, "line 99 is outside the hunk: dropped and counted");

    assert_eq!((out.cost.prompt_tokens, out.cost.completion_tokens), (Some(412), Some(57)));
    assert_eq!((out.cost.prompt_eval_ms, out.cost.eval_ms), (Some(800.0), Some(1600.0)));
    assert_eq!((out.cost.model_total_ms, out.cost.load_ms), (Some(2500.0), Some(20.0)));
    assert_eq!((out.cost.hunks, out.cost.requests, out.cost.units.len()), (1, 1, 1));
    assert_eq!(out.cost.units[0].unit, "calc.py:4-10");

    assert_eq!(out.provenance["server"], "ollama 0.6.2");
    assert_eq!(out.provenance["quantization"], "Q4_K_M");
    assert_eq!(out.provenance["model_digest"], "a6990ed6be412c6a217614b0ec8e9cd6800a743d5dd7e1d7fbe5c8ee2e1af2c9");
    assert_eq!((out.provenance["seed"].clone(), out.provenance["temperature"].clone()), (json!(42), json!(0.4)));

    let chats = server.chats();
    assert_eq!(chats.len(), 1);
    let body = &chats[0];
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["options"], json!({"temperature": 0.4, "seed": 42, "num_ctx": 8192, "num_predict": 512}));
    assert_eq!(body["format"]["type"], "object", "format is the JSON schema");
    assert_eq!(body["format"]["properties"]["findings"]["items"]["properties"]["line"]["enum"], json!([4, 5, 6, 7, 8, 9, 10]));
    let user = body["messages"][1]["content"].as_str().expect("user prompt");
    assert!(user.contains("avg([]) returns 0.") && user.contains("Review the new averaging helper."), "{user}");
    assert!(user.contains("   10 +     return sum(xs) / len(xs)"), "{user}");
    assert_eq!(body["messages"][0]["role"], "system");
}

#[tokio::test]
async fn unknown_model_fails_fast_naming_url_and_model() {
    let server = fake(&["llama3.2:1b"], always(stream_of(ANSWER, "stop"))).await;
    let err = review(spec(&server.url, |_| {})).await.expect_err("unknown model");
    let ReviewError::Unreachable { message, .. } = &err else { panic!("expected unreachable, got {err:?}") };
    assert!(message.contains(&server.url) && message.contains(MODEL) && message.contains("llama3.2:1b"), "{message}");
    assert!(server.chats().is_empty(), "no chat request for an unknown model");
}

#[tokio::test]
async fn chat_404_is_unreachable_and_not_retried() {
    // The model vanished between the tag list and the chat (e.g. `ollama rm`).
    let server = fake(&[MODEL], always(Reply::Status(404, json!({"error": "model 'qwen3:8b' not found"}), vec![]))).await;
    let err = review(spec(&server.url, |_| {})).await.expect_err("404");
    assert!(err.is_unreachable(), "{err:?}");
    assert!(err.to_string().contains("not found") && err.to_string().contains(&server.url), "{err}");
    assert_eq!(server.chats().len(), 1);
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let handler: ChatHandler =
        Arc::new(|n, _| if n == 0 { Reply::Status(500, json!({"error": "llama runner process has terminated"}), vec![]) } else { stream_of(ANSWER, "stop") });
    let server = fake(&[MODEL], handler).await;
    let out = review(spec(&server.url, |_| {})).await.expect("second attempt succeeds");
    assert_eq!(out.findings.len(), 1);
    assert_eq!(server.chats().len(), 2);
    assert_eq!(out.cost.requests, 2, "both attempts are counted");
}

#[tokio::test]
async fn persistent_server_errors_fail_after_the_retries() {
    let server = fake(&[MODEL], always(Reply::Status(503, json!({"error": "server busy"}), vec![]))).await;
    let err = review(spec(&server.url, |s| s.retries = 2)).await.expect_err("503 forever");
    assert!(!err.is_unreachable());
    assert!(err.to_string().contains("503") && err.to_string().contains("3 attempts") && err.to_string().contains("server busy"), "{err}");
    assert_eq!(server.chats().len(), 3);
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let handler: ChatHandler = Arc::new(|n, _| {
        if n == 0 {
            Reply::Status(429, json!({"error": "too many requests"}), vec![("Retry-After".into(), "1".into())])
        } else {
            stream_of(ANSWER, "stop")
        }
    });
    let server = fake(&[MODEL], handler).await;
    let started = Instant::now();
    let out = review(spec(&server.url, |_| {})).await.expect("succeeds after waiting");
    let waited = started.elapsed();
    // A lower bound only: a busy machine can make the wait longer, never shorter.
    assert!(waited >= Duration::from_millis(950), "Retry-After: 1 was honoured ({waited:?})");
    assert_eq!(out.findings.len(), 1);
    assert_eq!(server.chats().len(), 2);
}

#[tokio::test]
async fn retry_after_is_capped() {
    let handler: ChatHandler = Arc::new(|n, _| {
        if n == 0 {
            Reply::Status(429, json!({"error": "slow down"}), vec![("Retry-After".into(), "3600".into())])
        } else {
            stream_of(ANSWER, "stop")
        }
    });
    let server = fake(&[MODEL], handler).await;
    let started = Instant::now();
    review(spec(&server.url, |s| s.retry_max_delay = Duration::from_millis(200))).await.expect("succeeds");
    // Capped at 200 ms instead of an hour: the bound below is far from both, so load cannot
    // decide it.
    assert!(started.elapsed() < Duration::from_secs(600), "an hour's Retry-After is capped at retry-max-delay");
}

#[tokio::test]
async fn other_client_errors_are_not_retried() {
    let server = fake(&[MODEL], always(Reply::Status(400, json!({"error": "invalid options: num_ctx"}), vec![]))).await;
    let err = review(spec(&server.url, |_| {})).await.expect_err("400");
    assert!(!err.is_unreachable(), "a bad request fails this run only");
    assert!(err.to_string().contains("400") && err.to_string().contains("invalid options"), "{err}");
    assert_eq!(server.chats().len(), 1);
}

#[tokio::test]
async fn an_error_line_in_the_stream_fails_the_run() {
    let lines = vec![
        json!({"model": MODEL, "message": {"role": "assistant", "content": "{\"find"}, "done": false}),
        json!({"error": "an unexpected error occurred during generation"}),
    ];
    let server = fake(&[MODEL], always(Reply::Stream(lines))).await;
    let err = review(spec(&server.url, |_| {})).await.expect_err("error line");
    assert!(err.to_string().contains("an unexpected error occurred during generation"), "{err}");
}

#[tokio::test]
async fn a_stream_cut_before_done_is_retried() {
    let handler: ChatHandler = Arc::new(|n, _| {
        if n == 0 {
            Reply::Stream(vec![json!({"model": MODEL, "message": {"role": "assistant", "content": "{\"findings\":["}, "done": false})])
        } else {
            stream_of(ANSWER, "stop")
        }
    });
    let server = fake(&[MODEL], handler).await;
    let out = review(spec(&server.url, |_| {})).await.expect("the retry completes");
    assert_eq!(out.findings.len(), 1);
    assert_eq!(server.chats().len(), 2);
}

#[tokio::test]
async fn truncated_answers_fail_with_a_clear_reason() {
    let server =
        fake(&[MODEL], always(stream_of("{\"findings\":[{\"line\":10,\"severity\":\"error\",\"category\":\"bug\",\"message\":\"avg div", "length"))).await;
    let err = review(spec(&server.url, |_| {})).await.expect_err("truncated");
    let text = err.to_string();
    assert!(text.contains("max-tokens = 512") && text.contains("`length`") && text.contains("calc.py:4-10"), "{text}");
    assert!(!err.is_unreachable());
}

#[tokio::test]
async fn truncated_answers_are_continued_when_configured() {
    let partial = "{\"findings\":[{\"line\":10,\"severity\":\"error\",\"category\":\"bug\",\"message\":\"avg div";
    let rest = "ides by zero when xs is empty.\"}]}";
    let handler: ChatHandler = Arc::new(move |n, _| if n == 0 { stream_of(partial, "length") } else { stream_of(rest, "stop") });
    let server = fake(&[MODEL], handler).await;
    let out = review(spec(&server.url, |s| s.on_truncation = OnTruncation::Continue)).await.expect("continued");
    assert_eq!(out.findings.len(), 1);
    assert_eq!(out.findings[0].message, "avg divides by zero when xs is empty.");
    assert_eq!(out.counters["continuations"], 1);
    assert_eq!(out.cost.completion_tokens, Some(114), "both requests' tokens count");
    let chats = server.chats();
    assert_eq!(chats.len(), 2);
    let last = chats[1]["messages"].as_array().expect("messages").last().cloned().expect("last");
    assert_eq!(last, json!({"role": "assistant", "content": partial}));
    assert!(chats[1].get("format").is_none(), "a continuation is not restarted by the schema");
}

#[tokio::test]
async fn continuation_gives_up_after_the_limit() {
    let server = fake(&[MODEL], always(stream_of("{\"findings\":[", "length"))).await;
    let err = review(spec(&server.url, |s| {
        s.on_truncation = OnTruncation::Continue;
        s.max_continuations = 2;
    }))
    .await
    .expect_err("never finishes");
    assert!(err.to_string().contains("still cut after 2 continuations"), "{err}");
    assert_eq!(server.chats().len(), 3);
}

#[tokio::test]
async fn unparsable_answers_fail_the_run() {
    let server = fake(&[MODEL], always(stream_of("I think the code is fine.", "stop"))).await;
    let err = review(spec(&server.url, |_| {})).await.expect_err("prose");
    assert!(err.to_string().contains("failed to read model") && err.to_string().contains("I think the code is fine."), "{err}");
}

#[tokio::test]
async fn unreachable_server_fails_fast_naming_the_url() {
    let url = crate::dead_url();
    let err = review(spec(&url, |_| {})).await.expect_err("nothing listens");
    assert!(err.is_unreachable(), "{err:?}");
    assert!(err.to_string().contains(&url) && err.to_string().contains(MODEL) && err.to_string().contains("4 attempts"), "{err}");
}

#[tokio::test]
async fn several_base_urls_share_the_load_and_skip_a_dead_one() {
    let a = fake(&[MODEL], always(stream_of(ANSWER, "stop"))).await;
    let b = fake(&[MODEL], always(stream_of(ANSWER, "stop"))).await;
    let dead = crate::dead_url();
    let mut s = spec(&a.url, |_| {});
    s.base_urls = vec![dead.clone(), a.url.clone(), b.url.clone()];
    let reviewer = Arc::new(LlmReviewer::new(s).expect("reviewer"));
    let subject = subject(Path::new("/nonexistent"));
    let mut tasks = Vec::new();
    for repeat in 1..=8 {
        let (r, subj) = (reviewer.clone(), subject.clone());
        tasks.push(tokio::spawn(async move { r.review(&job(subj, repeat)).await }));
    }
    for t in tasks {
        t.await.expect("task").expect("every run succeeds despite the dead URL");
    }
    let (na, nb) = (a.chats().len(), b.chats().len());
    assert_eq!(na + nb, 8);
    assert!(na >= 2 && nb >= 2, "load is spread: {na} and {nb}");
    assert_eq!(a.max_in_flight.load(Ordering::SeqCst), 1, "one request at a time per endpoint");
    assert_eq!(b.max_in_flight.load(Ordering::SeqCst), 1);
    assert_eq!(a.in_flight.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn per_endpoint_concurrency_limit_is_respected() {
    let server = fake(&[MODEL], always(stream_of(ANSWER, "stop"))).await;
    let reviewer = Arc::new(LlmReviewer::new(spec(&server.url, |s| s.max_concurrency_per_endpoint = 3)).expect("reviewer"));
    let subject = subject(Path::new("/nonexistent"));
    let tasks: Vec<_> = (1..=9)
        .map(|repeat| {
            let (r, subj) = (reviewer.clone(), subject.clone());
            tokio::spawn(async move { r.review(&job(subj, repeat)).await })
        })
        .collect();
    for t in tasks {
        t.await.expect("task").expect("ok");
    }
    let max = server.max_in_flight.load(Ordering::SeqCst);
    assert!((2..=3).contains(&max), "at most 3 at once, and more than 1 ({max})");
}

#[tokio::test]
async fn rag_definitions_reach_the_prompt() {
    // A real two-commit repository: the definition lives in another file at HEAD.
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path();
    let git = |args: &[&str]| super::git(repo, args);
    git(&["init", "-q"]);
    std::fs::write(repo.join("stats.py"), "def mean(xs):\n    return sum(xs) / len(xs)\n").expect("write");
    std::fs::write(repo.join("calc.py"), "x = 1\n").expect("write");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    std::fs::write(repo.join("calc.py"), "x = 1\n\n\ndef avg(xs):\n    return mean(xs)\n").expect("write");
    git(&["commit", "-qam", "head"]);
    let diff = git(&["diff", "--no-color", "--no-ext-diff", "HEAD~1..HEAD"]) + "\n";
    let subject = Arc::new(Subject {
        id: "s".into(),
        repo_dir: PathBuf::from(repo),
        base_sha: git(&["rev-parse", "HEAD~1"]),
        head_sha: git(&["rev-parse", "HEAD"]),
        files: parse_unified_diff(&diff),
        stet_error: None,
        diff,
        review_task: None,
        spec: None,
    });
    let server = fake(&[MODEL], always(stream_of("{\"findings\":[]}", "stop"))).await;
    let reviewer = LlmReviewer::new(spec(&server.url, |s| s.rag_max_definitions = 5)).expect("reviewer");
    let out = reviewer.review(&job(subject, 1)).await.expect("ok");
    assert_eq!(out.counters["rag_definitions"], 1);
    let user = server.chats()[0]["messages"][1]["content"].as_str().expect("prompt").to_string();
    assert!(user.contains("`mean` (function) in `stats.py`, line 1:") && user.contains("return sum(xs) / len(xs)"), "{user}");

    // With the axis at 0, no definitions and a different cache key.
    let cell0 = Cell {
        id: "x".into(),
        values: [("model".to_string(), AxisValue::Str(MODEL.into())), ("rag_symbol_max_definitions".to_string(), AxisValue::Int(0))].into_iter().collect(),
    };
    let cell5 = Cell { id: "y".into(), values: [("model".to_string(), AxisValue::Str(MODEL.into()))].into_iter().collect() };
    assert_ne!(reviewer.fingerprint(&cell0), reviewer.fingerprint(&cell5));
}

#[tokio::test]
async fn the_api_key_is_sent_but_never_recorded() {
    std::env::set_var("RUNNER_FAKE_OLLAMA_KEY", "sk-test-secret-123");
    let server = fake(&[MODEL], always(stream_of(ANSWER, "stop"))).await;
    let reviewer = LlmReviewer::new(spec(&server.url, |s| s.api_key_env = Some("RUNNER_FAKE_OLLAMA_KEY".into()))).expect("reviewer");
    let cell = job(subject(Path::new("/x")), 1).cell;
    let out = reviewer.review(&job(subject(Path::new("/x")), 1)).await.expect("ok");
    let recorded = format!("{} {:?} {:?} {}", out.raw, out.provenance, out.cost, reviewer.fingerprint(&cell));
    assert!(!recorded.contains("sk-test-secret-123"));
    let seen = server.seen.lock().expect("lock").clone();
    assert!(seen.iter().all(|s| s.authorization.as_deref() == Some("Bearer sk-test-secret-123")), "the key is sent on every request");
}

#[tokio::test]
async fn ollama_reviewer_pointed_at_an_openai_server_says_so() {
    let server = fake(&[NOT_OLLAMA], always(stream_of(ANSWER, "stop"))).await;
    let err = review(spec(&server.url, |s| s.unit = UnitKind::Change)).await.expect_err("not ollama");
    assert!(err.is_unreachable());
    assert!(err.to_string().contains("does not speak Ollama's API") && err.to_string().contains("kind = \"openai\""), "{err}");
    let empty = fake(&[], always(stream_of(ANSWER, "stop"))).await;
    let err = review(spec(&empty.url, |_| {})).await.expect_err("no models");
    assert!(err.to_string().contains("model `qwen3:8b` is not available") && err.to_string().contains("has: none"), "{err}");
}

// ---------------------------------------------------------------- the CLI end to end

/// A manifest reviewing two bundled corpus cases with the `ollama` reviewer at `url`.
fn write_manifest(dir: &Path, url: &str) -> PathBuf {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/quickstart");
    let text = format!(
        r#"version = 1
[experiment]
name = "fake-ollama"
[target]
corpus = "{}"
cases = ["case-01", "case-05"]
unseal-holdout = true
[matrix]
model = ["{MODEL}"]
rag_symbol_max_definitions = [0, 3]
repeat = 2
[reviewer]
kind = "ollama"
base-url = "${{RUNNER_TEST_OLLAMA_URL:-{url}}}"
temperature = 0.5
seed = 1
seed-per-repeat = true
unit = "file"
retry-base-delay = "50ms"
[[analysis]]
kind = "latency"
[report]
output = "out"
"#,
        corpus.display()
    );
    let path = dir.join("fake.toml");
    std::fs::write(&path, text).expect("write manifest");
    path
}

fn runner_cmd(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir)
        .args(args)
        .args(["--cache-dir", "cache", "--work-dir", "work"])
        .env_remove("RUNNER_TEST_OLLAMA_URL")
        .output()
        .expect("runner runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_runs_caches_replays_frozen_and_exits_2_when_unreachable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let server = fake(&[MODEL], always(stream_of(r#"{"findings":[{"line":14,"severity":"warning","category":"correctness","message":"0 falls back to the default instead of being clamped to 1."}]}"#, "stop"))).await;
    let manifest = write_manifest(&root, &server.url);
    let m = manifest.display().to_string();

    let r = root.clone();
    let m2 = m.clone();
    let first = tokio::task::spawn_blocking(move || runner_cmd(&r, &["exec", &m2, "--quiet"])).await.expect("join");
    assert_eq!(first.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(server.chats().len(), 8, "2 cells × 2 repeats × 2 cases");
    let results = std::fs::read_to_string(root.join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(results.contains("ollama 0.6.2"), "provenance in the report:\n{results}");
    drop(server);

    // The server is gone: the cache serves everything, byte for byte.
    let (r, m2) = (root.clone(), m.clone());
    let frozen = tokio::task::spawn_blocking(move || runner_cmd(&r, &["exec", &m2, "--frozen", "--quiet"])).await.expect("join");
    assert_eq!(frozen.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&frozen.stderr));
    assert_eq!(std::fs::read_to_string(root.join("out/RESULTS.md")).expect("RESULTS.md"), results);

    // Nothing listens there: exit 2 within seconds, naming the URL.
    let dead = crate::dead_url();
    let (r, m2, d) = (root.clone(), m.clone(), dead.clone());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .current_dir(&r)
            .args(["exec", &m2, "--cache-dir", "empty-cache", "--work-dir", "work"])
            .env("RUNNER_TEST_OLLAMA_URL", &d)
            .output()
            .expect("runner runs")
    })
    .await
    .expect("join");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains(&dead), "names the URL: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_echoed_in_an_error_body_or_expanded_into_a_url_is_stored_nowhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    const KEY: &str = "sk-echoed-secret-4242";
    let server = fake(&[MODEL], Arc::new(|_, _| Reply::Status(400, json!({"error": format!("invalid api key {KEY} for this model")}), vec![]))).await;
    // The base URL carries a credential through `${VAR}`; the key comes from `api-key-env`.
    let with_userinfo = server.url.replacen("http://", "http://user:url-pass-7777@", 1);
    let manifest = write_manifest(&root, &server.url);
    let text = std::fs::read_to_string(&manifest).expect("read").replace("temperature = 0.5", "temperature = 0.5\napi-key-env = \"RUNNER_TEST_ECHO_KEY\"");
    std::fs::write(&manifest, text).expect("write");
    let m = manifest.display().to_string();
    let r = root.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .current_dir(&r)
            .args(["exec", &m, "--cache-dir", "cache", "--work-dir", "work"])
            .env("RUNNER_TEST_ECHO_KEY", KEY)
            .env("RUNNER_TEST_OLLAMA_URL", &with_userinfo)
            .output()
            .expect("runner runs")
    })
    .await
    .expect("join");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("<redacted>"), "the echoed key is shown redacted: {stderr}");
    for secret in [KEY, "url-pass-7777"] {
        assert!(!stderr.contains(secret), "{secret} on stderr: {stderr}");
        for path in ["cache", "out", "work"].iter().flat_map(|d| super::exec_corpus::walk(&root.join(d))) {
            let bytes = std::fs::read(&path).expect("read");
            assert!(!String::from_utf8_lossy(&bytes).contains(secret), "{secret} stored in {}", path.display());
        }
    }
}

/// A server that accepts connections and closes them at once, counting them.
async fn closing_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (url, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_found_down_stops_its_queue_with_one_retry_sequence_and_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let (url, connections) = closing_server().await;
    let manifest = write_manifest(&root, &url);
    let (r, m) = (root.clone(), manifest.display().to_string());
    let out = tokio::task::spawn_blocking(move || runner_cmd(&r, &["exec", &m, "--jobs", "16"])).await.expect("join");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    // 8 runs at once; one retry sequence (1 try + 3 retries) finds the server down, and no
    // run repeats it.
    let made = connections.load(Ordering::SeqCst);
    assert!((1..=4).contains(&made), "{made} connection attempts: {stderr}");
    let naming_url = stderr.lines().filter(|l| l.contains(&url)).count();
    assert_eq!(naming_url, 1, "the server being down is said once: {stderr}");
    assert!(stderr.contains("7 runs skipped: endpoint unreachable"), "{stderr}");
}

/// Answers the first request with headers and half a body, then closes; later ones in full.
#[tokio::test]
async fn a_connection_dropped_mid_body_is_retried() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let n = c.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                // Read the request head and its body (Content-Length).
                loop {
                    let Ok(k) = stream.read(&mut buf).await else { return };
                    if k == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..k]);
                    let text = String::from_utf8_lossy(&got).to_string();
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let len = text[..head_end]
                            .lines()
                            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
                            .unwrap_or(0);
                        if got.len() >= head_end + 4 + len {
                            break;
                        }
                    }
                }
                let path = String::from_utf8_lossy(&got).split_whitespace().nth(1).unwrap_or("").to_string();
                let body = if path == "/api/tags" {
                    json!({"models": [{"name": MODEL, "digest": "d", "details": {"quantization_level": "Q4"}}]}).to_string()
                } else if path == "/api/version" {
                    json!({"version": "0.6.2"}).to_string()
                } else {
                    let Reply::Stream(lines) = stream_of(ANSWER, "stop") else { return };
                    lines.iter().map(|l| format!("{l}\n")).collect::<String>()
                };
                let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = stream.write_all(head.as_bytes()).await;
                if path == "/api/chat" && n == 2 {
                    // The first chat request: half the body, then the connection drops.
                    let _ = stream.write_all(&body.as_bytes()[..body.len() / 2]).await;
                    let _ = stream.flush().await;
                    return;
                }
                let _ = stream.write_all(body.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    let output = review(spec(&url, |_| {})).await.expect("the retry succeeds");
    assert!(!output.findings.is_empty());
    assert_eq!(count.load(Ordering::SeqCst), 4, "tags, version, a dropped chat, its retry");
}
