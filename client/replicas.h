// The replicas behind a gRPC target, one address each, so an operator's
// tool can ask every replica on its own (rankwire-cli --health) where a
// channel would balance over them and hide which one answered.
//
//   "ipv4:10.0.0.1:50051,10.0.0.2:50051"   each address (likewise ipv6:)
//   "dns:///rankwire.ns.svc:50051"         every address the name resolves
//                                          to now (a headless Service: every
//                                          ready pod)
//   "a:50051,b:50051"                      each, as written (ChannelTargetOf
//                                          resolves them for one channel)
//   "localhost:50051", "unix:/path"        that one target
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<Replica> replicas, ReplicasOf(target));
//   for (const Replica& r : replicas) ... MakeChannel(r.target, ...) ...
//
// Thread safety: a function of its argument and the system resolver.
#ifndef RANKWIRE_CLIENT_REPLICAS_H_
#define RANKWIRE_CLIENT_REPLICAS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rankwire::client {

struct Replica {
  std::string address;  // For people: "10.0.0.7:50051", "[fd00::7]:50051".
  std::string target;   // For gRPC: "ipv4:10.0.0.7:50051".
};

// InvalidArgument for an empty target or a list element without a port;
// NotFound if a dns: name does not resolve.
absl::StatusOr<std::vector<Replica>> ReplicasOf(const std::string& target);

// The gRPC target a channel balancing over `target`'s replicas dials: the
// target itself, except for a comma list ("a:50051,b:50051", which gRPC
// would take for one DNS name), whose elements are resolved now into one
// "ipv4:" (or "ipv6:") list. InvalidArgument for a malformed list or one
// mixing IPv4 and IPv6 addresses; NotFound for a name that does not
// resolve.
absl::StatusOr<std::string> ChannelTargetOf(const std::string& target);

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_REPLICAS_H_
