// rankwire-cli's commands over a fleet: each asks every replica behind a
// target (client/replicas.h: each address of an ipv4: list, of a dns: name,
// or of a comma list) on a channel of its own, without balancing or
// client-side health checking (which would hide a NOT_SERVING replica), and
// prints one line per replica, named by its address:
//
//   HealthOfReplicas  grpc.health.v1.Health/Check for "" and
//                     rank.v1.RankService
//   ModelsOfReplicas  rank.v1.ModelService/GetModels: what each serves, per
//                     experiment bucket, and its last refused load
//   ReloadReplicas    rank.v1.ModelService/ReloadModels on the plaintext
//                     health ports (--health_port, with --model_admin_rpc)
//
// Health and models can wait (FleetOptions::wait): they ask again every
// 100 ms until every replica is SERVING, or serves exactly `expect_model`,
// and print the last round. Part of the rankwire-cli executable, not of the
// installed client.
//
// Thread safety: functions of their arguments; they print to stdout.
#ifndef RANKWIRE_CLIENT_CLI_FLEET_H_
#define RANKWIRE_CLIENT_CLI_FLEET_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/rank_client.h"

namespace rankwire::client {

struct FleetOptions {
  std::string target;
  // TLS and the rest; the balancing policy, health checking and service
  // config are replaced (one replica per channel). ReloadReplicas always
  // speaks plaintext: the health port does.
  ChannelOptions channel;
  absl::Duration deadline = absl::Seconds(5);  // Per call.
  // Ask again until the condition holds, up to this long (zero: once).
  absl::Duration wait = absl::ZeroDuration();
  // ModelsOfReplicas: the models every replica must serve, exactly:
  // "name@version", comma-separated (in any order and bucket); empty: any.
  std::string expect_model;
};

// Unavailable unless every replica is SERVING for both names.
absl::Status HealthOfReplicas(const FleetOptions& options);
// An error if a replica does not answer, or does not serve expect_model.
absl::Status ModelsOfReplicas(const FleetOptions& options);
// FailedPrecondition if a replica refused the new models (the reason is on
// its line), the call's error if one could not be asked.
absl::Status ReloadReplicas(const FleetOptions& options);

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_CLI_FLEET_H_
