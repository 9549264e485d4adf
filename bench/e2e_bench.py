"""End-to-end benchmark: the real server, the real load generator, a real Redis.

Codecs, in interleaved rounds (A B C A B C ...) because this machine's speed
drifts within a minute; medians over rounds are reported with their spread,
and every ratio is against the protobuf baseline measured in the same round.
The same requests against the same server binary, codec (and log placement)
switched by server flag. Open loop at --qps (latency percentiles without
coordinated omission), then closed loop (peak rate). (The log store's
experiment, logs off against logs in Redis, is bench/logstore_targets.py's
now: scripts/bench_logstore.sh.)

Usage: e2e_bench.py --build build [--rounds 3] [--seconds 8] [--qps 100]
The server is pinned to CPU 1; the load generator and Redis to CPU 0.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

from harness import ROOT, Server, cell, loadgen, med



def start_server(build, flags, link=None, binary=None):
    """A rankwire-server on CPU 1; in `link`'s network namespace when given."""
    where = {"host": link.server_ip, "prefix": ["ip", "netns", "exec", link.netns]} if link else {}
    return Server(build, flags, binary=binary, **where)


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
               f"{med([r['p50_us'] for r in o]):.0f} | {cell(p99, '{:.0f}')} | {ratio_p99:.2f} | "
               f"{med([r['client_decode_p50_us'] for r in o]):.1f} | "
               f"{cell([r['qps'] for r in c], '{:.0f}')} | {ratio_qps:.2f} | "
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
            cells.append(cell([r["closed"]["qps"] for r in rs], "{:.0f}"))
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--qps", type=float, default=100)
    parser.add_argument("--only", choices=["codecs"],
                        help="the codec experiment (the only one since the log store's moved "
                             "to bench/logstore_targets.py)")
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
        args.link = "off"
        args.variants = args.variants or ["protobuf/inline", "rankbin/store"]
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", cpu)
    print(f"# End-to-end results\n\nMachine: {model.group(1) if model else '?'}, "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; "
          f"command: `scripts/bench_e2e.sh` (rounds={args.rounds}, seconds={args.seconds}, "
          f"qps={args.qps}).\n")
    print("## Codecs\n")
    print(codec_experiment(args))
    print()


if __name__ == "__main__":
    main()
