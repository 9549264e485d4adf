#include "base/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_reason.h"

namespace rankwire {
namespace {

FileStamp StampFrom(const struct stat& st) {
  FileStamp s;
  s.device = static_cast<uint64_t>(st.st_dev);
  s.inode = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<uint64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return s;
}

absl::Status ErrnoError(const std::string& path, int error) {
  const std::string message = absl::StrCat(path, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return WithReason(absl::NotFoundError(message), "not_found");
    case EACCES:
    case EPERM:
      return WithReason(absl::PermissionDeniedError(message), "permission_denied");
    default:
      return WithReason(absl::UnavailableError(message), "io");
  }
}

}  // namespace

absl::StatusOr<FileStamp> StampOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoError(path, errno);
  return StampFrom(st);
}

absl::StatusOr<CheckedFile> ReadFileChecked(const std::string& path, uint64_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, errno);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat before;
  if (fstat(fd, &before) != 0) return ErrnoError(path, errno);
  if (!S_ISREG(before.st_mode)) {
    return WithReason(absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file")),
                      "not_a_file");
  }
  const uint64_t size = static_cast<uint64_t>(before.st_size);
  if (size > max_bytes) {
    return WithReason(absl::ResourceExhaustedError(
                          absl::StrCat(path, ": ", size, " bytes, over the limit of ", max_bytes)),
                      "too_large");
  }
  CheckedFile file;
  file.bytes.resize(size);
  size_t got = 0;
  while (got < size) {
    const ssize_t r = read(fd, file.bytes.data() + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoError(path, errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  // One byte more than the size said means the file grew while it was read.
  char extra = 0;
  const bool grew = got == size && read(fd, &extra, 1) > 0;
  struct stat after;
  if (fstat(fd, &after) != 0) return ErrnoError(path, errno);
  // The path may have been renamed over (a new inode) while we read the old.
  struct stat now;
  const bool replaced =
      stat(path.c_str(), &now) != 0 || now.st_ino != before.st_ino || now.st_dev != before.st_dev;
  file.stamp = StampFrom(before);
  if (got != size || grew || StampFrom(after) != file.stamp || replaced) {
    return WithReason(absl::UnavailableError(absl::StrCat(
                          path, ": changed while it was read (", size, " bytes at the start, ", got,
                          grew ? "+" : "", " read); it is read again once it stops changing")),
                      "file_changed");
  }
  return file;
}

}  // namespace rankwire
