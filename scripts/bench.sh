#!/usr/bin/env bash
# Codec micro-benchmarks, measured the noise-resistant way:
#
#   1. builds bench/codec_bench in build-bench,
#      Release, tests off;
#   2. runs the suite pinned to one core (taskset) in interleaved rounds: each
#      round runs every benchmark once, in an order rotated by round, with a
#      short --benchmark_min_time after a short untimed warm-up
#      (--benchmark_min_warmup_time), one JSON file per round in
#      bench/results/;
#   3. prints, via bench/bench_report.py, a Markdown table (median CPU time,
#      min-max spread over rounds, ratios against protobuf taken within each
#      round) and the issue's target checks, ready to paste into BENCHMARKS.md
#      or a dated note in docs/bench-notes/;
#   4. with --quick, one round of 0.01 s per row and no warm-up: a smoke run
#      (seconds; ctest bench.codec), not numbers to keep;
#   5. with --shapes PNG, also prints the payload-shape sweep and the scaling
#      table (bench/shape_report.py) and draws the scaling plot into PNG;
#      with --probe, codec_bench also runs the probe shapes (payloads unlike
#      the sweep's, bench/shape_payloads.h) and the report has their table.
#
# The machine's speed drifts by 1.4-2.5x within a minute, so one long run
# per benchmark would compare numbers taken at different speeds; interleaving
# puts every benchmark under every speed, and per-round ratios compare rows
# measured seconds apart. A large spread means the machine was busy: re-run.
#
# The warm-up: a row's first iterations fault in the memory its results
# take (a 5000-item decode builds ~6 MB), and with ~40 timed iterations
# those faults were most of what the 5000-item rows added per item:
# decode per item at 5000 over 500 items was 1.71x with no warm-up, 1.06-
# 1.08x after 0.05 s of warm-up (and 1.09x with 2 s timed;
# docs/bench-notes/2026-12-03-probe-shapes-warmup.md).
#
# Usage: scripts/bench.sh [--rounds N] [--min-time SECONDS] [--warmup SECONDS] [--cpu N]
#                         [--filter REGEX] [--quick]
#                         [--no-build] [--out FILE.md] [--shapes PNG] [--probe]
# Environment overrides: BENCH_ROUNDS (5), BENCH_MIN_TIME (0.1),
# BENCH_WARMUP (0.05), BENCH_CPU (1),
# BENCH_FILTER, BENCH_BUILD_DIR (build-bench), BENCH_JOBS (2), BENCH_REVISION
# (what to print as the revision when the tree is not a git checkout).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${BENCH_ROUNDS:-5}
min_time=${BENCH_MIN_TIME:-0.1}
warmup=${BENCH_WARMUP:-0.05}
cpu=${BENCH_CPU:-1}
filter=${BENCH_FILTER:-}
build=${BENCH_BUILD_DIR:-$root/build-bench}
jobs=${BENCH_JOBS:-2}
do_build=1
out=""
shapes_plot=""
probe_args=()
command_line="scripts/bench.sh"
for arg in "$@"; do command_line+=" $(printf '%q' "$arg")"; done

while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --rounds=*) rounds=${1#*=}; shift ;;
    --min-time) min_time=$2; shift 2 ;;
    --min-time=*) min_time=${1#*=}; shift ;;
    --warmup) warmup=$2; shift 2 ;;
    --warmup=*) warmup=${1#*=}; shift ;;
    --cpu) cpu=$2; shift 2 ;;
    --cpu=*) cpu=${1#*=}; shift ;;
    --filter) filter=$2; shift 2 ;;
    --filter=*) filter=${1#*=}; shift ;;
    --no-build) do_build=0; shift ;;
    --quick) rounds=1; min_time=0.01; warmup=0; shift ;;
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --shapes) shapes_plot=$2; shift 2 ;;
    --shapes=*) shapes_plot=${1#*=}; shift ;;
    --probe) probe_args=(--probe); shift ;;
    -h|--help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "bench.sh: --rounds must be a positive integer" >&2
  exit 2
fi

if [[ $do_build == 1 ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRANKWIRE_BUILD_TESTS=OFF \
    -DRANKWIRE_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$build" -j "$jobs" --target codec_bench >/dev/null
fi

results=$root/bench/results
mkdir -p "$results"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
pin=(taskset -c "$cpu")
report=""

bin=$build/bench/codec_bench
filter_args=()
[[ -n $filter ]] && filter_args=("--benchmark_filter=$filter")
count=$("$bin" "${probe_args[@]}" "${filter_args[@]}" --benchmark_list_tests=true | wc -l)
if [[ $count -eq 0 ]]; then
  echo "bench.sh: no benchmark matches '$filter'" >&2
  exit 1
fi
files=()
for ((r = 0; r < rounds; r++)); do
  rotate=$((r * count / rounds))
  file=$results/codec-$stamp-round$r.json
  echo "round $((r + 1))/$rounds (rotated by $rotate of $count)" >&2
  "${pin[@]}" "$bin" "${probe_args[@]}" "${filter_args[@]}" --rotate="$rotate" \
    --benchmark_min_time="$min_time" --benchmark_min_warmup_time="$warmup" \
    --benchmark_out="$file" --benchmark_out_format=json >/dev/null
  files+=("$file")
done
revision_args=()
[[ -n ${BENCH_REVISION:-} ]] && revision_args=(--revision "$BENCH_REVISION")
report=$(cd "$root" && /usr/bin/python3 bench/bench_report.py --command "$command_line" \
  "${revision_args[@]}" "${files[@]}")
if [[ -n $shapes_plot ]]; then
  report+=$'\n\n'$(cd "$root" && /usr/bin/python3 bench/shape_report.py --plot "$shapes_plot" \
    --command "$command_line" "${files[@]}")
fi

printf '%s\n' "$report"
if [[ -n $out ]]; then
  printf '%s\n' "$report" > "$out"
  echo "wrote $out" >&2
fi
