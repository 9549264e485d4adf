#include "base/flags.h"

#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"

namespace rankwire {

bool IsRankwireFlagFile(absl::string_view path) {
  // Abseil's own flags (absl/flags/...) and those of the libraries we link
  // are defined outside our source folders.
  if (absl::StrContains(path, "absl/")) return false;
  for (absl::string_view folder : {"server/", "client/", "bench/", "tests/", "codec/",
                                   "logstore/", "base/"}) {
    if (absl::StrContains(path, folder)) return true;
  }
  return false;
}

std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage) {
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view path) { return IsRankwireFlagFile(path); };
  config.contains_helpshort_flags = config.contains_help_flags;
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);
  // Debian's Abseil is built without NDEBUG, so every absl::Mutex lock and
  // unlock would also update a process-wide deadlock graph under a global
  // lock: a debugging aid that serializes the server's threads. The
  // binaries turn it off (tests keep it, and -Wthread-safety checks the
  // lock discipline at compile time).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace rankwire
