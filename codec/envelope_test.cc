// Tests of codec/envelope.h: reading a rank.v1.RankResponse without parsing
// its body. Envelopes are built with the real generated protobuf classes, and
// protobuf's own parser is the oracle for what ParseEnvelope must find.
#include "codec/envelope.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/builtin_codecs.h"
#include "codec/coding.h"
#include "codec/protobuf/protobuf_codec.h"
#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

// Protobuf wire pieces, for fields the generated classes would not write.
std::string Varint(uint64_t v) {
  char buf[coding::kMaxVarint64Length];
  return std::string(buf, coding::EncodeVarint64(buf, v));
}
std::string Tag(uint64_t field, int wire_type) { return Varint(field << 3 | wire_type); }
std::string LengthDelimited(uint64_t field, const std::string& value) {
  return Tag(field, 2) + Varint(value.size()) + value;
}

rank::v1::ResponseHeader SampleHeader() {
  rank::v1::ResponseHeader h;
  h.set_request_id("req-42");
  h.set_codec("rankbin");
  h.set_format_version(1);
  h.set_item_count(500);
  h.mutable_timings()->set_rank_us(1234);
  h.mutable_timings()->set_total_us(2345);
  h.set_log_mode(rank::v1::LOG_MODE_STORE);
  h.set_log_key("rankwire:log:req-42");
  h.set_model_version("lr-v3");
  return h;
}

std::string HeaderBytes(const rank::v1::ResponseHeader& h) { return h.SerializeAsString(); }

// The envelope ParseEnvelope must find in `bytes`, by protobuf's rules.
// Returns false if protobuf rejects the bytes.
bool ProtobufParse(const std::string& bytes, rank::v1::RankResponse* out) {
  google::protobuf::LogSilencer quiet;
  return out->ParseFromString(bytes);
}

// ParseEnvelope agrees with protobuf: same header, same body field, and for
// a payload the same bytes.
void ExpectSameAsProtobuf(const std::string& bytes) {
  rank::v1::RankResponse want;
  ASSERT_TRUE(ProtobufParse(bytes, &want));
  absl::StatusOr<Envelope> got = ParseEnvelope(SharedBytes::FromString(bytes));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(HeaderBytes(got->header), HeaderBytes(want.header()));
  switch (want.body_case()) {
    case rank::v1::RankResponse::kPayload:
      EXPECT_TRUE(got->has_body);
      EXPECT_EQ(got->body_kind, BodyKind::kOpaquePayload);
      EXPECT_EQ(got->body.view(), want.payload());
      break;
    case rank::v1::RankResponse::kResult:
      EXPECT_TRUE(got->has_body);
      EXPECT_EQ(got->body_kind, BodyKind::kProtobufResult);
      break;
    case rank::v1::RankResponse::BODY_NOT_SET:
      EXPECT_FALSE(got->has_body);
      break;
  }
}

TEST(EnvelopeTest, HeaderAndPayload) {
  rank::v1::RankResponse response;
  *response.mutable_header() = SampleHeader();
  const std::string payload("RKWB\x01\x00\x00\x00\xff\x00 binary", 18);
  response.set_payload(payload);
  const SharedBytes bytes = SharedBytes::FromString(response.SerializeAsString());

  absl::StatusOr<Envelope> e = ParseEnvelope(bytes);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(HeaderBytes(e->header), HeaderBytes(SampleHeader()));
  EXPECT_EQ(e->header.request_id(), "req-42");
  EXPECT_EQ(e->header.timings().total_us(), 2345u);
  EXPECT_TRUE(e->has_body);
  EXPECT_EQ(e->body_kind, BodyKind::kOpaquePayload);
  EXPECT_EQ(e->body.view(), payload);
  // The body is a view into the response, not a copy.
  EXPECT_GE(e->body.data(), bytes.data());
  EXPECT_LE(e->body.data() + e->body.size(), bytes.data() + bytes.size());
}

TEST(EnvelopeTest, HeaderAndProtobufResult) {
  RankResult model;
  const uint32_t ctr = model.AddKey("ctr", MetricType::kDouble);
  model.SetDouble(model.AddItem("sku-1", 0.5, 1), ctr, 0.25);
  rank::v1::RankResponse response;
  *response.mutable_header() = SampleHeader();
  ASSERT_TRUE(ToProto(model, response.mutable_result()).ok());

  absl::StatusOr<Envelope> e = ParseEnvelope(SharedBytes::FromString(response.SerializeAsString()));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->has_body);
  EXPECT_EQ(e->body_kind, BodyKind::kProtobufResult);
  EXPECT_EQ(e->body.view(), response.result().SerializeAsString());
  absl::StatusOr<RankResult> decoded = ProtobufCodec().Decode(e->body);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(DiffResults(*decoded, model), "");
}

TEST(EnvelopeTest, RankbinPayloadOpensFromTheBody) {
  RankResult model;
  const uint32_t src = model.AddKey("recall.source", MetricType::kString);
  const uint32_t ann = model.AddStringEntry(src, "vector_ann");
  for (int i = 0; i < 3; ++i) {
    const size_t item = model.AddItem("sku-" + std::to_string(i), 0, static_cast<uint32_t>(i + 1));
    model.SetStringCode(item, src, ann);
  }
  absl::StatusOr<CodecRegistry> registry = MakeBuiltinCodecs({});
  ASSERT_TRUE(registry.ok());
  const Codec* rankbin = registry->Find("rankbin-zstd");
  absl::StatusOr<OwnedBuffer> payload = rankbin->Encode(model);
  ASSERT_TRUE(payload.ok());
  rank::v1::RankResponse response;
  response.mutable_header()->set_codec("rankbin-zstd");
  response.set_payload(std::string(payload->view()));

  absl::StatusOr<Envelope> e = ParseEnvelope(SharedBytes::FromString(response.SerializeAsString()));
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->header.codec(), "rankbin-zstd");
  absl::StatusOr<RankResult> decoded = registry->Find(e->header.codec())->Decode(e->body);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(DiffResults(*decoded, model), "");
}

TEST(EnvelopeTest, BodyOutlivesTheCallersHandle) {
  rank::v1::RankResponse response;
  response.set_payload(std::string(1000, 'p'));
  absl::StatusOr<Envelope> e = ParseEnvelope(SharedBytes::FromString(response.SerializeAsString()));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->body.view(), std::string(1000, 'p'));  // The temporary's bytes live on.
}

TEST(EnvelopeTest, NoBodyAndEmptyResponse) {
  rank::v1::RankResponse header_only;
  *header_only.mutable_header() = SampleHeader();
  absl::StatusOr<Envelope> e =
      ParseEnvelope(SharedBytes::FromString(header_only.SerializeAsString()));
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->has_body);
  EXPECT_EQ(e->header.item_count(), 500u);

  absl::StatusOr<Envelope> empty = ParseEnvelope(SharedBytes::FromString(""));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_body);
  EXPECT_EQ(HeaderBytes(empty->header), "");

  // An empty payload is a body (the oneof is set), of zero bytes.
  rank::v1::RankResponse empty_payload;
  empty_payload.set_payload("");
  absl::StatusOr<Envelope> ep =
      ParseEnvelope(SharedBytes::FromString(empty_payload.SerializeAsString()));
  ASSERT_TRUE(ep.ok());
  EXPECT_TRUE(ep->has_body);
  EXPECT_EQ(ep->body.size(), 0u);
}

TEST(EnvelopeTest, UnknownFieldsOfEveryWireTypeAreSkipped) {
  const std::string unknown = Tag(4, 0) + Varint(300) +                     // varint
                              Tag(15, 1) + std::string(8, '\x11') +         // fixed64
                              LengthDelimited(1000, "future message") +     // bytes
                              Tag(536870911, 5) + std::string(4, '\x22') +  // fixed32, max field
                              Tag(16, 0) + Varint(UINT64_MAX);
  const std::string header = LengthDelimited(1, HeaderBytes(SampleHeader()));
  const std::string payload = LengthDelimited(3, "payload bytes");
  ExpectSameAsProtobuf(unknown + header + unknown + payload + unknown);
  absl::StatusOr<Envelope> e = ParseEnvelope(SharedBytes::FromString(unknown + header + payload));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->body.view(), "payload bytes");
  EXPECT_EQ(e->header.request_id(), "req-42");
}

TEST(EnvelopeTest, KnownFieldWithAnotherWireTypeIsSkippedLikeProtobuf) {
  // Field 1 as a varint and field 3 as a fixed32 are not the header or the
  // payload; protobuf keeps them as unknown fields.
  ExpectSameAsProtobuf(Tag(1, 0) + Varint(7) + Tag(3, 5) + "abcd" +
                       LengthDelimited(3, "the payload"));
}

TEST(EnvelopeTest, FieldsInAnyOrder) {
  ExpectSameAsProtobuf(LengthDelimited(3, "body first") +
                       LengthDelimited(1, HeaderBytes(SampleHeader())));
}

TEST(EnvelopeTest, RepeatedHeadersAreMerged) {
  rank::v1::ResponseHeader first;
  first.set_request_id("req-1");
  first.set_codec("protobuf");
  first.mutable_timings()->set_rank_us(10);
  rank::v1::ResponseHeader second;
  second.set_codec("rankbin");
  second.set_item_count(3);
  second.mutable_timings()->set_total_us(20);
  const std::string bytes = LengthDelimited(1, HeaderBytes(first)) + LengthDelimited(3, "p") +
                            LengthDelimited(1, HeaderBytes(second));
  ExpectSameAsProtobuf(bytes);
  absl::StatusOr<Envelope> e = ParseEnvelope(SharedBytes::FromString(bytes));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->header.request_id(), "req-1");
  EXPECT_EQ(e->header.codec(), "rankbin");
  EXPECT_EQ(e->header.timings().rank_us(), 10u);
  EXPECT_EQ(e->header.timings().total_us(), 20u);
}

TEST(EnvelopeTest, LastBodyFieldWins) {
  rank::v1::RankResult result;
  result.add_items()->set_item_id("x");
  const std::string as_result = LengthDelimited(2, result.SerializeAsString());
  const std::string as_payload = LengthDelimited(3, "opaque");
  ExpectSameAsProtobuf(as_result + as_payload);
  ExpectSameAsProtobuf(as_payload + as_result);
  ExpectSameAsProtobuf(as_payload + LengthDelimited(3, "second"));
  absl::StatusOr<Envelope> e = ParseEnvelope(SharedBytes::FromString(as_payload + as_result));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->body_kind, BodyKind::kProtobufResult);
  EXPECT_EQ(e->body.view(), result.SerializeAsString());
}

// Every prefix of an envelope: ParseEnvelope fails (DataLoss) exactly when
// protobuf does, and otherwise finds what protobuf finds (a prefix that ends
// between fields is a valid, shorter envelope).
TEST(EnvelopeTest, EveryPrefixAgreesWithProtobuf) {
  rank::v1::RankResponse response;
  *response.mutable_header() = SampleHeader();
  response.set_payload(std::string("payload\0with\0nuls", 17));
  const std::string bytes = response.SerializeAsString() + Tag(99, 1) + std::string(8, 'x');
  int failures = 0;
  for (size_t len = 0; len <= bytes.size(); ++len) {
    const std::string prefix = bytes.substr(0, len);
    SCOPED_TRACE(len);
    rank::v1::RankResponse want;
    absl::StatusOr<Envelope> got = ParseEnvelope(SharedBytes::FromString(prefix));
    if (!ProtobufParse(prefix, &want)) {
      EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(got.status().message(), HasSubstr("envelope"));
      ++failures;
      continue;
    }
    ExpectSameAsProtobuf(prefix);
  }
  EXPECT_GT(failures, 0);
}

TEST(EnvelopeTest, GarbledEnvelopesAreDataLoss) {
  const std::string header = LengthDelimited(1, HeaderBytes(SampleHeader()));
  struct Case {
    const char* what;
    std::string bytes;
  };
  const Case cases[] = {
      {"field number 0", Tag(0, 2) + Varint(1) + "x"},
      {"wire type 3 (start group)", header + Tag(7, 3)},
      {"wire type 4 (end group)", Tag(7, 4)},
      {"wire type 6", Tag(7, 6) + "xxxxxxxx"},
      {"wire type 7", header + Tag(7, 7)},
      {"length past the end", header + Tag(3, 2) + Varint(100) + "short"},
      {"huge length", Tag(3, 2) + Varint(UINT64_MAX) + "x"},
      {"truncated tag", header + "\x80"},
      {"tag over 10 bytes", std::string(10, '\x80') + "\x01"},
      {"truncated fixed64", Tag(9, 1) + "1234567"},
      {"truncated fixed32", Tag(9, 5) + "123"},
      {"header that does not parse", LengthDelimited(1, "\xff\xff\xff")},
      {"header with a bad string", LengthDelimited(1, LengthDelimited(1, "\xc3\x28"))},
  };
  google::protobuf::LogSilencer quiet;
  for (const Case& c : cases) {
    absl::StatusOr<Envelope> e = ParseEnvelope(SharedBytes::FromString(c.bytes));
    EXPECT_EQ(e.status().code(), absl::StatusCode::kDataLoss) << c.what;
    EXPECT_THAT(e.status().message(), HasSubstr("envelope")) << c.what;
  }
}

}  // namespace
}  // namespace rankwire
