#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs and builds (setup.sh),
# runs every ctest test (unit, codec conformance, fuzz-corpus replay, log
# store against a real redis-server, integration against the real server,
# Python interop, the fleet on loopback), checks the formatting
# (scripts/format_check.sh), runs the concurrency tests under ThreadSanitizer
# in a clang build that also checks the thread-safety annotations of every
# product library (scripts/tsan.sh; TSAN=0 skips it), runs clang-tidy on the
# product sources this branch changed (scripts/tidy.sh; TIDY=all checks
# every one, TIDY=0 none), builds and
# smoke-tests the container image (scripts/container.sh; CONTAINER=0 skips
# it), then runs each fuzzer under ASan/UBSan for FUZZ_SECONDS (default 60;
# 0 skips fuzzing). The product build has -Werror (RANKWIRE_WERROR).
set -euo pipefail
cd "$(dirname "$0")/.."

# -Werror: CI fails on a new compiler warning (RANKWIRE_WERROR, off by
# default for users building from source).
# Exported: scripts/container.sh builds the image with the same options.
export CMAKE_ARGS="${CMAKE_ARGS:-} -DRANKWIRE_WERROR=ON"
scripts/setup.sh
# The tree is clang-format-14's output (.clang-format): a few seconds.
scripts/format_check.sh
BUILD_DIR=${BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" --timeout 300)

# ThreadSanitizer over the worker pool, admission, the log consumer and its
# writers, and the server's drain (scripts/tsan.sh); the same clang build
# checks the thread-safety annotations of every product library
# (-Werror=thread-safety). TSAN=0 skips it (and then runs
# scripts/clang_thread_safety.sh for the annotations, which tidy's
# compile database comes from).
if [[ "${TSAN:-1}" != 0 ]]; then
  t0=$SECONDS
  scripts/tsan.sh
  echo "test.sh: ThreadSanitizer build and tests took $((SECONDS - t0)) s"
else
  echo "test.sh: TSAN=0: ThreadSanitizer SKIPPED on request"
  scripts/clang_thread_safety.sh
  export TSAN_BUILD_DIR=build-clang
fi

# clang-tidy (.clang-tidy) over the TSan build's compile_commands.json (clang's
# view of the same sources). All the
# product sources together take ~3-5 minutes on 2 cores, over CI's budget, so by
# default only the product sources this branch changed are checked: since
# its merge base with TIDY_BASE (default origin/main, else main), or, on
# that branch itself, since HEAD's first parent (what the last merge
# brought). TIDY=all checks them all, TIDY=0 none.
tidy_base=${TIDY_BASE:-origin/main}
git rev-parse -q --verify "$tidy_base" >/dev/null || tidy_base=main
case "${TIDY:-changed}" in
  0) echo "test.sh: TIDY=0: clang-tidy SKIPPED on request" ;;
  all) TIDY_BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan} scripts/tidy.sh ;;
  *)
    if base=$(git merge-base HEAD "$tidy_base" 2>/dev/null); then
      if [[ "$base" == "$(git rev-parse HEAD)" ]]; then base=$(git rev-parse -q --verify HEAD~1 || echo "$base"); fi
      TIDY_BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan} TIDY_CHANGED_FROM=$base scripts/tidy.sh
    else
      echo "test.sh: no $tidy_base to diff against: clang-tidy SKIPPED (TIDY=all runs it on every source)"
    fi ;;
esac

# The container image: built from deploy/Dockerfile with buildah and
# smoke-tested (scripts/container.sh). A machine that refuses buildah fails
# here; CONTAINER=0 skips the step only when asked, and says so.
if [[ "${CONTAINER:-1}" != 0 ]]; then
  t0=$SECONDS
  scripts/container.sh
  echo "test.sh: container build and smoke test took $((SECONDS - t0)) s"
else
  echo "test.sh: CONTAINER=0: container build and smoke test SKIPPED on request"
fi

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
if [[ "$FUZZ_SECONDS" != 0 ]]; then
  FUZZ_SECONDS="$FUZZ_SECONDS" scripts/fuzz.sh
fi
echo "test.sh: all tests passed"
