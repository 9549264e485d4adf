#!/usr/bin/python3
"""Trains a ranking model for rankwire and saves it as XGBoost JSON.

    /usr/bin/python3 examples/xgboost/train.py ranker.json

A training job's own data would come from logs; here it is made up, with
the feature names callers send rankwire (rankwire-cli's generated requests
carry these): item features by their own names, user features as
"user.<name>", context values as "ctx.<name>".
"""
import sys

import numpy as np
import xgboost as xgb

ITEM = ["price", "discount_rate", "sales_30d", "rating", "ctr_7d", "text_match",
        "semantic_sim", "delivery_days"]
USER = ["user.user_price_pref", "user.user_purchase_power"]
CONTEXT = ["ctx.hour_of_day", "ctx.city_tier"]
NAMES = ITEM + USER + CONTEXT
QUERIES, ITEMS_PER_QUERY = 400, 50

rng = np.random.default_rng(7)
n = QUERIES * ITEMS_PER_QUERY
x = np.column_stack([
    rng.lognormal(4.7, 0.7, n),                  # price
    rng.uniform(0, 0.6, n),                      # discount_rate
    np.floor(rng.lognormal(3, 1.5, n)),          # sales_30d
    np.clip(rng.normal(4.3, 0.4, n), 1, 5),      # rating
    rng.beta(2, 40, n),                          # ctr_7d
    rng.uniform(0, 1, n),                        # text_match
    rng.uniform(-0.2, 1, n),                     # semantic_sim
    rng.integers(1, 10, n),                      # delivery_days
    np.repeat(rng.normal(4.8, 0.6, QUERIES), ITEMS_PER_QUERY),   # user.user_price_pref
    np.repeat(rng.uniform(0, 1, QUERIES), ITEMS_PER_QUERY),      # user.user_purchase_power
    np.repeat(rng.integers(0, 24, QUERIES), ITEMS_PER_QUERY),    # ctx.hour_of_day
    np.repeat(rng.integers(1, 6, QUERIES), ITEMS_PER_QUERY),     # ctx.city_tier
]).astype(np.float32)
x[rng.random(x.shape) < 0.05] = np.nan           # missing values are fine: NaN

# Graded relevance 0..4 from a made-up utility.
fit = -np.abs(np.log(np.nan_to_num(x[:, 0], nan=100)) - np.nan_to_num(x[:, 8], nan=4.8))
utility = (2 * np.nan_to_num(x[:, 5]) + 20 * np.nan_to_num(x[:, 4]) + fit
           + 0.3 * np.log1p(np.nan_to_num(x[:, 2])) + rng.normal(0, 0.5, n))
labels = np.digitize(utility, np.quantile(utility, [0.5, 0.75, 0.9, 0.97]))

train = xgb.DMatrix(x, label=labels, feature_names=NAMES)   # names: rankwire binds by them
train.set_group([ITEMS_PER_QUERY] * QUERIES)
booster = xgb.train({"objective": "rank:ndcg", "max_depth": 6, "eta": 0.1, "nthread": 1},
                    train, num_boost_round=300)
booster.set_attr(rankwire_name="search_ranker", rankwire_version="2026.12.06")
booster.save_model(sys.argv[1])                  # .json: the format rankwire reads
print("saved %s: %d trees over %s" % (sys.argv[1], booster.num_boosted_rounds(),
                                      ", ".join(NAMES)))
