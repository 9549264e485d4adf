#!/usr/bin/env bash
# The main job: build, start rankwire-server, rank a generated 500-candidate
# request with the CLI (the protobuf baseline with logs inline, then the
# server's default codec with logs in the store), print a codec comparison,
# and stop the server.
#
#   scripts/run.sh                 # in-process log store
#   REDIS=1 scripts/run.sh         # also start a local redis-server and log there
#   FLAGFILE=path scripts/run.sh   # another server flagfile
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh rankwire-server rankwire-cli
BUILD_DIR=${BUILD_DIR:-build}
SERVER="$BUILD_DIR/server/rankwire-server"
CLI="$BUILD_DIR/client/rankwire-cli"
FLAGFILE=${FLAGFILE:-deploy/flags/local.flags}
WORK=$(mktemp -d)
SERVER_PID=""
REDIS_PID=""
cleanup() {
  [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null || true
  [[ -n "$REDIS_PID" ]] && kill "$REDIS_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

extra=()
if [[ "${REDIS:-0}" == 1 ]]; then
  redis_port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
    >"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  extra+=(--logstore=redis "--redis_addr=127.0.0.1:$redis_port")
  echo "run.sh: redis-server on port $redis_port"
fi

"$SERVER" --flagfile="$FLAGFILE" --model=model/models/ecom_search_lr.model --port=0 \
  "${extra[@]}" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
port=""
for _ in $(seq 300); do
  port=$(sed -n 's/.*listening port=\([0-9]*\).*/\1/p' "$WORK/server.log" | head -1)
  [[ -n "$port" ]] && break
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then cat "$WORK/server.log"; exit 1; fi
  sleep 0.05
done
[[ -n "$port" ]] || { echo "server did not start"; cat "$WORK/server.log"; exit 1; }
cat "$WORK/server.log"
target="127.0.0.1:$port"

echo
echo "== 1. The baseline: protobuf codec, logs inline (the source system's response) =="
"$CLI" --target="$target" --codec=protobuf --log_mode=inline --log_chars=100
echo
echo "== 2. The server's default codec, logs in the log store (fetched for the items shown) =="
"$CLI" --target="$target" --log_chars=100
echo
echo "== 3. Codec comparison (same request, interleaved calls, medians) =="
"$CLI" --target="$target" --compare
echo
curl_metrics_port=$(sed -n 's/.*metrics_port=\([0-9-]*\).*/\1/p' "$WORK/server.log" | head -1)
echo "(Prometheus metrics: http://127.0.0.1:$curl_metrics_port/metrics)"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=""
tail -3 "$WORK/server.log"
