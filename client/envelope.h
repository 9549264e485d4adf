// ParseEnvelope reads a rank.v1.RankResponse without parsing its body: the
// header is decoded (it is small), the body is returned as a view into the
// same bytes. This is how the client avoids a protobuf parse of the custom
// codecs' payloads, and how it hands a body to a lazy codec without a copy.
//
// Protobuf rules apply: fields may come in any order, unknown fields are
// skipped, a repeated header is merged, and the last body field wins.
//
// Thread safety: a pure function.
#ifndef RANKWIRE_CLIENT_ENVELOPE_H_
#define RANKWIRE_CLIENT_ENVELOPE_H_

#include "absl/status/statusor.h"
#include "codec/buffer.h"
#include "codec/codec.h"
#include "rank/v1/rank.pb.h"

namespace rankwire::client {

struct Envelope {
  rank::v1::ResponseHeader header;
  BodyKind body_kind = BodyKind::kOpaquePayload;
  bool has_body = false;
  // A view into the response bytes, sharing their owner.
  SharedBytes body;
};

// DataLoss if the bytes are not a well-formed RankResponse.
absl::StatusOr<Envelope> ParseEnvelope(const SharedBytes& response);

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_ENVELOPE_H_
