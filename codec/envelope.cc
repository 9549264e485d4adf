#include "codec/envelope.h"

#include "absl/strings/str_cat.h"
#include "codec/coding.h"
#include "google/protobuf/io/coded_stream.h"

namespace rankwire {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

constexpr uint8_t LengthDelimitedTag(int field) {
  static_assert(kEnvelopePayloadField < 16, "tags of fields 1-15 are one byte");
  return static_cast<uint8_t>((field << 3) | kLengthDelimited);
}

// Merges a ResponseHeader field's bytes into `header`.
void ReadHeader(absl::string_view value, rank::v1::ResponseHeader* header, coding::Reader* r) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(value.data()),
                                            static_cast<int>(value.size()));
  if (!header->MergeFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    r->Fail("header", "ResponseHeader does not parse");
  }
}

// Reads one length-delimited field: the header, a body, or an unknown one.
void ReadLengthDelimited(uint64_t field, const SharedBytes& response, coding::Reader* r,
                         Envelope* out) {
  absl::string_view value = r->LengthPrefixed("length-delimited field");
  if (!r->ok()) return;
  if (field == kEnvelopeHeaderField) {
    ReadHeader(value, &out->header, r);
  } else if (field == kEnvelopeResultField || field == kEnvelopePayloadField) {
    out->has_body = true;
    out->body_kind =
        field == kEnvelopeResultField ? BodyKind::kProtobufResult : BodyKind::kOpaquePayload;
    out->body = response.Share(value);
  }
}

}  // namespace

std::string EnvelopePrefix(const rank::v1::ResponseHeader& header, BodyKind kind,
                           size_t body_size) {
  const size_t header_size = header.ByteSizeLong();
  const size_t prefix_size =
      1 + coding::VarintLength(header_size) + header_size + 1 + coding::VarintLength(body_size);
  std::string prefix(prefix_size, '\0');
  coding::Writer w(prefix.data(), prefix.data() + prefix.size());
  w.PutByte(LengthDelimitedTag(kEnvelopeHeaderField));
  w.PutVarint64(header_size);
  header.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(w.Skip(header_size)));
  w.PutByte(LengthDelimitedTag(BodyField(kind)));
  w.PutVarint64(body_size);
  return prefix;
}

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
      case kLengthDelimited:
        ReadLengthDelimited(field, response, &r, &out);
        break;
      default:
        r.Fail("field tag", absl::StrCat("unsupported wire type ", wire_type));
    }
  }
  if (!r.ok()) return r.status();
  return out;
}

}  // namespace rankwire
