#!/usr/bin/env python3
"""Judge nodes' scheduling overhead: do RQS v2's judge calls cost more than their model time?
Run from the repository root: `python3 bench/judges.py`.

A fake OpenAI-compatible judge (in this process, answering every chat completion with a
schema-valid verdict after a fixed LATENCY_MS) scores RUNS runs of the built-in `dry-run`
reviewer (one finding per run: the benchmark repository's diff has one hunk), two rubrics
each, at the judge's `max-concurrency` CONCURRENCY. Measured side by side, each the median
of ROUNDS cold executions on a fresh cache:

- reviews: the experiment without its `rqs` analysis (no judge node in the plan);
- judged: the same experiment with it;
- ideal judge time = calls × latency / concurrency.

overhead = judged − reviews − ideal; the cached re-run of the judged experiment is timed too.
"""

import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchrepo import make_repo, manifest_head

RUNS = int(os.environ.get("BENCH_RUNS", "128"))
LATENCY_MS = int(os.environ.get("BENCH_LATENCY_MS", "100"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "16"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "runner")


class FakeJudge(http.server.BaseHTTPRequestHandler):
    """Answers `GET /v1/models` and, after LATENCY_MS, every chat completion with a verdict."""

    calls = 0
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.endswith("/models"):
            self.reply({"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self.send_error(404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        time.sleep(LATENCY_MS / 1000)
        with FakeJudge.lock:
            FakeJudge.calls += 1
        content = json.dumps({"reason": "the code shows it", "verdict": "yes"})
        self.reply({
            "object": "chat.completion",
            "model": "fake",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        })


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def timed(args, cwd):
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    server = Server(("127.0.0.1", 0), FakeJudge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    reviews, judged, cached = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(tmp)
        base = manifest_head("bench-judges", repo, RUNS) + """[reviewer]
kind = "builtin"
name = "dry-run"
[report]
output = "out"
"""
        judge = f"""
[judges.fake]
provider = "openai"
base-url = "{url}"
model = "fake"
family = "fake"
max-concurrency = {CONCURRENCY}
[[analysis]]
kind = "rqs"
"""
        plain = os.path.join(tmp, "reviews.toml")
        with open(plain, "w") as f:
            f.write(base)
        with_judge = os.path.join(tmp, "judged.toml")
        with open(with_judge, "w") as f:
            f.write(base + judge)
        for r in range(ROUNDS):
            for manifest, out in ((plain, reviews), (with_judge, judged)):
                cache = os.path.join(tmp, f"cache-{os.path.basename(manifest)}-{r}")
                args = [BIN, "exec", "--quiet", "--jobs", str(CONCURRENCY), "--cache-dir", cache, manifest]
                out.append(timed(args, tmp))
                if manifest == with_judge:
                    cached.append(timed(args, tmp))
    server.shutdown()
    calls = FakeJudge.calls // ROUNDS
    ideal = calls * LATENCY_MS / 1000 / CONCURRENCY
    m_reviews, m_judged, m_cached = statistics.median(reviews), statistics.median(judged), statistics.median(cached)
    overhead = m_judged - m_reviews - ideal
    print(json.dumps({
        "runs": RUNS, "judge_calls": calls, "latency_ms": LATENCY_MS, "concurrency": CONCURRENCY, "rounds": ROUNDS,
        "reviews_s": round(m_reviews, 3), "judged_s": round(m_judged, 3), "judged_cached_s": round(m_cached, 3),
        "ideal_judge_s": round(ideal, 3), "overhead_s": round(overhead, 3),
        "overhead_per_call_ms": round(1000 * overhead / max(calls, 1), 3),
    }, indent=2))


if __name__ == "__main__":
    main()
