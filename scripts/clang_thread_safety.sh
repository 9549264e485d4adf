#!/usr/bin/env bash
# Builds every product library with clang-14 and -Wthread-safety -Werror,
# so the ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations are
# checked (g++ ignores them). Libraries only, no tests or binaries: the
# annotations live there, and it keeps the CI cost to one extra compile of
# the product code (through ccache when present).
#
# Environment: CLANG_BUILD_DIR (default build-clang), CLANG_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${CLANG_BUILD_DIR:-build-clang}
jobs=${CLANG_JOBS:-2}
command -v clang++-14 >/dev/null || { echo "clang_thread_safety.sh: clang++-14 not found (apt-get install clang-14)" >&2; exit 1; }
LAUNCHER=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${LAUNCHER[@]}" -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror" \
  -DRANKWIRE_BUILD_TESTS=OFF -DRANKWIRE_BUILD_BENCHMARKS=OFF >/dev/null
libraries=(rankwire_base rankwire_rpc rankwire_compression rankwire_codec rankwire_logstore
           rankwire_workload rankwire_server rankwire_client)
cmake --build "$build" -j "$jobs" --target "${libraries[@]}"
echo "clang_thread_safety.sh: ${#libraries[@]} libraries build clean with -Wthread-safety -Werror"
