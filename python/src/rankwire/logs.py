"""Stored per-item logs read straight from Redis (docs/LOGS.md).

Most callers do not need this: Client.fetch_logs asks the server, which
reads whichever store it uses and returns text. This module is for callers
that read the log store's Redis themselves:

    values = redis.hmget(result.header.log_key, "", *item_ids)   # layout first
    lines = rankwire.logs.decode_values(item_ids, values[0], values[1:])

A request's logs are one hash, key "rank:log:<request_id>", one field per
item id plus field "" (the request's layout when items are stored as
records). Each value starts with a tag: 'T' text, 'Z' a zstd frame of the
text, 'R' a record rendered with the layout ('L').

NOTE: this follows docs/LOGS.md as of the record layout version 1. The
stored layout is being redesigned (issue #35); this module is the one place
in the package that knows it and must follow the new LOGS.md.
"""

from __future__ import annotations

import struct
from typing import Dict, List, Optional, Sequence, Union

from ._coding import length_prefixed, varint
from ._zstd import decompress_exact
from .errors import FormatError

__all__ = ["Layout", "render_record", "decode_value", "decode_values", "MAX_LOG_BYTES"]

SLOT_ITEM_ID, SLOT_INT, SLOT_STRING, SLOT_NUMBER = 1, 2, 3, 4
_SCALE_BIAS = 24
_SPECIAL = 31
_F64 = struct.Struct("<d")
#: Largest line a 'Z' value may decompress to.
MAX_LOG_BYTES = 4 << 20

Bytes = Union[bytes, bytearray, memoryview]


def _bytes(value: Union[str, Bytes]) -> bytes:
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)


class Layout:
    """A request's layout (the 'L' value of field ""): the literal pieces
    between slots, each slot's kind, and the string table."""

    def __init__(self, value: Bytes) -> None:
        data = bytes(value)
        end = len(data)
        if end < 2 or data[0] != ord("L"):
            raise FormatError("logs: not a layout value")
        if data[1] != 1:
            raise FormatError(f"logs: unknown layout version {data[1]}")
        slots, p = varint(data, 2, end, "layout slot count")
        self.pieces: List[bytes] = []
        self.kinds: List[int] = []
        for _ in range(slots):
            a, p = length_prefixed(data, p, end, "layout piece")
            self.pieces.append(data[a:p])
            if p >= end:
                raise FormatError("logs: layout cut short before a slot kind")
            kind = data[p]
            p += 1
            if kind not in (SLOT_ITEM_ID, SLOT_INT, SLOT_STRING, SLOT_NUMBER):
                raise FormatError(f"logs: unknown slot kind {kind}")
            self.kinds.append(kind)
        a, p = length_prefixed(data, p, end, "layout last piece")
        self.pieces.append(data[a:p])
        strings, p = varint(data, p, end, "layout string count")
        self.strings: List[bytes] = []
        for _ in range(strings):
            a, p = length_prefixed(data, p, end, "layout string")
            self.strings.append(data[a:p])
        if p != end:
            raise FormatError("logs: bytes after the layout")


def _six_digits(x: float) -> bytes:
    """Six significant digits, as C's printf("%g") and absl::SixDigits."""
    return ("%g" % x).encode()


def _number(data: bytes, p: int, end: int) -> "tuple[float, int]":
    u, p = varint(data, p, end, "record number")
    code, negative, n = u & 31, (u >> 5) & 1, u >> 6
    if code != _SPECIAL:
        if not 1 <= n <= 999999:
            raise FormatError("logs: number digits out of range")
        x = float(f"{n}e{code - _SCALE_BIAS}")
    elif n == 0:
        x = 0.0
    elif n == 1:
        if end - p < 8:
            raise FormatError("logs: record cut short in a raw double")
        x = abs(_F64.unpack_from(data, p)[0])
        p += 8
    else:
        raise FormatError("logs: unknown special number")
    return (-x if negative else x), p


def render_record(layout: Layout, item_id: Union[str, Bytes], value: Bytes) -> str:
    """The log line an 'R' value holds, rendered with the request's layout."""
    data = bytes(value)
    end = len(data)
    if end < 1 or data[0] != ord("R"):
        raise FormatError("logs: not a record value")
    p = 1
    out = bytearray()
    for piece, kind in zip(layout.pieces, layout.kinds):
        out += piece
        if kind == SLOT_ITEM_ID:
            out += _bytes(item_id)
        elif kind == SLOT_INT:
            z, p = varint(data, p, end, "record int")
            out += str((z >> 1) ^ -(z & 1)).encode()
        elif kind == SLOT_STRING:
            index, p = varint(data, p, end, "record string index")
            if index >= len(layout.strings):
                raise FormatError("logs: string index out of range")
            out += layout.strings[index]
        else:
            x, p = _number(data, p, end)
            out += _six_digits(x)
    if p != end:
        raise FormatError("logs: bytes after the record's last slot")
    out += layout.pieces[-1]
    return str(out, "utf-8", "surrogateescape")


def decode_value(layout_value: Optional[Bytes], item_id: Union[str, Bytes],
                 value: Bytes) -> str:
    """The log line of `item_id` from its stored value; `layout_value` is
    field "" of the same hash (needed for 'R' values only)."""
    tag = bytes(value[:1])
    if tag == b"T":
        return str(bytes(value[1:]), "utf-8", "surrogateescape")
    if tag == b"Z":
        frame = bytes(value[1:])
        import zstandard
        try:
            size = zstandard.frame_content_size(frame)
        except zstandard.ZstdError as e:
            raise FormatError(f"logs: not a zstd frame ({e})") from e
        if size < 0 or size > MAX_LOG_BYTES:
            raise FormatError(f"logs: zstd value declares {size} bytes "
                              f"(at most {MAX_LOG_BYTES})")
        return str(decompress_exact(frame, size), "utf-8", "surrogateescape")
    if tag == b"R":
        if layout_value is None:
            raise FormatError("logs: a record value without a layout")
        return render_record(Layout(layout_value), item_id, value)
    raise FormatError(f"logs: unknown value tag {tag!r}")


def decode_values(item_ids: Sequence[Union[str, Bytes]], layout_value: Optional[Bytes],
                  values: Sequence[Optional[Bytes]]) -> Dict[str, Optional[str]]:
    """The reply of `HMGET key "" id...` decoded: item id -> line, None for
    a nil value (no log: never written, dropped, or expired)."""
    layout = Layout(layout_value) if layout_value is not None else None
    out: Dict[str, Optional[str]] = {}
    for item_id, value in zip(item_ids, values):
        key = item_id if isinstance(item_id, str) else str(bytes(item_id), "utf-8",
                                                               "surrogateescape")
        if value is None:
            out[key] = None
        elif bytes(value[:1]) == b"R":
            if layout is None:
                raise FormatError("logs: a record value without a layout")
            out[key] = render_record(layout, item_id, value)
        else:
            out[key] = decode_value(None, item_id, value)
    return out
