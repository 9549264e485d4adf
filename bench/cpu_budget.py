"""CPU budget: what one Rank request costs the server, against what it must.

Every row is a server pinned to one core (CPU 1) under the same load from
rankwire-loadgen on the other core (CPU 0, with Redis), measured in
interleaved rounds (A B C ... A B C ...) because this machine's speed drifts
within a minute. Per row and round:

  - server CPU per request: the CPU time of all the server's threads
    (/proc/<pid>/task/*/schedstat, nanoseconds) over the requests answered;
  - context switches per request (voluntary + involuntary, every thread);
  - Redis CPU per request, for rows that log to Redis;
  - the server's own phase accounting (rankwire_server_phase_cpu_seconds_total,
    the thread CPU time of each phase: request parse, validate, score,
    result build, encode, log hand-off on the ranking thread; log format
    and log store on the log writers).

Rows (--rows picks some):

  floor            serve_floor: reads each request, answers recorded bytes
                   of a real rankbin response (bench/serve_floor.cc)
  rankbin/none     rankwire-server --codec=rankbin --log_mode=none
  rankbin/memory   logs in the in-process store
  rankbin/redis    logs in Redis
  protobuf/none    the baseline codec, no logs
  protobuf/inline  the baseline service: protobuf, logs in the response

Ratios are taken within a round (against the floor, and against
protobuf/inline), then their median and range over rounds are reported. The
phase table adds the floor's CPU per request as "transport" and checks that
transport + phases is within 10 % of the measured total.

Closed loop (--concurrency callers, peak rate) first; then, with --open, an
open-loop run of each row at --open_fraction of its closed-loop median rate
(latency percentiles and CPU per request at a load the server keeps up with).

Usage:
  bench/cpu_budget.py --build build [--rounds 3] [--seconds 8] [--open]
  scripts/bench_cpu.sh   (builds, then runs this with the defaults)
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from e2e_bench import MODEL, Redis, free_port  # noqa: E402

SERVER_CPU = "1"
LOAD_CPU = "0"

ROWS = {
    "rankbin/none": ["--codec=rankbin", "--log_mode=none"],
    "rankbin/memory": ["--codec=rankbin", "--log_mode=store", "--logstore=memory"],
    "rankbin/redis": ["--codec=rankbin", "--log_mode=store", "--logstore=redis"],
    "protobuf/none": ["--codec=protobuf", "--log_mode=none"],
    "protobuf/inline": ["--codec=protobuf", "--log_mode=inline"],
}
DEFAULT_ROWS = ["floor", "rankbin/none", "rankbin/memory", "rankbin/redis", "protobuf/inline"]
# Phases the server accounts for, in request order (server/server_metrics.h).
PHASES = ["parse", "validate", "score", "build", "encode", "log_handoff", "log_format",
          "log_store"]


def proc_cpu_ns(pid):
    """CPU time of every live thread of `pid`, in ns, and their context switches."""
    cpu = switches = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                cpu += int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if "ctxt_switches" in line:
                        switches += int(line.split()[1])
        except OSError:
            continue  # A thread that ended between listing and reading.
    return cpu, switches


class Process:
    """A server process pinned to SERVER_CPU that prints its port on start-up."""

    def __init__(self, argv, pattern):
        self.log = tempfile.NamedTemporaryFile(mode="w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, *argv],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            with open(self.log.name) as f:
                m = re.search(pattern, f.read())
            if m:
                self.match = m
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{argv[0]} did not start: " + open(self.log.name).read())

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log.name)


def start_server(args, flags, redis):
    if "--logstore=redis" in flags:
        flags = [*flags, f"--redis_addr=127.0.0.1:{redis.port}"]
    binary = os.path.join(args.build, "server", "rankwire-server")
    p = Process([binary, "--port=0", "--metrics_port=0", "--address=127.0.0.1",
                 f"--model={MODEL}", f"--max_concurrent_rank={args.max_concurrent}", *flags,
                 *args.server_flag],
                r"listening port=(\d+) metrics_port=(-?\d+)")
    p.port, p.metrics_port = int(p.match.group(1)), int(p.match.group(2))
    return p


def start_floor(args, redis):
    real = start_server(args, ROWS["rankbin/none"], redis)
    try:
        floor = Process([os.path.join(args.build, "bench", "serve_floor"), "--port=0",
                         f"--record_from=127.0.0.1:{real.port}", "--codec=rankbin"],
                        r"listening port=(\d+) response_bytes=(\d+)")
    finally:
        real.close()
    floor.port, floor.metrics_port = int(floor.match.group(1)), -1
    return floor


def phase_cpu(metrics_port):
    """Per phase, (sampled CPU ns, sampled calls) from /metrics (empty if absent)."""
    if metrics_port < 0:
        return {}
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
    out = {}
    for name, slot in (("rankwire_phase_cpu_sample_nanoseconds_total", 0),
                       ("rankwire_phase_cpu_samples_total", 1)):
        for m in re.finditer(r'^' + name + r'\{phase="(\w+)"\} (\S+)$', text, re.M):
            out.setdefault(m.group(1), [0.0, 0.0])[slot] = float(m.group(2))
    return out


def phase_means(before, after):
    """Mean CPU µs per call of each phase between two phase_cpu() readings."""
    out = {}
    for phase, (ns, samples) in after.items():
        ns0, samples0 = before.get(phase, (0.0, 0.0))
        if samples > samples0:
            out[phase] = (ns - ns0) / (samples - samples0) / 1e3
    return out


def loadgen(args, port, seconds, qps=0.0, warmup=0.0):
    cmd = ["taskset", "-c", LOAD_CPU, os.path.join(args.build, "client", "rankwire-loadgen"),
           f"--target=127.0.0.1:{port}", f"--concurrency={args.concurrency}",
           f"--duration_s={seconds}", f"--warmup_s={warmup}", f"--qps={qps}", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def measure(args, row, redis, qps=0.0):
    """One row once: start, warm up, measure, stop."""
    server = start_floor(args, redis) if row == "floor" else start_server(args, ROWS[row], redis)
    try:
        loadgen(args, server.port, 1.0, qps=qps)  # Warm-up: connections, caches.
        cpu0, cs0 = proc_cpu_ns(server.proc.pid)
        rcpu0, _ = proc_cpu_ns(redis.proc.pid)
        phases0 = phase_cpu(server.metrics_port)
        result = loadgen(args, server.port, args.seconds, qps=qps)
        cpu1, cs1 = proc_cpu_ns(server.proc.pid)
        rcpu1, _ = proc_cpu_ns(redis.proc.pid)
        phases1 = phase_cpu(server.metrics_port)
    finally:
        server.close()
    n = max(result["requests"], 1)
    errors = sum(v for k, v in result.get("by_status", {}).items() if k != "OK")
    return {
        "qps": result["qps"],
        "requests": result["requests"],
        "errors": errors,
        "cpu_us": (cpu1 - cpu0) / 1e3 / n,
        "cs": (cs1 - cs0) / n,
        "redis_us": (rcpu1 - rcpu0) / 1e3 / n if "redis" in row else None,
        "p50_us": result.get("p50_us"),
        "p99_us": result.get("p99_us"),
        "phases": phase_means(phases0, phases1),
    }


def med(values):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    m = statistics.median(values)
    fmt = (lambda v: f"{v:.2f}") if m < 10 else (lambda v: f"{v:.0f}")
    if len(values) == 1:
        return fmt(m)
    return f"{fmt(m)} [{fmt(min(values))}–{fmt(max(values))}]"


def run_rounds(args, redis, rows, qps_by_row=None):
    rounds = []
    for r in range(args.rounds):
        order = rows[r % len(rows):] + rows[:r % len(rows)]  # Rotate the order.
        got = {}
        for row in order:
            qps = qps_by_row.get(row, 0.0) if qps_by_row else 0.0
            got[row] = measure(args, row, redis, qps)
            print(f"round {r + 1} {row}: {got[row]['qps']:.0f} qps, "
                  f"{got[row]['cpu_us']:.0f} us CPU, {got[row]['cs']:.1f} cs per request",
                  file=sys.stderr)
        rounds.append(got)
    return rounds


def report(rounds, rows, title):
    lines = [f"### {title}", "",
             "| row | qps | server CPU µs / request | ÷ floor | protobuf/inline ÷ row | "
             "context switches / request | ÷ floor | Redis CPU µs / request | p50 µs | p99 µs |"
             " failed calls |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        per = [r[row] for r in rounds]

        def ratio(num_row, den_row, field):
            out = []
            for r in rounds:
                if num_row in r and den_row in r and r[den_row][field]:
                    out.append(r[num_row][field] / r[den_row][field])
            return out
        lines.append(
            f"| {row} | {med([p['qps'] for p in per])} | {med([p['cpu_us'] for p in per])} | "
            f"{med(ratio(row, 'floor', 'cpu_us'))} | {med(ratio('protobuf/inline', row, 'cpu_us'))} | "
            f"{med([p['cs'] for p in per])} | {med(ratio(row, 'floor', 'cs'))} | "
            f"{med([p['redis_us'] for p in per])} | {med([p['p50_us'] for p in per])} | "
            f"{med([p['p99_us'] for p in per])} | {sum(p['errors'] for p in per)} |")
    return lines


def phase_report(rounds, rows):
    """Phases of each server row, with the floor's CPU as the transport."""
    lines = ["### Where a request's CPU goes (µs per request, median over rounds)", "",
             "| row | transport (floor) | " + " | ".join(PHASES) +
             " | sum | measured | sum ÷ measured |",
             "|---|" + "---:|" * (len(PHASES) + 4)]
    for row in rows:
        if row == "floor" or not any(r[row]["phases"] for r in rounds):
            continue
        cells, sums, ratios = [], [], []
        for r in rounds:
            if "floor" not in r:
                continue
            s = r["floor"]["cpu_us"] + sum(r[row]["phases"].get(p, 0.0) for p in PHASES)
            sums.append(s)
            ratios.append(s / r[row]["cpu_us"])
        floor = med([r["floor"]["cpu_us"] for r in rounds if "floor" in r])
        for p in PHASES:
            cells.append(med([r[row]["phases"].get(p) for r in rounds]))
        lines.append(f"| {row} | {floor} | " + " | ".join(cells) +
                     f" | {med(sums)} | {med([r[row]['cpu_us'] for r in rounds])} | "
                     f"{med(ratios)} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max_concurrent", type=int, default=8,
                        help="the servers' --max_concurrent_rank (above --concurrency, so the "
                             "closed loop measures work, not refusals)")
    parser.add_argument("--rows", nargs="*", default=DEFAULT_ROWS,
                        choices=["floor", *ROWS.keys()])
    parser.add_argument("--server_flag", action="append", default=[],
                        help="an extra flag for every rankwire-server row")
    parser.add_argument("--open", action="store_true",
                        help="also run each row open loop at --open_fraction of its peak")
    parser.add_argument("--open_fraction", type=float, default=0.8)
    parser.add_argument("--out", help="also write the markdown report here")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="cpu_budget_")
    redis = Redis(workdir)
    try:
        closed = run_rounds(args, redis, args.rows)
        cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = re.search(r"Model name:\s*(.*)", cpu)
        lines = [f"CPU budget, {time.strftime('%Y-%m-%d %H:%M')}, "
                 f"{model.group(1).strip() if model else '?'}, {os.cpu_count()} cores; server on "
                 f"CPU {SERVER_CPU}, load generator and Redis on CPU {LOAD_CPU}; "
                 f"{args.rounds} interleaved rounds of {args.seconds:.0f} s, "
                 f"{args.concurrency} callers.", ""]
        lines += report(closed, args.rows, "Closed loop (peak rate)")
        lines += [""] + phase_report(closed, args.rows)
        if args.open:
            qps = {row: args.open_fraction * statistics.median(r[row]["qps"] for r in closed)
                   for row in args.rows}
            opened = run_rounds(args, redis, args.rows, qps)
            lines += [""] + report(opened, args.rows,
                                   f"Open loop at {args.open_fraction:.0%} of each row's peak")
        text = "\n".join(lines)
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text + "\n")
        with open(os.path.join(workdir, "rounds.json"), "w") as f:
            json.dump(closed, f)
    finally:
        redis.close()


if __name__ == "__main__":
    main()
