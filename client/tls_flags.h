// The client-side TLS flags shared by rankwire-cli and rankwire-loadgen:
// --tls_ca_file, --tls_cert_file, --tls_key_file, --tls_server_name
// (see client/tls.h). Linked only into those mains, so that linking the
// client library does not add flags to every program.
#ifndef RANKWIRE_CLIENT_TLS_FLAGS_H_
#define RANKWIRE_CLIENT_TLS_FLAGS_H_

#include "absl/status/statusor.h"
#include "client/tls.h"

namespace rankwire::client {

// MakeClientSecurity over the flags' values.
absl::StatusOr<ClientSecurity> ClientSecurityFromFlags();

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_TLS_FLAGS_H_
