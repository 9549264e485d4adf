#include "client/tls_flags.h"

#include <string>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA bundle to verify the server with; set it to use TLS (empty: plaintext).");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM client certificate, for servers that require one (mutual TLS).");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name to verify in the server's certificate instead of the target's host.");

namespace rankwire::client {

absl::StatusOr<ClientSecurity> ClientSecurityFromFlags() {
  return MakeClientSecurity(ClientTlsFiles{
      absl::GetFlag(FLAGS_tls_ca_file), absl::GetFlag(FLAGS_tls_cert_file),
      absl::GetFlag(FLAGS_tls_key_file), absl::GetFlag(FLAGS_tls_server_name)});
}

}  // namespace rankwire::client
