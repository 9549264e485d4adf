#include "client/envelope.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "codec/coding.h"

namespace rankwire::client {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

}  // namespace

absl::StatusOr<Envelope> ParseEnvelope(const SharedBytes& response) {
  Envelope out;
  coding::Reader r(response.view(), "envelope");
  while (!r.empty() && r.ok()) {
    const uint64_t tag = r.Varint64("field tag");
    const uint64_t field = tag >> 3;
    const int wire_type = static_cast<int>(tag & 7);
    if (!r.ok()) break;
    if (field == 0) {
      r.Fail("field tag", "field number 0");
      break;
    }
    switch (wire_type) {
      case kVarint:
        r.Varint64("unknown varint field");
        break;
      case kFixed64:
        r.Skip(8, "unknown fixed64 field");
        break;
      case kFixed32:
        r.Skip(4, "unknown fixed32 field");
        break;
      case kLengthDelimited: {
        absl::string_view value = r.LengthPrefixed("length-delimited field");
        if (!r.ok()) break;
        if (field == 1) {
          google::protobuf::io::CodedInputStream in(
              reinterpret_cast<const uint8_t*>(value.data()), static_cast<int>(value.size()));
          if (!out.header.MergeFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
            r.Fail("header", "ResponseHeader does not parse");
          }
        } else if (field == 2 || field == 3) {
          out.has_body = true;
          out.body_kind = field == 2 ? BodyKind::kProtobufResult : BodyKind::kOpaquePayload;
          out.body = response.Share(value);
        }
        break;
      }
      default:
        r.Fail("field tag", absl::StrCat("unsupported wire type ", wire_type));
    }
  }
  if (!r.ok()) return r.status();
  return out;
}

}  // namespace rankwire::client
