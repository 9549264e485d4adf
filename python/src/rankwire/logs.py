"""Stored per-item logs read straight from Redis (docs/LOGS.md).

Most callers do not need this: `Client.fetch_logs` asks the server, which
reads whichever store it uses and returns text. This module is for callers
that read the log store's Redis themselves. It is written from docs/LOGS.md
alone and reads every form that page specifies:

- layout version 3 (field ``""``), the top items (field ``"#0"``) and every
  item's values as columns (field ``"#1"``), what servers write with
  ``--log_format=columns``;
- text values (tag ``T``, or ``Z``: a zstd frame of the text), one field per
  item id, with ``--log_format=text``;
- layout version 2 and blocks (fields ``"#0"``, ``"#1"``, ...), and layout
  version 1 and per-item records (tag ``R``), from older servers.

Two entry points::

    # The items you show, in one round trip (two when some are not in "#0"),
    # given any function that runs HMGET on the request's key:
    lines = rankwire.logs.fetch(
        lambda fields: redis.hmget(rankwire.logs.key(request_id), fields), item_ids)
    # -> {item_id: line or None}

    # Everything a key holds (the reply of HGETALL as a dict):
    lines = rankwire.logs.decode_key(redis.hgetall(rankwire.logs.key(request_id)))
    # -> {item_id: line}

Lines and ids are `str`. Servers write UTF-8, but nothing here validates it:
bytes that are not UTF-8 come back as lone surrogates, and
``s.encode("utf-8", "surrogateescape")`` gives the stored bytes back.

Bad bytes never come back as a line: every value read is checked whole
against LOGS.md's refusals, whichever ids were asked for (an unknown tag,
another layout version, a varint not in its shortest form, bytes after a
value's last field, an index out of range, an empty or duplicate item id,
...) and raises a `rankwire.FormatError` (a `TruncatedError` when a value
is cut short). A value that would decode to more than a reader cap raises
a `rankwire.LimitError`. Functions are pure and thread-safe.
"""

from __future__ import annotations

import struct
from typing import (Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple,
                    Union)

from ._coding import truncated, varint
from ._zstd import decompress_exact, single_frame_size
from .errors import Error, FormatError, LimitError, UnsupportedVersionError

__all__ = [
    "KEY_PREFIX", "LAYOUT_FIELD", "MAX_LOG_BYTES", "MAX_ITEMS", "MAX_DECODED_BYTES",
    "SLOT_ITEM_ID", "SLOT_INT", "SLOT_STRING", "SLOT_NUMBER", "SLOT_POSITION",
    "SLOT_REQUEST_INDEX", "Layout", "Block", "Columns", "KeyRewrittenError",
    "key", "block_field", "decode_block", "decode_text", "decode_record",
    "decode_value", "decode_key", "fetch", "format_number",
]

#: Every request's hash is `KEY_PREFIX + request_id`.
KEY_PREFIX = b"rank:log:"
#: The field holding the request's layout (the empty string).
LAYOUT_FIELD = b""

#: Slot kinds (a layout's `kinds`); SLOT_POSITION is layout versions 2 and
#: 3 only, SLOT_REQUEST_INDEX version 3 only.
SLOT_ITEM_ID, SLOT_INT, SLOT_STRING, SLOT_NUMBER, SLOT_POSITION = 1, 2, 3, 4, 5
SLOT_REQUEST_INDEX = 6
_V1_KINDS = (SLOT_ITEM_ID, SLOT_INT, SLOT_STRING, SLOT_NUMBER)
_KINDS = {1: _V1_KINDS, 2: _V1_KINDS + (SLOT_POSITION,),
          3: _V1_KINDS + (SLOT_POSITION, SLOT_REQUEST_INDEX)}

# Number forms of a block's number column.
_FORM_RAW, _FORM_TOP_BYTE, _FORM_WHOLE, _FORM_CONSTANT, _FORM_TWO_TOPS, _FORM_DECIMAL = range(6)
_WHOLE_LIMIT = 1 << 24
_MAX_DECIMAL_SCALE = 6
_DECIMAL_LIMIT = 1 << 31
# 10^-k, each the binary64 nearest to it (Python reads "1e-2" as C does).
_TENTHS = (1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)

# Layout version 1 record numbers.
_SCALE_BIAS = 24
_SPECIAL = 31

#: Largest line a 'Z' value may decompress to (the server's cap).
MAX_LOG_BYTES = 4 << 20
#: Most items a layout may announce (a damaged count must not make the
#: reader ask Redis for billions of blocks).
MAX_ITEMS = 1 << 20
#: Most bytes of lines one block or one call may render (rendering repeats
#: the layout's text for every item, so a small damaged value could
#: otherwise ask for gigabytes).
MAX_DECODED_BYTES = 256 << 20

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")

Bytes = Union[bytes, bytearray, memoryview]
ItemId = Union[str, Bytes]
#: Runs `HMGET <the request's key> <fields...>` and returns the values in
#: order, None for a missing field.
Hmget = Callable[[List[bytes]], Sequence[Optional[Bytes]]]


class KeyRewrittenError(Error):
    """The key's layout changed between the two reads of `fetch` on every
    attempt: the request id is being written again and again."""


def key(request_id: ItemId) -> bytes:
    """The Redis key of a request's logs: ``rank:log:<request_id>``."""
    return KEY_PREFIX + _as_bytes(request_id)


def block_field(index: int) -> bytes:
    """The field name of block `index`: ``#0``, ``#1``, ..."""
    return b"#%d" % index


def format_number(x: float) -> bytes:
    """A number as the line prints it: C's ``printf("%.6g")`` of the double,
    with every NaN as ``nan``. Python's ``%g`` is exactly that."""
    return b"%g" % x


def _as_bytes(value: ItemId) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return bytes(value)


def _as_text(value: Bytes) -> str:
    return str(value, "utf-8", "surrogateescape")


def _corrupt(what: str) -> FormatError:
    return FormatError(f"logs: {what}")


def _varint(data: bytes, p: int, end: int, what: str) -> Tuple[int, int]:
    """A varint in its shortest form (LOGS.md: any other is damage)."""
    v, q = varint(data, p, end, what)
    if q - p > 1 and data[q - 1] == 0:
        raise _corrupt(f"{what}: a varint not in its shortest form at offset {p}")
    return v, q


def _count(data: bytes, p: int, end: int, min_bytes_each: int, what: str) -> Tuple[int, int]:
    n, p = _varint(data, p, end, what)
    if n * min_bytes_each > end - p:
        raise _corrupt(f"{what} {n} exceeds the remaining {end - p} bytes")
    return n, p


def _string(data: bytes, p: int, end: int, what: str) -> Tuple[int, int]:
    """A varint length, then that many bytes: (their start, their end)."""
    n, p = _varint(data, p, end, what)
    if n > end - p:
        raise truncated("logs", what, p)
    return p, p + n


class Layout:
    """A request's layout (the ``L`` value of field ``""``): the literal
    pieces around the slots, each slot's kind, the string table, and (for
    version 2) how its items are cut into blocks.

    `pieces` has one more entry than `kinds`: the text after the last slot.
    """

    __slots__ = ("raw", "version", "pieces", "kinds", "strings", "items", "top_items",
                 "block_items", "_literal")

    def __init__(self, value: Bytes) -> None:
        data = bytes(value)
        end = len(data)
        self.raw = data
        if end < 2:
            raise truncated("logs", "layout header", 0)
        if data[0] != ord("L"):
            raise _corrupt(f"field \"\" holds tag {data[:1]!r}, not a layout ('L')")
        self.version = data[1]
        p = 2
        self.items = self.top_items = self.block_items = 0
        if self.version not in _KINDS:
            raise UnsupportedVersionError(f"logs: unknown layout version {self.version}")
        if self.version >= 2:
            self.items, p = _varint(data, p, end, "layout item count")
            self.top_items, p = _varint(data, p, end, "layout top items")
            if self.version == 2:
                self.block_items, p = _varint(data, p, end, "layout block items")
            if self.items > MAX_ITEMS:
                raise LimitError(f"logs: the layout announces {self.items} items "
                                 f"(this reader's cap is {MAX_ITEMS})")
            if self.items > 0 and self.top_items == 0:
                raise _corrupt("layout has items but block 0 holds none (top_items 0)")
            if self.version == 2 and self.block_items == 0:
                raise _corrupt("layout has block_items 0")
            if self.version == 3 and (self.top_items > self.items or
                                      (self.items == 0) != (self.top_items == 0)):
                raise _corrupt(f"top_items {self.top_items} of {self.items} items")
        kinds = _KINDS[self.version]
        slots, p = _count(data, p, end, 2, "layout slot count")
        self.pieces: List[bytes] = []
        self.kinds: List[int] = []
        for _ in range(slots):
            a, p = _string(data, p, end, "layout piece")
            self.pieces.append(data[a:p])
            if p >= end:
                raise truncated("logs", "layout slot kind", p)
            kind = data[p]
            if kind not in kinds:
                raise _corrupt(f"unknown slot kind {kind} in a version {self.version} layout")
            self.kinds.append(kind)
            p += 1
        a, p = _string(data, p, end, "layout last piece")
        self.pieces.append(data[a:p])
        n, p = _count(data, p, end, 1, "layout string count")
        self.strings: List[bytes] = []
        for _ in range(n):
            a, p = _string(data, p, end, "layout string")
            self.strings.append(data[a:p])
        if p != end:
            raise _corrupt(f"{end - p} bytes after the layout")
        if self.version >= 2 and self.kinds.count(SLOT_ITEM_ID) != 1:
            raise _corrupt(f"a version {self.version} layout with "
                           f"{self.kinds.count(SLOT_ITEM_ID)} item id slots (it has exactly one)")
        self._literal = sum(len(piece) for piece in self.pieces)

    def block_count(self) -> int:
        """How many blocks hold the items (version 2): 0 without items."""
        if self.items == 0:
            return 0
        rest = max(self.items - self.top_items, 0)
        return 1 + -(-rest // self.block_items)

    def block_range(self, index: int) -> Tuple[int, int]:
        """[begin, end) of the 0-based positions block `index` holds."""
        if index == 0:
            return 0, min(self.top_items, self.items)
        begin = self.top_items + (index - 1) * self.block_items
        return begin, min(begin + self.block_items, self.items)

    def block_fields(self) -> List[bytes]:
        """The fields of every block: ``#0`` ... ``#<block_count - 1>``."""
        return [block_field(b) for b in range(self.block_count())]


class Block:
    """One decoded block: its items' ids in position order, and their lines
    rendered on demand (`line`, `lines`)."""

    __slots__ = ("layout", "index", "begin", "ids", "_columns")

    def __init__(self, layout: Layout, index: int, ids: List[bytes],
                 columns: List[List[bytes]]) -> None:
        self.layout = layout
        self.index = index
        self.begin = layout.block_range(index)[0]
        self.ids = ids
        self._columns = columns

    def __len__(self) -> int:
        return len(self.ids)

    def values(self, j: int) -> List[bytes]:
        """The text of each slot's value for the block's item `j`, in slot
        order (the line is the layout's pieces with these in between)."""
        return [column[j] for column in self._columns]

    def line_bytes(self, j: int) -> bytes:
        """The line of the block's item `j` (0-based), as bytes."""
        pieces = self.layout.pieces
        out = [pieces[0]]
        for slot, column in enumerate(self._columns):
            out.append(column[j])
            out.append(pieces[slot + 1])
        return b"".join(out)

    def line(self, j: int) -> str:
        """The line of the block's item `j` (0-based)."""
        return _as_text(self.line_bytes(j))

    def lines(self) -> Iterator[Tuple[str, str]]:
        """(item id, line) of every item, in position order."""
        for j, item_id in enumerate(self.ids):
            yield _as_text(item_id), self.line(j)

    def rendered_bytes(self) -> int:
        """How many bytes `lines` renders."""
        return (len(self.ids) * self.layout._literal +
                sum(len(v) for column in self._columns for v in column))


def decode_block(layout: Layout, index: int, value: Bytes) -> Block:
    """Block `index` of a version 2 layout (the value of field ``#<index>``)."""
    if layout.version != 2:
        raise _corrupt(f"a block read with a version {layout.version} layout")
    if not 0 <= index < layout.block_count():
        raise _corrupt(f"block {index} of a layout with {layout.block_count()} blocks")
    data = bytes(value)
    end = len(data)
    if end < 1:
        raise truncated("logs", "block tag", 0)
    if data[0] != ord("B"):
        raise _corrupt(f"block {index} holds tag {data[:1]!r}, not a block ('B')")
    begin, stop = layout.block_range(index)
    expected = stop - begin
    # The item id column holds at least one byte per item.
    n, p = _count(data, 1, end, 1, "block item count")
    if n != expected:
        raise _corrupt(f"block {index} holds {n} items; its layout says {expected}")
    columns: List[List[bytes]] = []
    ids: Optional[List[bytes]] = None
    strings = layout.strings
    for kind in layout.kinds:
        column: List[bytes]
        if kind == SLOT_ITEM_ID:
            a, p = _string(data, p, end, "item id prefix")
            prefix = data[a:p]
            column = []
            for _ in range(n):
                a, p = _string(data, p, end, "item id suffix")
                column.append(prefix + data[a:p])
                if not column[-1]:
                    raise _corrupt(f"an empty item id in block {index}")
            ids = column
        elif kind == SLOT_INT:
            column = []
            for _ in range(n):
                z, p = _varint(data, p, end, "int")
                column.append(b"%d" % ((z >> 1) ^ -(z & 1)))
        elif kind == SLOT_STRING:
            column = []
            for _ in range(n):
                i, p = _varint(data, p, end, "string index")
                if i >= len(strings):
                    raise _corrupt(f"string index {i} of a table of {len(strings)}")
                column.append(strings[i])
        elif kind == SLOT_NUMBER:
            column, p = _number_column(data, p, end, n)
        else:  # SLOT_POSITION
            column = [b"%d" % (begin + j + 1) for j in range(n)]
        columns.append(column)
    if p != end:
        raise _corrupt(f"{end - p} bytes after block {index}'s last column")
    assert ids is not None  # Layout requires exactly one item id slot.
    block = Block(layout, index, ids, columns)
    if block.rendered_bytes() > MAX_DECODED_BYTES:
        raise LimitError(f"logs: block {index} would render {block.rendered_bytes()} bytes "
                         f"(this reader's cap is {MAX_DECODED_BYTES})")
    return block


def _number_column(data: bytes, p: int, end: int, n: int) -> Tuple[List[bytes], int]:
    if p >= end:
        raise truncated("logs", "number form", p)
    form = data[p]
    p += 1
    if form == _FORM_RAW:
        stop = p + 4 * n
        if stop > end:
            raise truncated("logs", f"{n} raw numbers", p)
        column = [format_number(x) for (x,) in _F32.iter_unpack(data[p:stop])]
        return column, stop
    if form == _FORM_TOP_BYTE:
        if p >= end:
            raise truncated("logs", "number top byte", p)
        top = data[p:p + 1]
        p += 1
        stop = p + 3 * n
        if stop > end:
            raise truncated("logs", f"{n} top-byte numbers", p)
        # Each value is its 3 low bytes, little-endian, then the shared top byte.
        raw = b"".join(data[q:q + 3] + top for q in range(p, stop, 3))
        return [format_number(x) for (x,) in _F32.iter_unpack(raw)], stop
    if form == _FORM_WHOLE:
        column = []
        for _ in range(n):
            z, p = _varint(data, p, end, "whole number")
            v = (z >> 1) ^ -(z & 1)
            if not -_WHOLE_LIMIT < v < _WHOLE_LIMIT:
                raise _corrupt(f"whole number {v} is not below 2^24 in magnitude")
            column.append(format_number(float(v)))
        return column, p
    if form == _FORM_CONSTANT:
        if end - p < 4:
            raise truncated("logs", "constant number", p)
        text = format_number(_F32.unpack_from(data, p)[0])
        return [text] * n, p + 4
    if form == _FORM_TWO_TOPS:
        return _two_tops_column(data, p, end, n)
    if form == _FORM_DECIMAL:
        if p >= end:
            raise truncated("logs", "decimal scale", p)
        scale = data[p]
        p += 1
        if not 1 <= scale <= _MAX_DECIMAL_SCALE:
            raise _corrupt(f"decimal scale {scale} (1..{_MAX_DECIMAL_SCALE})")
        column = []
        for _ in range(n):
            z, p = _varint(data, p, end, "decimal digits")
            d = (z >> 1) ^ -(z & 1)
            if not -_DECIMAL_LIMIT < d < _DECIMAL_LIMIT:
                raise _corrupt(f"decimal digits {d} are not below 2^31 in magnitude")
            # The binary32 of the binary64 product d * 10^-k.
            column.append(format_number(_F32.unpack(_F32.pack(d * _TENTHS[scale]))[0]))
        return column, p
    raise _corrupt(f"unknown number form {form}")


def _two_tops_column(data: bytes, p: int, end: int, n: int) -> Tuple[List[bytes], int]:
    if end - p < 2:
        raise truncated("logs", "two top bytes", p)
    tops = (data[p:p + 1], data[p + 1:p + 2])
    p += 2
    bits_end = p + (n + 7) // 8
    stop = bits_end + 3 * n
    if stop > end:
        raise truncated("logs", f"{n} two-top-byte numbers", p)
    bits = data[p:bits_end]
    if tops[0] >= tops[1]:
        raise _corrupt("two top bytes not in increasing order")
    if n % 8 and bits[-1] >> (n % 8):
        raise _corrupt("top byte bits set past the last item")
    chosen = [(bits[j // 8] >> (j % 8)) & 1 for j in range(n)]
    if sum(chosen) in (0, n):
        raise _corrupt("a two-top-byte column that uses one of them")
    # Each value is its 3 low bytes, little-endian, then the top byte its bit chose.
    raw = b"".join(data[q:q + 3] + tops[chosen[j]]
                   for j, q in enumerate(range(bits_end, stop, 3)))
    return [format_number(x) for (x,) in _F32.iter_unpack(raw)], stop


# --- Layout version 3 (columns): "#0" holds the top items, "#1" every item. ---

_INT_FORMATS = {1: "<%dB", 2: "<%dH", 4: "<%dI"}
_COLUMN_RAW, _COLUMN_CONSTANT, _COLUMN_TOP_BYTE, _COLUMN_WHOLE = range(4)


def _ints(data: bytes, p: int, end: int, n: int, what: str) -> Tuple[List[int], int]:
    """An integer array: width (1, 2 or 4), then n little-endian values."""
    if p >= end:
        raise truncated("logs", what, p)
    width = data[p]
    if width not in _INT_FORMATS:
        raise _corrupt(f"{what}: integer width {width} (1, 2 or 4)")
    stop = p + 1 + width * n
    if stop > end:
        raise truncated("logs", what, p)
    return list(struct.unpack_from(_INT_FORMATS[width] % n, data, p + 1)), stop


def _columns_numbers(data: bytes, p: int, end: int, n: int) -> Tuple[List[bytes], int]:
    form = data[p] if p < end else -1
    size = {_COLUMN_RAW: 4 * n, _COLUMN_CONSTANT: 4, _COLUMN_TOP_BYTE: 1 + 3 * n}.get(form, 1)
    if p + 1 + size > end:
        raise truncated("logs", "number column", p)
    p += 1
    if form == _COLUMN_RAW:
        return [format_number(x) for (x,) in _F32.iter_unpack(data[p:p + 4 * n])], p + 4 * n
    if form == _COLUMN_CONSTANT:
        return [format_number(_F32.unpack_from(data, p)[0])] * n, p + 4
    if form == _COLUMN_TOP_BYTE:
        top, p = data[p:p + 1], p + 1
        raw = b"".join(data[q:q + 3] + top for q in range(p, p + 3 * n, 3))
        return [format_number(x) for (x,) in _F32.iter_unpack(raw)], p + 3 * n
    if form == _COLUMN_WHOLE:  # The binary32 of each integer.
        values, p = _ints(data, p, end, n, "whole numbers")
        return [format_number(_F32.unpack(_F32.pack(float(v)))[0]) for v in values], p
    raise _corrupt(f"unknown number form {form}")


class Columns:
    """Field "#0" (`all_items` False: the top items, in position order) or
    "#1" (every item, in request order) of a version 3 layout, decoded and
    checked whole: each item's id, position, request index and line."""

    __slots__ = ("layout", "ids", "order", "positions", "_columns")

    def __init__(self, layout: Layout, value: Bytes, all_items: bool) -> None:
        data, name = bytes(value), "#1" if all_items else "#0"
        end, n = len(data), layout.items if all_items else layout.top_items
        if layout.version != 3 or layout.items == 0:
            raise _corrupt(f'a "{name}" beside a layout of version {layout.version} '
                           f"and {layout.items} items")
        if data[:1] != (b"A" if all_items else b"T"):
            raise _corrupt(f'"{name}" holds tag {data[:1]!r}')
        self.layout = layout
        self.order, p = _ints(data, 1, end, n, "order")
        if max(self.order) >= layout.items or len(set(self.order)) != n:
            raise _corrupt(f'"{name}": an order past the items or with an index twice')
        self.positions = list(range(n))
        indexes = self.order
        if all_items:
            for r, c in enumerate(self.order):
                self.positions[c] = r
            indexes = list(range(n))
        self._columns: List[List[bytes]] = []
        for kind in layout.kinds:
            if kind in (SLOT_INT, SLOT_STRING, SLOT_ITEM_ID):
                values, p = _ints(data, p, end, n, "ints")
            if kind == SLOT_ITEM_ID:
                if 0 in values or p + sum(values) > end:
                    raise _corrupt(f'"{name}": an empty item id, or ids past the value')
                column = []
                for length in values:
                    column.append(data[p:p + length])
                    p += length
                self.ids = column
                if len(set(column)) != n:
                    raise _corrupt(f'an item id twice in "{name}"')
            elif kind == SLOT_INT:
                column = [b"%d" % v for v in values]
            elif kind == SLOT_STRING:
                if values and max(values) >= len(layout.strings):
                    raise _corrupt(f'"{name}": a string index past the table')
                column = [layout.strings[i] for i in values]
            elif kind == SLOT_NUMBER:
                column, p = _columns_numbers(data, p, end, n)
            elif kind == SLOT_POSITION:
                column = [b"%d" % (r + 1) for r in self.positions]
            else:  # SLOT_REQUEST_INDEX
                column = [b"%d" % (c + 1) for c in indexes]
            self._columns.append(column)
        if p != end:
            raise _corrupt(f'{end - p} bytes after "{name}"\'s last column')
        if len(self.ids) * layout._literal > MAX_DECODED_BYTES:
            raise LimitError(f'logs: "{name}" would render past {MAX_DECODED_BYTES} bytes')

    def values(self, j: int) -> List[bytes]:
        """The text of each slot's value for the item `j`, in slot order."""
        return [column[j] for column in self._columns]

    def line(self, j: int) -> str:
        """The line of the value's item `j`."""
        pieces = self.layout.pieces
        return _as_text(pieces[0] + b"".join(v + p for v, p in zip(self.values(j), pieces[1:])))


def _agree(top: Columns, everything: Columns) -> None:  # "#0" repeats "#1"'s first items.
    for j, c in enumerate(top.order):
        if everything.positions[c] != j or top.line(j) != everything.line(c):
            raise _corrupt(f'"#0" and "#1" disagree on position {j + 1}')


def _decode_key_v3(layout: Layout, fields: Mapping[bytes, Bytes]) -> Dict[str, str]:
    """Every line of a version 3 hash, in position order."""
    expected = {LAYOUT_FIELD, b"#0", b"#1"} if layout.items else {LAYOUT_FIELD}
    if set(fields) != expected:
        raise _corrupt(f"a version 3 hash with fields {sorted(fields)!r}")
    if not layout.items:
        return {}
    top, everything = Columns(layout, fields[b"#0"], False), Columns(layout, fields[b"#1"], True)
    _agree(top, everything)
    return {_as_text(everything.ids[c]): everything.line(c) for c in everything.order}


def _fetch_v3(hmget: Hmget, layout: Layout, values: List[Optional[bytes]],
              wanted: List[bytes]) -> Optional[Dict[bytes, str]]:
    """{id: line} of the ids found; None when the key was written again
    between the two round trips."""
    own = {b"#0", b"#1"} if layout.items else set()
    for item_id, value in zip(wanted, values[2:]):
        if value is not None and item_id not in own:
            raise _corrupt(f"item {item_id!r} has a field of its own beside the layout")
    if values[1] is None:
        if layout.items:
            raise _corrupt('no "#0" beside a layout of items')
        return {}
    top = Columns(layout, values[1], False)  # Refuses one beside a layout of no items.
    found = {i: top.line(j) for j, i in enumerate(top.ids) if i in set(wanted)}
    if set(wanted) <= set(found) or layout.top_items == layout.items:  # "#1" has no more.
        return found
    again = _call(hmget, [LAYOUT_FIELD, b"#0", b"#1"])
    if again[0] != layout.raw or again[1] != values[1]:
        return None
    if again[2] is None:
        raise _corrupt('no "#1" beside a layout of items')
    everything = Columns(layout, again[2], True)
    _agree(top, everything)
    return {i: everything.line(c) for c, i in enumerate(everything.ids) if i in set(wanted)}

# --- End of layout version 3. ---


def decode_text(value: Bytes) -> str:
    """The line of a ``T`` or ``Z`` value."""
    data = bytes(value)
    tag = data[:1]
    if tag == b"T":
        return _as_text(data[1:])
    if tag == b"Z":
        frame = data[1:]
        size = single_frame_size(frame)
        if size > MAX_LOG_BYTES:
            raise LimitError(f"logs: a 'Z' value declares {size} bytes "
                             f"(this reader's cap is {MAX_LOG_BYTES})")
        return _as_text(decompress_exact(frame, size))
    raise _corrupt(f"unknown value tag {tag!r} (a text value is 'T' or 'Z')")


def _record_number(data: bytes, p: int, end: int) -> Tuple[float, int]:
    u, p = _varint(data, p, end, "record number")
    code, negative, m = u & 31, (u >> 5) & 1, u >> 6
    if code != _SPECIAL:
        if not 1 <= m <= 999999:
            raise _corrupt(f"record number digits {m} are not 1..999999")
        if m % 10 == 0:
            raise _corrupt(f"record number digits {m} end in a zero")
        x = float(f"{m}e{code - _SCALE_BIAS}")
        return (-x if negative else x), p
    if m == 0:
        return (-0.0 if negative else 0.0), p
    if m == 1:
        if end - p < 8:
            raise truncated("logs", "raw double", p)
        x = _F64.unpack_from(data, p)[0]
        # The double carries its sign; the flag repeats its sign bit.
        if (data[p + 7] >> 7) != negative:
            raise _corrupt("a raw double record number whose sign flag is not its sign bit")
        return x, p + 8
    raise _corrupt(f"unknown special record number {m}")


def decode_record(layout: Layout, item_id: ItemId, value: Bytes) -> str:
    """The line of an ``R`` value (layout version 1), rendered with its
    request's layout; `item_id` is the field's name."""
    if layout.version != 1:
        raise _corrupt(f"a record ('R') value with a version {layout.version} layout")
    data = bytes(value)
    end = len(data)
    if data[:1] != b"R":
        raise _corrupt(f"value tag {data[:1]!r} is not a record ('R')")
    p = 1
    out = [layout.pieces[0]]
    for slot, kind in enumerate(layout.kinds):
        if kind == SLOT_ITEM_ID:
            out.append(_as_bytes(item_id))
        elif kind == SLOT_INT:
            z, p = _varint(data, p, end, "record int")
            out.append(b"%d" % ((z >> 1) ^ -(z & 1)))
        elif kind == SLOT_STRING:
            i, p = _varint(data, p, end, "record string index")
            if i >= len(layout.strings):
                raise _corrupt(f"string index {i} of a table of {len(layout.strings)}")
            out.append(layout.strings[i])
        else:  # SLOT_NUMBER
            x, p = _record_number(data, p, end)
            out.append(format_number(x))
        out.append(layout.pieces[slot + 1])
    if p != end:
        raise _corrupt(f"{end - p} bytes after the record's last slot")
    return _as_text(b"".join(out))


def decode_value(layout: Optional[Layout], item_id: ItemId, value: Bytes) -> str:
    """The line of one item's value in a hash of per-item fields: text
    (``T``, ``Z``) or, with the request's version 1 `layout`, a record
    (``R``). `layout` is None when the hash has no field ``""``."""
    if bytes(value[:1]) == b"R":
        if layout is None:
            raise _corrupt("a record ('R') value in a hash without a layout")
        return decode_record(layout, item_id, value)
    return decode_text(value)


def _check_total(total: int) -> None:
    if total > MAX_DECODED_BYTES:
        raise LimitError(f"logs: the lines would take more than {MAX_DECODED_BYTES} bytes "
                         "(this reader's cap)")


def decode_key(fields: Mapping[bytes, Bytes]) -> Dict[str, str]:
    """Every item's line a stored request holds: `fields` is the whole hash
    (the reply of ``HGETALL rank:log:<request_id>`` as a mapping of field
    name to value). Items come in position order for blocks, in `fields`'
    order otherwise; items without a log (a block missing) are absent."""
    layout_value = fields.get(LAYOUT_FIELD)
    layout = Layout(layout_value) if layout_value is not None else None
    out: Dict[str, str] = {}
    if layout is not None and layout.version == 3:
        return _decode_key_v3(layout, fields)
    if layout is None or layout.version == 1:
        total = 0
        for name, value in fields.items():
            if name == LAYOUT_FIELD:
                continue
            line = decode_value(layout, name, value)
            total += len(line)
            _check_total(total)
            out[_as_text(name)] = line
        return out
    names = layout.block_fields()
    known = set(names)
    known.add(LAYOUT_FIELD)
    for name in fields:
        if name not in known:
            raise _corrupt(f"field {bytes(name)!r} of a blocks hash is neither the layout "
                           f"nor one of its {len(names)} blocks")
    total = 0
    for b, name in enumerate(names):
        value = fields.get(name)
        if value is None:
            continue
        block = decode_block(layout, b, value)
        total += block.rendered_bytes()
        _check_total(total)
        for item_id, line in block.lines():
            if item_id in out:
                raise _corrupt(f"item id {item_id!r} appears twice")
            out[item_id] = line
    return out


def fetch(hmget: Hmget, item_ids: Sequence[ItemId], *, attempts: int = 3
          ) -> Dict[str, Optional[str]]:
    """The lines of `item_ids` of one stored request, read as LOGS.md's
    "Reading" says: ``HMGET key "" "#0" <ids...>`` first and, only when
    some ids are not in block 0, ``HMGET key "" "#1" ... "#k"``.

    `hmget(fields)` runs HMGET on the request's key (`key(request_id)`)
    and returns the values in order (None for a missing field). Returns
    {item id: line, or None when the store has no log of it}, in the order
    asked. If the request id is rewritten between the two reads, reads
    again, at most `attempts` times in all; then `KeyRewrittenError`.
    """
    wanted = [_as_bytes(i) for i in item_ids]
    for _ in range(attempts):
        lines = _fetch_once(hmget, wanted)
        if lines is not None:
            return {_as_text(i): lines.get(i) for i in wanted}
    raise KeyRewrittenError(f"logs: the key was rewritten during each of {attempts} reads")


def _fetch_once(hmget: Hmget, wanted: List[bytes]) -> Optional[Dict[bytes, str]]:
    """{id: line} of the ids found; None when the layout changed between
    the two round trips."""
    fields = [LAYOUT_FIELD, block_field(0)] + wanted
    values = _call(hmget, fields)
    layout = Layout(values[0]) if values[0] is not None else None
    found: Dict[bytes, str] = {}
    if layout is not None and layout.version == 3:
        return _fetch_v3(hmget, layout, values, wanted)
    if layout is None or layout.version == 1:
        # Text values, records, or nothing stored: one value per id.
        total = 0
        for item_id, value in zip(wanted, values[2:]):
            if value is not None and item_id != LAYOUT_FIELD:
                found[item_id] = decode_value(layout, item_id, value)
                total += len(found[item_id])
                _check_total(total)
        return found
    # A hash holds blocks or items, never both (an item may be called "#1":
    # its value is then block 1's).
    blocks = set(layout.block_fields())
    for item_id, value in zip(wanted, values[2:]):
        if value is not None and item_id not in blocks:
            raise _corrupt(f"item {item_id!r} has a field of its own beside the blocks")
    todo = set(wanted)
    seen: Set[bytes] = set()
    total = 0
    if values[1] is not None:
        if layout.block_count() == 0:
            raise _corrupt("a block \"#0\" beside a layout without items")
        total += _take(decode_block(layout, 0, values[1]), todo, found, seen)
    if not todo or layout.block_count() <= 1:
        return found
    more = [LAYOUT_FIELD] + layout.block_fields()[1:]
    again = _call(hmget, more)
    if again[0] is None or bytes(again[0]) != layout.raw:
        return None
    for b, value in enumerate(again[1:], start=1):
        if value is not None:
            total += _take(decode_block(layout, b, value), todo, found, seen)
            _check_total(total)
    return found


def _take(block: Block, todo: Set[bytes], found: Dict[bytes, str], seen: Set[bytes]) -> int:
    """Moves the ids of `todo` that `block` holds to `found`; returns the
    bytes rendered. Every id of the block is checked against the ids of
    every block read (`seen`): an id twice is damage, asked for or not."""
    rendered = 0
    for j, item_id in enumerate(block.ids):
        if item_id in seen:
            raise _corrupt(f"item id {item_id!r} of block {block.index} is in a block already")
        seen.add(item_id)
        if item_id in todo:
            found[item_id] = block.line(j)
            rendered += len(found[item_id])
            todo.discard(item_id)
    return rendered


def _call(hmget: Hmget, fields: List[bytes]) -> List[Optional[bytes]]:
    values = list(hmget(fields))
    if len(values) != len(fields):
        raise ValueError(f"hmget returned {len(values)} values for {len(fields)} fields")
    return [None if v is None else bytes(v) for v in values]


if __name__ == "__main__":  # python -m rankwire.logs: the command line (_log_tool.py).
    # Run by name, not imported: _log_tool imports this module, and a module
    # importing it back would make the two a cycle.
    import runpy

    runpy.run_module("rankwire._log_tool", run_name="__main__", alter_sys=True)
