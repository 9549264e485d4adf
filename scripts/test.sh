#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs and builds (setup.sh),
# runs every ctest test (unit, codec conformance, fuzz-corpus replay, log
# store against a real redis-server, integration against the real server,
# Python interop), then runs each fuzzer under ASan/UBSan for FUZZ_SECONDS
# (default 60; 0 skips fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" --timeout 300)

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
if [[ "$FUZZ_SECONDS" != 0 ]]; then
  FUZZ_SECONDS="$FUZZ_SECONDS" scripts/fuzz.sh
fi
echo "test.sh: all tests passed"
