//! A rubric judge against a real llama.cpp server (the `xllamacpp` wheel serving
//! SmolLM2-135M-Instruct, see `scripts/model-server/`).
//!
//! Ignored by a plain `cargo test`; run with `--ignored` and `RUNNER_LLAMA_URL` naming the
//! server's OpenAI base URL, as `.ci/run` does. Asked for without that variable, it fails
//! and says so.
//!
//! ```sh
//! scripts/model-server/install.sh
//! scripts/model-server/start.sh smollm2-135m 8093
//! RUNNER_LLAMA_URL=http://127.0.0.1:8093/v1 cargo test --test it judge_real_server -- --ignored
//! scripts/model-server/stop.sh 8093
//! ```
//!
//! The only time limit is one a hung server reaches; the answer itself is whatever the model
//! says (a verdict, or unparseable after its retries), never checked against a wish.

use runner::judge::spec::ModelSettings;
use runner::judge::{blind_items, ClaimsGenerator, ClaimsSpec, Judge, JudgeSpec, Rubric, Verdict};
use runner::reviewer::llm::Protocol;
use runner::subject::diff::parse_unified_diff;
use runner::subject::Subject;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Only a hung server reaches this (a busy 2-core machine can write under a token a second).
const HUNG: Duration = Duration::from_secs(3600);

fn server() -> (String, String) {
    match std::env::var("RUNNER_LLAMA_URL") {
        Ok(url) if !url.is_empty() => (url, std::env::var("RUNNER_LLAMA_MODEL").unwrap_or_else(|_| "smollm2-135m".into())),
        _ => panic!("RUNNER_LLAMA_URL is not set: start a server (scripts/model-server/start.sh smollm2-135m 8093) and set it to http://127.0.0.1:8093/v1"),
    }
}

fn models_json() -> Option<PathBuf> {
    let path = std::env::var("RUNNER_MODELS_JSON").map(PathBuf::from).unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join(".models/MODELS.json"));
    path.is_file().then_some(path)
}

const DIFF: &str = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n";

fn settings(url: &str, model: &str) -> ModelSettings {
    let mut s = ModelSettings::new(Protocol::OpenAi, url, model, "smollm2");
    s.models_json = models_json();
    s.request_timeout = HUNG;
    s
}

#[tokio::test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
async fn real_validity_judgement() {
    let (url, model) = server();
    let subject = Subject {
        id: "calc".into(),
        repo_dir: PathBuf::from("/nonexistent"),
        base_sha: "a".into(),
        head_sha: "b".into(),
        diff: DIFF.into(),
        files: parse_unified_diff(DIFF),
        stet_error: None,
        review_task: None,
        spec: None,
    };
    let finding = runner::finding::Finding {
        id: "x".into(),
        file: "calc.py".into(),
        line: 10,
        range: None,
        severity: runner::finding::Severity::Error,
        category: runner::finding::Category::Bug,
        confidence: 1.0,
        message: "avg divides by zero when xs is empty: len(xs) is 0.".into(),
        suggestion: Some("Return 0 when xs is empty.".into()),
        cursor_uri: None,
        evidence_lines: None,
    };
    let items = blind_items(&[finding], &subject, 1);
    let judge = Judge::new(JudgeSpec::new("smol", settings(&url, &model))).expect("judge");
    let out = judge.judge(Rubric::Validity, &items[0].1).await.expect("the real server answers");
    assert!(matches!(out.verdict, Verdict::Yes | Verdict::No | Verdict::Unparseable));
    assert!(out.attempts >= 1 && out.attempts <= 3, "{out:?}");
    assert!(!out.raw.trim().is_empty(), "{out:?}");
    assert!(out.tokens.prompt > 100 && out.tokens.completion > 0, "{out:?}");
    if out.verdict != Verdict::Unparseable {
        // json_schema output: the answer is the schema's shape.
        let doc: serde_json::Value = serde_json::from_str(out.raw.trim()).expect("the answer is JSON");
        assert!(doc["reason"].is_string(), "{}", out.raw);
    }
    let provenance = judge.provenance().await.expect("provenance");
    assert!(provenance.get("model_file").and_then(|v| v.as_str()).is_some_and(|f| f.ends_with(".gguf")), "{provenance:?}");
    eprintln!("real validity judgement: {:?} after {} attempt(s) in {:.2} s, {:?}; raw {:?}", out.verdict, out.attempts, out.seconds, out.tokens, out.raw);
}

#[tokio::test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
async fn real_claims_answer() {
    let (url, model) = server();
    let mut s = settings(&url, &model);
    s.max_tokens = 96;
    let generator = ClaimsGenerator::new(ClaimsSpec { settings: s, ..ClaimsSpec::new(settings(&url, &model)) }).expect("generator");
    let out = generator.generate(DIFF).await.expect("the real server answers");
    assert!(!out.raw.trim().is_empty());
    assert!(out.tokens.prompt > 100 && out.tokens.completion > 0, "{out:?}");
    eprintln!("real claims answer in {:.2} s (truncated: {}), {:?}:\n{}", out.seconds, out.truncated, out.tokens, out.raw);
}

/// Oracle matching by a jury of one real model (SmolLM2-135M, as `[judges.NAME]` declares it)
/// in a whole experiment: the pair text does not settle is asked, the answer (whatever it is)
/// is cached and read back as a vote, and a frozen second execution finds every call cached.
#[test]
#[ignore = "needs RUNNER_LLAMA_URL (a real llama.cpp server; .ci/run starts one)"]
fn judge_real_server_matches_an_experiment_and_caches_the_votes() {
    let (url, model) = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let judges = format!("[judges.smol]\nprovider = \"openai\"\nbase-url = \"{url}\"\nmodel = \"{model}\"\nfamily = \"smollm2\"\nrequest-timeout = \"1h\"\n");
    let manifest = crate::judge_fake_server::judged_matching_experiment(dir.path(), &judges);
    let exec = || crate::runner(dir.path()).args(["exec", "--json", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs");
    let out = exec();
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let results =
        || -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json") };
    let first = results();
    let rule = first["analyses"][0]["rule"].as_str().unwrap_or_default().to_string();
    assert!(rule.contains("or a majority of judges `smol` say the two describe the same issue") && rule.contains("judges asked about 1 pair"), "{rule}");
    // Served from the cache: `--frozen` makes no call and fails on a missing one; the same scores.
    let again = crate::runner(dir.path()).args(["exec", "--frozen", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs");
    assert!(again.status.success(), "{}", crate::stderr_of(&again));
    assert_eq!(results()["analyses"][0]["data"], first["analyses"][0]["data"]);
    assert_eq!(results()["analyses"][0]["rule"], first["analyses"][0]["rule"]);
}
