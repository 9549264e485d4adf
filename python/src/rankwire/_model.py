"""What a Result is made of: metric types, items (lazy), decoded items, caps.

Public through `rankwire`; the readers (rankbin.py, _protobuf_view.py) make
the Items.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

try:
    from typing import Protocol
except ImportError:  # Python < 3.8
    Protocol = object  # type: ignore[assignment,misc]

__all__ = ["MetricType", "Value", "Limits", "Item", "DecodedItem", "DecodedResult"]

#: A metric value: int (INT), float (FLOAT and DOUBLE; a FLOAT is the exact
#: binary32 value), or str (STRING).
Value = Union[int, float, str]


class MetricType(enum.IntEnum):
    """A metric key's type; the numbers are rank.v1.MetricType's."""

    INT = 1
    FLOAT = 2
    DOUBLE = 3
    STRING = 4


@dataclass(frozen=True)
class Limits:
    """Caps on what one response may make a reader build (FORMAT.md,
    "Blocks" and "Validity"); past them a read raises LimitError."""

    #: Most bytes the zstd blocks of one payload may decompress to.
    max_decoded_bytes: int = 256 << 20
    #: Most bytes of ids, metrics (16 per key of an item's shape, plus its
    #: plain strings) and logs a full decode (materialize) may build.
    max_materialized_bytes: int = 256 << 20


class ItemReader(Protocol):
    """What an Item reads its lazy parts through: its result's view
    (_view.View), by the item's index. The view keeps whatever it needs to
    find them (rankbin: the item's shape and values offset)."""

    def item_metric(self, index: int, name: str) -> Optional[Value]:
        ...

    def item_metrics(self, index: int) -> Dict[str, Value]:
        ...

    def item_log(self, index: int) -> str:
        ...


class Item:
    """One item of a Result, read lazily.

    `id`, `score`, `position` and `index` were read when the Item was made
    (the item's record, nothing else). Metrics and the log are decoded when
    asked for, each time (keep what you need). Valid as long as you hold it;
    it keeps its Result's bytes alive.
    """

    __slots__ = ("_view", "index", "id", "score", "position")

    def __init__(self, view: ItemReader, index: int, item_id: str, score: float,
                 position: int) -> None:
        self._view = view
        #: 0-based index in the result (rank order).
        self.index = index
        #: The item id from the request.
        self.id = item_id
        #: The final score.
        self.score = score
        #: The 1-based rank the server gave.
        self.position = position

    def metric(self, name: str) -> Optional[Value]:
        """The item's value of metric `name`, or None if it has none."""
        return self._view.item_metric(self.index, name)

    def metrics(self) -> Dict[str, Value]:
        """Every metric of the item, name -> value (rankbin: in the order the
        payload lists them; protobuf: in map order)."""
        return self._view.item_metrics(self.index)

    @property
    def log(self) -> str:
        """The item's log line when logs were sent inline; "" otherwise
        (fetch stored logs with Client.fetch_logs)."""
        return self._view.item_log(self.index)

    def __repr__(self) -> str:
        return (f"Item(index={self.index}, id={self.id!r}, score={self.score!r}, "
                f"position={self.position})")


@dataclass
class DecodedItem:
    """One item of a full decode (Result.materialize())."""

    id: str
    score: float
    position: int
    metrics: Dict[str, Value] = field(default_factory=dict)
    log: str = ""


@dataclass
class DecodedResult:
    """A whole result: the metric key table (name -> type, in the payload's
    order; protobuf: by name) and every item in rank order."""

    keys: Dict[str, MetricType]
    items: List[DecodedItem]
