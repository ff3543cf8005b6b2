//! The `openai` reviewer against a rate-limited OpenAI-compatible server: a fake that answers
//! the first request of every other cell with a 429 — with `Retry-After: 0`, without it, or
//! with `x-ratelimit-remaining-requests: 0` and a reset — and every other request in full.
//! Whether a request is limited depends on its body (the cell's seed), never on timing, so
//! the counts below are exact. `retries = 0`: a run succeeds only if 429s do not use up the
//! retry budget while the server serves other requests.

use super::fake_http::{read_request, write_json, Request};
use super::*;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};

/// What the fake saw and did.
#[derive(Default)]
struct Counts {
    chats: AtomicUsize,
    throttled: AtomicUsize,
    seeds: Mutex<HashSet<u64>>,
}

async fn serve(mut stream: TcpStream, counts: Arc<Counts>) -> std::io::Result<()> {
    while let Some(Request { method, path, body, .. }) = read_request(&mut stream).await? {
        match (method.as_str(), path.as_str()) {
            ("GET", "/v1/models") => write_json(&mut stream, 200, &json!({"object": "list", "data": [{"id": "mock", "object": "model"}]}), &[]).await?,
            ("POST", "/v1/chat/completions") => {
                counts.chats.fetch_add(1, Ordering::SeqCst);
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let seed = body["seed"].as_u64().unwrap_or(0);
                let first = counts.seeds.lock().expect("lock").insert(seed);
                if first && seed % 2 == 0 {
                    counts.throttled.fetch_add(1, Ordering::SeqCst);
                    let headers: Vec<(String, String)> = match (seed / 2) % 3 {
                        0 => vec![("Retry-After".into(), "0".into())],
                        1 => vec![],
                        _ => vec![("x-ratelimit-remaining-requests".into(), "0".into()), ("x-ratelimit-reset-requests".into(), "5ms".into())],
                    };
                    let error = json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}});
                    write_json(&mut stream, 429, &error, &headers).await?;
                    continue;
                }
                let answer = json!({
                    "object": "chat.completion",
                    "model": "mock",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{\"findings\":[]}"}}],
                    "usage": {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100},
                });
                let headers =
                    vec![("x-ratelimit-remaining-requests".to_string(), "100".to_string()), ("x-ratelimit-reset-requests".to_string(), "1s".to_string())];
                write_json(&mut stream, 200, &answer, &headers).await?;
            }
            _ => write_json(&mut stream, 404, &json!({"error": "not found"}), &[]).await?,
        }
    }
    Ok(())
}

async fn rate_limited_server() -> (String, Arc<Counts>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let c = c.clone();
            tokio::spawn(async move {
                let _ = serve(stream, c).await;
            });
        }
    });
    (url, counts)
}

const CELLS: u64 = 24;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_against_a_server_answering_429s_completes_and_the_summary_counts_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    let repo = calc_repo(&root);
    let (url, counts) = rate_limited_server().await;
    let seeds: Vec<String> = (1..=CELLS).map(|s| s.to_string()).collect();
    let manifest = write_manifest(
        &root,
        "limited.toml",
        &format!(
            "version = 1\n[experiment]\nname = \"limited\"\n[target]\nrepo = \"{}\"\n[matrix]\nref = [\"HEAD~1\"]\nseed = [{}]\n\
             [reviewer]\nkind = \"openai\"\nbase-url = \"{url}\"\nmodel = \"mock\"\nunit = \"change\"\nrag-symbol-max-definitions = 0\n\
             max-concurrency-per-endpoint = 8\nretries = 0\nretry-base-delay = \"1ms\"\nretry-max-delay = \"20ms\"\n\
             [[analysis]]\nkind = \"latency\"\n[report]\noutput = \"out\"\n",
            repo.display(),
            seeds.join(", ")
        ),
    );
    let (r, m) = (root.clone(), manifest.display().to_string());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
            .current_dir(&r)
            .args(["exec", &m, "--jobs", "8", "--cache-dir", "cache", "--work-dir", "work"])
            .output()
            .expect("runner runs")
    })
    .await
    .expect("join");
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "every run succeeds despite the 429s: {stderr}");
    assert!(stderr.contains(&format!("limited: {CELLS} runs: 0 from cache, {CELLS} ran, 0 failed, 0 skipped")), "{stderr}");

    let throttled = counts.throttled.load(Ordering::SeqCst);
    let chats = counts.chats.load(Ordering::SeqCst);
    assert_eq!(throttled as u64, CELLS / 2, "the first request of every even seed was limited");
    assert_eq!(chats as u64, CELLS + CELLS / 2, "each limited request was retried once");
    let line = stderr.lines().find(|l| l.contains("endpoint http://127.0.0.1:")).unwrap_or_else(|| panic!("an endpoint line: {stderr}"));
    assert!(line.contains(&format!("{chats} requests, {throttled} answered 429; concurrency settled at ")), "{line}");
    assert!(line.contains("ceiling 8"), "{line}");

    // The execution log holds the same as an NDJSON event.
    let log = std::fs::read_dir(root.join("work/executions")).expect("logs").filter_map(Result::ok).map(|e| e.path()).next().expect("one log");
    let events: Vec<Value> = std::fs::read_to_string(&log).expect("log").lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let endpoints = events.iter().find(|e| e["event"] == "endpoints").expect("an endpoints event");
    let e = &endpoints["endpoints"][0];
    assert_eq!((e["requests"].as_u64(), e["throttled"].as_u64(), e["ceiling"].as_u64()), (Some(chats as u64), Some(throttled as u64), Some(8)));
    let (min, max, last) = (e["min_limit"].as_u64().unwrap_or(0), e["max_limit"].as_u64().unwrap_or(0), e["final_limit"].as_u64().unwrap_or(0));
    assert!(min < 8, "a 429 cut the limit: {e}");
    assert!(1 <= min && min <= last && last <= max && max <= 8, "{e}");
    assert_eq!(count_events(&events, "run_finished") as u64, CELLS);
}
