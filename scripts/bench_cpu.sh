#!/usr/bin/env bash
# The CPU budget benchmark (bench/cpu_budget.py): server CPU and context
# switches per request, by row (a serve floor, the same with gRPC's own
# transport arguments, rankbin with logs off (also with gRPC's transport
# arguments), in memory and in Redis, the protobuf baseline with logs
# inline, an XGBoost model in place of the linear one beside the
# evaluator's own time), in interleaved rounds, closed loop and then open
# loop at 80 % of each row's peak, with the server's per-phase CPU beside
# the floor's transport cost and beside each phase's hot in-process cost
# (request_bench BM_Hot), and issue 45's targets in one table. Server on
# CPU 1, load generator and Redis on CPU 0.
#
#   scripts/bench_cpu.sh                         # 3 rounds x 8 s, closed + open loop
#   scripts/bench_cpu.sh --no-open               # closed loop only
#   scripts/bench_cpu.sh --rounds 5 --out /tmp/cpu.md
#   BUILD_DIR=build-bench scripts/bench_cpu.sh --no-build
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
build_first=1
open_loop=1
args=()
for a in "$@"; do
  case "$a" in
    --no-build) build_first=0 ;;
    --no-open) open_loop=0 ;;
    --open) ;;
    *) args+=("$a") ;;
  esac
done
if ((open_loop)); then args+=(--open); fi
if ((build_first)); then
  BUILD_DIR="$build" "$repo/scripts/setup.sh" rankwire-server rankwire-loadgen serve_floor \
    xgboost_bench request_bench
fi
exec /usr/bin/python3 "$repo/bench/cpu_budget.py" --build "$build" "${args[@]}"
