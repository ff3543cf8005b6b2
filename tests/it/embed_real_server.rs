//! The embedding client against a real llama.cpp server in embedding mode (the `xllamacpp`
//! wheel serving all-MiniLM-L6-v2, converted to GGUF by `scripts/model-server/install.sh`).
//!
//! Ignored by a plain `cargo test` (listed as `ignored`, never passing silently); run them
//! with `--ignored` and `RUNNER_EMBED_URL` naming the server's OpenAI base URL, as `.ci/run`
//! does. Asked for without that variable, they fail and say so.
//!
//! ```sh
//! scripts/model-server/install.sh
//! scripts/model-server/start.sh minilm-l6-v2 8094
//! RUNNER_EMBED_URL=http://127.0.0.1:8094/v1 cargo test --test it embed_real_server -- --ignored
//! scripts/model-server/stop.sh 8094
//! ```
//!
//! `RUNNER_EMBED_MODEL` is the name the server answers to (default `minilm-l6-v2`, the alias
//! start.sh gives it); `RUNNER_MODELS_JSON` (default `.models/MODELS.json`) adds the model
//! file, its sha256 and dimension to the checks when it exists. Time limits only catch a hung
//! server.

use runner::judge::embed::{EmbedError, EmbedProtocol, Embedder, EmbedderSpec};
use runner::text::cosine;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn server() -> (String, String) {
    match std::env::var("RUNNER_EMBED_URL") {
        Ok(url) if !url.is_empty() => (url, std::env::var("RUNNER_EMBED_MODEL").unwrap_or_else(|_| "minilm-l6-v2".into())),
        _ => panic!("RUNNER_EMBED_URL is not set: start a server (scripts/model-server/start.sh minilm-l6-v2 8094) and set it to http://127.0.0.1:8094/v1"),
    }
}

fn models_json() -> Option<PathBuf> {
    let path = std::env::var("RUNNER_MODELS_JSON").map(PathBuf::from).unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join(".models/MODELS.json"));
    path.is_file().then_some(path)
}

fn embedder(f: impl FnOnce(&mut EmbedderSpec)) -> Embedder {
    let (url, model) = server();
    let mut spec = EmbedderSpec::new(EmbedProtocol::OpenAi, &url, &model);
    spec.models_json = models_json();
    spec.request_timeout = Duration::from_secs(600);
    f(&mut spec);
    Embedder::new(spec).expect("embedder")
}

fn texts(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

const NULL_ON_EMPTY: &str = "The function returns null on empty input.";
const NONE_WHEN_EMPTY: &str = "Returns None when the input is empty.";
const CMAKE: &str = "The build uses CMake.";

#[tokio::test]
#[ignore = "needs RUNNER_EMBED_URL (a real llama.cpp embedding server; .ci/run starts one)"]
async fn real_vectors_have_384_dimensions_and_rank_paraphrases_first() {
    let e = embedder(|_| {});
    let out = e.embed(&texts(&[NULL_ON_EMPTY, NONE_WHEN_EMPTY, CMAKE])).await.expect("embedded");
    assert_eq!(out.vectors.len(), 3);
    assert!(out.vectors.iter().all(|v| v.len() == 384), "dimensions: {:?}", out.vectors.iter().map(Vec::len).collect::<Vec<_>>());
    assert!(out.tokens > 0, "llama.cpp reports usage.prompt_tokens");
    let close = cosine(&out.vectors[0], &out.vectors[1]);
    let far = cosine(&out.vectors[0], &out.vectors[2]);
    assert!(close > far, "paraphrase {close} should beat an unrelated sentence {far}");
    // The server L2-normalizes (llama.cpp's default for /v1/embeddings).
    for v in &out.vectors {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "norm {norm}");
    }
}

#[tokio::test]
#[ignore = "needs RUNNER_EMBED_URL (a real llama.cpp embedding server; .ci/run starts one)"]
async fn real_same_text_gives_identical_vectors_alone_and_in_batches() {
    let e = embedder(|s| s.batch_size = 2);
    let list = texts(&[NULL_ON_EMPTY, CMAKE, NULL_ON_EMPTY, NONE_WHEN_EMPTY, NULL_ON_EMPTY]);
    let batched = e.embed(&list).await.expect("embedded");
    assert_eq!(batched.vectors[0], batched.vectors[2], "same text, two batches");
    assert_eq!(batched.vectors[0], batched.vectors[4]);
    let alone = e.embed(&texts(&[NULL_ON_EMPTY])).await.expect("embedded");
    assert_eq!(alone.vectors[0], batched.vectors[0], "same text alone");
    assert_eq!(batched.requests, 3, "5 texts in batches of 2");
}

#[tokio::test]
#[ignore = "needs RUNNER_EMBED_URL (a real llama.cpp embedding server; .ci/run starts one)"]
async fn real_identity_names_the_served_file() {
    let e = embedder(|_| {});
    let id = e.identity().await;
    assert!(id.get("unreachable").is_none(), "{id}");
    assert_eq!(id["protocol"], "openai");
    assert!(id["served"]["model_file"].as_str().is_some_and(|f| f.ends_with(".gguf")), "{id}");
    if models_json().is_some() {
        assert_eq!(id["served"]["model_file"], id["model_file"], "{id}");
        assert_eq!(id["dimension"], 384);
        assert!(id["model_sha256"].as_str().is_some_and(|s| s.len() == 64), "{id}");
    }
}

#[tokio::test]
#[ignore = "needs RUNNER_EMBED_URL (a real llama.cpp embedding server; .ci/run starts one)"]
async fn real_wrong_model_name_and_too_long_text_fail_clearly() {
    let e = embedder(|s| {
        s.model = "no-such-embedder".into();
        s.models_json = None;
    });
    let err = e.embed(&texts(&["x"])).await.expect_err("unknown model");
    assert!(matches!(&err, EmbedError::Unreachable(m) if m.contains("no-such-embedder")), "{err}");

    let e = embedder(|s| s.retries = 3);
    let long = vec!["word ".repeat(600)];
    let err = e.embed(&long).await.expect_err("longer than the context");
    assert!(err.to_string().contains("does not truncate"), "{err}");
}
