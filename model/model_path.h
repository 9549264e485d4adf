// ResolveModelPath finds the model file or directory --model names, so the server starts
// from any working directory. An absolute path is used as is. A relative
// path is tried, in order:
//
//   1. against the working directory (the repo root in development);
//   2. <dir of the executable>/models/<file name> (the build tree: CMake
//      links model/models next to rankwire-server);
//   3. <dir of the executable>/../share/rankwire/models/<file name> (an
//      installed server: `cmake --install` puts the models there).
//
// NotFound lists every path that was tried.
//
// Thread safety: a pure function of its arguments and the file system.
#ifndef RANKWIRE_MODEL_MODEL_PATH_H_
#define RANKWIRE_MODEL_MODEL_PATH_H_

#include <string>

#include "absl/status/statusor.h"

namespace rankwire {

// `executable` is the server binary's path (/proc/self/exe); empty skips the
// executable-relative candidates.
absl::StatusOr<std::string> ResolveModelPath(const std::string& flag,
                                             const std::string& executable);

// The running binary's path, or empty if it cannot be read.
std::string ExecutablePath();

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_MODEL_PATH_H_
