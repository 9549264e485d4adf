"""A reference decoder for the rankbin wire format, written from docs/FORMAT.md.

It shares no code with the C++ implementation: it exists to show the
specification is complete. Standard library only, plus `zstandard` (Debian's
python3-zstandard) for rankbin-zstd blocks.

    result = decode(payload)          # everything
    view = Payload(payload)           # lazy: view.item(k) reads only item k
"""

import struct

try:
    import zstandard
except ImportError:  # Only needed for zstd blocks.
    zstandard = None

MAGIC = b"RKWB"
MAJOR = 1

SECTION_KEYS, SECTION_SHAPES, SECTION_ITEMS, SECTION_VALUES, SECTION_LOGS = 1, 2, 3, 4, 5

INT, FLOAT, DOUBLE, STRING, STRING_DICT = 0x00, 0x09, 0x12, 0x1B, 0x20
MODEL_TYPE = {INT: "int", FLOAT: "float", DOUBLE: "double", STRING: "string",
              STRING_DICT: "string"}

BLOCK_RAW, BLOCK_ZSTD = 0, 1
MAX_DECODED_BYTES = 256 << 20


class FormatError(ValueError):
    """The payload is not valid rankbin."""


class Reader:
    """Bounds-checked reading of FORMAT.md's primitive types."""

    def __init__(self, data, start=0, end=None):
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end

    def remaining(self):
        return self.end - self.pos

    def take(self, n, what):
        if n < 0 or n > self.remaining():
            raise FormatError(f"truncated {what} at offset {self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u8(self, what):
        return self.take(1, what)[0]

    def u32(self, what):
        return struct.unpack("<I", self.take(4, what))[0]

    def f32(self, what):
        return struct.unpack("<f", self.take(4, what))[0]

    def f64(self, what):
        return struct.unpack("<d", self.take(8, what))[0]

    def varint(self, what, bits=64):
        value, shift = 0, 0
        for _ in range(10):
            byte = self.u8(what)
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                if value >> bits:
                    raise FormatError(f"{what}: varint exceeds {bits} bits")
                return value
            shift += 7
        raise FormatError(f"{what}: varint longer than 10 bytes")

    def varint32(self, what):
        return self.varint(what, 32)

    def svarint(self, what):
        v = self.varint(what)
        return (v >> 1) ^ -(v & 1)

    def bytes_(self, what):
        return self.take(self.varint(what), what)

    def string(self, what):
        return self.bytes_(what).decode("utf-8")

    def count(self, what, min_bytes=1):
        n = self.varint(what)
        if n * min_bytes > self.remaining():
            raise FormatError(f"{what}: count {n} exceeds the remaining bytes")
        return n


ZSTD_MAGIC = 0xFD2FB528


def check_frame(frame, raw, require_checksum):
    """A block's frame per FORMAT.md "Blocks": one zstd frame, no skippable
    frame, no dictionary id, content size declared and equal to `raw`, the
    unused/reserved descriptor bits 0, the checksum flag set in 1.1+, and
    nothing after the frame."""
    if len(frame) < 5 or int.from_bytes(frame[:4], "little") != ZSTD_MAGIC:
        raise FormatError("not a zstd frame (skippable frames are not allowed)")
    descriptor = frame[4]
    if descriptor & 0x18:
        raise FormatError("zstd frame header sets an unused or reserved bit")
    if descriptor & 3:
        raise FormatError("zstd frame names a dictionary")
    if descriptor >> 6 == 0 and not descriptor & 0x20:
        raise FormatError("zstd frame does not declare its content size")
    if require_checksum and not descriptor & 4:
        raise FormatError("zstd frame has no content checksum")
    params = zstandard.get_frame_parameters(frame)
    if params.content_size != raw:
        raise FormatError("zstd frame declares the wrong size")
    # Walk the frame's blocks to find its end: nothing may follow it.
    single = descriptor & 0x20
    fcs_size = {0: 1 if single else 0, 1: 2, 2: 4, 3: 8}[descriptor >> 6]
    pos = 5 + (0 if single else 1) + fcs_size
    while True:
        if pos + 3 > len(frame):
            raise FormatError("zstd frame is cut short")
        header = int.from_bytes(frame[pos:pos + 3], "little")
        last, kind, size = header & 1, (header >> 1) & 3, header >> 3
        if kind == 3:
            raise FormatError("zstd frame has a reserved block type")
        pos += 3 + (1 if kind == 1 else size)
        if last:
            break
    pos += 4 if descriptor & 4 else 0
    if pos != len(frame):
        raise FormatError("bytes after the zstd frame")


def skip_value(r, code):
    wire = code & 7
    if wire == 0:
        r.varint("skipped value")
    elif wire == 1:
        r.take(4, "skipped value")
    elif wire == 2:
        r.take(8, "skipped value")
    elif wire == 3:
        r.bytes_("skipped value")
    else:
        raise FormatError(f"reserved wire class {wire}")


class Payload:
    """A parsed rankbin payload; items are decoded when asked for."""

    def __init__(self, payload):
        data = bytes(payload)
        if len(data) < 8:
            raise FormatError("shorter than the 8-byte header")
        if data[:4] != MAGIC:
            raise FormatError("bad magic")
        if data[4] != MAJOR:
            raise FormatError(f"unsupported major version {data[4]}")
        self.data = data
        self.minor = data[5]
        section_count = struct.unpack("<H", data[6:8])[0]
        sections = {}
        r = Reader(data, 8)
        for _ in range(section_count):
            sid = r.u8("section id")
            length = r.u32("section length")
            start = r.pos
            r.take(length, "section body")
            if 1 <= sid <= 5:
                if sid in sections:
                    raise FormatError(f"section {sid} appears twice")
                sections[sid] = (start, start + length)
        if r.remaining():
            raise FormatError(f"{r.remaining()} bytes after the {section_count} sections")
        for sid in (SECTION_KEYS, SECTION_SHAPES, SECTION_ITEMS, SECTION_VALUES):
            if sid not in sections:
                raise FormatError(f"missing section {sid}")
        self._read_keys(*sections[SECTION_KEYS])
        self._read_shapes(*sections[SECTION_SHAPES])
        self._read_items(*sections[SECTION_ITEMS])
        self.values = self._read_blocks(*sections[SECTION_VALUES], "VALUES")
        self.logs = self._read_blocks(*sections[SECTION_LOGS], "LOGS") \
            if SECTION_LOGS in sections else None
        self._decoded = {}

    def _read_keys(self, start, end):
        r = Reader(self.data, start, end)
        self.keys = []  # (code, name, dict)
        for _ in range(r.count("key count", 3)):
            length = r.varint("key entry length")
            e = Reader(self.data, r.pos, r.pos + length)
            r.take(length, "key entry")
            code = e.u8("key type")
            if code & 7 > 3:
                raise FormatError(f"reserved wire class in key type {code:#x}")
            name = e.string("key name")
            dictionary = []
            if code == STRING_DICT:
                dictionary = [e.string("dict entry") for _ in range(e.count("dict count"))]
            # Bytes after the params we know are skipped.
            self.keys.append((code, name, dictionary))
        if r.remaining():
            raise FormatError(f"{r.remaining()} bytes after the last key")
        known = [name for code, name, _ in self.keys if code in MODEL_TYPE]
        if len(set(known)) != len(known):
            raise FormatError("a key name appears twice")

    def _read_shapes(self, start, end):
        r = Reader(self.data, start, end)
        self.shapes = []
        for _ in range(r.count("shape count")):
            shape = [r.varint32("shape key") for _ in range(r.count("shape size"))]
            if any(k >= len(self.keys) for k in shape) or len(set(shape)) != len(shape):
                raise FormatError("shape index out of range or repeated")
            self.shapes.append(shape)
        if r.remaining():
            raise FormatError(f"{r.remaining()} bytes after the last shape")

    def _read_items(self, start, end):
        r = Reader(self.data, start, end)
        self.item_count = r.count("item count", 16)
        self.block_items = r.varint32("block items")
        if self.block_items == 0:
            raise FormatError("block items is 0")
        self.directory = [r.u32("directory") for _ in range(self.item_count)]
        self.records = (r.pos, end)
        # Entries k and k+1 are checked when item k is read (FORMAT.md,
        # "Items"); this decoder reads every item, so it checks them all.

    def _read_blocks(self, start, end, name):
        r = Reader(self.data, start, end)
        count = r.count("block count", 9)
        expected = -(-self.item_count // self.block_items)
        if count != expected:
            raise FormatError(f"{name}: {count} blocks, expected {expected}")
        entries = [(r.u8("codec"), r.u32("stored"), r.u32("raw")) for _ in range(count)]
        blocks, total = [], 0
        for codec, stored, raw in entries:
            body = r.take(stored, "block data")
            if codec == BLOCK_RAW:
                if stored != raw:
                    raise FormatError(f"{name}: raw block sizes differ")
                blocks.append(body)
            elif codec == BLOCK_ZSTD:
                total += raw
                if total > MAX_DECODED_BYTES:
                    raise FormatError("decoded size cap exceeded")
                blocks.append((body, raw))  # Decompressed on first use.
            else:
                raise FormatError(f"{name}: unknown block codec {codec}")
        return blocks

    def _block(self, blocks, b):
        block = blocks[b]
        if isinstance(block, tuple):
            frame, raw = block
            if zstandard is None:
                raise FormatError("zstd block, but python3-zstandard is not installed")
            check_frame(frame, raw, require_checksum=self.minor >= 1)
            try:
                out = zstandard.ZstdDecompressor().decompress(frame, max_output_size=raw)
            except zstandard.ZstdError as e:
                raise FormatError(f"corrupt zstd block: {e}") from e
            if len(out) != raw:
                raise FormatError("zstd block decoded to the wrong size")
            blocks[b] = block = out
        return block

    def __len__(self):
        return self.item_count

    def key_types(self):
        return {name: MODEL_TYPE[code] for code, name, _ in self.keys if code in MODEL_TYPE}

    def item(self, k):
        """Item k: id, score, position, metrics (name -> value) and log."""
        if not 0 <= k < self.item_count:
            raise IndexError(k)
        start, end = self.records
        rec_start = start + self.directory[k]
        rec_end = start + self.directory[k + 1] if k + 1 < self.item_count else end
        if rec_start > rec_end or rec_end > end:
            raise FormatError("item directory out of order or past the records")
        r = Reader(self.data, rec_start, rec_end)
        item = {
            "id": r.string("item id"),
            "score": r.f64("item score"),
            "position": r.varint32("item position"),
        }
        shape_index = r.varint32("item shape")
        values_offset = r.varint32("values offset")
        if shape_index >= len(self.shapes):
            raise FormatError("item shape out of range")
        block = self._block(self.values, k // self.block_items)
        if values_offset > len(block):
            raise FormatError("values offset past its block")
        v = Reader(block, values_offset)
        metrics = {}
        for key in self.shapes[shape_index]:
            code, name, dictionary = self.keys[key]
            if code == INT:
                metrics[name] = v.svarint("int value")
            elif code == FLOAT:
                metrics[name] = v.f32("float value")
            elif code == DOUBLE:
                metrics[name] = v.f64("double value")
            elif code == STRING:
                metrics[name] = v.string("string value")
            elif code == STRING_DICT:
                index = v.varint("dict index")
                if index >= len(dictionary):
                    raise FormatError("dictionary index out of range")
                metrics[name] = dictionary[index]
            else:
                skip_value(v, code)  # A type this decoder does not know.
        item["metrics"] = metrics
        item["log"] = ""
        if self.logs is not None:
            lr = Reader(self._block(self.logs, k // self.block_items))
            for _ in range(k % self.block_items):
                lr.bytes_("log")
            item["log"] = lr.string("log")
        return item


def decode(payload):
    """The whole result: {"keys": {name: type}, "items": [item, ...]}."""
    view = Payload(payload)
    return {"keys": view.key_types(), "items": [view.item(k) for k in range(len(view))]}
