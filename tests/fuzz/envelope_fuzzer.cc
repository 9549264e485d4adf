// libFuzzer target: the RankResponse envelope reader
// (codec/envelope.h) over any bytes. Where both ParseEnvelope and
// protobuf's own parser accept the bytes, they must agree on the header and
// on the body field; a body must be a view inside the input.
//
// (They may disagree on acceptance: ParseEnvelope rejects groups and takes
// field numbers protobuf refuses; and a `result` field split in two is merged
// by protobuf but returned as its last part by ParseEnvelope.)
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "codec/envelope.h"
#include "google/protobuf/stubs/logging.h"
#include "rank/v1/rank.pb.h"
#include "tests/fuzz/view_checks.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto envelope = rankwire::ParseEnvelope(rankwire::SharedBytes::Unowned(bytes));
  if (!envelope.ok()) {
    RANKWIRE_FUZZ_CHECK(envelope.status().code() == absl::StatusCode::kDataLoss,
                        envelope.status().ToString());
    return 0;
  }
  if (envelope->has_body) {
    RANKWIRE_FUZZ_CHECK(
        envelope->body.data() >= bytes.data() &&
            envelope->body.data() + envelope->body.size() <= bytes.data() + bytes.size(),
        "body outside the input");
  }
  rank::v1::RankResponse message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) return 0;
  RANKWIRE_FUZZ_CHECK(message.header().SerializeAsString() == envelope->header.SerializeAsString(),
                      "header differs from protobuf's");
  switch (message.body_case()) {
    case rank::v1::RankResponse::kPayload:
      RANKWIRE_FUZZ_CHECK(envelope->has_body &&
                              envelope->body_kind == rankwire::BodyKind::kOpaquePayload &&
                              envelope->body.view() == message.payload(),
                          "payload differs from protobuf's");
      break;
    case rank::v1::RankResponse::kResult:
      RANKWIRE_FUZZ_CHECK(
          envelope->has_body && envelope->body_kind == rankwire::BodyKind::kProtobufResult,
          "body kind differs from protobuf's");
      break;
    case rank::v1::RankResponse::BODY_NOT_SET:
      RANKWIRE_FUZZ_CHECK(!envelope->has_body, "body protobuf does not see");
      break;
  }
  return 0;
}
