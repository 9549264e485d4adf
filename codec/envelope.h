// The response envelope: how a codec's bytes travel inside a
// rank.v1.RankResponse. This file is the one home of that wire contract;
// the server writes envelopes with EnvelopePrefix, the client and the fuzzer
// read them with ParseEnvelope. It knows nothing about gRPC.
//
// A RankResponse on the wire is
//
//   [header tag][len][ResponseHeader bytes][body tag][body len][body]
//
// where the body tag is field `result` (BodyKind::kProtobufResult: the body
// is a rank.v1.RankResult message, codec "protobuf") or field `payload`
// (BodyKind::kOpaquePayload: bytes a custom codec wrote). Both are
// length-delimited fields, so the bytes are a valid RankResponse for any
// protobuf parser, and a writer can send the prefix and the codec's buffer
// as two slices without copying the body.
//
// ParseEnvelope reads a RankResponse without parsing its body: the header is
// decoded (it is small), the body is returned as a view sharing the input's
// owner. Protobuf rules apply: fields may come in any order, unknown fields
// are skipped, a repeated header is merged, and the last body field wins.
//
// Thread safety: pure functions.
#ifndef RANKWIRE_CODEC_ENVELOPE_H_
#define RANKWIRE_CODEC_ENVELOPE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "codec/buffer.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {

// Which field of rank.v1.RankResponse carries a codec's bytes.
enum class BodyKind {
  kProtobufResult,  // `RankResult result` (the bytes are that message).
  kOpaquePayload,   // `bytes payload`.
};

// Field numbers of rank.v1.RankResponse, from the generated code so they
// cannot drift from rank.proto.
inline constexpr int kEnvelopeHeaderField = rank::v1::RankResponse::kHeaderFieldNumber;
inline constexpr int kEnvelopeResultField = rank::v1::RankResponse::kResultFieldNumber;
inline constexpr int kEnvelopePayloadField = rank::v1::RankResponse::kPayloadFieldNumber;

// The RankResponse field number a body of `kind` travels in.
constexpr int BodyField(BodyKind kind) {
  return kind == BodyKind::kProtobufResult ? kEnvelopeResultField : kEnvelopePayloadField;
}

// Everything before the body: the header field, then the body's tag and
// length. `prefix + body` is a complete RankResponse.
std::string EnvelopePrefix(const rank::v1::ResponseHeader& header, BodyKind kind, size_t body_size);

struct Envelope {
  rank::v1::ResponseHeader header;
  BodyKind body_kind = BodyKind::kOpaquePayload;
  bool has_body = false;
  // A view into the response bytes, sharing their owner.
  SharedBytes body;
};

// DataLoss if the bytes are not a well-formed RankResponse.
absl::StatusOr<Envelope> ParseEnvelope(const SharedBytes& response);

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_ENVELOPE_H_
