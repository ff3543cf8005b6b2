#!/usr/bin/env python3
"""A rate-limited OpenAI-compatible server (Python stdlib only), for benchmarks.

It answers `GET /v1/models` and `POST /v1/chat/completions` (a schema-valid
`{"findings":[]}` after LATENCY_MS, with `usage`), and enforces two token buckets the
way hosted APIs do: requests per second with a burst, and tokens per minute with a burst
(each request costs TOKENS_PER_REQUEST tokens, taken when it arrives). A request either
bucket cannot pay for is answered at once with 429, in one of three modes:

- `retry-after`: with `Retry-After` in whole seconds (rounded up, at least 1), as most
  servers send it;
- `no-retry-after`: with no hint at all;
- `headers`: no `Retry-After`, but OpenAI's `x-ratelimit-limit-*`, `x-ratelimit-remaining-*`
  and `x-ratelimit-reset-*` (time until the bucket is full again: `1s`, `250ms`, `1m2s`) on
  every answer, 200 and 429 alike.

`GET /stats` returns what it did: `{"admitted", "throttled", "chats", "service_s_sum"}` (the summed
seconds from each admitted request's arrival to its answer written).

Standalone: `python3 bench/mock_openai.py --mode headers --port 8099` prints its base URL.
"""

import argparse
import http.server
import json
import math
import threading
import time

MODES = ("retry-after", "no-retry-after", "headers")


class Bucket:
    """A token bucket: `capacity` tokens, refilled at `rate` per second, full at the start."""

    def __init__(self, rate, capacity):
        self.rate = float(rate)
        self.capacity = float(capacity)
        self.level = float(capacity)
        self.at = time.monotonic()

    def refill(self, now):
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    def wait_for(self, amount):
        """Seconds until `amount` tokens are there (0 when they are)."""
        return max(0.0, (amount - self.level) / self.rate)

    def until_full(self):
        return (self.capacity - self.level) / self.rate


def go_duration(seconds):
    """A duration the way OpenAI writes resets: `20ms`, `1.5s`, `6m0s`."""
    if seconds < 1:
        return f"{max(1, math.ceil(seconds * 1000))}ms"
    if seconds < 60:
        return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{int(rest)}s"


class Limits:
    def __init__(self, mode, rps, burst, tpm, token_burst, tokens_per_request, latency_ms):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.mode = mode
        self.requests = Bucket(rps, burst)
        self.tokens = Bucket(tpm / 60.0, token_burst)
        self.rpm_limit = int(rps * 60)
        self.tpm_limit = int(tpm)
        self.cost = tokens_per_request
        self.latency = latency_ms / 1000.0
        self.lock = threading.Lock()
        self.admitted = 0
        self.throttled = 0
        self.chats = 0
        self.service_s_sum = 0.0

    def take(self):
        """(admitted, seconds to wait, rate headers) for one chat request arriving now."""
        with self.lock:
            now = time.monotonic()
            self.chats += 1
            self.requests.refill(now)
            self.tokens.refill(now)
            wait = max(self.requests.wait_for(1), self.tokens.wait_for(self.cost))
            admitted = wait == 0
            if admitted:
                self.requests.level -= 1
                self.tokens.level -= self.cost
                self.admitted += 1
            else:
                self.throttled += 1
            headers = {
                "x-ratelimit-limit-requests": str(self.rpm_limit),
                "x-ratelimit-limit-tokens": str(self.tpm_limit),
                "x-ratelimit-remaining-requests": str(int(self.requests.level)),
                "x-ratelimit-remaining-tokens": str(int(self.tokens.level)),
                "x-ratelimit-reset-requests": go_duration(self.requests.until_full()),
                "x-ratelimit-reset-tokens": go_duration(self.tokens.until_full()),
            }
            return admitted, wait, headers

    def served(self, seconds):
        """Counts an admitted request's service time, from its arrival to its answer written."""
        with self.lock:
            self.service_s_sum += seconds

    def stats(self):
        with self.lock:
            return {"admitted": self.admitted, "throttled": self.throttled, "chats": self.chats, "service_s_sum": self.service_s_sum}


def handler_for(limits):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body in one write, sent at once: without these, Nagle's algorithm holds
        # the body back until the client's delayed ACK (about 40 ms on a reused connection),
        # and every answer took that much longer than `latency_ms`.
        disable_nagle_algorithm = True
        wbufsize = 1 << 16

        def log_message(self, *args):
            pass

        def reply(self, status, body, headers=None):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.endswith("/models"):
                self.reply(200, {"object": "list", "data": [{"id": "mock", "object": "model"}]})
            elif self.path == "/stats":
                self.reply(200, limits.stats())
            else:
                self.reply(404, {"error": {"message": "not found"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            if not self.path.endswith("/chat/completions"):
                self.reply(404, {"error": {"message": "not found"}})
                return
            admitted, wait, rate = limits.take()
            extra = rate if limits.mode == "headers" else {}
            if not admitted:
                if limits.mode == "retry-after":
                    extra = {"Retry-After": str(max(1, math.ceil(wait)))}
                error = {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}
                self.reply(429, error, extra)
                return
            arrived = time.time()
            time.sleep(limits.latency)
            completion = max(1, limits.cost // 10)
            self.reply(200, {
                "object": "chat.completion",
                "model": "mock",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{\"findings\":[]}"}}],
                "usage": {"prompt_tokens": limits.cost - completion, "completion_tokens": completion, "total_tokens": limits.cost},
            }, extra)
            limits.served(time.time() - arrived)

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


def start(mode, rps=50, burst=10, tpm=240_000, token_burst=1000, tokens_per_request=100, latency_ms=100, port=0):
    """Starts the server on a thread; returns (server, limits, base URL)."""
    limits = Limits(mode, rps, burst, tpm, token_burst, tokens_per_request, latency_ms)
    server = Server(("127.0.0.1", port), handler_for(limits))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, limits, f"http://127.0.0.1:{server.server_address[1]}/v1"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=MODES, default="retry-after")
    p.add_argument("--rps", type=float, default=50)
    p.add_argument("--burst", type=float, default=10)
    p.add_argument("--tpm", type=float, default=240_000)
    p.add_argument("--token-burst", type=float, default=1000)
    p.add_argument("--tokens-per-request", type=int, default=100)
    p.add_argument("--latency-ms", type=float, default=100)
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args()
    server, _, url = start(a.mode, a.rps, a.burst, a.tpm, a.token_burst, a.tokens_per_request, a.latency_ms, a.port)
    print(url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
