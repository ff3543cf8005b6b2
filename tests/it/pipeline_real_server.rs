//! The bundled strategies experiment (`experiments/strategies.toml`: seed 002's single,
//! routine and high-risk strategies as `pipeline` reviewers) end to end against real
//! llama.cpp servers: SmolLM2-135M-Instruct for the reviewers and syntheses, Gemma-3-270M as
//! the verifier of another family (see `scripts/model-server/`). Tiny models answer poorly;
//! what is tested is the pipeline: every stage's calls made with the budget's `max_tokens`,
//! provider-reported tokens recorded per stage, a second execution served from the cache, and
//! `runner show` printing every call's raw answer.
//!
//! Ignored by a plain `cargo test`; run with `--ignored`, `RUNNER_LLAMA_URL` naming the
//! SmolLM2 server's OpenAI base URL and `RUNNER_GEMMA_URL` the Gemma one's, as `.ci/run` does:
//!
//! ```sh
//! scripts/model-server/start.sh smollm2-135m 8091
//! scripts/model-server/start.sh gemma3-270m 8092
//! RUNNER_LLAMA_URL=http://127.0.0.1:8091/v1 RUNNER_GEMMA_URL=http://127.0.0.1:8092/v1 \
//!   cargo test --test it pipeline_real_server -- --ignored
//! ```
//!
//! One case (case-01, a finding case) keeps it to at most nine calls; no bound here is wall time.

use crate::{project_root, runner};
use serde_json::Value;

fn url(var: &str) -> String {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!("{var} is not set: start the servers (scripts/model-server/start.sh smollm2-135m 8091, gemma3-270m 8092) and set RUNNER_LLAMA_URL and RUNNER_GEMMA_URL"),
    }
}

#[test]
#[ignore = "needs RUNNER_LLAMA_URL and RUNNER_GEMMA_URL (real llama.cpp servers; .ci/run starts them)"]
fn pipeline_real_server_strategies_run_end_to_end() {
    let (smol, gemma) = (url("RUNNER_LLAMA_URL"), url("RUNNER_GEMMA_URL"));
    let root = project_root();
    let dir = tempfile::tempdir().expect("tempdir");
    let experiments = root.join("experiments");
    // The bundled manifest on one case, its paths made absolute, its report in the temporary
    // directory.
    let text = std::fs::read_to_string(experiments.join("strategies.toml"))
        .expect("manifest")
        .replace("cases = [\"case-01\", \"case-02\", \"case-04\", \"case-06\"]", "cases = [\"case-01\"]")
        .replace("output = \"../results/strategies\"", "output = \"out\"")
        .replace("\"../", &format!("\"{}/", root.display()))
        .replace("\"prompts/", &format!("\"{}/prompts/", experiments.display()));
    assert!(text.contains("cases = [\"case-01\"]") && !text.contains("\"../"), "the manifest's layout changed: {text}");
    let manifest = crate::write_manifest(dir.path(), "strategies.toml", &text);
    let exec = || {
        runner(dir.path())
            .args(["exec", "--jobs", "1", "--cache-dir", "cache", "--work-dir", "work"])
            .arg(&manifest)
            .env("RUNNER_SMOLLM2_URL", &smol)
            .env("RUNNER_GEMMA3_URL", &gemma)
            .output()
            .expect("runs")
    };
    let out = exec();
    assert!(out.status.success(), "{}", crate::stderr_of(&out));

    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/results.json")).expect("results.json")).expect("json");
    let budget = results["analyses"].as_array().and_then(|a| a.iter().find(|x| x["kind"] == "budget")).cloned().expect("a budget analysis");
    let rows = budget["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 3, "{budget}");
    for row in &rows {
        assert_eq!(row["total_budget"], 12000, "{row}");
        // Prompts are reserved before each call: the provider-reported spend stays within.
        assert_eq!(row["runs_over_budget"], 0, "{row}");
        assert!(row["spent_per_run"].as_f64().is_some_and(|t| t <= 12000.0), "{row}");
        assert_eq!(row["runs"], 1, "{row}");
        assert_eq!(row["runs_without_tokens"], 0, "llama.cpp reports usage: {row}");
        assert!(row["spent_per_run"].as_f64().is_some_and(|t| t > 0.0), "{row}");
    }
    let calls = |strategy: &str, stage: &str| {
        rows.iter()
            .find(|r| r["cell"] == format!("reviewer={strategy}"))
            .and_then(|r| r["stages"].as_array())
            .and_then(|s| s.iter().find(|s| s["stage"] == stage))
            .and_then(|s| s["calls_per_run"].as_f64())
    };
    assert_eq!(calls("single", "reviewer"), Some(1.0));
    assert_eq!(calls("routine", "reviewers"), Some(2.0));
    assert_eq!(calls("routine", "synthesis"), Some(1.0));
    for lens in ["correctness", "trust", "lifecycle"] {
        assert_eq!(calls("high-risk", lens), Some(1.0), "{lens}");
    }
    assert!(calls("high-risk", "verifier").is_some_and(|n| n <= 1.0));

    // Every call's raw answer, start time and run are shown; a verifier call is Gemma's.
    let shown = runner(dir.path()).args(["show", "--cache-dir", "cache", "--json"]).arg(&manifest).output().expect("runs");
    assert!(shown.status.success(), "{}", crate::stderr_of(&shown));
    let shown: Value = serde_json::from_slice(&shown.stdout).expect("json");
    let stages: Vec<&Value> = shown["runs"].as_array().into_iter().flatten().flat_map(|r| r["stages"].as_array().into_iter().flatten()).collect();
    assert_eq!(stages.len(), 1 + 2 + 5, "{shown}");
    for call in stages.iter().flat_map(|s| s["calls"].as_array().into_iter().flatten()) {
        assert!(call["started_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{call}");
        assert!(call["run"].as_str().is_some_and(|r| r.contains("@case-01")), "{call}");
        assert!(call["prompt_tokens"].as_u64().is_some() && call["provider_ms"].as_f64().is_some(), "provider telemetry: {call}");
        assert!(!call["raw"].as_str().unwrap_or_default().is_empty(), "{call}");
    }
    if let Some(verifier) = stages.iter().find(|s| s["name"] == "verifier" && !s["calls"].as_array().is_none_or(Vec::is_empty)) {
        assert!(verifier["calls"][0]["raw"].as_str().is_some_and(|r| r.contains("gemma3-270m")), "{verifier}");
    }

    // A second execution makes no call: every run is cached.
    let again = exec();
    assert!(again.status.success(), "{}", crate::stderr_of(&again));
    let planned = runner(dir.path()).args(["plan", "--cache-dir", "cache"]).arg(&manifest).output().expect("runs");
    assert!(crate::stdout_of(&planned).contains("(3 cached, 0 to run)"), "{}", crate::stdout_of(&planned));
}
