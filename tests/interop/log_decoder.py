"""Reference decoder of rankwire's stored log values, from docs/LOGS.md alone.

A request's logs are one Redis hash, key "rank:log:<request_id>", one field
per item id plus field "" (the request's layout). Values start with a tag:

  'T' + text          the log line
  'Z' + zstd frame    the log line, compressed
  'R' + record        the line's values; rendered with the layout
  'L' + layout        (field "" only) literal text, slot kinds, strings

    values = redis.hgetall("rank:log:req-1")        # or HMGET key "" item...
    layout = values.get(b"")
    text = decode_value(layout, b"sku-1", values[b"sku-1"])
"""

import struct

SLOT_ITEM_ID, SLOT_INT, SLOT_STRING, SLOT_NUMBER = 1, 2, 3, 4
SCALE_BIAS = 24
SPECIAL = 31


class FormatError(ValueError):
    pass


class _Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def byte(self):
        if self.pos >= len(self.data):
            raise FormatError("truncated")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self):
        result, shift = 0, 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
            if shift > 63:
                raise FormatError("varint too long")

    def bytes(self, n):
        if self.pos + n > len(self.data):
            raise FormatError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def length_prefixed(self):
        return self.bytes(self.varint())

    def done(self):
        return self.pos == len(self.data)


class Layout:
    def __init__(self, value):
        r = _Reader(value)
        if r.byte() != ord("L"):
            raise FormatError("not a layout")
        if r.byte() != 1:
            raise FormatError("unknown layout version")
        slots = r.varint()
        self.pieces, self.kinds = [], []
        for _ in range(slots):
            self.pieces.append(r.length_prefixed())
            kind = r.byte()
            if kind not in (SLOT_ITEM_ID, SLOT_INT, SLOT_STRING, SLOT_NUMBER):
                raise FormatError(f"unknown slot kind {kind}")
            self.kinds.append(kind)
        self.pieces.append(r.length_prefixed())
        self.strings = [r.length_prefixed() for _ in range(r.varint())]
        if not r.done():
            raise FormatError("trailing bytes")


def six_digits(x):
    """Six significant digits, as C's printf("%g") and absl::SixDigits."""
    return ("%g" % x).encode()


def render_record(layout, item_id, value):
    r = _Reader(value)
    if r.byte() != ord("R"):
        raise FormatError("not a record")
    out = bytearray()
    for piece, kind in zip(layout.pieces, layout.kinds):
        out += piece
        if kind == SLOT_ITEM_ID:
            out += item_id
        elif kind == SLOT_INT:
            z = r.varint()
            out += str((z >> 1) ^ -(z & 1)).encode()  # zigzag
        elif kind == SLOT_STRING:
            index = r.varint()
            if index >= len(layout.strings):
                raise FormatError("string index out of range")
            out += layout.strings[index]
        else:
            u = r.varint()
            code, negative, n = u & 31, (u >> 5) & 1, u >> 6
            if code != SPECIAL:
                if not 1 <= n <= 999999:
                    raise FormatError("number digits out of range")
                x = float(f"{n}e{code - SCALE_BIAS}")
            elif n == 0:
                x = 0.0
            elif n == 1:
                x = abs(struct.unpack("<d", r.bytes(8))[0])
            else:
                raise FormatError("unknown special number")
            out += six_digits(-x if negative else x)
    if not r.done():
        raise FormatError("trailing bytes")
    out += layout.pieces[-1]
    return bytes(out)


def decode_value(layout_value, item_id, value):
    """The log line (bytes) of `item_id` from its stored value."""
    tag = value[:1]
    if tag == b"T":
        return value[1:]
    if tag == b"Z":
        import zstandard
        return zstandard.ZstdDecompressor().decompress(value[1:], max_output_size=4 << 20)
    if tag == b"R":
        if layout_value is None:
            raise FormatError("record without a layout")
        return render_record(Layout(layout_value), item_id, value)
    raise FormatError(f"unknown tag {tag!r}")
