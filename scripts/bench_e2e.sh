#!/usr/bin/env bash
# End-to-end benchmark: the real server (codec switched by flag), the load
# generator, a real redis-server. Interleaved rounds, medians with spread,
# ratios against the protobuf baseline / logging off in the same round.
#
#   scripts/bench_e2e.sh                       # 3 rounds x 8 s, 100 qps open loop
#   ROUNDS=5 SECONDS_PER_RUN=10 QPS=150 scripts/bench_e2e.sh
#   ONLY=logstore scripts/bench_e2e.sh
# Writes bench/results/e2e.md and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh rankwire-server rankwire-loadgen
mkdir -p bench/results
args=(--build "${BUILD_DIR:-build}" --rounds "${ROUNDS:-3}" --seconds "${SECONDS_PER_RUN:-8}"
      --qps "${QPS:-100}")
[[ -n "${ONLY:-}" ]] && args+=(--only "$ONLY")
/usr/bin/python3 bench/e2e_bench.py "${args[@]}" | tee bench/results/e2e.md
