// ServerProcess runs the real rankwire-server binary for a test: on a free
// port (--port=0, --metrics_port=0), with the shipped model, its output in a
// temporary log file, and stops it when destroyed. The ports are read from
// the server's "listening port=... metrics_port=..." start-up line. The
// server runs without the capabilities that let root ignore file
// permissions, as a server in production does.
//
// Example:
//   auto server = ServerProcess::Start({"--codec=rankbin"});
//   ASSERT_TRUE(server.ok()) << server.status();
//   auto channel = client::MakeChannel((*server)->target());
//
// Thread safety: one thread controls a ServerProcess.
#ifndef RANKWIRE_TESTS_SUPPORT_SERVER_PROCESS_H_
#define RANKWIRE_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace rankwire::test {

class ServerProcess {
 public:
  // Starts RANKWIRE_SERVER_BIN with --model=RANKWIRE_MODEL_PATH, --port=0,
  // --metrics_port=0 and `flags` (later flags win), and waits for its
  // start-up line. `env` ("NAME=value") is added to the server's
  // environment.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::vector<std::string>& flags = {}, absl::Duration timeout = absl::Seconds(15),
      const std::vector<std::string>& env = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  std::string target() const;  // "127.0.0.1:<port>"
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // VmRSS from /proc/<pid>/status, in bytes.
  absl::StatusOr<size_t> ResidentBytes() const { return StatusBytes("VmRSS:"); }
  // VmHWM, the peak of VmRSS since the process started, in bytes.
  absl::StatusOr<size_t> PeakResidentBytes() const { return StatusBytes("VmHWM:"); }

  absl::Status Signal(int signal_number);
  // A "<field> <n> kB" line of /proc/<pid>/status, in bytes.
  absl::StatusOr<size_t> StatusBytes(absl::string_view field) const;
  // Waits for the process to exit and returns its exit status (the code,
  // or 128 + signal). DeadlineExceeded if it is still running.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // Everything the server has printed so far.
  std::string Output() const;

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
  std::string log_path_;
};

// GET http://127.0.0.1:<port><path>; the response body.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_SUPPORT_SERVER_PROCESS_H_
