#!/usr/bin/env python3
"""Scale benchmark: experiments of N runs of the built-in `sleep` reviewer at 0 ms, in two
shapes, timed end to end with their peak resident memory.

- cells:   one axis of N values (`shard = [1, …, N]`), 1 repeat: N cells;
- repeats: 10 cells (`shard = [1, …, 10]`), N / 10 repeats each.

For each size and shape: `validate`, a cold `exec` (empty cache), warm `exec`s (every run
served from the cache: the re-report; the median of `--warm-runs`, 3 by default, with the
highest peak RSS among them) and the peak RSS of each (`/usr/bin/time -v`).
Everything is generated under target/bench-scale/ (a git repository with one change, the
manifests, the caches) and the caches are deleted after each size.

Usage, from the repository root:
    python3 scripts/bench-scale.py [--bin target/release/runner] [--sizes 1000,10000,100000]
                                   [--shapes cells,repeats] [--jobs 16] [--warm-runs 3] [--keep]
    python3 scripts/bench-scale.py --generate-only N SHAPE DIR   # write one manifest (and repo)
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRATCH = os.path.join(ROOT, "target", "bench-scale")
ANALYSES = ["latency", "repeatability", "distribution", "id-stability", "schema"]


def make_repo(path):
    """A git repository whose HEAD changes one line: one subject with one hunk."""
    if os.path.isdir(os.path.join(path, ".git")):
        return
    os.makedirs(path, exist_ok=True)
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b",
               GIT_AUTHOR_DATE="2000-01-01T00:00:00Z", GIT_COMMITTER_DATE="2000-01-01T00:00:00Z")
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    for i in range(2):
        with open(os.path.join(path, "a.py"), "w") as f:
            f.write("x = %d\n" % i)
        subprocess.run(["git", "add", "a.py"], cwd=path, check=True, env=env)
        subprocess.run(["git", "commit", "-qm", str(i)], cwd=path, check=True, env=env)


def manifest(n, shape, repo, out):
    """The manifest text of an experiment of `n` runs in `shape`."""
    if shape == "cells":
        values, repeat = n, 1
    elif shape == "repeats":
        values, repeat = 10, max(1, n // 10)
    else:
        sys.exit(f"unknown shape `{shape}` (cells or repeats)")
    shards = ", ".join(str(i) for i in range(1, values + 1))
    analyses = "".join(f'\n[[analysis]]\nkind = "{a}"\n' for a in ANALYSES)
    return f"""version = 1
[experiment]
name = "scale-{shape}-{n}"
[target]
repo = "{repo}"
[matrix]
ref = ["HEAD~1"]
shard = [{shards}]
repeat = {repeat}
[reviewer]
kind = "builtin"
name = "sleep"
latency-ms = 0
{analyses}
[report]
output = "{out}"
"""


def generate(n, shape, directory):
    repo = os.path.join(directory, "repo")
    make_repo(repo)
    path = os.path.join(directory, f"{shape}-{n}.toml")
    with open(path, "w") as f:
        f.write(manifest(n, shape, repo, os.path.join(directory, f"out-{shape}-{n}")))
    return path


def timed(args):
    """Wall seconds and peak RSS (MiB) of one command, through /usr/bin/time -v."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return elapsed, int(rss.group(1)) / 1024 if rss else float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "runner"))
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--shapes", default="cells,repeats")
    p.add_argument("--jobs", default="16")
    p.add_argument("--keep", action="store_true", help="keep the caches")
    p.add_argument("--warm-runs", type=int, default=3, help="warm re-reports timed (the median is reported, with the highest RSS)")
    p.add_argument("--generate-only", nargs=3, metavar=("N", "SHAPE", "DIR"))
    a = p.parse_args()
    if a.generate_only:
        n, shape, directory = a.generate_only
        print(generate(int(n), shape, os.path.abspath(directory)))
        return
    os.makedirs(SCRATCH, exist_ok=True)
    load_before = os.getloadavg()[0]
    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        for shape in a.shapes.split(","):
            path = generate(n, shape, SCRATCH)
            cache = os.path.join(SCRATCH, f"cache-{shape}-{n}")
            shutil.rmtree(cache, ignore_errors=True)
            run = [a.bin, "exec", "--quiet", "--jobs", a.jobs, "--cache-dir", cache, path]
            v = timed([a.bin, "validate", path])
            cold = timed(run)
            warms = sorted(timed(run) for _ in range(max(1, a.warm_runs)))
            warm = (warms[len(warms) // 2][0], max(w[1] for w in warms))
            row = {"runs": n, "shape": shape, "validate_s": v[0], "validate_mib": v[1], "cold_s": cold[0], "cold_mib": cold[1],
                   "warm_s": warm[0], "warm_mib": warm[1]}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if not a.keep:
                shutil.rmtree(cache, ignore_errors=True)
    print(f"{os.cpu_count()} CPUs, 1-minute load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print("| runs | shape | validate | cold exec | warm re-report | peak RSS (validate / cold / warm) |")
    print("|---:|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['runs']:,} | {r['shape']} | {r['validate_s']:.2f} s | {r['cold_s']:.2f} s | {r['warm_s']:.2f} s | "
              f"{r['validate_mib']:.0f} / {r['cold_mib']:.0f} / {r['warm_mib']:.0f} MiB |")


if __name__ == "__main__":
    main()
