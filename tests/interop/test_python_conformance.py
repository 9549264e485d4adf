"""The rankwire Python package and the C++ reader agree, value for value.

rankwire_conformance_dump (conformance_dump.cc, RANKWIRE_CONFORMANCE_DUMP)
writes seeded random results encoded by every codec and codec variant the
C++ conformance suite runs, every truncation and two single-byte
corruptions of every byte of a few small rankbin payloads, and what the C++
codec's full decode (Decode = Open + Materialize) made of each. Here:

- the Python full decode (Result.materialize) succeeds exactly when the C++
  one does, fails with the matching exception (DATA_LOSS: FormatError,
  UNIMPLEMENTED: UnsupportedVersionError, RESOURCE_EXHAUSTED: LimitError),
  and when both succeed gives the same key table and the same items, bit
  for bit (scores and numbers compared by their IEEE-754 bits; an item's
  metrics compared as a mapping by key, since neither side promises an
  order: the C++ decode lists them in key-table order);
- on every payload, whatever its damage, every lazy read (an item, its
  metrics one by one and together, its log) either raises a rankwire
  error or, when the full decode succeeded, returns what it holds: never
  another exception, never another value.

Binary32 NaNs are compared with their quiet bit set: Python's float
conversion quiets a signaling NaN (as the C++ MetricRef's double does);
FORMAT.md's bits are kept for every other value.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rankwire  # noqa: E402
from rankwire import MetricType  # noqa: E402

OUTCOMES = (
    (rankwire.UnsupportedVersionError, "UNIMPLEMENTED"),
    (rankwire.FormatError, "DATA_LOSS"),
    (rankwire.LimitError, "RESOURCE_EXHAUSTED"),
)


def hexed(s):
    return s.encode("utf-8", "surrogateescape").hex()


def bits64(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def value_text(value, type_):
    """A value as the dump writes it."""
    if type_ == MetricType.INT:
        return f"i:{value}"
    if type_ == MetricType.FLOAT:
        return "f:%08x" % struct.unpack("<I", struct.pack("<f", value))[0]
    if type_ == MetricType.DOUBLE:
        return "d:" + bits64(value)
    return "s:" + hexed(value)


def quiet_float_nans(result):
    for item in result["items"]:
        for metric in item[3]:
            if metric[1].startswith("f:"):
                bits = int(metric[1][2:], 16)
                if bits & 0x7F800000 == 0x7F800000 and bits & 0x7FFFFF:
                    metric[1] = "f:%08x" % (bits | 0x400000)
    return result


def as_dump(decoded):
    """A DecodedResult in the dump's JSON form."""
    names = list(decoded.keys)
    index = {name: k for k, name in enumerate(names)}
    items = []
    for item in decoded.items:
        metrics = [[index[n], value_text(v, decoded.keys[n])] for n, v in item.metrics.items()]
        items.append([hexed(item.id), bits64(item.score), item.position, metrics, hexed(item.log)])
    return quiet_float_nans({"keys": [[hexed(n), int(t)] for n, t in decoded.keys.items()],
                             "items": items})


def metrics_by_key(result):
    """The dump with each item's metrics as a mapping {key index: value}.

    An item's metrics have no order to agree on: the C++ full decode lists
    them in key-table order (the columnar result keeps no per-item order),
    rankbin's Python reader in its shape's order, protobuf in map order. A
    key listed twice stays visible (as a list of its values)."""
    for item in result["items"]:
        by_key = {}
        for key, value in item[3]:
            by_key.setdefault(key, []).append(value)
        item[3] = by_key
    return result


class ConformanceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rankwire-py-conformance-")
        subprocess.run([os.environ["RANKWIRE_CONFORMANCE_DUMP"], cls.dir], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(cls.dir, "cases.json")) as f:
            cls.cases = json.load(f)["cases"]
        cls.files = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def payload(self, case):
        data = self.files.get(case["payload"])
        if data is None:
            with open(os.path.join(self.dir, case["payload"]), "rb") as f:
                data = self.files[case["payload"]] = f.read()
        if "truncate" in case:
            return data[:case["truncate"]]
        if "flip" in case:
            offset, xor = case["flip"]
            damaged = bytearray(data)
            damaged[offset] ^= xor
            return bytes(damaged)
        return data

    def full_decode(self, case, data):
        """(outcome, DecodedResult or None) of the Python full decode."""
        try:
            return "ok", rankwire.open_payload(case["codec"], data).materialize()
        except rankwire.Error as e:
            for exc, code in OUTCOMES:
                if isinstance(e, exc):
                    return code, None
            raise

    def test_the_dump_covers_what_it_should(self):
        codecs = {c["name"].split("/seed=")[0] for c in self.cases}
        self.assertLessEqual({"protobuf", "rankbin", "rankbin-zstd", "rankbin/block_items=1",
                              "rankbin-zstd/eager_zstd", "rankbin-zstd/no_checksum",
                              "rankbin-zstd/max_dict_entries=2"}, codecs)
        outcomes = {c["outcome"] for c in self.cases}
        self.assertLessEqual({"ok", "DATA_LOSS", "UNIMPLEMENTED", "RESOURCE_EXHAUSTED"}, outcomes)
        self.assertGreater(sum(c["outcome"] == "ok" and "flip" not in c and "truncate" not in c
                               for c in self.cases), 1200)

    def test_full_decodes_agree_with_the_cpp_reader(self):
        mismatches = []
        compared = 0
        for case in self.cases:
            outcome, decoded = self.full_decode(case, self.payload(case))
            if outcome != case["outcome"]:
                mismatches.append(f"{case['name']}: C++ {case['outcome']}, Python {outcome}")
                continue
            if decoded is None:
                continue
            want = metrics_by_key(quiet_float_nans(case["result"]))
            compared += 1
            if metrics_by_key(as_dump(decoded)) != want:
                mismatches.append(f"{case['name']}: decoded values differ")
        self.assertEqual(mismatches[:20], [], f"{len(mismatches)} of {len(self.cases)} cases")
        self.assertGreater(compared, 10000)

    def test_lazy_reads_raise_or_agree_with_the_full_decode(self):
        problems = []
        for case in self.cases:
            data = self.payload(case)
            outcome, decoded = self.full_decode(case, data)
            try:
                result = rankwire.open_payload(case["codec"], data)
            except rankwire.Error:
                continue
            for i in range(len(result)):
                problem = self.check_lazy_item(result, i, decoded, case["codec"] != "protobuf")
                if problem:
                    problems.append(f"{case['name']} item {i}: {problem}")
        self.assertEqual(problems[:20], [], f"{len(problems)} problems")

    def check_lazy_item(self, result, i, decoded, ordered):
        """"" if every read of item i raises a rankwire.Error or agrees with
        `decoded` (None: the full decode failed; then any value is possible
        for reads that succeed, but no exception but rankwire's). Unless
        `ordered`, metrics() is compared without its order (protobuf maps)."""
        want = decoded.items[i] if decoded is not None else None
        try:
            item = result[i]
        except rankwire.Error:
            return ""
        except Exception as e:  # noqa: BLE001
            return f"item() raised {e!r}"
        if want is not None and (item.id, item.position, bits64(item.score)) != (
                want.id, want.position, bits64(want.score)):
            return "hot fields differ"
        reads = [("metrics()", item.metrics, want and want.metrics),
                 ("log", lambda: item.log, want and want.log)]
        for name in (want.metrics if want is not None else ()):
            reads.append((f"metric({name!r})", lambda n=name: item.metric(n), want.metrics[name]))
        for what, read, expected in reads:
            try:
                got = read()
            except rankwire.Error:
                continue
            except Exception as e:  # noqa: BLE001
                return f"{what} raised {e!r}"
            if isinstance(got, dict) and not ordered:
                got, expected = sorted(got.items()), sorted(expected.items())
            if want is not None and repr(got) != repr(expected):
                return f"{what}: {got!r} != {expected!r}"
        return ""


if __name__ == "__main__":
    unittest.main()
