#!/usr/bin/python3
"""Same-run A/B of two codec_bench binaries (e.g. a build of main and one of
a change): runs them alternately (A B, B A, ...), pinned to one CPU with
taskset, and prints for each benchmark the median time of each binary and
the median [min-max] of the per-alternation ratios new/base. The machine's
speed drifts within a minute, so only ratios taken seconds apart are
compared.

Usage:
  /usr/bin/python3 bench/ab_codec.py OLD_BINARY NEW_BINARY FILTER_REGEX \
      [--rounds 8] [--cpu 1] [--min_time 0.3]
Example (build the old revision in a second tree first):
  /usr/bin/python3 bench/ab_codec.py /tmp/old/build/bench/codec_bench \
      build/bench/codec_bench 'BM_Encode/rankbin/(items_500|shape_manykeys)$'
"""
import argparse
import json
import statistics
import subprocess


def run(binary, args):
    out = subprocess.run(
        ["taskset", "-c", args.cpu, binary, f"--benchmark_filter={args.filter}",
         f"--benchmark_min_time={args.min_time}", "--benchmark_format=json"],
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
    args = ap.parse_args()
    times = {"base": [], "new": []}
    for r in range(args.rounds):
        order = [("base", args.base), ("new", args.new)]
        if r % 2:
            order.reverse()
        for name, binary in order:
            times[name].append(run(binary, args))
    print(f"{'benchmark':55s} {'base':>10s} {'new':>10s}  new/base median [min-max]")
    for bench in times["base"][0]:
        ratios = [n[bench] / b[bench] for b, n in zip(times["base"], times["new"]) if bench in n]
        if not ratios:
            continue
        base = statistics.median(t[bench] for t in times["base"])
        new = statistics.median(t[bench] for t in times["new"] if bench in t)
        print(f"{bench:55s} {base:10.2f} {new:10.2f}  "
              f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]")


if __name__ == "__main__":
    main()
