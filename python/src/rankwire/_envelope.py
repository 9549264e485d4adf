"""The response envelope: a serialized rank.v1.RankResponse read without
parsing its body (codec/envelope.h is the C++ side of the same contract).

A RankResponse is a header (field 1, a small ResponseHeader) and a body:
field 2, a rank.v1.RankResult (codec "protobuf"), or field 3, bytes a
custom codec wrote (docs/FORMAT.md). Protobuf's rules apply: fields in any
order, unknown fields skipped, a repeated header merged, the last body field
wins. The body is returned as offsets into the response, not copied.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import DecodeError

from . import rank_pb2
from ._coding import Buffer, length_prefixed, varint
from .errors import FormatError, TruncatedError

__all__ = ["Envelope", "parse_envelope", "HEADER_FIELD", "RESULT_FIELD", "PAYLOAD_FIELD"]

HEADER_FIELD = rank_pb2.RankResponse.HEADER_FIELD_NUMBER
RESULT_FIELD = rank_pb2.RankResponse.RESULT_FIELD_NUMBER
PAYLOAD_FIELD = rank_pb2.RankResponse.PAYLOAD_FIELD_NUMBER


@dataclass
class Envelope:
    header: rank_pb2.ResponseHeader
    #: RESULT_FIELD or PAYLOAD_FIELD; 0 when the response has no body.
    body_field: int
    body_start: int
    body_end: int


def parse_envelope(buf: Buffer) -> Envelope:
    """FormatError if `buf` is not a well-formed RankResponse."""
    header = rank_pb2.ResponseHeader()
    out = Envelope(header, 0, 0, 0)
    p, end = 0, len(buf)
    while p < end:
        tag, p = varint(buf, p, end, "envelope field tag")
        field, wire_type = tag >> 3, tag & 7
        if field == 0:
            raise FormatError(f"envelope: field number 0 at offset {p}")
        if wire_type == 0:
            _, p = varint(buf, p, end, "envelope unknown varint field")
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            if end - p < width:
                raise TruncatedError(f"envelope: truncated unknown fixed field at offset {p}")
            p += width
        elif wire_type == 2:
            a, p = length_prefixed(buf, p, end, "envelope length-delimited field")
            if field == HEADER_FIELD:
                try:
                    header.MergeFromString(memoryview(buf)[a:p])
                except DecodeError as e:
                    raise FormatError(f"envelope: ResponseHeader does not parse ({e})") from e
            elif field in (RESULT_FIELD, PAYLOAD_FIELD):
                out.body_field, out.body_start, out.body_end = field, a, p
        else:
            raise FormatError(f"envelope: unsupported wire type {wire_type} at offset {p}")
    return out
