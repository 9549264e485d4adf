// RunCommand runs a program (a real rankwire binary: rankwire-cli, a second
// rankwire-server) to its end, as an operator's shell would, and returns
// its exit status and what it printed on stdout and stderr apart.
//
// Example:
//   absl::StatusOr<CommandResult> r = RunCommand({RANKWIRE_CLI_BIN, "--health"});
//   EXPECT_EQ(r->exit_code, 0) << r->err;
//
// Thread safety: a function; each call is its own process.
#ifndef RANKWIRE_TESTS_SUPPORT_COMMAND_H_
#define RANKWIRE_TESTS_SUPPORT_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rankwire::test {

struct CommandResult {
  int exit_code = -1;  // The code, or 128 + the signal that ended it.
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with argv, stdin from /dev/null. DeadlineExceeded
// (the program killed) if it runs past `timeout`.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout = absl::Seconds(60));

// The whole content of a file; NotFound if it cannot be read.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_SUPPORT_COMMAND_H_
