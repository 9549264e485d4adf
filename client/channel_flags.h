// Command-line flags that rankwire-cli and rankwire-loadgen share, defined
// once so both tools spell and mean them the same way. Linked only into
// executables (rankwire::client itself defines no flags).
//
// How they connect: balancing, retries, health checking, and TLS
// (--tls_ca_file, --tls_cert_file, --tls_key_file, --tls_server_name, see
// client/tls.h):
//   --lb_policy=round_robin --max_attempts=4 --health_service=rank.v1.RankService
//   --service_config='{"loadBalancingConfig":[{"pick_first":{}}]}'   # replaces all three
//   --tls_ca_file=ca.pem [--tls_cert_file=c.pem --tls_key_file=k.pem] [--tls_server_name=n]
// What they send (declared below, read with absl::GetFlag(FLAGS_target)):
//   --target --codec --log_mode --candidates --top_n --seed --deadline_ms
#ifndef RANKWIRE_CLIENT_CHANNEL_FLAGS_H_
#define RANKWIRE_CLIENT_CHANNEL_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "client/rank_client.h"

ABSL_DECLARE_FLAG(std::string, target);
ABSL_DECLARE_FLAG(std::string, codec);
ABSL_DECLARE_FLAG(std::string, log_mode);
ABSL_DECLARE_FLAG(uint32_t, candidates);
ABSL_DECLARE_FLAG(uint32_t, top_n);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(int, deadline_ms);

namespace rankwire::client {

// ChannelOptions from the flags above and the TLS flags. InvalidArgument for
// a service config file that cannot be read or an inconsistent TLS flag set;
// NotFound/PermissionDenied for an unreadable PEM file.
absl::StatusOr<ChannelOptions> ChannelOptionsFromFlags();

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_CHANNEL_FLAGS_H_
