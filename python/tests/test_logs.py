"""rankwire.logs: stored log values per docs/LOGS.md (record layout 1).
Against a real Redis and server: tests/interop/test_log_decoder.py."""

import struct
import unittest

import zstandard

import rankwire
from rankwire import logs

from tests.payloads import lp, varint, zigzag

# "item=<id> pos=<int> src=<string> p=<number>|"
LAYOUT = (b"L\x01" + varint(4) +
          lp(b"item=") + bytes([logs.SLOT_ITEM_ID]) + lp(b" pos=") + bytes([logs.SLOT_INT]) +
          lp(b" src=") + bytes([logs.SLOT_STRING]) + lp(b" p=") + bytes([logs.SLOT_NUMBER]) +
          lp(b"|") + varint(2) + lp(b"bm25") + lp(b"ann"))


def record(pos, src, number):
    return b"R" + varint(zigzag(pos)) + varint(src) + number


class LogValuesTest(unittest.TestCase):
    def test_record_rendered_with_the_layout(self):
        # LOGS.md's example: 0.123456 is n = 123456, code 18: varint 92 a0 e2 03.
        value = record(7, 1, bytes.fromhex("92a0e203"))
        self.assertEqual(logs.decode_value(LAYOUT, "sku-1", value),
                         "item=sku-1 pos=7 src=ann p=0.123456|")
        negative_zero = varint(31 | 1 << 5)
        self.assertEqual(logs.decode_value(LAYOUT, b"x", record(-3, 0, negative_zero)),
                         "item=x pos=-3 src=bm25 p=-0|")
        raw_double = varint(31 | 1 << 6) + struct.pack("<d", 1e300)
        self.assertEqual(logs.decode_value(LAYOUT, "x", record(1, 0, raw_double)),
                         "item=x pos=1 src=bm25 p=1e+300|")

    def test_text_and_zstd_values(self):
        self.assertEqual(logs.decode_value(None, "x", b"Tplain line"), "plain line")
        frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"squeezed line")
        self.assertEqual(logs.decode_value(None, "x", b"Z" + frame), "squeezed line")

    def test_decode_values_of_an_hmget_reply(self):
        lines = logs.decode_values(["a", "b", "c"], LAYOUT,
                                   [record(1, 0, varint(31)), None, b"Ttext"])
        self.assertEqual(lines, {"a": "item=a pos=1 src=bm25 p=0|", "b": None, "c": "text"})

    def test_corrupt_values_raise_format_errors(self):
        bad = [
            (None, b"R\x01"),                       # a record without its layout
            (LAYOUT, b"R" + varint(2)),              # cut short
            (LAYOUT, record(1, 5, varint(31))),      # string index out of range
            (LAYOUT, record(1, 0, varint(31)) + b"\x00"),  # bytes after the last slot
            (LAYOUT, record(1, 0, varint(24))),      # digits 0
            (LAYOUT, record(1, 0, varint(31 | 2 << 6))),  # unknown special number
            (b"L\x01\x05", record(1, 0, varint(31))),    # layout cut short
            (b"L\x02" + LAYOUT[2:], record(1, 0, varint(31))),  # layout version 2
            (None, b"Q"),                           # unknown tag
            (None, b"Znot a frame"),
        ]
        for layout, value in bad:
            with self.subTest(value=value), self.assertRaises(rankwire.FormatError):
                logs.decode_value(layout, "x", value)


if __name__ == "__main__":
    unittest.main()
