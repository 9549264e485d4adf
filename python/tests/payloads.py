"""A small writer of rankbin payloads for the unit tests, from docs/FORMAT.md.

Test-only and deliberately plain: it writes what a test asks for, including
what a real writer never would (unknown sections and type codes, zstd
blocks without checksums, overlong varints), so the reader's handling of
each can be checked. The payloads real servers write are checked against
the C++ reader in tests/interop/test_python_conformance.py.

    payload = build(keys=[(DOUBLE, "score.ctr", None)], shapes=[[0]],
                    items=[Item("sku-1", 0.5, 1, 0, [0.25], log="hi")])
"""

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import zstandard

INT, FLOAT, DOUBLE, STRING, STRING_DICT = 0x00, 0x09, 0x12, 0x1B, 0x20
RAW, ZSTD, ZSTD_NO_CHECKSUM = "raw", "zstd", "zstd-no-checksum"


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def lp(data: bytes) -> bytes:
    return varint(len(data)) + data


def section(sid: int, body: bytes) -> bytes:
    return bytes([sid]) + struct.pack("<I", len(body)) + body


@dataclass
class Item:
    id: str
    score: float
    position: int
    shape: int
    values: Sequence[object]
    log: str = ""


def encode_value(code: int, value: object, dictionary: Optional[List[str]]) -> bytes:
    """A value by its key's type code; bytes are written as they are (values
    of unknown types, or what a writer would not write)."""
    if isinstance(value, bytes):
        return value
    if code == INT:
        return varint(zigzag(value))  # type: ignore[arg-type]
    if code == FLOAT:
        return struct.pack("<f", value)
    if code == DOUBLE:
        return struct.pack("<d", value)
    if code == STRING:
        return lp(value.encode())  # type: ignore[union-attr]
    if code == STRING_DICT:
        assert dictionary is not None
        return varint(dictionary.index(value))  # type: ignore[arg-type]
    raise ValueError(f"no encoding of {value!r} for type code {code:#x}")


def blocks(raws: Sequence[bytes], codecs: Sequence[str]) -> bytes:
    entries, data = bytearray(), bytearray()
    for raw, codec in zip(raws, codecs):
        if codec == RAW:
            stored, code = raw, 0
        else:
            c = zstandard.ZstdCompressor(write_checksum=codec == ZSTD, write_content_size=True)
            stored, code = c.compress(raw), 1
        entries += struct.pack("<BII", code, len(stored), len(raw))
        data += stored
    return varint(len(raws)) + bytes(entries) + bytes(data)


def build(keys: Sequence[Tuple[int, str, Optional[List[str]]]], shapes: Sequence[Sequence[int]],
          items: Sequence[Item], block_items: int = 16, values_codec: str = RAW,
          logs_codec: Optional[str] = RAW, minor: int = 1,
          extra_sections: Sequence[Tuple[int, bytes]] = ()) -> bytes:
    """A payload; logs_codec None leaves the LOGS section out."""
    key_body = varint(len(keys))
    for code, name, dictionary in keys:
        entry = bytes([code]) + lp(name.encode())
        if code == STRING_DICT:
            entry += varint(len(dictionary)) + b"".join(lp(d.encode()) for d in dictionary)
        key_body += lp(entry)
    shape_body = varint(len(shapes)) + b"".join(
        varint(len(s)) + b"".join(varint(k) for k in s) for s in shapes)
    block_count = -(-len(items) // block_items)
    value_blocks, log_blocks, records = [], [], []
    for b in range(block_count):
        vb, lb = bytearray(), bytearray()
        for item in items[b * block_items:(b + 1) * block_items]:
            offset = len(vb)
            for k, v in zip(shapes[item.shape], item.values):
                vb += encode_value(keys[k][0], v, keys[k][2])
            lb += lp(item.log.encode())
            records.append(lp(item.id.encode()) + struct.pack("<d", item.score) +
                           varint(item.position) + varint(item.shape) + varint(offset))
        value_blocks.append(bytes(vb))
        log_blocks.append(bytes(lb))
    directory, offset = bytearray(), 0
    for r in records:
        directory += struct.pack("<I", offset)
        offset += len(r)
    items_body = varint(len(items)) + varint(block_items) + bytes(directory) + b"".join(records)
    sections = [section(1, key_body), section(2, shape_body),
                section(4, blocks(value_blocks, [values_codec] * block_count))]
    if logs_codec is not None:
        sections.append(section(5, blocks(log_blocks, [logs_codec] * block_count)))
    sections.append(section(3, items_body))
    sections += [section(sid, body) for sid, body in extra_sections]
    return b"RKWB" + bytes([1, minor]) + struct.pack("<H", len(sections)) + b"".join(sections)


def worked_example() -> bytes:
    """The 164 bytes of docs/FORMAT.md's worked example, read from the page."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "FORMAT.md").read_text()
    block = doc.split("## Worked example", 1)[1].split("```", 2)[1]
    hexbytes: List[str] = []
    for line in block.splitlines():
        # Each line is hex bytes, then two or more spaces, then a comment.
        hexbytes += re.split(r"\s{2,}", line.strip())[0].split()
    return bytes(int(h, 16) for h in hexbytes)


@dataclass
class Sections:
    """Where a payload's sections are (for tests that damage one)."""

    spans: dict = field(default_factory=dict)

    @classmethod
    def of(cls, payload: bytes) -> "Sections":
        out = cls()
        p = 8
        for _ in range(struct.unpack_from("<H", payload, 6)[0]):
            sid, length = payload[p], struct.unpack_from("<I", payload, p + 1)[0]
            out.spans[sid] = (p + 5, p + 5 + length)
            p += 5 + length
        return out

    def block_spans(self, payload: bytes, sid: int) -> List[Tuple[int, int]]:
        """(start, end) of each block's stored bytes in a VALUES/LOGS section."""
        start, _ = self.spans[sid]
        count, p = payload[start], start + 1  # Test payloads have < 128 blocks.
        data = p + 9 * count
        out = []
        for b in range(count):
            stored = struct.unpack_from("<I", payload, p + 9 * b + 1)[0]
            out.append((data, data + stored))
            data += stored
        return out
