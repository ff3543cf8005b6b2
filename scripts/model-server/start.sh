#!/usr/bin/env bash
# Start a real llama.cpp server for one installed model in the background.
#
#   scripts/model-server/start.sh NAME PORT
#
# NAME is a short name from .models/MODELS.json (smollm2-135m, gemma3-270m, minilm-l6-v2,
# qwen2.5-coder-0.5b after `install.sh --with qwen`).
# The server answers on http://127.0.0.1:PORT and reports NAME as its model. An entry with
# "kind": "embedding" (minilm-l6-v2) is served in embedding mode (POST /v1/embeddings) with
# the entry's pooling, and CTX defaults to the entry's context_length.
# pid file: .models/run/server-PORT.pid, log: .models/run/server-PORT.log.
# Waits until GET /health answers 200 (START_TIMEOUT, default 120 s).
# Optional environment: CTX (per request, default 4096; an embedding model's context_length),
# THREADS (default 2; 1 for an embedding model),
# PARALLEL (slots, default 1), CACHE_PROMPT=1 (reuse prompt prefixes; off by default
# because cached and uncached evaluations can differ, see README).
# If the same model already runs on PORT (started by this script) it says so and exits 0.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
MODELS="$ROOT/.models"
VPY="$MODELS/venv/bin/python"
RUN="$MODELS/run"

[ $# -eq 2 ] || { echo "usage: $0 NAME PORT   (NAME: smollm2-135m | gemma3-270m | minilm-l6-v2 | qwen2.5-coder-0.5b)" >&2; exit 2; }
NAME="$1"; PORT="$2"
[[ "$PORT" =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] || { echo "start.sh: bad port '$PORT'" >&2; exit 2; }
[ -x "$VPY" ] && [ -f "$MODELS/MODELS.json" ] || { echo "start.sh: not installed; run scripts/model-server/install.sh first" >&2; exit 1; }

# one line: file<TAB>kind<TAB>pooling<TAB>context_length
ENTRY="$("$VPY" - "$MODELS/MODELS.json" "$NAME" "$ROOT" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for m in doc["models"]:
    if m["name"] == sys.argv[2]:
        print("\t".join([f'{sys.argv[3]}/{m["file"]}', m.get("kind", "chat"), m.get("pooling", ""),
                         str(m.get("context_length", ""))])); break
else:
    sys.exit("start.sh: unknown model '%s'; known: %s" % (sys.argv[2], ", ".join(m["name"] for m in doc["models"])))
EOF
)"
IFS=$'\t' read -r MODEL KIND POOLING MODEL_CTX <<<"$ENTRY"
EMB=()
if [ "$KIND" = embedding ]; then
  EMB=(--embedding)
  if [ -n "$POOLING" ]; then EMB+=(--pooling "$POOLING"); fi
fi
DEFAULT_CTX=4096; if [ "$KIND" = embedding ] && [ -n "$MODEL_CTX" ]; then DEFAULT_CTX="$MODEL_CTX"; fi
# An embedding request is many tiny graph runs; with 2 threads on a busy 2-core machine ggml's
# spinning workers were 5x slower than 1 thread (see README), so embeddings default to 1.
DEFAULT_THREADS=2; if [ "$KIND" = embedding ]; then DEFAULT_THREADS=1; fi
[ -f "$MODEL" ] || { echo "start.sh: $MODEL missing; run scripts/model-server/install.sh" >&2; exit 1; }

mkdir -p "$RUN"
PIDF="$RUN/server-$PORT.pid"; LOG="$RUN/server-$PORT.log"
URL="http://127.0.0.1:$PORT"

# http_get PATH -> prints "CODE BODY"; CODE 000 when nothing answers
http_get() {
  "$VPY" - "$URL$1" <<'EOF'
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
        print(r.status, r.read().decode(errors="replace"))
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(errors="replace"))
except Exception:
    print("000")
EOF
}

if [ -f "$PIDF" ]; then
  OLD="$(cat "$PIDF")"
  if kill -0 "$OLD" 2>/dev/null && grep -q "serve.py" "/proc/$OLD/cmdline" 2>/dev/null; then
    if http_get /v1/models | grep -q "\"id\":\"$NAME\""; then
      echo "start.sh: $NAME already running on $URL (pid $OLD)"; exit 0
    fi
    echo "start.sh: port $PORT already has a server (pid $OLD) that is not $NAME; run stop.sh $PORT first" >&2; exit 1
  fi
  rm -f "$PIDF"
fi
if [ "$(http_get /health | cut -d' ' -f1)" != "000" ]; then
  echo "start.sh: something else already answers on $URL" >&2; exit 1
fi

CP=""; if [ "${CACHE_PROMPT:-0}" = 1 ]; then CP="--cache-prompt"; fi
T0=$(date +%s.%N)
nohup "$VPY" "$SCRIPT_DIR/serve.py" --model "$MODEL" --port "$PORT" --alias "$NAME" \
  --ctx "${CTX:-$DEFAULT_CTX}" --threads "${THREADS:-$DEFAULT_THREADS}" --parallel "${PARALLEL:-1}" \
  $CP ${EMB[@]+"${EMB[@]}"} \
  >"$LOG" 2>&1 </dev/null &
PID=$!
echo "$PID" > "$PIDF"

TIMEOUT="${START_TIMEOUT:-120}"
while :; do
  if ! kill -0 "$PID" 2>/dev/null; then
    rm -f "$PIDF"
    echo "start.sh: server for $NAME exited during startup; last log lines ($LOG):" >&2
    tail -n 30 "$LOG" >&2; exit 1
  fi
  [ "$(http_get /health | cut -d' ' -f1)" = "200" ] && break
  if awk -v t0="$T0" -v now="$(date +%s.%N)" -v lim="$TIMEOUT" 'BEGIN{exit !(now-t0 > lim)}'; then
    echo "start.sh: $NAME on $URL not healthy after ${TIMEOUT}s; last log lines ($LOG):" >&2
    tail -n 30 "$LOG" >&2
    kill "$PID" 2>/dev/null || true; rm -f "$PIDF"; exit 1
  fi
  sleep 0.25
done
ELAPSED="$(awk -v t0="$T0" -v now="$(date +%s.%N)" 'BEGIN{printf "%.1f", now-t0}')"
RSS="$(awk '/^VmRSS/{printf "%d MB", $2/1024}' "/proc/$PID/status" 2>/dev/null || echo "?")"
WHAT="$NAME"; if [ "$KIND" = embedding ]; then WHAT="$NAME (embedding${POOLING:+, $POOLING pooling})"; fi
echo "start.sh: $WHAT ready on $URL (pid $PID, ${ELAPSED}s, RSS $RSS); log $LOG"
