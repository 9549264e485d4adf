// Client transport credentials from PEM files: plaintext when no CA is
// given, TLS verifying the server against --tls_ca_file, and a client
// certificate for mutual TLS with --tls_cert_file/--tls_key_file.
// --tls_server_name overrides the name checked against the server's
// certificate (for a target given as an IP address or a load balancer name).
//
// Thread safety: pure functions.
#ifndef RANKWIRE_CLIENT_TLS_H_
#define RANKWIRE_CLIENT_TLS_H_

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace rankwire::client {

struct ClientTlsFiles {
  std::string ca_file;      // PEM CA bundle the server's certificate must chain to.
  std::string cert_file;    // PEM client certificate (mutual TLS); optional.
  std::string key_file;     // PEM private key of cert_file.
  std::string server_name;  // Name to verify instead of the target's host.
};

// The credentials and the channel's SSL target-name override (empty: none).
struct ClientSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // Never null.
  std::string server_name;
};

// Plaintext (insecure) credentials when `files.ca_file` is empty and nothing
// else is set. InvalidArgument for an inconsistent set (a certificate
// without its key, a client certificate or server name without a CA);
// NotFound/PermissionDenied for an unreadable file.
absl::StatusOr<ClientSecurity> MakeClientSecurity(const ClientTlsFiles& files);

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_TLS_H_
