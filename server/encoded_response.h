// EncodedResponse is a rank.v1.RankResponse whose body is already encoded:
// the header as a protobuf message and the body as the bytes a Codec wrote.
// Its grpc::SerializationTraits specialization writes the envelope without
// copying the body: the wire message is two slices,
//
//   slice 1: [0x0a][len][ResponseHeader bytes][body tag][body len]
//   slice 2: the codec's buffer, handed over as is and freed by gRPC
//
// where the body tag is field 2 (`RankResult result`, codec "protobuf") or
// field 3 (`bytes payload`, custom codecs). Both are length-delimited fields,
// so the bytes on the wire are a valid RankResponse any gRPC client parses.
//
// Thread safety: a plain value; serialize it once.
#ifndef RANKWIRE_SERVER_ENCODED_RESPONSE_H_
#define RANKWIRE_SERVER_ENCODED_RESPONSE_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/impl/serialization_traits.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <string>

#include "codec/buffer.h"
#include "codec/codec.h"
#include "rank/v1/rank.pb.h"

namespace rankwire::server {

// Field numbers of rank.v1.RankResponse.
inline constexpr int kHeaderField = 1;
inline constexpr int kResultField = 2;
inline constexpr int kPayloadField = 3;

struct EncodedResponse {
  rank::v1::ResponseHeader header;
  BodyKind body_kind = BodyKind::kOpaquePayload;
  // Shared so that serialization can hand gRPC a reference without copying
  // and without a const_cast; gRPC drops its reference after the send.
  std::shared_ptr<const OwnedBuffer> body;
};

// The envelope's first slice: the header field and the body's tag and length.
std::string EnvelopePrefix(const EncodedResponse& response);

}  // namespace rankwire::server

namespace grpc {

template <>
class SerializationTraits<rankwire::server::EncodedResponse> {
 public:
  static Status Serialize(const rankwire::server::EncodedResponse& response,
                          ByteBuffer* buffer, bool* own_buffer);
  // Server-side type only; clients parse the envelope with
  // client/envelope.h.
  static Status Deserialize(ByteBuffer* buffer,
                            rankwire::server::EncodedResponse* response);
};

}  // namespace grpc

#endif  // RANKWIRE_SERVER_ENCODED_RESPONSE_H_
