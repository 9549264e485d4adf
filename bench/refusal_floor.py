#!/usr/bin/python3
"""What a refusal costs at the least: bench/refusal_floor (a server that
reads each Rank request and refuses it, nothing else) with the callback API
and with the completion-queue API, alternating, each on CPU 1 with 8
closed-loop callers of rankwire-loadgen on CPU 0 for 4 s. Reports per run
the refusals, their p50/p99 as the callers saw them, and the server's CPU
per refusal (/proc/<pid>/stat); then medians, and the per-pair ratio of
server CPU per refusal (async / callback).

Usage: /usr/bin/python3 bench/refusal_floor.py [--build build] [--rounds 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import time


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(build, api):
    server = subprocess.Popen(["taskset", "-c", "1", os.path.join(build, "bench", "refusal_floor"),
                               f"--api={api}"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        time.sleep(0.3)
        before = cpu_seconds(server.pid)
        out = subprocess.run(
            ["taskset", "-c", "0", os.path.join(build, "client", "rankwire-loadgen"),
             f"--target=127.0.0.1:{port}", "--codec=rankbin", "--log_mode=none",
             "--duration_s=4", "--warmup_s=0", "--concurrency=8", "--json"],
            capture_output=True, text=True, timeout=60).stdout
        after = cpu_seconds(server.pid)
    finally:
        server.kill()
        server.wait()
    r = json.loads(out.strip().splitlines()[-1])
    return {"refused": r["rejected"], "p50": r["rejected_p50_us"], "p99": r["rejected_p99_us"],
            "errors": r["errors"], "cpu_us": 1e6 * (after - before) / max(r["rejected"], 1)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    apis = ["callback", "async"]
    rows = {api: [] for api in apis}
    print("| round | API | refused in 4 s | p50 us | p99 us | server CPU us / refusal | errors |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for rnd in range(args.rounds):
        for api in (apis if rnd % 2 == 0 else apis[::-1]):
            r = one_run(args.build, api)
            rows[api].append(r)
            print(f"| {rnd + 1} | {api} | {r['refused']} | {r['p50']:.0f} | {r['p99']:.0f} | "
                  f"{r['cpu_us']:.1f} | {r['errors']} |", flush=True)
    print()
    for api in apis:
        rs = rows[api]
        print(f"{api}: median p99 {statistics.median(r['p99'] for r in rs):.0f} us, server CPU "
              f"{statistics.median(r['cpu_us'] for r in rs):.1f} us per refusal")
    ratios = [a["cpu_us"] / c["cpu_us"] for a, c in zip(rows["async"], rows["callback"])]
    print(f"async / callback server CPU per refusal, per round: median "
          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})")


if __name__ == "__main__":
    main()
