#!/usr/bin/env bash
# clang-tidy-14 with the repository's .clang-tidy over the product sources
# (base, client, codec, logstore, rpc, metrics, request, model, ranking,
# server, workload; not tests, benchmarks
# or generated code) and the product headers they include. Fails on any
# finding.
#
#   scripts/tidy.sh                        # every product source
#   scripts/tidy.sh ranking/ranker.cc ...   # just these
#   TIDY_CHANGED_FROM=origin/main scripts/tidy.sh  # sources changed since
#
# Needs a configured build with its compile_commands.json and generated
# protobuf headers: TIDY_BUILD_DIR (default build-clang, the tree
# scripts/clang_thread_safety.sh builds; build/ works too). TIDY_JOBS
# defaults to nproc.
set -euo pipefail
cd "$(dirname "$0")/.."

TIDY=${CLANG_TIDY:-clang-tidy-14}
build=${TIDY_BUILD_DIR:-build-clang}
jobs=${TIDY_JOBS:-$(nproc)}
command -v "$TIDY" >/dev/null || { echo "tidy.sh: $TIDY not found (apt-get install clang-tidy-14)" >&2; exit 1; }
[[ -f "$build/compile_commands.json" ]] ||
  { echo "tidy.sh: no $build/compile_commands.json; configure and build first (scripts/clang_thread_safety.sh)" >&2; exit 1; }

product='^(base|client|codec|logstore|rpc|metrics|request|model|ranking|server|workload)/'
if (($#)); then
  files=("$@")
elif [[ -n "${TIDY_CHANGED_FROM:-}" ]]; then
  mapfile -t files < <(git diff --name-only --diff-filter=d "$TIDY_CHANGED_FROM" -- '*.cc' |
                       grep -E "$product" | grep -v '_test\.cc$' || true)
else
  mapfile -t files < <(git ls-files '*.cc' | grep -E "$product" | grep -v '_test\.cc$')
fi
# Only what this build compiles (a source behind an option it lacks is
# skipped, not failed).
mapfile -t compiled < <(/usr/bin/python3 -c '
import json, os, sys
for e in json.load(open(sys.argv[1])):
    print(os.path.relpath(os.path.join(e["directory"], e["file"])))' "$build/compile_commands.json" | sort -u)
mapfile -t files < <(comm -12 <(printf '%s\n' "${files[@]}" | sort -u) <(printf '%s\n' "${compiled[@]}"))
if ((${#files[@]} == 0)); then echo "tidy.sh: no product sources to check"; exit 0; fi

# Product headers, by their source path or the build tree's symlinked
# include directories (cmake/RankwireComponent.cmake).
header_filter="^$PWD/(build[^/]*/include/[^/]+/)?(base|client|codec|logstore|rpc|metrics|request|model|ranking|server|workload)/"
t0=$SECONDS
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -n 1 "$TIDY" -p "$build" --quiet --header-filter="$header_filter" \
    >"$out" 2>/dev/null || status=$?
# A header's findings are printed once per source including it.
/usr/bin/python3 - "$out" <<'PY'
import re, sys
seen, block = set(), []
def flush():
    if block and block[0] not in seen:
        seen.add(block[0]); sys.stdout.write("".join(block))
for line in open(sys.argv[1]):
    if re.match(r"^\S+:\d+:\d+: (warning|error):", line):
        flush(); block = [line]
    elif block:
        block.append(line)
flush()
PY
if ((status)); then
  echo "tidy.sh: clang-tidy findings in ${#files[@]} sources (above); fix them or NOLINT(check) with a reason" >&2
  exit 1
fi
echo "tidy.sh: ${#files[@]} sources clean ($((SECONDS - t0)) s)"
