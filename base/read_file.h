// ReadFileChecked reads a whole configuration-sized file (a model, a
// manifest) the way a server that reloads it while serving must:
//   - the size is checked before anything is read, so a 1 GB file costs a
//     stat, not a gigabyte;
//   - the file is read through one descriptor and stat'ed before and after:
//     a file that changed while it was read (a writer still writing, a
//     rename over it) is refused, to be read again once it is stable;
//   - each failure carries a reason (base/status_reason.h): "not_found",
//     "permission_denied", "not_a_file", "too_large", "file_changed", "io".
// The path may be a symlink (a Kubernetes ConfigMap volume is symlinks to a
// directory that an update swaps); the stamp is of the file it resolves to.
//
// Thread safety: pure functions of the file system.
#ifndef RANKWIRE_BASE_READ_FILE_H_
#define RANKWIRE_BASE_READ_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace rankwire {

// What identifies one version of a file: a rewrite in place changes the
// size or modification time, a rename over it (or a symlink swap) the
// inode.
struct FileStamp {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  bool operator==(const FileStamp& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns &&
           ctime_ns == o.ctime_ns;
  }
  bool operator!=(const FileStamp& o) const { return !(*this == o); }
};

// The stamp of the file `path` names (following symlinks).
absl::StatusOr<FileStamp> StampOf(const std::string& path);

struct CheckedFile {
  std::string bytes;
  FileStamp stamp;
};

// The whole file, if it is a regular file of at most max_bytes that did not
// change while it was read. Errors name the path.
absl::StatusOr<CheckedFile> ReadFileChecked(const std::string& path, uint64_t max_bytes);

}  // namespace rankwire

#endif  // RANKWIRE_BASE_READ_FILE_H_
