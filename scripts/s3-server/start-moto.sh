#!/usr/bin/env bash
# Start moto's S3 server (a lighter second S3 implementation, from the PyPI package
# `moto[server]`, pinned) on 127.0.0.1:PORT with one bucket; prints the environment the `s3_*`
# tests read. Uses a moto already on the machine when it is the pinned version, else installs
# it into .tools/venv.
#
#   eval "$(scripts/s3-server/start-moto.sh 15000)"
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
MOTO_VERSION="5.2.1"
[ $# -eq 1 ] || { echo "usage: $0 PORT" >&2; exit 2; }
port="$1"
dir="$ROOT/.tools/s3-server/$port"
bucket="runner-test"
key="moto-test"
secret="moto-test-secret"

has_moto() { "$1" -c "import moto, flask, werkzeug, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; }
py=python3
if ! has_moto "$py"; then
  venv="$ROOT/.tools/venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  has_moto "$venv/bin/python" || PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet "moto[server]==$MOTO_VERSION" >&2
  py="$venv/bin/python"
fi
rm -rf "$dir" && mkdir -p "$dir"
nohup "$py" -m moto.server -H 127.0.0.1 -p "$port" > "$dir/moto.log" 2>&1 &
echo $! > "$dir/pid"
endpoint="http://127.0.0.1:$port"
for _ in $(seq 1 60); do
  if curl -s -f -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" -X PUT "$endpoint/$bucket"; then
    echo "s3-server/start-moto.sh: moto S3 on $endpoint, bucket $bucket (pid $(cat "$dir/pid"))" >&2
    echo "export AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1 AWS_ENDPOINT_URL=$endpoint RUNNER_TEST_S3_BUCKET=$bucket"
    exit 0
  fi
  kill -0 "$(cat "$dir/pid")" 2>/dev/null || { echo "start-moto.sh: moto exited:" >&2; tail -20 "$dir/moto.log" >&2; exit 1; }
  sleep 0.5
done
echo "start-moto.sh: moto did not answer on $endpoint within 30 s" >&2
exit 1
