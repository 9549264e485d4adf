#include "base/flags.h"

#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
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
  for (absl::string_view folder : {"server/", "client/", "bench/", "tests/", "codec/", "logstore/",
                                   "base/", "model/", "ranking/", "request/", "metrics/"}) {
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
  // absl::ParseCommandLine as it is, but for the exit status of a help
  // request: Abseil 20220623 (Debian bookworm's) exits 1 after printing
  // --help, --helpfull and the like, so a script or probe that asks for the
  // help cannot tell it from a bad flag. Parse without handling the usage
  // flags, then handle them here: help printed is a success (0); an
  // unknown or malformed flag still exits 1 inside the parse.
  std::vector<char*> positional = absl::flags_internal::ParseCommandLineImpl(
      argc, argv, absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
      absl::flags_internal::UsageFlagsAction::kIgnoreUsage,
      absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  // -1: no usage flag; 0: --version or --only_check_args handled; 1: help
  // printed.
  const int handled = absl::flags_internal::HandleUsageFlags(std::cout, usage);
  if (handled >= 0) {
    std::cout.flush();
    std::exit(0);
  }
  return positional;
}

}  // namespace rankwire
