#!/usr/bin/env bash
# The CPU budget benchmark (bench/cpu_budget.py): server CPU and context
# switches per request, by row (a serve floor, rankbin with logs off, in
# memory and in Redis, the protobuf baseline with logs inline, an XGBoost
# model in place of the linear one beside the evaluator's own time), in
# interleaved rounds, with the server's per-phase CPU beside the floor's
# transport cost. Server on CPU 1, load generator and Redis on CPU 0.
#
#   scripts/bench_cpu.sh                         # 3 rounds x 8 s, closed loop
#   scripts/bench_cpu.sh --open                  # also open loop at 80 % of peak
#   scripts/bench_cpu.sh --rounds 5 --out /tmp/cpu.md
#   BUILD_DIR=build-bench scripts/bench_cpu.sh --no-build
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
build_first=1
args=()
for a in "$@"; do
  if [[ "$a" == --no-build ]]; then build_first=0; else args+=("$a"); fi
done
if ((build_first)); then
  BUILD_DIR="$build" "$repo/scripts/setup.sh" rankwire-server rankwire-loadgen serve_floor \
    xgboost_bench
fi
exec /usr/bin/python3 "$repo/bench/cpu_budget.py" --build "$build" "${args[@]}"
