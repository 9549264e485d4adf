#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs and builds (setup.sh),
# runs every ctest test (unit, codec conformance, fuzz-corpus replay, log
# store against a real redis-server, integration against the real server,
# Python interop), builds the libraries with clang's -Wthread-safety -Werror
# (scripts/clang_thread_safety.sh), then runs each fuzzer under ASan/UBSan
# for FUZZ_SECONDS (default 60; 0 skips fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" --timeout 300)

scripts/clang_thread_safety.sh

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
if [[ "$FUZZ_SECONDS" != 0 ]]; then
  FUZZ_SECONDS="$FUZZ_SECONDS" scripts/fuzz.sh
fi
echo "test.sh: all tests passed"
