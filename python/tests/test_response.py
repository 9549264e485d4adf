"""open_response: the RankResponse envelope, codec dispatch, the header's
item count, and the protobuf codec's reader with its text rules."""

import math
import struct
import unittest

import rankwire
from rankwire import MetricType, rank_pb2
from rankwire._protobuf_view import parse_metric_text

from tests import payloads


def response(codec: str, item_count: int, body: bytes = b"", field: str = "payload") -> bytes:
    header = rank_pb2.ResponseHeader(codec=codec, item_count=item_count, format_version=1)
    message = rank_pb2.RankResponse(header=header)
    if field == "payload":
        message.payload = body
    else:
        message.result.ParseFromString(body)
    return message.SerializeToString()


def baseline() -> rank_pb2.RankResult:
    result = rank_pb2.RankResult()
    result.metric_types.update({"score.ctr": rank_pb2.METRIC_TYPE_DOUBLE,
                                "feat.price": rank_pb2.METRIC_TYPE_FLOAT,
                                "recall.rank": rank_pb2.METRIC_TYPE_INT,
                                "recall.source": rank_pb2.METRIC_TYPE_STRING})
    for i in range(3):
        item = result.items.add(item_id=f"sku-{i}", score=1 - i / 4, position=i + 1, log=f"l{i}")
        item.metrics.update({"score.ctr": repr(i / 3), "feat.price": "0.1", "recall.rank": str(-i),
                             "recall.source": "ann"})
    return result


class EnvelopeTest(unittest.TestCase):
    def test_rankbin_body(self):
        data = response("rankbin", 2, payloads.worked_example())
        result = rankwire.open_response(data)
        self.assertEqual((result.codec, len(result), result.header.format_version), ("rankbin", 2, 1))
        self.assertEqual(result.body_bytes, 164)
        self.assertEqual(result.response_bytes, len(data))
        self.assertEqual(result[1].log, "hi")

    def test_protobuf_body(self):
        data = response("protobuf", 3, baseline().SerializeToString(), field="result")
        result = rankwire.open_response(data)
        self.assertEqual(result.keys(), {"feat.price": MetricType.FLOAT,
                                         "recall.rank": MetricType.INT,
                                         "recall.source": MetricType.STRING,
                                         "score.ctr": MetricType.DOUBLE})
        item = result[2]
        self.assertEqual((item.id, item.score, item.position, item.log), ("sku-2", 0.5, 3, "l2"))
        self.assertEqual(item.metric("score.ctr"), 2 / 3)
        self.assertEqual(item.metric("feat.price"), struct.unpack("<f", struct.pack("<f", 0.1))[0])
        self.assertEqual(item.metric("recall.rank"), -2)
        self.assertIsNone(item.metric("missing"))
        self.assertEqual(result.materialize().items[2].metrics, item.metrics())

    def test_fields_in_any_order_and_unknown_fields(self):
        body = payloads.worked_example()
        header = rank_pb2.ResponseHeader(codec="rankbin", item_count=2).SerializeToString()
        data = (b"\x1a" + payloads.varint(len(body)) + body +   # payload first
                b"\x20\x07" + b"\x2d1234" + b"\x31" + b"8" * 8 +  # unknown varint, fixed32, fixed64
                b"\x0a" + payloads.varint(len(header)) + header)
        self.assertEqual(len(rankwire.open_response(data)), 2)

    def test_errors(self):
        body = payloads.worked_example()
        cases = {
            "item count": (response("rankbin", 3, body), rankwire.FormatError),
            "no body": (rank_pb2.RankResponse(header=rank_pb2.ResponseHeader(
                codec="rankbin")).SerializeToString(), rankwire.FormatError),
            "wrong field": (response("protobuf", 2, body), rankwire.FormatError),
            "unknown codec": (response("rankbin-lz4", 2, body), rankwire.UnknownCodecError),
            "cut": (response("rankbin", 2, body)[:-1], rankwire.TruncatedError),
            "garbage": (b"\x0f\x00", rankwire.FormatError),
            "bad header": (b"\x0a\x02\xff\xff", rankwire.FormatError),
            "field 0": (b"\x02\x00", rankwire.FormatError),
            "bad protobuf body": (response("protobuf", 0, field="result") + b"\x12\x02\xff\xff",
                                  rankwire.FormatError),
        }
        for name, (data, exc) in cases.items():
            with self.subTest(name), self.assertRaises(exc):
                rankwire.open_response(data)
        with self.assertRaises(rankwire.UnknownCodecError) as caught:
            rankwire.open_payload("flatbuffers", b"")
        self.assertEqual(caught.exception.codec, "flatbuffers")

    def test_protobuf_metric_errors(self):
        message = baseline()
        message.items[1].metrics["recall.rank"] = "1.5"
        message.items[2].metrics["undeclared"] = "x"
        result = rankwire.open_response(response("protobuf", 3, message.SerializeToString(), "result"))
        self.assertEqual(result[0].metric("recall.rank"), 0)
        for i in (1, 2):
            with self.assertRaises(rankwire.FormatError):
                result[i].metrics()
        with self.assertRaises(rankwire.FormatError):
            result.materialize()
        message = baseline()
        message.metric_types["bad"] = 9
        with self.assertRaises(rankwire.FormatError):
            rankwire.open_response(response("protobuf", 3, message.SerializeToString(), "result"))


class MetricTextTest(unittest.TestCase):
    """The protobuf codec's numbers, parsed as the C++ reader's from_chars does."""

    def test_ints(self):
        self.assertEqual(parse_metric_text("-9223372036854775808", MetricType.INT), -(1 << 63))
        for bad in ("9223372036854775808", "+1", " 1", "1_0", "", "-", "0x10", "1.0"):
            with self.subTest(bad), self.assertRaises(rankwire.FormatError):
                parse_metric_text(bad, MetricType.INT)

    def test_doubles(self):
        for text, value in (("0.1", 0.1), (".5", 0.5), ("5.", 5.0), ("1.e5", 1e5), ("-0", -0.0),
                            ("INF", math.inf), ("-infinity", -math.inf), ("1e-320", 1e-320),
                            ("00.000e-999", 0.0)):
            with self.subTest(text):
                got = parse_metric_text(text, MetricType.DOUBLE)
                self.assertEqual(struct.pack("<d", got), struct.pack("<d", value))
        nan = parse_metric_text("-nan", MetricType.DOUBLE)
        self.assertTrue(math.isnan(nan) and math.copysign(1, nan) < 0)
        self.assertTrue(math.isnan(parse_metric_text("nan(abc)", MetricType.DOUBLE)))
        for bad in ("1e400", "1e-400", "+5", "1e", "0x10", "nan(", "1_0", " 1", ""):
            with self.subTest(bad), self.assertRaises(rankwire.FormatError):
                parse_metric_text(bad, MetricType.DOUBLE)

    def test_floats_round_once(self):
        def f32(x):
            return struct.unpack("<f", struct.pack("<f", x))[0]
        self.assertEqual(parse_metric_text("0.1", MetricType.FLOAT), f32(0.1))
        self.assertEqual(parse_metric_text("3.4028235e38", MetricType.FLOAT), f32(3.4028235e38))
        self.assertEqual(parse_metric_text("1e-45", MetricType.FLOAT), f32(1e-45))
        # 1 + 2^-24 + 2^-60: its nearest double is 1 + 2^-24, halfway between
        # two binary32 values; rounding that double again gives 1.0 (ties to
        # even), rounding the decimal once gives 1 + 2^-23.
        text = "1.00000005960464477625798673798840354720596224069595336914062"
        self.assertEqual(float(text), 1 + 2 ** -24)
        self.assertEqual(parse_metric_text(text, MetricType.FLOAT), 1 + 2 ** -23)
        self.assertEqual(parse_metric_text("1.000000059604644775390625", MetricType.FLOAT), 1.0)
        for bad in ("3.5e38", "1e-46", "1e400"):
            with self.subTest(bad), self.assertRaises(rankwire.FormatError):
                parse_metric_text(bad, MetricType.FLOAT)


if __name__ == "__main__":
    unittest.main()
