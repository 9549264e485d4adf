#!/usr/bin/python3
"""Runs bench/request_bench pinned to one CPU and prints what the prescan
costs next to the parse and validation of the same request, and what each
server phase of a Rank request costs next to ranking it.

  /usr/bin/python3 bench/request_report.py --build build --cpu 1 --repetitions 9

Repetitions are randomly interleaved (Google Benchmark's
--benchmark_enable_random_interleaving), so drift hits every row alike.
The share is computed per repetition (prescan / (parse + validate) of the
same repetition index) and quoted as median [min-max].
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(build, cpu, repetitions, min_time):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            ["taskset", "-c", str(cpu), os.path.join(build, "bench", "request_bench"),
             # Its tables' rows; BM_Hot (cpu_budget.py's) is named otherwise.
             "--benchmark_filter=^BM_(Prescan|Parse|ParseAndValidate|Shape|Rank)/",
             f"--benchmark_repetitions={repetitions}",
             "--benchmark_enable_random_interleaving=true",
             f"--benchmark_min_time={min_time}",
             "--benchmark_format=json", f"--benchmark_out={out.name}"],
            check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out.name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--cpu", type=int, default=1)
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--min_time", type=float, default=0.2)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run (seconds): 2 repetitions of 0.01 s")
    args = parser.parse_args()
    if args.quick:
        args.repetitions, args.min_time = 2, 0.01
    report = run(args.build, args.cpu, args.repetitions, args.min_time)
    # name -> case -> [ns per repetition, in repetition order]
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    for b in report["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name, case = b["run_name"].split("/", 1)
        times[case][name].append(b["real_time"] if b["time_unit"] == "ns" else None)
    for case in times.values():
        for series in case.values():
            if None in series:
                sys.exit("request_report: expected time_unit ns")
    print("| request | prescan µs | parse µs | parse + validate µs | prescan / (parse + validate) |")
    print("|---|---:|---:|---:|---:|")
    def key(case):
        parts = dict(p.split(":") for p in case.split("/"))
        return (int(parts["candidates"]), int(parts["slice"]))
    for case in sorted(times, key=key):
        t = times[case]
        share = [p / v for p, v in zip(t["BM_Prescan"], t["BM_ParseAndValidate"])]
        med = lambda xs: statistics.median(xs) / 1000
        candidates, slice_bytes = key(case)
        slices = "one slice" if slice_bytes == 0 else f"{slice_bytes // 1024} KiB slices"
        print(f"| {candidates} candidates, {slices} | {med(t['BM_Prescan']):.1f} | "
              f"{med(t['BM_Parse']):.1f} | {med(t['BM_ParseAndValidate']):.1f} | "
              f"{100 * statistics.median(share):.1f} % [{100 * min(share):.1f}–{100 * max(share):.1f}] |")
    phases(times)


def phases(times):
    """The second table: per candidate count (one slice), each phase's median."""
    print()
    print("| request | prescan µs | parse µs | validate µs | budget shape µs | rank (logs to the store) µs |")
    print("|---|---:|---:|---:|---:|---:|")
    for case in sorted(times, key=lambda c: int(c.split("/")[0].split(":")[1])):
        if not case.endswith("slice:0"):
            continue
        t = times[case]
        if "BM_Rank" not in t:
            continue
        med = lambda name: statistics.median(t[name]) / 1000
        validate = statistics.median(
            [v - p for v, p in zip(t["BM_ParseAndValidate"], t["BM_Parse"])]) / 1000
        candidates = case.split("/")[0].split(":")[1]
        print(f"| {candidates} candidates | {med('BM_Prescan'):.1f} | {med('BM_Parse'):.1f} | "
              f"{validate:.1f} | {med('BM_Shape'):.1f} | {med('BM_Rank'):.1f} |")


if __name__ == "__main__":
    main()
