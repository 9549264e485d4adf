// Server transport credentials from PEM files: plaintext when no
// certificate is given, TLS with --tls_cert_file/--tls_key_file, and mutual
// TLS (a client certificate signed by the given CA is required) when
// --tls_client_ca_file is set too. The metrics endpoint is plain HTTP on its
// own port and is not affected.
//
// Thread safety: pure function.
#ifndef RANKWIRE_SERVER_TLS_H_
#define RANKWIRE_SERVER_TLS_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace rankwire {

struct ServerTlsFiles {
  std::string cert_file;       // PEM certificate chain; empty: plaintext.
  std::string key_file;        // PEM private key of cert_file.
  std::string client_ca_file;  // PEM CA bundle; non-empty: client certs required.
};

// InvalidArgument for an inconsistent set of files (a key without a
// certificate, a client CA without a certificate); NotFound / PermissionDenied
// naming the file that cannot be read; InvalidArgument for a file that holds
// no PEM block.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files);

// True when `files` asks for TLS.
inline bool UsesTls(const ServerTlsFiles& files) { return !files.cert_file.empty(); }

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_TLS_H_
