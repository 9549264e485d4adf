#!/usr/bin/python3
"""Plots bench/xgboost_bench's sweep: XGBoost's time over rankwire's per cell.

    taskset -c 1 build/bench/xgboost_bench --ratio_csv=sweep.csv > sweep.txt
    /usr/bin/python3 bench/xgboost_plot.py sweep.csv docs/bench-notes/xgboost_sweep.png

One heatmap per item count (columns) and kernel (rows: the CPU's best
kernel, the portable one): trees down, depth across, each cell the median
ratio over paired repetitions with the lowest repetition's below it. Cells
below 1x (rankwire slower) would be red.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors as colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rows = [r for r in csv.DictReader(f) if r["trees"] != "workload"]
    trees = sorted({int(r["trees"]) for r in rows})
    depths = sorted({int(r["depth"]) for r in rows})
    items = sorted({int(r["items"]) for r in rows})
    kernels = [("ratio", "ratio_min", "rankwire (AVX-512 here)"),
               ("scalar_ratio", "scalar_min", "rankwire (portable kernel)")]
    fig, axes = plt.subplots(len(kernels), len(items), figsize=(3.2 * len(items), 6.4),
                             squeeze=False)
    norm = colors.TwoSlopeNorm(vmin=0.5, vcenter=1.0, vmax=16)
    for k, (median_key, min_key, title) in enumerate(kernels):
        for i, n in enumerate(items):
            grid = np.full((len(trees), len(depths)), np.nan)
            low = np.full_like(grid, np.nan)
            for r in rows:
                if int(r["items"]) == n:
                    t, d = trees.index(int(r["trees"])), depths.index(int(r["depth"]))
                    grid[t, d], low[t, d] = float(r[median_key]), float(r[min_key])
            ax = axes[k][i]
            ax.imshow(grid, cmap="RdYlGn", norm=norm, aspect="auto")
            for t in range(len(trees)):
                for d in range(len(depths)):
                    ax.text(d, t, "%.1fx\n(%.1f)" % (grid[t, d], low[t, d]), ha="center",
                            va="center", fontsize=7)
            ax.set_xticks(range(len(depths)), [str(d) for d in depths])
            ax.set_yticks(range(len(trees)), [str(t) for t in trees])
            ax.set_xlabel("depth")
            if i == 0:
                ax.set_ylabel("%s\ntrees" % title)
            ax.set_title("%d items" % n)
    fig.suptitle("XGBoost C API time / rankwire time, one thread (median of paired "
                 "repetitions; lowest in brackets)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
