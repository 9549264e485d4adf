#!/usr/bin/env bash
# End-to-end benchmark: the real server (codec switched by flag), the load
# generator. Interleaved rounds, medians with spread, ratios against the
# protobuf baseline in the same round. (Logs off against logs in Redis:
# scripts/bench_logstore.sh.)
#
#   scripts/bench_e2e.sh                       # 3 rounds x 8 s, 100 qps open loop
#   ROUNDS=5 SECONDS_PER_RUN=10 QPS=150 scripts/bench_e2e.sh
#   LINK=off scripts/bench_e2e.sh              # loopback only (LINK=on: fail without it)
#   scripts/bench_e2e.sh --no-build --quick     # smoke run, seconds (ctest bench.e2e)
# Every codec row also runs across a 1 Gbit/s link (the server in its own
# network namespace, a veth pair shaped with tc htb) when the machine allows
# namespaces (root); otherwise the output says so and runs loopback only.
# The latency plot goes to docs/img/e2e_latency.png (PLOT= to change).
# SERVERS="glibc=build/server/rankwire-server-glibc jemalloc=build/server/rankwire-server"
# compares server binaries (e.g. allocators) in the same interleaved run.
# Writes bench/results/e2e.md and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
# --no-build (first): use the binaries in BUILD_DIR as they are.
if [[ "${1:-}" == --no-build ]]; then shift; else scripts/setup.sh rankwire-server rankwire-loadgen; fi
mkdir -p bench/results
args=(--build "${BUILD_DIR:-build}" --rounds "${ROUNDS:-3}" --seconds "${SECONDS_PER_RUN:-8}"
      --qps "${QPS:-100}")
[[ -n "${ONLY:-}" ]] && args+=(--only "$ONLY")
args+=(--link "${LINK:-auto}" --plot "${PLOT:-docs/img/e2e_latency.png}")
mkdir -p "$(dirname "${PLOT:-docs/img/e2e_latency.png}")"
# shellcheck disable=SC2206
[[ -n "${SERVERS:-}" ]] && args+=(--servers ${SERVERS})
/usr/bin/python3 bench/e2e_bench.py "${args[@]}" "$@" | tee bench/results/e2e.md
