// ParseFlags is how every rankwire binary reads its command line: it sets
// the usage message, makes `--help` list the flags defined in the binary's
// own source files (Abseil's default matches files named after the binary,
// which none of ours are, so it printed "No flags matched"), turns off
// absl::Mutex deadlock detection (flags.cc says why), and parses.
//
// Example:
//   int main(int argc, char** argv) {
//     std::vector<char*> args = rankwire::ParseFlags(argc, argv, "Usage: ...");
//   }
//
// Thread safety: call once, from main, before any thread starts.
#ifndef RANKWIRE_BASE_FLAGS_H_
#define RANKWIRE_BASE_FLAGS_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace rankwire {

// Returns the positional arguments (argv[0] first), as
// absl::ParseCommandLine does. `--help`, `--helpfull` (and Abseil's other
// usage flags) print and exit 0; a flag the binary does not define, or a
// bad value, prints the error and exits 1.
std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage);

// True for the source files whose flags `--help` lists: rankwire's own
// (not Abseil's or gRPC's). Exposed for the test.
bool IsRankwireFlagFile(absl::string_view path);

}  // namespace rankwire

#endif  // RANKWIRE_BASE_FLAGS_H_
