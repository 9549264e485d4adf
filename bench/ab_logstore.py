#!/usr/bin/python3
"""Same-run A/B of two logstore_bench binaries (e.g. a build of main and one
of a change): runs them alternately (A B, B A, ...), the benchmark pinned to
CPU 0 and its redis-server to CPU 1, and prints for the structured-record
representation the median of each binary and the median [min-max] of the
per-alternation ratios new/base of
  - encode: the writer's render + encode CPU per request on one thread;
  - writer: the writer threads' CPU per request in the writer-ceiling run
    (the path a server's writer takes: render, pack, send to Redis);
  - redis: redis-server's CPU per request in that run.
The machine's speed drifts within a minute, so only ratios taken seconds
apart are compared.

Usage:
  /usr/bin/python3 bench/ab_logstore.py OLD_BINARY NEW_BINARY [--rounds 4]
      [--variant record:1] [--seconds 3]
Example (build the old revision in a second tree first):
  /usr/bin/python3 bench/ab_logstore.py /tmp/old/build/bench/logstore_bench \
      build/bench/logstore_bench
"""
import argparse
import re
import subprocess

from ab_util import alternate, print_ratios


def run(binary, args):
    out = subprocess.run(
        ["taskset", "-c", "0", binary, "--redis_cpu=1", f"--variants={args.variant}",
         "--rounds=1", f"--seconds={args.seconds}", "--memory_rounds=1", "--read_samples=200"],
        capture_output=True, text=True, check=True).stdout
    encode = re.search(r"^\| structured record \(R\) \|[^|]*\|[^|]*\|[^|]*\| (\d+) ", out, re.M)
    writer = re.search(r"^\| structured record \(R\), \d+ writers? \| [^|]*\|[^|]*\|[^|]*\| "
                       r"(\d+) [^|]*\| ([\d.]+) \| ([\d.]+) \|", out, re.M)
    rps = re.search(r"^\| structured record \(R\), \d+ writers? \| (\d+) ", out, re.M)
    if not (encode and writer and rps):
        raise RuntimeError("unexpected logstore_bench output:\n" + out)
    redis_cores = float(writer.group(3))
    return {"encode": float(encode.group(1)), "writer": float(writer.group(1)),
            "redis": 1e6 * redis_cores / float(rps.group(1))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="logstore_bench binary of the baseline")
    ap.add_argument("new", help="logstore_bench binary of the change")
    ap.add_argument("--rounds", type=int, default=4, help="alternations (default 4)")
    ap.add_argument("--variant", default="record:1", help="writer-ceiling variant")
    ap.add_argument("--seconds", default="3", help="writer-ceiling window per run")
    args = ap.parse_args()
    runs = alternate(args.base, args.new, args.rounds, lambda binary: run(binary, args))
    print_ratios(runs, "us per request", 20, "{:.0f}")


if __name__ == "__main__":
    main()
