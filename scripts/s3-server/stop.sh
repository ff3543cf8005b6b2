#!/usr/bin/env bash
# Stop the S3 server (SeaweedFS or moto) started by start.sh or start-moto.sh on PORT and remove its data.
#
#   scripts/s3-server/stop.sh PORT
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
[ $# -eq 1 ] || { echo "usage: $0 PORT" >&2; exit 2; }
dir="$ROOT/.tools/s3-server/$1"
if [ -f "$dir/pid" ]; then
  pid="$(cat "$dir/pid")"
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -e "weed server" -e "moto.server"; then
    kill -TERM "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
fi
rm -rf "$dir"
echo "s3-server/stop.sh: stopped the S3 server on port $1"
