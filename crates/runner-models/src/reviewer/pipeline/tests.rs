use super::*;

#[test]
fn timestamps_are_rfc3339_utc() {
    assert_eq!(utc_text(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(utc_text(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(utc_text(1_796_208_000_007), "2026-12-02T10:40:00.007Z");
}

fn stage_with(reviewer: &str, chars_per_token: f64) -> StageSpec {
    StageSpec {
        name: "s".into(),
        reviewer: reviewer.into(),
        role: Role::Review,
        instances: 1,
        share: Some(1.0),
        chars_per_token,
        family: None,
        prompt: None,
        system_prompt: None,
        severities: Vec::new(),
        categories: Vec::new(),
        cross_family: false,
        backend: None,
        reviewer_span: 0..0,
        family_span: 0..0,
    }
}

#[test]
fn a_call_reserves_its_prompt_and_gets_the_rest_of_its_share() {
    let a = Allowance { left: Some(600), share: 600, bytes_per_ktoken: 2000 };
    // 501 bytes at 2 bytes per token: 251 tokens (rounded up).
    assert_eq!(a.estimate(501), 251);
    assert_eq!(a.max_tokens(251, 1024), Some(349));
    assert_eq!(a.max_tokens(251, 200), Some(200), "never above the reviewer's own max-tokens");
    assert_eq!(a.max_tokens(599, 1024), Some(1));
    assert_eq!(a.max_tokens(600, 1024), None, "a prompt that takes all that is left is not sent");
    // A provider that reported no tokens: only the share bounds the call.
    let unknown = Allowance { left: None, share: 300, bytes_per_ktoken: 2000 };
    assert_eq!(unknown.max_tokens(100, 1024), Some(200));
    assert_eq!(a.key(), json!({"left": 600, "bytes_per_ktoken": 2000}));
}

#[test]
fn calibration_learns_the_fewest_bytes_per_token_per_reviewer() {
    let (smol, other) = (stage_with("smol", 2.5), stage_with("gemma", 2.0));
    let mut c = Calibration::default();
    assert_eq!(c.bytes_per_ktoken(&smol), 2500, "declared until a call reports usage");
    let answered = |bytes: u64, tokens: Option<u64>| Answer {
        prompt_bytes: Some(bytes),
        cost: Cost { prompt_tokens: tokens, completion_tokens: Some(1), ..Cost::default() },
        ..Answer::default()
    };
    c.learn(&smol, &answered(4000, Some(1000)));
    assert_eq!(c.bytes_per_ktoken(&smol), 3600, "4 bytes per token less the 10 % margin");
    c.learn(&smol, &answered(3000, Some(1000)));
    c.learn(&smol, &answered(5000, Some(1000)));
    assert_eq!(c.bytes_per_ktoken(&smol), 2700, "the densest prompt so far");
    c.learn(&smol, &answered(100, None));
    assert_eq!(c.bytes_per_ktoken(&smol), 2700, "a call without usage teaches nothing");
    assert_eq!(c.bytes_per_ktoken(&other), 2000, "per reviewer");
}

/// A run's call cache in memory.
#[derive(Default)]
struct Memory(std::sync::Mutex<BTreeMap<String, Value>>);

impl crate::reviewer::CallCache for Memory {
    fn lookup(&self, inputs: &Value) -> Option<Value> {
        self.0.lock().expect("lock").get(&inputs.to_string()).cloned()
    }

    fn store(&self, inputs: &Value, answer: &Value) -> Result<(), String> {
        self.0.lock().expect("lock").insert(inputs.to_string(), answer.clone());
        Ok(())
    }
}

/// An OpenAI-compatible fake serving model `m`, whose answer to the call with seed `s` is
/// `answer(s)`: its content and finish reason.
fn model_server(answer: impl Fn(u64) -> (&'static str, &'static str) + Send + Sync + 'static) -> crate::reviewer::llm::fake_server::FakeServer {
    use crate::reviewer::llm::fake_server::{FakeServer, Reply};
    FakeServer::start(move |path, body| match path {
        "/v1/models" => Reply::Json(200, json!({ "data": [{ "id": "m" }] })),
        "/v1/chat/completions" => {
            let (content, finish) = answer(body["seed"].as_u64().unwrap_or(0));
            Reply::Json(
                200,
                json!({
                    "choices": [{ "index": 0, "finish_reason": finish, "message": { "role": "assistant", "content": content } }],
                    "model": "m",
                    "usage": { "prompt_tokens": 10, "completion_tokens": 5 },
                }),
            )
        }
        _ => Reply::Json(404, json!({ "error": { "message": "File Not Found" } })),
    })
}

/// A pipeline of one review stage, `reviewers`, of `instances` calls of model `m` at `url`
/// (seeds 10, 11, …).
fn one_stage(url: &str, instances: u32) -> PipelineReviewer {
    let mut llm = crate::reviewer::llm::LlmSpec::new(crate::reviewer::llm::Protocol::OpenAi, &format!("{url}/v1"));
    llm.model = Some("m".into());
    llm.seed = Some(10);
    llm.rag_max_definitions = 0;
    let mut stage = stage_with("smol", 2.0);
    stage.name = "reviewers".into();
    stage.instances = instances;
    stage.share = None;
    stage.backend = Some(Backend::Llm(Box::new(llm)));
    PipelineReviewer::new(PipelineSpec::of_stages(vec![stage], None)).expect("pipeline")
}

#[tokio::test]
async fn a_stage_whose_every_call_failed_fails_the_run_and_one_with_a_success_does_not() {
    const CUT: (&str, &str) = ("{\"findings\": [{\"file\": \"calc.py\", \"line\": 2, \"message\": \"divi", "length");
    const GOOD: (&str, &str) = ("{\"findings\": []}", "stop");
    let memory = std::sync::Arc::new(Memory::default());
    let mut job = crate::reviewer::llm::fake_server::one_hunk_job(Cell { id: "c".into(), values: Default::default() });
    job.calls = Some(crate::reviewer::Calls(memory.clone()));
    // Every answer cut at the token limit: the run fails, as a model reviewer's would.
    let server = model_server(|_| CUT);
    let e = one_stage(&server.url, 2).review(&job).await.expect_err("a stage whose every call failed fails the run");
    let message = e.to_string();
    assert!(message.contains("every call of stage `reviewers` failed (2 of 2): call 1: ") && message.contains("; call 2: "), "{message}");
    assert_eq!(server.count("/v1/chat/completions"), 2);
    assert!(memory.0.lock().expect("lock").is_empty(), "the failed stage's calls are not cached: a later run asks again");
    // The first call's answer cut, the second's whole: the run succeeds and records the failure.
    let server = model_server(|seed| if seed == 10 { CUT } else { GOOD });
    let out = one_stage(&server.url, 2).review(&job).await.expect("a stage with a call that succeeded");
    assert_eq!(server.count("/v1/chat/completions"), 2, "both calls asked again");
    assert_eq!(out.counters.get("calls_failed"), Some(&1));
    assert!(out.schema_problems.iter().any(|p| p.contains("stage `reviewers` call 1 failed")), "{:?}", out.schema_problems);
    assert_eq!(memory.0.lock().expect("lock").len(), 2, "both calls cached once the stage succeeded");
    // Served from the cache, the run succeeds the same way without a request.
    let again = one_stage(&server.url, 2).review(&job).await.expect("from the cache");
    assert_eq!((server.count("/v1/chat/completions"), again.counters.get("calls_failed")), (2, Some(&1)));
}

#[test]
fn only_a_stage_whose_every_call_made_failed_fails() {
    let call = |instance: u32, error: Option<&str>| json!({ "instance": instance, "error": error });
    assert!(all_failed("s", &[]).is_none(), "a stage that made no call (all stopped) did not fail");
    assert!(all_failed("s", &[call(1, Some("cut")), call(2, None)]).is_none());
    let e = all_failed("s", &[call(1, Some("cut")), call(2, Some("not JSON")), call(3, Some("x")), call(4, Some("y"))]).expect("all failed");
    assert_eq!(e.to_string(), "every call of stage `s` failed (4 of 4): call 1: cut; call 2: not JSON; call 3: x; and 1 more");
}
