#!/usr/bin/python3
"""Same-run A/B of two codec_bench binaries (e.g. a build of main and one of
a change): runs them alternately (A B, B A, ...), pinned to one CPU with
taskset, and prints for each benchmark the median time of each binary and
the median [min-max] of the per-alternation ratios new/base. The machine's
speed drifts within a minute, so only ratios taken seconds apart are
compared.

Usage:
  /usr/bin/python3 bench/ab_codec.py OLD_BINARY NEW_BINARY FILTER_REGEX \
      [--rounds 8] [--cpu 1] [--min_time 0.3] [--warmup 0.05] [--probe]
Example (build the old revision in a second tree first):
  /usr/bin/python3 bench/ab_codec.py /tmp/old/build/bench/codec_bench \
      build/bench/codec_bench 'BM_Encode/rankbin/(items_500|shape_manykeys)$'
"""
import argparse
import json
import subprocess

from harness import alternate, print_ratios


def run(binary, args):
    out = subprocess.run(
        ["taskset", "-c", args.cpu, binary, *(["--probe"] if args.probe else []),
         f"--benchmark_filter={args.filter}",
         f"--benchmark_min_time={args.min_time}",
         f"--benchmark_min_warmup_time={args.warmup}", "--benchmark_format=json"],
        capture_output=True, text=True, check=True).stdout
    return {b["name"]: b["real_time"] for b in json.loads(out)["benchmarks"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="codec_bench binary of the baseline")
    ap.add_argument("new", help="codec_bench binary of the change")
    ap.add_argument("filter", help="--benchmark_filter regex")
    ap.add_argument("--rounds", type=int, default=8, help="alternations (default 8)")
    ap.add_argument("--cpu", default="1", help="CPU to pin to (default 1)")
    ap.add_argument("--min_time", default="0.3", help="--benchmark_min_time per run")
    ap.add_argument("--warmup", default="0.05",
                    help="--benchmark_min_warmup_time per run (untimed; as scripts/bench.sh)")
    ap.add_argument("--probe", action="store_true",
                    help="pass --probe (the probe shapes) to both binaries")
    args = ap.parse_args()
    times = alternate(args.base, args.new, args.rounds, lambda binary: run(binary, args))
    print_ratios(times, "benchmark", 55)


if __name__ == "__main__":
    main()
