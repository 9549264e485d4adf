// The one place an absl::Status and a grpc::Status turn into each other,
// used by the server's reactors and by the client. absl's canonical codes
// have the same numbers as gRPC's, so both directions keep the code and the
// message.
//
// Thread safety: pure functions.
#ifndef RANKWIRE_RPC_STATUS_H_
#define RANKWIRE_RPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace rankwire {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace rankwire

#endif  // RANKWIRE_RPC_STATUS_H_
