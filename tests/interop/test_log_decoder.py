"""Stored logs read straight from Redis decode to the exact inline lines.

docs/LOGS.md is the specification; rankwire.logs (python/src/rankwire/logs.py)
and tools/log_decoder.py are the decoder written from it. Here the real
rankwire-server (--logstore=redis) ranks each request twice, with its logs
inline (LOG_MODE_INLINE) and in the store (LOG_MODE_STORE); the hash is read
from a real redis-server and every item's decoded line must equal its
inline line, byte for byte:

- through rankwire.logs.decode_key (the whole hash), rankwire.logs.fetch
  (LOGS.md's "Reading": one HMGET, then "#1" only if needed), and the
  tools/ CLI;
- in every stored form: columns (layout version 3, what servers write),
  text ('T'), text compressed ('Z'), and the layouts older servers wrote,
  built here by hand from LOGS.md out of the same request's values:
  version 2 blocks (every number form, several block sizes; read through
  the server's FetchLogs too, as during a rolling upgrade) and version 1
  records (numbers as decimals, zeros and raw doubles, negative ones
  included);
- over 1 to 2,000 items with varied top_n, every scene, ids, user ids,
  request ids, recall sources, feature names and context values with
  non-ASCII and control characters (newline, tab, NUL, DEL, quotes), and
  odd numbers: ±0, subnormals, ±3.4e38, whole numbers to 2^24, binary32
  values a hair from a six-digit rounding tie, and (through a test model,
  since features must be finite) ±inf and NaN contributions, logits,
  probabilities, boosts and final scores.

Environment as test_interop.py, plus RANKWIRE_REDIS_SERVER.
"""

import json
import math
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(ROOT, "tools", "log_decoder.py")
sys.path.insert(0, HERE)

import rankwire  # noqa: E402
from rankwire import logs, rank_pb2  # noqa: E402
from test_interop import ServerFixture  # noqa: E402

# The tool's code (python -m rankwire.logs); TOOL, which runs it from a
# checkout, is what the command-line tests start.
from rankwire import _log_tool as tool  # noqa: E402

F32 = struct.Struct("<f")
TTL_MS = 60000  # Long enough for a slow CI machine; the TTL is not tested here.

# A model whose numbers overflow binary32 and double: features must be
# finite, but a weight of 1e38 times a feature of 10 is inf as binary32,
# 1e308 times 10 is inf as a double, and inf + -inf a NaN logit. Heads
# with exponent 0 keep their inf/NaN out of the score.
ODD_MODEL = """rankwire-model 1
name odd\u00e9
version t-1
head nan 0 0
weight nan big 1e308
weight nan neg -1e308
head flt 0.5 1
weight flt big 1e38
weight flt neg -1e38
weight flt tiny 1e-30
weight flt x 1
weight flt x*tiny 3
explain flt
head inf 0 0
weight inf big 1e308
weight inf x~neg 1e-300
boost hot_sale 1e39
boost vector_ann 1e-40
boost i2i_cf 1e-300
end
"""

SOURCES = ["text_bm25", "vector_ann", "i2i_cf", "hot_sale", "", "s\u00fcd \n\"#|=\x00",
           "\u5546\u54c1"]
ID_PREFIXES = ["sku-", "", "\u5546\u54c1-", "x\n\x00\t\"|=\\ ", "\U0001F600", "a" * 200]
CONTEXT = {"query": "led \"desk\"\nlamp\x00 \u00e9\u00e8 | x=1", "device": "ios\r",
           "hour_of_day": "23", "city_tier": "\u4e00\u7ebf", "is_mobile": "1",
           "\x00odd key": "not shown"}


def f32(x):
    return F32.unpack(F32.pack(x))[0]


def f32_bits(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def next_f32(x, steps):
    """The binary32 `steps` ulps from x (positive x)."""
    return f32_bits(struct.unpack("<I", F32.pack(x))[0] + steps)


# Binary32 values a hair from six-digit rounding ties, on both sides.
TIES = [next_f32(f32(t), s) for t in (1.234565, 0.1000005, 9.999995, 123456.5, 3.0000005e-20)
        for s in (-1, 0, 1)]
ODD = [0.0, -0.0, 1e-40, -1e-40, 1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38, 0.5,
       1e6, 999999.5, 1.5e-5, 16777215.0, -16777215.0, 16777216.0, 1e-38] + TIES


def column(rng, kind, n):
    """One feature column: a number form of the blocks in mind for each."""
    if kind == "const":
        v = rng.choice(ODD)
        return [v] * n
    if kind == "whole":
        return [float(rng.randrange(-(1 << 24) + 1, 1 << 24)) for _ in range(n)]
    if kind == "small whole":
        return [float(rng.randrange(0, 5)) for _ in range(n)]
    if kind == "top byte":
        return [f32(1 + rng.random()) for _ in range(n)]
    if kind == "whole and -0":
        return [rng.choice([-0.0, 1.0, 2.0]) for _ in range(n)]
    return [f32(rng.choice(ODD)) if rng.random() < 0.5 else
            f32(rng.uniform(-1e3, 1e3) * 10.0 ** rng.randrange(-45, 36)) for _ in range(n)]


KINDS = ["const", "whole", "small whole", "top byte", "whole and -0", "odd"]


def odd_request(seed, n, top_n, scene, odd_model=False):
    """A request of n candidates with odd ids, strings and numbers."""
    rng = random.Random(seed)
    prefix = ID_PREFIXES[seed % len(ID_PREFIXES)]
    request_id = f"dec-{seed}" if seed % 3 else f"dec-{seed} \u00e9\n{{tag}}\x00"
    req = rank_pb2.RankRequest(request_id=request_id, scene=scene,
                               user_id=rng.choice(["", "u\u00e9\n\x00", "u19"]),
                               request_time_ms=rng.choice([0, 1795000000000, 2**62]),
                               top_n=top_n)
    req.user_features.update({"user_price_pref": 4.7, "user_activity": -0.0})
    ctx = dict(CONTEXT)
    if seed % 2:
        ctx = {"device": "android", "long": "v" * 512, "query": "q" * 512}
    req.context.update(ctx)
    names = (["big", "neg", "tiny", "x"] if odd_model else
             ["price", "rating", "ctr_7d", "sales_30d", "stock", "delivery_days"])
    names += ["f\u00fc\u00df=\n%d" % k for k in range(3)]
    req.item_feature_names.extend(names)
    cols = [column(rng, KINDS[k % len(KINDS)], n) for k in range(len(names))]
    if odd_model:
        # big and neg of 10 (or 0): inf and -inf terms; tiny subnormal-ish.
        cols[0] = [rng.choice([10.0, 0.0, 1.0]) for _ in range(n)]
        cols[1] = [rng.choice([10.0, 0.0, 1.0]) for _ in range(n)]
        cols[2] = [f32(rng.choice([1e-10, 1e-40, 0.0, -1e-45])) for _ in range(n)]
    for i in range(n):
        item_id = f"{prefix}{i}" if i % 7 else f"{prefix}{i}\u00e9\n"
        c = req.candidates.add(item_id=item_id, recall_source=rng.choice(SOURCES),
                               recall_rank=rng.choice([1, i + 1, 4294967295]))
        c.features.extend(col[i] for col in cols)
    return req


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def v1_number(text, forms):
    """A number slot of a version 1 record (LOGS.md) that prints as `text`:
    zero and the decimals m x 10^k as such, the rest as a raw binary64
    (its sign included, `negative` its sign bit); counts each in `forms`."""
    x = float(text)
    sign = 1 if text.startswith(b"-") else 0
    if x == 0:
        forms["zero"] = forms.get("zero", 0) + 1
        return varint(sign << 5 | 31)
    if math.isfinite(x) and int(text.lstrip(b"-")[:1]) % 2:
        # Alternate: odd leading digits as decimals, the rest raw.
        digits, _, exp = ("%.5e" % abs(x)).partition("e")
        m = int(digits.replace(".", ""))
        k = int(exp) - 5
        while m % 10 == 0:
            m //= 10
            k += 1
        if 0 <= k + 24 <= 30:
            forms["decimal"] = forms.get("decimal", 0) + 1
            return varint(m << 6 | sign << 5 | (k + 24))
    # A NaN prints "nan" whatever its sign: store one with the sign bit set.
    raw = struct.pack("<Q", 0xFFF8000000000001) if math.isnan(x) else struct.pack("<d", x)
    negative = raw[7] >> 7
    what = "raw nan" if math.isnan(x) else "raw negative" if negative else "raw"
    forms[what] = forms.get(what, 0) + 1
    return varint(1 << 6 | negative << 5 | 31) + raw


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def lp(b):
    return varint(len(b)) + b


def zigzag(v):
    return (v << 1) ^ (v >> 63)


def stored_items(fields):
    """(layout, [(item id, [each slot's text])] in position order) of a
    columns hash."""
    layout = logs.Layout(fields[b""])
    everything = logs.Columns(layout, fields[b"#1"], True)
    return layout, [(everything.ids[c], everything.values(c)) for c in everything.order]


def to_version_1(fields):
    """A columns hash rewritten as LOGS.md's layout version 1 and per-item
    records ('R'), with a few items as 'T' and 'Z' values, as a server
    before blocks stored it: ({field: value}, {number form: count})."""
    import zstandard
    layout, items = stored_items(fields)
    kinds = [logs.SLOT_INT if k in (logs.SLOT_POSITION, logs.SLOT_REQUEST_INDEX) else k
             for k in layout.kinds]
    out = bytearray(b"L\x01" + varint(len(kinds)))
    for piece, kind in zip(layout.pieces, kinds):
        out += lp(piece) + bytes([kind])
    out += lp(layout.pieces[-1]) + varint(len(layout.strings))
    for s in layout.strings:
        out += lp(s)
    v1 = {b"": bytes(out)}
    index = {s: i for i, s in enumerate(layout.strings)}
    forms = {}
    for j, (item_id, values) in enumerate(items):
        line = layout.pieces[0] + b"".join(v + p for v, p in zip(values, layout.pieces[1:]))
        if j % 11 == 5:
            v1[item_id] = b"T" + line
            continue
        if j % 11 == 7:
            v1[item_id] = b"Z" + zstandard.ZstdCompressor().compress(line)
            continue
        record = bytearray(b"R")
        for kind, text in zip(kinds, values):
            if kind == logs.SLOT_INT:
                record += varint(zigzag(int(text)))
            elif kind == logs.SLOT_STRING:
                record += varint(index[text])
            elif kind == logs.SLOT_NUMBER:
                record += v1_number(text, forms)
        v1[item_id] = bytes(record)
    return v1, forms


def v2_numbers(texts, forms):
    """A version 2 number column (LOGS.md) of the binary32 values that print
    as `texts`, in the smallest form it allows; counts the form used."""
    bits = [struct.unpack("<I", F32.pack(float(t)))[0] for t in texts]
    tops = sorted({b >> 24 for b in bits})
    low3 = b"".join(struct.pack("<I", b)[:3] for b in bits)
    values = [f32_bits(b) for b in bits]
    for k in range(1, 7):  # Short decimals: the binary32 of d * 10^-k.
        ds = [round(v * 10 ** k) if math.isfinite(v) else None for v in values]
        if all(d is not None and abs(d) < 2 ** 31 and f32(d * [1e-1, 1e-2, 1e-3, 1e-4, 1e-5,
               1e-6][k - 1]) == v and not (v == 0 and math.copysign(1, v) < 0)
               for d, v in zip(ds, values)) and len(set(bits)) > 1:
            forms.add("decimal")
            return bytes([5, k]) + b"".join(varint(zigzag(d)) for d in ds)
    if len(set(bits)) == 1 and len(bits) > 1:
        forms.add("constant")
        return bytes([3]) + F32.pack(values[0])
    if all(v == int(v) and abs(v) < 2 ** 24 and bits[j] != 0x80000000
           for j, v in enumerate(values) if math.isfinite(v)) and all(map(math.isfinite, values)):
        forms.add("whole")
        return bytes([2]) + b"".join(varint(zigzag(int(v))) for v in values)
    if len(tops) == 1:
        forms.add("top byte")
        return bytes([1, tops[0]]) + low3
    if len(tops) == 2:
        forms.add("two top bytes")
        flags = bytearray((len(bits) + 7) // 8)
        for j, b in enumerate(bits):
            flags[j // 8] |= (b >> 24 == tops[1]) << (j % 8)
        return bytes([4, tops[0], tops[1]]) + bytes(flags) + low3
    forms.add("raw")
    return bytes([0]) + b"".join(F32.pack(v) for v in values)


def to_version_2(fields, top_n, block_items):
    """A columns hash rewritten as LOGS.md's layout version 2 and blocks,
    as a server before columns stored it: ({field: value}, {forms used})."""
    layout, items = stored_items(fields)
    kinds = [logs.SLOT_INT if k == logs.SLOT_REQUEST_INDEX else k for k in layout.kinds]
    top = max(1, min(top_n, len(items)))
    out = bytearray(b"L\x02" + varint(len(items)) + varint(top) + varint(block_items) +
                    varint(len(kinds)))
    for piece, kind in zip(layout.pieces, kinds):
        out += lp(piece) + bytes([kind])
    out += lp(layout.pieces[-1]) + varint(len(layout.strings))
    for text in layout.strings:
        out += lp(text)
    v2, forms = {b"": bytes(out)}, set()
    index = {text: i for i, text in enumerate(layout.strings)}
    starts = [0] + list(range(top, len(items), block_items))
    for b, start in enumerate(starts):
        block = items[start:starts[b + 1] if b + 1 < len(starts) else len(items)]
        out = bytearray(b"B" + varint(len(block)))
        for slot, kind in enumerate(kinds):
            column = [values[slot] for _, values in block]
            if kind == logs.SLOT_ITEM_ID:
                ids = [item_id for item_id, _ in block]
                prefix = os.path.commonprefix(ids)
                out += lp(prefix) + b"".join(lp(i[len(prefix):]) for i in ids)
            elif kind == logs.SLOT_INT:
                out += b"".join(varint(zigzag(int(t))) for t in column)
            elif kind == logs.SLOT_STRING:
                out += b"".join(varint(index[t]) for t in column)
            elif kind == logs.SLOT_NUMBER:
                out += v2_numbers(column, forms)
        v2[b"#%d" % b] = bytes(out)
    return v2, forms


class LogDecoderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rankwire-logdec-")
        cls.redis_port = free_port()
        cls.redis = subprocess.Popen(
            [os.environ["RANKWIRE_REDIS_SERVER"], "--port", str(cls.redis_port),
             "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", cls.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                cls.resp = tool.Resp("127.0.0.1", cls.redis_port)
                cls.resp.command("PING")
                break
            except tool.RedisError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        cls.model = os.path.join(cls.dir, "odd.model")
        with open(cls.model, "w", encoding="utf-8") as f:
            f.write(ODD_MODEL)
        cls.servers = {}

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers.values():
            server.close()
        cls.resp.close()
        cls.redis.terminate()
        cls.redis.wait(10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def server(self, *flags):
        """A server storing logs in this Redis, started once per flags."""
        if flags not in self.servers:
            self.servers[flags] = ServerFixture(
                "--logstore=redis", f"--redis_addr=127.0.0.1:{self.redis_port}",
                "--max_candidates=2000", f"--log_ttl_ms={TTL_MS}", *flags)
        return self.servers[flags]

    def hmget(self, key):
        return lambda fields: self.resp.command("HMGET", key, *fields)

    def rank_both_ways(self, server, request):
        """({item id: inline line}, the store's key, the stored response)."""
        request.log_mode = rank_pb2.LOG_MODE_INLINE
        request.accept_codecs[:] = ["protobuf"]
        inline = server.rank(request, timeout=30)
        want = {item.item_id: item.log for item in inline.result.items}
        self.assertEqual(len(want), len(request.candidates))
        request.log_mode = rank_pb2.LOG_MODE_STORE
        request.accept_codecs[:] = ["rankbin"]
        stored = server.rank(request, timeout=30)
        key = stored.header.log_key.encode()
        self.assertEqual(key, logs.key(request.request_id))
        return want, key, inline

    def wait_for(self, key, fields):
        # Stored just after the response, by the server's log writers.
        deadline = time.time() + 20
        while self.resp.command("HLEN", key) != fields:
            self.assertLess(time.time(), deadline, f"{key!r} never got {fields} fields")
            time.sleep(0.01)
        flat = self.resp.command("HGETALL", key)
        return dict(zip(flat[0::2], flat[1::2]))

    def check_reads(self, key, want, top_n, rng, two_trips_for_deep_ids):
        """decode_key and fetch (top_n, deep, missing and repeated ids)."""
        flat = self.resp.command("HGETALL", key)
        got = logs.decode_key(dict(zip(flat[0::2], flat[1::2])))
        self.assertEqual(len(got), len(want))
        for item_id, line in want.items():
            self.assertEqual(got[item_id], line, f"{key!r} {item_id!r}")
        ids = list(want)
        calls = []

        def hmget(fields):
            calls.append(fields)
            return self.hmget(key)(fields)

        top = ids[:top_n]
        self.assertEqual(logs.fetch(hmget, top), {i: want[i] for i in top})
        self.assertEqual(len(calls), 1, "the top_n items take one round trip")
        sample = rng.sample(ids, min(len(ids), 25)) + ["no such item", ids[-1]]
        calls.clear()
        got = logs.fetch(hmget, sample)
        self.assertEqual(got, {i: want.get(i) for i in sample})
        self.assertEqual(len(calls), 2 if two_trips_for_deep_ids else 1)

    def run_cli(self, *args):
        out = subprocess.run(
            [sys.executable, TOOL, "--redis", f"127.0.0.1:{self.redis_port}", *args],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        return out.stdout, out.stderr

    def cli_json(self, *args):
        stdout, _ = self.run_cli(*args)
        rows = [json.loads(line) for line in stdout.decode().splitlines()]
        return {row["item_id"]: row["log"] for row in rows}, [row["item_id"] for row in rows]

    # -- columns -----------------------------------------------------------

    def test_columns_1_to_2000_items_every_scene(self):
        server = self.server()
        rng = random.Random(5)
        scenes = list(rank_pb2.Scene.values())
        cases = [(1, 1), (2, 1), (2, 2), (3, 2), (16, 16), (17, 10), (33, 1), (100, 100),
                 (500, 10), (777, 500), (2000, 10), (2000, 2000)]
        for seed, (n, top_n) in enumerate(cases):
            with self.subTest(n=n, top_n=top_n):
                request = odd_request(seed, n, top_n, scenes[seed % len(scenes)])
                want, key, _ = self.rank_both_ways(server, request)
                fields = self.wait_for(key, 3)
                self.assertEqual(set(fields), {b"", b"#0", b"#1"})
                self.check_reads(key, want, top_n, rng, n > top_n)
        ttl = self.resp.command("PTTL", key)
        self.assertTrue(0 < ttl <= TTL_MS, ttl)

    def test_inf_nan_and_overflowing_numbers(self):
        server = self.server(f"--model={self.model}")
        rng = random.Random(7)
        seen = set()
        odd_texts = ("=nan", "=inf", ":inf", "=-inf", ":-inf", "boost=inf", "boost=9.99995e-41",
                     "boost=0 ", "final=inf", "e-41", "e+38", "=-0 ")
        for seed, (n, top_n) in enumerate([(40, 5), (300, 300), (1000, 16)], start=200):
            request = odd_request(seed, n, top_n, rank_pb2.SCENE_HOME_FEED, odd_model=True)
            want, key, _ = self.rank_both_ways(server, request)
            self.wait_for(key, 3)
            self.check_reads(key, want, top_n, rng, n > top_n)
            for line in want.values():
                seen.update(w for w in odd_texts if w in line)
        # The model and features did make every odd value appear.
        self.assertEqual(seen, set(odd_texts))

    # -- text --------------------------------------------------------------

    def test_text_and_compressed_text(self):
        rng = random.Random(8)
        for flags, tags in ((("--log_format=text",), {b"T"}),
                            (("--log_format=text", "--log_compress"), {b"Z"})):
            server = self.server(*flags)
            start = 300 if len(flags) == 1 else 310
            for seed, (n, top_n) in enumerate([(1, 1), (50, 10), (2000, 20)], start=start):
                with self.subTest(flags=flags, n=n):
                    request = odd_request(seed, n, top_n, rank_pb2.SCENE_DETAIL_PAGE)
                    want, key, _ = self.rank_both_ways(server, request)
                    fields = self.wait_for(key, n)
                    self.assertNotIn(b"", fields)
                    self.assertLessEqual({v[:1] for v in fields.values()}, tags | {b"T"})
                    self.assertIn(next(iter(tags)), {v[:1] for v in fields.values()})
                    self.check_reads(key, want, top_n, rng, False)

    # -- layout version 1 --------------------------------------------------

    def test_version_1_records_built_from_logs_md(self):
        server = self.server()
        odd = self.server(f"--model={self.model}")
        rng = random.Random(9)
        for seed, (srv, n, odd_model) in enumerate([(server, 60, False), (odd, 200, True)],
                                                   start=400):
            request = odd_request(seed, n, 10, rank_pb2.SCENE_SEARCH, odd_model=odd_model)
            want, key, _ = self.rank_both_ways(srv, request)
            fields = self.wait_for(key, 3)
            v1, forms = to_version_1(fields)
            tags = {value[:1] for value in v1.values()}
            self.assertEqual(tags, {b"L", b"R", b"T", b"Z"})
            self.assertLessEqual({"zero", "decimal", "raw", "raw negative"}, set(forms))
            if odd_model:
                self.assertIn("raw nan", forms)
            v1_key = b"rank:log:v1-" + key
            self.resp.command("DEL", v1_key)
            args = [x for item in v1.items() for x in item]
            self.resp.command("HSET", v1_key, *args)
            self.check_reads(v1_key, want, 10, rng, False)
            lines, _ = self.cli_json("--key", v1_key.decode(), "--item", list(want)[3])
            self.assertEqual(lines, {list(want)[3]: want[list(want)[3]]})

    # -- layout version 2 --------------------------------------------------

    def test_version_2_blocks_built_from_logs_md(self):
        """Blocks as servers before columns wrote them, read by this decoder
        and by the server's own reader (FetchLogs): the rolling upgrade."""
        server = self.server()
        odd = self.server(f"--model={self.model}")
        rng = random.Random(11)
        forms = set()
        for seed, (srv, n, top_n, block_items, odd_model) in enumerate(
                [(server, 60, 10, 16, False), (odd, 200, 5, 7, True), (server, 1, 1, 1, False),
                 (server, 301, 300, 1000, False)], start=600):
            with self.subTest(n=n, block_items=block_items):
                request = odd_request(seed, n, top_n, rank_pb2.SCENE_CART, odd_model=odd_model)
                want, key, _ = self.rank_both_ways(srv, request)
                v2, used = to_version_2(self.wait_for(key, 3), top_n, block_items)
                forms |= used
                self.resp.command("DEL", key)
                self.resp.command("HSET", key, *[x for item in v2.items() for x in item])
                blocks = len(v2) - 1
                self.check_reads(key, want, top_n, rng, blocks > 1)
                ids = list(want)
                sample = list(dict.fromkeys(ids[:top_n] + rng.sample(ids, min(n, 20))))
                with rankwire.Client(f"127.0.0.1:{srv.port}") as client:
                    self.assertEqual(client.fetch_logs(request.request_id, sample, timeout=10),
                                     {i: want[i] for i in sample})
        self.assertLessEqual({"raw", "whole", "decimal", "top byte", "two top bytes", "constant"},
                             forms)

    # -- the CLI -----------------------------------------------------------

    def test_the_cli(self):
        rng = random.Random(10)
        for flags in ((), ("--log_format=text", "--log_compress")):
            server = self.server(*flags)
            request = odd_request(500 + len(flags), 300, 10, rank_pb2.SCENE_SEARCH)
            want, key, _ = self.rank_both_ways(server, request)
            self.wait_for(key, 3 if not flags else 300)
            with self.subTest(flags=flags, read="whole key"):
                lines, order = self.cli_json("--request", request.request_id)
                self.assertEqual(lines, want)
                if not flags:  # Columns come in rank order.
                    self.assertEqual(order, list(want))
            with self.subTest(flags=flags, read="items"):
                ids = rng.sample(list(want), 5)
                lines, order = self.cli_json("--key", key.decode(), "--item", ids[0],
                                             "--item", "missing", "--item", ids[1],
                                             "--items", "a,b")
                self.assertEqual(order, [ids[0], "missing", ids[1], "a", "b"])
                self.assertEqual(lines, {ids[0]: want[ids[0]], "missing": None,
                                         ids[1]: want[ids[1]], "a": None, "b": None})
            with self.subTest(flags=flags, read="tsv"):
                stdout, stderr = self.run_cli("--request", request.request_id, "--format=tsv",
                                              "--item", ids[2], "--item", "missing")
                escaped = tool._escape_tsv
                self.assertEqual(stdout.decode(), f"{escaped(ids[2])}\t{escaped(want[ids[2]])}\n")
                self.assertEqual(stdout.count(b"\n"), 1)
                self.assertIn(b"no log for item 'missing'", stderr)

    def test_the_cli_reports_corrupt_values(self):
        self.resp.command("DEL", b"rank:log:bad")
        self.resp.command("HSET", b"rank:log:bad", b"", b"L\x02\x01\x01\x01\x00\x00\x00", b"#0",
                          b"B\x01")
        result = subprocess.run([sys.executable, TOOL, "--redis", f"127.0.0.1:{self.redis_port}",
                                 "--request", "bad"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"item id slots", result.stderr)
        with self.assertRaises(rankwire.FormatError):
            logs.fetch(self.hmget(b"rank:log:bad"), ["x"])


if __name__ == "__main__":
    unittest.main()
