// EncodedResponse is a rank.v1.RankResponse whose body is already encoded:
// the header as a protobuf message and the body as the bytes a Codec wrote.
// ToByteBuffer writes it for gRPC without copying the body: the wire message
// is two slices,
//
//   slice 1: EnvelopePrefix (codec/envelope.h): header, body tag, body length
//   slice 2: the codec's buffer, handed over as is and released by gRPC
//
// Thread safety: a plain value.
#ifndef RANKWIRE_RANKING_ENCODED_RESPONSE_H_
#define RANKWIRE_RANKING_ENCODED_RESPONSE_H_

#include <grpcpp/support/byte_buffer.h>

#include <memory>

#include "codec/buffer.h"
#include "codec/envelope.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {

struct EncodedResponse {
  rank::v1::ResponseHeader header;
  BodyKind body_kind = BodyKind::kOpaquePayload;
  // Shared so that the byte buffer can hold a reference without copying;
  // gRPC drops its reference after the send. (grpc::Slice takes a char*,
  // so ToByteBuffer casts the const away; gRPC only reads the bytes.)
  std::shared_ptr<const OwnedBuffer> body;
};

// The RankResponse as gRPC slices; the body slice shares `response.body`.
grpc::ByteBuffer ToByteBuffer(const EncodedResponse& response);

}  // namespace rankwire

#endif  // RANKWIRE_RANKING_ENCODED_RESPONSE_H_
