#!/usr/bin/env bash
# The floor of `../shared/bench/overhead.sh`'s cold check on this machine: runner and two bare
# HTTP clients alternated on one mock, the same 500 requests at 16 in flight, each round timed
# as overhead.sh times it. The bare clients send the requests and nothing else: curl's
# --parallel (C, keep-alive), and `bench/floor-client` (runner's own HTTP stack, tokio and
# reqwest, built here on the first run: what a Rust client that did nothing but the requests
# would take).
#
# Usage, from the repository root after `cargo build --release`:
#   bash bench/floor.sh            # 5 rounds
#   ROUNDS=9 RUNNER_BIN=/path/to/runner BENCH_DIR=/path/to/shared/bench bash bench/floor.sh
#
# Per round and client: the wall time over the mock's served ideal (its summed service time /
# 16, overhead.sh's measure), then from the mock's own clock the time before the first request
# arrived, the time inside beyond 32 rounds of the mean service time (500 requests at 16 in
# flight need 32 rounds; the ideal counts 31.25, so 32 rounds alone are +2.4 %), and the time
# after the last answer. The last lines are each client's medians. Whatever the bare clients
# cannot do below, runner cannot either: the gap between them is runner's own.
set -u
B=${BENCH_DIR:-$(cd "$(dirname "$0")/../../shared/bench" 2>/dev/null && pwd)}
[ -f "$B/mock_server.py" ] || { echo "no mock_server.py in '$B': set BENCH_DIR to the shared bench folder" >&2; exit 2; }
command -v curl >/dev/null || { echo "curl is required" >&2; exit 2; }
bin=${RUNNER_BIN:-$PWD/target/release/runner}
[ -x "$bin" ] || { echo "no runner binary at $bin: run cargo build --release" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
cargo build --quiet --release --locked --manifest-path "$here/floor-client/Cargo.toml" --target-dir "$here/../target/floor-client" ||
  { echo "bench/floor-client did not build" >&2; exit 2; }
bare="$here/../target/floor-client/release/floor-client"
rounds=${ROUNDS:-5}
d=$(mktemp -d); port=${PORT:-18795}
python3 "$B/gen_runner_manifest.py" "$d/m.toml" --repo "$d/repo" --models 10 --refs 25 --concurrency 16 --port "$port" --output "$d/out" --name floor >/dev/null || { echo "manifest generation failed" >&2; exit 1; }
MOCK_PORT=$port MOCK_LATENCY_MS=200 python3 "$B/mock_server.py" >"$d/mock.log" 2>&1 & mock=$!
trap 'kill $mock 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/stats" >/dev/null && break; sleep 0.1; done

# curl's 500 requests: one chat completion each, separate transfers (`next`), 16 at a time.
python3 - "$d/curl.cfg" "$port" <<'PY'
import json, sys
path, port = sys.argv[1], sys.argv[2]
body = json.dumps({"model": "model-0", "temperature": 0, "messages": [{"role": "user", "content": "x" * 1500}]})
esc = body.replace("\\", "\\\\").replace('"', '\\"')
one = f'url = "http://127.0.0.1:{port}/v1/chat/completions"\ndata-binary = "{esc}"\nheader = "Content-Type: application/json"\noutput = "/dev/null"\n'
open(path, "w").write("next\n".join([one] * 500))
PY

measure() {  # measure NAME t0 t1: one line from the mock's stats
  curl -sf "http://127.0.0.1:$port/stats" | python3 -c "
import json, sys
s = json.load(sys.stdin); t0, t1 = $2, $3
if not s['requests']: sys.exit('$1: the mock served no request')
ideal = s['service_s_sum'] / 16; mean = s['service_s_sum'] / s['requests']
print('$1', s['requests'], s['max_inflight'], f\"{((t1 - t0) / ideal - 1) * 100:.2f}\", f\"{1000 * (s['first_request'] - t0):.1f}\",
      f\"{1000 * ((s['last_done'] - s['first_request']) - 32 * mean):.1f}\", f\"{1000 * (t1 - s['last_done']):.1f}\")"
}

echo "client requests max_in_flight over_% first_ms inside_beyond_32_rounds_ms after_last_ms"
for _ in $(seq "$rounds"); do
  rm -rf "$d/c" "$d/w" "$d/out"; curl -sf -X POST "http://127.0.0.1:$port/reset" >/dev/null
  t0=$(date +%s.%N); "$bin" exec --quiet --jobs 16 --cache-dir "$d/c" --work-dir "$d/w" "$d/m.toml" >/dev/null 2>&1 || { echo "runner's cold exec failed" >&2; exit 1; }
  t1=$(date +%s.%N); measure runner "$t0" "$t1" | tee -a "$d/lines"
  curl -sf -X POST "http://127.0.0.1:$port/reset" >/dev/null
  t0=$(date +%s.%N); curl -s --parallel --parallel-max 16 --parallel-immediate -K "$d/curl.cfg" >/dev/null 2>&1 || { echo "curl failed" >&2; exit 1; }
  t1=$(date +%s.%N); measure curl "$t0" "$t1" | tee -a "$d/lines"
  curl -sf -X POST "http://127.0.0.1:$port/reset" >/dev/null
  t0=$(date +%s.%N); "$bare" "$port" 500 16 || { echo "floor-client failed" >&2; exit 1; }
  t1=$(date +%s.%N); measure floor-client "$t0" "$t1" | tee -a "$d/lines"
done
python3 - "$d/lines" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for client in ("runner", "curl", "floor-client"):
    cols = list(zip(*[[float(x) for x in r[3:]] for r in rows if r[0] == client]))
    print(f"median {client}: over {statistics.median(cols[0]):+.2f} %, first {statistics.median(cols[1]):.1f} ms, "
          f"inside beyond 32 rounds {statistics.median(cols[2]):.1f} ms, after the last answer {statistics.median(cols[3]):.1f} ms")
PY
