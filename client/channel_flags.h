// Command-line flags that choose how rankwire-cli and rankwire-loadgen
// connect (balancing, retries, health checking), shared so both tools
// spell them the same way. Linked only into executables (rankwire::client
// itself defines no flags).
//
//   --lb_policy=round_robin --max_attempts=4 --health_service=rank.v1.RankService
//   --service_config='{"loadBalancingConfig":[{"pick_first":{}}]}'   # replaces all three
#ifndef RANKWIRE_CLIENT_CHANNEL_FLAGS_H_
#define RANKWIRE_CLIENT_CHANNEL_FLAGS_H_

#include "absl/status/statusor.h"
#include "client/rank_client.h"

namespace rankwire::client {

// ChannelOptions from the flags above. InvalidArgument for a service config
// file that cannot be read.
absl::StatusOr<ChannelOptions> ChannelOptionsFromFlags();

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_CHANNEL_FLAGS_H_
