//! The `openai` reviewer against a real llama.cpp server (the `xllamacpp` wheel serving
//! SmolLM2-135M-Instruct, see `scripts/model-server/`).
//!
//! Ignored by a plain `cargo test` (listed as `ignored`, never passing silently); run them
//! with `--ignored` and `RUNNER_LLAMA_URL` naming the server's OpenAI base URL, as `.ci/run`
//! does. Asked for without that variable, they fail and say so.
//!
//! ```sh
//! scripts/model-server/install.sh
//! scripts/model-server/start.sh smollm2-135m 8091
//! RUNNER_LLAMA_URL=http://127.0.0.1:8091/v1 cargo test --test it llm_real_server -- --ignored
//! scripts/model-server/stop.sh 8091
//! ```
//!
//! No bound here is one a busy machine can reach: the server has one slot, so the tests take
//! turns and each experiment runs one request at a time; time limits only catch a hung
//! server.
//!
//! `RUNNER_LLAMA_MODEL` is the name the server answers to (default `smollm2-135m`, the alias
//! start.sh gives it); `RUNNER_MODELS_JSON` (default `.models/MODELS.json`) adds the model
//! file's sha256 to the provenance checks when it exists.

use super::git;
use runner::matrix::AxisValue;
use runner::matrix::Cell;
use runner::reviewer::llm::{LlmReviewer, LlmSpec, OnTruncation, Protocol};
use runner::reviewer::{ReviewError, ReviewJob, Reviewer};
use runner::subject::diff::parse_unified_diff;
use runner::subject::Subject;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// One llama.cpp server with one slot: these tests take turns (the rest of the binary runs on).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Only a hung server reaches this: a 2-core machine shared with other builds was measured
/// writing 0.4 tokens a second, so a 1,500-token answer can take an hour.
const HUNG: Duration = Duration::from_secs(4 * 3600);

/// The server's URL and model name; these tests only run when asked for, so a missing URL
/// is a failure, not a skip.
fn server() -> (String, String) {
    match std::env::var("RUNNER_LLAMA_URL") {
        Ok(url) if !url.is_empty() => (url, std::env::var("RUNNER_LLAMA_MODEL").unwrap_or_else(|_| "smollm2-135m".into())),
        _ => panic!("RUNNER_LLAMA_URL is not set: start a server (scripts/model-server/start.sh smollm2-135m 8091) and set it to http://127.0.0.1:8091/v1"),
    }
}

fn models_json() -> Option<PathBuf> {
    let path = std::env::var("RUNNER_MODELS_JSON").map(PathBuf::from).unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join(".models/MODELS.json"));
    path.is_file().then_some(path)
}

/// A calc.py change (an `avg` that calls `div`, defined outside the hunk), as a real
/// two-commit repository.
fn subject(dir: &Path) -> Arc<Subject> {
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("calc.py"), "def div(a, b):\n    return a / b\n\n\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
        .expect("write");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "base"]);
    std::fs::write(dir.join("calc.py"), "def div(a, b):\n    return a / b\n\n\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef avg(xs):\n    return div(sum(xs), len(xs))\n").expect("write");
    git(dir, &["commit", "-qam", "avg"]);
    let diff = git(dir, &["diff", "--no-color", "--no-ext-diff", "HEAD~1..HEAD"]) + "\n";
    Arc::new(Subject {
        id: "calc".into(),
        repo_dir: dir.to_path_buf(),
        base_sha: git(dir, &["rev-parse", "HEAD~1"]),
        head_sha: git(dir, &["rev-parse", "HEAD"]),
        files: parse_unified_diff(&diff),
        stet_error: None,
        diff,
        review_task: Some("Review the new averaging helper.".into()),
        spec: Some("avg(xs) returns the arithmetic mean of xs; avg([]) returns 0.".into()),
    })
}

fn spec(url: &str, f: impl FnOnce(&mut LlmSpec)) -> LlmSpec {
    let mut s = LlmSpec::new(Protocol::OpenAi, url);
    s.temperature = Some(0.7);
    s.seed = Some(42);
    s.seed_per_repeat = true;
    // Enough for the schema's worst case (3 × (160 + 160 characters + keys)): the grammar
    // bounds the answer, so it cannot be cut at the limit.
    s.max_tokens = 1500;
    s.max_findings = 3;
    s.message_max_chars = 160;
    s.suggestion_max_chars = 160;
    s.rag_max_definitions = 5;
    s.models_json = models_json();
    s.request_timeout = HUNG;
    f(&mut s);
    s
}

fn job(model: &str, subject: Arc<Subject>, repeat: u32) -> ReviewJob {
    let cell = Cell { id: format!("model={model}"), values: [("model".to_string(), AxisValue::Str(model.into()))].into_iter().collect() };
    ReviewJob { cell, repeat, subject, timeout: HUNG, calls: None }
}

#[tokio::test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
async fn real_structured_output_usage_and_provenance() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (url, model) = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = subject(dir.path());
    let reviewer = LlmReviewer::new(spec(&url, |_| {})).expect("reviewer");
    let out = reviewer.review(&job(&model, subject.clone(), 1)).await.expect("the real server reviews the change");
    // Usage and llama.cpp's timings are read.
    assert!(out.cost.prompt_tokens.unwrap_or(0) > 100, "{:?}", out.cost);
    assert!(out.cost.completion_tokens.unwrap_or(0) > 0, "{:?}", out.cost);
    assert!(out.cost.prompt_eval_ms.unwrap_or(0.0) > 0.0 && out.cost.eval_ms.unwrap_or(0.0) > 0.0, "{:?}", out.cost);
    assert_eq!(out.cost.requests, 1);
    // Structured output: the answer was JSON of the schema, every line inside the change.
    let raw: serde_json::Value = serde_json::from_str(&out.raw).expect("raw is JSON");
    let answer = raw["units"][0]["answers"][0]["text"].as_str().expect("answer text");
    let doc: serde_json::Value = serde_json::from_str(answer.trim()).expect("the answer is JSON (json_schema output)");
    assert!(doc["findings"].is_array(), "{answer}");
    assert_eq!(out.counters.get("findings_dropped_outside_hunk").copied().unwrap_or(0), 0);
    for f in &out.findings {
        assert_eq!(f.file, "calc.py");
        assert!((8..=14).contains(&f.line), "the hunk's new lines are 8..=14: {f:?}");
        assert_eq!(f.id, runner::finding::stet_finding_id(&f.file, f.line, f.range, &runner::finding::collapse_whitespace(&f.message)));
    }
    // The RAG definition of `div` (outside the change) reached the prompt.
    assert_eq!(out.counters.get("rag_definitions").copied(), Some(1), "{:?}", out.counters);
    // Provenance: what the server says it loaded.
    assert!(out.provenance.get("model_file").and_then(|v| v.as_str()).is_some_and(|f| f.ends_with(".gguf")), "{:?}", out.provenance);
    assert!(out.provenance.contains_key("quantization"), "{:?}", out.provenance);
    if models_json().is_some() {
        assert!(out.provenance.get("model_sha256").and_then(|v| v.as_str()).is_some_and(|s| s.len() == 64), "{:?}", out.provenance);
    }
    eprintln!("real review: {} findings, cost {:?}, provenance {:?}", out.findings.len(), out.cost, out.provenance);
}

#[tokio::test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
async fn real_seed_determinism() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (url, model) = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = subject(dir.path());
    let reviewer = LlmReviewer::new(spec(&url, |_| {})).expect("reviewer");
    // Same repeat, same seed (42), temperature 0.7: the same answer and the same findings.
    let a = reviewer.review(&job(&model, subject.clone(), 1)).await.expect("first");
    let b = reviewer.review(&job(&model, subject.clone(), 1)).await.expect("second");
    assert_eq!(a.raw, b.raw, "same key, same answer");
    assert_eq!(a.findings, b.findings);
    assert_eq!(a.provenance["seed"], serde_json::json!(42));
    let c = reviewer.review(&job(&model, subject, 2)).await.expect("third");
    assert_eq!(c.provenance["seed"], serde_json::json!(43), "seed-per-repeat");
    eprintln!("repeat 2 (seed 43) answered {} the seed-42 answer", if c.raw == a.raw { "the same as" } else { "differently from" });
}

#[tokio::test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
async fn real_truncation_fails_clearly_or_is_continued() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (url, model) = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let subject = subject(dir.path());
    let cut = LlmReviewer::new(spec(&url, |s| s.max_tokens = 8)).expect("reviewer");
    let err = cut.review(&job(&model, subject.clone(), 1)).await.expect_err("8 tokens cannot hold the answer");
    let text = err.to_string();
    assert!(matches!(err, ReviewError::Failed { .. }), "{err:?}");
    assert!(text.contains("max-tokens = 8") && text.contains("`length`") && text.contains("calc.py"), "{text}");

    // Continuing: llama.cpp continues the partial answer (the assistant turn) under the same
    // grammar; the pieces join into one JSON answer.
    let cont = LlmReviewer::new(spec(&url, |s| {
        s.max_tokens = 48;
        s.on_truncation = OnTruncation::Continue;
        s.max_continuations = 12;
    }))
    .expect("reviewer");
    match cont.review(&job(&model, subject, 1)).await {
        Ok(out) => {
            assert!(out.counters["continuations"] >= 1, "{:?}", out.counters);
            eprintln!("continued {} times; {} findings", out.counters["continuations"], out.findings.len());
        }
        Err(e) => assert!(e.to_string().contains("still cut after 12 continuations"), "{e}"),
    }
}

#[tokio::test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
async fn real_wrong_model_name_fails_fast() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (url, model) = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let reviewer = LlmReviewer::new(spec(&url, |_| {})).expect("reviewer");
    let err = reviewer.review(&job("no-such-model", subject(dir.path()), 1)).await.expect_err("unknown model");
    assert!(err.is_unreachable(), "{err:?}");
    assert!(err.to_string().contains("no-such-model") && err.to_string().contains(&model) && err.to_string().contains(&url), "{err}");
}

#[test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
fn real_experiment_is_served_from_the_cache_without_a_server() {
    let _turn = ONE_AT_A_TIME.blocking_lock();
    let (url, model) = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/quickstart");
    let models_json = models_json().map(|p| format!("models-json = \"{}\"\n", p.display())).unwrap_or_default();
    let manifest = format!(
        "version = 1\n[experiment]\nname = \"real-llama\"\n[target]\ncorpus = \"{}\"\ncases = [\"case-05\"]\nunseal-holdout = true\n[matrix]\nmodel = [\"{model}\"]\nrag_symbol_max_definitions = [0, 5]\n[reviewer]\nkind = \"openai\"\nbase-url = \"${{RUNNER_REAL_URL:-{url}}}\"\ntemperature = 0.7\nseed = 5\nunit = \"file\"\nmax-tokens = 1024\nmax-findings = 3\nmax-concurrency = 1\ntimeout = \"4h\"\nrequest-timeout = \"4h\"\nmessage-max-chars = 160\nsuggestion-max-chars = 80\n{models_json}[[analysis]]\nkind = \"latency\"\n[report]\noutput = \"out\"\n",
        corpus.display()
    );
    std::fs::write(root.join("real.toml"), manifest).expect("manifest");
    let run = |extra: &[&str], url_override: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_runner"));
        cmd.current_dir(root).args(["exec", "real.toml", "--cache-dir", "cache", "--work-dir", "work"]).args(extra);
        match url_override {
            Some(u) => cmd.env("RUNNER_REAL_URL", u),
            None => cmd.env_remove("RUNNER_REAL_URL"),
        };
        cmd.output().expect("runner runs")
    };
    let live = run(&[], None);
    assert_eq!(live.status.code(), Some(0), "{}", String::from_utf8_lossy(&live.stderr));
    let results = std::fs::read_to_string(root.join("out/RESULTS.md")).expect("RESULTS.md");
    assert!(results.contains("quantization"), "{results}");

    // No server at that URL: the cache serves everything (plain and frozen), byte for byte.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let dead = format!("http://127.0.0.1:{port}/v1");
    for extra in [&[][..], &["--frozen"][..]] {
        let again = run(extra, Some(&dead));
        assert_eq!(again.status.code(), Some(0), "{extra:?}: {}", String::from_utf8_lossy(&again.stderr));
        assert_eq!(std::fs::read_to_string(root.join("out/RESULTS.md")).expect("RESULTS.md"), results, "{extra:?}");
    }
    // A fresh cache and that dead URL: exit 2, naming it.
    let fresh = {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_runner"));
        cmd.current_dir(root).args(["exec", "real.toml", "--cache-dir", "cache-empty", "--work-dir", "work"]).env("RUNNER_REAL_URL", &dead);
        cmd.output().expect("runner runs")
    };
    assert_eq!(fresh.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&fresh.stderr).contains(&dead));
}
