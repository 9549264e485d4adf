#!/usr/bin/env bash
# Overload and TLS benchmark (bench/hostile_bench.py): 4x --max_concurrent_rank
# closed-loop load against an unloaded baseline in the same run, and TLS
# against plaintext, interleaved rounds, medians with spread.
#
#   scripts/bench_hostile.sh                    # 5 rounds x 5 s, limit 2
#   ROUNDS=7 SECONDS_PER_RUN=8 LIMIT=2 ONLY=tls scripts/bench_hostile.sh
#   scripts/bench_hostile.sh --no-build --quick  # smoke run, seconds (ctest bench.hostile)
# Writes bench/results/hostile.md and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
# --no-build (first): use the binaries in BUILD_DIR as they are.
if [[ "${1:-}" == --no-build ]]; then shift; else scripts/setup.sh rankwire-server rankwire-loadgen; fi
mkdir -p bench/results
args=(--build "${BUILD_DIR:-build}" --rounds "${ROUNDS:-5}" --seconds "${SECONDS_PER_RUN:-5}"
      --limit "${LIMIT:-2}")
[[ -n "${ONLY:-}" ]] && args+=(--only "$ONLY")
/usr/bin/python3 bench/hostile_bench.py "${args[@]}" "$@" | tee bench/results/hostile.md
