"""rankwire.logs against values built here from docs/LOGS.md: layout 3 and
its columns (every slot kind and number form, and every refusal whatever
ids are asked for), layout 2 and blocks (every slot kind and number form),
text values, layout 1 records;
the reading logic over a fake HMGET; every truncation and damage raising a
rankwire error. Against a real Redis and server: tests/interop/test_log_decoder.py."""

import ctypes
import ctypes.util
import random
import struct
import unittest
from typing import Dict, List, Optional, Sequence

import zstandard

import rankwire
from rankwire import logs

from tests.payloads import lp, varint, zigzag

F32 = struct.Struct("<f")


def f32(x: float) -> float:
    return F32.unpack(F32.pack(x))[0]


# "id=<id> pos=<position> n=<int> src=<string> x=<number> y=<number>|"
PIECES = [b"id=", b" pos=", b" n=", b" src=", b" x=", b" y=", b"|"]
KINDS = [logs.SLOT_ITEM_ID, logs.SLOT_POSITION, logs.SLOT_INT, logs.SLOT_STRING,
         logs.SLOT_NUMBER, logs.SLOT_NUMBER]
STRINGS = [b"bm25", "ann \u00e9".encode()]


def layout_v2(items: int, top: int, block_items: int, pieces=PIECES, kinds=KINDS,
              strings=STRINGS) -> bytes:
    out = b"L\x02" + varint(items) + varint(top) + varint(block_items) + varint(len(kinds))
    for piece, kind in zip(pieces, kinds):
        out += lp(piece) + bytes([kind])
    out += lp(pieces[-1]) + varint(len(strings))
    return out + b"".join(lp(s) for s in strings)


def number_column(values: Sequence, form: int) -> bytes:
    if form == 5:
        return b"\x05" + bytes([values[0][0]]) + b"".join(varint(zigzag(d)) for _, d in values)
    bits = [struct.unpack("<I", F32.pack(v))[0] for v in values]
    if form == 0:
        return b"\x00" + b"".join(F32.pack(v) for v in values)
    if form == 1:
        top = bits[0] >> 24
        assert all(b >> 24 == top for b in bits)
        return b"\x01" + bytes([top]) + b"".join(struct.pack("<I", b)[:3] for b in bits)
    if form == 2:
        return b"\x02" + b"".join(varint(zigzag(int(v))) for v in values)
    if form == 4:
        low, high = sorted({b >> 24 for b in bits})
        flags = [int(b >> 24 == high) for b in bits]
        chosen = bytes(sum(flags[j + i] << i for i in range(min(8, len(flags) - j)))
                       for j in range(0, len(flags), 8))
        return (b"\x04" + bytes([low, high]) + chosen +
                b"".join(struct.pack("<I", b)[:3] for b in bits))
    assert len(set(bits)) == 1
    return b"\x03" + F32.pack(values[0])


def block(ids: Sequence[bytes], ints: Sequence[int], strings: Sequence[int],
          xs: Sequence[float], ys: Sequence[float], x_form: int, y_form: int,
          prefix: bytes = b"") -> bytes:
    out = b"B" + varint(len(ids)) + lp(prefix)
    out += b"".join(lp(i[len(prefix):]) for i in ids)
    out += b"".join(varint(zigzag(i)) for i in ints)
    out += b"".join(varint(s) for s in strings)
    return out + number_column(xs, x_form) + number_column(ys, y_form)


def line(item_id: bytes, pos: int, n: int, src: int, x: float, y: float) -> str:
    return (b"id=%s pos=%d n=%d src=%s x=%s y=%s|" % (
        item_id, pos, n, STRINGS[src], (b"%g" % f32(x)), (b"%g" % f32(y)))).decode()


class Store:
    """A request's logs as the server would store them (5 items: block 0 of
    2, then blocks of 2), plus a fake HMGET that counts round trips."""

    IDS = [b"sku-1", b"sku-2", b"sku-\n\x00\xc3\xa9", b"sku-4", b"x"]
    INTS = [7, -3, 0, 2**62, -2**63]
    SRCS = [0, 1, 1, 0, 1]
    XS = [0.1, -0.0, 1e-40, 3.4e38, 1.2345650]
    YS = [1.0, 2.0, -3.0, 16777215.0, 0.0]

    def __init__(self) -> None:
        self.layout = layout_v2(5, 2, 2)
        self.fields: Dict[bytes, bytes] = {
            b"": self.layout,
            b"#0": block(self.IDS[0:2], self.INTS[0:2], self.SRCS[0:2], self.XS[0:2],
                         self.YS[0:2], 0, 2, prefix=b"sku-"),
            b"#1": block(self.IDS[2:4], self.INTS[2:4], self.SRCS[2:4], self.XS[2:4],
                         self.YS[2:4], 0, 2, prefix=b"sku-"),
            b"#2": block(self.IDS[4:5], self.INTS[4:5], self.SRCS[4:5], self.XS[4:5],
                         self.YS[4:5], 1, 3),
        }
        self.calls: List[List[bytes]] = []

    def lines(self) -> Dict[str, str]:
        return {i.decode(): line(i, j + 1, self.INTS[j], self.SRCS[j], self.XS[j], self.YS[j])
                for j, i in enumerate(self.IDS)}

    def hmget(self, fields: List[bytes]) -> List[Optional[bytes]]:
        self.calls.append(list(fields))
        return [self.fields.get(f) for f in fields]


# Layout version 3: "id=<id> pos=<position> pre=<request index> n=<int>
# src=<string> x=<number> y=<number>|".
V3_PIECES = [b"id=", b" pos=", b" pre=", b" n=", b" src=", b" x=", b" y=", b"|"]
V3_KINDS = [logs.SLOT_ITEM_ID, logs.SLOT_POSITION, logs.SLOT_REQUEST_INDEX, logs.SLOT_INT,
            logs.SLOT_STRING, logs.SLOT_NUMBER, logs.SLOT_NUMBER]


def layout_v3(items: int, top: int) -> bytes:
    out = b"L\x03" + varint(items) + varint(top) + varint(len(V3_KINDS))
    for piece, kind in zip(V3_PIECES, V3_KINDS):
        out += lp(piece) + bytes([kind])
    out += lp(V3_PIECES[-1]) + varint(len(STRINGS))
    return out + b"".join(lp(s) for s in STRINGS)


def ints(values: Sequence[int], width: int = 2) -> bytes:
    return bytes([width]) + b"".join(v.to_bytes(width, "little") for v in values)


def columns(tag: bytes, order: Sequence[int], rows: Sequence[int], store: "Columns3",
            x: bytes = b"", y: bytes = b"") -> bytes:
    """A "#0" or "#1" value: `order`, then the columns of items `rows`."""
    ids = [store.IDS[c] for c in rows]
    out = tag + ints(order) + ints([len(i) for i in ids], 1) + b"".join(ids)
    out += ints([store.INTS[c] for c in rows], 4) + ints([store.SRCS[c] for c in rows], 1)
    out += x or b"\x00" + b"".join(F32.pack(store.XS[c]) for c in rows)
    return out + (y or b"\x03" + ints([int(store.YS[c]) for c in rows]))


class Columns3:
    """A request of 5 items stored in columns, 2 of them in "#0", ranked
    in the order ORDER (request indexes by position)."""

    IDS = [b"sku-1", b"sku-2", b"sku-\n\x00\xc3\xa9", b"sku-4", b"x"]
    INTS = [7, 3, 0, 2**32 - 1, 65536]
    SRCS = [0, 1, 1, 0, 1]
    XS = [0.1, -0.0, 1e-40, 3.4e38, 1.2345650]
    YS = [1.0, 2.0, 3.0, 65535.0, 0.0]
    ORDER = [3, 0, 4, 1, 2]

    def __init__(self) -> None:
        self.fields: Dict[bytes, bytes] = {
            b"": layout_v3(5, 2),
            b"#0": columns(b"T", self.ORDER[:2], self.ORDER[:2], self),
            b"#1": columns(b"A", self.ORDER, range(5), self),
        }
        self.calls: List[List[bytes]] = []

    def lines(self) -> Dict[str, str]:
        out = {}
        for r, c in enumerate(self.ORDER):
            text = b"id=%s pos=%d pre=%d n=%d src=%s x=%s y=%s|" % (
                self.IDS[c], r + 1, c + 1, self.INTS[c], STRINGS[self.SRCS[c]],
                b"%g" % f32(self.XS[c]), b"%g" % self.YS[c])
            out[self.IDS[c].decode()] = text.decode()
        return out

    def hmget(self, fields: List[bytes]) -> List[Optional[bytes]]:
        self.calls.append(list(fields))
        return [self.fields.get(f) for f in fields]


class ColumnsTest(unittest.TestCase):
    def test_decode_key_renders_every_item_in_position_order(self):
        store = Columns3()
        got = logs.decode_key(store.fields)
        self.assertEqual(got, store.lines())
        self.assertEqual(list(got), [store.IDS[c].decode() for c in store.ORDER])
        self.assertEqual(got["sku-4"], "id=sku-4 pos=1 pre=4 n=4294967295 src=bm25 "
                                       "x=3.4e+38 y=65535|")

    def test_fetch_top_in_one_round_trip_the_rest_in_two(self):
        store = Columns3()
        want = store.lines()
        self.assertEqual(logs.fetch(store.hmget, ["sku-1", "sku-4"]),
                         {"sku-1": want["sku-1"], "sku-4": want["sku-4"]})
        self.assertEqual(len(store.calls), 1)
        self.assertEqual(logs.fetch(store.hmget, ["x", "nope", "#1"]),
                         {"x": want["x"], "nope": None, "#1": None})
        self.assertEqual(store.calls[-1], [b"", b"#0", b"#1"])

    def test_every_number_form(self):
        store = Columns3()
        rows = range(5)
        forms = {  # x in each form; y as whole numbers of width 1, 2 and 4.
            "constant": b"\x01" + F32.pack(0.5),
            "top byte": b"\x02\x3f" + b"".join(F32.pack(0.5 + c / 10)[:3] for c in rows),
        }
        for name, x in forms.items():
            for width in (1, 2, 4):
                y = b"\x03" + ints([c for c in rows], width)
                store.fields[b"#1"] = columns(b"A", store.ORDER, rows, store, x, y)
                store.fields[b"#0"] = columns(b"T", store.ORDER[:2], store.ORDER[:2], store,
                                              x[:2] + x[2 + 3 * 3:2 + 3 * 4] + x[2:5]
                                              if name == "top byte" else x,
                                              b"\x03" + ints(store.ORDER[:2], width))
                got = logs.decode_key(store.fields)
                for c in rows:
                    value = 0.5 if name == "constant" else f32(0.5 + c / 10)
                    self.assertIn(b" x=%s y=%d|" % (b"%g" % value, c),
                                  got[store.IDS[c].decode()].encode("utf-8", "surrogateescape"))

    def test_the_refusals_are_unconditional(self):
        """Each value read is refused whole, whatever ids were asked for: the
        four cases an outside decoder once read differently, and the rest."""
        good = Columns3()
        twice = columns(b"A", good.ORDER, [0, 1, 2, 3, 0], good)  # sku-1 twice
        empty = bytearray(good.fields[b"#1"])
        empty[1 + 1 + 10 + 1] = 0  # The first id's length 0 (its bytes then follow as the next)
        long_varint = good.fields[b""].replace(b"L\x03\x05\x02", b"L\x03\x85\x00\x02", 1)
        cases = {
            "an id twice in #1, asked or not": {b"#1": twice},
            "an empty id": {b"#1": bytes(empty)},
            "a varint not in its shortest form": {b"": long_varint},
            "top_items 0 beside items": {b"": layout_v3(5, 0)},
            "top_items 0 beside no items, with #0": {b"": layout_v3(0, 0)},
            "#0 disagreeing with #1": {b"#0": columns(b"T", [3, 1], [3, 1], good)},
            "an order past the items": {b"#1": columns(b"A", [5, 0, 4, 1, 2], range(5), good)},
            "an integer width of 3": {b"#1": good.fields[b"#1"].replace(b"A\x02", b"A\x03", 1)},
            "bytes after the last column": {b"#1": good.fields[b"#1"] + b"\x00"},
            "layout version 4": {b"": b"L\x04" + good.fields[b""][2:]},
        }
        for what, change in cases.items():
            with self.subTest(what):
                store = Columns3()
                store.fields.update(change)
                with self.assertRaises(rankwire.Error):
                    logs.decode_key(store.fields)
                # Asked for an id of "#0" and one only "#1" has (x): both read.
                with self.assertRaises(rankwire.Error):
                    logs.fetch(store.hmget, ["sku-4", "x"])


class BlocksTest(unittest.TestCase):
    def test_decode_key_renders_every_item_in_position_order(self):
        store = Store()
        got = logs.decode_key(store.fields)
        self.assertEqual(got, store.lines())
        self.assertEqual(list(got), [i.decode() for i in store.IDS])
        self.assertEqual(got["x"], "id=x pos=5 n=-9223372036854775808 src=ann \u00e9 "
                                   "x=1.23457 y=0|")
        self.assertIn("x=9.99995e-41", got["sku-\n\x00\u00e9"])
        self.assertIn("x=-0 ", got["sku-2"])
        self.assertIn("x=3.4e+38 y=1.67772e+07|", got["sku-4"])

    def test_every_number_form(self):
        values = {0: [1.5, float("inf"), float("-inf"), float("nan"), -float("nan"), 1e-45],
                  1: [1.0, 1.5, 1.75, 1.25, 1.0000001, 1.9999999],
                  2: [0.0, -1.0, 16777215.0, -16777215.0, 42.0, 7.0],
                  3: [2.5] * 6}
        ids = [b"a%d" % j for j in range(6)]
        layout = layout_v2(6, 6, 16)
        for form, xs in values.items():
            with self.subTest(form=form):
                value = block(ids, [0] * 6, [0] * 6, xs, xs, form, 0)
                got = logs.decode_key({b"": layout, b"#0": value})
                for j, i in enumerate(ids):
                    text = b"%g" % f32(xs[j])
                    self.assertTrue(got[i.decode()].endswith(
                        " x=%s y=%s|" % (text.decode(), text.decode())), got[i.decode()])
        nan_line = logs.decode_key({b"": layout, b"#0": block(ids, [0] * 6, [0] * 6,
                                                               values[0], values[0], 0, 0)})
        self.assertTrue(nan_line["a4"].endswith(" x=nan y=nan|"))
        # Two top bytes: values on both sides of a power of two, and signs.
        for xs in ([0.3, 0.6, 0.26, 0.99, 0.5, 0.49], [1.5, -1.5, 1.25, -1.75, 1.0, -1.0]):
            with self.subTest(form=4, xs=xs):
                value = block(ids, [0] * 6, [0] * 6, xs, xs, 4, 4)
                got = logs.decode_key({b"": layout, b"#0": value})
                for j, i in enumerate(ids):
                    self.assertTrue(got[i.decode()].endswith(" x=%g y=%g|" % (f32(xs[j]),
                                                                                f32(xs[j]))))
        # Decimals: d * 10^-k as binary64, then binary32 (78.7, -0.11, 0.1785, ...).
        digits = [(1, 787), (2, -11), (4, 1785), (6, 1), (1, 0), (3, 2147483647)]
        for scale, _ in digits:
            pairs = [(scale, d) for _, d in digits]
            with self.subTest(form=5, scale=scale):
                value = block(ids, [0] * 6, [0] * 6, [1.0] * 6, [1.0] * 6, 3, 3)[:-10]
                value += number_column(pairs, 5) + number_column([1.0] * 6, 3)
                got = logs.decode_key({b"": layout, b"#0": value})
                tenth = [1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6][scale]
                for j, i in enumerate(ids):
                    self.assertIn(" x=%g y=" % f32(pairs[j][1] * tenth), got[i.decode()])
        self.assertIn(" x=78.7 ", logs.decode_key({b"": layout_v2(1, 1, 16), b"#0": (
            block([b"a"], [0], [0], [1.0], [1.0], 3, 3)[:-10] + number_column([(1, 787)], 5) +
            number_column([1.0], 0))})["a"])

    def test_fetch_top_items_in_one_round_trip(self):
        store = Store()
        got = logs.fetch(store.hmget, ["sku-2", "sku-1"])
        self.assertEqual(got, {"sku-2": store.lines()["sku-2"], "sku-1": store.lines()["sku-1"]})
        self.assertEqual(store.calls, [[b"", b"#0", b"sku-2", b"sku-1"]])
        # An id in no block is looked for in all of them.
        self.assertEqual(logs.fetch(store.hmget, ["sku-1", "nope"])["nope"], None)
        self.assertEqual(store.calls[1:], [[b"", b"#0", b"sku-1", b"nope"], [b"", b"#1", b"#2"]])

    def test_fetch_reads_the_other_blocks_once(self):
        store = Store()
        got = logs.fetch(store.hmget, [b"x", "sku-1", "sku-\n\x00\u00e9"])
        self.assertEqual(list(got), ["x", "sku-1", "sku-\n\x00\u00e9"])
        self.assertEqual(got, {k: store.lines()[k] for k in got})
        self.assertEqual(store.calls[1], [b"", b"#1", b"#2"])
        self.assertEqual(len(store.calls), 2)

    def test_a_missing_block_means_no_log(self):
        store = Store()
        del store.fields[b"#1"]
        got = logs.fetch(store.hmget, ["sku-4", "x"])
        self.assertEqual(got, {"sku-4": None, "x": store.lines()["x"]})
        self.assertNotIn("sku-4", logs.decode_key(store.fields))

    def test_a_key_rewritten_between_the_reads_is_read_again(self):
        store = Store()
        first = store.fields
        rewritten = dict(first)
        rewritten[b""] = layout_v2(5, 2, 2, strings=[b"other", b"one"])

        def hmget(fields):
            # The second read of the first attempt sees the new layout.
            store.fields = rewritten if len(store.calls) == 1 else store.fields
            return store.hmget(fields)

        got = logs.fetch(hmget, ["x"])
        self.assertEqual(len(store.calls), 4)
        self.assertIn("src=one", got["x"])
        store.calls.clear()
        flip = [first, rewritten]
        always = lambda fields: (setattr(store, "fields", flip[len(store.calls) % 2]),  # noqa: E731
                                 store.hmget(fields))[1]
        with self.assertRaises(logs.KeyRewrittenError):
            logs.fetch(always, ["x"])
        self.assertTrue(issubclass(logs.KeyRewrittenError, rankwire.Error))

    def test_an_expired_key_reads_as_no_logs(self):
        store = Store()
        store.fields = {}
        self.assertEqual(logs.fetch(store.hmget, ["sku-1"]), {"sku-1": None})
        self.assertEqual(logs.decode_key({}), {})

    def test_truncation_and_damage_raise(self):
        store = Store()
        for name, value in store.fields.items():
            for cut in range(len(value)):
                fields = dict(store.fields)
                fields[name] = value[:cut]
                with self.subTest(field=name, cut=cut), self.assertRaises(rankwire.FormatError):
                    logs.decode_key(fields)
        bad = {
            "trailing byte in a block": {b"#2": store.fields[b"#2"] + b"\x00"},
            "trailing byte in the layout": {b"": store.layout + b"\x00"},
            "layout version 3": {b"": b"L\x03" + store.layout[2:]},
            "not a layout": {b"": b"T" + store.layout[1:]},
            "not a block": {b"#0": b"T" + store.fields[b"#0"][1:]},
            "block of the wrong size": {b"": layout_v2(5, 3, 2)},
            "a block past the count": {b"#3": store.fields[b"#2"]},
            "an item field beside blocks": {b"sku-1": b"Tline"},
            "two item id slots": {b"": layout_v2(5, 2, 2, kinds=[1, 5, 2, 3, 4, 1])},
            "no item id slot": {b"": layout_v2(5, 2, 2, kinds=[5, 5, 2, 3, 4, 4])},
            "unknown slot kind": {b"": layout_v2(5, 2, 2, kinds=[1, 6, 2, 3, 4, 4])},
            "top_items 0": {b"": layout_v2(5, 0, 2)},
            "block_items 0": {b"": layout_v2(5, 2, 0)},
            "string index": {b"#2": block([b"x"], [1], [2], [1.0], [1.0], 0, 0)},
            "unknown number form": {b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                                    b"\x06" + F32.pack(1.0)},
            "two top bytes out of order": {b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                                           b"\x04\x3f\x3e\x01" + b"\x00" * 3},
            "two top bytes, one used": {b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                                        b"\x04\x3e\x3f\x01" + b"\x00" * 3},
            "two top bytes, bits past the items": {
                b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                b"\x04\x3e\x3f\x03" + b"\x00" * 3},
            "decimal scale 0": {b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                                b"\x05\x00" + varint(zigzag(5))},
            "decimal scale 7": {b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                                b"\x05\x07" + varint(zigzag(5))},
            "decimal digits 2^31": {b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                                    b"\x05\x01" + varint(zigzag(1 << 31))},
            "whole number 2^24": {b"#2": block([b"x"], [1], [0], [1.0], [1.0], 0, 0)[:-5] +
                                  b"\x02" + varint(zigzag(1 << 24))},
            "duplicate id": {b"#2": block([b"sku-1"], [1], [0], [1.0], [1.0], 0, 0)},
        }
        for what, change in bad.items():
            fields = dict(store.fields)
            fields.update(change)
            with self.subTest(what), self.assertRaises(rankwire.FormatError):
                logs.decode_key(fields)
        with self.assertRaises(rankwire.UnsupportedVersionError):
            logs.Layout(b"L\x04")

    def test_fetch_refuses_an_item_field_beside_blocks(self):
        store = Store()
        store.fields[b"sku-1"] = b"Tline"
        with self.assertRaises(rankwire.FormatError):
            logs.fetch(store.hmget, ["sku-1"])
        # An item called like a block is read from the blocks.
        store = Store()
        self.assertEqual(logs.fetch(store.hmget, ["#1"]), {"#1": None})
        # An id of block 0 again in a later block.
        store.fields[b"#2"] = block([b"sku-1"], [1], [0], [1.0], [1.0], 0, 0)
        with self.assertRaises(rankwire.FormatError):
            logs.fetch(store.hmget, ["sku-1", "x"])

    def test_fetch_refuses_damage_it_reads(self):
        store = Store()
        store.fields[b"#1"] = store.fields[b"#1"][:-1]
        self.assertEqual(logs.fetch(store.hmget, ["sku-1"])["sku-1"], store.lines()["sku-1"])
        with self.assertRaises(rankwire.TruncatedError):
            logs.fetch(store.hmget, ["sku-4"])
        store = Store()
        store.fields[b""] = b"L\x01" + store.layout[5:]
        with self.assertRaises(rankwire.FormatError):  # A version 1 layout, block-shaped.
            logs.decode_key(store.fields)

    def test_caps(self):
        with self.assertRaises(rankwire.LimitError):
            logs.Layout(layout_v2(logs.MAX_ITEMS + 1, 2, 2))
        big = [b"x" * (1 << 20)] + PIECES[1:]
        ids = [b"%d" % j for j in range(300)]
        value = block(ids, [0] * 300, [0] * 300, [1.0] * 300, [1.0] * 300, 3, 3)
        with self.assertRaises(rankwire.LimitError):
            logs.decode_key({b"": layout_v2(300, 300, 16, pieces=big), b"#0": value})


V1_LAYOUT = (b"L\x01" + varint(4) +
             lp(b"item=") + bytes([logs.SLOT_ITEM_ID]) + lp(b" pos=") + bytes([logs.SLOT_INT]) +
             lp(b" src=") + bytes([logs.SLOT_STRING]) + lp(b" p=") + bytes([logs.SLOT_NUMBER]) +
             lp(b"|") + varint(2) + lp(b"bm25") + lp(b"ann"))


def record(pos: int, src: int, number: bytes) -> bytes:
    return b"R" + varint(zigzag(pos)) + varint(src) + number


def raw_double(x: float) -> bytes:
    negative = struct.pack("<d", x)[7] >> 7
    return varint(31 | negative << 5 | 1 << 6) + struct.pack("<d", x)


class TextAndRecordsTest(unittest.TestCase):
    def test_records_rendered_with_a_version_1_layout(self):
        layout = logs.Layout(V1_LAYOUT)
        # 0.123456: m = 123456, code 18 (10^-6): varint 92 a0 e2 03.
        self.assertEqual(varint(123456 << 6 | 18), bytes.fromhex("92a0e203"))
        self.assertEqual(logs.decode_record(layout, "sku-1", record(7, 1, varint(123456 << 6 | 18))),
                         "item=sku-1 pos=7 src=ann p=0.123456|")
        negative = varint(15 << 6 | 1 << 5 | 23)  # -1.5
        self.assertEqual(logs.decode_record(layout, b"x", record(-3, 0, negative)),
                         "item=x pos=-3 src=bm25 p=-1.5|")
        self.assertEqual(logs.decode_record(layout, b"x", record(1, 0, varint(31 | 1 << 5))),
                         "item=x pos=1 src=bm25 p=-0|")
        for x, text in ((-1.2345650000001, "-1.23457"), (-float("inf"), "-inf"),
                        (1e300, "1e+300"), (-float("nan"), "nan"), (-2.5e-30, "-2.5e-30")):
            self.assertEqual(logs.decode_record(layout, "x", record(1, 0, raw_double(x))),
                             f"item=x pos=1 src=bm25 p={text}|")

    def test_text_and_zstd_values(self):
        self.assertEqual(logs.decode_text(b"Tplain \n\x00 line"), "plain \n\x00 line")
        frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"squeezed line")
        self.assertEqual(logs.decode_text(b"Z" + frame), "squeezed line")
        checked = zstandard.ZstdCompressor(write_checksum=True).compress(b"checked")
        self.assertEqual(logs.decode_text(b"Z" + checked), "checked")
        for bad in (b"Z" + frame + b"\x00", b"Z" + frame + frame, b"Z" + frame[:-1],
                    b"Znot a frame", b"Z", b"", b"Q",
                    b"Z" + zstandard.ZstdCompressor(write_content_size=False).compress(b"no")):
            with self.subTest(bad=bad), self.assertRaises(rankwire.FormatError):
                logs.decode_text(bad)
        damaged = bytearray(b"Z" + checked)
        damaged[-1] ^= 1
        with self.assertRaises(rankwire.ChecksumError):
            logs.decode_text(bytes(damaged))
        huge = zstandard.ZstdCompressor().compress(b"x" * (logs.MAX_LOG_BYTES + 1))
        with self.assertRaises(rankwire.LimitError):
            logs.decode_text(b"Z" + huge)

    def test_per_item_hashes(self):
        frame = zstandard.ZstdCompressor().compress(b"squeezed")
        text_hash = {b"a": b"Tone", b"#0": b"Z" + frame}
        self.assertEqual(logs.decode_key(text_hash), {"a": "one", "#0": "squeezed"})
        calls = []

        def hmget(fields):
            calls.append(fields)
            return [text_hash.get(f) for f in fields]

        self.assertEqual(logs.fetch(hmget, ["#0", "a", "b"]),
                         {"#0": "squeezed", "a": "one", "b": None})
        self.assertEqual(len(calls), 1)
        v1_hash = {b"": V1_LAYOUT, b"a": record(1, 1, varint(31)), b"b": b"Tb's line"}
        self.assertEqual(logs.decode_key(v1_hash),
                         {"a": "item=a pos=1 src=ann p=0|", "b": "b's line"})
        self.assertEqual(logs.fetch(lambda f: [v1_hash.get(x) for x in f], ["b", "a", "c"]),
                         {"b": "b's line", "a": "item=a pos=1 src=ann p=0|", "c": None})

    def test_corrupt_records_raise(self):
        layout = logs.Layout(V1_LAYOUT)
        bad = [
            record(1, 0, varint(31)) + b"\x00",                # bytes after the last slot
            record(1, 5, varint(31)),                          # string index out of range
            record(1, 0, varint(24)),                          # digits 0
            record(1, 0, varint(1000000 << 6 | 24)),           # digits past 999999
            record(1, 0, varint(10 << 6 | 24)),                # a trailing zero digit
            record(1, 0, varint(31 | 2 << 6)),                 # unknown special number
            record(1, 0, varint(31 | 1 << 6) + struct.pack("<d", -1.0)),  # sign flag 0
            record(1, 0, varint(31 | 1 << 5 | 1 << 6) + struct.pack("<d", 1.0)),  # flag 1
            b"T" + record(1, 0, varint(31))[1:],                # not a record
        ]
        whole = record(1, 0, raw_double(-1.0))
        bad += [whole[:cut] for cut in range(len(whole))]
        for value in bad:
            with self.subTest(value=value), self.assertRaises(rankwire.FormatError):
                logs.decode_record(layout, "x", value)
        with self.assertRaises(rankwire.FormatError):  # A record without a layout.
            logs.decode_key({b"a": record(1, 0, varint(31))})
        with self.assertRaises(rankwire.FormatError):  # Position slots are version 2 only.
            logs.Layout(b"L\x01" + varint(1) + lp(b"p=") + b"\x05" + lp(b"") + varint(0))
        for cut in range(len(V1_LAYOUT)):
            with self.subTest(cut=cut), self.assertRaises(rankwire.FormatError):
                logs.Layout(V1_LAYOUT[:cut])


class NumbersTest(unittest.TestCase):
    def test_format_number_is_printf_g(self):
        cases = [(0.0, b"0"), (-0.0, b"-0"), (f32(1e-40), b"9.99995e-41"),
                 (f32(1.5e-5), b"1.5e-05"), (1e6, b"1e+06"), (float("inf"), b"inf"),
                 (float("-inf"), b"-inf"), (float("nan"), b"nan"), (-float("nan"), b"nan"),
                 # Exact ties round to even, as glibc's printf does.
                 (1234565.0, b"1.23456e+06"), (1234575.0, b"1.23458e+06")]
        for x, text in cases:
            self.assertEqual(logs.format_number(x), text, x)

    def test_format_number_equals_the_c_library_printf(self):
        # LOGS.md: a number prints as C's printf("%.6g") of the binary32
        # widened to a double (NaN as "nan"). Checked against this
        # machine's libc over random binary32 bit patterns and exact ties.
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c"))
        except OSError:
            self.skipTest("no C library to compare with")
        buf = ctypes.create_string_buffer(64)

        def printf_g(x):
            libc.snprintf(buf, 64, b"%.6g", ctypes.c_double(x))
            return b"nan" if b"nan" in buf.value else buf.value

        rng = random.Random(35)
        bits = [rng.getrandbits(32) for _ in range(100000)]
        values = [x for (x,) in F32.iter_unpack(struct.pack("<%dI" % len(bits), *bits))]
        values += [float(v) for v in range(1000005, 16777216, 1000)]  # x.xxxxx5e+06 ties
        values += [f32(x) for x in (0.5, 0.25, 1.5, 2.5e-5, 1234565.0)]
        mismatches = [(x, printf_g(x), logs.format_number(x)) for x in values
                      if printf_g(x) != logs.format_number(x)]
        self.assertEqual(mismatches[:5], [])


if __name__ == "__main__":
    unittest.main()
