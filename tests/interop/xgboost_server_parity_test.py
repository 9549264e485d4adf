#!/usr/bin/python3
"""XGBoost models served by the real rankwire-server score as XGBoost does.

    RANKWIRE_SERVER_BIN=build/server/rankwire-server PYTHONPATH=python/src:model/xgboost \\
        /usr/bin/python3 tests/interop/xgboost_server_parity_test.py

Trains models with python3-xgboost (Debian's, so /usr/bin/python3) for every
served objective, depths 1..8 and 1..300 trees, and serves each in turn from
one rankwire-server: the models are versions in a directory (--model=DIR
serves the newest), and each new version is swapped in by
ModelService.ReloadModels on the health port (--model_admin_rpc), every
tenth by SIGHUP. Each model then ranks requests of 1 to 1,000 candidates
through Rank (codec protobuf: scores as doubles, metrics as shortest
round-trip text), and every candidate's score is compared with
Booster.predict on the same row.

The rows are what a caller sends, not what the model was trained on:
  - item features in an order of the request's own, and one the model does
    not know (listed in unknown_item_features);
  - one item feature the model splits on that no request carries (always
    missing: each split's default direction);
  - NaN item values (15%, two features mostly missing), integer-valued
    features, and values set exactly on split thresholds;
  - user features ("user.age", "user.spend") and context values
    ("ctx.hour", "ctx.tier": numbers as text), each sometimes absent, and a
    context value that is not a number (missing).

Fails on:
  - a score more than 1e-6 relative from XGBoost's (output_margin False);
  - any request whose order differs from a stable argsort of XGBoost's
    predictions (the server orders by score, ties in request order);
  - an explained item (the first min(top_n, explain_items): the request's
    explain_items, absent in some requests, 0 or another count in others,
    else --explain_items) whose explain.<k>.feature / .contribution are
    not the top-k of pred_contribs by magnitude (zeros left out, ties in
    model order), within 1e-5; an item past them that is explained;
  - a request asking for more than --max_explain_items explained items
    that is not refused with INVALID_ARGUMENT;
  - a response from another model than the one just loaded.

Also decodes one rankbin response per model with the rankwire package and
requires the same scores and explanations. Prints one line per model and a
summary; exits non-zero on any failure (ctest xgboost.server_parity).
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import grpc
import numpy as np
import xgboost as xgb

import rankwire
from rankwire import rank_pb2
# The labels the evaluator's own parity test trains on (model/xgboost/).
from xgboost_parity_test import make_labels

OBJECTIVES = ["rank:pairwise", "rank:ndcg", "rank:map", "binary:logistic", "reg:squarederror"]
TREE_COUNTS = [1, 5, 20, 60, 150, 300, 40, 100]
ITEM = ["i%d" % i for i in range(10)]
ABSENT = "absent"         # the model splits on it; no request carries it
EXTRA = "extra"           # requests carry it; no model knows it
USER = ["user.age", "user.spend"]
CTX = ["ctx.hour", "ctx.tier"]
GROUP = 20
SCORE_RTOL = 1e-6
CONTRIB_TOL = 1e-5
EXPLAIN_TOP_K = 4
EXPLAIN_ITEMS = 6
MAX_EXPLAIN_ITEMS = 20
# Per request, in turn: explain_items absent (the server's 6), 0, 2, 15.
EXPLAIN_ASKS = [None, 0, 2, 15]
# Candidates per request: one request of each size per model (2,000 rows).
REQUEST_SIZES = [1, 3, 40, 1000, 456, 500]
F32_TINY = np.finfo(np.float32).tiny


def model_features(rng):
    """The model's feature names, in an order of its own."""
    names = ITEM + [ABSENT] + USER + CTX
    return [names[i] for i in rng.permutation(len(names))]


def make_rows(rng, n, names, groups):
    """n rows in `names` order: 15% missing, i3/i4 mostly missing, i0..i2
    integers; user and context features constant within each group of
    `groups` rows (one query: one user, one context)."""
    x = rng.normal(size=(n, len(names))).astype(np.float32)
    col = {name: i for i, name in enumerate(names)}
    for name in ("i0", "i1", "i2"):
        x[:, col[name]] = np.round(x[:, col[name]] * 3)
    x[rng.random(x.shape) < 0.15] = np.nan
    x[rng.random(n) < 0.6, col["i3"]] = np.nan
    x[rng.random(n) < 0.9, col["i4"]] = np.nan
    for name in USER + CTX:
        for start in range(0, n, groups):
            value = np.float32(rng.normal() * 10 if rng.random() > 0.15 else np.nan)
            if name == "ctx.hour" and not np.isnan(value):
                value = np.float32(rng.integers(24))
            x[start:start + groups, col[name]] = value
    return x


def train(rng, index, objective, depth, trees, names):
    x = make_rows(rng, 1000, names, GROUP)
    dtrain = xgb.DMatrix(x, label=make_labels(rng, x, objective), feature_names=names,
                         missing=np.nan, nthread=1)
    if objective.startswith("rank:"):
        dtrain.set_group([GROUP] * (len(x) // GROUP))
    # One thread: on a busy 2-core host OpenMP's second thread makes training
    # 3-5x slower, not faster.
    params = {"objective": objective, "max_depth": depth, "eta": 0.3, "nthread": 1,
              "tree_method": ["hist", "exact", "approx"][index % 3], "seed": index,
              "base_score": [0.5, 0.3, 0.8][index % 3], "min_child_weight": 0.5}
    return xgb.train(params, dtrain, trees)


def split_points(booster, names):
    """(feature name, threshold) of every split."""
    trees = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    return [(names[t["split_indices"][i]], t["split_conditions"][i])
            for t in trees for i in range(len(t["left_children"])) if t["left_children"][i] >= 0]


class Request:
    """One Rank request and the same rows as XGBoost sees them."""

    def __init__(self, rng, index, n, names, splits):
        self.rows = make_rows(rng, n, names, n)   # model order; one user, one context
        col = {name: i for i, name in enumerate(names)}
        self.rows[:, col[ABSENT]] = np.nan          # no request carries it
        for r in range(0, n, 3):                     # exactly on a split threshold
            if splits:
                name, value = splits[rng.integers(len(splits))]
                if name in ITEM:
                    self.rows[r, col[name]] = np.float32(value)
        self.msg = rank_pb2.RankRequest(
            request_id="parity-%d-%d" % (index, n), scene=rank_pb2.SCENE_SEARCH,
            user_id="u%d" % rng.integers(1 << 30), request_time_ms=1795000000000,
            top_n=int(min(n, rng.integers(1, 20))), accept_codecs=["protobuf"],
            log_mode=rank_pb2.LOG_MODE_NONE)
        for name in USER:
            value = self.rows[0, col[name]]
            if not np.isnan(value):
                self.msg.user_features[name[len("user."):]] = float(value)
        for name in CTX:
            value = self.rows[0, col[name]]
            key = name[len("ctx."):]
            if not np.isnan(value):
                self.msg.context[key] = "%.9g" % value
            elif rng.random() < 0.5:
                self.msg.context[key] = "n/a"   # not a number: missing
        # The request's own column order, and a column no model knows.
        carried = [ITEM[i] for i in rng.permutation(len(ITEM))]
        carried.insert(int(rng.integers(len(carried) + 1)), EXTRA)
        self.msg.item_feature_names.extend(carried)
        columns = np.stack([self.rows[:, col[c]] if c != EXTRA else rng.normal(size=n)
                            for c in carried], axis=1).astype(np.float32)
        for c in range(n):
            self.msg.candidates.add(item_id="it-%d" % c, recall_source="s%d" % (c % 3),
                                    recall_rank=c + 1).features.extend(columns[c].tolist())


def check_explanations(names, items, contribs):
    """The explained items' metrics against pred_contribs (zeros left out,
    largest magnitude first, ties in model order). Returns failures."""
    failures = []
    for item, theirs in zip(items, contribs):
        want = [f for f in range(len(names)) if theirs[f] != 0]
        want.sort(key=lambda f: (-abs(theirs[f]), f))
        want = want[:EXPLAIN_TOP_K]
        got = []
        for k in range(1, EXPLAIN_TOP_K + 1):
            feature = item.metrics.get("explain.%d.feature" % k)
            if feature is None:
                break
            got.append((feature, float(item.metrics["explain.%d.contribution" % k])))
        if len(got) != len(want):
            failures.append("%s: %d contributions, XGBoost has %d" %
                            (item.item_id, len(got), len(want)))
            continue
        for k, ((feature, value), f) in enumerate(zip(got, want)):
            if feature not in names:
                failures.append("%s: explain.%d.feature %r is no model feature" %
                                (item.item_id, k + 1, feature))
                continue
            g = names.index(feature)
            # The k-th largest by magnitude, up to float rounding between
            # near-equal contributions; its value XGBoost's.
            tol = CONTRIB_TOL * max(1.0, abs(theirs[f]))
            if abs(abs(theirs[g]) - abs(theirs[f])) > tol or abs(value - theirs[g]) > tol:
                failures.append("%s: explain.%d is %s:%g; XGBoost's is %s:%g (%s: %g)" %
                                (item.item_id, k + 1, feature, value, names[f], theirs[f],
                                 feature, theirs[g]))
    return failures


class Server:
    """rankwire-server serving the newest version in `model_dir`."""

    def __init__(self, model_dir, workdir):
        self.log_path = os.path.join(workdir, "server.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [os.environ["RANKWIRE_SERVER_BIN"], "--port=0", "--health_port=0",
             "--metrics_port=-1", "--address=127.0.0.1", "--model=" + model_dir,
             "--model_poll_interval=0", "--model_admin_rpc",
             "--explain=exact", "--explain_top_k=%d" % EXPLAIN_TOP_K,
             "--explain_items=%d" % EXPLAIN_ITEMS,
             "--max_explain_items=%d" % MAX_EXPLAIN_ITEMS],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        match = None
        while match is None and time.time() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
            with open(self.log_path) as f:
                match = re.search(r"listening port=(\d+).* health_port=(\d+)", f.read())
        if match is None:
            self.close()
            raise RuntimeError("rankwire-server did not start:\n" + open(self.log_path).read())
        options = [("grpc.max_receive_message_length", 64 << 20)]
        self.channel = grpc.insecure_channel("127.0.0.1:" + match.group(1), options=options)
        self.health = grpc.insecure_channel("127.0.0.1:" + match.group(2))
        self.rank = self.channel.unary_unary(
            "/rank.v1.RankService/Rank",
            request_serializer=rank_pb2.RankRequest.SerializeToString,
            response_deserializer=rank_pb2.RankResponse.FromString)
        self.reload_rpc = self.health.unary_unary(
            "/rank.v1.ModelService/ReloadModels",
            request_serializer=rank_pb2.ReloadModelsRequest.SerializeToString,
            response_deserializer=rank_pb2.GetModelsResponse.FromString)
        self.client = rankwire.Client("127.0.0.1:" + match.group(1))
        self.get_models = self.channel.unary_unary(
            "/rank.v1.ModelService/GetModels",
            request_serializer=rank_pb2.GetModelsRequest.SerializeToString,
            response_deserializer=rank_pb2.GetModelsResponse.FromString)

    def reload(self, version, by_signal):
        """Swaps in the newest version; returns what GetModels says serves."""
        if not by_signal:
            return self.reload_rpc(rank_pb2.ReloadModelsRequest(), timeout=60).models[0]
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 60
        while time.time() < deadline:
            models = self.get_models(rank_pb2.GetModelsRequest(), timeout=10).models
            if models and models[0].version == version:
                return models[0]
            time.sleep(0.02)
        raise RuntimeError("SIGHUP did not load version " + version)

    def close(self):
        if hasattr(self, "channel"):
            self.client.close()
            self.channel.close()
            self.health.close()
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def publish(booster, model_dir, index):
    """Writes version `index` (atomically: a rename) and removes the last."""
    path = os.path.join(model_dir, "%d.json" % index)
    booster.save_model(os.path.join(model_dir, ".tmp.json"))
    os.rename(os.path.join(model_dir, ".tmp.json"), path)
    old = os.path.join(model_dir, "%d.json" % (index - 1))
    if os.path.exists(old):
        os.unlink(old)


def expected_version(booster, index):
    attrs = booster.attributes()
    return (attrs.get("rankwire_name", "parity"), attrs.get("rankwire_version", str(index)))


def check_request(server, booster, names, req, version, totals):
    """Ranks req through the server; returns failures."""
    response = server.rank(req.msg, timeout=30)
    failures = []
    if response.header.model_version != "%s@%s" % version:
        failures.append("%s ranked by %s" % (req.msg.request_id, response.header.model_version))
    if list(response.header.unknown_item_features) != [EXTRA]:
        failures.append("unknown_item_features %s" % list(response.header.unknown_item_features))
    items = response.result.items
    dtest = xgb.DMatrix(req.rows, feature_names=names, missing=np.nan, nthread=1)
    expected = booster.predict(dtest)
    ids = [int(item.item_id[3:]) for item in items]
    ours = np.empty(len(expected))
    ours[ids] = [item.score for item in items]
    rel = np.abs(ours - expected) / np.maximum(np.abs(expected), F32_TINY)
    rel[ours == expected] = 0
    totals["rows"] += len(expected)
    totals["exact"] += int(np.sum(ours == expected))
    totals["max_rel"] = max(totals["max_rel"], float(rel.max()))
    if np.any(rel > SCORE_RTOL):
        failures.append("%s: %d scores over %g relative (max %g)" %
                        (req.msg.request_id, int(np.sum(rel > SCORE_RTOL)), SCORE_RTOL, rel.max()))
    totals["requests"] += 1
    totals["ties"] += len(expected) - len(np.unique(expected))
    if ids != list(np.argsort(-expected, kind="stable")):
        totals["rank_diffs"] += 1
        failures.append("%s ranked differently" % req.msg.request_id)
    asked = req.msg.explain_items if req.msg.HasField("explain_items") else EXPLAIN_ITEMS
    shown = items[:min(req.msg.top_n, asked)]
    if shown:
        rows = req.rows[[int(item.item_id[3:]) for item in shown]]
        contribs = booster.predict(xgb.DMatrix(rows, feature_names=names, missing=np.nan,
                                               nthread=1), pred_contribs=True)
        failures += check_explanations(names, shown, contribs)
        totals["explained"] += len(shown)
    unexplained = [i for i in items[len(shown):] if "explain.1.feature" in i.metrics]
    if unexplained:
        failures.append("%s: %s explained past the first %d" %
                        (req.msg.request_id, unexplained[0].item_id, len(shown)))
    return failures, response


def check_rankbin(server, req, response):
    """The same request as rankbin with logs inline, through rankwire.Client:
    the same scores, order and explanations as the protobuf response, and
    each item's log line holds its explanation (" | explain=name:value ...
    final=", numbers as %g; empty for items not explained)."""
    msg = rank_pb2.RankRequest()
    msg.CopyFrom(req.msg)
    msg.log_mode = rank_pb2.LOG_MODE_INLINE
    result = server.client.rank(msg, timeout=30, accept_codecs=["rankbin"]).materialize()
    want = response.result.items
    if [i.id for i in result.items] != [i.item_id for i in want]:
        return ["rankbin: another order"]
    for got, item in zip(result.items, want):
        if got.score != item.score:
            return ["rankbin: %s scored %r, protobuf %r" % (got.id, got.score, item.score)]
        for key, text in item.metrics.items():
            if not key.startswith("explain."):
                continue
            value = got.metrics.get(key)
            same = value == text if key.endswith(".feature") else \
                value is not None and np.float32(value) == np.float32(text)
            if not same:
                return ["rankbin: %s %s is %r, protobuf %r" % (got.id, key, value, text)]
        if sorted(k for k in got.metrics if k.startswith("explain.")) != \
                sorted(k for k in item.metrics if k.startswith("explain.")):
            return ["rankbin: %s explained otherwise" % got.id]
        text = " ".join("%s:%g" % (got.metrics["explain.%d.feature" % k],
                                   got.metrics["explain.%d.contribution" % k])
                        for k in range(1, EXPLAIN_TOP_K + 1)
                        if "explain.%d.feature" % k in got.metrics)
        if " | explain=%s final=" % text not in got.log:
            return ["%s's log line %r lacks explain=%s" % (got.id, got.log, text)]
    return []


def check_explain_limit(server, req):
    """A request asking for more explained items than --max_explain_items is
    refused, naming the field."""
    msg = rank_pb2.RankRequest()
    msg.CopyFrom(req.msg)
    msg.explain_items = MAX_EXPLAIN_ITEMS + 1
    try:
        server.rank(msg, timeout=30)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.INVALID_ARGUMENT and "explain_items" in e.details():
            return []
        return ["explain_items over the limit: %s %s" % (e.code(), e.details())]
    return ["explain_items over the limit was served"]


def check_model(server, model_dir, rng, index, objective, depth, trees, totals):
    names = model_features(rng)
    booster = train(rng, index, objective, depth, trees, names)
    if index % 5 == 4:
        booster.set_attr(rankwire_name="parity-named", rankwire_version="v%d.%d" % (index, depth))
    publish(booster, model_dir, index)
    version = expected_version(booster, index)
    served = server.reload(version[1], by_signal=index % 10 == 9)
    failures = []
    if (served.name, served.version, served.kind) != (version[0], version[1], "xgboost"):
        failures.append("serving %s@%s (%s)" % (served.name, served.version, served.kind))
    if ABSENT not in served.item_features or sorted(served.user_features) != ["age", "spend"]:
        failures.append("reads %s" % served)
    splits = split_points(booster, names)
    for source in (ABSENT, "user.", "ctx."):
        totals["split_on"][source] += any(name.startswith(source) for name, _ in splits)
    for r, n in enumerate(REQUEST_SIZES):
        req = Request(rng, index, n, names, splits)
        ask = EXPLAIN_ASKS[(index + r) % len(EXPLAIN_ASKS)]
        if ask is not None:
            req.msg.explain_items = ask
        got, response = check_request(server, booster, names, req, version, totals)
        failures += got
        if n == 40:
            failures += check_rankbin(server, req, response)
    if index % 10 == 1:
        failures += check_explain_limit(server, req)
    print("model %2d %-17s depth %d trees %3d load %3d ms: %s" %
          (index, objective, depth, trees, served.load_ms, "; ".join(failures[:3]) or "ok"),
          flush=True)
    return failures


def main():
    rng = np.random.default_rng(3939)
    totals = {"rows": 0, "exact": 0, "max_rel": 0.0, "requests": 0, "rank_diffs": 0,
              "explained": 0, "ties": 0, "split_on": {ABSENT: 0, "user.": 0, "ctx.": 0}}
    failed = 0
    start = time.time()
    with tempfile.TemporaryDirectory() as workdir:
        model_dir = os.path.join(workdir, "parity")
        os.mkdir(model_dir)
        index = 0
        first = train(rng, 0, "reg:squarederror", 2, 3, model_features(rng))
        publish(first, model_dir, index)
        server = Server(model_dir, workdir)
        try:
            for o, objective in enumerate(OBJECTIVES):
                for depth in range(1, 9):
                    for extra in range(3 if depth in (2, 6) else 1):
                        index += 1
                        # Every depth from 5 on sees 1 and 300 trees.
                        trees = TREE_COUNTS[(depth + 3 * o + 4 * extra + 5) % len(TREE_COUNTS)]
                        failed += bool(check_model(server, model_dir, rng, index, objective,
                                                   depth, trees, totals))
        finally:
            server.close()
            if failed:
                print("server log:\n" + open(server.log_path).read()[-4000:])
    print("%d models served by one rankwire-server (%d split on the feature no request "
          "carries, %d on user., %d on ctx. features), %d rows ranked in %d requests (%d tied "
          "scores): %d bit-identical to XGBoost, max relative difference %g, %d requests ranked "
          "differently; %d items' explanations checked; %.1f s" %
          (index, totals["split_on"][ABSENT], totals["split_on"]["user."],
           totals["split_on"]["ctx."], totals["rows"], totals["requests"], totals["ties"],
           totals["exact"], totals["max_rel"], totals["rank_diffs"], totals["explained"],
           time.time() - start))
    print("%d passed, %d failed" % (index - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
