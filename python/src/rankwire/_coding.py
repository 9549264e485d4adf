"""Bounds-checked reading of docs/FORMAT.md's primitive types.

The one home of varints, fixed-width numbers and length prefixes for every
reader in this package (rankbin, the response envelope, stored logs), as
codec/coding.h is for the C++ codecs. Functions take the buffer, a position
and the end of the innermost bound, and return the value and the next
position; none reads past `end`. Errors name what was being read and the
offset in the buffer.

Private to the package.
"""

from __future__ import annotations

import struct
from typing import Tuple, Union

from .errors import FormatError, TruncatedError

Buffer = Union[bytes, bytearray, memoryview]

U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
F32 = struct.Struct("<f")
F64 = struct.Struct("<d")

_UINT32_MAX = 0xFFFFFFFF


def truncated(context: str, what: str, pos: int) -> TruncatedError:
    return TruncatedError(f"{context}: truncated {what} at offset {pos}")


def corrupt(context: str, problem: str, pos: int) -> FormatError:
    return FormatError(f"{context}: {problem} at offset {pos}")


def varint(buf: Buffer, p: int, end: int, what: str) -> Tuple[int, int]:
    """The unsigned LEB128 varint at p (at most 10 bytes, at most 64 bits)."""
    if p < end:
        b = buf[p]
        if b < 0x80:
            return b, p + 1
    return _varint_slow(buf, p, end, what)


def _varint_slow(buf: Buffer, p: int, end: int, what: str) -> Tuple[int, int]:
    result = 0
    shift = 0
    start = p
    while shift < 64 and p < end:
        b = buf[p]
        p += 1
        if shift == 63 and b > 1:
            raise corrupt("varint", f"{what} overflows 64 bits", start)
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, p
        shift += 7
    if p >= end:
        raise truncated("varint", what, start)
    raise corrupt("varint", f"{what} is longer than 10 bytes", start)


def varint32(buf: Buffer, p: int, end: int, what: str) -> Tuple[int, int]:
    """A varint whose value must fit in 32 bits."""
    v, q = varint(buf, p, end, what)
    if v > _UINT32_MAX:
        raise corrupt("varint", f"{what} exceeds 32 bits", p)
    return v, q


def count(buf: Buffer, p: int, end: int, min_bytes_each: int, what: str) -> Tuple[int, int]:
    """An element count, rejected when `end` cannot hold that many elements
    of at least `min_bytes_each` bytes (before anything is sized by it)."""
    n, q = varint(buf, p, end, what)
    if min_bytes_each > 0 and n > (end - q) // min_bytes_each:
        raise corrupt("count", f"{what} {n} exceeds the remaining {end - q} bytes", p)
    return n, q


def length_prefixed(buf: Buffer, p: int, end: int, what: str) -> Tuple[int, int]:
    """(start, stop) of a varint length and the bytes it announces."""
    n, q = varint(buf, p, end, what)
    if n > end - q:
        raise truncated("bytes", f"{what} of {n} bytes", p)
    return q, q + n


def u32(buf: Buffer, p: int, end: int, what: str) -> int:
    if end - p < 4:
        raise truncated("fixed32", what, p)
    return U32.unpack_from(buf, p)[0]


def text(buf: Buffer, start: int, stop: int) -> str:
    """UTF-8 bytes as str. Readers do not validate UTF-8 (FORMAT.md): bytes
    that are not UTF-8 come back as lone surrogates, and
    `s.encode("utf-8", "surrogateescape")` gives the exact bytes back."""
    return str(buf[start:stop], "utf-8", "surrogateescape")
