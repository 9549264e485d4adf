#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang-14, AddressSanitizer
# and UndefinedBehaviorSanitizer in build-fuzz/, then runs each one for
# FUZZ_SECONDS (default 60), FUZZ_JOBS targets at a time, starting from a
# temporary copy of its seed corpus (the checked-in corpus is never modified). Fails if any target
# crashes, leaks, hits undefined behaviour, breaks an invariant, times out
# on one input or runs out of memory; the input that did it is kept in
# build-fuzz/fuzz-artifacts/.
#
# Environment:
#   FUZZ_SECONDS    seconds per target (default 60)
#   FUZZ_TARGETS    targets to run (default: every target tests/fuzz/CMakeLists.txt
#                   lists, read from the build's tests/fuzz/targets.txt)
#   FUZZ_BUILD_DIR  build directory (default build-fuzz)
#   FUZZ_JOBS       build parallelism, and how many targets run at once
#                   (default nproc)
#   FUZZ_KEEP_CORPUS=DIR  keep the grown corpora in DIR/<target>
#
# Needs: clang-14 libclang-rt-14-dev llvm-14 (scripts/setup.sh installs them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-$(nproc)}

for tool in clang-14 clang++-14 llvm-symbolizer-14; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (apt-get install clang-14 libclang-rt-14-dev llvm-14)" >&2; exit 1; }
done

mkdir -p "$build"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRANKWIRE_BUILD_FUZZERS=ON \
  -DRANKWIRE_SANITIZE=address,undefined \
  -DRANKWIRE_BUILD_TESTS=OFF \
  -DRANKWIRE_BUILD_BENCHMARKS=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
# CMake writes its target list as a ;-separated list.
read -r -a targets <<<"${FUZZ_TARGETS:-$(tr ';' ' ' <"$build/tests/fuzz/targets.txt")}"
cmake --build "$build" --parallel "$jobs" --target "${targets[@]/%/_fuzzer}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"

export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# One target: its corpus, its log, its exit status in $work/$t.rc.
fuzz_one() {
  local t=$1 corpus=$work/$1 log=$build/fuzz-$1.log rc=0
  mkdir -p "$corpus"
  cp "$root/tests/fuzz/corpus/$t/"* "$corpus/"
  "$build/tests/fuzz/${t}_fuzzer" "$corpus" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$t-" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  echo "$rc" >"$work/$t.rc"
}

# The targets run $jobs at a time (each is single-threaded), so on 2 cores
# four targets take two rounds of FUZZ_SECONDS instead of four. Results are
# printed per target, in order, once all have finished.
echo "fuzz.sh: ${targets[*]} for ${seconds}s each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

failed=()
for t in "${targets[@]}"; do
  corpus=$work/$t
  log=$build/fuzz-$t.log
  if [[ "$(cat "$work/$t.rc" 2>/dev/null || echo missing)" == 0 ]]; then
    echo "fuzz.sh: $t"
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)" "$log" | sed "s/^/  /" || true
    echo "  corpus: $(ls "$corpus" | wc -l) inputs"
  else
    echo "fuzz.sh: $t FAILED; last lines of $log:" >&2
    tail -n 60 "$log" >&2
    failed+=("$t")
  fi
  if [[ -n "${FUZZ_KEEP_CORPUS:-}" ]]; then
    mkdir -p "$FUZZ_KEEP_CORPUS/$t"
    cp "$corpus/"* "$FUZZ_KEEP_CORPUS/$t/"
  fi
done

if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]} (inputs in $artifacts)" >&2
  exit 1
fi
echo "fuzz.sh: ${targets[*]}: no crash in ${seconds}s each"
