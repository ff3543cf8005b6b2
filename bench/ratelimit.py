#!/usr/bin/env python3
"""Throughput at a server's rate limit: how close does runner get to the ideal schedule of a
rate-limited OpenAI-compatible server, how many 429s does it meet, and does any run fail?
Run from the repository root: `python3 bench/ratelimit.py`.

CELLS runs of an `openai` reviewer (one request each) at `max-concurrency-per-endpoint`
CONCURRENCY and `--jobs` CONCURRENCY against `bench/mock_openai.py` in this process: answers
after LATENCY_MS, two token buckets (RPS requests per second with a burst of BURST; TPM
tokens per minute with a burst of TOKEN_BURST, 100 tokens a request). Per 429 mode
(`retry-after`, `no-retry-after`, `headers`), ROUNDS cold executions on a fresh cache and a
fresh server, each measured against

    ideal = max((CELLS - BURST) / RPS, (CELLS * 100 - TOKEN_BURST) / (TPM / 60)) + latency,

the time a client that sends each request the moment the buckets allow it would take (or,
with buckets too large to bind, ceil(CELLS / CONCURRENCY) × latency: the server's served
ideal at that concurrency).
RUNNER_BIN runs another build (an older one, for a before/after comparison) instead of
building this one.

BENCH_PLAIN_CLIENT=1 also times, per round and mode, a plain Python client of the same mock
(CONCURRENCY threads, one keep-alive connection each, the same number of requests): what the
mock itself serves, which the other figures can be read against.

BENCH_PROMPTFOO names a promptfoo CLI (e.g. `node_modules/.bin/promptfoo` of `npm install
promptfoo@0.123.1`, with Node.js >= 22 on PATH): each round then also runs promptfoo's own
scheduler at the same ceiling (`-j CONCURRENCY`, `--no-cache`) on the same number of requests
(one test per cell, an `openai:chat` provider at the mock), against a fresh server, side by
side: its wall time (start-up included, as runner's is), the evaluation time it reports
itself, 429s and errored tests.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_openai  # noqa: E402
from benchrepo import make_repo, manifest_head  # noqa: E402

CELLS = int(os.environ.get("BENCH_CELLS", "500"))
LATENCY_MS = int(os.environ.get("BENCH_LATENCY_MS", "100"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "16"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
RPS = float(os.environ.get("BENCH_RPS", "50"))
BURST = float(os.environ.get("BENCH_BURST", "10"))
TPM = float(os.environ.get("BENCH_TPM", "240000"))
TOKEN_BURST = float(os.environ.get("BENCH_TOKEN_BURST", "1000"))
TOKENS = 100
MODES = os.environ.get("BENCH_MODES", ",".join(mock_openai.MODES)).split(",")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("RUNNER_BIN") or os.path.join(ROOT, "target", "release", "runner")


def ideal_seconds():
    by_requests = max(0.0, CELLS - BURST) / RPS
    by_tokens = max(0.0, CELLS * TOKENS - TOKEN_BURST) / (TPM / 60.0)
    # Without a binding limit, the concurrency is: CELLS answers of LATENCY_MS, CONCURRENCY at once.
    by_concurrency = -(-CELLS // CONCURRENCY) * LATENCY_MS / 1000.0
    return max(max(by_requests, by_tokens) + LATENCY_MS / 1000.0, by_concurrency)


def manifest(tmp, repo, url):
    path = os.path.join(tmp, "limited.toml")
    with open(path, "w") as f:
        f.write(manifest_head("bench-ratelimit", repo, CELLS) + f"""[reviewer]
kind = "openai"
base-url = "{url}"
model = "mock"
unit = "change"
rag-symbol-max-definitions = 0
max-concurrency-per-endpoint = {CONCURRENCY}
[report]
output = "out"
""")
    return path


def one_round(tmp, repo, mode, r):
    server, limits, url = mock_openai.start(mode, RPS, BURST, TPM, TOKEN_BURST, TOKENS, LATENCY_MS)
    try:
        path = manifest(tmp, repo, url)
        cache = os.path.join(tmp, f"cache-{mode}-{r}")
        args = [BIN, "exec", "--json", "--jobs", str(CONCURRENCY), "--cache-dir", cache, path]
        start = time.perf_counter()
        done = subprocess.run(args, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
    finally:
        server.shutdown()
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    count = lambda kind: sum(1 for e in events if e.get("event") == kind)  # noqa: E731
    endpoint = next((e["endpoints"][0] for e in events if e.get("event") == "endpoints"), None)
    stats = limits.stats()
    return {
        "wall_s": wall,
        "exit": done.returncode,
        "finished": count("run_finished"),
        "failed": count("run_failed"),
        "throttled": stats["throttled"],
        "requests": stats["chats"],
        "limit": None if endpoint is None else (endpoint["final_limit"], endpoint["min_limit"], endpoint["max_limit"]),
        "held": None if endpoint is None else endpoint["held"],
    }


PROMPTFOO = os.environ.get("BENCH_PROMPTFOO")
PLAIN_CLIENT = os.environ.get("BENCH_PLAIN_CLIENT") == "1"


def plain_client_round(mode):
    """CELLS requests from CONCURRENCY threads, each on one keep-alive connection; a 429 is
    retried after its Retry-After (or 1 s). Returns the wall time."""
    import http.client
    import threading
    server, _limits, _url = mock_openai.start(mode, RPS, BURST, TPM, TOKEN_BURST, TOKENS, LATENCY_MS)
    port = server.server_address[1]
    body = json.dumps({"model": "mock", "messages": [{"role": "user", "content": "x" * 2000}], "max_tokens": TOKENS})
    left = [CELLS]
    lock = threading.Lock()

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port)
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            while True:
                conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
                answer = conn.getresponse()
                answer.read()
                if answer.status != 429:
                    break
                time.sleep(float(answer.getheader("Retry-After") or 1))

    try:
        start = time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - start
    finally:
        server.shutdown()


def promptfoo_round(tmp, mode, r):
    server, limits, url = mock_openai.start(mode, RPS, BURST, TPM, TOKEN_BURST, TOKENS, LATENCY_MS)
    work = os.path.join(tmp, f"promptfoo-{mode}-{r}")
    os.makedirs(work)
    tests = "\n".join(f"  - vars:\n      n: {i}" for i in range(1, CELLS + 1))
    config = os.path.join(work, "promptfooconfig.yaml")
    with open(config, "w") as f:
        f.write(f"""description: bench-ratelimit
prompts:
  - "Review change {{{{n}}}}"
providers:
  - id: openai:chat:mock
    config:
      apiBaseUrl: {url}
      apiKey: sk-bench
      max_tokens: {TOKENS}
tests:
{tests}
""")
    env = dict(os.environ, PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1", HOME=work,
               PROMPTFOO_CONFIG_DIR=os.path.join(work, ".promptfoo"))
    out = os.path.join(work, "out.json")
    args = [PROMPTFOO, "eval", "-c", config, "--no-cache", "-j", str(CONCURRENCY), "-o", out, "--no-progress-bar", "--no-table"]
    try:
        start = time.perf_counter()
        done = subprocess.run(args, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
    finally:
        server.shutdown()
    stats = limits.stats()
    try:
        with open(out) as f:
            result = json.load(f)["results"]["stats"]
    except (OSError, KeyError, ValueError):
        sys.exit(f"promptfoo wrote no results (exit {done.returncode}): {done.stderr[-2000:]}")
    return {"wall_s": wall, "exit": done.returncode, "eval_s": result.get("durationMs", 0) / 1000.0,
            "finished": result.get("successes", 0) + result.get("failures", 0), "failed": result.get("errors", 0),
            "throttled": stats["throttled"], "requests": stats["chats"]}


def main():
    if not os.environ.get("RUNNER_BIN"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    version = subprocess.run([BIN, "--version"], stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    ideal = ideal_seconds()
    results, promptfoo, plain = {}, {}, {}
    promptfoo_version = None
    if PROMPTFOO:
        promptfoo_version = subprocess.run([PROMPTFOO, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(tmp)
        for r in range(ROUNDS):
            for mode in MODES:
                results.setdefault(mode, []).append(one_round(tmp, repo, mode, r))
                if PROMPTFOO:
                    promptfoo.setdefault(mode, []).append(promptfoo_round(tmp, mode, r))
                if PLAIN_CLIENT:
                    plain.setdefault(mode, []).append(plain_client_round(mode))
    summary = {"runner": version, "bin": BIN, "cells": CELLS, "latency_ms": LATENCY_MS, "concurrency": CONCURRENCY, "rounds": ROUNDS,
               "rps": RPS, "burst": BURST, "tpm": TPM, "token_burst": TOKEN_BURST, "ideal_s": round(ideal, 3), "modes": {}}
    for mode, rounds in results.items():
        wall = statistics.median(x["wall_s"] for x in rounds)
        summary["modes"][mode] = {
            "wall_s": round(wall, 3),
            "over_ideal_pct": round((wall / ideal - 1) * 100, 1),
            "throttled_median": statistics.median(x["throttled"] for x in rounds),
            "failed_runs": [x["failed"] for x in rounds],
            "finished_runs": [x["finished"] for x in rounds],
            "exit_codes": [x["exit"] for x in rounds],
            "limit_final_min_max": [x["limit"] for x in rounds],
            "held": [x["held"] for x in rounds],
            "rounds_wall_s": [round(x["wall_s"], 3) for x in rounds],
        }
    if PLAIN_CLIENT:
        summary["plain_client"] = {mode: {"wall_s": round(statistics.median(w), 3), "rounds_wall_s": [round(x, 3) for x in w],
                                          "runner_over_pct": round((summary["modes"][mode]["wall_s"] / statistics.median(w) - 1) * 100, 1)}
                                   for mode, w in plain.items()}
    if PROMPTFOO:
        summary["promptfoo"] = {"version": promptfoo_version, "modes": {}}
        for mode, rounds in promptfoo.items():
            wall = statistics.median(x["wall_s"] for x in rounds)
            summary["promptfoo"]["modes"][mode] = {
                "wall_s": round(wall, 3),
                "over_ideal_pct": round((wall / ideal - 1) * 100, 1),
                "eval_s": round(statistics.median(x["eval_s"] for x in rounds), 3),
                "throttled_median": statistics.median(x["throttled"] for x in rounds),
                "failed_runs": [x["failed"] for x in rounds],
                "finished_runs": [x["finished"] for x in rounds],
                "rounds_wall_s": [round(x["wall_s"], 3) for x in rounds],
                "runner_speedup": round(wall / summary["modes"][mode]["wall_s"], 2),
            }
    print(json.dumps(summary, indent=2))
    print()
    print(f"| 429 mode | wall (median of {ROUNDS}) | over ideal {ideal:.2f} s | 429s (median) | failed runs (per round) | limit final / min / max |")
    print("|---|---:|---:|---:|---|---|")
    for mode, m in summary["modes"].items():
        limits = ", ".join("—" if l is None else f"{l[0]} / {l[1]} / {l[2]}" for l in m["limit_final_min_max"])
        failed = ", ".join(str(f) for f in m["failed_runs"])
        print(f"| {mode} | {m['wall_s']:.2f} s | +{m['over_ideal_pct']} % | {m['throttled_median']:g} | {failed} | {limits} |")
    if PROMPTFOO:
        print()
        print(f"| 429 mode | runner wall | promptfoo {promptfoo_version} wall (its own eval time) | promptfoo over ideal | promptfoo 429s | promptfoo errored tests | runner faster by |")
        print("|---|---:|---:|---:|---:|---|---:|")
        for mode, p in summary["promptfoo"]["modes"].items():
            failed = ", ".join(str(f) for f in p["failed_runs"])
            print(f"| {mode} | {summary['modes'][mode]['wall_s']:.2f} s | {p['wall_s']:.2f} s ({p['eval_s']:.2f} s) | +{p['over_ideal_pct']} % "
                  f"| {p['throttled_median']:g} | {failed} | {p['runner_speedup']}× |")


if __name__ == "__main__":
    main()
