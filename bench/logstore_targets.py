"""Issue 44's targets for the log path, every one measured in one run.

The real server, the real load generator, a real redis-server; the server
pinned to CPU 1, the load generator and Redis to CPU 0 (as bench/cpu_budget.py
does). Two servers run side by side, idle but for the one under load:
logs off (`--log_mode=none`) and logs in Redis (`--log_mode=store
--logstore=redis`), both `--codec=rankbin`; their defaults otherwise
(`--log_format=columns`, one log writer per two usable CPUs). The load is
the shipped workload (rankwire-loadgen: 500 candidates, top_n 10), every
call with a request id of its own (--fresh_request_ids: keys expire under
the 1 s TTL as with real traffic; --cycled_ids for the old 64). Targets:

  cpu      server CPU for logs per request: (logs in Redis) - (logs off),
           closed loop at each server's peak, in alternating windows (the
           order rotated each pair), the difference taken within a pair,
           with serve_floor (the transport alone, bench/serve_floor.cc) in
           the same rounds beside them; Redis CPU per request in the
           logs-in-Redis windows. CPU is every thread's
           /proc/<pid>/task/*/schedstat over the requests answered. Two
           peaks: the logs-off closed-loop rate ("the peak", which the
           targets use) and the logs-in-Redis one (reported beside it).
           Redis CPU two ways: its threads' schedstat over the Rank calls
           answered, and INFO cpu (used_cpu_sys + used_cpu_user) over the
           requests stored; both include expiry (fresh ids).
  memory   Redis memory of the shipped request (workload request 0) as
           `MEMORY USAGE <key> SAMPLES 0` (exact: every field counted); and
           Redis's steady state at --steady_qps (1,000) open loop with fresh
           ids under the 1 s TTL: used_memory sampled every second, keys,
           keys expired per second, Redis CPU per request.
  fetch    FetchLogs of that request's top 10 through the server (warm
           connection): Redis commands it caused (INFO commandstats: one
           HMGET is one round trip), and the value bytes of the fields that
           HMGET names (HSTRLEN) over the value bytes of the whole key.
  drops    open loop, logs in Redis: at 80 % of the peak (--runs runs), at
           100 %, and at 120 % against logs off at the same load (ranking
           p99 = the server's own ServerTimings.total_us p99, which excludes
           the wait for a ranking worker; the call p99 beside it). Lines
           dropped and stored come from the server's /metrics
           (rankwire_log_items_total), taken around each window after the
           log queue has drained (nothing in flight); every line handed
           over must end stored, dropped (by reason) or unknown:
           handed = stored + dropped + unknown, exactly.
  freeze   Redis stopped (SIGSTOP) for --freeze_seconds in the middle of an
           open-loop run at 50 % of the peak, then resumed (SIGCONT): failed
           calls, lines by outcome (unknown: sent whole before the freeze,
           no answer), every line counted.
  restart  Redis killed (SIGKILL) in the middle of a run, started again on
           the same port --down_seconds later: the time from when it answers
           PING again to the server's first stored line (and to
           rankwire_log_store_up = 1), from /metrics polled every 5 ms.

Every number that can drift is taken against a baseline of the same run:
CPU differences within a pair of adjacent windows, p99s against logs off at
the same load in the same round. Medians over pairs/runs with [min-max].

  bench/logstore_targets.py --build build            # full: ~10 minutes
  bench/logstore_targets.py --build build --quick    # smoke: ~1 minute
  ... --check                                        # exit 1 if a checked target misses

--quick shortens every window to seconds; with --check it fails only on
targets a short run decides (memory, the fetch's round trips and bytes, no
failed call, every line counted, reconnect within 1 s); CPU and drop shares
need the full run's windows and are reported, not checked.
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))
import harness  # noqa: E402
from harness import (LOAD_CPU, SERVER_CPU, Floor, cell, failed_calls, parse_loadgen,  # noqa: E402
                     rotated)

SEED = 20261129
# rankwire_log_items_total's outcomes: handed = stored + dropped_* + unknown
# + in_flight in every scrape.
OUTCOMES = ("handed", "enqueued", "stored", "dropped_queue_full", "dropped_store_error",
            "dropped_shutdown", "unknown", "in_flight")
DROPPED = ("dropped_queue_full", "dropped_store_error", "dropped_shutdown")

TARGETS = {
    "log_cpu_us": 25.0,
    "redis_cpu_us": 20.0,
    "memory_kb": 90.0,
    "steady_memory_bytes": 1.2 * 90e3 * 1000,
    "fetch_fraction": 0.10,
    "drop_share_80": 0.0,
    "drop_share_100": 0.05,
    "p99_ratio_120": 1.2,
    "reconnect_s": 1.0,
}


# ---------------------------------------------------------------------------
# Processes.

class Redis(harness.Redis):
    """harness.Redis, which can also be frozen (SIGSTOP) and killed."""

    def resp(self):
        from rankwire._log_tool import Resp  # the log tool's RESP client
        return Resp("127.0.0.1", self.port)

    def cpu_ns(self):
        return proc_cpu(self.proc.pid)[0]

    def info(self, section):
        """{name: value} of INFO <section> (numbers as floats)."""
        r = self.resp()
        try:
            text = r.command("INFO", section).decode()
        finally:
            r.close()
        out = {}
        for line in text.splitlines():
            name, _, value = line.partition(":")
            try:
                out[name] = float(value)
            except ValueError:
                pass
        return out

    def info_cpu_s(self):
        """Redis's own CPU count (INFO cpu): used_cpu_sys + used_cpu_user."""
        cpu = self.info("cpu")
        return cpu.get("used_cpu_sys", 0.0) + cpu.get("used_cpu_user", 0.0)

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except OSError:
                pass
            self.proc.terminate()
            self.proc.wait()


class Server(harness.Server):
    """harness.Server with the log counters."""

    def logs(self):
        """The log counters: items by outcome, queue depth, store up."""
        m = self.metrics()
        out = {k: m.get(f'rankwire_log_items_total{{outcome="{k}"}}', 0.0) for k in OUTCOMES}
        out["queue"] = m.get("rankwire_log_queue_requests", 0.0)
        out["up"] = m.get("rankwire_log_store_up", 0.0)
        for phase in ("log_handoff", "log_format", "log_store"):
            out[f"{phase}_ns"] = m.get(
                f'rankwire_phase_cpu_sample_nanoseconds_total{{phase="{phase}"}}', 0.0)
            out[f"{phase}_n"] = m.get(f'rankwire_phase_cpu_samples_total{{phase="{phase}"}}', 0.0)
        return out

    def drained(self, timeout=15.0):
        """The log counters once no line is in flight (queued, or in a
        writer's hands): every line handed over is stored, dropped or
        unknown. Raises if lines stay in flight past `timeout`."""
        deadline = time.time() + timeout
        while True:
            c = self.logs()
            if c["in_flight"] == 0:
                return c
            if time.time() > deadline:
                raise RuntimeError(f"log lines still in flight after {timeout} s: {c}")
            time.sleep(0.02)


def proc_cpu(pid):
    """(CPU ns of every thread of `pid`, {thread name: CPU ns})."""
    total, by_name = 0, {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0, {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # A thread that ended between listing and reading.
        total += ns
        group = name if name.startswith("rankwire-") else "other"
        by_name[group] = by_name.get(group, 0) + ns
    return total, by_name


def minor_faults(pid):
    """Minor page faults of every thread of `pid` so far (/proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[7])
    except (OSError, IndexError, ValueError):
        return 0


def fault_cost_us(mib=64):
    """What one first touch of an anonymous 4 KiB page costs on this host,
    and a second touch of it (the loop's own cost), in µs: (first, second).
    Under some hypervisors a minor fault costs tens of times bare metal's
    ~0.3 µs, which then dominates the CPU of whatever touches fresh pages."""
    import mmap
    n = mib << 20
    m = mmap.mmap(-1, n)
    try:
        if hasattr(m, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
            m.madvise(mmap.MADV_NOHUGEPAGE)
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            for i in range(0, n, 4096):
                m[i] = 1
            times.append((time.perf_counter() - t0) / (n // 4096) * 1e6)
        return times[0], times[1]
    finally:
        m.close()


def load(args, port, seconds, qps=0.0, concurrency=None, background=False):
    """The load generator as every window here runs it: no warm-up, a
    deadline, a fresh request id per call unless --cycled_ids."""
    extra = [f"--deadline_ms={args.deadline_ms}",
             f"--fresh_request_ids={'false' if args.cycled_ids else 'true'}"]
    return harness.loadgen(args.build, port, seconds, qps=qps,
                           concurrency=concurrency or args.concurrency, extra=extra,
                           background=background)


# ---------------------------------------------------------------------------
# Formatting.

def pct(x):
    return f"{100 * x:.2f} %"


# ---------------------------------------------------------------------------
# cpu: alternating closed-loop windows.

def delta(c0, c1):
    """Per outcome, what a window added (c0, c1: Server.logs())."""
    return {k: c1[k] - c0[k] for k in OUTCOMES if k != "in_flight"}


def cpu_window(args, server, redis, seconds):
    """One closed-loop window: CPU per request of the server's threads and of
    Redis (both ways), the server's sampled phases, and its log lines."""
    load(args, server.port, args.warmup)
    has_logs = server.metrics_port >= 0
    c0 = server.drained() if has_logs else None
    cpu0, names0 = proc_cpu(server.proc.pid)
    r0, info0 = redis.cpu_ns(), redis.info_cpu_s()
    f0, rf0 = minor_faults(server.proc.pid), minor_faults(redis.proc.pid)
    result = load(args, server.port, seconds)
    cpu1, names1 = proc_cpu(server.proc.pid)
    r1, info1 = redis.cpu_ns(), redis.info_cpu_s()
    f1, rf1 = minor_faults(server.proc.pid), minor_faults(redis.proc.pid)
    c1 = server.drained() if has_logs else None
    n = max(result["requests"], 1)
    phases, d = {}, {}
    if has_logs:
        for phase in ("log_handoff", "log_format", "log_store"):
            calls = c1[f"{phase}_n"] - c0[f"{phase}_n"]
            if calls > 0:
                phases[phase] = (c1[f"{phase}_ns"] - c0[f"{phase}_ns"]) / calls / 1e3
        d = delta(c0, c1)
    lines_per_request = d.get("handed", 0) / n
    stored_requests = d.get("stored", 0) / lines_per_request if lines_per_request else 0
    return {
        "qps": result["qps"], "requests": result["requests"], "failed": failed_calls(result),
        "cpu_us": (cpu1 - cpu0) / 1e3 / n,
        "threads_us": {k: (names1.get(k, 0) - names0.get(k, 0)) / 1e3 / n for k in names1},
        # Redis CPU, two ways: its threads' schedstat over the Rank calls
        # answered; its INFO cpu over the requests it stored.
        "redis_us": (r1 - r0) / 1e3 / n,
        "redis_info_us": (info1 - info0) * 1e6 / stored_requests if stored_requests else None,
        # Minor page faults per request: the server's, and Redis's (a row
        # without logs still shares Redis with the other servers: ~0).
        "faults": (f1 - f0) / n,
        "redis_faults": (rf1 - rf0) / n,
        "phases_us": phases,
        "counts": d,
        "dropped": sum(d.get(k, 0) for k in DROPPED),
        "handed": d.get("handed", 0),
    }


def run_cpu(args, servers, redis):
    """Rounds of one closed-loop window per row (the floor, logs off, logs in
    Redis, each --variant), the order rotated each round; "log_us" of a logs
    row is its CPU per request minus logs off's in the same round."""
    rows = ["floor", "off", "redis", *[v["name"] for v in args.variants]]
    rounds = []
    for p in range(args.pairs):
        order = rotated(rows, p)
        got = {}
        for row in order:
            got[row] = cpu_window(args, servers[row], redis, args.cpu_seconds)
        for row in rows[2:]:
            got[row]["log_us"] = got[row]["cpu_us"] - got["off"]["cpu_us"]
        got["log_us"] = got["redis"]["log_us"]
        rounds.append(got)
        print(f"cpu round {p + 1}: floor {got['floor']['cpu_us']:.0f} us, off "
              f"{got['off']['qps']:.0f} qps {got['off']['cpu_us']:.0f} us; "
              + "; ".join(f"{row} {got[row]['qps']:.0f} qps logs {got[row]['log_us']:+.1f} us, "
                          f"Redis {got[row]['redis_us']:.1f} us" for row in rows[2:]),
              file=sys.stderr)
    return rounds


def report_cpu(pairs, variants=(), fault_cost=None):
    lines = ["### Server CPU for logs, Redis CPU (closed loop, each server at its peak)", "",
             "Per round of adjacent windows (logs off, logs in Redis; order rotated): "
             "µs of CPU per request, median [min–max] over rounds.", "",
             "| | logs off | logs in Redis | difference (the logs) | logs ÷ logs off |",
             "|---|---:|---:|---:|---:|"]

    def row(label, get):
        off = [get(p["off"]) for p in pairs]
        on = [get(p["redis"]) for p in pairs]
        diff = [b - a for a, b in zip(off, on)]
        ratio = [d / a for d, a in zip(diff, off) if a]
        lines.append(f"| {label} | {cell(off)} | {cell(on)} | {cell(diff, '{:+.1f}')} | "
                     f"{cell(ratio, '{:+.3f}')} |")

    row("server, every thread", lambda w: w["cpu_us"])
    names = sorted({k for p in pairs for w in (p["off"], p["redis"]) for k in w["threads_us"]})
    for name in names:
        if any(w["threads_us"].get(name) for p in pairs for w in (p["off"], p["redis"])):
            row(f"threads {name}", lambda w, name=name: w["threads_us"].get(name, 0.0))
    floor = [p["floor"]["cpu_us"] for p in pairs]
    lines += ["", "The serve floor (serve_floor: gRPC reads the request and answers recorded "
              "bytes of a rankbin response, nothing else) in the same rounds: "
              f"**{cell(floor)} µs** per request; logs off ÷ floor "
              f"{cell([p['off']['cpu_us'] / p['floor']['cpu_us'] for p in pairs], '{:.2f}')}, "
              f"logs in Redis ÷ floor "
              f"{cell([p['redis']['cpu_us'] / p['floor']['cpu_us'] for p in pairs], '{:.2f}')}; "
              "the logs ÷ floor "
              f"{cell([p['log_us'] / p['floor']['cpu_us'] for p in pairs], '{:.2f}')}.",
              "", "| | logs off | logs in Redis |", "|---|---:|---:|",
              f"| requests / s (closed loop: each server's peak) | "
              f"{cell([p['off']['qps'] for p in pairs], '{:.0f}')} | "
              f"{cell([p['redis']['qps'] for p in pairs], '{:.0f}')} |",
              f"| Redis CPU µs / Rank call (its threads' schedstat) | – | "
              f"{cell([p['redis']['redis_us'] for p in pairs])} |",
              f"| Redis CPU µs / request stored (INFO cpu) | – | "
              f"{cell([p['redis']['redis_info_us'] for p in pairs])} |",
              f"| failed calls | {sum(p['off']['failed'] for p in pairs)} | "
              f"{sum(p['redis']['failed'] for p in pairs)} |",
              f"| lines dropped | – | {sum(p['redis']['dropped'] for p in pairs):.0f} of "
              f"{sum(p['redis']['handed'] for p in pairs):.0f} handed |"]
    lines += [f"| minor page faults / request, server | "
              f"{cell([p['off'].get('faults') for p in pairs], '{:.2f}')} | "
              f"{cell([p['redis'].get('faults') for p in pairs], '{:.2f}')} |",
              f"| minor page faults / Rank call, Redis | – | "
              f"{cell([p['redis'].get('redis_faults') for p in pairs], '{:.2f}')} |"]
    for phase in ("log_handoff", "log_format", "log_store"):
        lines.append(f"| server's sampled {phase} µs / request | – | "
                     f"{cell([p['redis']['phases_us'].get(phase) for p in pairs])} |")
    if fault_cost:
        first, again = fault_cost
        cost = first - again
        lines += ["", f"A first touch of a fresh 4 KiB page costs **{cost:.2f} µs** on this host "
                  f"({first:.2f} µs, less {again:.2f} µs for touching it again; bare metal is "
                  "~0.3 µs). At that price the faults above are, per request: server "
                  f"{cell([cost * p['off']['faults'] for p in pairs])} µs logs off, "
                  f"{cell([cost * p['redis']['faults'] for p in pairs])} µs logs in Redis; "
                  f"Redis {cell([cost * p['redis']['redis_faults'] for p in pairs])} µs "
                  "(where: `perf record -e page-faults -g -p PID`)."]
    if variants:
        lines += ["", "Variants (logs in Redis), same rounds: server CPU for logs (vs logs off), "
                  "Redis CPU, and each as a ratio to the logs-in-Redis row of the round.", "",
                  "| row | server flags | logs µs / request | ÷ logs in Redis | log writer µs | "
                  "Redis µs / request | ÷ logs in Redis | requests / s |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for v in [{"name": "redis", "flags": [], "build": None}, *variants]:
            name = v["name"]
            lines.append(
                f"| {name}{' (' + v['build'] + ')' if v['build'] else ''} | "
                f"{' '.join(v['flags']) or '–'} | {cell([p[name]['log_us'] for p in pairs], '{:+.1f}')} | "
                f"{cell([p[name]['log_us'] / p['redis']['log_us'] for p in pairs if p['redis']['log_us']], '{:.2f}')} | "
                f"{cell([p[name]['threads_us'].get('rankwire-logw', 0.0) for p in pairs])} | "
                f"{cell([p[name]['redis_us'] for p in pairs])} | "
                f"{cell([p[name]['redis_us'] / p['redis']['redis_us'] for p in pairs], '{:.2f}')} | "
                f"{cell([p[name]['qps'] for p in pairs], '{:.0f}')} |")
    return lines


# ---------------------------------------------------------------------------
# memory and fetch: the shipped request, stored with a long TTL.

def run_memory_fetch(args, redis, common):
    import grpc  # noqa: F401  (python3-grpcio; rankwire.Client needs it)
    import rankwire
    from rankwire import logs as rwlogs
    server = Server(args.build, [*common, "--log_mode=store", "--logstore=redis",
                                 f"--redis_addr=127.0.0.1:{redis.port}", "--log_ttl_ms=600000"])
    try:
        cli = subprocess.run(
            ["taskset", "-c", LOAD_CPU, os.path.join(args.build, "client", "rankwire-cli"),
             f"--target=127.0.0.1:{server.port}", "--codec=rankbin", "--log_mode=store",
             "--fetch_logs=false", f"--seed={SEED}", "--sequence=0"],
            capture_output=True, text=True, check=True).stdout
        request_id = re.search(r"^request (\S+):", cli, re.M).group(1)
        top_n = int(re.search(r"top_n=(\d+)", cli).group(1))
        cli_top = re.findall(r"^\s+\d+\s+(\S+)\s", cli.split("score", 1)[1], re.M)[:top_n]
        key = rwlogs.key(request_id)
        r = redis.resp()
        deadline = time.time() + 10
        while not r.command("EXISTS", key) and time.time() < deadline:
            time.sleep(0.005)
        memory = r.command("MEMORY", "USAGE", key, "SAMPLES", "0")
        fields = r.command("HKEYS", key)
        sizes = {f: r.command("HSTRLEN", key, f) for f in fields}
        layout = rwlogs.Layout(r.command("HGET", key, b""))
        top = rwlogs.Columns(layout, r.command("HGET", key, b"#0"), False)
        ids = [i.decode("utf-8", "surrogateescape") for i in top.ids]
        expected = {rwlogs._as_text(i): top.line(j) for j, i in enumerate(top.ids)}

        def commandstats():
            text = r.command("INFO", "commandstats").decode()
            return {m.group(1): int(m.group(2))
                    for m in re.finditer(r"cmdstat_(\w+):calls=(\d+)", text)}

        with rankwire.Client(f"127.0.0.1:{server.port}") as client:
            client.fetch_logs(request_id, ids, timeout=5)  # Warm: the server's connection.
            before = commandstats()
            got = client.fetch_logs(request_id, ids, timeout=5)
            after = commandstats()
        caused = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        caused["info"] -= 1  # The second INFO itself.
        caused = {k: v for k, v in caused.items() if v}
        asked = [b"", b"#0"] + [i.encode("utf-8", "surrogateescape") for i in ids]
        read_bytes = sum(sizes.get(f, 0) for f in asked)
        stored_bytes = sum(sizes.values())
        r.close()
        return {
            "request_id": request_id, "key": key.decode(), "memory_bytes": memory,
            "fields": len(fields), "stored_bytes": stored_bytes, "read_bytes": read_bytes,
            "layout_bytes": sizes.get(b"", 0), "top_bytes": sizes.get(b"#0", 0),
            "all_bytes": sizes.get(b"#1", 0),
            "top_n": top_n, "ids_match_cli": ids == cli_top,
            "lines_match": all(got.get(i) == expected[i] for i in ids),
            "commands": caused,
            "hmget_calls": caused.get("hmget", 0),
            "round_trips": sum(v for k, v in caused.items() if k != "ping"),
        }
    finally:
        server.close()


def report_memory_fetch(m):
    return [
        "### Redis memory and the top-10 fetch (the shipped request: workload request 0, "
        "500 items, top_n 10)", "",
        f"- `MEMORY USAGE {m['key']} SAMPLES 0`: **{m['memory_bytes']:,} bytes "
        f"({m['memory_bytes'] / 1000:.1f} KB)**; {m['fields']} fields, "
        f"{m['stored_bytes']:,} value bytes (layout {m['layout_bytes']:,}, \"#0\" "
        f"{m['top_bytes']:,}, \"#1\" {m['all_bytes']:,}).",
        f"- FetchLogs of the top {m['top_n']} through the server (warm connection): Redis "
        f"commands it caused {m['commands']} = **{m['round_trips']} round trip(s)**; the "
        f"fields it names hold **{m['read_bytes']:,} bytes = {pct(m['read_bytes'] / m['stored_bytes'])}** "
        f"of the key's {m['stored_bytes']:,}; lines equal the stored ones decoded by "
        f"rankwire.logs: {m['lines_match']}; \"#0\" holds the CLI's top {m['top_n']}: "
        f"{m['ids_match_cli']}.",
    ]


# ---------------------------------------------------------------------------
# drops: open loop at fractions of the peak.

def open_window(args, server, qps, seconds, redis=None):
    load(args, server.port, args.warmup, qps=qps, concurrency=args.open_concurrency)
    c0 = server.drained()
    r0 = (redis.cpu_ns(), redis.info_cpu_s()) if redis else None
    result = load(args, server.port, seconds, qps=qps, concurrency=args.open_concurrency)
    r1 = (redis.cpu_ns(), redis.info_cpu_s()) if redis else None
    c1 = server.drained()
    return window_result(result, c0, c1, redis, r0, r1)


def window_result(result, c0, c1, redis=None, r0=None, r1=None):
    """An open-loop window's calls and log lines (c0, c1: Server.drained()
    around it), and Redis's CPU over it if given (r0, r1: (schedstat ns,
    INFO cpu s))."""
    d = delta(c0, c1)
    dropped = sum(d[k] for k in DROPPED)
    out = {
        "target_qps": result["target_qps"], "qps": result["qps"], "requests": result["requests"],
        "failed": failed_calls(result), "p99_us": result["p99_us"],
        "server_p99_us": result["server_total_p99_us"],
        "server_p50_us": result["server_total_p50_us"],
        "handed": d["handed"], "dropped": dropped, "unknown": d["unknown"], "counts": d,
        "drop_share": dropped / d["handed"] if d["handed"] else 0.0,
        # Every line handed over is stored, dropped or unknown (nothing is in
        # flight after drained()), and the server was handed every line of
        # every OK call.
        "accounted": d["stored"] + dropped + d["unknown"] == d["handed"],
        "lines_per_call": d["handed"] / result["requests"] if result["requests"] else 0.0,
    }
    if r0 is not None and result["requests"]:
        stored_requests = d["stored"] / out["lines_per_call"] if out["lines_per_call"] else 0
        out["redis_us"] = (r1[0] - r0[0]) / 1e3 / result["requests"]
        out["redis_info_us"] = (r1[1] - r0[1]) * 1e6 / stored_requests if stored_requests else None
    return out


def run_drops(args, servers, redis, peak, peak_redis):
    """Open loop, logs in Redis: at 80 % of the peak (--runs runs), at 100 %,
    at 120 % against logs off; and once at 80 % of the logs-in-Redis peak
    (the other peak definition)."""
    out = {"80": [], "100": [], "120": [], "80_redis_peak": []}
    for r in range(args.runs):
        w = open_window(args, servers["redis"], 0.8 * peak, args.open_seconds, redis)
        out["80"].append(w)
        print(f"80 % run {r + 1}: {w['qps']:.0f} of {w['target_qps']:.0f} qps, dropped "
              f"{w['dropped']:.0f} of {w['handed']:.0f}", file=sys.stderr)
    w = open_window(args, servers["redis"], peak, args.open_seconds, redis)
    out["100"].append(w)
    print(f"100 %: {w['qps']:.0f} qps, dropped {pct(w['drop_share'])}", file=sys.stderr)
    if peak_redis:
        w = open_window(args, servers["redis"], 0.8 * peak_redis, args.open_seconds, redis)
        out["80_redis_peak"].append(w)
        print(f"80 % of the logs-in-Redis peak: {w['qps']:.0f} qps, dropped "
              f"{w['dropped']:.0f} of {w['handed']:.0f}", file=sys.stderr)
    for r in range(args.overload_rounds):
        order = rotated(["off", "redis"], r)
        got = {}
        for row in order:
            got[row] = open_window(args, servers[row], 1.2 * peak, args.overload_seconds,
                                   redis if row == "redis" else None)
        out["120"].append(got)
        print(f"120 % round {r + 1}: server p99 off {got['off']['server_p99_us']:.0f} us, "
              f"redis {got['redis']['server_p99_us']:.0f} us, dropped "
              f"{pct(got['redis']['drop_share'])}", file=sys.stderr)
    return out


def report_drops(drops, peak, peak_redis, args):
    lines = [f"### Open loop with logs in Redis ({args.open_concurrency} callers, "
             f"{args.open_seconds:.0f} s windows; peak = {peak:.0f} qps, the logs-off closed-loop "
             f"median above; the logs-in-Redis peak {peak_redis:.0f} qps)", "",
             "| load | run | achieved qps | lines handed | dropped (queue full / store error) "
             "| unknown | dropped share | handed = stored + dropped + unknown | failed calls | "
             "server p99 µs | call p99 µs | Redis µs / call (schedstat) | Redis µs / stored "
             "(INFO cpu) |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]

    def add(label, run, w):
        c = w["counts"]
        redis_us = "–" if w.get("redis_us") is None else f"{w['redis_us']:.1f}"
        info_us = "–" if w.get("redis_info_us") is None else f"{w['redis_info_us']:.1f}"
        lines.append(
            f"| {label} | {run} | {w['qps']:.0f} of {w['target_qps']:.0f} | {w['handed']:.0f} | "
            f"{c['dropped_queue_full']:.0f} / {c['dropped_store_error']:.0f} | "
            f"{w['unknown']:.0f} | {pct(w['drop_share'])} | "
            f"{'yes' if w['accounted'] else '**no**'} | {w['failed']} | "
            f"{w['server_p99_us']:.0f} | {w['p99_us']:.0f} | {redis_us} | {info_us} |")

    for i, w in enumerate(drops["80"]):
        add("80 %", i + 1, w)
    for i, w in enumerate(drops["100"]):
        add("100 %", i + 1, w)
    for i, w in enumerate(drops["80_redis_peak"]):
        add("80 % of the logs-in-Redis peak", i + 1, w)
    for i, got in enumerate(drops["120"]):
        add("120 %", f"{i + 1}", got["redis"])
        add("120 %, logs off", f"{i + 1}", got["off"])
    ratios = [g["redis"]["server_p99_us"] / g["off"]["server_p99_us"]
              for g in drops["120"] if g["off"]["server_p99_us"]]
    call = [g["redis"]["p99_us"] / g["off"]["p99_us"] for g in drops["120"] if g["off"]["p99_us"]]
    lines += ["", f"At 120 %: server p99 logs in Redis ÷ logs off, per round: {cell(ratios, '{:.2f}')}"
              f"; call p99 ratio {cell(call, '{:.2f}')}; achieved qps ratio "
              f"{cell([g['redis']['qps'] / g['off']['qps'] for g in drops['120']], '{:.3f}')}."]
    return lines


# ---------------------------------------------------------------------------
# steady: Redis under the TTL at a fixed rate, every call a fresh request id.

def run_steady(args, server, redis):
    """Open loop at --steady_qps for --steady_seconds: Redis's used_memory
    every second once the first TTL has passed, its keys, keys expired per
    second, and its CPU per request (expiry included)."""
    load(args, server.port, args.warmup, qps=args.steady_qps,
            concurrency=args.open_concurrency)
    c0 = server.drained()
    r0 = (redis.cpu_ns(), redis.info_cpu_s())
    expired0 = redis.info("stats").get("expired_keys", 0)
    p = load(args, server.port, args.steady_seconds, qps=args.steady_qps,
                concurrency=args.open_concurrency, background=True)
    samples, keys = [], []
    start = time.time()
    while p.poll() is None:
        time.sleep(1.0)
        if time.time() - start >= 2 and p.poll() is None:  # After the first TTL (1 s).
            samples.append(redis.info("memory").get("used_memory", 0))
            keys.append(redis.info("keyspace").get("db0", 0) or _keys(redis))
    out, _ = p.communicate()
    r1 = (redis.cpu_ns(), redis.info_cpu_s())
    expired1 = redis.info("stats").get("expired_keys", 0)
    c1 = server.drained()
    w = window_result(parse_loadgen(out), c0, c1, redis, r0, r1)
    w["used_memory"] = samples
    w["keys"] = keys
    w["expired_per_s"] = (expired1 - expired0) / args.steady_seconds
    return w


def _keys(redis):
    r = redis.resp()
    try:
        return r.command("DBSIZE")
    finally:
        r.close()


def report_steady(w, args):
    mem = w["used_memory"]
    return [f"### Redis at {args.steady_qps:.0f} requests / s under the 1 s TTL (fresh ids, "
            f"{args.steady_seconds:.0f} s open loop)", "",
            f"- used_memory, sampled each second after the first 2 s: median "
            f"**{statistics.median(mem) / 1e6:.1f} MB**, max {max(mem) / 1e6:.1f} MB "
            f"({len(mem)} samples); target ≤ 1.2 × 90 KB × {args.steady_qps:.0f} = "
            f"{TARGETS['steady_memory_bytes'] * args.steady_qps / 1000 / 1e6:.1f} MB."
            if mem else "- used_memory: no sample (run too short)",
            f"- keys held: median {statistics.median(w['keys']) if w['keys'] else 0:.0f}; keys "
            f"expired: {w['expired_per_s']:.0f} / s; achieved {w['qps']:.0f} requests / s, "
            f"{w['failed']} failed.",
            f"- Redis CPU, expiry included: {w.get('redis_us', 0):.1f} µs per Rank call (its "
            f"threads' schedstat), {w.get('redis_info_us') or 0:.1f} µs per request stored "
            f"(INFO cpu); lines: {w['handed']:.0f} handed, {w['counts']['stored']:.0f} stored, "
            f"{w['dropped']:.0f} dropped, {w['unknown']:.0f} unknown."]


# ---------------------------------------------------------------------------
# freeze and restart: Redis stopped, Redis killed.

def run_freeze(args, server, redis, peak):
    seconds = args.freeze_seconds + 2 * args.fault_margin
    load(args, server.port, args.warmup, qps=0.5 * peak, concurrency=args.open_concurrency)
    c0 = server.drained()
    p = load(args, server.port, seconds, qps=0.5 * peak, concurrency=args.open_concurrency,
                background=True)
    time.sleep(args.fault_margin)
    os.kill(redis.proc.pid, signal.SIGSTOP)
    time.sleep(args.freeze_seconds)
    os.kill(redis.proc.pid, signal.SIGCONT)
    out, _ = p.communicate()
    c1 = server.drained()
    return window_result(parse_loadgen(out), c0, c1)


def run_restart(args, server, redis, peak):
    seconds = args.down_seconds + 2 * args.fault_margin + 1
    load(args, server.port, args.warmup, qps=0.5 * peak, concurrency=args.open_concurrency)
    c0 = server.drained()
    p = load(args, server.port, seconds, qps=0.5 * peak, concurrency=args.open_concurrency,
                background=True)
    time.sleep(args.fault_margin)
    redis.kill()
    time.sleep(args.down_seconds)
    stored_before = server.logs()["stored"]
    spawned = time.time()
    ready = redis.start()
    first_write = first_up = None
    deadline = ready + 10
    while (first_write is None or first_up is None) and time.time() < deadline:
        c = server.logs()
        now = time.time()
        if first_write is None and c["stored"] > stored_before:
            first_write = now
        if first_up is None and c["up"] == 1:
            first_up = now
        time.sleep(0.005)
    out, _ = p.communicate()
    c1 = server.drained()
    w = window_result(parse_loadgen(out), c0, c1)
    w["start_s"] = ready - spawned
    w["reconnect_s"] = None if first_write is None else first_write - ready
    w["up_s"] = None if first_up is None else first_up - ready
    return w


def report_faults(freeze, restart, args):
    lines = ["### Redis frozen and Redis restarted (open loop at 50 % of the peak, logs in Redis)",
             "",
             "| fault | failed calls | lines handed | stored | dropped queue full | "
             "dropped store error | unknown | handed = stored + dropped + unknown | "
             "server p99 µs | call p99 µs |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for label, w in ((f"SIGSTOP {args.freeze_seconds:g} s", freeze),
                     (f"SIGKILL, restarted after {args.down_seconds:g} s", restart)):
        c = w["counts"]
        lines.append(f"| {label} | {w['failed']} | {w['handed']:.0f} | {c['stored']:.0f} | "
                     f"{c['dropped_queue_full']:.0f} | {c['dropped_store_error']:.0f} | "
                     f"{c['unknown']:.0f} | {'yes' if w['accounted'] else '**no**'} | "
                     f"{w['server_p99_us']:.0f} | {w['p99_us']:.0f} |")
    fmt = lambda v: "never (10 s)" if v is None else f"{1000 * v:.0f} ms"  # noqa: E731
    lines += ["", f"After the restart (Redis answered PING {1000 * restart['start_s']:.0f} ms after "
              f"it was started): first stored line {fmt(restart['reconnect_s'])} later, "
              f"rankwire_log_store_up = 1 {fmt(restart['up_s'])} later."]
    return lines


# ---------------------------------------------------------------------------
# The targets at a glance.

def verdict(ok):
    return "PASS" if ok else "**MISS**"


def summary(got, peak):
    """The targets of the parts that ran: (markdown lines, rows)."""
    rows = []  # (name, goal, measured, ok, decided by a quick run)
    cpu, mem, drops = got.get("cpu"), got.get("memory"), got.get("drops")
    freeze, restart, steady = got.get("freeze"), got.get("restart"), got.get("steady")
    if cpu:
        log_us = [p["log_us"] for p in cpu]
        log_ratio = [p["log_us"] / p["off"]["cpu_us"] for p in cpu]
        floor = [p["floor"]["cpu_us"] for p in cpu]
        redis_us = [p["redis"]["redis_us"] for p in cpu]
        info_us = [p["redis"]["redis_info_us"] for p in cpu if p["redis"]["redis_info_us"]]
        # Redis CPU "at every load": the closed loop and every open-loop window.
        loads = [w for k in ("80", "100", "80_redis_peak") for w in (drops or {}).get(k, [])]
        loads += [g["redis"] for g in (drops or {}).get("120", [])]
        worst = max([statistics.median(redis_us)] + [w["redis_us"] for w in loads
                                                     if w.get("redis_us") is not None])
        rows += [
            ("server CPU for logs per request (logs in Redis − logs off)", "≤ 25 µs",
             f"{cell(log_us, '{:+.1f}')} µs ({cell(log_ratio, '{:.3f}')} of logs off; serve "
             f"floor {cell(floor)} µs)",
             statistics.median(log_us) <= TARGETS["log_cpu_us"], False),
            ("Redis CPU per request, at every load", "≤ 20 µs",
             f"closed loop {cell(redis_us)} µs per call (schedstat), {cell(info_us)} µs per "
             f"stored request (INFO cpu); worst load {worst:.1f} µs",
             worst <= TARGETS["redis_cpu_us"], False)]
    if mem:
        fraction = mem["read_bytes"] / mem["stored_bytes"]
        rows += [
            ("Redis memory per 500-item request (MEMORY USAGE)", "≤ 90 KB",
             f"{mem['memory_bytes'] / 1000:.1f} KB",
             mem["memory_bytes"] / 1000 <= TARGETS["memory_kb"], True),
            ("FetchLogs of the top 10: round trips", "1",
             f"{mem['round_trips']} ({mem['commands']})",
             mem["round_trips"] == 1 and mem["lines_match"], True),
            ("FetchLogs of the top 10: bytes read ÷ request's stored bytes", "≤ 10 %",
             f"{pct(fraction)} ({mem['read_bytes']:,} of {mem['stored_bytes']:,} B)",
             fraction <= TARGETS["fetch_fraction"], True)]
    if steady and steady["used_memory"]:
        used = statistics.median(steady["used_memory"])
        goal = TARGETS["steady_memory_bytes"] * got["steady_qps"] / 1000
        rows.append(
            (f"Redis used_memory at {got['steady_qps']:.0f} requests / s, fresh ids, 1 s TTL",
             f"≤ {goal / 1e6:.0f} MB", f"{used / 1e6:.1f} MB (max "
             f"{max(steady['used_memory']) / 1e6:.1f})", used <= goal, False))
    if drops:
        share100 = [w["drop_share"] for w in drops["100"]]
        ratios120 = [g["redis"]["server_p99_us"] / g["off"]["server_p99_us"]
                     for g in drops["120"]]
        failed120 = sum(g["redis"]["failed"] + g["off"]["failed"] for g in drops["120"])
        counted120 = all(g["redis"]["accounted"] for g in drops["120"])
        dropped120 = ", ".join(pct(g["redis"]["drop_share"]) for g in drops["120"])
        redis_peak = ", ".join(f"{w['dropped']:.0f} of {w['handed']:.0f}"
                               for w in drops["80_redis_peak"])
        rows += [
            (f"lines dropped at 80 % of peak ({0.8 * peak:.0f} qps), {len(drops['80'])} runs",
             "0", ", ".join(f"{w['dropped']:.0f} of {w['handed']:.0f}" for w in drops["80"]) +
             (f" (at 80 % of the logs-in-Redis peak: {redis_peak})" if redis_peak else ""),
             all(w["dropped"] == 0 for w in drops["80"]), False),
            (f"lines dropped at peak ({peak:.0f} qps)", "≤ 5 %",
             ", ".join(pct(s) for s in share100),
             all(s <= TARGETS["drop_share_100"] for s in share100), False),
            ("at 120 % of peak: failed calls, every line counted", "0, yes",
             f"{failed120}, {'yes' if counted120 else 'no'} (dropped {dropped120})",
             failed120 == 0 and counted120, True),
            ("at 120 % of peak: ranking (server) p99 logs in Redis ÷ logs off", "≤ 1.2×",
             f"{cell(ratios120, '{:.2f}')}×",
             statistics.median(ratios120) <= TARGETS["p99_ratio_120"], False)]
    if freeze:
        rows.append(
            ("Redis frozen: failed calls; handed = stored + dropped + unknown", "0, exactly",
             f"{freeze['failed']}, {'yes' if freeze['accounted'] else 'no'} (handed "
             f"{freeze['handed']:.0f}: stored {freeze['counts']['stored']:.0f}, queue full "
             f"{freeze['counts']['dropped_queue_full']:.0f}, store error "
             f"{freeze['counts']['dropped_store_error']:.0f}, unknown {freeze['unknown']:.0f})",
             freeze["failed"] == 0 and freeze["accounted"], True))
    if restart:
        seconds = restart["reconnect_s"]
        rows.append(
            ("Redis restarted: first write after it is back; every line counted", "≤ 1 s, exactly",
             ("never" if seconds is None else f"{1000 * seconds:.0f} ms") +
             f", {'yes' if restart['accounted'] else 'no'} (unknown {restart['unknown']:.0f})",
             seconds is not None and seconds <= TARGETS["reconnect_s"]
             and restart["failed"] == 0 and restart["accounted"], True))
    lines = ["### Targets", "", "| target | goal | measured | |", "|---|---|---|---|"]
    for name, goal, measured, ok, _ in rows:
        lines.append(f"| {name} | {goal} | {measured} | {verdict(ok)} |")
    return lines, rows


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--quick", action="store_true", help="seconds-long windows (a smoke run)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 if a target misses (with --quick: only those a short run decides)")
    p.add_argument("--pairs", type=int, default=6, help="alternating CPU window pairs")
    p.add_argument("--cpu_seconds", type=float, default=6)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--concurrency", type=int, default=4, help="closed-loop callers")
    p.add_argument("--open_concurrency", type=int, default=8, help="open-loop callers")
    p.add_argument("--max_concurrent", type=int, default=16,
                   help="the servers' --max_concurrent_rank (above every caller count: "
                        "nothing is refused)")
    p.add_argument("--runs", type=int, default=3, help="runs at 80 %% of the peak")
    p.add_argument("--open_seconds", type=float, default=60)
    p.add_argument("--overload_rounds", type=int, default=2)
    p.add_argument("--overload_seconds", type=float, default=30)
    p.add_argument("--freeze_seconds", type=float, default=4)
    p.add_argument("--steady_qps", type=float, default=1000,
                   help="the steady-state memory run's rate (fresh ids, 1 s TTL)")
    p.add_argument("--steady_seconds", type=float, default=20)
    p.add_argument("--cycled_ids", action="store_true",
                   help="the load generator cycles its 64 requests' ids instead of giving each "
                        "call its own (logs then rewrite 64 keys, nothing expires)")
    p.add_argument("--down_seconds", type=float, default=2)
    p.add_argument("--fault_margin", type=float, default=3)
    p.add_argument("--deadline_ms", type=int, default=5000)
    p.add_argument("--redis_args", default=" ".join(harness.LOG_REDIS_ARGS),
                   help="redis-server's settings beyond no persistence (default: deploy/'s, "
                        "%(default)s; '' for Redis's own defaults)")
    p.add_argument("--server_flag", action="append", default=[],
                   help="an extra flag for every rankwire-server")
    p.add_argument("--only", default="",
                   help="comma-separated parts to run (cpu,memory,steady,drops,faults; default "
                        "all); without cpu the peak is --peak")
    p.add_argument("--peak", type=float, default=0,
                   help="the peak (qps) for drops and faults when cpu is not run")
    p.add_argument("--variant", action="append", default=[],
                   help="NAME[@BUILD_DIR]=FLAGS: another logs-in-Redis server in the cpu rounds "
                        "(space-separated extra flags; another build's binary for an A/B of code)")
    p.add_argument("--out", help="also write the markdown report here")
    p.add_argument("--json", help="write every measurement here")
    args = p.parse_args()
    args.variants = []
    for text in args.variant:
        name, _, flags = text.partition("=")
        name, _, build = name.partition("@")
        args.variants.append({"name": name, "build": build or None, "flags": flags.split()})
    if args.quick:
        args.pairs, args.cpu_seconds, args.warmup = 2, 1.5, 0.5
        args.runs, args.open_seconds = 1, 2
        args.overload_rounds, args.overload_seconds = 1, 2
        args.freeze_seconds, args.down_seconds, args.fault_margin = 1.5, 1, 1
        args.steady_seconds = 4
    return args


def main():
    args = parse_args()
    parts = (set(args.only.split(",")) if args.only
             else {"cpu", "memory", "steady", "drops", "faults"})
    workdir = tempfile.mkdtemp(prefix="logstore_targets_")
    redis = Redis(workdir, args.redis_args.split())
    common = ["--codec=rankbin", f"--max_concurrent_rank={args.max_concurrent}",
              *args.server_flag]
    servers, got = {}, {}
    peak, peak_redis = args.peak, 0.0
    started = time.time()
    try:
        servers["off"] = Server(args.build, [*common, "--log_mode=none"])
        servers["redis"] = Server(args.build, [*common, "--log_mode=store", "--logstore=redis",
                                               f"--redis_addr=127.0.0.1:{redis.port}"])
        for v in args.variants:
            servers[v["name"]] = Server(v["build"] or args.build, [
                *common, "--log_mode=store", "--logstore=redis",
                f"--redis_addr=127.0.0.1:{redis.port}", *v["flags"]])
        startup = " ".join(re.findall(r"\] (rankwire-server listening.*|allocator=.*)$",
                                      servers["redis"].log_text(), re.M))
        if "cpu" in parts:
            servers["floor"] = Floor(args.build, servers["off"].port)
            got["cpu"] = run_cpu(args, servers, redis)
            got["fault_cost_us"] = fault_cost_us()
            peak = statistics.median(p["off"]["qps"] for p in got["cpu"])
            peak_redis = statistics.median(p["redis"]["qps"] for p in got["cpu"])
        if "memory" in parts:
            got["memory"] = run_memory_fetch(args, redis, common)
        if "steady" in parts:
            got["steady"] = run_steady(args, servers["redis"], redis)
            got["steady_qps"] = args.steady_qps
        if parts & {"drops", "faults"} and peak <= 0:
            raise SystemExit("drops and faults need the peak: run cpu, or give --peak")
        if "drops" in parts:
            got["drops"] = run_drops(args, servers, redis, peak, peak_redis)
        if "faults" in parts:
            got["freeze"] = run_freeze(args, servers["redis"], redis, peak)
            got["restart"] = run_restart(args, servers["redis"], redis, peak)
    finally:
        for s in servers.values():
            s.close()
        redis.close()
    model = re.search(r"Model name:\s*(.*)", subprocess.run(
        ["lscpu"], capture_output=True, text=True).stdout)
    rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    table, rows = summary(got, peak)
    lines = [f"## Log path targets (issue 44), {time.strftime('%Y-%m-%d %H:%M')}, revision {rev}",
             "",
             f"{model.group(1).strip() if model else '?'}, {os.cpu_count()} CPUs; server on CPU "
             f"{SERVER_CPU}, load generator and Redis on CPU {LOAD_CPU}; "
             f"{'quick' if args.quick else 'full'} mode, {time.time() - started:.0f} s; "
             f"{'cycled' if args.cycled_ids else 'fresh'} request ids. Command: "
             f"`{' '.join(['bench/logstore_targets.py', *sys.argv[1:]])}`. "
             f"Server (logs in Redis) start-up: `{startup}`. Redis settings: "
             f"`{args.redis_args or '(its defaults)'}`.", ""]
    lines += table
    if "cpu" in got:
        lines += [""] + report_cpu(got["cpu"], args.variants, got.get("fault_cost_us"))
    if "memory" in got:
        lines += [""] + report_memory_fetch(got["memory"])
    if "steady" in got:
        lines += [""] + report_steady(got["steady"], args)
    if "drops" in got:
        lines += [""] + report_drops(got["drops"], peak, peak_redis, args)
    if "freeze" in got:
        lines += [""] + report_faults(got["freeze"], got["restart"], args)
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"peak": peak, **got}, f, indent=1, default=str)
    if args.check:
        missed = [name for name, _, _, ok, quick in rows if not ok and (quick or not args.quick)]
        if missed:
            print("missed: " + "; ".join(missed), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
