#!/usr/bin/env bash
# ThreadSanitizer over the concurrent parts of the server: builds, with
# clang-14 -fsanitize=thread, only the targets the concurrency tests need,
# and runs those tests:
#   - the worker pool (server/worker_pool_test) and admission control
#     (server/admission_test) with many threads at once;
#   - the model set's atomic swap under readers (ranking/model_set_test) and
#     the reloader (server/model_reloader_test: its poll thread beside
#     synchronous reloads);
#   - the async log consumer and its writers against a real redis-server
#     (logstore_test: the Redis and in-process backends' behavioural suite,
#     reconnects, a stalled store);
#   - the real server, itself built with TSan, ranking, logging to Redis,
#     overloaded, and draining on SIGTERM (server_integration_test and
#     hostile_integration_test, a selection), and reloading models on
#     SIGHUP while callers rank (model_reload_integration_test, a
#     selection).
# Any TSan report, from a test or from a server it started, fails the run:
# reports go to files (TSAN_OPTIONS log_path) which are printed at the end.
# Debian's abseil is not instrumented; cmake/RankwireTsan.cmake makes its
# Mutex and friends visible to TSan. tests/tsan/suppressions.txt holds the
# reports that are not ours, each with its reason.
#
# Environment: TSAN_BUILD_DIR (default build-tsan), TSAN_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${TSAN_BUILD_DIR:-build-tsan}
jobs=${TSAN_JOBS:-$(nproc)}
command -v clang++-14 >/dev/null || { echo "tsan.sh: clang++-14 not found (apt-get install clang-14)" >&2; exit 1; }
LAUNCHER=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
t0=$SECONDS
# -O1 and line tables only: TSan's stacks need no more, and it halves the
# compile time of -O2 -g.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${LAUNCHER[@]}" -DRANKWIRE_SANITIZE=thread \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="-Werror=thread-safety" \
  -DRANKWIRE_BUILD_TESTS=ON -DRANKWIRE_BUILD_BENCHMARKS=OFF >/dev/null
tests=(worker_pool_test admission_test model_set_test model_reloader_test logstore_test
       server_integration_test hostile_integration_test model_reload_integration_test)
# Every product library too: this clang build is also the check of the
# ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations
# (-Wthread-safety, an error here), which g++ ignores; one clang build in CI
# instead of two (scripts/clang_thread_safety.sh does it alone).
libraries=(rankwire_base rankwire_rpc rankwire_compression rankwire_codec rankwire_logstore
           rankwire_workload rankwire_server rankwire_client)
cmake --build "$build" -j "$jobs" --target rankwire-server "${libraries[@]}" "${tests[@]}"
echo "tsan.sh: build took $((SECONDS - t0)) s"

reports=$(mktemp -d /tmp/rankwire-tsan.XXXXXX)
trap 'rm -rf "$reports"' EXIT
# halt_on_error=0: a race is reported and the test goes on, so one run
# shows every report; the files decide the outcome.
export TSAN_OPTIONS="log_path=$reports/tsan second_deadlock_stack=1 halt_on_error=0 exitcode=0 \
suppressions=$PWD/tests/tsan/suppressions.txt history_size=4"
failed=0
run() {
  local bin=$1; shift
  local t=$SECONDS
  if ! "$build/$bin" --gtest_brief=1 "$@"; then
    echo "tsan.sh: $bin FAILED" >&2
    failed=1
  fi
  echo "tsan.sh: $bin took $((SECONDS - t)) s"
}
t1=$SECONDS
run server/worker_pool_test
run server/admission_test
run ranking/model_set_test
run server/model_reloader_test
# The consumer, its writers and the sinks; not the record and value
# encodings, which are single-threaded.
run logstore/logstore_test \
  --gtest_filter='*Behaviour*:*Redis*:*Async*:*Reconnect*:*Memory*'
run tests/integration/server_integration_test --gtest_filter='*Logs*:*Redis*:*Sigterm*'
run tests/integration/hostile_integration_test \
  --gtest_filter='*Overload*:*AdmittedPastTheWorkers*:*StalledLogStore*'
# SIGHUP reloads (the reloader's thread) while two callers rank on the
# serving threads, and the replaced models freed.
run tests/integration/model_reload_integration_test \
  --gtest_filter='*ManyReloadsUnderLoadFailNothingAndLeakNothing*:*SighupLoadsTheNewestVersion*'
echo "tsan.sh: tests took $((SECONDS - t1)) s"

if compgen -G "$reports/tsan*" >/dev/null; then
  cat "$reports"/tsan*
  echo "tsan.sh: ThreadSanitizer reported $(cat "$reports"/tsan* | grep -c '^WARNING: ThreadSanitizer') problem(s), above" >&2
  exit 1
fi
if ((failed)); then
  echo "tsan.sh: tests failed under ThreadSanitizer" >&2
  exit 1
fi
echo "tsan.sh: no ThreadSanitizer reports"
