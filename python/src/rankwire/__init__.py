"""rankwire: the Python client of the rankwire ranking service.

    import rankwire

    result = rankwire.open_response(response_bytes)  # a serialized RankResponse
    for item in result.top(10):                      # lazy: ten records read
        print(item.position, item.id, item.score, item.metric("score.ctr"))

Reads every codec the server sends (protobuf, rankbin, rankbin-zstd); the
rankbin reader decodes only what is read. docs/CLIENTS.md is the caller's
guide (service config, deadlines, TLS, errors, compatibility); FORMAT.md the
payload specification.

Public names: Result, Item, DecodedResult, DecodedItem, MetricType, Value,
Limits; open_response, open_payload, CODECS; the exceptions
(rankwire.errors); the modules rank_pb2 (the rank.v1 messages) and rankbin.
"""

from . import rank_pb2, rankbin
from ._model import DecodedItem, DecodedResult, Item, Limits, MetricType, Value
from .errors import (ChecksumError, Error, FormatError, LimitError, TruncatedError,
                     UnknownCodecError, UnsupportedVersionError)
from .result import CODECS, Result, open_payload, open_response

__version__ = "0.1.0"

__all__ = [
    "Result", "Item", "DecodedResult", "DecodedItem", "MetricType", "Value", "Limits",
    "open_response", "open_payload", "CODECS",
    "Error", "FormatError", "TruncatedError", "ChecksumError", "UnsupportedVersionError",
    "LimitError", "UnknownCodecError",
    "rank_pb2", "rankbin",
]
