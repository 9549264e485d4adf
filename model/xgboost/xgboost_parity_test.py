#!/usr/bin/python3
"""rankwire's XGBoost scores against XGBoost's own, on models trained now.

    /usr/bin/python3 model/xgboost/xgboost_parity_test.py --scorer build/model/xgboost/xgboost_score

Trains models with python3-xgboost (Debian's, so /usr/bin/python3) for every
served objective over depths 1..8 and tree counts 1..300, on data with
missing values (some features mostly missing, some integer-valued so that
rows land exactly on split thresholds), saves each as JSON, and scores held
out rows with xgboost_score (TreeEvaluator, and for some models also the
portable kernel and the reference walk) and with Booster.predict. Fails on:

  - a score more than 1e-6 relative from XGBoost's predict (output_margin
    False; some models also with output_margin True);
  - any difference in the ranking of a query's rows (50 rows a query);
  - a contribution (the first --contribs_rows rows of each model, bias
    column included) more than 1e-5 (relative above 1) from XGBoost's:
    TreeShap (xgboost_score --contribs=exact, the AVX-512 kernel where the
    CPU has it; the portable kernel too for every fourth model) against
    pred_contribs=True, ApproxContributions against pred_contribs=True,
    approx_contribs=True in both its layouts (--contribs=approx: the leaves'
    tables; --contribs=approx_walk: the lean walk).

Prints one line per model and a summary; exits non-zero on any failure.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import xgboost as xgb

OBJECTIVES = ["rank:pairwise", "rank:ndcg", "rank:map", "binary:logistic", "reg:squarederror"]
TREE_COUNTS = [1, 5, 20, 60, 150, 300, 40, 100]
N_FEATURES = 14
GROUP = 20
QUERY = 50
SCORE_RTOL = 1e-6
CONTRIB_TOL = 1e-5


def feature_names():
    names = ["f%d" % i for i in range(N_FEATURES - 2)]
    return names + ["user.age", "ctx.hour"]


def make_data(rng, n):
    """Features with 15% missing, two mostly missing, three integer-valued."""
    x = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    x[:, 0:3] = np.round(x[:, 0:3] * 3)
    x[rng.random(x.shape) < 0.15] = np.nan
    x[rng.random(n) < 0.6, 3] = np.nan
    x[rng.random(n) < 0.9, 4] = np.nan
    return x


def make_labels(rng, x, objective):
    """Training labels for rows `x` (tests/interop/xgboost_server_parity_test.py's too)."""
    w = np.linspace(-1, 1, x.shape[1])
    y = np.nan_to_num(x, nan=0.3) @ w + np.sin(np.nan_to_num(x[:, 5])) + rng.normal(size=len(x))
    if objective.startswith("rank:"):
        edges = np.quantile(y, [0.5, 0.75, 0.9, 0.97])
        return np.searchsorted(edges, y).astype(np.float32)
    if objective == "binary:logistic":
        return (y > np.median(y)).astype(np.float32)
    return y.astype(np.float32)


def plant_thresholds(rng, model_path, x):
    """Sets some test values exactly to split thresholds: `<` vs `<=` shows."""
    with open(model_path) as f:
        trees = json.load(f)["learner"]["gradient_booster"]["model"]["trees"]
    splits = [(t["split_indices"][i], t["split_conditions"][i])
              for t in trees for i in range(len(t["left_children"])) if t["left_children"][i] >= 0]
    if not splits:
        return
    for row in range(0, len(x), 3):
        feature, value = splits[rng.integers(len(splits))]
        x[row, feature] = np.float32(value)


def run_scorer(scorer, model_path, rows, workdir, kernel, margin, contribs_rows,
               contribs="exact", shap_kernel="auto"):
    rows_path = os.path.join(workdir, "rows.f32")
    out_path = os.path.join(workdir, "scores.f32")
    contribs_path = os.path.join(workdir, "contribs.f64")
    rows.astype("<f4").tofile(rows_path)
    cmd = [scorer, "--model=" + model_path, "--rows=" + rows_path, "--out=" + out_path,
           "--kernel=" + kernel, "--contribs_rows=%d" % contribs_rows,
           "--contribs_out=" + contribs_path, "--contribs=" + contribs,
           "--shap_kernel=" + shap_kernel]
    if margin:
        cmd.append("--margin")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    scores = np.fromfile(out_path, dtype="<f4")
    contribs = None
    if contribs_rows:
        contribs = np.fromfile(contribs_path, dtype="<f8").reshape(contribs_rows, N_FEATURES + 1)
    return scores, contribs


def ranking_differences(ours, theirs):
    diffs = 0
    for q in range(0, len(ours), QUERY):
        a = np.argsort(-ours[q:q + QUERY], kind="stable")
        b = np.argsort(-theirs[q:q + QUERY], kind="stable")
        diffs += int(np.any(a != b))
    return diffs


def check_contributions(args, booster, model_path, test, index, workdir, totals):
    """Exact and approximate contributions against XGBoost's, bias included."""
    rows = test[:args.contribs_rows]
    dtest = xgb.DMatrix(rows, feature_names=feature_names(), missing=np.nan)
    failures = []
    runs = [("exact", "auto", False), ("approx", "auto", True), ("approx_walk", "auto", True)]
    if index % 4 == 0:
        runs.append(("exact", "portable", False))
    for mode, shap_kernel, approx in runs:
        theirs = booster.predict(dtest, pred_contribs=True, approx_contribs=approx)
        _, ours = run_scorer(args.scorer, model_path, rows, workdir, "auto", False, len(rows),
                             mode, shap_kernel)
        err = np.abs(ours - theirs) / np.maximum(1.0, np.abs(theirs))
        key = mode
        totals[key + "_max"] = max(totals[key + "_max"], float(err.max()))
        totals[key + "_values"] += ours.size
        totals[key + "_identical"] += int(np.sum(ours == theirs))
        if err.max() > CONTRIB_TOL:
            failures.append("%s contributions (%s kernel) differ by %g" %
                            (mode, shap_kernel, err.max()))
    return failures


def check_model(args, rng, index, objective, depth, trees, workdir, totals):
    names = feature_names()
    x = make_data(rng, args.train_rows)
    y = make_labels(rng, x, objective)
    train = xgb.DMatrix(x, label=y, feature_names=names, missing=np.nan)
    if objective.startswith("rank:"):
        train.set_group([GROUP] * (len(x) // GROUP))
    # One thread: on a busy 2-core host OpenMP's second thread makes training
    # 3-5x slower, not faster.
    params = {"objective": objective, "max_depth": depth, "eta": 0.3, "nthread": 1,
              "tree_method": ["hist", "exact", "approx"][index % 3], "seed": index,
              "base_score": [0.5, 0.3, 0.8][index % 3], "min_child_weight": 0.5}
    booster = xgb.train(params, train, trees)
    model_path = os.path.join(workdir, "model_%d.json" % index)
    booster.save_model(model_path)
    test = make_data(rng, args.test_rows)
    plant_thresholds(rng, model_path, test)
    dtest = xgb.DMatrix(test, feature_names=names, missing=np.nan)
    failures = []
    kernels = ["auto"] + (["scalar", "reference"] if index % 4 == 0 else [])
    for kernel in kernels:
        for margin in ([False, True] if kernel == "auto" and index % 2 == 0 else [False]):
            expected = booster.predict(dtest, output_margin=margin)
            ours, _ = run_scorer(args.scorer, model_path, test, workdir, kernel, margin, 0)
            rel = np.abs(ours - expected) / np.maximum(np.abs(expected), np.finfo(np.float32).tiny)
            rel[ours == expected] = 0
            bad = int(np.sum(rel > SCORE_RTOL))
            exact = int(np.sum(ours == expected))
            rank_diffs = ranking_differences(ours, expected)
            totals["rows"] += len(ours)
            totals["exact"] += exact
            totals["max_rel"] = max(totals["max_rel"], float(rel.max()))
            label = "%s%s" % (kernel, " margin" if margin else "")
            if bad or rank_diffs:
                failures.append("%s: %d rows over %g relative (max %g), %d queries ranked "
                                "differently" % (label, bad, SCORE_RTOL, rel.max(), rank_diffs))
    failures += check_contributions(args, booster, model_path, test, index, workdir, totals)
    print("model %2d %-17s depth %d trees %3d: %d rows, %s" %
          (index, objective, depth, trees, len(test), "; ".join(failures) or "ok"), flush=True)
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scorer", required=True)
    parser.add_argument("--train_rows", type=int, default=1000)
    parser.add_argument("--test_rows", type=int, default=1500)
    parser.add_argument("--contribs_rows", type=int, default=40)
    args = parser.parse_args()
    rng = np.random.default_rng(39)
    totals = {"rows": 0, "exact": 0, "max_rel": 0.0}
    for mode in ("exact", "approx", "approx_walk"):
        totals.update({mode + "_max": 0.0, mode + "_values": 0, mode + "_identical": 0})
    failed = 0
    start = time.time()
    with tempfile.TemporaryDirectory() as workdir:
        index = 0
        for objective in OBJECTIVES:
            for depth in range(1, 9):
                for extra in range(2 if depth in (2, 6) else 1):
                    trees = TREE_COUNTS[(index + extra * 3) % len(TREE_COUNTS)]
                    failed += bool(check_model(args, rng, index, objective, depth, trees,
                                               workdir, totals))
                    index += 1
    print("%d models, %d rows scored, %d bit-identical to XGBoost, max relative difference %g; "
          "contributions: exact %d values (%d identical to pred_contribs), max difference %g; "
          "approx %d values (%d identical to approx_contribs), max difference %g; "
          "approx_walk %d values (%d identical), max difference %g; %.1f s" %
          (index, totals["rows"], totals["exact"], totals["max_rel"], totals["exact_values"],
           totals["exact_identical"], totals["exact_max"], totals["approx_values"],
           totals["approx_identical"], totals["approx_max"], totals["approx_walk_values"],
           totals["approx_walk_identical"], totals["approx_walk_max"], time.time() - start))
    print("%d passed, %d failed" % (index - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
