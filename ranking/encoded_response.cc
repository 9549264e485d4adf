#include "ranking/encoded_response.h"

#include <grpcpp/support/slice.h>

#include <string>

namespace rankwire {
namespace {

// gRPC calls this when it is done with the body slice.
void ReleaseBody(void* user_data) {
  delete static_cast<std::shared_ptr<const OwnedBuffer>*>(user_data);
}

}  // namespace

grpc::ByteBuffer ToByteBuffer(const EncodedResponse& response) {
  const size_t body_size = response.body ? response.body->size() : 0;
  std::string prefix = EnvelopePrefix(response.header, response.body_kind, body_size);
  grpc::Slice slices[2] = {grpc::Slice(prefix), grpc::Slice()};
  size_t count = 1;
  if (body_size > 0) {
    auto* keep = new std::shared_ptr<const OwnedBuffer>(response.body);
    slices[1] =
        grpc::Slice(const_cast<char*>((*keep)->data()), (*keep)->size(), &ReleaseBody, keep);
    count = 2;
  }
  return grpc::ByteBuffer(slices, count);
}

}  // namespace rankwire
