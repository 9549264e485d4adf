"""The exceptions the rankwire package raises.

Every exception is a `rankwire.Error`, so a caller can catch them all in one
place. Bad bytes never come back as values: a payload that breaks
docs/FORMAT.md raises a `FormatError` from the read that meets the damage
(opening the response, or reading an item, metric or log of it).

    Error
    ├── FormatError (also a ValueError)   malformed bytes      C++: DATA_LOSS
    │   ├── TruncatedError                  cut short
    │   ├── ChecksumError                   a zstd content checksum does not match
    │   └── UnsupportedVersionError         another major format version (C++: UNIMPLEMENTED)
    ├── LimitError                        over a reader cap    C++: RESOURCE_EXHAUSTED
    ├── UnknownCodecError                 a codec this package cannot read (C++: FAILED_PRECONDITION)
    ├── RpcError                          the call failed; .code is the grpc.StatusCode
    └── logs.KeyRewrittenError            stored logs rewritten during every read (C++: UNAVAILABLE)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # Not at run time: `import rankwire.logs` must not need grpc.
    import grpc

__all__ = [
    "Error",
    "FormatError",
    "TruncatedError",
    "ChecksumError",
    "UnsupportedVersionError",
    "LimitError",
    "UnknownCodecError",
    "RpcError",
]


class Error(Exception):
    """Base class of every exception this package raises."""


class FormatError(Error, ValueError):
    """The bytes are not what docs/FORMAT.md (or rank.proto) allows."""


class TruncatedError(FormatError):
    """A value, string, section or block would pass the end of its bound."""


class ChecksumError(FormatError):
    """A zstd block's content checksum does not match its decoded bytes."""


class UnsupportedVersionError(FormatError):
    """The payload has a major format version this package does not read."""


class LimitError(Error):
    """Decoding would build more than a reader cap allows (see `rankwire.Limits`)."""


class UnknownCodecError(Error):
    """The response names a codec this package cannot read."""

    def __init__(self, codec: str) -> None:
        super().__init__(f"the server answered with codec {codec!r}, which this client "
                         "cannot read (it reads protobuf, rankbin and rankbin-zstd)")
        self.codec = codec


class RpcError(Error):
    """A Rank or FetchLogs call failed; `code` says how (docs/CLIENTS.md, "Errors").

    The grpc.RpcError it wraps is the exception's __cause__.
    """

    def __init__(self, method: str, code: "grpc.StatusCode", details: Optional[str]) -> None:
        super().__init__(f"{method}: {code.name}: {details or ''}")
        self.method = method
        self.code = code
        self.details = details or ""
