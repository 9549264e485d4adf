#!/usr/bin/python3
"""Same-run A/B of two codec_count binaries by time *and page faults* per
item: what an allocator setting (server/jemalloc_conf.cc) changes for large
results. For each shape, operation and item count, each binary runs the
operation N and 3N times under `perf stat -e task-clock,page-faults`; the
difference is 2N operations with start-up and payload generation cancelled
out. Binaries alternate (A B, B A, ...), pinned to one CPU.

Usage:
  /usr/bin/python3 bench/ab_faults.py OLD_CODEC_COUNT NEW_CODEC_COUNT \
      [--rounds 5] [--cpu 1] [--items 500,5000]
Prints, per case, ns per item and faults per operation of each binary
(medians) and the median [min-max] of the per-alternation ratio new/old of
ns per item.
"""
import argparse
import statistics
import subprocess

from harness import alternate, print_ratios

CASES = [("stringheavy", "encode"), ("manykeys", "encode"), ("mixed", "encode"),
         ("stringheavy", "decode"), ("manykeys", "decode"), ("mixed", "decode")]
# Operations per measurement: enough that the 2N difference is ~10-100 ms.
OPS_PER_ITEMS = {10: 4000, 100: 800, 500: 200, 2000: 50, 5000: 20}


def perf_stat(args, binary, shape, op, items, iterations):
    cmd = ["taskset", "-c", args.cpu, "perf", "stat", "-x,", "-e", "task-clock,page-faults",
           binary, f"--shape={shape}", f"--op={op}", f"--items={items}",
           f"--iterations={iterations}"]
    stderr = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    values = {}
    for line in stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in ("task-clock", "page-faults"):
            values[fields[2]] = float(fields[0])
    return values["task-clock"] * 1e6, values["page-faults"]  # task-clock is in ms


def measure(args, binary):
    result = {}
    for shape, op in CASES:
        for items in args.items:
            n = OPS_PER_ITEMS.get(items, max(1, 100000 // items))
            t1, f1 = perf_stat(args, binary, shape, op, items, n)
            t3, f3 = perf_stat(args, binary, shape, op, items, 3 * n)
            name = f"{shape}/{op}/{items}"
            result[f"{name} ns/item"] = (t3 - t1) / (2 * n * items)
            result[f"{name} faults/op"] = max(0.0, (f3 - f1) / (2 * n))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", default="1")
    parser.add_argument("--items", default="500,5000")
    args = parser.parse_args()
    args.items = [int(x) for x in args.items.split(",")]
    results = alternate(args.old, args.new, args.rounds, lambda b: measure(args, b))
    pick = lambda suffix: {k: [{q: v for q, v in r.items() if q.endswith(suffix)}
                               for r in rs] for k, rs in results.items()}
    print_ratios(pick("ns/item"), "ns per item", 30, fmt="{:.0f}")
    # A ratio of fault counts near zero means nothing: medians only.
    print(f"\n{'faults per operation':30s} {'base':>10s} {'new':>10s}")
    for key in results["base"][0]:
        if key.endswith("faults/op"):
            base, new = (statistics.median(r[key] for r in results[k]) for k in ("base", "new"))
            print(f"{key:30s} {base:10.0f} {new:10.0f}")


if __name__ == "__main__":
    main()
