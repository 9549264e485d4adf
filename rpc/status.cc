#include "rpc/status.h"

#include <string>

namespace rankwire {

static_assert(static_cast<int>(absl::StatusCode::kResourceExhausted) ==
                      static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED) &&
                  static_cast<int>(absl::StatusCode::kUnauthenticated) ==
                      static_cast<int>(grpc::StatusCode::UNAUTHENTICATED),
              "absl and gRPC status codes share their numbers");

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace rankwire
