#!/usr/bin/python3
"""End to end, same run: the log writers' number coder paths against each
other (--log_numbers=scalar vs auto, which is AVX2 or AVX-512 where the CPU
has it), with the server on CPU 1 and 2 writers, Redis and the load
generator on CPU 0. Measures the logging-off peak (closed loop, median of
one run per round), then open loop at 50/80/100 % of it, every variant once
per fraction and round in rotated order: achieved qps, p99, the share of
log lines dropped, the writers' CPU per request, and how busy each of the
two CPUs was in the middle of the measured window (/proc/stat).

Usage: /usr/bin/python3 bench/log_numbers_e2e.py [--build build] [--rounds 2]
"""
import argparse
import shutil
import sys
import tempfile
import time
import statistics
import threading

from e2e_bench import Redis, Server, loadgen


def busy_share(cpus, start, window, out):
    """After `start` s, each CPU's busy share over `window` s, into `out`."""
    def sample():
        times = {}
        with open("/proc/stat") as f:
            for line in f:
                fields = line.split()
                if fields[0] in cpus:
                    values = [int(v) for v in fields[1:]]
                    times[fields[0]] = (sum(values), values[3] + values[4])  # idle + iowait
        return times
    time.sleep(start)
    before = sample()
    time.sleep(window)
    after = sample()
    for cpu in cpus:
        total = after[cpu][0] - before[cpu][0]
        out[cpu] = 1 - (after[cpu][1] - before[cpu][1]) / total if total else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=4)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp()
    redis = Redis(workdir)
    store = ["--log_mode=store", "--logstore=redis", f"--redis_addr=127.0.0.1:{redis.port}",
             "--log_format=record", "--log_writers=2", "--log_writer_cpus=0"]
    variants = [("off", ["--log_mode=none"]), ("scalar", [*store, "--log_numbers=scalar"]),
                ("auto", [*store, "--log_numbers=auto"])]
    try:
        peaks = []
        for _ in range(args.rounds):
            server = Server(args.build, ["--codec=rankbin", "--log_mode=none"])
            try:
                peaks.append(loadgen(args.build, server, 0, args.seconds, 2)["qps"])
            finally:
                server.close()
        peak = statistics.median(peaks)
        print(f"logging-off peak {peak:.0f} qps (rounds: {', '.join(f'{p:.0f}' for p in peaks)})")
        print("\n| round | share of peak | variant | achieved qps | p99 us | CPU 0 / CPU 1 busy | "
              "dropped | writer CPU us / request |\n|---|---:|---|---:|---:|---|---:|---:|")
        for rnd in range(args.rounds):
            for fraction in (0.5, 0.8, 1.0):
                for name, flags in variants[rnd % 3:] + variants[:rnd % 3]:
                    redis.cli("FLUSHALL", "SYNC")
                    server = Server(args.build, ["--codec=rankbin", *flags])
                    busy = {}
                    # The load generator warms up for 2 s, then measures.
                    sampler = threading.Thread(target=busy_share, args=(
                        ("cpu0", "cpu1"), 2 + args.seconds / 4, args.seconds / 2, busy))
                    sampler.start()
                    try:
                        run = loadgen(args.build, server, peak * fraction, args.seconds, 4)
                        sampler.join()
                        time.sleep(1.5)  # Let the writers finish what is queued.
                        m = server.metrics()
                        cpu = server.writer_cpu_seconds()
                    finally:
                        server.close()
                    count = lambda k: m.get(f'rankwire_log_items_total{{outcome="{k}"}}', 0.0)
                    lines = count("enqueued") + count("dropped_queue_full")
                    dropped = count("dropped_queue_full") + count("dropped_store_error")
                    requests = count("enqueued") / 500
                    print(f"| {rnd + 1} | {fraction:.0%} | {name} | {run['qps']:.0f} | "
                          f"{run['p99_us']:.0f} | {busy['cpu0']:.2f} / {busy['cpu1']:.2f} | "
                          + (f"{100 * dropped / lines:.1f} % | {1e6 * cpu / requests:.0f} |"
                             if lines else "- | - |"), flush=True)
    finally:
        redis.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
