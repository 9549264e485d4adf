#!/usr/bin/python3
"""Ranks one made-up search request with a rankwire-server serving train.py's model.

    /usr/bin/python3 examples/xgboost/query.py --target=127.0.0.1:50051
    /usr/bin/python3 examples/xgboost/query.py --target=127.0.0.1:50051 --check=ranker.json

Needs the rankwire Python package (PYTHONPATH=python/src, or pip install ./python).
Prints the top 10 with the explanations the server attaches (TreeSHAP:
explain.<k>.feature / explain.<k>.contribution). With --check=MODEL it also
scores the same rows with XGBoost's Booster.predict and exits non-zero unless
every score is within 1e-6 relative and the order is the same.
"""
import argparse
import sys

import numpy as np

import rankwire
from rankwire import rank_pb2

# As train.py names them: item features by name, user. and ctx. prefixed.
ITEM = ["price", "discount_rate", "sales_30d", "rating", "ctr_7d", "text_match",
        "semantic_sim", "delivery_days"]
USER = {"user_price_pref": 5.1, "user_purchase_power": 0.7}   # request.user_features
CONTEXT = {"hour_of_day": "21", "city_tier": "2"}              # request.context (text)
CANDIDATES = 50


def make_request(rng):
    rows = np.column_stack([
        rng.lognormal(4.7, 0.7, CANDIDATES), rng.uniform(0, 0.6, CANDIDATES),
        np.floor(rng.lognormal(3, 1.5, CANDIDATES)), np.clip(rng.normal(4.3, 0.4, CANDIDATES), 1, 5),
        rng.beta(2, 40, CANDIDATES), rng.uniform(0, 1, CANDIDATES),
        rng.uniform(-0.2, 1, CANDIDATES), rng.integers(1, 10, CANDIDATES)]).astype(np.float32)
    rows[rng.random(rows.shape) < 0.05] = np.nan     # a missing value: NaN (or leave it out)
    request = rank_pb2.RankRequest(
        request_id="xgboost-example-1", scene=rank_pb2.SCENE_SEARCH, user_id="u42",
        request_time_ms=1796000000000, top_n=10, log_mode=rank_pb2.LOG_MODE_NONE,
        item_feature_names=ITEM, user_features=USER, context=CONTEXT)
    for c in range(CANDIDATES):
        request.candidates.add(item_id="sku-%03d" % c, recall_source="bm25",
                               recall_rank=c + 1).features.extend(rows[c].tolist())
    return request, rows


def xgboost_scores(model_path, rows):
    """Booster.predict on the same rows, in the model's feature order."""
    import xgboost as xgb
    booster = xgb.Booster(model_file=model_path)
    names = booster.feature_names
    constant = {"user." + k: v for k, v in USER.items()}
    constant.update({"ctx." + k: float(v) for k, v in CONTEXT.items()})
    x = np.column_stack([rows[:, ITEM.index(n)] if n in ITEM
                         else np.full(len(rows), constant[n], np.float32) for n in names])
    return booster.predict(xgb.DMatrix(x.astype(np.float32), feature_names=names,
                                       missing=np.nan, nthread=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", required=True, help="host:port of rankwire-server")
    parser.add_argument("--check", metavar="MODEL", help="compare with XGBoost on MODEL")
    args = parser.parse_args()
    request, rows = make_request(np.random.default_rng(2026))
    client = rankwire.Client(args.target)
    try:
        result = client.rank(request, timeout=10)
    finally:
        client.close()
    print("model %s, %d items" % (result.header.model_version, len(result)))
    for item in result[:10]:
        reasons = []
        for k in range(1, 4):
            feature = item.metric("explain.%d.feature" % k)
            if feature is None:
                break
            reasons.append("%s %+.3f" % (feature, float(item.metric("explain.%d.contribution" % k))))
        print("%2d %s %9.5f  %s" % (item.position, item.id, item.score, ", ".join(reasons)))
    if not args.check:
        return 0
    expected = xgboost_scores(args.check, rows)
    ours = np.empty(len(expected))
    order = [int(item.id[4:]) for item in result]
    ours[order] = [item.score for item in result]
    rel = np.abs(ours - expected) / np.maximum(np.abs(expected), np.finfo(np.float32).tiny)
    rel[ours == expected] = 0
    same_order = order == list(np.argsort(-expected, kind="stable"))
    print("against XGBoost %s: %d of %d scores identical, max relative difference %g, "
          "order %s" % (__import__("xgboost").__version__, int(np.sum(ours == expected)),
                        len(expected), rel.max(), "the same" if same_order else "DIFFERENT"))
    return 0 if same_order and rel.max() <= 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
