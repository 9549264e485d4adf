#include "client/tls.h"

#include "absl/strings/str_cat.h"
#include "base/pem_file.h"

namespace rankwire::client {

absl::StatusOr<ClientSecurity> MakeClientSecurity(const ClientTlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert_file and --tls_key_file go together (a client certificate and its key)");
  }
  if (files.ca_file.empty()) {
    if (!files.cert_file.empty() || !files.server_name.empty()) {
      return absl::InvalidArgumentError(
          "--tls_cert_file/--tls_server_name need --tls_ca_file (TLS is off without it)");
    }
    return ClientSecurity{grpc::InsecureChannelCredentials(), ""};
  }
  grpc::SslCredentialsOptions options;
  absl::StatusOr<std::string> ca = ReadPemFile(files.ca_file);
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *std::move(ca);
  if (!files.cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadPemFile(files.cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPemFile(files.key_file);
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *std::move(cert);
    options.pem_private_key = *std::move(key);
  }
  return ClientSecurity{grpc::SslCredentials(options), files.server_name};
}

}  // namespace rankwire::client
