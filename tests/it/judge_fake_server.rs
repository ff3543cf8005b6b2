//! Rubric judges and the claims generator against fake model servers started in the test:
//! an OpenAI-compatible one (`GET /v1/models`, `POST /v1/chat/completions`, as llama.cpp
//! answers, OBSERVED.md) and an Ollama one (`GET /api/tags`, `GET /api/version`, `POST
//! /api/chat` as NDJSON), both following CONTRACTS.md. Every request body is kept as the
//! bytes received, so the tests can read what a judge sent: the schema constraint in each
//! protocol's field, the seed of each attempt, and that no reviewer identity is in it.

use crate::fake_http::{read_request, write, Request};
use runner::judge::rubric::verdict_schema;
use runner::judge::spec::ModelSettings;
use runner::judge::{blind_items, BlindItem, ClaimsGenerator, ClaimsSpec, Judge, JudgeError, JudgeSpec, Rubric, Verdict};
use runner::matrix::{AxisValue, Cell};
use runner::reviewer::llm::{LlmReviewer, LlmSpec, Protocol};
use runner::reviewer::{ReviewJob, Reviewer};
use runner::subject::diff::parse_unified_diff;
use runner::subject::Subject;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------- the fake servers

/// One request the fake received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    /// The body exactly as received.
    pub(crate) raw: String,
    pub(crate) body: Value,
}

/// What the fake answers to one chat request.
#[derive(Clone)]
pub(crate) enum Reply {
    /// 200 with this text as the model's answer and this finish reason.
    Answer(String, &'static str),
    /// An error status with a JSON body.
    Status(u16),
    /// As `Answer`, reporting these prompt and completion tokens.
    Counted(String, &'static str, u64, u64),
}

/// Answers the n-th (0-based, counted over the server's life) chat request.
pub(crate) type Handler = Arc<dyn Fn(usize, &Value) -> Reply + Send + Sync>;

pub(crate) struct Fake {
    /// The base URL a client is given: `…/v1` (OpenAI-compatible) or the root (Ollama).
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    pub(crate) fn chats(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").iter().filter(|s| s.path.ends_with("/chat/completions") || s.path == "/api/chat").cloned().collect()
    }
}

const JUDGE_MODEL: &str = "judge-model";

/// Starts a fake server speaking `protocol`, serving `models`.
pub(crate) async fn fake(protocol: Protocol, models: &[&str], handler: Handler) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let root = format!("http://{}", listener.local_addr().expect("addr"));
    let url = match protocol {
        Protocol::OpenAi => format!("{root}/v1"),
        Protocol::Ollama => root,
    };
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let chats = Arc::new(AtomicUsize::new(0));
    let models: Vec<String> = models.iter().map(|m| m.to_string()).collect();
    let s = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let (seen, chats, models, handler) = (s.clone(), chats.clone(), models.clone(), handler.clone());
            tokio::spawn(async move {
                let _ = serve(stream, protocol, seen, chats, models, handler).await;
            });
        }
    });
    Fake { url, seen, task }
}

async fn serve(
    mut stream: TcpStream,
    protocol: Protocol,
    seen: Arc<Mutex<Vec<Seen>>>,
    chats: Arc<AtomicUsize>,
    models: Vec<String>,
    handler: Handler,
) -> std::io::Result<()> {
    while let Some(Request { method, path, body, .. }) = read_request(&mut stream).await? {
        let raw = String::from_utf8_lossy(&body).to_string();
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        seen.lock().expect("lock").push(Seen { path: path.clone(), raw, body: body.clone() });
        let json = "application/json";
        match (protocol, method.as_str(), path.as_str()) {
            (Protocol::OpenAi, "GET", "/v1/models") => {
                let data: Vec<Value> = models.iter().map(|m| json!({"id": m, "object": "model", "owned_by": "llamacpp"})).collect();
                write(&mut stream, 200, json, &json!({"object": "list", "data": data}).to_string(), &[]).await?;
            }
            (Protocol::Ollama, "GET", "/api/tags") => {
                let list: Vec<Value> =
                    models.iter().map(|m| json!({"name": m, "model": m, "digest": "d1", "details": {"quantization_level": "Q4_K_M"}})).collect();
                write(&mut stream, 200, json, &json!({"models": list}).to_string(), &[]).await?;
            }
            (Protocol::Ollama, "GET", "/api/version") => write(&mut stream, 200, json, r#"{"version":"0.6.2"}"#, &[]).await?,
            (Protocol::OpenAi, "POST", "/v1/chat/completions") | (Protocol::Ollama, "POST", "/api/chat") => {
                let n = chats.fetch_add(1, Ordering::SeqCst);
                match handler(n, &body) {
                    Reply::Status(status) => write(&mut stream, status, json, &json!({"error": {"code": status, "message": "busy"}}).to_string(), &[]).await?,
                    reply @ (Reply::Answer(..) | Reply::Counted(..)) => {
                        // Ollama's fixed counts differ from the OpenAI-compatible ones.
                        let (text, finish, (prompt, completion), ollama) = match reply {
                            Reply::Counted(text, finish, p, c) => (text, finish, (p, c), (p, c)),
                            Reply::Answer(text, finish) => (text, finish, (150, 20), (140, 18)),
                            Reply::Status(_) => unreachable!("matched above"),
                        };
                        let model = body["model"].as_str().unwrap_or_default();
                        if protocol == Protocol::OpenAi {
                            let answer = json!({
                                "choices": [{"finish_reason": finish, "index": 0, "message": {"role": "assistant", "content": text}}],
                                "model": model, "object": "chat.completion",
                                "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
                                "timings": {"prompt_ms": 500.0, "predicted_ms": 200.0}
                            });
                            write(&mut stream, 200, json, &answer.to_string(), &[]).await?;
                        } else {
                            let line = json!({
                                "model": model, "message": {"role": "assistant", "content": text}, "done": true, "done_reason": finish,
                                "total_duration": 900_000_000u64, "prompt_eval_count": ollama.0, "prompt_eval_duration": 500_000_000u64,
                                "eval_count": ollama.1, "eval_duration": 300_000_000u64
                            });
                            write(&mut stream, 200, "application/x-ndjson", &format!("{line}\n"), &[]).await?;
                        }
                    }
                }
            }
            _ => write(&mut stream, 404, json, r#"{"error":"404 page not found"}"#, &[]).await?,
        }
    }
    Ok(())
}

fn answers(replies: Vec<Reply>) -> Handler {
    Arc::new(move |n, _| replies.get(n).or(replies.last()).cloned().expect("a reply"))
}

fn good(verdict: &str) -> Reply {
    Reply::Answer(format!("{{\"reason\": \"The code shown supports it.\", \"verdict\": \"{verdict}\"}}"), "stop")
}

// ---------------------------------------------------------------- fixtures

const DIFF: &str = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n";

fn subject() -> Arc<Subject> {
    Arc::new(Subject {
        id: "case-01".into(),
        repo_dir: PathBuf::from("/nonexistent/repo"),
        base_sha: "HEAD~1".into(),
        head_sha: "HEAD".into(),
        diff: DIFF.into(),
        files: parse_unified_diff(DIFF),
        stet_error: None,
        review_task: None,
        spec: None,
    })
}

fn item() -> BlindItem {
    BlindItem {
        id: "item-1".into(),
        file: "calc.py".into(),
        line: 10,
        message: "avg divides by zero when xs is empty.".into(),
        suggestion: Some("Return 0 when xs is empty.".into()),
        context: runner::judge::blind::context(&subject(), "calc.py", 10),
    }
}

fn judge(protocol: Protocol, url: &str, f: impl FnOnce(&mut JudgeSpec)) -> Judge {
    let mut settings = ModelSettings::new(protocol, url, JUDGE_MODEL, "smollm2");
    settings.seed = 40;
    settings.max_tokens = 128;
    settings.retries = 3;
    settings.retry_base_delay = Duration::from_millis(10);
    settings.request_timeout = Duration::from_secs(30);
    let mut spec = JudgeSpec::new("smol", settings);
    f(&mut spec);
    Judge::new(spec).expect("judge")
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn openai_requests_carry_the_json_schema_and_a_good_answer_gives_the_verdict() {
    let server = fake(Protocol::OpenAi, &[JUDGE_MODEL], answers(vec![good("yes")])).await;
    let j = judge(Protocol::OpenAi, &server.url, |_| {});
    let out = j.judge(Rubric::Validity, &item()).await.expect("judged");
    assert_eq!((out.verdict, out.reason.as_str(), out.attempts, out.seed, out.requests), (Verdict::Yes, "The code shown supports it.", 1, 40, 1));
    assert_eq!((out.tokens.prompt, out.tokens.completion), (150, 20));
    assert!(out.raw.contains("\"verdict\": \"yes\""));
    let chats = server.chats();
    assert_eq!(chats.len(), 1);
    let body = &chats[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema", "{body}");
    assert_eq!(body["response_format"]["json_schema"]["schema"], verdict_schema());
    assert_eq!(body["response_format"]["json_schema"]["name"], "verdict");
    assert_eq!((body["temperature"].as_f64(), body["seed"].as_u64(), body["max_tokens"].as_u64()), (Some(0.0), Some(40), Some(128)));
    let prompt = body["messages"][0]["content"].as_str().expect("prompt");
    assert!(prompt.contains("VALID") && prompt.contains("avg divides by zero") && prompt.contains("   10 +     return sum(xs) / len(xs)"), "{prompt}");

    let no = fake(Protocol::OpenAi, &[JUDGE_MODEL], answers(vec![good("no")])).await;
    let out = judge(Protocol::OpenAi, &no.url, |_| {}).judge(Rubric::Actionability, &item()).await.expect("judged");
    assert_eq!((out.verdict, out.attempts), (Verdict::No, 1));
    assert!(no.chats()[0].body["messages"][0]["content"].as_str().expect("prompt").contains("ACTIONABLE"));
}

#[tokio::test]
async fn ollama_requests_carry_the_schema_as_format() {
    let server = fake(Protocol::Ollama, &[JUDGE_MODEL], answers(vec![good("no")])).await;
    let out = judge(Protocol::Ollama, &server.url, |_| {}).judge(Rubric::Validity, &item()).await.expect("judged");
    assert_eq!((out.verdict, out.attempts), (Verdict::No, 1));
    assert_eq!((out.tokens.prompt, out.tokens.completion), (140, 18));
    let body = &server.chats()[0].body;
    assert_eq!(body["format"], verdict_schema(), "{body}");
    assert!(body.get("response_format").is_none());
    assert_eq!(body["options"], json!({"temperature": 0.0, "seed": 40, "num_predict": 128}));
}

#[tokio::test]
async fn a_malformed_answer_is_asked_again_with_the_next_seed() {
    for protocol in [Protocol::OpenAi, Protocol::Ollama] {
        let server = fake(protocol, &[JUDGE_MODEL], answers(vec![Reply::Answer("Sure! The answer is yes.".into(), "stop"), good("yes")])).await;
        let out = judge(protocol, &server.url, |_| {}).judge(Rubric::Validity, &item()).await.expect("judged");
        assert_eq!((out.verdict, out.attempts, out.seed, out.requests), (Verdict::Yes, 2, 41, 2), "{protocol:?}");
        assert_eq!(out.tokens.completion, if protocol == Protocol::OpenAi { 40 } else { 36 }, "both attempts are counted");
        let seeds: Vec<u64> = server
            .chats()
            .iter()
            .map(|c| if protocol == Protocol::OpenAi { c.body["seed"].as_u64() } else { c.body["options"]["seed"].as_u64() }.expect("seed"))
            .collect();
        assert_eq!(seeds, vec![40, 41], "{protocol:?}: the seed advances by one per attempt");
        let chats = server.chats();
        assert_eq!(chats[0].body["messages"], chats[1].body["messages"], "the same question is asked again");
    }
    // An answer cut at max-tokens is malformed too, even when its prefix would parse.
    let server =
        fake(Protocol::OpenAi, &[JUDGE_MODEL], answers(vec![Reply::Answer("{\"reason\": \"x\", \"verdict\": \"no\"}".into(), "length"), good("yes")])).await;
    let out = judge(Protocol::OpenAi, &server.url, |_| {}).judge(Rubric::Validity, &item()).await.expect("judged");
    assert_eq!((out.verdict, out.attempts), (Verdict::Yes, 2));
}

#[tokio::test]
async fn always_malformed_is_unparseable_after_one_plus_malformed_retries_requests() {
    let server = fake(Protocol::OpenAi, &[JUDGE_MODEL], answers(vec![Reply::Answer("{\"verdict\": \"maybe\", \"reason\": \"unsure\"}".into(), "stop")])).await;
    let out = judge(Protocol::OpenAi, &server.url, |s| s.malformed_retries = 3)
        .judge(Rubric::Actionability, &item())
        .await
        .expect("an unparseable judgement is not an error");
    assert_eq!((out.verdict, out.attempts, out.seed, out.requests), (Verdict::Unparseable, 4, 43, 4));
    assert!(out.reason.contains("4 attempts") && out.reason.contains("\"maybe\""), "{}", out.reason);
    assert_eq!(out.raw, "{\"verdict\": \"maybe\", \"reason\": \"unsure\"}");
    let seeds: Vec<u64> = server.chats().iter().map(|c| c.body["seed"].as_u64().expect("seed")).collect();
    assert_eq!(seeds, vec![40, 41, 42, 43]);

    let once = fake(Protocol::Ollama, &[JUDGE_MODEL], answers(vec![Reply::Answer("not json".into(), "stop")])).await;
    let out = judge(Protocol::Ollama, &once.url, |s| s.malformed_retries = 0).judge(Rubric::Validity, &item()).await.expect("judged");
    assert_eq!((out.verdict, out.attempts), (Verdict::Unparseable, 1));
    assert_eq!(once.chats().len(), 1, "with malformed-retries = 0, one request");
    let default = fake(Protocol::OpenAi, &[JUDGE_MODEL], answers(vec![Reply::Answer("[]".into(), "stop")])).await;
    let out = judge(Protocol::OpenAi, &default.url, |_| {}).judge(Rubric::Validity, &item()).await.expect("judged");
    assert_eq!((out.verdict, out.attempts), (Verdict::Unparseable, 3), "malformed-retries defaults to 2");
    assert_eq!(default.chats().len(), 3);
}

#[tokio::test]
async fn a_503_is_retried_by_the_transport_not_counted_as_an_attempt() {
    for protocol in [Protocol::OpenAi, Protocol::Ollama] {
        let server = fake(protocol, &[JUDGE_MODEL], answers(vec![Reply::Status(503), Reply::Status(503), good("yes")])).await;
        let out = judge(protocol, &server.url, |_| {}).judge(Rubric::Validity, &item()).await.expect("judged after retries");
        assert_eq!((out.verdict, out.attempts, out.seed, out.requests), (Verdict::Yes, 1, 40, 3), "{protocol:?}");
        let seeds: Vec<Value> =
            server.chats().iter().map(|c| if protocol == Protocol::OpenAi { c.body["seed"].clone() } else { c.body["options"]["seed"].clone() }).collect();
        assert_eq!(seeds, vec![json!(40); 3], "a transport retry resends the same request");
    }
    let busy = fake(Protocol::OpenAi, &[JUDGE_MODEL], answers(vec![Reply::Status(503)])).await;
    let err = judge(Protocol::OpenAi, &busy.url, |s| s.settings.retries = 1).judge(Rubric::Validity, &item()).await.expect_err("503 to the end");
    assert!(matches!(&err, JudgeError::Failed(m) if m.contains("503") && m.contains("2 attempts")), "{err}");
}

#[tokio::test]
async fn an_unreachable_server_or_unknown_model_is_an_error_not_a_verdict() {
    let url = format!("{}/v1", crate::dead_url());
    let err = judge(Protocol::OpenAi, &url, |s| s.settings.retries = 1).judge(Rubric::Validity, &item()).await.expect_err("nothing listens");
    assert!(matches!(&err, JudgeError::Unreachable(m) if m.contains(&url)), "{err}");
    let other = fake(Protocol::OpenAi, &["another-model"], answers(vec![good("yes")])).await;
    let err = judge(Protocol::OpenAi, &other.url, |_| {}).judge(Rubric::Validity, &item()).await.expect_err("model not served");
    assert!(matches!(&err, JudgeError::Unreachable(m) if m.contains("judge-model") && m.contains("another-model")), "{err}");
    assert!(other.chats().is_empty(), "no judge request goes to a server that does not serve the model");
}

#[tokio::test]
async fn claims_are_asked_for_in_two_numbered_sections_and_returned_as_written() {
    let text = "Summary of changes:\n1. A function `avg` is added to calc.py.\n2. It returns sum(xs) / len(xs).\n\nImplications:\n1. avg([]) raises ZeroDivisionError.\n2. Callers must not pass an empty list.";
    for protocol in [Protocol::OpenAi, Protocol::Ollama] {
        let server = fake(protocol, &["claims-model"], answers(vec![Reply::Answer(text.into(), "stop")])).await;
        let mut settings = ModelSettings::new(protocol, &server.url, "claims-model", "qwen");
        settings.seed = 3;
        let generator = ClaimsGenerator::new(ClaimsSpec::new(settings)).expect("generator");
        let out = generator.generate(DIFF).await.expect("claims");
        assert_eq!((out.raw.as_str(), out.truncated, out.requests), (text, false, 1));
        assert!(out.tokens.prompt > 0 && out.tokens.completion > 0);
        // What a test needs of the parser: four numbered points, two under each heading.
        let points = out.raw.lines().filter(|l| l.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok())).count();
        assert_eq!(points, 4);
        let body = &server.chats()[0].body;
        let prompt = body["messages"][0]["content"].as_str().expect("prompt");
        assert!(prompt.contains("\"Summary of changes:\"") && prompt.contains("\"Implications:\""), "{prompt}");
        assert!(prompt.contains("Lines added:\n\n\ndef avg(xs):\n    return sum(xs) / len(xs)"), "{prompt}");
        assert!(!prompt.contains("Lines removed"), "nothing was removed: {prompt}");
        assert!(body.get("response_format").is_none() && body.get("format").is_none(), "claims are prose, not schema-bound: {body}");
    }
}

/// The blinding: a real reviewer run with distinctive identities (reviewer name, model, cell,
/// repeat) produces findings; every byte the judges then send carries none of them.
#[tokio::test]
async fn no_reviewer_identity_reaches_a_judge() {
    const REVIEWER_NAME: &str = "sentinel-reviewer-omega";
    const REVIEWER_MODEL: &str = "sentinel-model-xq7";
    const PERSONA: &str = "persona-zeta-19";
    const REPEAT: u32 = 7;
    let findings_answer = json!({"findings": [
        {"line": 10, "severity": "error", "category": "bug", "message": "avg divides by zero when xs is empty.", "suggestion": "Return 0 for an empty list."},
        {"line": 8, "severity": "info", "category": "style", "message": "avg has no docstring."},
        {"line": 9, "severity": "warning", "category": "correctness", "message": "The blank lines before avg are two, PEP 8 wants two: fine."}
    ]})
    .to_string();
    let handler: Handler = Arc::new(move |_, body| if body["model"] == REVIEWER_MODEL { Reply::Answer(findings_answer.clone(), "stop") } else { good("yes") });
    let server = fake(Protocol::Ollama, &[REVIEWER_MODEL, JUDGE_MODEL], handler).await;

    // The source run: cell, repeat, reviewer and model as a manifest would name them.
    let mut spec = LlmSpec::new(Protocol::Ollama, &server.url);
    spec.rag_max_definitions = 0;
    spec.seed = Some(1);
    let reviewer = LlmReviewer::new(spec).expect("reviewer");
    let cell = Cell {
        id: format!("reviewer={REVIEWER_NAME},model={REVIEWER_MODEL},persona={PERSONA}"),
        values: [
            ("reviewer".to_string(), AxisValue::Str(REVIEWER_NAME.into())),
            ("model".to_string(), AxisValue::Str(REVIEWER_MODEL.into())),
            ("persona".to_string(), AxisValue::Str(PERSONA.into())),
        ]
        .into_iter()
        .collect(),
    };
    let out = reviewer
        .review(&ReviewJob { cell: cell.clone(), repeat: REPEAT, subject: subject(), timeout: Duration::from_secs(60), calls: None })
        .await
        .expect("review");
    assert_eq!(out.findings.len(), 3, "{:?}", out.findings);
    let reviewer_requests = server.chats().len();

    let items = blind_items(&out.findings, &subject(), 99);
    assert_eq!(items.len(), 3);
    let mut mapped: Vec<usize> = items.iter().map(|(i, _)| *i).collect();
    mapped.sort_unstable();
    assert_eq!(mapped, vec![0, 1, 2], "every finding once");
    let j = judge(Protocol::Ollama, &server.url, |_| {});
    for (index, item) in &items {
        assert_eq!(item.message, out.findings[*index].message);
        for rubric in Rubric::ALL {
            let verdict = j.judge(rubric, item).await.expect("judged");
            assert_eq!(verdict.verdict, Verdict::Yes);
        }
    }
    let judge_requests: Vec<Seen> = server.chats().into_iter().skip(reviewer_requests).collect();
    assert_eq!(judge_requests.len(), 6);
    let mut forbidden: Vec<String> = vec![
        REVIEWER_NAME.into(),
        REVIEWER_MODEL.into(),
        PERSONA.into(),
        cell.id.clone(),
        format!("repeat={REPEAT}"),
        format!("\"repeat\":{REPEAT}"),
        format!("repeat {REPEAT}"),
        "sentinel".into(),
        subject().id.clone(),
    ];
    // stet's finding ids are a run's output too; the judges see none.
    forbidden.extend(out.findings.iter().map(|f| f.id.clone()));
    for request in &judge_requests {
        assert_eq!(request.body["model"], JUDGE_MODEL);
        for needle in &forbidden {
            assert!(!request.raw.contains(needle.as_str()), "a judge request carries `{needle}`:\n{}", request.raw);
        }
    }
    // The reviewer's own requests do carry its model: the check would have seen a leak.
    assert!(server.chats()[..reviewer_requests].iter().all(|r| r.raw.contains(REVIEWER_MODEL)));
}

// ---------------------------------------------------------------- oracle matching by the jury

/// An external change set of two changes, each with one change-level golden comment, reviewed
/// by a replay of captured findings, scored by a `fixture` analysis whose evidence is the
/// judges' word. p-1's report shares one word with its golden comment (similarity 2/12, under
/// the 0.22 threshold, over the judge floor): only the judges can find it. p-2's report is
/// found by its words alone, and p-1's second report shares none: neither is asked about.
pub(crate) fn judged_matching_experiment(dir: &std::path::Path, judges: &str) -> PathBuf {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).expect("mkdir");
    std::fs::write(corpus.join("changes.json"), r#"[{"id": "p-1", "title": "Add run"}, {"id": "p-2", "title": "Add helper"}]"#).expect("changes");
    std::fs::write(corpus.join("oracle.json"), crate::external_target::TWO_CHANGE_ORACLE).expect("oracle");
    std::fs::write(
        dir.join("captured.jsonl"),
        "{\"subject\": \"p-1\", \"file\": null, \"line\": null, \"message\": \"dangerous eval call lets attackers take over the machine\"}\n\
         {\"subject\": \"p-1\", \"file\": null, \"line\": null, \"message\": \"rename the function\"}\n\
         {\"subject\": \"p-2\", \"file\": null, \"line\": null, \"message\": \"the new function lacks a docstring\"}\n",
    )
    .expect("capture");
    let text = format!(
        "version = 1\n[experiment]\nname = \"judged-matching\"\n[target]\nexternal = \"corpus/changes.json\"\noracle = \"corpus/oracle.json\"\n[matrix]\nreviewer = [\"sentinel-tool\"]\nrepeat = 1\n[reviewers.sentinel-tool]\nkind = \"replay\"\nformat = \"jsonl\"\npath = \"captured.jsonl\"\nmissing = \"empty\"\ntool = \"Sentinel tool\"\n{judges}\n[[analysis]]\nkind = \"fixture\"\nevidence = \"judge\"\n[report]\noutput = \"out\"\n"
    );
    crate::write_manifest(dir, "judged.toml", &text)
}

/// Two judges of different families on one server, each with its own model name.
fn two_judges(url: &str, second_model: &str) -> String {
    format!(
        "[judges.alpha]\nprovider = \"openai\"\nbase-url = \"{url}\"\nmodel = \"{JUDGE_MODEL}\"\nfamily = \"smollm2\"\n[judges.beta]\nprovider = \"openai\"\nbase-url = \"{url}\"\nmodel = \"{second_model}\"\nfamily = \"gemma\"\n"
    )
}

/// The request every judge sends about p-1's pair, byte for byte but for its model: the two
/// texts (in sorted order, so nothing says which is the golden comment), the instructions, the
/// schema and the judge's settings (the defaults: seed 0, temperature 0, 256 tokens); no
/// reviewer, cell, repeat, subject or source.
const MATCH_REQUEST: &str = r#"{"max_tokens":256,"messages":[{"content":"You compare two short descriptions of problems in one code change.\n\nQuestion: do the two texts describe the SAME ISSUE, that is, the same defect in the same code? Answer \"yes\" when both name the same underlying problem, even in different words, at a different level of detail, or when one also proposes a fix. Answer \"no\" when they name different problems, even in the same code, or when one is too vague to tell which problem it means.\n\nText A:\ndangerous eval call lets attackers take over the machine\n\nText B:\neval of untrusted code runs arbitrary code\n\nAnswer with one JSON object with two keys: \"reason\", your own sentence saying what each text is about, and \"verdict\", which is \"yes\" (the same issue) or \"no\".","role":"user"}],"model":"MODEL","response_format":{"json_schema":{"name":"verdict","schema":{"additionalProperties":false,"properties":{"reason":{"maxLength":300,"type":"string"},"verdict":{"enum":["yes","no"],"type":"string"}},"required":["verdict","reason"],"title":"verdict","type":"object"},"strict":true},"type":"json_schema"},"seed":0,"stream":false,"temperature":0.0}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jury_finds_a_report_its_words_do_not_and_a_tie_is_not_a_find() {
    // judge-model says yes; judge-model-b yes; judge-model-c no.
    let handler: Handler = Arc::new(|_, body| if body["model"] == "judge-model-c" { good("no") } else { good("yes") });
    let server = fake(Protocol::OpenAi, &[JUDGE_MODEL, "judge-model-b", "judge-model-c"], handler).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let manifest = judged_matching_experiment(&root, &two_judges(&server.url, "judge-model-b"));
    let cli = move |args: Vec<String>| {
        let root = root.clone();
        async move { tokio::task::spawn_blocking(move || crate::runner(&root).args(args).output().expect("runs")).await.expect("joined") }
    };
    let exec = |m: &std::path::Path| {
        ["exec", "--cache-dir", "cache", "--work-dir", "work"].iter().map(|s| s.to_string()).chain([m.display().to_string()]).collect::<Vec<_>>()
    };
    let plan = |m: &std::path::Path| ["plan", "--cache-dir", "cache"].iter().map(|s| s.to_string()).chain([m.display().to_string()]).collect::<Vec<_>>();
    let fixture = |dir: &std::path::Path| -> Value {
        let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("out/results.json")).expect("results.json")).expect("json");
        results["analyses"][0].clone()
    };
    let prf = |f: &Value| {
        let o = &f["data"]["cells"][0]["overall"];
        (o["tp"].as_u64(), o["fp"].as_u64(), o["fn"].as_u64())
    };

    let out = cli(exec(&manifest)).await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "one pair, asked of each judge once");
    let mut models: Vec<&str> = chats.iter().filter_map(|c| c.body["model"].as_str()).collect();
    models.sort_unstable();
    assert_eq!(models, [JUDGE_MODEL, "judge-model-b"]);
    for chat in &chats {
        let model = chat.body["model"].as_str().unwrap_or_default();
        assert_eq!(chat.raw, MATCH_REQUEST.replace("MODEL", model), "the exact bytes sent");
        assert_eq!(chat.body["response_format"]["json_schema"]["schema"], verdict_schema());
        for needle in ["sentinel", "Sentinel", "p-1", "p-2", "oracle", "golden", "repeat", "reviewer", "judged-matching"] {
            assert!(!chat.raw.contains(needle), "a match request carries `{needle}`: {}", chat.raw);
        }
    }
    let found = fixture(dir.path());
    // p-1's report found by the jury, p-2's by its words; "rename the function" is noise.
    assert_eq!(prf(&found), (Some(2), Some(1), Some(0)), "{}", found["data"]);
    let rule = found["rule"].as_str().unwrap_or_default();
    assert!(rule.contains("or a majority of judges `alpha`, `beta` say the two describe the same issue"), "{rule}");
    assert!(rule.contains("similarity ≥ 0.05") && rule.contains("judges asked about 1 pair, 0 ties"), "{rule}");

    // A second execution asks nothing: every call is cached.
    let again = cli(exec(&manifest)).await;
    assert!(again.status.success(), "{}", crate::stderr_of(&again));
    assert_eq!(server.chats().len(), 2, "served from the cache");
    assert_eq!(prf(&fixture(dir.path())), (Some(2), Some(1), Some(0)));
    let planned = cli(plan(&manifest)).await;
    let text = crate::stdout_of(&planned);
    assert!(planned.status.success() && text.contains("2 calls known from the cached reviews, 2 cached, 0 to run"), "{text}");
    assert!(text.lines().any(|l| l.trim_start().starts_with("match") && l.contains(" 4  ")), "four match nodes (two runs × two judges): {text}");

    // Another second judge, who says no: a tie, not a find; alpha's answer is still cached.
    let tied = judged_matching_experiment(dir.path(), &two_judges(&server.url, "judge-model-c"));
    let planned = cli(plan(&tied)).await;
    assert!(crate::stdout_of(&planned).contains("2 calls known from the cached reviews, 1 cached, 1 to run"), "{}", crate::stdout_of(&planned));
    let out = cli(exec(&tied)).await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    assert_eq!(server.chats().len(), 3, "only the new judge is asked");
    let tie = fixture(dir.path());
    // p-1's report is now partial (a false positive), its golden comment missed.
    assert_eq!(prf(&tie), (Some(1), Some(2), Some(1)), "{}", tie["data"]);
    assert!(tie["rule"].as_str().is_some_and(|r| r.contains("judges `alpha`, `beta`") && r.contains("1 pair, 1 tie (not found)")), "{}", tie["rule"]);
}

/// The same experiment with a `jury` analysis instead: it measures the judges, so they are
/// asked about every pair — p-1's two reports and p-2's one, found by their words or not.
pub(crate) fn jury_experiment(dir: &std::path::Path, judges: &str) -> PathBuf {
    let manifest = judged_matching_experiment(dir, judges);
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    let text = text.replace("kind = \"fixture\"\nevidence = \"judge\"\n", "kind = \"jury\"\n");
    crate::write_manifest(dir, "jury.toml", &text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jury_analysis_asks_model_judges_about_every_pair_and_measures_them_against_the_matcher() {
    // alpha says yes to everything; beta only to the pair about eval.
    let handler: Handler =
        Arc::new(|_, body| if body["model"] == JUDGE_MODEL || body.to_string().contains("dangerous eval call") { good("yes") } else { good("no") });
    let server = fake(Protocol::OpenAi, &[JUDGE_MODEL, "judge-model-b"], handler).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let manifest = jury_experiment(&root, &two_judges(&server.url, "judge-model-b"));
    let out = tokio::task::spawn_blocking(move || {
        crate::runner(&root).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs")
    })
    .await
    .expect("joined");
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    assert_eq!(server.chats().len(), 6, "three pairs (every report at the place of each golden comment), asked of each judge");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    let jury = &results["analyses"][0];
    assert_eq!(jury["kind"], "jury");
    let cell = &jury["data"]["cells"][0];
    // alpha finds both golden comments, beta only p-1's; the majority of two: p-1 found, p-2 a tie.
    assert_eq!(cell["judges"][0]["recall"], 1.0, "{cell}");
    assert_eq!(cell["judges"][1]["recall"], 0.5, "{cell}");
    assert_eq!(cell["majority_recall"], 0.5, "{cell}");
    // The matcher finds p-2's by its words and not p-1's (similarity under the threshold).
    assert_eq!(cell["matcher"]["recall"], 0.5, "{cell}");
    // As the benchmark counts: a golden comment takes one report (the first the judge called
    // the same), and a report matched to none is a false positive: alpha 2 of 3, beta 1 of 3.
    assert_eq!((cell["judges"][0]["precision"].as_f64(), cell["judges"][1]["precision"].as_f64()), (Some(2.0 / 3.0), Some(1.0 / 3.0)), "{cell}");
    let agreement = &jury["data"]["agreement"];
    // The matcher against beta: beta [yes, no], matcher [no, yes]: they agree on nothing.
    assert_eq!(agreement[1]["matcher"]["agreement"], 0.0, "{agreement}");
    assert_eq!(agreement[0]["matcher"]["both"], 1, "{agreement}");
    assert_eq!(jury["data"]["jury"]["ties"], 1, "{}", jury["data"]["jury"]);
}

// ---------------------------------------------------------------- a judge asked several times

/// RQS v2 over the built-in heuristic on three bundled cases, with one judge asked `samples`
/// times: its sample k answers with seed 3k (the default two malformed retries leave seeds
/// 3k+1 and 3k+2 to it), and the fake judge says yes on seeds 0 and 6, no on seed 3.
fn sampled_rqs_experiment(dir: &std::path::Path, url: &str, samples: u32) -> PathBuf {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/quickstart");
    crate::write_manifest(
        dir,
        "sampled.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"sampled\"\n[target]\ncorpus = \"{}\"\ncases = [\"case-01\", \"case-02\", \"case-03\"]\nunseal-holdout = true\n\
             [matrix]\nrepeat = 1\n[reviewer]\nkind = \"builtin\"\nname = \"heuristic\"\n\
             [judges.alpha]\nprovider = \"openai\"\nbase-url = \"{url}\"\nmodel = \"{JUDGE_MODEL}\"\nfamily = \"smollm2\"\nsamples = {samples}\n\
             [[analysis]]\nkind = \"rqs\"\n[report]\noutput = \"out\"\n",
            corpus.display()
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_asked_three_times_is_cached_per_sample_and_its_consistency_reported() {
    let handler: Handler = Arc::new(|_, body| if body["seed"] == 3 { good("no") } else { good("yes") });
    let server = fake(Protocol::OpenAi, &[JUDGE_MODEL], handler).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let exec = |manifest: PathBuf| {
        let root = root.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                crate::runner(&root).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs")
            })
            .await
            .expect("joined")
        }
    };
    let out = exec(sampled_rqs_experiment(dir.path(), &server.url, 3)).await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let chats = server.chats();
    let mut seeds: Vec<u64> = chats.iter().filter_map(|c| c.body["seed"].as_u64()).collect();
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds, [0, 3, 6], "each sample asks with its own seed");
    let per_seed = |seed: u64| chats.iter().filter(|c| c.body["seed"] == seed).count();
    assert!(per_seed(0) > 0 && per_seed(0) == per_seed(3) && per_seed(3) == per_seed(6), "every question asked once per sample");
    let questions = per_seed(0);

    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results")).expect("json");
    let rqs = &results["analyses"][0]["data"];
    let consistency = &rqs["judge_consistency"][0];
    assert_eq!(consistency["name"], "alpha");
    assert_eq!((consistency["samples"].as_u64(), consistency["questions"].as_u64()), (Some(3), Some(questions as u64)));
    // Two samples say yes and one no on every question: no question is unanimous, none splits.
    assert_eq!((consistency["unanimous"].as_u64(), consistency["split"].as_u64()), (Some(0), Some(0)), "{consistency}");
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("Judge consistency across samples"), "{md}");
    assert!(rqs["judges"][0]["unparseable"] == 0, "{}", rqs["judges"]);

    // Again: every sample's answer is cached.
    let again = exec(sampled_rqs_experiment(dir.path(), &server.url, 3)).await;
    assert!(again.status.success(), "{}", crate::stderr_of(&again));
    assert_eq!(server.chats().len(), chats.len(), "nothing asked again");

    // Two samples: both cached (samples 0 and 1 keep their seeds), and every vote splits.
    let two = exec(sampled_rqs_experiment(dir.path(), &server.url, 2)).await;
    assert!(two.status.success(), "{}", crate::stderr_of(&two));
    assert_eq!(server.chats().len(), chats.len(), "a smaller sample reuses the cached answers");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results")).expect("json");
    let consistency = &results["analyses"][0]["data"]["judge_consistency"][0];
    assert_eq!((consistency["unanimous"].as_u64(), consistency["split"].as_u64()), (Some(0), Some(questions as u64)), "{consistency}");

    // One sample: the judge asks as it always did, and no consistency is reported.
    let one = exec(sampled_rqs_experiment(dir.path(), &server.url, 1)).await;
    assert!(one.status.success(), "{}", crate::stderr_of(&one));
    assert_eq!(server.chats().len(), chats.len(), "sample 0 is the key a judge without samples has");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results")).expect("json");
    assert!(results["analyses"][0]["data"].get("judge_consistency").is_none());
}

// ---------------------------------------------------------------- judging uncertainty in a comparison

/// Two replayed tools compared on recall where the judges have the word, with one judge asked
/// three times (seeds 0, 3 and 6): it calls the first tool's report on p-1 the same issue on
/// seeds 0 and 3, the second tool's on seed 0 only. The majorities say the first finds p-1 and
/// the second does not; with judging uncertainty the two finds weigh 2/3 and 1/3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_where_the_judges_decide_weighs_each_decision_by_their_vote_share() {
    let handler: Handler = Arc::new(|_, body| {
        let text = body.to_string();
        let seed = body["seed"].as_u64().unwrap_or(99);
        let yes = if text.contains("dangerous eval call") { seed <= 3 } else { seed == 0 };
        good(if yes { "yes" } else { "no" })
    });
    let server = fake(Protocol::OpenAi, &[JUDGE_MODEL], handler).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let manifest = judged_matching_experiment(&root, "");
    std::fs::write(
        root.join("captured-b.jsonl"),
        "{\"subject\": \"p-1\", \"file\": null, \"line\": null, \"message\": \"an eval call here is dangerous for attackers reading the machine\"}\n\
         {\"subject\": \"p-2\", \"file\": null, \"line\": null, \"message\": \"the new function lacks a docstring\"}\n",
    )
    .expect("capture");
    let text = std::fs::read_to_string(&manifest)
        .expect("manifest")
        .replace("reviewer = [\"sentinel-tool\"]", "reviewer = [\"sentinel-tool\", \"other-tool\"]")
        .replace(
            "[[analysis]]\nkind = \"fixture\"\nevidence = \"judge\"\n",
            &format!(
                "[reviewers.other-tool]\nkind = \"replay\"\nformat = \"jsonl\"\npath = \"captured-b.jsonl\"\nmissing = \"empty\"\ntool = \"Other tool\"\n\
                 [judges.alpha]\nprovider = \"openai\"\nbase-url = \"{}\"\nmodel = \"{JUDGE_MODEL}\"\nfamily = \"smollm2\"\nsamples = 3\n\
                 [[analysis]]\nkind = \"compare\"\naxis = \"reviewer\"\nmetrics = [\"recall\"]\nevidence = \"judge\"\n",
                server.url
            ),
        );
    let manifest = crate::write_manifest(&root, "compared.toml", &text);
    let out = tokio::task::spawn_blocking(move || {
        crate::runner(&root).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs")
    })
    .await
    .expect("joined");
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let mut seeds: Vec<u64> = server.chats().iter().filter_map(|c| c.body["seed"].as_u64()).collect();
    seeds.sort_unstable();
    assert_eq!(seeds, [0, 0, 3, 3, 6, 6], "two pairs, each asked three times");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results")).expect("json");
    let data = &results["analyses"][0]["data"];
    let comparison = &data["comparisons"][0];
    // The majorities: the first tool finds both changes' issues, the other only p-2's.
    assert_eq!(comparison["difference"].as_f64(), Some(-0.5), "{comparison}");
    // Weighed: p-1 is found with 2/3 and 1/3, so the difference is (1/3 − 2/3) / 2.
    let weighed = comparison["matching"]["difference"].as_f64().expect("weighed");
    assert!((weighed + 1.0 / 6.0).abs() < 1e-9, "{comparison}");
    assert_eq!((data["matching"]["judged"].as_u64(), data["matching"]["decisions"].as_u64()), (Some(2), Some(2)), "{}", data["matching"]);
    let md = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(md.contains("With judging uncertainty: each oracle finding the judges decided is weighed by their vote share"), "{md}");
    assert!(md.contains("2 decisions weighed, 2 of them by the judges, 2 borderline"), "{md}");
    // Each sample's values alone: on seed 0 the judge says yes to both tools' p-1 reports, on
    // seed 3 to the first tool's only, on seed 6 to neither.
    let samples: Vec<Vec<f64>> = data["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| c["judge_samples"].as_array().expect("judge samples").iter().map(|s| s["recall"]["subjects"]["p-1"].as_f64().unwrap_or(-1.0)).collect())
        .collect();
    assert_eq!(samples, vec![vec![1.0, 1.0, 0.0], vec![1.0, 0.0, 0.0]], "{}", data["cells"]);
    assert!(md.contains("`runner diff --metric M --judge-samples-pass K`"), "{md}");
    // The gate on each sample: two subjects can never be significant, so every sample passes.
    let out_dir = dir.path().join("out");
    let diff = |k: &str| {
        crate::runner(dir.path())
            .args(["diff"])
            .arg(&out_dir)
            .args(["--cell-a", "reviewer=sentinel-tool", "--cell-b", "reviewer=other-tool", "--metric", "recall", "--judge-samples-pass", k])
            .output()
            .expect("runs")
    };
    let gate = diff("2");
    assert!(gate.status.success(), "{}{}", crate::stdout_of(&gate), crate::stderr_of(&gate));
    assert!(crate::stdout_of(&gate).contains("passes in 3 of 3 judge samples (needs 2)"), "{}", crate::stdout_of(&gate));
    let too_many = diff("4");
    assert!(
        !too_many.status.success() && crate::stderr_of(&too_many).contains("the results record 3 judge samples; ask for 1 to 3"),
        "{}",
        crate::stderr_of(&too_many)
    );
}

/// `judge-pairs = "borderline"`: the judges are asked only about the decisions the default
/// rule's decision model is unsure of, and their majority settles them either way. p-1's report
/// is found by its words but unsure (probability about 0.68), p-2's found and sure; the judge,
/// asked three times, says yes on seed 0 only, so its majority takes p-1's find away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn borderline_judging_asks_the_judges_only_about_the_unsure_decisions() {
    let handler: Handler = Arc::new(|_, body| good(if body["seed"].as_u64() == Some(0) { "yes" } else { "no" }));
    let server = fake(Protocol::OpenAi, &[JUDGE_MODEL], handler).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let manifest = judged_matching_experiment(&root, "");
    // p-1's report is found by its words (two of its ten words are the golden comment's), but
    // the decision model is unsure of it; p-2's is found and sure.
    std::fs::write(
        root.join("captured.jsonl"),
        "{\"subject\": \"p-1\", \"file\": null, \"line\": null, \"message\": \"eval on code from the request lets anyone take over every server\"}\n\
         {\"subject\": \"p-2\", \"file\": null, \"line\": null, \"message\": \"the new function lacks a docstring\"}\n",
    )
    .expect("capture");
    let text = std::fs::read_to_string(&manifest).expect("manifest").replace(
        "[[analysis]]\nkind = \"fixture\"\nevidence = \"judge\"\n",
        &format!(
            "[judges.alpha]\nprovider = \"openai\"\nbase-url = \"{}\"\nmodel = \"{JUDGE_MODEL}\"\nfamily = \"smollm2\"\nsamples = 3\n\
             [[analysis]]\nkind = \"fixture\"\nevidence = \"judge\"\njudge-pairs = \"borderline\"\n",
            server.url
        ),
    );
    let manifest = crate::write_manifest(&root, "borderline.toml", &text);
    let out = tokio::task::spawn_blocking(move || {
        crate::runner(&root).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs")
    })
    .await
    .expect("joined");
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results")).expect("json");
    let analysis = &results["analyses"][0];
    let chats = server.chats();
    let seeds: Vec<u64> = chats.iter().filter_map(|c| c.body["seed"].as_u64()).collect();
    assert_eq!(seeds.len(), 3, "one pair, asked three times: {seeds:?}");
    assert!(chats.iter().all(|c| c.raw.contains("eval on code from the request") && !c.raw.contains("docstring")), "only p-1's unsure pair is asked");
    let by_case = &analysis["data"]["cells"][0]["by_case"];
    assert_eq!((by_case["p-1"]["tp"].as_u64(), by_case["p-2"]["tp"].as_u64()), (Some(0), Some(1)), "{by_case}");
    let rule = analysis["rule"].as_str().unwrap_or_default();
    assert!(rule.contains("except where the decision is borderline (probability 0.2–0.8") && rule.contains("judges asked about 1 pair, 0 ties"), "{rule}");
}
