#include "server/encoded_response.h"

#include <grpcpp/support/slice.h>

#include "codec/coding.h"

namespace rankwire::server {
namespace {

constexpr uint8_t LengthDelimitedTag(int field) {
  return static_cast<uint8_t>((field << 3) | 2);
}

// gRPC calls this when it is done with the body slice.
void ReleaseBody(void* user_data) {
  delete static_cast<std::shared_ptr<const OwnedBuffer>*>(user_data);
}

}  // namespace

std::string EnvelopePrefix(const EncodedResponse& response) {
  const size_t header_size = response.header.ByteSizeLong();
  const size_t body_size = response.body ? response.body->size() : 0;
  const size_t prefix_size = 1 + coding::VarintLength(header_size) + header_size +
                             1 + coding::VarintLength(body_size);
  std::string prefix(prefix_size, '\0');
  coding::Writer w(prefix.data(), prefix.data() + prefix.size());
  w.PutByte(LengthDelimitedTag(kHeaderField));
  w.PutVarint64(header_size);
  response.header.SerializeWithCachedSizesToArray(
      reinterpret_cast<uint8_t*>(w.Skip(header_size)));
  w.PutByte(LengthDelimitedTag(response.body_kind == BodyKind::kProtobufResult
                                   ? kResultField
                                   : kPayloadField));
  w.PutVarint64(body_size);
  return prefix;
}

}  // namespace rankwire::server

namespace grpc {

Status SerializationTraits<rankwire::server::EncodedResponse>::Serialize(
    const rankwire::server::EncodedResponse& response, ByteBuffer* buffer,
    bool* own_buffer) {
  using rankwire::OwnedBuffer;
  *own_buffer = true;
  std::string prefix = rankwire::server::EnvelopePrefix(response);
  Slice slices[2] = {Slice(prefix), Slice()};
  size_t count = 1;
  if (response.body && response.body->size() > 0) {
    auto* keep = new std::shared_ptr<const OwnedBuffer>(response.body);
    slices[1] = Slice(const_cast<char*>((*keep)->data()), (*keep)->size(),
                      &rankwire::server::ReleaseBody, keep);
    count = 2;
  }
  ByteBuffer out(slices, count);
  buffer->Swap(&out);
  return Status::OK;
}

Status SerializationTraits<rankwire::server::EncodedResponse>::Deserialize(
    ByteBuffer*, rankwire::server::EncodedResponse*) {
  return Status(StatusCode::UNIMPLEMENTED,
                "EncodedResponse is written by the server only");
}

}  // namespace grpc
