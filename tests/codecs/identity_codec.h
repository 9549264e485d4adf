// IdentityCodec, a test fixture: the smallest codec that keeps the Codec
// contract. Its body is the protobuf baseline's bytes (a rank.v1.RankResult
// message) carried as an opaque payload, and Open decodes all of it at once
// into an in-memory view. It exists to prove that adding a codec is the
// three steps codec/codec.h lists, with no product file changed: these two
// files, one line in codecs_under_test.cc, one line in CMakeLists.txt. The
// conformance suite, the codec fuzzer, the response budget test and the
// in-process server test (tests/integration/codec_server_test.cc) then run
// it like every other codec.
//
// Thread safety: immutable; safe to share.
#ifndef RANKWIRE_TESTS_CODECS_IDENTITY_CODEC_H_
#define RANKWIRE_TESTS_CODECS_IDENTITY_CODEC_H_

#include <memory>

#include "codec/codec.h"

namespace rankwire::test {

class IdentityCodec final : public Codec {
 public:
  absl::string_view name() const override { return "identity"; }
  uint32_t format_version() const override { return 1; }
  BodyKind body_kind() const override { return BodyKind::kOpaquePayload; }

  // InvalidArgument if `result` breaks ValidateResult's invariants.
  absl::StatusOr<OwnedBuffer> Encode(const RankResult& result) const override;
  // DataLoss if the bytes are not a RankResult message, InvalidArgument if
  // the message breaks the model's invariants.
  absl::StatusOr<std::unique_ptr<ResultView>> Open(SharedBytes bytes) const override;
  // Its body is the baseline's message, so the baseline's bound holds.
  size_t EstimateEncodedBytes(const ResultBound& bound) const override;
};

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_CODECS_IDENTITY_CODEC_H_
