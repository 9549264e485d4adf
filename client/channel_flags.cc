#include "client/channel_flags.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "client/tls.h"
#include "codec/builtin_codecs.h"

ABSL_FLAG(std::string, target, "localhost:50051",
          "Server: host:port, dns:///name:port (every address of the name), "
          "ipv4:a:port,b:port (a list of replicas) or host:port,host:port (each resolved at "
          "start); calls are balanced over them by --lb_policy.");
ABSL_FLAG(std::string, codec, "",
          absl::StrCat("Codecs to accept, most preferred first, comma-separated (empty: the "
                       "server's default). Known: ",
                       rankwire::BuiltinCodecNames(), "."));
ABSL_FLAG(std::string, log_mode, "default", "default, store, inline or none.");
ABSL_FLAG(uint32_t, candidates, 500, "Candidates per generated request.");
ABSL_FLAG(uint32_t, top_n, 10, "Items each response shows: read in full, as a caller does.");
ABSL_FLAG(uint64_t, seed, 20261129, "Workload seed of the generated requests.");
ABSL_FLAG(int, deadline_ms, 5000, "Per-call deadline.");

ABSL_FLAG(std::string, lb_policy, "round_robin",
          "Load balancing over the addresses the target resolves to: round_robin "
          "or pick_first.");
ABSL_FLAG(int, max_attempts, 4,
          "Attempts per call when one fails with UNAVAILABLE (1: no retry; at most 5).");
ABSL_FLAG(std::string, health_service, "rank.v1.RankService",
          "Health service name watched on every replica; a NOT_SERVING replica gets "
          "no new calls (empty: no client-side health checking).");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA bundle to verify the server with; set it to use TLS (empty: plaintext).");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM client certificate, for servers that require one (mutual TLS).");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name to verify in the server's certificate instead of the target's host.");
ABSL_FLAG(std::string, grpc_transport_args, rankwire::rpc::kDefaultTransportArgs,
          "gRPC HTTP/2 and TCP arguments of the channel, name=value,... (empty: gRPC's "
          "defaults).");
ABSL_FLAG(std::string, service_config, "",
          "A gRPC service config (JSON, or @file) that replaces --lb_policy, "
          "--max_attempts and --health_service.");

namespace rankwire::client {

absl::StatusOr<ChannelOptions> ChannelOptionsFromFlags() {
  ChannelOptions options;
  options.lb_policy = absl::GetFlag(FLAGS_lb_policy);
  options.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  options.health_service = absl::GetFlag(FLAGS_health_service);
  absl::StatusOr<rpc::TransportArgs> transport =
      rpc::ParseTransportArgs(absl::GetFlag(FLAGS_grpc_transport_args));
  if (!transport.ok()) return transport.status();
  options.transport_args = *std::move(transport);
  std::string config = absl::GetFlag(FLAGS_service_config);
  if (absl::StartsWith(config, "@")) {
    std::ifstream in(config.substr(1));
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("--service_config: cannot read ", config.substr(1)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    config = text.str();
  }
  options.service_config = std::move(config);
  ASSIGN_OR_RETURN(ClientSecurity security,
                   MakeClientSecurity(ClientTlsFiles{
                       absl::GetFlag(FLAGS_tls_ca_file), absl::GetFlag(FLAGS_tls_cert_file),
                       absl::GetFlag(FLAGS_tls_key_file), absl::GetFlag(FLAGS_tls_server_name)}));
  options.credentials = std::move(security.credentials);
  options.ssl_target_name = std::move(security.server_name);
  return options;
}

}  // namespace rankwire::client
