"""The reader of the `protobuf` codec: the baseline rank.v1.RankResult.

It cannot be lazy about the message: opening parses all of it (the cost the
rankbin codecs remove). Metric text is turned into typed values only when
read, with the C++ reader's rules (std::from_chars): an INT is `-?[0-9]+`
within int64; a FLOAT or DOUBLE is decimal (optional sign '-', digits with
an optional point, optional exponent), `inf`, `infinity` or `nan`, and a
number the type cannot hold (overflow, or non-zero digits that round to
zero) is an error, never infinity or 0. A FLOAT is rounded once, from the
decimal text to binary32.

Use it through rankwire.Result.
"""

from __future__ import annotations

import math
import re
import struct
from fractions import Fraction
from typing import Dict, List, Optional

from google.protobuf.message import DecodeError

from . import rank_pb2
from ._coding import Buffer
from ._model import DecodedItem, DecodedResult, Item, MetricType, Value
from .errors import FormatError

__all__ = ["ProtobufView", "parse_metric_text"]

_INT_TEXT = re.compile(r"-?[0-9]+\Z")
_FLOAT_TEXT = re.compile(
    r"(-?)(?:(inf(?:inity)?)|(nan(?:\([0-9A-Za-z_]*\))?)|"
    r"((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))\Z", re.IGNORECASE)
_MANTISSA = re.compile(r"[^eE]*")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def _bad(text: str, type_: MetricType) -> FormatError:
    return FormatError(f"protobuf: {text[:40]!r} is not a valid {type_.name.lower()}")


def _nonzero_digits(number: str) -> bool:
    m = _MANTISSA.match(number)
    return any(c not in "0." for c in (m.group(0) if m else number))


def _to_float32(number: str, d: float) -> float:
    """The binary32 nearest the decimal `number` (d is its nearest double).

    Rounding the double again can only differ from rounding the decimal
    once when d is exactly halfway between two binary32 values; then the
    decimal itself decides."""
    f = _F32.unpack(_F32.pack(d))[0]  # OverflowError past binary32's range
    if f == d or math.isinf(f):
        return f
    bits = _U32.unpack(_F32.pack(f))[0]
    other = _F32.unpack(_U32.pack(bits + 1 if abs(f) < abs(d) else bits - 1))[0]
    if (f + other) / 2 != d:
        return f
    exact = Fraction(number)
    # d is the midpoint: the decimal lies on one side of it (or on it: ties
    # go to the even significand, which struct's rounding already chose).
    if exact == Fraction(d):
        return f
    return f if abs(exact - Fraction(f)) < abs(exact - Fraction(other)) else other


def parse_metric_text(text: str, type_: MetricType) -> Value:
    """A metric's text as the protobuf codec writes it, as a typed value.
    FormatError if the text is not a valid value of `type_`."""
    if type_ == MetricType.STRING:
        return text
    if type_ == MetricType.INT:
        if not _INT_TEXT.match(text):
            raise _bad(text, type_)
        v = int(text)
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise _bad(text, type_)
        return v
    m = _FLOAT_TEXT.match(text)
    if m is None:
        raise _bad(text, type_)
    sign, inf, nan, number = m.groups()
    if inf:
        return -math.inf if sign else math.inf
    if nan:
        return -math.nan if sign else math.nan
    d = float(sign + number)
    if math.isinf(d) or (d == 0 and _nonzero_digits(number)):
        raise _bad(text, type_)  # Out of range, as from_chars says.
    if type_ == MetricType.DOUBLE:
        return d
    try:
        f = _to_float32(sign + number, d)
    except OverflowError:
        raise _bad(text, type_) from None
    if f == 0 and _nonzero_digits(number):
        raise _bad(text, type_)
    return f


class ProtobufView:
    """A protobuf-codec body (`buf[start:end]`, a rank.v1.RankResult)."""

    def __init__(self, buf: Buffer, start: int = 0, end: Optional[int] = None) -> None:
        body = memoryview(buf)[start:len(buf) if end is None else end]
        try:
            self._message = rank_pb2.RankResult.FromString(body)
        except DecodeError as e:
            raise FormatError(f"protobuf: {len(body)} bytes do not parse as "
                              f"rank.v1.RankResult ({e})") from e
        self._items = self._message.items
        self.size = len(self._items)
        self._types: Dict[str, MetricType] = {}
        for name, number in self._message.metric_types.items():
            if not 1 <= number <= 4:
                raise FormatError(f"protobuf: metric_types[{name!r}] = {number} is not a "
                                  "known metric type")
            self._types[name] = MetricType(number)

    def keys(self) -> Dict[str, MetricType]:
        # Map order is unspecified; by name, as the C++ reader sorts them.
        return {name: self._types[name] for name in sorted(self._types)}

    def item(self, i: int) -> Item:
        if not 0 <= i < self.size:
            raise IndexError(f"item {i} out of range ({self.size} items)")
        m = self._items[i]
        return Item(self, i, m.item_id, m.score, m.position)

    def _value(self, index: int, name: str, text: str) -> Value:
        type_ = self._types.get(name)
        if type_ is None:
            raise FormatError(f"protobuf: item {index} metric {name!r} has no declared type")
        try:
            return parse_metric_text(text, type_)
        except FormatError as e:
            raise FormatError(f"protobuf: item {index} metric {name!r}: {e}") from None

    def item_metric(self, index: int, name: str) -> Optional[Value]:
        metrics = self._items[index].metrics
        if name not in metrics:
            return None
        return self._value(index, name, metrics[name])

    def item_metrics(self, index: int) -> Dict[str, Value]:
        return {name: self._value(index, name, text)
                for name, text in self._items[index].metrics.items()}

    def item_log(self, index: int) -> str:
        return str(self._items[index].log)

    def materialize(self) -> DecodedResult:
        items: List[DecodedItem] = []
        for i in range(self.size):
            item = self.item(i)
            items.append(DecodedItem(item.id, item.score, item.position,
                                     self.item_metrics(i), item.log))
        return DecodedResult(self.keys(), items)
