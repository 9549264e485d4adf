#!/usr/bin/python3
"""The payload-shape sweep and the scaling plot, from interleaved codec_bench
rounds (the same JSON files bench_report.py reads).

Usage: shape_report.py [--plot PNG] [--command CMD] ROUND.json [ROUND.json ...]

Every ratio is taken within a round against the protobuf baseline of the
same shape (serialize-only for encode, parse-only for decode and top-10),
then the median over rounds is reported with the min-max spread.
"""

import argparse

from bench_report import load_rounds
from harness import med

SHAPES = [("logs_inline", "(a) shipped model, logs inline"),
          ("shape_strings", "(b) string-heavy: 6 long distinct traces per item"),
          ("shape_longstrings", "(b2) long strings: 6 long distinct traces + 12 numbers per item"),
          ("shape_fewkeys", "(c) few keys: 4 per item"),
          ("shape_manykeys", "(d) many keys: 200, each item a different half"),
          ("items_10", "(e) 10 items"), ("items_100", "(e) 100 items"),
          ("items_500", "(e) 500 items"), ("items_2000", "(e) 2000 items"),
          ("items_5000", "(e) 5000 items")]
# Probe shapes (codec_bench --probe, bench/shape_payloads.h): not the
# issue's sweep; payloads unlike it, run to find cliffs. Shown in a table of
# their own with the same goals for reference, and not counted as misses.
PROBES = [("probe_distinctshort", "distinct short strings (4 keys, 9-15 B, every value new)"),
          ("probe_mediumrepeat", "20-80 B strings from 300 values (6 keys)"),
          ("probe_ragged", "1-60 of 60 keys per item, random order"),
          ("probe_widesparse", "8 of 3000 keys per item"),
          ("probe_longid", "80 B ids, 5 doubles, 1.6 KB log"),
          ("probe_bare", "no metrics, no log"),
          ("probe_explained", "38 keys, 10 explanation keys in the top 10 items only")]
SIZES = [10, 100, 500, 2000, 5000]


def ratios(rounds, num, den):
    return [r[num][0] / r[den][0] for r in rounds if num in r and den in r]


def cell(xs, goal, higher_is_better=True):
    if not xs:
        return "—"
    m = med(xs)
    ok = m >= goal if higher_is_better else m <= goal
    return f"{m:.1f}× [{min(xs):.1f}–{max(xs):.1f}] {'✓' if ok else '**✗**'}"


def bytes_of(rounds, name):
    for r in rounds:
        if name in r and r[name][1] is not None:
            return r[name][1]
    return None


def sweep(rounds, shapes=SHAPES):
    lines = ["| shape | rankbin encode ÷ protobuf serialize (≥ 15×) | full decode (≥ 20×) | "
             "top-10 (≥ 1000×) | rankbin bytes (≤ 60 %) | rankbin-zstd bytes | "
             "rankbin-zstd encode ÷ protobuf serialize |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    misses = []
    for v, label in shapes:
        ser, par = f"BM_Serialize/protobuf/{v}", f"BM_Parse/protobuf/{v}"
        enc = ratios(rounds, ser, f"BM_Encode/rankbin/{v}")
        dec = ratios(rounds, par, f"BM_Decode/rankbin/{v}")
        top = ratios(rounds, par, f"BM_Top10/rankbin/{v}")
        zenc = ratios(rounds, f"BM_Encode/rankbin-zstd/{v}", ser)
        pb = bytes_of(rounds, ser)
        rb, zb = bytes_of(rounds, f"BM_Encode/rankbin/{v}"), bytes_of(rounds, f"BM_Encode/rankbin-zstd/{v}")
        if not pb:
            continue
        rb_pct, zb_pct = 100 * rb / pb, 100 * zb / pb
        for name, xs, goal in (("encode", enc, 15), ("decode", dec, 20), ("top-10", top, 1000)):
            if xs and med(xs) < goal:
                misses.append(f"{label}: {name} {med(xs):.1f}× (goal {goal}×)")
        if rb_pct > 60:
            misses.append(f"{label}: rankbin bytes {rb_pct:.1f} %")
        zgoal = ""
        if v == "shape_strings":
            zgoal = " (≤ 30 %)" + (" ✓" if zb_pct <= 30 else " **✗**")
            if zb_pct > 30:
                misses.append(f"{label}: rankbin-zstd bytes {zb_pct:.1f} %")
            if zenc and med(zenc) > 1:
                misses.append(f"{label}: rankbin-zstd encode {med(zenc):.2f}× protobuf serialize")
        lines.append(
            f"| {label} | {cell(enc, 15)} | {cell(dec, 20)} | {cell(top, 1000)} | "
            f"{rb_pct:.1f} % ({rb:,.0f} B of {pb:,.0f}) {'✓' if rb_pct <= 60 else '**✗**'} | "
            f"{zb_pct:.1f} %{zgoal} | "
            f"{med(zenc):.2f}× [{min(zenc):.2f}–{max(zenc):.2f}]"
            f"{(' ✓' if med(zenc) <= 1 else ' **✗**') if v == 'shape_strings' else ''} |")
    return lines, misses


def floors(rounds, shapes=SHAPES):
    """What any codec of this model could reach on each shape: the targets'
    ratios with the codec replaced by a floor measured in the same round.
    BM_ModelCopy copies the RankResult (the objects a full decode must
    build, with heap strings shared, not copied), so protobuf parse ÷ it
    bounds the full-decode ratio from above; BM_GatherFloor reads what an
    encoder must read and writes it with no format, bounding the encode
    ratio. A top-10 read at ≥ 1000× must finish in protobuf parse ÷ 1000;
    BM_Open is rankbin's fixed cost before the first item."""
    lines = ["| shape | protobuf parse ÷ model copy (best full decode; goal 20×) | "
             "protobuf serialize ÷ gather floor (best encode; goal 15×) | "
             "top-10 budget at 1000× | rankbin Open | rankbin top-10 |",
             "|---|---:|---:|---:|---:|---:|"]
    for v, label in shapes:
        par, ser = f"BM_Parse/protobuf/{v}", f"BM_Serialize/protobuf/{v}"
        copy = ratios(rounds, par, f"BM_ModelCopy/model/{v}")
        gather = ratios(rounds, ser, f"BM_GatherFloor/model/{v}")
        if not copy and not gather:
            continue
        # Times are in µs: parse ÷ 1000 in ns is the parse's µs figure.
        budget = med(per_item(rounds, par, 1))
        opened = 1000 * med(per_item(rounds, f"BM_Open/rankbin/{v}", 1))
        top = 1000 * med(per_item(rounds, f"BM_Top10/rankbin/{v}", 1))
        lines.append(f"| {label} | {cell(copy, 20)} | {cell(gather, 15)} | {budget:,.0f} ns | "
                     f"{opened:,.0f} ns | {top:,.0f} ns |")
    return lines


def per_item(rounds, name, n):
    return [r[name][0] / n for r in rounds if name in r]


def scaling(rounds, plot):
    ops = [("Encode", "rankbin", "encode"), ("Decode", "rankbin", "full decode"),
           ("Serialize", "protobuf", "protobuf serialize"), ("Parse", "protobuf", "protobuf parse")]
    lines = ["| items | rankbin encode ns/item | full decode ns/item | top-10 ns per item read | "
             "rankbin bytes/item | rankbin-zstd bytes/item | protobuf serialize ns/item | "
             "protobuf parse ns/item |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    series = {}
    for n in SIZES:
        v = f"items_{n}"
        row = {}
        for op, fmt, label in ops:
            row[label] = 1000 * med(per_item(rounds, f"BM_{op}/{fmt}/{v}", n))
        row["top-10 per item read"] = 1000 * med(per_item(rounds, f"BM_Top10/rankbin/{v}", min(n, 10)))
        row["bytes"] = (bytes_of(rounds, f"BM_Encode/rankbin/{v}") or 0) / n
        row["zbytes"] = (bytes_of(rounds, f"BM_Encode/rankbin-zstd/{v}") or 0) / n
        series[n] = row
        lines.append(f"| {n} | {row['encode']:.0f} | {row['full decode']:.0f} | "
                     f"{row['top-10 per item read']:.0f} | {row['bytes']:.0f} | {row['zbytes']:.0f} | "
                     f"{row['protobuf serialize']:.0f} | {row['protobuf parse']:.0f} |")
    checks = []
    # Time: per round, the per-item cost at 5000 over that at 500 (codec_bench
    # runs the sizes of one operation back to back), median [min-max].
    rows = {"encode": ("BM_Encode/rankbin/items_{}", None),
            "full decode": ("BM_Decode/rankbin/items_{}", None),
            "top-10 per item read": ("BM_Top10/rankbin/items_{}", 10)}
    for label, (row, per) in rows.items():
        xs = [(r[row.format(5000)][0] / (per or 5000)) / (r[row.format(500)][0] / (per or 500))
              for r in rounds if row.format(5000) in r and row.format(500) in r]
        ratio = med(xs)
        checks.append(f"{label}: per-item cost at 5000 ÷ at 500 = {ratio:.2f} "
                      f"[{min(xs):.2f}–{max(xs):.2f}] per round "
                      f"({'✓' if ratio <= 1.3 else '**✗**'} target ≤ 1.3)")
    ratio = series[5000]["bytes"] / series[500]["bytes"]
    checks.append(f"bytes: per-item at 5000 ÷ at 500 = {ratio:.2f} "
                  f"({'✓' if ratio <= 1.3 else '**✗**'} target ≤ 1.3)")
    if plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        for label in ("encode", "full decode", "top-10 per item read", "protobuf serialize",
                      "protobuf parse"):
            a.plot(SIZES, [series[n][label] for n in SIZES], marker="o", label=label)
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("items per response")
        a.set_ylabel("ns per item (median of rounds)")
        a.set_title("time per item")
        a.grid(which="both", alpha=0.3)
        a.legend(fontsize=8)
        b.plot(SIZES, [series[n]["bytes"] for n in SIZES], marker="o", label="rankbin")
        b.plot(SIZES, [series[n]["zbytes"] for n in SIZES], marker="o", label="rankbin-zstd")
        b.set_xscale("log")
        b.set_xlabel("items per response")
        b.set_ylabel("bytes per item")
        b.set_ylim(bottom=0)
        b.set_title("bytes per item")
        b.grid(which="both", alpha=0.3)
        b.legend(fontsize=8)
        fig.suptitle("rankbin scaling: mixed shape (39 metrics, ~400 B log), 10…5000 items")
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
    return lines, checks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plot")
    parser.add_argument("--command", default="")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    rounds, _ = load_rounds(args.files)
    print(f"Shape sweep: {len(rounds)} interleaved rounds" +
          (f" (`{args.command}`)" if args.command else "") +
          "; ratios per round against protobuf on the same shape, median [min–max].\n")
    lines, misses = sweep(rounds)
    print("\n".join(lines))
    print("\nMisses: " + ("; ".join(misses) if misses else "none") + "\n")
    lines = floors(rounds)
    if len(lines) > 2:
        print("Floors (" + " ".join(floors.__doc__.split(".")[0].split()) +
              "; median [min–max] of per-round ratios):\n")
        print("\n".join(lines) + "\n")
    lines, _ = sweep(rounds, PROBES)
    if len(lines) > 2:
        print("Probe shapes (`codec_bench --probe`; not the issue's sweep, goals for reference):\n")
        print("\n".join(lines) + "\n")
    if not any("BM_Encode/rankbin/items_500" in r for r in rounds):
        return  # A filtered run without the scaling rows.
    lines, checks = scaling(rounds, args.plot)
    print("Scaling (mixed shape):\n")
    print("\n".join(lines))
    print("\n" + "\n".join(f"- {c}" for c in checks))


if __name__ == "__main__":
    main()
