"""End-to-end benchmark: the real server, the real load generator, a real Redis.

Two experiments, each run in interleaved rounds (A B C A B C ...) because this
machine's speed drifts within a minute; medians over rounds are reported with
their spread, and every ratio is against the protobuf baseline (or logging
off) measured in the same round.

1. Codecs. The same requests against the same server binary, codec (and log
   placement) switched by server flag. Open loop at --qps (latency
   percentiles without coordinated omission), then closed loop (peak rate).
2. Log store. Codec rankbin, logs off vs logs to Redis, same open-loop rate:
   p99 ratio (target <= 1.05). Then at the peak rate the server sustains with
   logging off, logging to Redis must drop nothing (counters from /metrics).

Usage: e2e_bench.py --build build [--rounds 3] [--seconds 8] [--qps 100]
The server is pinned to CPU 1; the load generator and Redis to CPU 0.
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "server", "models", "ecom_search_lr.model")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    def __init__(self, workdir):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if subprocess.run(["redis-cli", "-p", str(self.port), "ping"],
                              capture_output=True, text=True).stdout.strip() == "PONG":
                return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port), *args],
                              capture_output=True, text=True).stdout

    def used_memory(self):
        return int(re.search(r"used_memory:(\d+)", self.cli("INFO", "memory")).group(1))

    def dbsize(self):
        return int(self.cli("DBSIZE").strip() or 0)

    def close(self):
        self.proc.terminate()
        self.proc.wait()


class Server:
    def __init__(self, build, flags):
        self.log = tempfile.NamedTemporaryFile(mode="w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            ["taskset", "-c", "1", os.path.join(build, "server", "rankwire-server"), "--port=0",
             "--metrics_port=0", "--address=127.0.0.1", "--model=" + MODEL, *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while time.time() < deadline:
            with open(self.log.name) as f:
                m = re.search(r"listening port=(\d+) metrics_port=(\d+)", f.read())
            if m:
                self.port, self.metrics_port = int(m.group(1)), int(m.group(2))
                return
            time.sleep(0.05)
        raise RuntimeError("server did not start: " + open(self.log.name).read())

    def metrics(self):
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics").read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def writer_cpu_seconds(self):
        """CPU time of the log writer threads (rankwire-logw), summed."""
        total = 0.0
        task_dir = f"/proc/{self.proc.pid}/task"
        for tid in os.listdir(task_dir):
            try:
                with open(f"{task_dir}/{tid}/comm") as f:
                    if f.read().strip() != "rankwire-logw":
                        continue
                with open(f"{task_dir}/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except OSError:
                continue
        return total

    def close(self):
        self.proc.terminate()
        self.proc.wait(20)
        os.unlink(self.log.name)


def loadgen(build, server, qps, seconds, concurrency, extra=()):
    cmd = ["taskset", "-c", "0", os.path.join(build, "client", "rankwire-loadgen"),
           f"--target=127.0.0.1:{server.port}", f"--qps={qps}", f"--duration_s={seconds}",
           "--warmup_s=2", f"--concurrency={concurrency}", "--json", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if not out.stdout.strip():
        raise RuntimeError("loadgen failed: " + out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def med(values):
    return statistics.median(values) if values else float("nan")


def spread(values):
    return f"{min(values):.0f}–{max(values):.0f}" if values else "-"


def drop_text(runs):
    fractions = [r.get("log_drop_fraction") for r in runs]
    fractions = [f for f in fractions if f is not None]
    return f"{100 * med(fractions):.0f}%" if fractions else "-"


def codec_experiment(args):
    variants = [
        ("protobuf", "inline", "protobuf, logs inline (source system)"),
        ("protobuf", "store", "protobuf, logs in store"),
        ("rankbin", "store", "rankbin, logs in store"),
        ("rankbin-zstd", "store", "rankbin-zstd, logs in store"),
        ("rankbin", "inline", "rankbin, logs inline"),
        ("rankbin-zstd", "inline", "rankbin-zstd, logs inline"),
    ]
    open_loop = {v: [] for v in variants}
    closed = {v: [] for v in variants}
    for rnd in range(args.rounds):
        order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
        for v in order:
            codec, logs, _ = v
            server = Server(args.build, [f"--codec={codec}", f"--log_mode={logs}", "--logstore=memory"])
            try:
                open_loop[v].append(loadgen(args.build, server, args.qps, args.seconds, 4))
                before = server.metrics()
                closed[v].append(loadgen(args.build, server, 0, args.seconds, 2))
                time.sleep(1.0)  # Let the writer finish what is queued.
                after = server.metrics()
                key = 'rankwire_log_items_total{outcome="%s"}'
                enq = after.get(key % "enqueued", 0) - before.get(key % "enqueued", 0)
                dropped = sum(after.get(key % o, 0) - before.get(key % o, 0)
                              for o in ("dropped_queue_full", "dropped_store_error"))
                closed[v][-1]["log_drop_fraction"] = (
                    dropped / (enq + dropped) if enq + dropped > 0 else None)
            finally:
                server.close()
            print(f"round {rnd + 1} {codec}/{logs}: open p99 {open_loop[v][-1]['p99_us']:.0f} us, "
                  f"closed {closed[v][-1]['qps']:.0f} qps", file=sys.stderr)

    base = variants[0]
    lines = [
        f"Open loop at {args.qps:.0f} qps (4 callers), then closed loop (2 callers); "
        f"{args.rounds} interleaved rounds of {args.seconds:.0f} s each; medians, [min–max] "
        f"over rounds; ratios are per round against protobuf with logs inline, then the median.",
        "",
        "| server flags | response bytes | of base | p50 us | p99 us [spread] | p99 / base | "
        "server encode us | client decode us | peak qps [spread] | peak / base | "
        "logs dropped at peak |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for v in variants:
        o, c = open_loop[v], closed[v]
        p99 = [r["p99_us"] for r in o]
        ratio_p99 = med([a["p99_us"] / b["p99_us"] for a, b in zip(o, open_loop[base])])
        ratio_qps = med([a["qps"] / b["qps"] for a, b in zip(c, closed[base])])
        lines.append(
            f"| `--codec={v[0]} --log_mode={v[1]}` | {med([r['response_bytes'] for r in o]):.0f} | "
            f"{100 * med([r['response_bytes'] for r in o]) / med([r['response_bytes'] for r in open_loop[base]]):.1f}% | "
            f"{med([r['p50_us'] for r in o]):.0f} | {med(p99):.0f} [{spread(p99)}] | {ratio_p99:.2f} | "
            f"{med([r['server_serialize_p50_us'] for r in o]):.0f} | "
            f"{med([r['client_decode_p50_us'] for r in o]):.1f} | "
            f"{med([r['qps'] for r in c]):.0f} [{spread([r['qps'] for r in c])}] | {ratio_qps:.2f} | "
            f"{drop_text(c)} |")
    errors = sum(r["errors"] for v in variants for r in open_loop[v] + closed[v])
    lines.append("")
    lines.append(f"Errors across all runs: {errors}.")
    return "\n".join(lines)


def logstore_experiment(args):
    workdir = tempfile.mkdtemp()
    redis = Redis(workdir)
    redis_flags = ["--log_mode=store", "--logstore=redis", f"--redis_addr=127.0.0.1:{redis.port}"]
    # off: no log lines at all; then Redis logging per stored representation
    # (--log_format) and writer count (--log_writers).
    stores = [("text, 1 writer", [*redis_flags, "--log_format=text", "--log_writers=1"]),
              ("record, 1 writer", [*redis_flags, "--log_format=record", "--log_writers=1"]),
              ("record, 2 writers", [*redis_flags, "--log_format=record", "--log_writers=2"]),
              # The writers at nice 0: how much of the dropping is the
              # writers losing the CPU to other processes (nice 10).
              ("record, 2 writers, nice 0", [*redis_flags, "--log_format=record",
                                             "--log_writers=2", "--log_writer_nice=0"])]
    variants = [("off", ["--log_mode=none"]), *stores]
    results = {name: [] for name, _ in variants}
    peak = {name: [] for name, _ in variants}
    fractions = (0.5, 0.8, 0.9, 1.0)
    # The sweep runs logging off too, for the p99 ratio at each rate.
    swept = [("off", ["--log_mode=none"]), *stores]
    sweep = {name: [] for name, _ in swept}
    try:
        for rnd in range(args.rounds):
            order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
            for name, flags in order:
                server = Server(args.build, ["--codec=rankbin", *flags])
                try:
                    results[name].append(loadgen(args.build, server, args.qps, args.seconds, 4))
                    peak[name].append(loadgen(args.build, server, 0, args.seconds, 2))
                finally:
                    server.close()
                print(f"round {rnd + 1} logs {name}: p99 {results[name][-1]['p99_us']:.0f} us, "
                      f"peak {peak[name][-1]['qps']:.0f} qps", file=sys.stderr)

        # Open loop at fractions of the logging-off peak (same run), per
        # variant, interleaved: drops, writer CPU per request, and Redis
        # bytes per live request (INFO used_memory delta / DBSIZE right after
        # the run, while the last second's keys are alive).
        peak_qps = med([r["qps"] for r in peak["off"]])
        for fraction in fractions:
            for name, flags in swept:
                redis.cli("FLUSHALL", "SYNC")
                base = redis.used_memory()
                server = Server(args.build, ["--codec=rankbin", *flags])
                try:
                    run = loadgen(args.build, server, peak_qps * fraction, args.seconds, 4)
                    used, keys = redis.used_memory(), redis.dbsize()
                    time.sleep(1.5)  # Let the writers finish what is queued.
                    m = server.metrics()
                    cpu = server.writer_cpu_seconds()
                finally:
                    server.close()
                g = lambda k: m.get(f'rankwire_log_items_total{{outcome="{k}"}}', float("nan"))
                requests = g("enqueued") / 500
                sweep[name].append({
                    "fraction": fraction, "run": run, "enqueued": g("enqueued"),
                    "stored": g("stored"),
                    "dropped": g("dropped_queue_full") + g("dropped_store_error"),
                    # Lines handed to the consumer: enqueued ones plus the
                    # ones refused at the queue (store errors are enqueued).
                    "lines": g("enqueued") + g("dropped_queue_full"),
                    "writer_us": 1e6 * cpu / requests if requests else float("nan"),
                    "bytes": (used - base) / keys if keys else float("nan")})
                print(f"{name} at {fraction:.0%} of peak: dropped {sweep[name][-1]['dropped']:.0f} "
                      f"of {sweep[name][-1]['lines']:.0f}", file=sys.stderr)
    finally:
        redis.close()
        shutil.rmtree(workdir, ignore_errors=True)

    off = results["off"]
    lines = [
        f"Codec rankbin; open loop at {args.qps:.0f} qps (4 callers); {args.rounds} interleaved "
        f"rounds of {args.seconds:.0f} s; server on CPU 1, Redis 7.0 and the load generator on "
        f"CPU 0 (2 cores: Redis cannot have its own).",
        "",
        "| logging | p50 us | p99 us [spread] | p99 / off (per-round median) | p99.9 us | "
        "peak qps (closed loop) [spread] |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, _ in variants:
        r, p = results[name], peak[name]
        ratio = med([b["p99_us"] / a["p99_us"] for a, b in zip(off, r)])
        lines.append(f"| {name} | {med([x['p50_us'] for x in r]):.0f} | "
                     f"{med([x['p99_us'] for x in r]):.0f} [{spread([x['p99_us'] for x in r])}] | "
                     f"{ratio:.3f} | {med([x['p999_us'] for x in r]):.0f} | "
                     f"{med([x['qps'] for x in p]):.0f} [{spread([x['qps'] for x in p])}] |")
    lines += ["", f"Open loop at fractions of the logging-off peak ({peak_qps:.0f} qps, same run):",
              "", "| variant | target qps | achieved qps | p99 us (vs off, same rate) | log lines | dropped | "
              "dropped share | writer CPU us / request | Redis bytes / request |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, _ in swept:
        for x, o in zip(sweep[name], sweep["off"]):
            share = x["dropped"] / x["lines"] if x["lines"] else float("nan")
            lines.append(f"| {name} | {peak_qps * x['fraction']:.0f} ({x['fraction']:.0%}) | "
                         f"{x['run']['qps']:.0f} | {x['run']['p99_us']:.0f} "
                         f"({x['run']['p99_us'] / o['run']['p99_us']:.2f}x off) | "
                         f"{x['lines']:.0f} | {x['dropped']:.0f} | {share:.1%} | "
                         f"{x['writer_us']:.0f} | {x['bytes'] / 1e3:.0f} KB |")
    lines += ["", "Highest tested rate with no dropped line, as a share of the logging-off peak:",
              ""]
    for name, _ in stores:
        clean = [x["fraction"] for x in sweep[name] if x["dropped"] == 0]
        lines.append(f"- {name}: {max(clean):.0%}" if clean else f"- {name}: none of "
                     f"{', '.join(f'{f:.0%}' for f in fractions)}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--qps", type=float, default=100)
    parser.add_argument("--only", choices=["codecs", "logstore"])
    args = parser.parse_args()
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", cpu)
    print(f"# End-to-end results\n\nMachine: {model.group(1) if model else '?'}, "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; "
          f"command: `scripts/bench_e2e.sh` (rounds={args.rounds}, seconds={args.seconds}, "
          f"qps={args.qps}).\n")
    if args.only in (None, "codecs"):
        print("## Codecs\n")
        print(codec_experiment(args))
        print()
    if args.only in (None, "logstore"):
        print("## Log store on vs off\n")
        print(logstore_experiment(args))


if __name__ == "__main__":
    main()
