// The one place in the server an absl::Status becomes a grpc::Status. absl's canonical
// codes have the same numbers as gRPC's, so the conversion keeps the code and
// the message.
#ifndef RANKWIRE_SERVER_STATUS_UTIL_H_
#define RANKWIRE_SERVER_STATUS_UTIL_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace rankwire {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_STATUS_UTIL_H_
