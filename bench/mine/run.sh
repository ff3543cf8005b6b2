#!/usr/bin/env bash
# `runner oracle mine` on a repository's whole history: cold (no memo), again at once (every
# fix read back from its memo), and after new commits (the memo of the history up to N commits
# ago, then the whole history: only the new fixes are mined). Prints one line per case with the
# wall time (median of RUNS runs) and the summary's counts.
#
#   bench/mine/run.sh /path/to/requests [target/release/runner]
#
# Environment: RUNS (default 3), NEW (the commits that arrive, default 200), JOBS (default 2).
set -euo pipefail
repo=${1:?usage: bench/mine/run.sh REPO [RUNNER]}
runner=${2:-target/release/runner}
runs=${RUNS:-3}
new=${NEW:-200}
jobs=${JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs `runner oracle mine` with the given memo directory and range; prints seconds, then the
# summary's commits, fixes, examined and from_memo.
mine() {
  local memo=$1 range=$2
  python3 - "$runner" "$repo" "$memo" "$range" "$jobs" <<'PY'
import json, subprocess, sys, time
runner, repo, memo, rng, jobs = sys.argv[1:]
start = time.monotonic()
out = subprocess.run([runner, "oracle", "mine", "--repo", repo, "--range", rng, "--memo-dir", memo, "--jobs", jobs, "--json"],
                     check=True, capture_output=True, text=True).stdout
took = time.monotonic() - start
s = json.loads(out)["summary"]
print(f"{took:.3f} {s['commits']} {s['fixes']} {s['examined']} {s['from_memo']}")
PY
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

report() {
  local name=$1 file=$2
  local secs
  secs=$(cut -d' ' -f1 "$file" | median)
  read -r _ commits fixes examined from_memo < <(tail -1 "$file")
  printf '%-12s %8.3f s  %6d commits  %5d fixes  %5d mined  %5d from the memo\n' "$name" "$secs" "$commits" "$fixes" "$examined" "$from_memo"
}

: >"$tmp/cold"; : >"$tmp/warm"; : >"$tmp/after"
for _ in $(seq "$runs"); do
  rm -rf "$tmp/memo"
  mine "$tmp/memo" HEAD >>"$tmp/cold"
  mine "$tmp/memo" HEAD >>"$tmp/warm"
  rm -rf "$tmp/memo"
  mine "$tmp/memo" "HEAD~$new" >/dev/null
  mine "$tmp/memo" HEAD >>"$tmp/after"
done
echo "runner oracle mine on $(git -C "$repo" rev-parse --short HEAD) of $repo ($("$runner" --version)), $jobs jobs, median of $runs"
report cold "$tmp/cold"
report warm "$tmp/warm"
report "+$new new" "$tmp/after"
