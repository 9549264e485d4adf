"""Result: a Rank response opened as a lazy view, whatever codec wrote it.

    result = rankwire.open_response(response_bytes)   # or Client.rank(...)
    result.header.codec                                # "rankbin", ...
    for item in result.top(10):                        # reads 10 records
        item.id, item.score, item.position
        item.metric("score.ctr")                       # decoded now
        item.log                                       # "" unless logs were inline
    everything = result.materialize()                  # a full decode

With rankbin and rankbin-zstd nothing is decoded beyond the header until it
is read, so showing 10 items of 500 decodes 10. With the protobuf baseline
opening parses the whole message (metric text is still parsed only when
read).
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Union, overload

from . import rank_pb2
from ._coding import Buffer
from ._model import DecodedResult, Item, Limits, MetricType
from ._view import View
from ._envelope import PAYLOAD_FIELD, RESULT_FIELD, parse_envelope
from .errors import FormatError, UnknownCodecError
from ._protobuf_view import ProtobufView
from .rankbin import RankbinView

__all__ = ["Result", "open_response", "open_payload", "CODECS"]

# Codec name -> (the RankResponse field its bodies travel in, its reader).
_READERS = {
    "protobuf": (RESULT_FIELD, lambda buf, a, z, limits: ProtobufView(buf, a, z)),
    "rankbin": (PAYLOAD_FIELD, RankbinView),
    "rankbin-zstd": (PAYLOAD_FIELD, RankbinView),
}
#: The codecs this package reads, in the order Client prefers them.
CODECS = ("rankbin", "rankbin-zstd", "protobuf")


class Result:
    """A ranked result: the response header and a lazy view of its items.

    Indexing and iteration give `rankwire.Item`s in rank order. Reads raise
    FormatError on damaged bytes (from the read that meets them) and never
    return a wrong value. May be read from several threads.
    """

    __slots__ = ("header", "codec", "response_bytes", "body_bytes", "_view")

    def __init__(self, header: rank_pb2.ResponseHeader, view: View,
                 response_bytes: int = 0, body_bytes: int = 0) -> None:
        #: The rank.v1.ResponseHeader (codec, item count, timings, log key...).
        self.header = header
        #: The codec that wrote the body.
        self.codec: str = header.codec
        #: Size of the RankResponse message and of the codec's body in it.
        self.response_bytes = response_bytes
        self.body_bytes = body_bytes
        self._view = view

    def __len__(self) -> int:
        return self._view.size

    @overload
    def __getitem__(self, i: int) -> Item: ...

    @overload
    def __getitem__(self, i: slice) -> List[Item]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[Item, List[Item]]:
        if isinstance(i, slice):
            return [self._view.item(k) for k in range(*i.indices(self._view.size))]
        if i < 0:
            i += self._view.size
        return self._view.item(i)

    def __iter__(self) -> Iterator[Item]:
        view = self._view
        for i in range(view.size):
            yield view.item(i)

    def top(self, n: int) -> List[Item]:
        """The first min(n, len(self)) items; reads their records only."""
        view = self._view
        return [view.item(i) for i in range(min(n, view.size))]

    def keys(self) -> Dict[str, MetricType]:
        """The result's metric keys, name -> type."""
        return self._view.keys()

    def materialize(self) -> DecodedResult:
        """Decodes everything, checking the whole body (FormatError if any
        of it is malformed, LimitError past Limits.max_materialized_bytes)."""
        return self._view.materialize()

    def __repr__(self) -> str:
        return f"Result(codec={self.codec!r}, items={len(self)})"


def open_payload(codec: str, body: Buffer, *, limits: Optional[Limits] = None,
                 header: Optional[rank_pb2.ResponseHeader] = None) -> Result:
    """A codec's body (RankResponse.payload, or a serialized RankResult for
    "protobuf") as a Result. UnknownCodecError for a codec this package does
    not read."""
    reader = _READERS.get(codec)
    if reader is None:
        raise UnknownCodecError(codec)
    if header is None:
        header = rank_pb2.ResponseHeader(codec=codec)
    view = reader[1](body, 0, len(body), limits or Limits())
    return Result(header, view, len(body), len(body))


def open_response(response: Buffer, *, limits: Optional[Limits] = None) -> Result:
    """A serialized rank.v1.RankResponse as a Result, its body not copied.

    FormatError for a malformed envelope or body, or a header whose
    item_count differs from the body's (what a protobuf body cut at a field
    boundary shows); UnknownCodecError for a codec this package does not
    read.
    """
    envelope = parse_envelope(response)
    if envelope.body_field == 0:
        raise FormatError("response carries no body")
    codec = envelope.header.codec
    reader = _READERS.get(codec)
    if reader is None:
        raise UnknownCodecError(codec)
    field, make = reader
    if field != envelope.body_field:
        raise FormatError(f"codec {codec!r} body arrived in the wrong envelope field")
    view = make(response, envelope.body_start, envelope.body_end, limits or Limits())
    if view.size != envelope.header.item_count:
        raise FormatError(f"the response header announces {envelope.header.item_count} items, "
                          f"the body holds {view.size}")
    return Result(envelope.header, view, len(response),
                  envelope.body_end - envelope.body_start)
