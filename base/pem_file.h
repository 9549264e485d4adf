// ReadPemFile reads a PEM file (a certificate, a key, a CA bundle) for the
// TLS set-up of the server and the clients, without exceptions and without
// reading forever: NotFound (no such file), PermissionDenied (not
// readable), InvalidArgument (a directory, a device or FIFO, over 1 MiB, or
// no "-----BEGIN" line), each naming the path. What a mount mistake in a
// pod (a Secret mounted as a directory) gives is then a clear start-up
// error, not a crash.
//
// Example:
//   absl::StatusOr<std::string> cert = ReadPemFile("/etc/rankwire/tls/tls.crt");
//
// Thread safety: a function of the file system only.
#ifndef RANKWIRE_BASE_PEM_FILE_H_
#define RANKWIRE_BASE_PEM_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace rankwire {

inline constexpr size_t kMaxPemFileBytes = size_t{1} << 20;

absl::StatusOr<std::string> ReadPemFile(const std::string& path);

}  // namespace rankwire

#endif  // RANKWIRE_BASE_PEM_FILE_H_
