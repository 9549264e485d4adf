"""Interop tests: the real rankwire-server called from Python grpcio.

The calls are made with plain grpcio stubs, as any Python caller could;
the rankbin payloads are decoded by the rankwire package (python/), whose
own client is tested in test_python_client.py. Run by ctest with Debian's
/usr/bin/python3 (python3-grpcio, python3-protobuf, python3-zstandard).
Environment:
  RANKWIRE_SERVER_BIN   the rankwire-server binary
  RANKWIRE_MODEL_PATH   the model file
  PYTHONPATH            must include python/src (the rankwire package) and
                        the build's python/ folder (the health/reflection
                        messages, made by protoc)
"""

import math
import os
import random
import re
import struct
import subprocess
import sys
import time
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rankwire  # noqa: E402
from interop_protos import health_pb2  # noqa: E402
from interop_protos import reflection_pb2  # noqa: E402
from rankwire import rank_pb2  # noqa: E402

FEATURES = ["price", "discount_rate", "sales_30d", "review_count", "rating", "ctr_7d",
            "cvr_7d", "add_cart_rate_7d", "text_match", "semantic_sim", "brand_affinity",
            "category_match", "shop_score", "freshness_days", "stock", "delivery_days",
            "image_quality", "return_rate"]
SOURCES = ["text_bm25", "vector_ann", "i2i_cf", "hot_sale", "personalized"]


def make_request(seed=7, candidates=500, accept=(), log_mode=rank_pb2.LOG_MODE_INLINE):
    """A plausible request built here, independently of the C++ generator."""
    rng = random.Random(seed)
    req = rank_pb2.RankRequest(request_id=f"py-{seed}", scene=rank_pb2.SCENE_SEARCH,
                               user_id=f"u{rng.randrange(10**6)}",
                               request_time_ms=1795000000000, top_n=min(10, candidates),
                               log_mode=log_mode)
    req.accept_codecs.extend(accept)
    req.user_features.update({"user_price_pref": 4.7, "user_activity": 0.4,
                              "user_purchase_power": 0.6})
    req.context.update({"query": "trail running shoes", "device": "android", "is_mobile": "1"})
    req.item_feature_names.extend(FEATURES)
    for i in range(candidates):
        c = req.candidates.add(item_id=f"py-sku-{i}", recall_source=rng.choice(SOURCES),
                               recall_rank=i + 1)
        c.features.extend([
            round(rng.lognormvariate(4.7, 0.7), 2), round(rng.uniform(0, 0.5), 2),
            float(rng.randrange(5000)), float(rng.randrange(20000)), round(rng.uniform(3, 5), 1),
            rng.uniform(0.005, 0.12), rng.uniform(0.001, 0.06), rng.uniform(0.01, 0.3),
            rng.random(), rng.uniform(-0.2, 1), rng.random() ** 3, float(rng.random() < 0.8),
            round(rng.uniform(3, 5), 2), float(rng.randrange(720)), float(rng.randrange(3000)),
            float(rng.randrange(1, 10)), rng.uniform(0.3, 1), rng.uniform(0, 0.3)])
    return req


def as_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def typed_protobuf_metrics(result):
    """The baseline's string metrics turned back into typed values."""
    types = {name: rank_pb2.MetricType.Name(t) for name, t in result.metric_types.items()}
    items = []
    for item in result.items:
        metrics = {}
        for name, text in item.metrics.items():
            t = types[name]
            if t == "METRIC_TYPE_INT":
                metrics[name] = int(text)
            elif t == "METRIC_TYPE_FLOAT":
                metrics[name] = as_float32(float(text))
            elif t == "METRIC_TYPE_DOUBLE":
                metrics[name] = float(text)
            else:
                metrics[name] = text
        items.append({"id": item.item_id, "score": item.score, "position": item.position,
                      "metrics": metrics, "log": item.log})
    return types, items


def same_value(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) == type(b) and a == b


class ServerFixture:
    def __init__(self, *flags):
        self.proc = subprocess.Popen(
            [os.environ["RANKWIRE_SERVER_BIN"], "--port=0", "--metrics_port=-1",
             "--address=127.0.0.1", "--model=" + os.environ["RANKWIRE_MODEL_PATH"], *flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 15
        self.port = None
        self.health_port = -1
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"listening port=(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.health_port = int(re.search(r"health_port=(-?\d+)", line).group(1))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("rankwire-server did not start")
        self.channel = grpc.insecure_channel(
            f"127.0.0.1:{self.port}",
            options=[("grpc.max_receive_message_length", 64 << 20)])
        self.rank = self.channel.unary_unary(
            "/rank.v1.RankService/Rank",
            request_serializer=rank_pb2.RankRequest.SerializeToString,
            response_deserializer=rank_pb2.RankResponse.FromString)

    def close(self):
        self.channel.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.proc.stdout.close()


class InteropTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerFixture("--health_port=0")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_protobuf_envelope(self):
        response = self.server.rank(make_request(accept=["protobuf"]), timeout=10)
        self.assertEqual(response.header.codec, "protobuf")
        self.assertEqual(response.header.request_id, "py-7")
        self.assertEqual(response.header.item_count, 500)
        self.assertEqual(response.WhichOneof("body"), "result")
        items = response.result.items
        self.assertEqual(len(items), 500)
        self.assertEqual([i.position for i in items], list(range(1, 501)))
        scores = [i.score for i in items]
        self.assertTrue(all(a >= b for a, b in zip(scores, scores[1:])),
                        "scores must not increase with position")
        self.assertIn("score.ctr", items[0].metrics)
        self.assertGreater(response.header.timings.rank_us, 0)

    def test_custom_codecs_decode_to_the_protobuf_result(self):
        baseline = self.server.rank(make_request(accept=["protobuf"]), timeout=10)
        types, expected = typed_protobuf_metrics(baseline.result)
        for codec in ("rankbin", "rankbin-zstd"):
            with self.subTest(codec=codec):
                response = self.server.rank(make_request(accept=[codec]), timeout=10)
                # Any gRPC client parses the envelope; the body is opaque bytes.
                self.assertEqual(response.header.codec, codec)
                self.assertEqual(response.header.format_version, 1)
                self.assertEqual(response.WhichOneof("body"), "payload")
                self.assertLess(len(response.payload), baseline.result.ByteSize())
                decoded = rankwire.open_payload(codec, response.payload).materialize()
                self.assertEqual({n: "METRIC_TYPE_" + t.name for n, t in decoded.keys.items()},
                                 types)
                self.assertEqual(len(decoded.items), len(expected))
                for got, want in zip(decoded.items, expected):
                    self.assertEqual(got.id, want["id"])
                    self.assertTrue(same_value(got.score, want["score"]))
                    self.assertEqual(got.position, want["position"])
                    self.assertEqual(got.log, want["log"])
                    self.assertEqual(set(got.metrics), set(want["metrics"]))
                    for name, value in want["metrics"].items():
                        self.assertTrue(same_value(got.metrics[name], value),
                                        f"{got.id} {name}: {got.metrics[name]!r} vs {value!r}")

    def test_logs_in_store_leave_the_response(self):
        response = self.server.rank(
            make_request(accept=["rankbin"], log_mode=rank_pb2.LOG_MODE_STORE), timeout=10)
        self.assertEqual(response.header.log_mode, rank_pb2.LOG_MODE_STORE)
        self.assertEqual(response.header.log_key, "rank:log:py-7")
        decoded = rankwire.open_payload("rankbin", response.payload).materialize()
        self.assertTrue(all(item.log == "" for item in decoded.items))
        fetch = self.server.channel.unary_unary(
            "/rank.v1.LogService/FetchLogs",
            request_serializer=rank_pb2.FetchLogsRequest.SerializeToString,
            response_deserializer=rank_pb2.FetchLogsResponse.FromString)
        ids = [item.id for item in decoded.items[:10]]
        # Stored after the response is sent (the server's log writer formats
        # them): poll briefly, well inside the 1 s TTL.
        for _ in range(100):
            logs = fetch(rank_pb2.FetchLogsRequest(request_id="py-7", item_ids=ids), timeout=10)
            if all(e.found for e in logs.logs):
                break
            time.sleep(0.005)
        self.assertEqual([e.item_id for e in logs.logs], ids)
        for entry in logs.logs:
            self.assertTrue(entry.found)
            self.assertIn(f"item={entry.item_id} ", entry.log)

    def test_bad_request_is_invalid_argument(self):
        request = make_request(candidates=3)
        request.top_n = 0
        with self.assertRaises(grpc.RpcError) as caught:
            self.server.rank(request, timeout=10)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("top_n 0 is out of range", caught.exception.details())
        request = make_request(candidates=3)
        request.candidates[1].features[5] = float("nan")
        with self.assertRaises(grpc.RpcError) as caught:
            self.server.rank(request, timeout=10)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("(ctr_7d) is nan", caught.exception.details())
        # Still serving.
        self.assertEqual(self.server.rank(make_request(candidates=3), timeout=10).header.item_count, 3)

    def test_health_service_reports_serving(self):
        check = self.server.channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString)
        self.assertEqual(check(health_pb2.HealthCheckRequest(), timeout=10).status,
                         health_pb2.HealthCheckResponse.SERVING)

    def test_reflection_lists_the_rank_service(self):
        info = self.server.channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
        responses = list(info(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                              timeout=10))
        names = {s.name for s in responses[0].list_services_response.service}
        self.assertIn("rank.v1.RankService", names)
        self.assertIn("rank.v1.LogService", names)
        self.assertIn("grpc.health.v1.Health", names)

    def test_the_plaintext_health_port_serves_health_only(self):
        # It bypasses mutual TLS (kubelet's probes cannot speak TLS), so it
        # must not describe or serve anything else.
        self.assertGreater(self.server.health_port, 0)
        with grpc.insecure_channel(f"127.0.0.1:{self.server.health_port}") as channel:
            health = channel.unary_unary(
                "/grpc.health.v1.Health/Check",
                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=health_pb2.HealthCheckResponse.FromString)
            self.assertEqual(health(health_pb2.HealthCheckRequest(service=""), timeout=10).status,
                             health_pb2.HealthCheckResponse.SERVING)
            info = channel.stream_stream(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
            with self.assertRaises(grpc.RpcError) as refused:
                list(info(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                          timeout=10))
            self.assertEqual(refused.exception.code(), grpc.StatusCode.UNIMPLEMENTED)


class FormatDocumentTest(unittest.TestCase):
    """The worked example of docs/FORMAT.md, decoded by the rankwire package."""

    def test_worked_example(self):
        doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "FORMAT.md")).read()
        block = doc.split("## Worked example", 1)[1].split("```", 2)[1]
        hexbytes = []
        for line in block.splitlines():
            # Each line is hex bytes, then two or more spaces, then a comment.
            hexbytes += re.split(r"\s{2,}", line.strip())[0].split()
        payload = bytes(int(h, 16) for h in hexbytes)
        self.assertEqual(len(payload), 164)
        decoded = rankwire.open_payload("rankbin", payload).materialize()
        self.assertEqual(decoded.keys, {"score.ctr": rankwire.MetricType.DOUBLE,
                                        "recall.source": rankwire.MetricType.STRING})
        self.assertEqual(decoded.items, [
            rankwire.DecodedItem("sku-1", 0.5, 1,
                                 {"score.ctr": 0.25, "recall.source": "vector_ann"}, ""),
            rankwire.DecodedItem("sku-2", 0.25, 2,
                                 {"score.ctr": 0.125, "recall.source": "vector_ann"}, "hi"),
        ])

    def test_malformed_payloads_raise_format_errors(self):
        for bad in (b"", b"RKWB", b"XXXX\x01\x00\x00\x00", b"RKWB\x02\x00\x00\x00",
                    b"RKWB\x01\x00\x00\x00\x01\xff\xff\x00\x00"):
            with self.assertRaises(rankwire.FormatError):
                rankwire.open_payload("rankbin", bad).materialize()


if __name__ == "__main__":
    unittest.main()
