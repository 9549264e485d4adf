#include "server/tls.h"

#include <grpcpp/security/server_credentials.h>

#include "absl/strings/str_cat.h"
#include "base/pem_file.h"

namespace rankwire {
namespace {

// A PEM file's contents, or an error naming the flag and the file.
absl::StatusOr<std::string> LoadPem(absl::string_view flag, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadPemFile(path);
  if (pem.ok()) return pem;
  return absl::Status(pem.status().code(), absl::StrCat("--", flag, "=", pem.status().message()));
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files) {
  if (files.cert_file.empty()) {
    if (!files.key_file.empty() || !files.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_key_file/--tls_client_ca_file need --tls_cert_file (TLS is off without it)");
    }
    return grpc::InsecureServerCredentials();
  }
  if (files.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file needs --tls_key_file");
  }
  absl::StatusOr<std::string> cert = LoadPem("tls_cert_file", files.cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = LoadPem("tls_key_file", files.key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = LoadPem("tls_client_ca_file", files.client_ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace rankwire
