//! `pipeline` reviewers (review strategies as stages of model calls) through the CLI, against
//! the fake OpenAI-compatible server of `judge_fake_server.rs`: which calls each stage makes,
//! what a stage's prompt receives, each call cached on its own (a changed synthesis prompt
//! re-runs only the synthesis calls), total budgets holding prompt and completion tokens (each
//! call's prompt reserved before it is sent, a call that cannot pay for it not made), the raw output of every call shown by `runner show`, and the
//! family rule refusing a verifier of the reviewers' own family.

use crate::judge_fake_server::{fake, Handler, Reply};
use runner::reviewer::llm::Protocol;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// The last line the request's schema allows (a reviewed line of the change).
fn allowed_line(body: &Value) -> u64 {
    let lines = &body["response_format"]["json_schema"]["schema"]["properties"]["findings"]["items"]["properties"]["line"]["enum"];
    lines.as_array().and_then(|l| l.last()).and_then(Value::as_u64).unwrap_or(1)
}

/// The UTF-8 bytes of a request's messages: what runner estimates its prompt tokens from.
fn prompt_bytes(body: &Value) -> u64 {
    body["messages"].as_array().map_or(0, |m| m.iter().filter_map(|m| m["content"].as_str()).map(|c| c.len() as u64).sum())
}

fn user_prompt(body: &Value) -> String {
    body["messages"].as_array().and_then(|m| m.iter().find(|m| m["role"] == "user")).and_then(|m| m["content"].as_str()).unwrap_or_default().to_string()
}

/// Which stage a request is from, by its prompt.
fn stage_of(body: &Value) -> &'static str {
    let prompt = user_prompt(body);
    if prompt.contains("Claims to verify") {
        "verify"
    } else if prompt.contains("MERGE") {
        "synthesize"
    } else {
        "review"
    }
}

/// Reviewers find an eval and a style nit; the verifier confirms the eval; the synthesis
/// answers one finding naming how many earlier findings it was shown.
fn handler() -> Handler {
    Arc::new(|_, body| {
        let line = allowed_line(body);
        let findings = match stage_of(body) {
            "review" => json!([
                {"line": line, "severity": "error", "category": "security", "message": "eval runs untrusted code"},
                {"line": line, "severity": "nitpick", "category": "style", "message": "comment style"},
            ]),
            "verify" => json!([{"line": line, "severity": "error", "category": "security", "message": "eval runs untrusted code (verified)"}]),
            _ => {
                let shown = user_prompt(body).matches("- `calc.py` line").count();
                json!([{"line": line, "severity": "error", "category": "security", "message": format!("synthesized from {shown} findings")}])
            }
        };
        Reply::Answer(json!({ "findings": findings }).to_string(), "stop")
    })
}

/// A `[reviewers.NAME]` table of an `openai` reviewer of `model` at `url`.
fn model_reviewer(name: &str, url: &str, model: &str) -> String {
    format!("[reviewers.{name}]\nkind = \"openai\"\nbase-url = \"{url}\"\nmodel = \"{model}\"\nunit = \"change\"\ntemperature = 0.0\nseed = 7\nrag-symbol-max-definitions = 0\nretries = 0\n")
}

/// A stage of pipeline `pipeline`, with its other keys in `extra` (one per line).
fn stage(pipeline: &str, name: &str, reviewer: &str, role: &str, extra: &str) -> String {
    format!("[[reviewers.{pipeline}.stages]]\nname = \"{name}\"\nreviewer = \"{reviewer}\"\nrole = \"{role}\"\n{extra}")
}

fn manifest(dir: &Path, url: &str, verifier_family: &str) -> std::path::PathBuf {
    let repo = crate::calc_repo(dir);
    let text = [
        format!("version = 1\n[experiment]\nname = \"strategies\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nreviewer = [\"single\", \"routine\", \"stopped\"]\n", repo.display()),
        model_reviewer("smol", url, "smol-model"),
        model_reviewer("qwen", url, "qwen-model"),
        "[reviewers.single]\nkind = \"pipeline\"\ntotal-budget = 2000\n".to_string(),
        stage("single", "one", "smol", "review", "share = 1.0\nprompt-chars-per-token = 16.0\n"),
        "[reviewers.routine]\nkind = \"pipeline\"\ntotal-budget = 2000\n".to_string(),
        stage("routine", "reviewers", "smol", "review", "instances = 2\nshare = 0.5\nfamily = \"smollm2\"\nprompt-chars-per-token = 16.0\n"),
        stage("routine", "verifier", "qwen", "verify", &format!("check-severity = [\"error\"]\nshare = 0.2\nprompt-chars-per-token = 16.0\nfamily = \"{verifier_family}\"\n")),
        stage("routine", "synthesis", "smol", "synthesize", "prompt = \"synthesis.hbs\"\nshare = 0.3\nprompt-chars-per-token = 16.0\n"),
        "[reviewers.stopped]\nkind = \"pipeline\"\ntotal-budget = 500\n".to_string(),
        stage("stopped", "many", "smol", "review", "instances = 3\nshare = 1.0\nprompt-chars-per-token = 16.0\n"),
        "[[analysis]]\nkind = \"budget\"\n[report]\noutput = \"out\"\n".to_string(),
    ]
    .concat();
    std::fs::write(
        dir.join("synthesis.hbs"),
        "MERGE these reviews.\n{{#each earlier}}{{#each findings}}\n- `{{file}}` line {{line}}: {{message}}{{/each}}{{/each}}\n",
    )
    .expect("prompt");
    crate::write_manifest(dir, "strategies.toml", &text)
}

fn args(words: &[&str], manifest: &Path) -> Vec<String> {
    words.iter().map(|s| s.to_string()).chain([manifest.display().to_string()]).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_stage_call_is_cached_on_its_own_and_budgets_stop_a_stage() {
    let server = fake(Protocol::OpenAi, &["smol-model", "qwen-model"], handler()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let manifest = manifest(&root, &server.url, "qwen");
    let cli = move |args: Vec<String>| {
        let root = root.clone();
        async move { tokio::task::spawn_blocking(move || crate::runner(&root).args(args).output().expect("runs")).await.expect("joined") }
    };
    let exec = ["exec", "--cache-dir", "cache", "--work-dir", "work"];

    // validate warns that the strategies' totals differ (`stopped` has 500, not 2000).
    let validated = cli(args(&["validate"], &manifest)).await;
    assert!(validated.status.success(), "{}", crate::stderr_of(&validated));
    let warnings = crate::stderr_of(&validated);
    assert!(warnings.contains("`single` has a total budget of 2000 tokens, `stopped` has a total budget of 500 tokens"), "{warnings}");
    let planned = cli(args(&["plan", "--cache-dir", "cache"], &manifest)).await;
    let text = crate::stdout_of(&planned);
    assert!(text.contains("routine: per run reviewers 2 × review, verifier ≤ 1 × verify, synthesis 1 × synthesize"), "{text}");
    assert!(
        text.contains("calls: reviewers 0 cached, 1 to run, 1 known once earlier calls run; verifier 0 cached, 0 to run, 1 known once earlier calls run; synthesis 0 cached, 0 to run, 1 known once earlier calls run"),
        "a budgeted call's allowance waits on what the call before it spends: {text}"
    );

    let out = cli(args(&exec, &manifest)).await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let chats = server.chats();
    let count = |stage: &str, chats: &[crate::judge_fake_server::Seen]| chats.iter().filter(|c| stage_of(&c.body) == stage).count();
    // single: 1; routine: 2 reviews, 1 verification, 1 synthesis; stopped: 2 of 3 (each call
    // spends 170 tokens of its 500; the third cannot pay for its prompt).
    assert_eq!((count("review", &chats), count("verify", &chats), count("synthesize", &chats)), (5, 1, 1), "{chats:?}");
    // Seeds move on per instance: single 7; routine 7, 8; stopped 7, 8.
    let mut seeds: Vec<u64> = chats.iter().map(|c| &c.body).filter(|b| stage_of(b) == "review").filter_map(|b| b["seed"].as_u64()).collect();
    seeds.sort_unstable();
    assert_eq!(seeds, [7, 7, 7, 8, 8], "fresh instances");
    let verify = chats.iter().find(|c| stage_of(&c.body) == "verify").expect("a verification");
    assert_eq!(verify.body["model"], "qwen-model");
    // The verifier's first call of its reviewer: its prompt at the declared 16 bytes per token.
    assert_eq!(verify.body["max_tokens"].as_u64(), Some(400 - prompt_bytes(&verify.body).div_ceil(16)));
    let claims = user_prompt(&verify.body);
    assert!(claims.contains("eval runs untrusted code") && !claims.contains("comment style"), "only error claims are verified: {claims}");

    // RESULTS.md: each strategy's total, allocation and provider-reported spend, within it.
    let results = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    let row = results.lines().find(|l| l.contains("`ref=HEAD~1,reviewer=routine`") && l.contains("reviewers 1000")).unwrap_or_default();
    assert!(row.contains("| 2000 | reviewers 1000, verifier 400, synthesis 600 | 1 | 680.0 | reviewers 340.0, verifier 170.0, synthesis 170.0 |"), "{results}");
    let stopped = results.lines().find(|l| l.contains("`ref=HEAD~1,reviewer=stopped`") && l.contains("many 500")).unwrap_or_default();
    assert!(stopped.contains("| 500 | many 500 | 1 | 340.0 | many 340.0 | many 2.0 | 1 | 0 | 0 | 0 |"), "{results}");
    let shown = cli(args(&["show", "--cache-dir", "cache", "--cell", "reviewer=routine"], &manifest)).await;
    let text = crate::stdout_of(&shown);
    assert!(
        text.contains("1 finding") && text.contains("synthesized from 3 findings"),
        "the synthesis saw the reviewers' two findings (the same from both) and the verified one: {text}"
    );
    assert!(text.contains("stage verifier (verify): 1 call, 170 of 400 tokens"), "{text}");

    // `runner show` prints every stage's calls with their raw answers.
    let shown = cli(args(&["show", "--cache-dir", "cache", "--cell", "reviewer=stopped"], &manifest)).await;
    let shown_text = crate::stdout_of(&shown);
    assert!(shown.status.success(), "{}", crate::stderr_of(&shown));
    assert!(shown_text.contains("stage many (review): 2 calls, 340 of 500 tokens, 1 stopped"), "{shown_text}");
    assert!(shown_text.contains("eval runs untrusted code"), "{shown_text}");

    // A changed synthesis prompt re-runs the synthesis call only.
    std::fs::write(
        dir.path().join("synthesis.hbs"),
        "MERGE these reviews, again.\n{{#each earlier}}{{#each findings}}\n- `{{file}}` line {{line}}: {{message}}{{/each}}{{/each}}\n",
    )
    .expect("prompt");
    let planned = cli(args(&["plan", "--cache-dir", "cache"], &manifest)).await;
    let text = crate::stdout_of(&planned);
    assert!(text.contains("reviewer.stages[2].reviewer.prompt"), "the miss is explained by the synthesis stage's prompt: {text}");
    assert!(text.contains("calls: reviewers 2 cached, 0 to run; verifier 1 cached, 0 to run; synthesis 0 cached, 1 to run"), "by stage: {text}");
    let before = server.chats().len();
    let out = cli(args(&exec, &manifest)).await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let new: Vec<_> = server.chats().into_iter().skip(before).collect();
    assert_eq!(new.len(), 1, "one new request: {new:?}");
    assert_eq!(stage_of(&new[0].body), "synthesize");
}

#[test]
fn a_verifier_of_the_reviewers_family_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = manifest(dir.path(), "http://127.0.0.1:1/v1", "smollm2");
    let out = crate::runner(dir.path()).args(["validate"]).arg(&manifest).output().expect("runs");
    assert!(!out.status.success());
    let err = crate::stderr_of(&out);
    assert!(err.contains("error: verify stage `verifier` is of the `smollm2` family, as review stage `reviewers` whose claims it checks"), "{err}");
    assert!(err.contains("strategies.toml:54:10)") && err.contains("1 problem"), "located at the verifier's family: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_failed_at_its_synthesis_repeats_no_finished_call() {
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let inner = handler();
    let flag = failing.clone();
    let server = fake(
        Protocol::OpenAi,
        &["smol-model", "qwen-model"],
        Arc::new(
            move |n, body| if stage_of(body) == "synthesize" && flag.load(std::sync::atomic::Ordering::SeqCst) { Reply::Status(503) } else { inner(n, body) },
        ),
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = manifest(dir.path(), &server.url, "qwen");
    let text = std::fs::read_to_string(&path).expect("manifest").replace("reviewer = [\"single\", \"routine\", \"stopped\"]", "reviewer = [\"routine\"]");
    let manifest = crate::write_manifest(dir.path(), "routine.toml", &text);
    let root = dir.path().to_path_buf();
    let exec = move || {
        let (root, manifest) = (root.clone(), manifest.clone());
        async move {
            tokio::task::spawn_blocking(move || {
                crate::runner(&root).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs")
            })
            .await
            .expect("joined")
        }
    };
    let out = exec().await;
    assert!(!out.status.success(), "the synthesis server fails: {}", crate::stderr_of(&out));
    let first: Vec<&'static str> = server.chats().iter().map(|c| stage_of(&c.body)).collect();
    assert_eq!(first, ["review", "review", "verify", "synthesize"], "{first:?}");
    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    let out = exec().await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let second: Vec<&'static str> = server.chats().iter().skip(first.len()).map(|c| stage_of(&c.body)).collect();
    assert_eq!(second, ["synthesize"], "the reviews and the verification come from the cache: {second:?}");
}

/// A `command` reviewer as a pipeline's review stage: its findings reach the synthesis prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_review_stage_feeds_a_model_synthesis() {
    use std::os::unix::fs::PermissionsExt;
    let server = fake(Protocol::OpenAi, &["smol-model"], handler()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = crate::calc_repo(dir.path());
    let tool = dir.path().join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho '{\"findings\":[{\"file\":\"calc.py\",\"line\":14,\"severity\":\"error\",\"category\":\"security\",\"message\":\"the tool flags eval\"}]}'\n").expect("script");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(dir.path().join("synthesis.hbs"), "MERGE.\n{{#each findings}}\n- `{{file}}` line {{line}}: {{message}}{{/each}}\n").expect("prompt");
    let text = [
        format!(
            "version = 1\n[experiment]\nname = \"tool-then-model\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nreviewer = [\"mixed\"]\n",
            repo.display()
        ),
        format!("[reviewers.tool]\nkind = \"command\"\nprogram = \"{}\"\n", tool.display()),
        model_reviewer("smol", &server.url, "smol-model"),
        "[reviewers.mixed]\nkind = \"pipeline\"\n".to_string(),
        stage("mixed", "tool", "tool", "review", ""),
        stage("mixed", "synthesis", "smol", "synthesize", "prompt = \"synthesis.hbs\"\n"),
        "[report]\noutput = \"out\"\n".to_string(),
    ]
    .concat();
    let manifest = crate::write_manifest(dir.path(), "mixed.toml", &text);
    let root = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        crate::runner(&root).args(["exec", "--cache-dir", "cache", "--work-dir", "work"]).arg(&manifest).output().expect("runs")
    })
    .await
    .expect("joined");
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let chats = server.chats();
    assert_eq!(chats.len(), 1, "the command stage asks no model: {chats:?}");
    assert!(user_prompt(&chats[0].body).contains("- `calc.py` line 14: the tool flags eval"), "{}", user_prompt(&chats[0].body));
}

/// A total budget holds prompt and completion tokens as the provider reports them: each call
/// reserves its estimated prompt from its stage's share (2 bytes per token declared, then the
/// fewest bytes per token the run's calls reported, less 10 %), gets the rest as `max_tokens`,
/// and is charged what the provider reported; a call that cannot pay for its prompt is not
/// made. Prompts of fixed size make the arithmetic exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_total_budget_holds_prompt_and_completion_tokens() {
    // The fake reports a token per 4 bytes of prompt and writes 150 tokens (fewer if capped).
    let server = fake(
        Protocol::OpenAi,
        &["smol-model"],
        Arc::new(|_, body| {
            let line = allowed_line(body);
            let text = json!({ "findings": [{"line": line, "severity": "error", "category": "security", "message": "eval runs untrusted code"}] }).to_string();
            Reply::Counted(text, "stop", prompt_bytes(body).div_ceil(4), body["max_tokens"].as_u64().unwrap_or(0).min(150))
        }),
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = crate::calc_repo(dir.path());
    // 100 + 400 bytes per review call, 100 + 300 per synthesis call.
    std::fs::write(dir.path().join("system.hbs"), "S".repeat(100)).expect("prompt");
    std::fs::write(dir.path().join("review.hbs"), format!("REVIEW {}", "x".repeat(393))).expect("prompt");
    std::fs::write(dir.path().join("merge.hbs"), format!("MERGE {}", "y".repeat(294))).expect("prompt");
    let text = [
        format!("version = 1\n[experiment]\nname = \"held\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nreviewer = [\"held\"]\n", repo.display()),
        model_reviewer("smol", &server.url, "smol-model"),
        "[reviewers.held]\nkind = \"pipeline\"\ntotal-budget = 1000\n".to_string(),
        stage("held", "r", "smol", "review", "instances = 3\nshare = 0.6\nprompt = \"review.hbs\"\nsystem-prompt = \"system.hbs\"\n"),
        stage("held", "s", "smol", "synthesize", "share = 0.4\nprompt = \"merge.hbs\"\nsystem-prompt = \"system.hbs\"\n"),
        "[[analysis]]\nkind = \"budget\"\n[report]\noutput = \"out\"\n".to_string(),
    ]
    .concat();
    let manifest = crate::write_manifest(dir.path(), "held.toml", &text);
    let root = dir.path().to_path_buf();
    let cli = move |words: &'static [&'static str]| {
        let (root, manifest) = (root.clone(), manifest.clone());
        async move { tokio::task::spawn_blocking(move || crate::runner(&root).args(words).arg(&manifest).output().expect("runs")).await.expect("joined") }
    };
    let out = cli(&["exec", "--cache-dir", "cache", "--work-dir", "work"]).await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    let chats = server.chats();
    let sent: Vec<(u64, u64)> = chats.iter().map(|c| (prompt_bytes(&c.body), c.body["max_tokens"].as_u64().unwrap_or(0))).collect();
    // r (600): 1st call 500 bytes at 2.0 → 250 reserved, 350 given; it spends 125 + 150.
    // Learned 500 / 125 = 4.0 bytes per token, less 10 %: 3.6. 2nd: 325 left, ⌈500 / 3.6⌉ =
    // 139 reserved, 186 given; spends 275. 3rd: 50 left < 139: not made.
    // s (400): ⌈400 / 3.6⌉ = 112 reserved, 288 given; spends 100 + 150.
    assert_eq!(sent, [(500, 350), (500, 186), (400, 288)], "{chats:?}");
    let results = std::fs::read_to_string(dir.path().join("out/RESULTS.md")).expect("RESULTS.md");
    let row = results.lines().find(|l| l.contains("`ref=HEAD~1,reviewer=held`") && l.contains("r 600")).unwrap_or_default();
    // Spent 550 + 250 = 800 of 1000; one call stopped; no run over its total.
    assert!(row.contains("| 1000 | r 600, s 400 | 1 | 800.0 | r 550.0, s 250.0 | r 2.0, s 1.0 | 1 | 0 | 0 | 0 |"), "{results}");
    let shown = cli(&["show", "--cache-dir", "cache", "--cell", "reviewer=held"]).await;
    let text = crate::stdout_of(&shown);
    assert!(text.contains("stage r (review): 2 calls, 550 of 600 tokens, 1 stopped"), "{text}");
    assert!(text.contains("call 3 of 3 needs about 139 prompt tokens, its stage's share has 50 left"), "{text}");

    // Everything, the call not made included, comes from the cache the second time.
    let planned = cli(&["plan", "--cache-dir", "cache"]).await;
    let text = crate::stdout_of(&planned);
    assert!(text.contains("calls: r 3 cached, 0 to run; s 1 cached, 0 to run"), "{text}");
    let out = cli(&["exec", "--cache-dir", "cache", "--work-dir", "work", "--refresh"]).await;
    assert!(out.status.success(), "{}", crate::stderr_of(&out));
    assert_eq!(server.chats().len(), 6, "a refresh asks again, with the same allowances");
    let again: Vec<u64> = server.chats().iter().skip(3).map(|c| c.body["max_tokens"].as_u64().unwrap_or(0)).collect();
    assert_eq!(again, [350, 186, 288]);
}
