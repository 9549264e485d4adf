"""Overload and TLS benchmark: the real server and the real load generator.

1. Overload. A server with --max_concurrent_rank=L, as shipped, with
   --latency_slice_us=0 (every thread on the kernel's default time slice)
   and with --rank_workers=L (a worker per slot, as before one worker per
   CPU was the default), rotating, a fresh server per run. Each run: (a) an unloaded server at
   concurrency L (closed loop) and (b) 4L closed-loop callers. Reported per
   round: errors other than RESOURCE_EXHAUSTED (target
   0), the refusals' p99 (target <= 2 ms), the admitted calls' p99 against
   (a)'s p99 in the same round (target <= 2x), and the ranking worker's share
   of the server's CPU during (b) (from /proc/<pid>/task/*/stat; the rest is
   gRPC's threads). --rank_cpus replaces the variants with the server as
   shipped against --rank_worker_cpus=1 (ranking alone on CPU 1, the server's
   other threads on CPU 0). --nice_sweep replaces them with the ranking worker
   at nice 0, -5 and -10.
2. TLS. A plaintext and a TLS server (same flags, certificates made with
   openssl now), 500-candidate rankbin calls at concurrency 1 on a warm
   channel, rounds alternating plaintext/TLS: p50 ratio TLS/plaintext per
   round (target <= 1.3).
3. Refusals. The issue's amplification request and a maximal valid request
   over the response budget, timed from a Python grpcio client (target: refused
   in <= 5 ms).

Medians over rounds with their spread (min..max). Servers on CPU 1, the load
generator on CPU 0 (the machine has 2 cores).

Usage: hostile_bench.py --build build [--rounds 5] [--seconds 5] [--limit 2]
           [--only overload|tls|refusals] [--nice_sweep | --rank_cpus]
           [--callers_nice N]

--callers_nice N runs every load generator (baseline, flood, probe) under
`nice -n N`: with 19, the server's threads that share CPU 0 with the callers
(--rank_cpus) take it first, as if the callers ran elsewhere.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from harness import ROOT, Server, cell, loadgen, parse_loadgen, rotated


# Prefix of every load generator command: `nice -n N` with --callers_nice.
CALLERS = []


def load(build, server, concurrency, seconds, extra=(), background=False):
    """The callers: rankbin, logs off, below the server in priority with
    --callers_nice."""
    return loadgen(build, server.port, seconds, concurrency=concurrency, warmup=1, prefix=CALLERS,
                   extra=["--codec=rankbin", "--log_mode=none", *extra], background=background)


def make_certs(workdir):
    def run(*args):
        subprocess.run(args, cwd=workdir, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", "2", "-subj", "/CN=bench-ca", "-keyout", "ca.key", "-out", "ca.pem",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr")
    with open(os.path.join(workdir, "server.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-days", "2", "-in", "server.csr", "-CA", "ca.pem", "-CAkey",
        "ca.key", "-CAcreateserial", "-out", "server.pem", "-extfile", "server.ext")


def thread_cpu(server):
    """CPU seconds of the server's threads so far: (ranking workers, all others)."""
    rank = other = 0.0
    task_dir = f"/proc/{server.proc.pid}/task"
    for tid in os.listdir(task_dir):
        try:
            with open(f"{task_dir}/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"{task_dir}/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # A thread that ended meanwhile.
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if comm == "rankwire-rank":
            rank += seconds
        else:
            other += seconds
    return rank, other


def overload_round(args, flags):
    """One round against a fresh server: unloaded, then 4L callers with a probe inside.
    A server with --rank_worker_cpus may use both CPUs (its other threads run on
    CPU 0, with the load generator); any other runs on CPU 1 alone."""
    limit = args.limit
    cpus = "0,1" if any(f.startswith("--rank_worker_cpus=") for f in flags) else "1"
    server = Server(args.build, [f"--max_concurrent_rank={limit}", "--codec=rankbin",
                                 "--log_mode=none", *flags], cpus=cpus)
    try:
        base = load(args.build, server, limit, args.seconds)
        # 4L closed-loop callers; inside their run, a probe: open loop at
        # 50 qps, whose calls do not queue behind the probe's own.
        flood = load(args.build, server, 4 * limit, args.seconds + 1, background=True)
        cpu_before = thread_cpu(server)
        time.sleep(1.5)
        probe = load(args.build, server, 2, args.seconds - 1, ["--qps=50"])
        out, _ = flood.communicate(timeout=args.seconds + 60)
        cpu_after = thread_cpu(server)
        over = parse_loadgen(out)
        # Where the server's core went during the flood (its warm-up
        # included): the ranking worker, and everything else (gRPC's
        # threads, which receive and answer every call, refused or not).
        rank_s = cpu_after[0] - cpu_before[0]
        other_s = cpu_after[1] - cpu_before[1]
        over["rank_cpu_share"] = rank_s / max(rank_s + other_s, 1e-9)
        return base, over, probe
    finally:
        server.close()


def overload_table(rows):
    print("| round | unloaded p99 us | admitted | admitted p99 us | ratio | refused | "
          "refused p50 us | refused p99 us | probe: ok / refused | probe refused p50 / p99 us "
          "| ranking's share of the server CPU | other errors |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, (b, o, p) in enumerate(rows):
        print(f"| {i + 1} | {b['p99_us']:.0f} | {o['requests']} | {o['p99_us']:.0f} | "
              f"{o['p99_us'] / b['p99_us']:.2f} | {o['rejected']} | {o['rejected_p50_us']:.0f} | "
              f"{o['rejected_p99_us']:.0f} | {p['requests']} / {p['rejected']} | "
              f"{p['rejected_p50_us']:.0f} / {p['rejected_p99_us']:.0f} | "
              f"{100 * o['rank_cpu_share']:.0f} % | {o['errors'] + b['errors'] + p['errors']} |")
    ratios = [o["p99_us"] / b["p99_us"] for b, o, _ in rows]
    errors = sum(o["errors"] + b["errors"] + p["errors"] for b, o, p in rows)
    print(f"\nadmitted p99 / unloaded p99: median {cell(ratios)}; refused calls per round: "
          f"median {cell([o['rejected'] for _, o, _ in rows], '{:.0f}')}; refusal p50 / p99 us, "
          f"closed-loop callers: median "
          f"{cell([o['rejected_p50_us'] for _, o, _ in rows], '{:.0f}')} / "
          f"{cell([o['rejected_p99_us'] for _, o, _ in rows], '{:.0f}')}, probe: median "
          f"{cell([p['rejected_p50_us'] for _, _, p in rows], '{:.0f}')} / "
          f"{cell([p['rejected_p99_us'] for _, _, p in rows], '{:.0f}')}; "
          f"errors other than RESOURCE_EXHAUSTED: {errors}\n")


def overload(args):
    limit = args.limit
    # The server as shipped, and (same run, rotating) with every thread
    # on the kernel's default time slice (what --latency_slice_us buys), and
    # with a ranking worker per slot (what one worker per CPU buys).
    variants = [("as shipped", list(args.server_flag)),
                ("--latency_slice_us=0 (kernel's default slices)",
                 [*args.server_flag, "--latency_slice_us=0"]),
                (f"--rank_workers={limit} (a worker per slot, time-sliced)",
                 [*args.server_flag, f"--rank_workers={limit}"])]
    if args.rank_cpus:
        # Ranking alone on CPU 1, every other server thread on CPU 0 beside
        # the load generator, against the server as shipped on CPU 1.
        variants = [("as shipped (CPU 1)", list(args.server_flag)),
                    ("--rank_worker_cpus=1 (server on CPUs 0-1: ranking alone on 1)",
                     [*args.server_flag, "--rank_worker_cpus=1"])]
    if args.nice_sweep:
        # What the ranking worker's CPU weight trades: its share of the core
        # against gRPC's threads, which answer the refusals.
        variants = [(f"--rank_worker_nice={n}", [*args.server_flag, f"--rank_worker_nice={n}"])
                    for n in (0, -5, -10)]
    rows = {name: [] for name, _ in variants}
    for r in range(args.rounds):
        order = rotated(variants, r)
        for name, flags in order:
            base, over, probe = overload_round(args, flags)
            rows[name].append((base, over, probe))
            print(f"round {r + 1} {name}: unloaded p99 {base['p99_us']:.0f} us; overload: "
                  f"{over['requests']} ok p99 {over['p99_us']:.0f} us, {over['rejected']} "
                  f"refused p50/p99 {over['rejected_p50_us']:.0f}/{over['rejected_p99_us']:.0f} "
                  f"us, {over['errors']} errors; probe refused p99 "
                  f"{probe['rejected_p99_us']:.0f} us", file=sys.stderr)
    print(f"## Overload at 4x --max_concurrent_rank={limit}\n")
    print(f"{args.rounds} rounds, the {len(variants)} server variants rotating (ABC, BCA, ...), a fresh "
          f"server each: closed loop at concurrency {limit} for {args.seconds} s (unloaded), "
          f"then {4 * limit} closed-loop callers for {args.seconds + 1} s and, inside that, a "
          f"probe at 50 qps open loop (2 callers) for {args.seconds - 1} s; codec rankbin, logs "
          "off, 500 candidates. The closed-loop callers retry at once when refused, so their "
          "own client CPU (one core for 8 callers) is in their latencies; the probe's calls "
          "are not queued behind its own.\n")
    for name, _ in variants:
        print(f"### {name}\n")
        overload_table(rows[name])


def tls(args):
    with tempfile.TemporaryDirectory() as certs:
        make_certs(certs)
        flags = ["--codec=rankbin", "--log_mode=none"]
        plain = Server(args.build, flags)
        secure = Server(args.build, flags + [f"--tls_cert_file={certs}/server.pem",
                                             f"--tls_key_file={certs}/server.key"])
        tls_flags = [f"--tls_ca_file={certs}/ca.pem"]
        rows = []
        try:
            for r in range(args.rounds):
                p = load(args.build, plain, 1, args.seconds)
                t = load(args.build, secure, 1, args.seconds, tls_flags)
                rows.append((p, t))
                print(f"round {r + 1}: plaintext p50 {p['p50_us']:.0f} us, TLS p50 "
                      f"{t['p50_us']:.0f} us", file=sys.stderr)
        finally:
            plain.close()
            secure.close()
    ratios = [t["p50_us"] / p["p50_us"] for p, t in rows]
    print("## TLS against plaintext\n")
    print(f"{args.rounds} rounds alternating plaintext/TLS, {args.seconds} s each, concurrency 1 "
          "(closed loop, channel warmed for 1 s first), 500-candidate rankbin responses "
          "(about 85 KB), logs off.\n")
    print("| round | plaintext p50 us | TLS p50 us | ratio | plaintext p99 us | TLS p99 us |")
    print("|---|---|---|---|---|---|")
    for i, (p, t) in enumerate(rows):
        print(f"| {i + 1} | {p['p50_us']:.0f} | {t['p50_us']:.0f} | "
              f"{t['p50_us'] / p['p50_us']:.2f} | {p['p99_us']:.0f} | {t['p99_us']:.0f} |")
    print(f"\nTLS p50 / plaintext p50: median {cell(ratios)}; errors: "
          f"{sum(p['errors'] + t['errors'] for p, t in rows)}\n")


def refusals(args):
    """Time the refusal of the issue's amplification request (refused by the
    input contract) and of a maximal valid request whose response would be
    ~75 MB (refused by the response budget), from a warm grpcio channel."""
    import grpc  # Debian's python3-grpcio
    with tempfile.TemporaryDirectory() as gen:
        subprocess.run(["protoc", f"--python_out={gen}", "-I", os.path.join(ROOT, "proto"),
                        "rank/v1/rank.proto"], check=True)
        sys.path.insert(0, gen)
        from rank.v1 import rank_pb2  # noqa: E402

        def request(candidates, features, user_id, name_bytes, id_bytes):
            r = rank_pb2.RankRequest(request_id="bench-refusal", scene=1, user_id=user_id,
                                     request_time_ms=1, top_n=10, log_mode=1,
                                     accept_codecs=["protobuf"])
            r.context["query"] = "q" * min(512, name_bytes * 4)
            names = [f"f{j:03d}" + "n" * (name_bytes - 4) for j in range(features)]
            r.item_feature_names.extend(names)
            for i in range(candidates):
                c = r.candidates.add(item_id=f"{i:06d}" + "i" * (id_bytes - 6),
                                     recall_source="s" * 64, recall_rank=i + 1)
                c.features.extend(float(i % 97 + j) for j in range(features))
            return r.SerializeToString()

        amplification = request(1000, 18, "u" * 100 * 1024, 8, 12)
        maximal = request(1000, 256, "u" * 256, 128, 256)
        server = Server(args.build, ["--codec=protobuf"])
        try:
            channel = grpc.insecure_channel(f"127.0.0.1:{server.port}", options=[
                ("grpc.max_send_message_length", 64 << 20)])
            call = channel.unary_unary("/rank.v1.RankService/Rank")
            rows = []
            for name, payload, code in (("amplification (100 KB user_id)", amplification,
                                         grpc.StatusCode.INVALID_ARGUMENT),
                                        ("maximal valid, ~75 MB response", maximal,
                                         grpc.StatusCode.RESOURCE_EXHAUSTED)):
                times = []
                for i in range(5 + args.refusals):
                    t0 = time.perf_counter()
                    try:
                        call(payload, timeout=10)
                        raise RuntimeError(f"{name}: not refused")
                    except grpc.RpcError as e:
                        if e.code() != code:
                            raise RuntimeError(f"{name}: {e.code()} {e.details()}")
                    if i >= 5:  # The first five warm the channel.
                        times.append((time.perf_counter() - t0) * 1e3)
                times.sort()
                rows.append((name, len(payload), code.name, times))
            m = server.metrics()
            phase = {p: m[f'rankwire_server_phase_seconds_sum{{phase="{p}"}}'] /
                     max(1, m[f'rankwire_server_phase_seconds_count{{phase="{p}"}}']) * 1e3
                     for p in ("request_deserialize", "validate", "rank")}
            ranked = m['rankwire_server_phase_seconds_count{phase="rank"}']
            rss = open(f"/proc/{server.proc.pid}/status").read()
            rss_kb = int(next(l for l in rss.splitlines() if l.startswith("VmRSS")).split()[1])
        finally:
            server.close()
    print("## Refusing amplification up front\n")
    print(f"{args.refusals} calls of each after 5 warm-up calls, one at a time, from Python "
          "grpcio (time from send to status, request transfer included).\n")
    print("| request | request bytes | status | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|")
    for name, size, code, t in rows:
        p99 = t[min(len(t) - 1, int(0.99 * (len(t) - 1) + 0.5))]
        print(f"| {name} | {size} | {code} | {statistics.median(t):.2f} | {p99:.2f} | "
              f"{t[-1]:.2f} |")
    print(f"\nServer side, mean over all {2 * (5 + args.refusals)} calls: request parse "
          f"{phase['request_deserialize']:.2f} ms, validation + budget {phase['validate']:.3f} ms; "
          f"calls ranked: {ranked:.0f}. Server RSS after all of them: {rss_kb / 1024:.0f} MB.\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--refusals", type=int, default=100)
    parser.add_argument("--server_flag", action="append", default=[],
                        help="extra server flag for the overload part (repeatable)")
    parser.add_argument("--only", choices=["overload", "tls", "refusals"])
    parser.add_argument("--rank_cpus", action="store_true",
                        help="overload: the server as shipped against --rank_worker_cpus=1")
    parser.add_argument("--nice_sweep", action="store_true",
                        help="overload: the ranking worker at nice 0, -5 and -10 instead of "
                             "the default variants")
    parser.add_argument("--callers_nice", type=int, default=0,
                        help="run every load generator at this nice value (19: the callers "
                             "yield CPU 0 to the server's threads there, the nearest this host "
                             "comes to callers on other machines)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run (seconds): one 2 s round of each part, 10 refusals")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.refusals = 1, 2, 10
    if args.callers_nice:
        CALLERS.extend(["nice", "-n", str(args.callers_nice)])
    load = open("/proc/loadavg").read().split()[:3]
    print(f"# Hostile-load benchmark\n\n{os.cpu_count()} cores; load average at start "
          f"{' '.join(load)}; {time.strftime('%Y-%m-%d %H:%M')}"
          f"{'; callers at nice ' + str(args.callers_nice) if args.callers_nice else ''}\n")
    if args.only in (None, "overload"):
        overload(args)
    if args.only in (None, "refusals"):
        refusals(args)
    if args.only in (None, "tls"):
        tls(args)


if __name__ == "__main__":
    main()
