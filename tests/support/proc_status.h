// A memory field of /proc/<pid>/status, in bytes: what the tests that
// watch resident memory read, of a server they started or of themselves.
//
// Example:
//   std::optional<size_t> rss = ProcStatusBytes("self", "VmRSS:");
//
// Thread safety: a plain function.
#ifndef RANKWIRE_TESTS_SUPPORT_PROC_STATUS_H_
#define RANKWIRE_TESTS_SUPPORT_PROC_STATUS_H_

#include <cstddef>
#include <fstream>
#include <optional>
#include <string>

namespace rankwire {

// `field` with its colon ("VmRSS:", "VmHWM:"); `pid` a number or "self".
// nullopt if the process or the field is not there.
inline std::optional<size_t> ProcStatusBytes(const std::string& pid, const std::string& field) {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, field.size(), field) == 0) {
      return std::stoull(line.substr(field.size())) * 1024;  // "... kB"
    }
  }
  return std::nullopt;
}

}  // namespace rankwire

#endif  // RANKWIRE_TESTS_SUPPORT_PROC_STATUS_H_
