"""The rankbin reader: payloads of the `rankbin` and `rankbin-zstd` codecs
(docs/FORMAT.md, version 1.x) as a lazy view.

Opening a payload checks what FORMAT.md's "What a lazy reader checks" lists
(header, section table, the whole KEYS section, the SHAPES and ITEMS
counts, the block counts) and decodes nothing else. Reading item k then
reads its two directory entries and its record; its metrics need its shape
(and the shapes before it) and its VALUES block; its log, its LOGS block.
A zstd block is decompressed once, the first time one of its items needs
it. So opening a 500-item response and reading the top 10 touches the
records of 10 items and one block of each column.

    view = RankbinView(payload)
    for i in range(min(10, view.size)):
        item = view.item(i)          # id, score, position
        item.metric("score.ctr")     # through the Item
    everything = view.materialize()  # a full decode, checked as FORMAT.md says

Use it through rankwire.Result (Client.rank, rankwire.open_response) or
rankwire.open_payload; this module is public for readers of payloads that
did not come in a RankResponse.

Errors: FormatError (TruncatedError, ChecksumError, UnsupportedVersionError)
for bytes FORMAT.md calls an error, LimitError past a cap (rankwire.Limits).
A damaged item, shape or block fails every read that needs it and nothing
else, as the C++ reader does.

Thread safety: a view may be read from several threads; the lazy parsing
of shapes, block directories and log entries extends append-only tables
under the view's lock.
"""

from __future__ import annotations

import struct
import threading
from typing import Dict, List, Optional, Tuple

from . import _coding
from ._coding import Buffer, F32, F64, U16, U32, count, length_prefixed, text, varint, varint32
from ._model import DecodedItem, DecodedResult, Item, Limits, MetricType, Value
from ._zstd import check_block_frame, decompress_exact
from .errors import FormatError, LimitError, TruncatedError, UnsupportedVersionError

__all__ = ["RankbinView", "MAGIC", "MAJOR_VERSION"]

MAGIC = b"RKWB"
MAJOR_VERSION = 1
_HEADER_SIZE = 8
_KEYS, _SHAPES, _ITEMS, _VALUES, _LOGS = 1, 2, 3, 4, 5
_SECTION_NAMES = ("", "KEYS", "SHAPES", "ITEMS", "VALUES", "LOGS")

# Type codes of version 1.x: (kind << 3) | wire class.
INT, FLOAT, DOUBLE, STRING, STRING_DICT = 0x00, 0x09, 0x12, 0x1B, 0x20
_MODEL_TYPES = {INT: MetricType.INT, FLOAT: MetricType.FLOAT, DOUBLE: MetricType.DOUBLE,
                STRING: MetricType.STRING, STRING_DICT: MetricType.STRING}
_SIMPLE_CODES = frozenset((INT, FLOAT, DOUBLE, STRING))
_BLOCK_RAW, _BLOCK_ZSTD = 0, 1

# Least bytes of an element, for counts checked against what remains.
_MIN_KEY_BYTES = 3
_MIN_ITEM_BYTES = 4 + 12  # directory entry, id length, score, 3 varints
_BLOCK_ENTRY_BYTES = 9
# What a full decode counts per key of an item's shape (FORMAT.md "Validity").
_MATERIALIZED_BYTES_PER_KEY = 16

_ENTRY = struct.Struct("<BII")  # block entry: codec, stored_size, raw_size

# Steps of a shape's decoding plan.
_FIXED, _INT, _STR, _DICT, _SKIP_VARINT, _SKIP_BYTES = range(6)

_CONTEXT = "rankbin"
_structs: Dict[str, struct.Struct] = {}


def _fixed_struct(fmt: str) -> struct.Struct:
    s = _structs.get(fmt)
    if s is None:
        s = _structs[fmt] = struct.Struct("<" + fmt)
    return s


def _error(problem: str, cls: type = FormatError) -> Exception:
    return cls(f"{_CONTEXT}: {problem}")


def _again(err: Exception) -> Exception:
    """A sticky error raised anew (the same class and message)."""
    return type(err)(*err.args)


class _Shape:
    """A parsed shape: its key indexes and how to decode an item's values."""

    __slots__ = ("keys", "plan", "names", "_where")

    def __init__(self, keys: List[int], view: "RankbinView") -> None:
        self.keys = keys
        codes, model, names = view._codes, view._model, view._names
        #: Names of the known keys, in shape order (the decoded values' order).
        self.names: Tuple[str, ...] = tuple(names[k] for k in keys if model[k] >= 0)
        self._where: Optional[Dict[int, Tuple[int, Optional[int]]]] = None
        plan: List[tuple] = []
        fmt = ""
        for k in keys:
            code = codes[k]
            wire = code & 7
            # Consecutive fixed-width values are read by one struct; values
            # of unknown fixed-width types are padding in it.
            if wire == 1:
                fmt += "f" if code == FLOAT else "4x"
                continue
            if wire == 2:
                fmt += "d" if code == DOUBLE else "8x"
                continue
            if fmt:
                plan.append((_FIXED, _fixed_struct(fmt)))
                fmt = ""
            if code == INT:
                # Consecutive ints are one step (each a call less).
                if plan and plan[-1][0] == _INT:
                    plan[-1] = (_INT, plan[-1][1] + 1)
                else:
                    plan.append((_INT, 1))
            elif code == STRING:
                plan.append((_STR,))
            elif code == STRING_DICT:
                plan.append((_DICT, view._dicts[k]))
            elif wire == 0:
                plan.append((_SKIP_VARINT,))
            else:
                plan.append((_SKIP_BYTES,))
        if fmt:
            plan.append((_FIXED, _fixed_struct(fmt)))
        self.plan = tuple(plan)

    def where(self, codes: List[int]) -> Dict[int, Tuple[int, Optional[int]]]:
        """Key index -> (its place in the shape, the byte offset of its value
        from the item's first value when only fixed-width values precede it,
        else None). Made on the first lookup by name."""
        where = self._where
        if where is None:
            where = {}
            offset: Optional[int] = 0
            for j, k in enumerate(self.keys):
                where[k] = (j, offset)
                wire = codes[k] & 7
                if offset is not None:
                    offset = offset + 4 if wire == 1 else offset + 8 if wire == 2 else None
            self._where = where
        return where


def _decode_values(data: Buffer, p: int, end: int, plan: tuple) -> Tuple[List[Value], int]:
    """One item's values by its shape's plan, from p, bounded by its block's
    end; and the bytes of its plain strings (for the materialize cap)."""
    out: List[Value] = []
    string_bytes = 0
    for step in plan:
        kind = step[0]
        if kind == _FIXED:
            st = step[1]
            if end - p < st.size:
                raise _coding.truncated(_CONTEXT, "fixed-width values", p)
            out.extend(st.unpack_from(data, p))
            p += st.size
        elif kind == _INT:
            for _ in range(step[1]):
                # Varints of one and two bytes inline: most ints are small.
                if p < end and data[p] < 0x80:
                    v = data[p]
                    p += 1
                elif p + 1 < end and data[p + 1] < 0x80:
                    v = (data[p] & 0x7F) | data[p + 1] << 7
                    p += 2
                else:
                    v, p = varint(data, p, end, "int value")
                out.append((v >> 1) ^ -(v & 1))
        elif kind == _DICT:
            if p < end and data[p] < 0x80:
                index = data[p]
                p += 1
            else:
                index, p = varint(data, p, end, "dictionary index")
            dictionary = step[1]
            if index >= len(dictionary):
                raise _error(f"dictionary index {index} out of range ({len(dictionary)} "
                             f"entries) at offset {p}")
            out.append(dictionary[index])
        elif kind == _STR:
            a, p = length_prefixed(data, p, end, "string value")
            string_bytes += p - a
            out.append(text(data, a, p))
        elif kind == _SKIP_VARINT:
            _, p = varint(data, p, end, "skipped value")
        else:
            _, p = length_prefixed(data, p, end, "skipped value")
    return out, string_bytes


class _Column:
    """A VALUES or LOGS section: its block directory, located lazily."""

    __slots__ = ("name", "count", "entries", "next", "end", "blocks", "error", "data",
                 "data_errors", "log_offsets")

    def __init__(self, name: str, count: int, entries: int, end: int) -> None:
        self.name = name
        self.count = count
        self.entries = entries  # Offset of entry 0.
        self.next = entries + _BLOCK_ENTRY_BYTES * count  # Where block len(blocks) starts.
        self.end = end
        # Located blocks (codec, start, stored_size, raw_size): append-only.
        self.blocks: List[Tuple[int, int, int, int]] = []
        self.error: Optional[Exception] = None
        # Block -> (bytes, start, end) of its decoded bytes; block -> error.
        self.data: Dict[int, Tuple[Buffer, int, int]] = {}
        self.data_errors: Dict[int, Exception] = {}
        # LOGS: block -> (start, end) of its entries read so far.
        self.log_offsets: Dict[int, List[Tuple[int, int]]] = {}


class RankbinView:
    """A rankbin payload opened lazily (see the module docstring).

    `buf[start:end]` is the payload; the view keeps `buf` (no copy).
    """

    def __init__(self, buf: Buffer, start: int = 0, end: Optional[int] = None,
                 limits: Limits = Limits()) -> None:
        self._buf = buf
        self._mv = memoryview(buf)
        self._limits = limits
        self._lock = threading.Lock()
        # Per item made (item(i)): its shape and values offset, read from its
        # record then, so its metrics need not read the record again.
        self._cursors: Dict[int, Tuple[int, int]] = {}
        self._decoded_total = 0
        self._name_index: Optional[Dict[str, int]] = None
        self._shapes: List[_Shape] = []
        self._shapes_error: Optional[Exception] = None
        sections = self._parse_sections(start, len(buf) if end is None else end)
        self._parse_keys(*sections[_KEYS])
        self._parse_shapes(*sections[_SHAPES])
        self._parse_items(*sections[_ITEMS])
        self._values = self._parse_column(*sections[_VALUES], "VALUES")
        self._logs = self._parse_column(*sections[_LOGS], "LOGS") if sections[_LOGS] else None

    # Opening -------------------------------------------------------------

    def _parse_sections(self, start: int, end: int) -> List[Optional[Tuple[int, int]]]:
        buf = self._buf
        n = end - start
        if n < _HEADER_SIZE:
            raise _error(f"payload of {n} bytes is shorter than the 8-byte header",
                         TruncatedError)
        if bytes(buf[start:start + 4]) != MAGIC:
            raise _error("bad magic: not a rankbin payload")
        major, self.minor = buf[start + 4], buf[start + 5]
        if major != MAJOR_VERSION:
            raise _error(f"format version {major}.{self.minor} is not supported; this reader "
                         f"reads {MAJOR_VERSION}.x", UnsupportedVersionError)
        section_count = U16.unpack_from(buf, start + 6)[0]
        sections: List[Optional[Tuple[int, int]]] = [None] * 6
        p = start + _HEADER_SIZE
        for k in range(section_count):
            if end - p < 5:
                raise _error(f"the header announces {section_count} sections; section {k + 1} "
                             f"is cut short at offset {p}", TruncatedError)
            sid = buf[p]
            length = U32.unpack_from(buf, p + 1)[0]
            body = p + 5
            if length > end - body:
                raise _error(f"the header announces {section_count} sections; section {k + 1} "
                             f"({length} bytes at offset {body}) is cut short", TruncatedError)
            if 1 <= sid <= 5:
                if sections[sid] is not None:
                    raise _error(f"section {sid} appears twice")
                sections[sid] = (body, body + length)
            p = body + length
        if p != end:
            raise _error(f"{end - p} bytes after the {section_count} sections the header "
                         "announces")
        for sid in (_KEYS, _SHAPES, _ITEMS, _VALUES):
            if sections[sid] is None:
                raise _error(f"missing {_SECTION_NAMES[sid]} section")
        return sections

    def _parse_keys(self, start: int, end: int) -> None:
        buf = self._buf
        n, p = count(buf, start, end, _MIN_KEY_BYTES, "key count")
        self._codes: List[int] = [0] * n
        self._names: List[str] = [""] * n
        self._dicts: List[Optional[List[str]]] = [None] * n
        # Index among the known keys (the decoded key table), -1 for unknown types.
        self._model: List[int] = [-1] * n
        known = 0
        for k in range(n):
            # The common entry inline: a one-byte length, a code of this
            # version without params, a name of at most 125 bytes filling it.
            if end - p >= 3:
                length, code, name_length = buf[p], buf[p + 1], buf[p + 2]
                if (length < 0x80 and length == name_length + 2 and end - p > length
                        and code in _SIMPLE_CODES):
                    self._names[k] = text(buf, p + 3, p + 1 + length)
                    self._codes[k] = code
                    self._model[k] = known
                    known += 1
                    p += 1 + length
                    continue
            a, p = length_prefixed(buf, p, end, "key entry")
            if a >= p:
                raise _coding.truncated(_CONTEXT, "key type", a)
            code = buf[a]
            na, nz = length_prefixed(buf, a + 1, p, "key name")
            if code == STRING_DICT:
                dn, q = count(buf, nz, p, 1, "key dictionary")
                entries = []
                for _ in range(dn):
                    sa, q = length_prefixed(buf, q, p, "key dictionary")
                    entries.append(text(buf, sa, q))
                self._dicts[k] = entries
            # Bytes of the entry after the params this reader knows are skipped.
            self._names[k] = text(buf, na, nz)
            if code & 7 > 3:
                raise _error(f"key {k} ({self._names[k]!r}) has reserved wire class {code & 7}")
            self._codes[k] = code
            if code in _MODEL_TYPES:
                self._model[k] = known
                known += 1
        if p != end:
            raise _error(f"{end - p} bytes after the last key")

    def _parse_shapes(self, start: int, end: int) -> None:
        self._shape_count, p = count(self._buf, start, end, 1, "shape count")
        if self._shape_count == 0 and p != end:
            raise _error(f"{end - p} bytes after the last shape")
        self._shapes_next = p
        self._shapes_end = end

    def _parse_items(self, start: int, end: int) -> None:
        buf = self._buf
        self.size, p = count(buf, start, end, _MIN_ITEM_BYTES, "item count")
        self.block_items, p = varint32(buf, p, end, "block items")
        if self.block_items == 0:
            raise _error("block items is 0")
        if 4 * self.size > end - p:
            raise _coding.truncated(_CONTEXT, "item directory", p)
        self._directory = p
        self._records = p + 4 * self.size
        self._records_size = end - self._records

    def _parse_column(self, start: int, end: int, name: str) -> _Column:
        blocks, p = count(self._buf, start, end, _BLOCK_ENTRY_BYTES, "block count")
        expected = -(-self.size // self.block_items)
        if blocks != expected:
            raise _error(f"{name} has {blocks} blocks; {self.size} items in blocks of "
                         f"{self.block_items} need {expected}")
        return _Column(name, blocks, p, end)

    # Lazy parts ----------------------------------------------------------

    def _shape(self, s: int) -> _Shape:
        shapes = self._shapes
        if s < len(shapes):
            return shapes[s]
        if s >= self._shape_count:
            raise _error(f"shape {s} out of range ({self._shape_count} shapes)")
        with self._lock:
            if self._shapes_error is not None:
                raise _again(self._shapes_error)
            try:
                while len(shapes) <= s:
                    self._parse_next_shape()
            except FormatError as e:
                self._shapes_error = e
                raise
        return shapes[s]

    def _parse_next_shape(self) -> None:
        buf, p, end = self._buf, self._shapes_next, self._shapes_end
        bound = len(self._codes)
        n, p = count(buf, p, end, 1, "shape keys")
        if n > bound:
            raise _error(f"shape keys count {n} exceeds the {bound} possible indexes")
        keys: List[int] = []
        for _ in range(n):
            if p < end and buf[p] < 0x80:
                k = buf[p]
                p += 1
            else:
                k, p = varint32(buf, p, end, "shape keys")
            if k >= bound:
                raise _error(f"shape key index {k} out of range ({bound}) at offset {p}")
            keys.append(k)
        if len(set(keys)) != n:
            raise _error(f"a shape repeats a key index (shape ending at offset {p})")
        if len(self._shapes) + 1 == self._shape_count and p != end:
            raise _error(f"{end - p} bytes after the last shape")
        self._shapes_next = p
        self._shapes.append(_Shape(keys, self))

    def _locate(self, column: _Column, b: int) -> Tuple[int, int, int, int]:
        """Block b's entry, checked with every entry before it."""
        blocks = column.blocks
        if b < len(blocks):
            return blocks[b]
        with self._lock:
            if column.error is not None:
                raise _again(column.error)
            try:
                self._locate_up_to(column, b)
            except (FormatError, LimitError) as e:
                column.error = e
                raise
        return blocks[b]

    def _locate_up_to(self, column: _Column, b: int) -> None:
        buf, blocks, name = self._buf, column.blocks, column.name
        while len(blocks) <= b:
            ready = len(blocks)
            codec, stored, raw = _ENTRY.unpack_from(buf, column.entries + 9 * ready)
            if codec == _BLOCK_RAW:
                if stored != raw:
                    raise _error(f"{name} block {ready} is raw but its sizes differ ({stored} "
                                 f"stored, {raw} raw)")
            elif codec == _BLOCK_ZSTD:
                self._decoded_total += raw
                if self._decoded_total > self._limits.max_decoded_bytes:
                    raise _error("compressed blocks would decode to more than "
                                 f"{self._limits.max_decoded_bytes} bytes", LimitError)
            else:
                raise _error(f"{name} block {ready} has unknown codec {codec}")
            start = column.next
            if stored > column.end - start:
                raise _error(f"{name} block {ready}: block data of {stored} bytes at offset "
                             f"{start} passes the end of its section ({column.end - start} "
                             "bytes left)", TruncatedError)
            blocks.append((codec, start, stored, raw))
            column.next = start + stored

    def _block(self, column: _Column, b: int) -> Tuple[Buffer, int, int]:
        """Block b's decoded bytes as (buffer, start, end)."""
        got = column.data.get(b)
        if got is not None:
            return got
        codec, start, stored, raw = self._locate(column, b)
        if codec == _BLOCK_RAW:
            got = (self._buf, start, start + raw)
        else:
            failed = column.data_errors.get(b)
            if failed is not None:
                raise _again(failed)
            frame = self._mv[start:start + stored]
            try:
                # From 1.1 every frame carries zstd's content checksum.
                check_block_frame(frame, raw, require_checksum=self.minor >= 1)
                got = (decompress_exact(frame, raw), 0, raw)
            except FormatError as e:
                err = type(e)(f"{_CONTEXT}: {column.name} block {b}: {e}")
                column.data_errors[b] = err
                raise err from e
        column.data[b] = got
        return got

    def _name_to_key(self) -> Dict[str, int]:
        """Known key names -> KEYS index; FormatError if a name repeats."""
        index = self._name_index
        if index is None:
            index = {}
            for k, name in enumerate(self._names):
                if self._model[k] < 0:
                    continue
                if name in index:
                    raise _error(f"metric key {name!r} appears twice")
                index[name] = k
            self._name_index = index
        return index

    # Reading -------------------------------------------------------------

    def _record(self, i: int) -> Tuple[int, int, float, int, int, int]:
        """Item i's record: id (start, end), score, position, shape, values offset."""
        n = self.size
        if not 0 <= i < n:
            raise IndexError(f"item {i} out of range ({n} items)")
        buf = self._buf
        d = self._directory + 4 * i
        begin = U32.unpack_from(buf, d)[0]
        stop = U32.unpack_from(buf, d + 4)[0] if i + 1 < n else self._records_size
        if begin > stop or stop > self._records_size:
            raise _error(f"item directory entries {i} and {i + 1} ({begin}, {stop}) are out of "
                         f"order or past the records ({self._records_size} bytes)")
        p = self._records + begin
        end = self._records + stop
        # The id's length, inline for the common one-byte case.
        if p < end and buf[p] < 0x80:
            a = p + 1
            p = a + buf[p]
            if p > end:
                raise _coding.truncated(_CONTEXT, "item id", a - 1)
        else:
            a, p = length_prefixed(buf, p, end, "item id")
        z = p
        if end - p < 8:
            raise _coding.truncated(_CONTEXT, "item score", p)
        score = F64.unpack_from(buf, p)[0]
        position, p = varint32(buf, p + 8, end, "item position")
        shape, p = varint32(buf, p, end, "item shape")
        values_offset, p = varint32(buf, p, end, "item values offset")
        return a, z, score, position, shape, values_offset

    def item(self, i: int) -> Item:
        a, z, score, position, shape, values_offset = self._record(i)
        self._cursors[i] = (shape, values_offset)
        return Item(self, i, text(self._buf, a, z), score, position)

    def _values_of(self, index: int) -> Tuple[Buffer, int, int, _Shape]:
        """Where item `index`'s values start in its decoded VALUES block, the
        block's end, and its shape."""
        cursor = self._cursors.get(index)
        if cursor is None:
            cursor = self._record(index)[4:]
        return self._values_at(index, *cursor)

    def _values_at(self, index: int, shape_id: int,
                   offset: int) -> Tuple[Buffer, int, int, _Shape]:
        try:
            shape = self._shape(shape_id)
        except FormatError as e:
            raise type(e)(f"{_CONTEXT}: item {index}: {e}") from e
        data, start, end = self._block(self._values, index // self.block_items)
        if offset > end - start:
            raise _error(f"item {index} values offset {offset} is past its block "
                         f"({end - start} bytes)")
        return data, start + offset, end, shape

    def item_metrics(self, index: int) -> Dict[str, Value]:
        self._name_to_key()  # A dict by name needs the names unique.
        data, p, end, shape = self._values_of(index)
        values, _ = _decode_values(data, p, end, shape.plan)
        return dict(zip(shape.names, values))

    def item_metric(self, index: int, name: str) -> Optional[Value]:
        k = self._name_to_key().get(name)
        if k is None:
            return None
        data, p, end, shape = self._values_of(index)
        found = shape.where(self._codes).get(k)
        if found is None:
            return None
        j, offset = found
        if offset is not None:
            p += offset
        else:
            for before in shape.keys[:j]:
                p = _skip_value(data, p, end, self._codes[before])
        return _read_value(data, p, end, self._codes[k], self._dicts[k])

    def item_log(self, index: int) -> str:
        if self._logs is None:
            return ""
        b, k = divmod(index, self.block_items)
        data, start, end = self._block(self._logs, b)
        offsets = self._logs.log_offsets.get(b)
        if offsets is None or k >= len(offsets):
            with self._lock:
                offsets = self._logs.log_offsets.setdefault(b, [])
                p = offsets[-1][1] if offsets else start
                while len(offsets) <= k:
                    a, p = length_prefixed(data, p, end, "log")
                    offsets.append((a, p))
        a, z = offsets[k]
        return text(data, a, z)

    def keys(self) -> Dict[str, MetricType]:
        self._name_to_key()
        return {self._names[k]: _MODEL_TYPES[code] for k, code in enumerate(self._codes)
                if self._model[k] >= 0}

    # Full decode -----------------------------------------------------------

    def materialize(self) -> DecodedResult:
        keys = self.keys()  # Checks the names are unique.
        # Every block located first: the whole directories and the zstd cap
        # are checked before any block is decoded.
        for column in (self._values, self._logs):
            if column is not None and column.count > 0:
                self._locate(column, column.count - 1)
        budget = [0]
        items: List[DecodedItem] = []
        for b in range(self._values.count):
            self._materialize_block(b, budget, items)
        # A full decode checks every shape, also those no item names.
        if self._shape_count > 0:
            self._shape(self._shape_count - 1)
        return DecodedResult(keys, items)

    def _charge(self, budget: List[int], n: int) -> None:
        budget[0] += n
        if budget[0] > self._limits.max_materialized_bytes:
            raise _error("the result would materialize to more than "
                         f"{self._limits.max_materialized_bytes} bytes", LimitError)

    def _materialize_block(self, b: int, budget: List[int], items: List[DecodedItem]) -> None:
        buf = self._buf
        logs: Optional[Tuple[Buffer, int, int]] = None
        if self._logs is not None:
            logs = self._block(self._logs, b)
            log_p = logs[1]
        for i in range(b * self.block_items, min(self.size, (b + 1) * self.block_items)):
            a, z, score, position, shape_id, values_offset = self._record(i)
            data, p, end, shape = self._values_at(i, shape_id, values_offset)
            self._charge(budget, (z - a) + _MATERIALIZED_BYTES_PER_KEY * len(shape.keys))
            values, string_bytes = _decode_values(data, p, end, shape.plan)
            self._charge(budget, string_bytes)
            log = ""
            if logs is not None:
                la, log_p = length_prefixed(logs[0], log_p, logs[2], "log")
                self._charge(budget, log_p - la)
                log = text(logs[0], la, log_p)
            items.append(DecodedItem(text(buf, a, z), score, position,
                                     dict(zip(shape.names, values)), log))


def _skip_value(data: Buffer, p: int, end: int, code: int) -> int:
    wire = code & 7
    if wire == 0:
        return varint(data, p, end, "skipped value")[1]
    if wire == 3:
        return length_prefixed(data, p, end, "skipped value")[1]
    width = 4 if wire == 1 else 8
    if end - p < width:
        raise _coding.truncated(_CONTEXT, "skipped value", p)
    return p + width


def _read_value(data: Buffer, p: int, end: int, code: int,
                dictionary: Optional[List[str]]) -> Value:
    if code == DOUBLE:
        if end - p < 8:
            raise _coding.truncated(_CONTEXT, "double value", p)
        return F64.unpack_from(data, p)[0]
    if code == FLOAT:
        if end - p < 4:
            raise _coding.truncated(_CONTEXT, "float value", p)
        return F32.unpack_from(data, p)[0]
    if code == INT:
        v, _ = varint(data, p, end, "int value")
        return (v >> 1) ^ -(v & 1)
    if code == STRING:
        a, z = length_prefixed(data, p, end, "string value")
        return text(data, a, z)
    index, _ = varint(data, p, end, "dictionary index")
    assert dictionary is not None
    if index >= len(dictionary):
        raise _error(f"dictionary index {index} out of range ({len(dictionary)} entries)")
    return dictionary[index]

