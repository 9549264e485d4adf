#!/usr/bin/python3
"""Turns interleaved codec_bench rounds into the BENCHMARKS tables.

Usage: bench_report.py [--command CMD] ROUND.json [ROUND.json ...]

Each ROUND.json is one Google Benchmark JSON file in which every benchmark
ran once (scripts/bench.sh runs the rounds in rotated orders). Per benchmark
it prints the median CPU time over rounds and the min-max spread; ratios
against protobuf are computed within each round (the two rows ran seconds
apart, under the same machine speed) and the median of those per-round
ratios is reported. Then it checks the targets of issue 3.

Standard library only, so it runs with the system /usr/bin/python3.
"""

import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys

OP_ORDER = ["Encode", "Serialize", "Memcpy", "MemcpyAlloc", "GatherFloor", "Decode", "ModelCopy", "Parse", "Open", "Top10",
            "Verify"]
ENCODE_SIDE = {"Encode", "Serialize", "Memcpy", "MemcpyAlloc", "GatherFloor"}
FORMAT_ORDER = ["model", "protobuf", "rankbin", "rankbin-zstd"]
VARIANT_ORDER = ["logs_inline", "logs_store"]
NAME_RE = re.compile(r"^BM_(?P<op>[A-Za-z0-9]+)/(?P<fmt>[^/]+)/(?P<variant>[^/]+)$")


def to_us(value, unit):
    return value * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]


def load_rounds(paths):
    """Returns (rounds, context): rounds is a list of {name: (cpu_us, bytes)}."""
    rounds, context = [], None
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = context or data.get("context", {})
        r = {}
        for b in data["benchmarks"]:
            if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                continue
            r[b["name"]] = (to_us(b["cpu_time"], b["time_unit"]), b.get("bytes"))
        rounds.append(r)
    return rounds, context


def machine():
    model, cores = "unknown", "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        model = fields.get("Model name", model)
        cores = fields.get("CPU(s)", cores)
        if fields.get("Hypervisor vendor"):
            model += f" ({fields['Hypervisor vendor']} guest)"
    except (OSError, subprocess.CalledProcessError):
        pass
    return model, cores


def revision():
    """HEAD, plus the payload-relevant paths with local changes (read-only git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "codec", "server", "client",
                                "proto"], capture_output=True, text=True,
                               check=True).stdout.split("\n")
        dirty = [line[3:] for line in dirty if line.strip()]
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    if dirty:
        return f"{head} + local changes in {', '.join(sorted(dirty))}"
    return head


def sort_key(name):
    m = NAME_RE.match(name)
    if not m:
        return (9, 99, 99, name)
    rank = lambda seq, v: seq.index(v) if v in seq else len(seq)
    return (rank(VARIANT_ORDER, m["variant"]), rank(OP_ORDER, m["op"]),
            rank(FORMAT_ORDER, m["fmt"]), name)


def fmt_us(us):
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    if us >= 100:
        return f"{us:.0f} µs"
    if us >= 10:
        return f"{us:.1f} µs"
    return f"{us:.2f} µs"


def fmt_x(x):
    if x >= 100:
        return f"{x:.0f}×"
    if x >= 10:
        return f"{x:.1f}×"
    return f"{x:.2f}×"


class Results:
    def __init__(self, rounds):
        self.rounds = rounds
        names = set()
        for r in rounds:
            names.update(r)
        self.names = sorted(names, key=sort_key)

    def times(self, name):
        return [r[name][0] for r in self.rounds if name in r]

    def bytes(self, name):
        for r in self.rounds:
            if name in r and r[name][1] is not None:
                return int(r[name][1])
        return None

    def median(self, name):
        t = self.times(name)
        return statistics.median(t) if t else None

    def ratios(self, num, den):
        """Per-round time(num) / time(den), for rounds that have both."""
        return [r[num][0] / r[den][0] for r in self.rounds if num in r and den in r]


def baseline_for(name):
    m = NAME_RE.match(name)
    if not m:
        return None
    op = "Serialize" if m["op"] in ENCODE_SIDE else "Parse"
    return f"BM_{op}/protobuf/{m['variant']}"


def results_table(res):
    pb_bytes = res.bytes("BM_Serialize/protobuf/logs_inline")
    lines = [
        "| benchmark | median | spread (min … max) | speedup vs protobuf¹ | bytes | bytes vs protobuf² |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in res.names:
        t = res.times(name)
        if not t:
            continue
        med, lo, hi = statistics.median(t), min(t), max(t)
        spread = f"{fmt_us(lo)} … {fmt_us(hi)} (±{50 * (hi - lo) / med:.0f}%)"
        base = baseline_for(name)
        speed = ""
        if base and base != name:
            rs = res.ratios(base, name)
            if rs:
                speed = fmt_x(statistics.median(rs))
        elif base == name:
            speed = "1 (baseline)"
        b = res.bytes(name)
        bytes_col = f"{b:,}" if b else ""
        pct = f"{100 * b / pb_bytes:.1f}%" if b and pb_bytes else ""
        lines.append(f"| `{name}` | {fmt_us(med)} | {spread} | {speed} | {bytes_col} | {pct} |")
    lines += [
        "",
        "¹ Median over rounds of (protobuf time ÷ this row's time) within the same round; "
        "encode-side rows (Encode, Serialize, Memcpy*) against `BM_Serialize/protobuf` "
        "(serialize-only of the already-built message), decode-side rows (Decode, ModelCopy, Parse, "
        "Open, Top10, Verify) against `BM_Parse/protobuf` (parse-only), same log placement.  ",
        "² Against the protobuf baseline **with logs inline** "
        f"({pb_bytes:,} bytes), for both placements." if pb_bytes else "",
    ]
    return lines


class Check:
    def __init__(self, label, goal, value, lo, hi, ok, margin):
        self.label, self.goal, self.value, self.lo, self.hi = label, goal, value, lo, hi
        self.ok, self.margin = ok, margin


def speed_check(res, label, slow, fast, goal_x):
    """Target: time(slow) / time(fast) >= goal_x, per-round ratio medians."""
    rs = res.ratios(slow, fast)
    if not rs:
        return Check(label, f"≥ {goal_x:g}×", "n/a", None, None, None, "benchmark missing")
    med = statistics.median(rs)
    ok = med >= goal_x
    if ok:
        margin = f"+{100 * (med / goal_x - 1):.0f}% over the target"
    else:
        margin = f"{100 * (1 - med / goal_x):.0f}% short (needs {goal_x / med:.2f}× more speed)"
    return Check(label, f"≥ {goal_x:g}×", fmt_x(med), fmt_x(min(rs)), fmt_x(max(rs)), ok, margin)


def within_check(res, label, slow, floor, goal_x):
    """Target: time(slow) / time(floor) <= goal_x."""
    rs = res.ratios(slow, floor)
    if not rs:
        return Check(label, f"≤ {goal_x:g}×", "n/a", None, None, None, "benchmark missing")
    med = statistics.median(rs)
    ok = med <= goal_x
    if ok:
        margin = f"{100 * (1 - med / goal_x):.0f}% under the limit"
    else:
        margin = f"{100 * (med / goal_x - 1):.0f}% over (needs {med / goal_x:.2f}× less time)"
    return Check(label, f"≤ {goal_x:g}×", fmt_x(med), fmt_x(min(rs)), fmt_x(max(rs)), ok, margin)


def size_check(res, label, name, base, goal_pct):
    b, pb = res.bytes(name), res.bytes(base)
    if not b or not pb:
        return Check(label, f"≤ {goal_pct}%", "n/a", None, None, None, "benchmark missing")
    pct = 100 * b / pb
    ok = pct <= goal_pct
    margin = (f"{goal_pct - pct:.1f} points under" if ok
              else f"{pct - goal_pct:.1f} points over (needs {b - pb * goal_pct / 100:,.0f} fewer bytes)")
    return Check(label, f"≤ {goal_pct}%", f"{pct:.1f}% ({b:,} B)", None, None, ok, margin)


def target_checks(res):
    v = "logs_inline"
    rb, rz = f"BM_Encode/rankbin/{v}", f"BM_Encode/rankbin-zstd/{v}"
    ser, parse = f"BM_Serialize/protobuf/{v}", f"BM_Parse/protobuf/{v}"
    pb = ser
    return [
        speed_check(res, "`rankbin` encode vs protobuf serialize-only", ser, rb, 15),
        within_check(res, "`rankbin` encode vs memcpy of its output (preallocated destination)",
                     rb, f"BM_Memcpy/rankbin/{v}", 5),
        within_check(res, "  (same, memcpy into a freshly allocated OwnedBuffer; informational)",
                     rb, f"BM_MemcpyAlloc/rankbin/{v}", 5),
        within_check(res, "  (informational: vs gathering the bytes an encoder must read from "
                     "the model's separate allocations, no format)",
                     rb, f"BM_GatherFloor/model/{v}", 5),
        speed_check(res, "`rankbin` full decode vs protobuf parse-only", parse,
                    f"BM_Decode/rankbin/{v}", 20),
        speed_check(res, "`rankbin` top-10 lazy read (all metrics + log) vs protobuf parse-only",
                    parse, f"BM_Top10/rankbin/{v}", 1000),
        size_check(res, "`rankbin` bytes vs protobuf", f"BM_Encode/rankbin/{v}", pb, 60),
        size_check(res, "`rankbin-zstd` bytes vs protobuf", f"BM_Encode/rankbin-zstd/{v}", pb, 25),
        speed_check(res, "`rankbin-zstd` encode vs protobuf serialize-only (≤ ½ the time)",
                    ser, rz, 2),
        size_check(res, "logs in the store: `rankbin` response vs protobuf with logs inline",
                   "BM_Encode/rankbin/logs_store", pb, 15),
        size_check(res, "logs in the store: `rankbin-zstd` response vs protobuf with logs inline",
                   "BM_Encode/rankbin-zstd/logs_store", pb, 15),
    ]


def checks_table(checks):
    lines = ["| target (logs inline unless said) | goal | measured (median of per-round ratios) "
             "| rounds' range | result |", "|---|---|---|---|---|"]
    for c in checks:
        rng = f"{c.lo} … {c.hi}" if c.lo else ""
        verdict = "n/a" if c.ok is None else ("**PASS**" if c.ok else "**MISS**")
        lines.append(f"| {c.label} | {c.goal} | {c.value} | {rng} | {verdict}: {c.margin} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--command", default="scripts/bench.sh")
    ap.add_argument("--revision", help="printed instead of asking git")
    ap.add_argument("rounds", nargs="+")
    args = ap.parse_args()
    rounds, context = load_rounds(args.rounds)
    res = Results(rounds)
    model, cores = machine()
    date = (context or {}).get("date") or datetime.datetime.now().isoformat(timespec="seconds")
    out = [
        f"- **Machine:** {model}, {cores} CPUs (`lscpu`); benchmarks pinned to one core "
        "(`taskset`).",
        f"- **Date:** {date}",
        f"- **Command:** `{args.command}`",
        f"- **Revision:** {args.revision or revision()}",
        f"- **Rounds:** {len(rounds)}, interleaved (every benchmark once per round, each round in "
        "a rotated order); times are CPU time per operation, median over rounds.",
    ]
    if context and context.get("library_build_type") == "debug":
        out.append("- Note: Debian's libbenchmark reports itself as a debug build; that is the "
                   "harness only, the code measured is built Release (-O3).")
    out += ["", "### Results", ""] + results_table(res)
    out += ["", "### Targets (issue 3)", ""] + checks_table(target_checks(res))
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
