#include "base/pem_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace rankwire {

absl::StatusOr<std::string> ReadPemFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const std::string why = absl::StrCat(path, ": cannot read: ", std::strerror(errno));
    if (errno == ENOENT || errno == ENOTDIR) return absl::NotFoundError(why);
    if (errno == EACCES || errno == EPERM) return absl::PermissionDeniedError(why);
    return absl::InvalidArgumentError(why);
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  if (static_cast<size_t>(st.st_size) > kMaxPemFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", st.st_size, " bytes, more than a PEM file's ", kMaxPemFileBytes));
  }
  std::string pem;
  char buffer[16384];
  while (pem.size() <= kMaxPemFileBytes) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
    }
    pem.append(buffer, static_cast<size_t>(n));
  }
  if (pem.size() > kMaxPemFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": grew past ", kMaxPemFileBytes, " bytes while read"));
  }
  if (!absl::StrContains(pem, "-----BEGIN")) {
    return absl::InvalidArgumentError(absl::StrCat(path, " holds no PEM block"));
  }
  return pem;
}

}  // namespace rankwire
