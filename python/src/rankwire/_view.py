"""What a codec's reader gives Result: the package's counterpart of the C++
ResultView (codec/codec.h). One per wire format: rankbin.RankbinView reads
rankbin and rankbin-zstd, _protobuf_view.ProtobufView the protobuf baseline.

Adding a codec's reader: write a class with these methods, and name it in
_result._READERS with the body field its codec uses.

Private to the package.
"""

from __future__ import annotations

from typing import Dict

try:
    from typing import Protocol
except ImportError:  # Python < 3.8
    Protocol = object  # type: ignore[assignment,misc]

from ._model import DecodedResult, Item, ItemReader, MetricType


class View(ItemReader, Protocol):
    """A lazy view of one response body. Reads raise FormatError (or
    LimitError) on damage they meet; they never return a wrong value."""

    size: int

    def keys(self) -> Dict[str, MetricType]:
        """The known metric keys, name -> type."""
        ...

    def item(self, i: int) -> Item:
        """Item i's hot fields (REQUIRES: 0 <= i < size). The Item reads
        the rest through this view's item_metric / item_metrics / item_log
        (ItemReader), by index."""
        ...

    def materialize(self) -> DecodedResult:
        """Everything, checked as a full decode checks it."""
        ...
