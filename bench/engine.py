#!/usr/bin/env python3
"""Times whole `runner` commands: the engine's overhead over an ideal schedule, a fully
cached re-run, and start-up. Run from the repository root: `python3 bench/engine.py`.

- cold: a matrix of CELLS cells of the built-in `sleep` reviewer (a fixed simulated latency
  of LATENCY_MS per run) at --jobs CONCURRENCY, against ideal = cells × latency / concurrency;
- cached: the same command again, every run served from the cache;
- start-up: `runner --version`.
Each figure is the median of several runs, measured side by side in one process.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchrepo import make_repo, manifest_head

CELLS = int(os.environ.get("BENCH_CELLS", "512"))
LATENCY_MS = int(os.environ.get("BENCH_LATENCY_MS", "100"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "16"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "runner")


def sh(args, cwd=None, check=True):
    return subprocess.run(args, cwd=cwd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def timed(args, cwd):
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {done.stderr}")
    return elapsed


def main():
    sh(["cargo", "build", "--release", "--quiet"], cwd=ROOT)
    version = sh([BIN, "--version"]).stdout.strip()
    cold, cached, startup = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(tmp)
        manifest = os.path.join(tmp, "bench.toml")
        with open(manifest, "w") as f:
            f.write(manifest_head("bench", repo, CELLS) + f"""[reviewer]
kind = "builtin"
name = "sleep"
latency-ms = {LATENCY_MS}
[[analysis]]
kind = "latency"
[report]
output = "out"
""")
        for r in range(ROUNDS):
            cache = os.path.join(tmp, f"cache-{r}")
            args = [BIN, "exec", "--quiet", "--jobs", str(CONCURRENCY), "--cache-dir", cache, manifest]
            cold.append(timed(args, tmp))
            cached.append(timed(args, tmp))
            startup.append(min(timed([BIN, "--version"], tmp) for _ in range(10)))
    ideal = CELLS * LATENCY_MS / 1000 / CONCURRENCY
    cold_med, cached_med, start_med = statistics.median(cold), statistics.median(cached), statistics.median(startup)
    result = {
        "runner": version,
        "cells": CELLS,
        "latency_ms": LATENCY_MS,
        "concurrency": CONCURRENCY,
        "rounds": ROUNDS,
        "ideal_s": round(ideal, 3),
        "cold_s": round(cold_med, 3),
        "cold_overhead_pct": round((cold_med / ideal - 1) * 100, 1),
        "cached_s": round(cached_med, 3),
        "cold_over_cached": round(cold_med / cached_med, 1),
        "startup_ms": round(start_med * 1000, 2),
    }
    print(json.dumps(result, indent=2))
    print()
    print("| measure | median | target |")
    print("|---|---:|---|")
    print(f"| cold run, {CELLS} cells × {LATENCY_MS} ms at concurrency {CONCURRENCY} (ideal {ideal:.2f} s) | {cold_med:.3f} s (+{result['cold_overhead_pct']} %) | within 5 % of ideal |")
    print(f"| fully cached re-run | {cached_med:.3f} s ({result['cold_over_cached']}× faster) | under 0.1 s |")
    print(f"| `runner --version` start-up | {start_med * 1000:.2f} ms | under 20 ms |")


if __name__ == "__main__":
    main()
