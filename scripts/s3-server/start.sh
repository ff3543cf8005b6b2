#!/usr/bin/env bash
# Start SeaweedFS (installed by install.sh) on 127.0.0.1 with its S3 gateway on PORT, one
# identity, and one bucket; prints the environment the `s3_*` tests read.
#
#   eval "$(scripts/s3-server/start.sh 18333)"    # exports AWS_* and RUNNER_TEST_S3_*
#
# The master, volume and filer listen on PORT+1, PORT+2, PORT+3, and the gRPC ports of the
# master, volume, filer and S3 gateway on PORT+4 to PORT+7. Data lives in
# .tools/s3-server/PORT/ and is removed by stop.sh.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
WEED="$ROOT/.tools/venv/bin/weed"
[ $# -eq 1 ] || { echo "usage: $0 PORT" >&2; exit 2; }
port="$1"
dir="$ROOT/.tools/s3-server/$port"
bucket="runner-test"
key="runner-test"
secret="runner-test-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
[ -x "$WEED" ] || { echo "start.sh: $WEED is missing: run scripts/s3-server/install.sh" >&2; exit 1; }

rm -rf "$dir" && mkdir -p "$dir/data"
cat > "$dir/s3.json" <<JSON
{"identities":[{"name":"runner-test","credentials":[{"accessKey":"$key","secretKey":"$secret"}],"actions":["Admin","Read","Write","List","Tagging"]}]}
JSON
nohup "$WEED" server -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port=$((port + 1)) -volume.port=$((port + 2)) -filer.port=$((port + 3)) \
  -master.port.grpc=$((port + 4)) -volume.port.grpc=$((port + 5)) -filer.port.grpc=$((port + 6)) -s3.port.grpc=$((port + 7)) \
  -s3 -s3.port="$port" -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$dir/s3.json" -volume.max=8 -master.volumeSizeLimitMB=64 \
  > "$dir/weed.log" 2>&1 &
echo $! > "$dir/pid"

endpoint="http://127.0.0.1:$port"
for _ in $(seq 1 120); do
  if curl -s -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" -X PUT "$endpoint/$bucket" \
     && curl -s -f -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" "$endpoint/$bucket?list-type=2"; then
    echo "s3-server/start.sh: SeaweedFS S3 on $endpoint, bucket $bucket (pid $(cat "$dir/pid"))" >&2
    echo "export AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1 AWS_ENDPOINT_URL=$endpoint RUNNER_TEST_S3_BUCKET=$bucket"
    exit 0
  fi
  kill -0 "$(cat "$dir/pid")" 2>/dev/null || { echo "start.sh: weed exited:" >&2; tail -20 "$dir/weed.log" >&2; exit 1; }
  sleep 0.5
done
echo "start.sh: SeaweedFS S3 did not answer on $endpoint within 60 s:" >&2
tail -20 "$dir/weed.log" >&2
exit 1
