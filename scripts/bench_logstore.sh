#!/usr/bin/env bash
# Builds and runs the log store benchmark: the writer's ceiling into a real
# redis-server on loopback and Redis memory per request, each with plain and
# zstd values (bench/logstore_bench.cc). The benchmark (producer + writer
# thread) is pinned to CPU 0 and the redis-server it starts to CPU 1.
#
# Markdown results go to stdout, one line per round to stderr.
#
#   scripts/bench_logstore.sh                      # 5 rounds x 2 s per variant
#   scripts/bench_logstore.sh --rounds=9 --seconds=3
#   BUILD_DIR=build-bench scripts/bench_logstore.sh
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac

cmake -S "$repo" -B "$build" -DRANKWIRE_BUILD_BENCHMARKS=ON -DRANKWIRE_BUILD_TESTS=ON >/dev/null
cmake --build "$build" --target logstore_bench -j "$(nproc)"

bench="$build/bench/logstore_bench"
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  exec taskset -c 0 "$bench" --redis_cpu=1 "$@"
fi
echo "bench_logstore.sh: fewer than 2 CPUs or no taskset; running unpinned" >&2
exec "$bench" "$@"
