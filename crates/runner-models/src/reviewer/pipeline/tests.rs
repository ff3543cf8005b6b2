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
