//! The floor of the overhead check: `--requests` chat completions to the mock at
//! `--concurrency` in flight, on keep-alive connections, each answer read and parsed as JSON,
//! and nothing else (no subject, no cache, no report). Usage:
//! `floor-client PORT [REQUESTS] [CONCURRENCY]` (defaults 500 and 16).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let port = args.next().ok_or("usage: floor-client PORT [REQUESTS] [CONCURRENCY]")?;
    let number = |arg: Option<String>, default: usize| arg.map_or(Ok(default), |a| a.parse::<usize>().map_err(|e| format!("`{a}`: {e}")));
    let requests = number(args.next(), 500)?;
    let concurrency = number(args.next(), 16)?.max(1);
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    // The body floor.sh gives curl: one user message of 1,500 characters.
    let body = serde_json::json!({"model": "model-0", "temperature": 0, "messages": [{"role": "user", "content": "x".repeat(1500)}]}).to_string();
    let client = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build().map_err(|e| e.to_string())?;
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, body, next) = (client.clone(), url.clone(), body.clone(), next.clone());
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < requests {
                    let answer = client.post(&url).header("content-type", "application/json").body(body.clone()).send().await.map_err(|e| e.to_string())?;
                    let bytes = answer.error_for_status().map_err(|e| e.to_string())?.bytes().await.map_err(|e| e.to_string())?;
                    serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| e.to_string())?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for worker in workers {
        worker.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}
