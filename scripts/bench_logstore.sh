#!/usr/bin/env bash
# The log path's targets (issue 44), every one in one run
# (bench/logstore_targets.py): server CPU for logs with the serve floor
# beside it, Redis CPU per request (two ways, at every load), Redis memory
# of the shipped request and at 1,000 requests/s under the 1 s TTL, the
# top-10 fetch's round trips and bytes, lines dropped at 80 / 100 / 120 %
# of the logging-off peak (and at 80 % of the logs-in-Redis one), Redis
# frozen and Redis restarted under load with every line counted. Real
# server, serve_floor, load generator (a fresh request id per call) and
# redis-server; the server on CPU 1, the load generator and Redis on CPU 0.
# Markdown to stdout (and --out), progress to stderr.
#
#   scripts/bench_logstore.sh                     # full run, ~10 minutes
#   scripts/bench_logstore.sh --quick --check     # smoke run, ~1 minute (ctest bench.logstore_quick)
#   scripts/bench_logstore.sh --out docs/bench-notes/logstore-run.md --json /tmp/run.json
#   scripts/bench_logstore.sh --only cpu --pairs 5 --variant 'l5=--log_linger_us=5000'
#   BUILD_DIR=build-bench scripts/bench_logstore.sh --no-build
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac

build_first=1
args=()
for a in "$@"; do
  case "$a" in
    --no-build) build_first=0 ;;
    *) args+=("$a") ;;
  esac
done

if ((build_first)); then
  BUILD_DIR="$build" "$repo/scripts/setup.sh" rankwire-server rankwire-loadgen rankwire-cli serve_floor
fi
exec /usr/bin/python3 "$repo/bench/logstore_targets.py" --build "$build" "${args[@]}"
