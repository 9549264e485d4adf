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
import subprocess
import sys
import tempfile
import time

from harness import ROOT, Redis, Server, loadgen, med



def writer_cpu_seconds(pid):
    """CPU time of the log writer threads (rankwire-logw) of `pid`, summed."""
    total = 0.0
    task_dir = f"/proc/{pid}/task"
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


def start_server(build, flags, link=None, binary=None):
    """A rankwire-server on CPU 1; in `link`'s network namespace when given."""
    if link is None:
        return Server(build, flags, binary=binary)
    return Server(build, flags, host=link.server_ip, prefix=["ip", "netns", "exec", link.netns],
                  binary=binary)


class Link:
    """A 1 Gbit/s link: a network namespace for the server, joined to this
    one by a veth pair whose two ends are shaped with tc htb (netem and tbf
    are not available here). Needs root (CAP_NET_ADMIN); Link.create returns
    None, with the reason, where the machine forbids it."""

    RATE = "1gbit"

    def __init__(self):
        tag = f"{os.getpid() % 100000}"
        self.netns = f"rw-e2e-{tag}"
        self.host_dev, self.ns_dev = f"rwe{tag}a", f"rwe{tag}b"
        octet = 16 + os.getpid() % 200
        self.host_ip, self.server_ip = f"10.211.{octet}.1", f"10.211.{octet}.2"

    @staticmethod
    def create():
        link = Link()
        try:
            link._up()
        except (subprocess.CalledProcessError, OSError) as e:
            link.close()
            err = getattr(e, "stderr", "") or str(e)
            return None, f"network namespaces or tc are not allowed here ({err.strip()})"
        return link, None

    def _run(self, *cmd):
        subprocess.run(list(cmd), check=True, capture_output=True, text=True)

    def _shape(self, prefix, dev):
        # Quantum set explicitly: at 1 Gbit/s the default (rate / r2q) is too big.
        self._run(*prefix, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
                  "default", "10")
        self._run(*prefix, "tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:10",
                  "htb", "rate", self.RATE, "ceil", self.RATE, "quantum", "60000")

    def _up(self):
        ns = ["ip", "netns", "exec", self.netns]
        self._run("ip", "netns", "add", self.netns)
        self._run("ip", "link", "add", self.host_dev, "type", "veth", "peer", "name", self.ns_dev)
        self._run("ip", "link", "set", self.ns_dev, "netns", self.netns)
        self._run("ip", "addr", "add", f"{self.host_ip}/30", "dev", self.host_dev)
        self._run(*ns, "ip", "addr", "add", f"{self.server_ip}/30", "dev", self.ns_dev)
        self._run("ip", "link", "set", self.host_dev, "up")
        self._run(*ns, "ip", "link", "set", self.ns_dev, "up")
        self._run(*ns, "ip", "link", "set", "lo", "up")
        self._shape([], self.host_dev)
        self._shape(ns, self.ns_dev)

    def close(self):
        subprocess.run(["ip", "link", "del", self.host_dev], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)


def spread(values):
    return f"{min(values):.0f}–{max(values):.0f}" if values else "-"


def drop_text(runs):
    fractions = [r.get("log_drop_fraction") for r in runs]
    fractions = [f for f in fractions if f is not None]
    return f"{100 * med(fractions):.0f}%" if fractions else "-"


VARIANTS = [
    ("protobuf", "inline", "protobuf, logs inline (source system)"),
    ("protobuf", "store", "protobuf, logs in store"),
    ("rankbin", "store", "rankbin, logs in store"),
    ("rankbin-zstd", "store", "rankbin-zstd, logs in store"),
    ("rankbin", "inline", "rankbin, logs inline"),
    ("rankbin-zstd", "inline", "rankbin-zstd, logs inline"),
]


def run_variant(args, server_spec, codec, logs, link):
    """One server: unloaded encode (1 caller at 10 qps, loopback only), open
    loop at --qps (4 callers), closed loop (2 callers). `server_spec` is
    (binary or None, extra flags)."""
    binary, extra = server_spec
    server = start_server(args.build, [f"--codec={codec}", f"--log_mode={logs}",
                                       "--logstore=memory", *extra], link, binary)
    out = {}
    try:
        if link is None:
            out["unloaded"] = loadgen(args.build, server.port, args.unloaded_seconds, qps=10,
                                      concurrency=1, warmup=1, host=server.host)
        out["open"] = loadgen(args.build, server.port, args.seconds, qps=args.qps, concurrency=4,
                              warmup=2, host=server.host)
        before = server.metrics()
        out["closed"] = loadgen(args.build, server.port, args.seconds, qps=0, concurrency=2,
                                warmup=2, host=server.host)
        time.sleep(1.0)  # Let the writer finish what is queued.
        after = server.metrics()
        key = 'rankwire_log_items_total{outcome="%s"}'
        enq = after.get(key % "enqueued", 0) - before.get(key % "enqueued", 0)
        dropped = sum(after.get(key % o, 0) - before.get(key % o, 0)
                      for o in ("dropped_queue_full", "dropped_store_error"))
        out["closed"]["log_drop_fraction"] = dropped / (enq + dropped) if enq + dropped > 0 else None
    finally:
        server.close()
    return out


def codec_table(args, runs, variants, alloc, net):
    base = (alloc, net) + variants[0][:2]
    o_base = [r["open"] for r in runs[base]]
    c_base = [r["closed"] for r in runs[base]]
    lines = [
        "| server flags | response bytes | of base | p50 us | p99 us [spread] | p99 / base | "
        "client decode us | peak qps [spread] | peak / base | logs dropped at peak |"
        + (" server encode p50 us: unloaded / under load (ratio) |" if net == "loopback" else ""),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if net == "loopback" else ""),
    ]
    for v in variants:
        rs = runs[(alloc, net) + v[:2]]
        o, c = [r["open"] for r in rs], [r["closed"] for r in rs]
        p99 = [r["p99_us"] for r in o]
        ratio_p99 = med([a["p99_us"] / b["p99_us"] for a, b in zip(o, o_base)])
        ratio_qps = med([a["qps"] / b["qps"] for a, b in zip(c, c_base)])
        row = (f"| `--codec={v[0]} --log_mode={v[1]}` | {med([r['response_bytes'] for r in o]):.0f} | "
               f"{100 * med([r['response_bytes'] for r in o]) / med([r['response_bytes'] for r in o_base]):.1f}% | "
               f"{med([r['p50_us'] for r in o]):.0f} | {med(p99):.0f} [{spread(p99)}] | {ratio_p99:.2f} | "
               f"{med([r['client_decode_p50_us'] for r in o]):.1f} | "
               f"{med([r['qps'] for r in c]):.0f} [{spread([r['qps'] for r in c])}] | {ratio_qps:.2f} | "
               f"{drop_text(c)} |")
        if net == "loopback":
            unloaded = [r["unloaded"]["server_serialize_p50_us"] for r in rs]
            loaded = [r["closed"]["server_serialize_p50_us"] for r in rs]
            ratio = med([b / max(a, 1) for a, b in zip(unloaded, loaded)])
            row += f" {med(unloaded):.0f} / {med(loaded):.0f} ({ratio:.2f}×) |"
        lines.append(row)
    return lines


def p99_ratio(runs, alloc, net, num, den):
    a, b = runs[(alloc, net) + num], runs[(alloc, net) + den]
    return [x["open"]["p99_us"] / y["open"]["p99_us"] for x, y in zip(a, b)]


def allocator_table(runs, variants, allocs):
    head = " | ".join(f"{a} peak qps | {a} encode p50 us under load" for a in allocs)
    lines = ["| server flags | " + head + " | unloaded encode p50 us (" + allocs[0] + ") |",
             "|---|" + "---:|---:|" * len(allocs) + "---:|"]
    for v in variants:
        cells = []
        for a in allocs:
            rs = runs[(a, "loopback") + v[:2]]
            cells.append(f"{med([r['closed']['qps'] for r in rs]):.0f} "
                         f"[{spread([r['closed']['qps'] for r in rs])}]")
            cells.append(f"{med([r['closed']['server_serialize_p50_us'] for r in rs]):.0f}")
        unl = [r["unloaded"]["server_serialize_p50_us"] for r in runs[(allocs[0], "loopback") + v[:2]]]
        lines.append(f"| `--codec={v[0]} --log_mode={v[1]}` | " + " | ".join(cells) +
                     f" | {med(unl):.0f} |")
    return lines


def plot_latency(runs, variants, alloc, nets, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(nets), figsize=(6.5 * len(nets), 4.2), squeeze=False)
    pcts = [("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99")]
    for ax, net in zip(axes[0], nets):
        width = 0.8 / len(pcts)
        for k, (field, label) in enumerate(pcts):
            values = [med([r["open"][field] for r in runs[(alloc, net) + v[:2]]]) / 1000
                      for v in variants]
            ax.bar([i + (k - 1) * width for i in range(len(variants))], values, width, label=label)
        ax.set_xticks(range(len(variants)))
        ax.set_xticklabels([f"{v[0]}\n{v[1]}" for v in variants], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("latency, ms (log scale)")
        ax.set_title(f"{net}" + (" (1 Gbit/s veth, htb)" if net == "link" else ""))
        ax.legend(fontsize=8)
        ax.grid(axis="y", which="both", alpha=0.3)
    fig.suptitle("Rank latency per codec, open loop (medians over interleaved rounds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def codec_experiment(args):
    servers = [("default", (None, []))]
    if args.servers:
        # NAME=[BINARY][:FLAG,FLAG...]
        servers = []
        for spec in args.servers:
            name, rest = spec.split("=", 1)
            binary, _, flags = rest.partition(":")
            servers.append((name, (binary or None, [f for f in flags.split(",") if f])))
    allocs = [name for name, _ in servers]
    variants = [v for v in VARIANTS if not args.variants or f"{v[0]}/{v[1]}" in args.variants]
    link, why = (None, "not requested") if args.link == "off" or args.from_raw else Link.create()
    if args.link == "on" and link is None and not args.from_raw:
        raise RuntimeError(why)
    nets = ["loopback"] + (["link"] if link else [])
    runs = {(a, n) + v[:2]: [] for a in allocs for n in nets for v in variants}
    if args.from_raw:
        with open(args.from_raw) as f:
            raw = json.load(f)
        runs = {tuple(k.split("|")): v for k, v in raw["runs"].items()}
        link, why = None, raw["why"]
        nets = raw["nets"]
        rounds = len(next(iter(runs.values())))
    else:
        runs, why, nets = collect(args, servers, variants, link, why, nets, runs)
        rounds = args.rounds
    return report(args, runs, variants, allocs, nets, why, rounds)


def collect(args, servers, variants, link, why, nets, runs):
    """Runs every (server, network, row) per round, interleaved; keeps the raw
    results in --raw as it goes, so a later failure loses nothing."""
    try:
        for rnd in range(args.rounds):
            combos = [(srv, n, v) for v in variants for srv in servers for n in nets]
            k = rnd * len(combos) // max(args.rounds, 1)
            for (alloc, spec), net, v in combos[k:] + combos[:k]:
                r = run_variant(args, spec, v[0], v[1], link if net == "link" else None)
                runs[(alloc, net) + v[:2]].append(r)
                print(f"round {rnd + 1} {alloc} {net} {v[0]}/{v[1]}: open p99 "
                      f"{r['open']['p99_us']:.0f} us, closed {r['closed']['qps']:.0f} qps, encode "
                      f"p50 {r.get('unloaded', {}).get('server_serialize_p50_us', float('nan')):.0f} "
                      f"-> {r['closed']['server_serialize_p50_us']:.0f} us", file=sys.stderr)
                if args.raw:
                    with open(args.raw, "w") as f:
                        json.dump({"why": why, "nets": nets,
                                   "runs": {"|".join(k): v for k, v in runs.items()}}, f)
    finally:
        if link:
            link.close()
    return runs, why, nets


def report(args, runs, variants, allocs, nets, why, rounds):
    lines = [f"Open loop at {args.qps:.0f} qps (4 callers), then closed loop (2 callers); "
             f"{rounds} interleaved rounds of {args.seconds:.0f} s each; medians, [min–max] "
             f"over rounds; ratios are per round against the first row, then the median. "
             f"Unloaded encode: 1 caller at 10 qps for {args.unloaded_seconds:.0f} s; under load: "
             f"the closed-loop run. Servers compared: {', '.join(allocs)}."]
    if "link" not in nets:
        lines.append(f"\nLink rows: none ({why}); loopback only.")
    for alloc in allocs:
        for net in nets:
            lines += ["", f"### {net}" + (" (1 Gbit/s veth, tc htb)" if net == "link" else "") +
                      (f", server {alloc}" if len(allocs) > 1 else ""), ""]
            lines += codec_table(args, runs, variants, alloc, net)
    have = {v[:2] for v in variants}
    pairs = [(("rankbin-zstd", "store"), ("protobuf", "store"), "⅓"),
             (("rankbin-zstd", "inline"), ("protobuf", "inline"), "½")]
    for net in nets:
        for num, den, goal in pairs:
            if num in have and den in have:
                ratios = p99_ratio(runs, allocs[0], net, num, den)
                lines.append(f"\n{net}: p99 {num[0]}/{num[1]} ÷ {den[0]}/{den[1]}: median "
                             f"{med(ratios):.3f} (per round: {', '.join(f'{x:.3f}' for x in ratios)};"
                             f" target ≤ {goal}).")
    if len(allocs) > 1:
        lines += ["", "### Servers compared (loopback, closed loop)", ""] + allocator_table(runs, variants, allocs)
    errors = sum(x["errors"] for rs in runs.values() for r in rs for x in r.values())
    lines += ["", f"Errors across all runs: {errors}."]
    if args.plot:
        plot_latency(runs, variants, allocs[0], nets, args.plot)
        lines.append(f"\nPlot: `{os.path.relpath(args.plot, ROOT)}`.")
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
                                             "--log_writers=2", "--log_writer_nice=0"]),
              # The writers off the ranking core (--log_writer_cpus): ranking
              # on CPU 1, writers on CPU 0, where at nice 10 they also yield
              # to the load generator and Redis (which a production host
              # would not put there).
              ("record, 2 writers on CPU 0", [*redis_flags, "--log_format=record",
                                              "--log_writers=2", "--log_writer_cpus=0"])]
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
                server = start_server(args.build, ["--codec=rankbin", *flags])
                try:
                    results[name].append(loadgen(args.build, server.port, args.seconds,
                                                 qps=args.qps, warmup=2))
                    peak[name].append(loadgen(args.build, server.port, args.seconds,
                                              concurrency=2, warmup=2))
                finally:
                    server.close()
                print(f"round {rnd + 1} logs {name}: p99 {results[name][-1]['p99_us']:.0f} us, "
                      f"peak {peak[name][-1]['qps']:.0f} qps", file=sys.stderr)

        # Open loop at fractions of the logging-off peak (same run), per
        # variant, in interleaved rounds (each round runs every fraction and
        # variant once, the variants' order rotated): drops, writer CPU per
        # request, and Redis bytes per live request (INFO used_memory delta
        # / DBSIZE right after the run, while the last second's keys are
        # alive). Medians over rounds; the p99 ratio is taken per round
        # against logging off at the same rate.
        peak_qps = med([r["qps"] for r in peak["off"]])
        for rnd in range(args.sweep_rounds):
            for fraction in fractions:
                order = swept[rnd % len(swept):] + swept[:rnd % len(swept)]
                for name, flags in order:
                    redis.cli("FLUSHALL", "SYNC")
                    base = redis.used_memory()
                    server = start_server(args.build, ["--codec=rankbin", *flags])
                    try:
                        run = loadgen(args.build, server.port, args.seconds,
                                      qps=peak_qps * fraction, warmup=2)
                        used, keys = redis.used_memory(), redis.dbsize()
                        time.sleep(1.5)  # Let the writers finish what is queued.
                        m = server.metrics()
                        cpu = writer_cpu_seconds(server.proc.pid)
                    finally:
                        server.close()
                    g = lambda k: m.get(f'rankwire_log_items_total{{outcome="{k}"}}', float("nan"))
                    requests = g("enqueued") / 500
                    sweep[name].append({
                        "round": rnd, "fraction": fraction, "run": run, "enqueued": g("enqueued"),
                        "stored": g("stored"),
                        "dropped": g("dropped_queue_full") + g("dropped_store_error"),
                        # Lines handed to the consumer: enqueued ones plus the
                        # ones refused at the queue (store errors are enqueued).
                        "lines": g("enqueued") + g("dropped_queue_full"),
                        "writer_us": 1e6 * cpu / requests if requests else float("nan"),
                        "bytes": (used - base) / keys if keys else float("nan")})
                    print(f"round {rnd + 1} {name} at {fraction:.0%} of peak: dropped "
                          f"{sweep[name][-1]['dropped']:.0f} of {sweep[name][-1]['lines']:.0f}, "
                          f"p99 {run['p99_us']:.0f} us", file=sys.stderr)
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
    lines += ["", f"Open loop at fractions of the logging-off peak ({peak_qps:.0f} qps, same run), "
              f"{args.sweep_rounds} interleaved rounds of {args.seconds:.0f} s; medians "
              "[min–max] over rounds:",
              "", "| variant | target qps | achieved qps | p99 us | p99 / off, same rate and round | "
              "server-side p99 / off (handler, no queue) | dropped share | "
              "writer CPU us / request | Redis bytes / request |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(values, fmt):
        values = [v for v in values if v == v]  # Drop NaN.
        if not values:
            return "-"
        return f"{fmt(med(values))} [{fmt(min(values))}–{fmt(max(values))}]"

    def share(x):
        return x["dropped"] / x["lines"] if x["lines"] else float("nan")

    for name, _ in swept:
        for fraction in fractions:
            runs = [x for x in sweep[name] if x["fraction"] == fraction]
            offs = {x["round"]: x for x in sweep["off"] if x["fraction"] == fraction}
            ratios = [x["run"]["p99_us"] / offs[x["round"]]["run"]["p99_us"] for x in runs]
            server_ratios = [x["run"].get("server_total_p99_us", float("nan")) /
                             offs[x["round"]]["run"].get("server_total_p99_us", float("nan"))
                             for x in runs]
            lines.append(
                f"| {name} | {peak_qps * fraction:.0f} ({fraction:.0%}) | "
                f"{med([x['run']['qps'] for x in runs]):.0f} | "
                f"{cell([x['run']['p99_us'] for x in runs], lambda v: f'{v:.0f}')} | "
                f"{cell(ratios, lambda v: f'{v:.2f}') if name != 'off' else '1'} | "
                f"{cell(server_ratios, lambda v: f'{v:.2f}') if name != 'off' else '1'} | "
                f"{cell([share(x) for x in runs], lambda v: f'{100 * v:.1f} %') if name != 'off' else '-'} | "
                f"{cell([x['writer_us'] for x in runs], lambda v: f'{v:.0f}')} | "
                f"{cell([x['bytes'] / 1e3 for x in runs], lambda v: f'{v:.0f} KB')} |")
    lines += ["", "Highest tested rate at which no round dropped a line, as a share of the "
              "logging-off peak:", ""]
    for name, _ in stores:
        clean = [f for f in fractions
                 if all(x["dropped"] == 0 for x in sweep[name] if x["fraction"] == f)]
        lines.append(f"- {name}: {max(clean):.0%}" if clean else f"- {name}: none of "
                     f"{', '.join(f'{f:.0%}' for f in fractions)}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--qps", type=float, default=100)
    parser.add_argument("--sweep_rounds", type=int, default=3,
                        help="interleaved rounds of the log store's open-loop sweep")
    parser.add_argument("--only", choices=["codecs", "logstore"])
    parser.add_argument("--servers", nargs="*", metavar="NAME=[BINARY][:FLAG,...]",
                        help="compare server binaries (e.g. one per allocator) or server flags "
                             "(e.g. 'two=:--rank_workers=2'), interleaved")
    parser.add_argument("--variants", nargs="*", metavar="CODEC/LOGS",
                        help="only these codec experiment rows, e.g. rankbin/inline")
    parser.add_argument("--link", choices=["auto", "on", "off"], default="auto",
                        help="also run every row across a 1 Gbit/s veth link (needs root)")
    parser.add_argument("--unloaded_seconds", type=float, default=3)
    parser.add_argument("--plot", help="write the latency plot (PNG) here")
    parser.add_argument("--raw", help="keep every run's results (JSON) here, as they come")
    parser.add_argument("--from_raw", help="report (and plot) a --raw file instead of running")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run (seconds): one 1 s round of two codec rows, loopback")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.unloaded_seconds, args.qps = 1, 1, 1, 20
        args.link, args.only = "off", args.only or "codecs"
        args.variants = args.variants or ["protobuf/inline", "rankbin/store"]
    if args.sweep_rounds < 1 or args.rounds < 1:
        parser.error("--rounds and --sweep_rounds must be at least 1")
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
