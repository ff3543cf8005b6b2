//! Reading `openai` and `ollama` reviewer tables from a whole manifest.

use crate::reviewer::llm::spec::{OnTruncation, Protocol, UnitKind};
use std::path::Path;
use std::time::Duration;

const HEAD: &str = "version = 1\n[experiment]\nname = \"x\"\n[target]\ncorpus = \"c\"\n[report]\noutput = \"out\"\n";

fn parse(body: &str) -> Result<crate::manifest::Manifest, String> {
    crate::manifest::parse(Path::new("m.toml"), &format!("{HEAD}{body}")).map_err(|e| e.to_plain())
}

#[test]
fn a_full_openai_table_reads() {
    let m = parse(
        "[matrix]\nmodel = [\"a\", \"b\"]\ntemperature = [0.7]\n[reviewer]\nkind = \"openai\"\nbase-urls = [\"http://h1:1/v1\", \"${X_URL:-http://h2:2/v1}\"]\napi-key-env = \"MY_KEY\"\nseed = 7\nseed-per-repeat = true\nmax-tokens = 256\nunit = \"file\"\non-truncation = \"continue\"\nmax-concurrency-per-endpoint = 2\nretries = 1\nretry-base-delay = \"10ms\"\nrequest-timeout = \"2m\"\n[reviewer.endpoints]\nb = \"http://h3:3/v1\"\n[reviewer.provenance.a]\nsha256 = \"abc\"\nquantization = \"Q4_1\"\n",
    )
    .expect("valid");
    let crate::reviewer::spec::ReviewerKindSpec::Llm(spec) = m.reviewers.entries.into_iter().next().expect("one reviewer").spec.kind else { panic!("llm") };
    assert_eq!(spec.protocol, Protocol::OpenAi);
    assert_eq!(spec.base_urls.len(), 2);
    assert_eq!(spec.endpoints["b"], vec!["http://h3:3/v1".to_string()]);
    assert_eq!(spec.seed, Some(7));
    assert!(spec.seed_per_repeat);
    assert_eq!(spec.unit, UnitKind::File);
    assert_eq!(spec.on_truncation, OnTruncation::Continue);
    assert_eq!(spec.retry_base_delay, Duration::from_millis(10));
    assert_eq!(spec.request_timeout, Duration::from_secs(120));
    assert_eq!(spec.provenance["a"]["quantization"], "Q4_1");
    assert_eq!(spec.prompt.name, "default");
}

#[test]
fn every_problem_is_reported_with_its_location() {
    let err = parse("[matrix]\nx = [1]\n[reviewer]\nkind = \"openai\"\nbase-url = \"localhost:8080\"\nnum-ctx = 4096\nunit = \"line\"\napi-key-env = \"sk-123\"\nprompt = \"missing.hbs\"\nretry-base-delay = \"soon\"\non-truncation = \"ignore\"\nbogus = 1\n").expect_err("invalid");
    for needle in [
        "needs a model",
        "`localhost:8080` is not an http(s) URL",
        "`num-ctx` applies to `ollama` reviewers only",
        "unknown unit `line`",
        "`api-key-env` must name an environment variable",
        "failed to read `prompt` template",
        "`retry-base-delay` must be a duration",
        "unknown `on-truncation` value `ignore`",
        "unknown key `bogus`",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    assert!(err.contains("m.toml:12:"), "located: {err}");
}

#[test]
fn ollama_defaults() {
    let m = parse("[matrix]\nmodel = [\"qwen3:8b\"]\n[reviewer]\nkind = \"ollama\"\nnum-ctx = 8192\n").expect("valid");
    let crate::reviewer::spec::ReviewerKindSpec::Llm(spec) = m.reviewers.entries.into_iter().next().expect("one reviewer").spec.kind else { panic!("llm") };
    assert_eq!(spec.base_urls, vec!["http://localhost:11434".to_string()]);
    assert_eq!(spec.num_ctx, Some(8192));
    assert_eq!(spec.unit, UnitKind::Hunk);
    assert_eq!(spec.rag_max_definitions, 10);
}
