#!/usr/bin/env bash
# Builds and runs the log store benchmark (bench/logstore_bench.cc) on the
# real ranker output: per stored representation (text, zstd, zstd with a
# trained dictionary, structured records) the Redis memory per request, the
# writer's encode CPU and the top-10 read latency; then the writers' ceiling
# into a real redis-server per representation and writer count. The
# benchmark (producer + writer threads) is pinned to CPU 0 and the
# redis-server it starts to CPU 1.
#
# The end-to-end side (drops at fractions of the logging-off peak, per
# representation and writer count, p99 ratio) is
# `ONLY=logstore scripts/bench_e2e.sh`.
#
# Markdown results go to stdout, one line per round to stderr.
#
#   scripts/bench_logstore.sh                      # 5 rounds x 2 s per variant
#   scripts/bench_logstore.sh --variants=text:1,record:1,record:2,record:4
#   scripts/bench_logstore.sh --rounds=9 --seconds=3
#   BUILD_DIR=build-bench scripts/bench_logstore.sh
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac

cmake -S "$repo" -B "$build" -DRANKWIRE_BUILD_BENCHMARKS=ON -DRANKWIRE_BUILD_TESTS=ON >/dev/null
cmake --build "$build" --target logstore_bench -j 2

bench="$build/bench/logstore_bench"
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  exec taskset -c 0 "$bench" --redis_cpu=1 "$@"
fi
echo "bench_logstore.sh: fewer than 2 CPUs or no taskset; running unpinned" >&2
exec "$bench" "$@"
