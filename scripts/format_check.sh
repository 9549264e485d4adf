#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format-14 makes of it with
# the repository's .clang-format (Google style, 100 columns). Prints the
# files that differ and, with VERBOSE=1, the diff.
#
#   scripts/format_check.sh              # every tracked .cc/.h
#   scripts/format_check.sh a.cc b.h     # just these
#   scripts/format_check.sh --fix        # rewrite the files in place
#
# Runs in a few seconds. Generated code (build trees) is not tracked, so it
# is never checked.
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}
command -v "$CLANG_FORMAT" >/dev/null ||
  { echo "format_check.sh: $CLANG_FORMAT not found (apt-get install clang-format-14)" >&2; exit 1; }
fix=0
if [[ "${1:-}" == --fix ]]; then fix=1; shift; fi
if (($#)); then files=("$@"); else mapfile -t files < <(git ls-files '*.cc' '*.h'); fi

if ((fix)); then
  "$CLANG_FORMAT" -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --style=file "$f" | cmp -s - "$f"; then
    echo "format_check.sh: $f is not formatted"
    [[ "${VERBOSE:-0}" == 1 ]] && { "$CLANG_FORMAT" --style=file "$f" | diff -u "$f" - || true; }
    bad=$((bad + 1))
  fi
done
if ((bad)); then
  echo "format_check.sh: $bad of ${#files[@]} files differ from $CLANG_FORMAT; scripts/format_check.sh --fix rewrites them" >&2
  exit 1
fi
echo "format_check.sh: ${#files[@]} files formatted"
