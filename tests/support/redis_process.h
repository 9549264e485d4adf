// RedisProcess runs a real redis-server for a test or benchmark: on a free
// loopback port, in its own temporary directory, with persistence off
// (--save "" --appendonly no), and stops it when destroyed. Tests use it to
// make Redis absent, killed, restarted on the same port or stalled, and to
// look at what was stored (PTTL, HGET, INFO).
//
// Example:
//   absl::StatusOr<std::unique_ptr<RedisProcess>> redis = RedisProcess::Start();
//   ASSERT_TRUE(redis.ok()) << redis.status();
//   config.redis_addr = (*redis)->address();
//   ...
//   ASSERT_TRUE((*redis)->Kill().ok());     // SIGKILL
//   ASSERT_TRUE((*redis)->Restart().ok());  // same port, empty data set
//
// The server is started with PR_SET_PDEATHSIG, so it dies with the thread
// that started it: start and restart it from a thread that outlives it (the
// test's main thread).
//
// Thread safety: Command() and Info() are safe from many threads; the
// process-control methods are called from one thread.
#ifndef RANKWIRE_TESTS_SUPPORT_REDIS_PROCESS_H_
#define RANKWIRE_TESTS_SUPPORT_REDIS_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace rankwire::test {

struct RedisProcessOptions {
  std::string password;                 // --requirepass when not empty.
  int cpu = -1;                         // Pin the server to this CPU when >= 0.
  std::vector<std::string> extra_args;  // More "--name value" arguments.
  absl::Duration start_timeout = absl::Seconds(10);
};

// A reply, decoded from hiredis's.
struct RedisReply {
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  int64_t integer = 0;
  std::string str;  // kString, kStatus, kError.
  std::vector<RedisReply> elements;
};

class RedisProcess {
 public:
  // Starts redis-server (RANKWIRE_REDIS_SERVER) on a free port and waits
  // until it answers PING.
  static absl::StatusOr<std::unique_ptr<RedisProcess>> Start(RedisProcessOptions options = {});

  ~RedisProcess();  // Kills the server if it runs; removes the directory.
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;

  int port() const { return port_; }
  std::string address() const;  // "127.0.0.1:<port>"
  const std::string& dir() const { return dir_; }
  bool running() const { return pid_ > 0; }

  // SIGTERM (after SIGCONT if paused), then SIGKILL if it has not exited
  // within 5 s. OK if it was not running.
  absl::Status Stop();
  // SIGKILL and reap.
  absl::Status Kill();
  // Stops it if it runs, then starts it again on the same port (empty data
  // set, persistence is off) and waits until it answers PING.
  absl::Status Restart();
  // SIGSTOP / SIGCONT: the server keeps its port (connections are accepted
  // into the backlog) but answers nothing until resumed, a stalled Redis.
  absl::Status Pause();
  absl::Status Resume();

  // Runs one command on a new connection (with AUTH if a password is set).
  // A Redis error reply is returned as a reply of type kError, not a Status.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string>& args) const;
  // INFO <section>, as text.
  absl::StatusOr<std::string> Info(absl::string_view section) const;
  // One integer field of INFO <section>, e.g. InfoInt("memory", "used_memory").
  absl::StatusOr<int64_t> InfoInt(absl::string_view section, absl::string_view field) const;

  // The last lines of the server's log file, for error messages.
  std::string LogTail(size_t max_bytes = 2000) const;

 private:
  RedisProcess(RedisProcessOptions options, std::string dir, int port)
      : options_(std::move(options)), dir_(std::move(dir)), port_(port) {}

  absl::Status Spawn();
  absl::Status WaitUntilReady();
  absl::Status Reap(absl::Duration timeout);

  const RedisProcessOptions options_;
  const std::string dir_;
  int port_;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
absl::StatusOr<int> PickFreePort();

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_SUPPORT_REDIS_PROCESS_H_
