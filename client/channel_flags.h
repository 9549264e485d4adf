// Command-line flags that choose how rankwire-cli and rankwire-loadgen
// connect (balancing, retries, health checking, and TLS: --tls_ca_file,
// --tls_cert_file, --tls_key_file, --tls_server_name, see client/tls.h),
// shared so both tools spell them the same way. Linked only into executables (rankwire::client
// itself defines no flags).
//
//   --lb_policy=round_robin --max_attempts=4 --health_service=rank.v1.RankService
//   --service_config='{"loadBalancingConfig":[{"pick_first":{}}]}'   # replaces all three
//   --tls_ca_file=ca.pem [--tls_cert_file=c.pem --tls_key_file=k.pem] [--tls_server_name=n]
#ifndef RANKWIRE_CLIENT_CHANNEL_FLAGS_H_
#define RANKWIRE_CLIENT_CHANNEL_FLAGS_H_

#include "absl/status/statusor.h"
#include "client/rank_client.h"

namespace rankwire::client {

// ChannelOptions from the flags above and the TLS flags. InvalidArgument for
// a service config file that cannot be read or an inconsistent TLS flag set;
// NotFound/PermissionDenied for an unreadable PEM file.
absl::StatusOr<ChannelOptions> ChannelOptionsFromFlags();

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_CHANNEL_FLAGS_H_
