#include "tests/support/command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace rankwire::test {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("no program");
  char out_path[] = "/tmp/rankwire-cmd-out-XXXXXX";
  char err_path[] = "/tmp/rankwire-cmd-err-XXXXXX";
  const int out_fd = mkstemp(out_path);
  const int err_fd = mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) {
    return absl::InternalError(absl::StrCat("mkstemp: ", std::strerror(errno)));
  }
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (std::string& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(raw[0], raw.data());
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  CommandResult result;
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  bool timed_out = false;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (absl::Now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = ReadFileBytes(out_path).value_or("");
  result.err = ReadFileBytes(err_path).value_or("");
  unlink(out_path);
  unlink(err_path);
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(
        argv[0], " ran past ", absl::FormatDuration(timeout), "; stderr:\n", result.err));
  }
  return result;
}

}  // namespace rankwire::test
