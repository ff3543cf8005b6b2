#!/usr/bin/env python3
"""kill -9 in a loop: what a killed `runner exec` leaves behind, and whether the cache survives.

Each iteration starts `runner exec --refresh` on a small experiment whose `command` reviewer
sleeps a few milliseconds and prints one finding (so entries are being written all the time),
kills it with SIGKILL after a random delay, and records:

- reviewer processes still running right after the kill (their process groups outlive a
  SIGKILLed runner: only a runner that is told can kill them; they end on their own);
- scratch directories (`$TMPDIR/runner-<pid>-…`) present when the next runner has started
  (a killed runner leaves its own; the next one sweeps it);
- every `--verify-every` iterations, `runner cache verify` (a kill mid-write must leave the old
  entry or the new one, never a damaged one).

At the end, one `runner exec` completes the experiment and `runner exec --frozen` must be
served from the cache with one results row per planned run.

Bounded: stops after `--iterations` or `--max-seconds`, whichever comes first.

    python3 scripts/kill-loop.py --runner target/release/runner --iterations 1000
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, env=env)


def project(root: Path, runs: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    for i in range(2):
        (repo / "calc.py").write_text("def f(x):\n    return x\n" * (i + 1))
        git(repo, "add", "calc.py")
        git(repo, "commit", "--quiet", "-m", f"v{i}")
    reviewer = root / "reviewer.sh"
    reviewer.write_text(
        "#!/bin/sh\n"
        "sleep 0.0$(( $(od -An -N1 -tu1 /dev/urandom) % 9 + 1 ))\n"
        'echo \'{"findings":[{"file":"calc.py","line":2,"message":"m","severity":"warning","category":"bug"}]}\'\n'
    )
    reviewer.chmod(0o755)
    shards = ", ".join(str(i) for i in range(1, runs + 1))
    manifest = root / "loop.toml"
    manifest.write_text(
        f'version = 1\n[experiment]\nname = "loop"\n[target]\nrepo = "{repo}"\n[matrix]\nref = ["HEAD~1"]\nshard = [{shards}]\n'
        f'[reviewer]\nkind = "command"\nprogram = "{reviewer}"\nisolation = "none"\nenv = {{ SHARD = "{{{{shard}}}}" }}\n'
        '[report]\noutput = "out"\n'
    )
    return manifest


def reviewers_running(script: Path) -> int:
    """Processes whose command line runs the reviewer script (counted, never signalled)."""
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(script).encode() in cmdline:
            count += 1
    return count


def scratch_dirs(tmp: Path) -> int:
    return sum(1 for p in tmp.iterdir() if p.name.startswith("runner-") and p.is_dir())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", default="target/release/runner")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--max-delay", type=float, default=0.4, help="the kill comes 0..this many seconds after the start")
    parser.add_argument("--verify-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    runner = str(Path(args.runner).resolve())
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        manifest = project(root, args.runs)
        tmp = root / "tmp"
        tmp.mkdir()
        env = dict(os.environ, TMPDIR=str(tmp))
        env.pop("RUNNER_CACHE_DIR", None)
        env.pop("RUNNER_WORK_DIR", None)

        def run(*extra, check_bound=120):
            return subprocess.run([runner, *extra], cwd=root, env=env, capture_output=True, text=True, timeout=check_bound)

        started = time.monotonic()
        figures = {"iterations": 0, "verify_checks": 0, "verify_problems": 0, "orphaned_reviewers_after_kill": 0,
                   "kills_leaving_reviewers": 0, "max_scratch_dirs_seen_by_a_running_runner": 0, "runs_stored": 0}
        for i in range(args.iterations):
            if time.monotonic() - started > args.max_seconds:
                break
            child = subprocess.Popen([runner, "exec", "--refresh", "--quiet", "--jobs", "4", str(manifest)], cwd=root, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, args.max_delay))
            # With the runner still running, its own scratch directory and any a killed one left.
            figures["max_scratch_dirs_seen_by_a_running_runner"] = max(figures["max_scratch_dirs_seen_by_a_running_runner"], scratch_dirs(tmp))
            child.send_signal(signal.SIGKILL)
            child.wait()
            left = reviewers_running(root / "reviewer.sh")
            figures["orphaned_reviewers_after_kill"] += left
            figures["kills_leaving_reviewers"] += left > 0
            # The orphans finish within a tenth of a second; wait for them (bounded).
            deadline = time.monotonic() + 5
            while reviewers_running(root / "reviewer.sh") and time.monotonic() < deadline:
                time.sleep(0.02)
            figures["iterations"] += 1
            if (i + 1) % args.verify_every == 0:
                verify = run("cache", "verify")
                figures["verify_checks"] += 1
                problems = [line for line in verify.stdout.splitlines() if line.startswith("corrupt:")]
                figures["verify_problems"] += len(problems)
                for p in problems[:3]:
                    print(f"iteration {i + 1}: {p}", file=sys.stderr)
        figures["seconds"] = round(time.monotonic() - started, 1)
        figures["scratch_dirs_left_by_the_last_kill"] = scratch_dirs(tmp)
        final = run("exec", "--quiet", str(manifest))
        frozen = run("exec", "--frozen", "--quiet", str(manifest))
        figures["final_exec_exit"] = final.returncode
        figures["frozen_exit"] = frozen.returncode
        figures["scratch_dirs_after_a_clean_exit"] = scratch_dirs(tmp)
        results = json.loads((root / "out" / "results.json").read_text()) if (root / "out" / "results.json").exists() else {"runs": []}
        rows = results["runs"]
        figures["result_rows"] = len(rows)
        figures["distinct_result_rows"] = len({(json.dumps(r["cell"]), r["repeat"], r["subject"]) for r in rows})
        entries = [p for p in (root / "cache").rglob("*") if p.is_file() and "locks" not in p.parts]
        figures["runs_stored"] = sum(1 for p in entries if "runs" in p.parts and not p.name.startswith(".tmp"))
        # Temporary files of writes a kill cut short: never read, removed by `runner cache gc`.
        figures["temp_files_left_in_the_cache"] = sum(1 for p in entries if p.name.startswith(".tmp"))
        figures["scratch_dirs_left"] = sorted(
            f"{p.name}: {sorted(c.name for c in p.iterdir())}" for p in tmp.iterdir() if p.name.startswith("runner-"))
        verify = run("cache", "verify")
        figures["final_verify_problems"] = sum(1 for line in verify.stdout.splitlines() if line.startswith("corrupt:"))
        print(json.dumps(figures, indent=2))
        ok = (figures["verify_problems"] == 0 and figures["final_verify_problems"] == 0 and final.returncode == 0 and frozen.returncode == 0
              and figures["result_rows"] == args.runs == figures["distinct_result_rows"] and figures["scratch_dirs_after_a_clean_exit"] == 0)
        sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
