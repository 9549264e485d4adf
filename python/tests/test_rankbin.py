"""The rankbin reader against FORMAT.md's worked example and hand-made
payloads: what it decodes, what it skips, what it rejects and with which
exception, and that it reads lazily."""

import math
import struct
import unittest

import rankwire
from rankwire import MetricType

from tests import payloads
from tests.payloads import DOUBLE, FLOAT, INT, STRING, STRING_DICT, Item, build


def open_rankbin(data: bytes, **kw) -> rankwire.Result:
    return rankwire.open_payload("rankbin", data, **kw)


def sample(**kw) -> bytes:
    """40 items in blocks of 16, every known type, logs."""
    keys = [(DOUBLE, "score.ctr", None), (FLOAT, "feat.price", None), (INT, "recall.rank", None),
            (STRING, "debug", None), (STRING_DICT, "recall.source", ["bm25", "ann"])]
    items = [Item(f"sku-{i}", 1 - i / 64, i + 1, 0,
                  [i / 8, i * 1.5, -i * 1000, "x" * i, ("bm25", "ann")[i % 2]], log=f"line {i}")
             for i in range(40)]
    return build(keys, [[0, 1, 2, 3, 4]], items, **kw)


class WorkedExampleTest(unittest.TestCase):
    def test_decodes_to_the_documented_result(self):
        result = open_rankbin(payloads.worked_example())
        self.assertEqual(len(result), 2)
        self.assertEqual(result.keys(), {"score.ctr": MetricType.DOUBLE,
                                         "recall.source": MetricType.STRING})
        decoded = result.materialize()
        self.assertEqual(decoded.items, [
            rankwire.DecodedItem("sku-1", 0.5, 1, {"score.ctr": 0.25, "recall.source": "vector_ann"}, ""),
            rankwire.DecodedItem("sku-2", 0.25, 2, {"score.ctr": 0.125, "recall.source": "vector_ann"},
                                 "hi"),
        ])

    def test_lazy_reads(self):
        result = open_rankbin(payloads.worked_example())
        second = result[1]
        self.assertEqual((second.id, second.score, second.position), ("sku-2", 0.25, 2))
        self.assertEqual(second.metric("score.ctr"), 0.125)
        self.assertEqual(second.metric("recall.source"), "vector_ann")
        self.assertIsNone(second.metric("no.such.key"))
        self.assertEqual(second.log, "hi")
        self.assertEqual(result[-1].id, "sku-2")
        self.assertEqual([i.id for i in result[0:2]], ["sku-1", "sku-2"])
        self.assertEqual([i.id for i in result.top(10)], ["sku-1", "sku-2"])
        with self.assertRaises(IndexError):
            result[2]

    def test_every_prefix_is_an_error(self):
        data = payloads.worked_example()
        for n in range(len(data)):
            with self.subTest(cut=n), self.assertRaises(rankwire.FormatError):
                open_rankbin(data[:n]).materialize()


class ValuesTest(unittest.TestCase):
    def test_every_type_and_block(self):
        result = open_rankbin(sample())
        self.assertEqual(len(result), 40)
        item = result[37]
        self.assertEqual(item.metrics(), {"score.ctr": 37 / 8, "feat.price": 37 * 1.5,
                                          "recall.rank": -37000, "debug": "x" * 37,
                                          "recall.source": "ann"})
        self.assertEqual(item.log, "line 37")
        full = result.materialize()
        for i, d in enumerate(full.items):
            lazy = result[i]
            self.assertEqual((d.id, d.score, d.position, d.metrics, d.log),
                             (lazy.id, lazy.score, lazy.position, lazy.metrics(), lazy.log))
            for name, value in d.metrics.items():
                self.assertEqual(lazy.metric(name), value)

    def test_float_is_the_binary32_value(self):
        data = build([(FLOAT, "f", None)], [[0]], [Item("a", 0, 1, 0, [0.1])])
        self.assertEqual(open_rankbin(data)[0].metric("f"), struct.unpack("<f", struct.pack("<f", 0.1))[0])

    def test_special_numbers_are_kept(self):
        values = [math.inf, -math.inf, -0.0, 5e-324]
        data = build([(DOUBLE, f"d{k}", None) for k in range(4)], [[0, 1, 2, 3]],
                     [Item("a", math.nan, 1, 0, values)])
        item = open_rankbin(data)[0]
        self.assertTrue(math.isnan(item.score))
        got = [item.metric(f"d{k}") for k in range(4)]
        self.assertEqual([struct.pack("<d", v) for v in got], [struct.pack("<d", v) for v in values])

    def test_int64_edges(self):
        edges = [0, -1, 1, (1 << 63) - 1, -(1 << 63)]
        data = build([(INT, f"i{k}", None) for k in range(5)], [list(range(5))],
                     [Item("a", 0, 1, 0, edges)])
        self.assertEqual(list(open_rankbin(data)[0].metrics().values()), edges)

    def test_overlong_varints_are_accepted(self):
        # FORMAT.md: readers accept longer encodings of a value, within 10 bytes.
        data = build([(INT, "i", None), (INT, "j", None)], [[0, 1]],
                     [Item("a", 0, 1, 0, [b"\x86\x80\x00", b"\x80" * 9 + b"\x00"])])
        self.assertEqual(open_rankbin(data)[0].metrics(), {"i": 3, "j": 0})
        for bad in (b"\x80" * 10 + b"\x00", b"\xff" * 9 + b"\x02"):  # 11 bytes; over 64 bits
            data = build([(INT, "i", None)], [[0]], [Item("a", 0, 1, 0, [bad])])
            with self.assertRaises(rankwire.FormatError):
                open_rankbin(data)[0].metrics()

    def test_unknown_types_and_sections_are_skipped(self):
        keys = [(0x08, "future.varint", None), (0x11, "future.fixed32", None),
                (0x1A, "future.fixed64", None), (0x23, "future.bytes", None),
                (DOUBLE, "score", None)]
        item = Item("a", 0, 1, 0, [b"\x96\x01", b"1234", b"12345678", b"\x03abc", 2.5])
        data = build(keys, [[0, 1, 2, 3, 4]], [item], extra_sections=[(9, b"later"), (9, b"")])
        result = open_rankbin(data)
        self.assertEqual(result.keys(), {"score": MetricType.DOUBLE})
        self.assertEqual(result[0].metrics(), {"score": 2.5})
        self.assertEqual(result[0].metric("score"), 2.5)
        self.assertIsNone(result[0].metric("future.bytes"))

    def test_absent_logs_section_means_empty_logs(self):
        result = open_rankbin(sample(logs_codec=None))
        self.assertEqual(result[5].log, "")
        self.assertEqual({d.log for d in result.materialize().items}, {""})

    def test_zstd_blocks(self):
        plain = open_rankbin(sample()).materialize()
        for values_codec in (payloads.RAW, payloads.ZSTD):
            with self.subTest(values=values_codec):
                result = open_rankbin(sample(values_codec=values_codec, logs_codec=payloads.ZSTD))
                self.assertEqual(result.materialize(), plain)

    def test_strings_that_are_not_utf8_keep_their_bytes(self):
        data = build([(STRING, "s", None)], [[0]], [Item("a", 0, 1, 0, ["é"])])
        data = data.replace("é".encode(), b"\xff\xfe")
        value = open_rankbin(data)[0].metric("s")
        self.assertEqual(value.encode("utf-8", "surrogateescape"), b"\xff\xfe")


class ErrorsTest(unittest.TestCase):
    def assert_fails(self, data, exc=rankwire.FormatError, **kw):
        with self.assertRaises(exc):
            open_rankbin(data, **kw).materialize()

    def test_header(self):
        self.assert_fails(b"", rankwire.TruncatedError)
        self.assert_fails(b"RKWB\x01\x01\x00", rankwire.TruncatedError)
        self.assert_fails(b"XXXX\x01\x01\x00\x00")
        good = sample()
        self.assert_fails(b"RKWB\x02" + good[5:], rankwire.UnsupportedVersionError)
        self.assert_fails(good + b"\x00", rankwire.FormatError)              # Bytes after the sections.
        self.assert_fails(good[:6] + b"\x06\x00" + good[8:], rankwire.TruncatedError)  # One more announced.

    def test_missing_and_repeated_sections(self):
        data = payloads.worked_example()
        s = payloads.Sections.of(data)
        keys_start, keys_end = s.spans[1]
        self.assert_fails(data[:6] + b"\x06\x00" + data[8:] + data[keys_start - 5:keys_end])

    def test_bad_block_codec_sizes_and_checksum(self):
        data = bytearray(sample(values_codec=payloads.ZSTD, logs_codec=payloads.ZSTD))
        spans = payloads.Sections.of(bytes(data)).block_spans(bytes(data), 5)
        start, end = spans[1]
        data[end - 1] ^= 0x01  # The last byte of a frame: its content checksum.
        result = open_rankbin(bytes(data))
        self.assertEqual(result[3].log, "line 3")  # Block 0 is intact...
        with self.assertRaises(rankwire.ChecksumError):
            result[17].log  # ...block 1 is not,
        with self.assertRaises(rankwire.ChecksumError):
            result[17].log  # every time,
        with self.assertRaises(rankwire.ChecksumError):
            result.materialize()  # and a full decode meets it.

    def test_frames_without_checksum(self):
        old = sample(values_codec=payloads.ZSTD_NO_CHECKSUM, minor=0)
        self.assertEqual(len(open_rankbin(old).materialize().items), 40)  # 1.0: allowed.
        self.assert_fails(sample(values_codec=payloads.ZSTD_NO_CHECKSUM, minor=1))

    def test_zstd_cap_is_a_limit_error(self):
        data = sample(values_codec=payloads.ZSTD, logs_codec=payloads.ZSTD)
        self.assert_fails(data, rankwire.LimitError, limits=rankwire.Limits(max_decoded_bytes=100))
        result = open_rankbin(data, limits=rankwire.Limits(max_decoded_bytes=400))
        self.assertEqual(result[0].metric("recall.rank"), 0)  # Block 0 fits the cap.

    def test_materialized_cap_is_a_limit_error(self):
        self.assert_fails(sample(), rankwire.LimitError,
                          limits=rankwire.Limits(max_materialized_bytes=1000))

    def test_duplicate_key_names(self):
        data = build([(DOUBLE, "a", None), (INT, "a", None)], [[0, 1]], [Item("x", 0, 1, 0, [1.0, 2])])
        result = open_rankbin(data)
        self.assertEqual(result[0].id, "x")  # The record needs no names.
        with self.assertRaises(rankwire.FormatError):
            result[0].metric("a")
        with self.assertRaises(rankwire.FormatError):
            result.materialize()
        # A key of an unknown type may repeat a known name.
        data = build([(DOUBLE, "a", None), (0x08, "a", None)], [[0, 1]], [Item("x", 0, 1, 0, [1.0, b"\x05"])])
        self.assertEqual(open_rankbin(data)[0].metrics(), {"a": 1.0})

    def test_reserved_wire_class(self):
        self.assert_fails(build([(0x0C, "r", None)], [[]], [Item("x", 0, 1, 0, [])]))

    def test_dictionary_index_out_of_range(self):
        data = build([(STRING_DICT, "d", ["only"])], [[0]], [Item("x", 0, 1, 0, [b"\x01"])])
        result = open_rankbin(data)
        with self.assertRaises(rankwire.FormatError):
            result[0].metric("d")

    def test_shape_index_out_of_range_or_repeated(self):
        for shape in ([0, 0], [0, 5]):
            with self.subTest(shape=shape):
                data = build([(INT, "a", None)], [shape], [Item("x", 0, 1, 0, [])])
                result = open_rankbin(data)
                self.assertEqual(result[0].id, "x")
                with self.assertRaises(rankwire.FormatError):
                    result[0].metrics()

    def test_damaged_later_items_do_not_stop_the_top(self):
        # The last record's directory entry points past the records: the
        # first items still read, the last and a full decode fail.
        data = bytearray(sample())
        items_start, items_end = payloads.Sections.of(bytes(data)).spans[3]
        directory = items_start + 2  # item count (1 byte) and block items (1 byte)
        struct.pack_into("<I", data, directory + 4 * 39, items_end)
        result = open_rankbin(bytes(data))
        self.assertEqual([i.id for i in result.top(10)], [f"sku-{i}" for i in range(10)])
        with self.assertRaises(rankwire.FormatError):
            result[39]
        with self.assertRaises(rankwire.FormatError):
            result.materialize()


if __name__ == "__main__":
    unittest.main()
