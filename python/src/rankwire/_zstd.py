"""The zstd step of rankbin-zstd blocks (and of stored 'Z' log values).

One piece of code, apart from the layout (as codec/compression.h is for the
C++ codecs): `check_block_frame` applies docs/FORMAT.md's rules for a
block's frame, `decompress_exact` decodes it to exactly the declared size
and verifies zstd's content checksum. Uses Debian's python3-zstandard.

Private to the package.
"""

from __future__ import annotations

import threading
from typing import Optional, Tuple, Union

import zstandard

from .errors import ChecksumError, FormatError

_MAGIC = b"\x28\xb5\x2f\xfd"
_CHECKSUM_FLAG = 1 << 2
_DICTIONARY_ID_FLAGS = 3
_SINGLE_SEGMENT_FLAG = 1 << 5
# Bit 4 is unused and bit 3 reserved; writers leave both 0.
_UNUSED_FLAGS = 3 << 3
# A window log of at most 31 (zstd's largest on 64-bit builds).
_MAX_WINDOW_EXPONENT = 21

Frame = Union[bytes, bytearray, memoryview]

_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    # A ZstdDecompressor must not be used by two threads at once.
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = _local.decompressor = zstandard.ZstdDecompressor()
    return d


def _frame(frame: Frame) -> Tuple[int, int, Optional[int], int]:
    """(descriptor, window byte or -1, declared content size or None, end of
    the frame) of the one zstd frame `frame` must start with (RFC 8878,
    3.1.1); raises FormatError on a skippable or cut frame."""
    n = len(frame)
    if n < 5:
        raise FormatError(f"zstd: frame of {n} bytes is too short")
    if bytes(frame[:4]) != _MAGIC:
        raise FormatError("zstd: not a zstd frame (skippable frames are not allowed)")
    descriptor = frame[4]
    single_segment = descriptor & _SINGLE_SEGMENT_FLAG
    size_flag = descriptor >> 6
    pos = 5
    window = -1
    if not single_segment:
        if pos >= n:
            raise FormatError("zstd: corrupt frame header")
        window = frame[pos]
        pos += 1
    pos += (0, 1, 2, 4)[descriptor & _DICTIONARY_ID_FLAGS]
    size_bytes = (1 if single_segment else 0, 2, 4, 8)[size_flag]
    if pos + size_bytes > n:
        raise FormatError("zstd: corrupt frame header")
    declared: Optional[int] = None
    if size_bytes:
        declared = int.from_bytes(frame[pos:pos + size_bytes], "little")
        if size_bytes == 2:
            declared += 256
    pos = _skip_blocks(frame, pos + size_bytes, n)
    if descriptor & _CHECKSUM_FLAG:
        pos += 4
    if pos > n:
        raise FormatError("zstd: corrupt frame: cut short")
    return descriptor, window, declared, pos


def check_block_frame(frame: Frame, raw_size: int, require_checksum: bool) -> None:
    """Raises FormatError unless `frame` is exactly one zstd frame (no
    skippable frame, nothing after it) naming no dictionary, declaring a
    content size of `raw_size`, with the unused and reserved descriptor
    bits 0, a window exponent of at most 21 and, if `require_checksum`
    (payloads of minor version >= 1), the content checksum flag."""
    descriptor, window, declared, end = _frame(frame)
    if descriptor & _UNUSED_FLAGS:
        raise FormatError("zstd: frame header sets an unused or reserved bit")
    if descriptor & _DICTIONARY_ID_FLAGS:
        raise FormatError("zstd: frame names a dictionary")
    if declared is None:
        raise FormatError("zstd: frame does not declare its content size")
    if require_checksum and not descriptor & _CHECKSUM_FLAG:
        raise FormatError("zstd: frame has no content checksum")
    if window >> 3 > _MAX_WINDOW_EXPONENT:
        raise FormatError("zstd: corrupt frame header (window too large)")
    if declared != raw_size:
        raise FormatError(f"zstd: frame declares {declared} bytes, the block {raw_size}")
    if end != len(frame):
        raise FormatError(f"zstd: {len(frame) - end} bytes after the frame")


def single_frame_size(frame: Frame) -> int:
    """The content size `frame` declares; raises FormatError unless it is
    exactly one zstd frame (no skippable frame, nothing after it) that
    declares its content size. (Stored 'Z' log values, docs/LOGS.md.)"""
    _, _, declared, end = _frame(frame)
    if declared is None:
        raise FormatError("zstd: frame does not declare its content size")
    if end != len(frame):
        raise FormatError(f"zstd: {len(frame) - end} bytes after the frame")
    return declared


def _skip_blocks(frame: Frame, pos: int, n: int) -> int:
    """The position after the frame's last block (RFC 8878, 3.1.1.2)."""
    while True:
        if pos + 3 > n:
            raise FormatError("zstd: corrupt frame: cut short")
        header = frame[pos] | frame[pos + 1] << 8 | frame[pos + 2] << 16
        last, kind, size = header & 1, (header >> 1) & 3, header >> 3
        if kind == 3:
            raise FormatError("zstd: corrupt frame: reserved block type")
        pos += 3 + (1 if kind == 1 else size)
        if last:
            return pos


def decompress_exact(frame: Frame, raw_size: int) -> bytes:
    """The frame's content, which must be exactly `raw_size` bytes.
    ChecksumError when zstd's content checksum does not match."""
    try:
        out = _decompressor().decompress(frame, max_output_size=raw_size)
    except zstandard.ZstdError as e:
        if "checksum" in str(e).lower():
            raise ChecksumError(f"zstd: content checksum mismatch ({e})") from e
        raise FormatError(f"zstd: corrupt frame: {e}") from e
    if len(out) != raw_size:
        raise FormatError(f"zstd: frame decompressed to {len(out)} bytes, expected {raw_size}")
    return out
