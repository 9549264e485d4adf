#include "tests/support/redis_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace rankwire::test {
namespace {

RedisReply Convert(const redisReply& r) {
  RedisReply out;
  switch (r.type) {
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      for (size_t i = 0; i < r.elements; ++i) out.elements.push_back(Convert(*r.element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
  }
  return out;
}

struct ContextCloser {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyFreer {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};

absl::StatusOr<RedisReply> RunCommand(int port, const std::string& password,
                                      const std::vector<std::string>& args) {
  timeval connect_timeout = absl::ToTimeval(absl::Seconds(1));
  std::unique_ptr<redisContext, ContextCloser> c(
      redisConnectWithTimeout("127.0.0.1", port, connect_timeout));
  if (c == nullptr) return absl::ResourceExhaustedError("hiredis: no context");
  if (c->err != 0) {
    return absl::UnavailableError(absl::StrCat("connect 127.0.0.1:", port, ": ", c->errstr));
  }
  redisSetTimeout(c.get(), absl::ToTimeval(absl::Seconds(10)));
  auto run = [&](const std::vector<std::string>& a) -> absl::StatusOr<RedisReply> {
    std::vector<const char*> argv;
    std::vector<size_t> argv_len;
    for (const std::string& s : a) {
      argv.push_back(s.data());
      argv_len.push_back(s.size());
    }
    std::unique_ptr<redisReply, ReplyFreer> reply(static_cast<redisReply*>(
        redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), argv_len.data())));
    if (reply == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("redis 127.0.0.1:", port, ": ", a.front(), ": ", c->errstr));
    }
    return Convert(*reply);
  };
  if (!password.empty()) {
    absl::StatusOr<RedisReply> auth = run({"AUTH", password});
    if (!auth.ok()) return auth.status();
    if (auth->type == RedisReply::Type::kError) {
      return absl::UnauthenticatedError(absl::StrCat("AUTH: ", auth->str));
    }
  }
  return run(args);
}

}  // namespace

absl::StatusOr<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("bind 127.0.0.1:0: ", std::strerror(err)));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

absl::StatusOr<std::unique_ptr<RedisProcess>> RedisProcess::Start(RedisProcessOptions options) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/rankwire-redis-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
  }
  std::unique_ptr<RedisProcess> process(new RedisProcess(std::move(options), pattern, 0));
  // Another process may take the port between PickFreePort and the
  // server's bind; then the server exits at once and we try another port.
  absl::Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    process->port_ = *port;
    last = process->Spawn();
    if (last.ok()) last = process->WaitUntilReady();
    if (last.ok()) return process;
  }
  return last;
}

RedisProcess::~RedisProcess() {
  if (running()) (void)Kill();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string RedisProcess::address() const { return absl::StrCat("127.0.0.1:", port_); }

absl::Status RedisProcess::Spawn() {
  std::vector<std::string> args = {RANKWIRE_REDIS_SERVER,
                                   "--port",
                                   absl::StrCat(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--logfile",
                                   absl::StrCat(dir_, "/redis.log"),
                                   "--daemonize",
                                   "no"};
  if (!options_.password.empty()) {
    args.push_back("--requirepass");
    args.push_back(options_.password);
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t parent = getpid();
  const int cpu = options_.cpu;
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_setaffinity(0, sizeof(set), &set);
    }
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  paused_ = false;
  return absl::OkStatus();
}

absl::Status RedisProcess::WaitUntilReady() {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  absl::Status last = absl::UnavailableError("not started");
  while (absl::Now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("redis-server on port ", port_,
                                                 " exited during start-up (status ", wstatus,
                                                 "); log:\n", LogTail()));
    }
    absl::StatusOr<RedisReply> pong = RunCommand(port_, options_.password, {"PING"});
    if (pong.ok() && pong->type == RedisReply::Type::kStatus && pong->str == "PONG") {
      return absl::OkStatus();
    }
    last = pong.ok() ? absl::UnavailableError(absl::StrCat("PING answered '", pong->str, "'"))
                     : pong.status();
    absl::SleepFor(absl::Milliseconds(5));
  }
  (void)Kill();
  return absl::DeadlineExceededError(absl::StrCat("redis-server on port ", port_,
                                                  " did not answer PING in time: ", last.message(),
                                                  "; log:\n", LogTail()));
}

absl::Status RedisProcess::Reap(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    int wstatus = 0;
    pid_t r = waitpid(pid_, &wstatus, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      paused_ = false;
      return absl::OkStatus();
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("redis-server pid ", pid_, " did not exit in time"));
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
}

absl::Status RedisProcess::Stop() {
  if (!running()) return absl::OkStatus();
  kill(pid_, SIGTERM);
  if (paused_) kill(pid_, SIGCONT);
  if (Reap(absl::Seconds(5)).ok()) return absl::OkStatus();
  return Kill();
}

absl::Status RedisProcess::Kill() {
  if (!running()) return absl::OkStatus();
  kill(pid_, SIGKILL);
  return Reap(absl::Seconds(30));
}

absl::Status RedisProcess::Restart() {
  if (absl::Status s = Stop(); !s.ok()) return s;
  absl::Status last;
  // The port is ours to reuse (Redis binds with SO_REUSEADDR), but give a
  // slow kernel a few tries.
  for (int attempt = 0; attempt < 5; ++attempt) {
    last = Spawn();
    if (last.ok()) last = WaitUntilReady();
    if (last.ok()) return last;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return last;
}

absl::Status RedisProcess::Pause() {
  if (!running()) return absl::FailedPreconditionError("redis-server is not running");
  if (kill(pid_, SIGSTOP) != 0) {
    return absl::InternalError(absl::StrCat("SIGSTOP: ", std::strerror(errno)));
  }
  paused_ = true;
  return absl::OkStatus();
}

absl::Status RedisProcess::Resume() {
  if (!running()) return absl::FailedPreconditionError("redis-server is not running");
  if (kill(pid_, SIGCONT) != 0) {
    return absl::InternalError(absl::StrCat("SIGCONT: ", std::strerror(errno)));
  }
  paused_ = false;
  return absl::OkStatus();
}

absl::StatusOr<RedisReply> RedisProcess::Command(const std::vector<std::string>& args) const {
  if (args.empty()) return absl::InvalidArgumentError("empty command");
  return RunCommand(port_, options_.password, args);
}

absl::StatusOr<std::string> RedisProcess::Info(absl::string_view section) const {
  absl::StatusOr<RedisReply> reply = Command({"INFO", std::string(section)});
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kString) {
    return absl::InternalError(absl::StrCat("INFO ", section, ": ", reply->str));
  }
  return reply->str;
}

absl::StatusOr<int64_t> RedisProcess::InfoInt(absl::string_view section,
                                              absl::string_view field) const {
  absl::StatusOr<std::string> info = Info(section);
  if (!info.ok()) return info.status();
  for (absl::string_view line : absl::StrSplit(*info, "\r\n")) {
    absl::string_view value = line;
    if (!absl::ConsumePrefix(&value, field) || !absl::ConsumePrefix(&value, ":")) continue;
    int64_t n = 0;
    if (absl::SimpleAtoi(value, &n)) return n;
    return absl::InternalError(absl::StrCat("INFO ", field, " is not an integer: ", value));
  }
  return absl::NotFoundError(absl::StrCat("INFO ", section, " has no field ", field));
}

std::string RedisProcess::LogTail(size_t max_bytes) const {
  std::ifstream in(absl::StrCat(dir_, "/redis.log"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > max_bytes) text = text.substr(text.size() - max_bytes);
  return text;
}

}  // namespace rankwire::test
