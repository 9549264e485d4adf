#include "ranking/encoded_response.h"

#include <grpcpp/support/byte_buffer.h>

#include <vector>

#include "codec/envelope.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

EncodedResponse Make(BodyKind kind, std::string body) {
  EncodedResponse r;
  r.header.set_request_id("req-1");
  r.header.set_codec(kind == BodyKind::kProtobufResult ? "protobuf" : "rankbin");
  r.header.set_item_count(2);
  r.header.mutable_timings()->set_rank_us(42);
  r.body_kind = kind;
  r.body = std::make_shared<const OwnedBuffer>(OwnedBuffer::CopyOf(body));
  return r;
}

std::string Flatten(grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

TEST(EncodedResponseTest, PayloadIsSentWithoutACopy) {
  EncodedResponse r = Make(BodyKind::kOpaquePayload, std::string(100000, 'x'));
  const char* body = r.body->data();
  grpc::ByteBuffer buffer = ToByteBuffer(r);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 2u);
  // The second slice is the codec's own buffer.
  EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), body);
  EXPECT_EQ(slices[1].size(), 100000u);
}

TEST(EncodedResponseTest, BytesAreAValidRankResponse) {
  for (BodyKind kind : {BodyKind::kOpaquePayload, BodyKind::kProtobufResult}) {
    rank::v1::RankResult result;
    result.add_items()->set_item_id("a");
    result.add_items()->set_item_id("b");
    EncodedResponse r =
        Make(kind, kind == BodyKind::kProtobufResult ? result.SerializeAsString()
                                                     : std::string("\x01\x02\x03", 3));
    grpc::ByteBuffer buffer = ToByteBuffer(r);
    const std::string wire = Flatten(buffer);

    rank::v1::RankResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire));
    EXPECT_EQ(parsed.header().request_id(), "req-1");
    EXPECT_EQ(parsed.header().timings().rank_us(), 42u);
    if (kind == BodyKind::kProtobufResult) {
      ASSERT_EQ(parsed.body_case(), rank::v1::RankResponse::kResult);
      EXPECT_EQ(parsed.result().items(1).item_id(), "b");
    } else {
      ASSERT_EQ(parsed.body_case(), rank::v1::RankResponse::kPayload);
      EXPECT_EQ(parsed.payload(), std::string("\x01\x02\x03", 3));
    }
    // And the client's envelope reader agrees.
    absl::StatusOr<Envelope> envelope = ParseEnvelope(SharedBytes::FromString(wire));
    ASSERT_TRUE(envelope.ok()) << envelope.status();
    EXPECT_EQ(envelope->body_kind, kind);
    EXPECT_EQ(envelope->body.view(), r.body->view());
  }
}

TEST(EncodedResponseTest, BodyOutlivesTheResponseObject) {
  grpc::ByteBuffer buffer;
  {
    EncodedResponse r = Make(BodyKind::kOpaquePayload, "payload bytes");
    buffer = ToByteBuffer(r);
  }
  const std::string wire = Flatten(buffer);
  EXPECT_NE(wire.find("payload bytes"), std::string::npos);
}

}  // namespace
}  // namespace rankwire
