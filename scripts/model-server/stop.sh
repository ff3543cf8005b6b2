#!/usr/bin/env bash
# Stop a server started by start.sh.
#
#   scripts/model-server/stop.sh PORT     # the server on PORT
#   scripts/model-server/stop.sh all      # every server with a pid file in .models/run/
#
# Sends SIGTERM, waits up to 15 s, then SIGKILL. Exits 0 when nothing was running.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN="$(cd "$SCRIPT_DIR/../.." && pwd)/.models/run"

[ $# -eq 1 ] || { echo "usage: $0 PORT|all" >&2; exit 2; }

stop_port() {
  local port="$1" pidf="$RUN/server-$1.pid" pid
  if [ ! -f "$pidf" ]; then echo "stop.sh: nothing running on port $port (no $pidf)"; return 0; fi
  pid="$(cat "$pidf")"
  # only signal the process if it is still our serve.py on that port (pids get reused)
  if ! kill -0 "$pid" 2>/dev/null || ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "serve.py .*--port $port"; then
    echo "stop.sh: port $port: pid $pid is gone; removing stale pid file"
    rm -f "$pidf"; return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "stop.sh: pid $pid ignored SIGTERM for 15s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidf"
  echo "stop.sh: stopped server on port $port (pid $pid)"
}

if [ "$1" = "all" ]; then
  shopt -s nullglob
  found=0
  for f in "$RUN"/server-*.pid; do
    found=1; p="${f##*/server-}"; stop_port "${p%.pid}"
  done
  [ "$found" = 1 ] || echo "stop.sh: no servers running"
else
  [[ "$1" =~ ^[0-9]+$ ]] || { echo "usage: $0 PORT|all" >&2; exit 2; }
  stop_port "$1"
fi
