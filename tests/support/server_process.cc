#include "tests/support/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/support/proc_status.h"

namespace rankwire::test {
namespace {

int ExitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::vector<std::string>& flags, absl::Duration timeout,
    const std::vector<std::string>& env) {
  auto server = std::unique_ptr<ServerProcess>(new ServerProcess());
  char path[] = "/tmp/rankwire-server-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return absl::InternalError(absl::StrCat("mkstemp: ", std::strerror(errno)));
  server->log_path_ = path;

  std::vector<std::string> args = {RANKWIRE_SERVER_BIN, "--port=0", "--metrics_port=0",
                                   "--address=127.0.0.1",
                                   absl::StrCat("--model=", RANKWIRE_MODEL_PATH)};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // As a server in production runs (not root): file permissions apply to
    // it even when the tests run as root (a model the server may not read
    // is a test case).
    prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0);
    prctl(PR_CAPBSET_DROP, CAP_DAC_READ_SEARCH, 0, 0, 0);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fd);
  server->pid_ = pid;

  const std::regex line(R"(listening port=(\d+) metrics_port=(-?\d+))");
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::smatch m;
    std::string out = server->Output();
    if (std::regex_search(out, m, line)) {
      server->port_ = std::stoi(m[1]);
      server->metrics_port_ = std::stoi(m[2]);
      return server;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = -1;
      return absl::FailedPreconditionError(absl::StrCat(
          "rankwire-server exited with ", ExitStatus(status), " before listening:\n", out));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("rankwire-server did not start:\n", server->Output()));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

absl::StatusOr<size_t> ServerProcess::StatusBytes(absl::string_view field) const {
  if (std::optional<size_t> bytes = ProcStatusBytes(std::to_string(pid_), std::string(field))) {
    return *bytes;
  }
  return absl::NotFoundError(absl::StrCat("no ", field, " for pid ", pid_));
}

std::string ServerProcess::target() const { return absl::StrCat("127.0.0.1:", port_); }

absl::Status ServerProcess::Signal(int signal_number) {
  if (pid_ <= 0) return absl::FailedPreconditionError("server is not running");
  if (kill(pid_, signal_number) != 0) {
    return absl::InternalError(absl::StrCat("kill: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ServerProcess::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("server is not running");
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return ExitStatus(status);
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("server still running");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string ServerProcess::Output() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("connect to port ", port, ": ", std::strerror(errno)));
  }
  std::string request =
      absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::InternalError("write");
  }
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) {
    return absl::UnavailableError(absl::StrCat("bad response: ", response.substr(0, 200)));
  }
  return response.substr(body + 4);
}

}  // namespace rankwire::test
