#include "logstore/redis_connection.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rankwire::logstore {
namespace {

// The payload that marks a timeout in IoError's status (IsRedisTimeout).
constexpr absl::string_view kTimeoutPayload = "rankwire.logstore/redis-timeout";

timeval TimeoutTimeval(absl::Duration d) {
  if (d < absl::Milliseconds(1)) d = absl::Milliseconds(1);
  return absl::ToTimeval(d);
}

}  // namespace

std::string RedisAddress::ToString() const {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<RedisAddress> ParseRedisAddress(absl::string_view host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis address '", host_port, "' is not host:port"));
  }
  absl::string_view host = host_port.substr(0, colon);
  absl::string_view port_text = host_port.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  if (host.empty() || !absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis address '", host_port, "' is not host:port with a port in 1..65535"));
  }
  return RedisAddress{std::string(host), port};
}

absl::StatusOr<RedisConnectOptions> ConnectOptionsFrom(const LogStoreConfig& config) {
  ASSIGN_OR_RETURN(RedisAddress address, ParseRedisAddress(config.redis_addr));
  if (config.connect_timeout <= absl::ZeroDuration() || config.io_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("redis connect and I/O timeouts must be positive");
  }
  RedisConnectOptions options;
  options.address = std::move(address);
  options.password = config.redis_password;
  options.connect_timeout = config.connect_timeout;
  options.io_timeout = config.io_timeout;
  return options;
}

absl::Status CheckReconnectBackoff(const LogStoreConfig& config) {
  if (config.reconnect_backoff_min <= absl::ZeroDuration() ||
      config.reconnect_backoff_max < config.reconnect_backoff_min) {
    return absl::InvalidArgumentError(
        "reconnect backoff must satisfy 0 < backoff_min <= backoff_max");
  }
  return absl::OkStatus();
}

ScopedSigpipeBlock::ScopedSigpipeBlock() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old_mask_);
  already_blocked_ = sigismember(&old_mask_, SIGPIPE) == 1;
}

ScopedSigpipeBlock::~ScopedSigpipeBlock() {
  if (already_blocked_) return;  // The caller's own block; leave it as it was.
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    const timespec no_wait = {0, 0};
    while (sigtimedwait(&pipe, nullptr, &no_wait) == -1 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void RedisReplyDeleter::operator()(redisReply* reply) const {
  if (reply != nullptr) freeReplyObject(reply);
}

absl::StatusOr<RedisConnection> RedisConnection::Connect(const RedisConnectOptions& options) {
  ScopedSigpipeBlock no_sigpipe;
  const std::string address = options.address.ToString();
  redisContext* context = redisConnectWithTimeout(
      options.address.host.c_str(), options.address.port, TimeoutTimeval(options.connect_timeout));
  if (context == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("redis ", address, ": cannot allocate a connection"));
  }
  RedisConnection connection(context, address);
  if (context->err != 0) return connection.IoError("connect");
  // Non-blocking from here on (RedisConnection's I/O waits in poll()).
  // hiredis then treats EAGAIN as "try again later", not as an error.
  const int fd_flags = fcntl(context->fd, F_GETFL);
  if (fd_flags < 0 || fcntl(context->fd, F_SETFL, fd_flags | O_NONBLOCK) < 0) {
    return absl::UnavailableError(absl::StrCat(
        "redis ", address, ": cannot make the socket non-blocking: ", std::strerror(errno)));
  }
  context->flags &= ~REDIS_BLOCK;
  // Best effort: a dead peer is noticed sooner, but nothing depends on it.
  (void)redisEnableKeepAlive(context);

  if (!options.password.empty()) {
    const char* argv[] = {"AUTH", options.password.data()};
    const size_t argvlen[] = {4, options.password.size()};
    ASSIGN_OR_RETURN(RedisReplyPtr reply,
                     connection.CommandWithin(2, argv, argvlen, options.io_timeout, "AUTH"));
    if (reply->type == REDIS_REPLY_ERROR) {
      return absl::UnauthenticatedError(absl::StrCat(
          "redis ", address, ": AUTH refused: ", absl::string_view(reply->str, reply->len)));
    }
  }
  // PING proves the server answers (a stopped server still accepts TCP
  // connections into its backlog) and that no password is missing.
  const char* ping[] = {"PING"};
  const size_t ping_len[] = {4};
  ASSIGN_OR_RETURN(RedisReplyPtr reply,
                   connection.CommandWithin(1, ping, ping_len, options.io_timeout, "PING"));
  if (reply->type == REDIS_REPLY_ERROR) {
    absl::string_view error(reply->str, reply->len);
    if (absl::StartsWith(error, "NOAUTH")) {
      return absl::UnauthenticatedError(
          absl::StrCat("redis ", address, " requires a password: ", error));
    }
    return absl::UnavailableError(absl::StrCat("redis ", address, ": PING: ", error));
  }
  return connection;
}

RedisConnection::RedisConnection(RedisConnection&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)), address_(std::move(other.address_)) {}

RedisConnection& RedisConnection::operator=(RedisConnection&& other) noexcept {
  if (this != &other) {
    if (context_ != nullptr) redisFree(context_);
    context_ = std::exchange(other.context_, nullptr);
    address_ = std::move(other.address_);
  }
  return *this;
}

RedisConnection::~RedisConnection() {
  if (context_ != nullptr) redisFree(context_);
}

bool RedisConnection::FlushWithin(IoBudget* budget) {
  // Time before this call is not this exchange's.
  budget->woke = std::chrono::steady_clock::now();
  // The socket is non-blocking: each write takes what fits in the send
  // buffer, and the next waits for room.
  for (;;) {
    const size_t before = sdslen(context_->obuf);
    int written = 0;
    if (redisBufferWrite(context_, &written) != REDIS_OK) return false;
    if (written) return true;
    if (!WaitFor(POLLOUT, budget, sdslen(context_->obuf) < before)) return false;
  }
}

bool RedisConnection::WriteWithin(absl::Span<const absl::string_view> pieces, IoBudget* budget) {
  if (sdslen(context_->obuf) > 0 && !FlushWithin(budget)) return false;
  budget->woke = std::chrono::steady_clock::now();
  constexpr size_t kMaxPieces = 256;  // Below IOV_MAX (1024).
  size_t next = 0;                    // The first piece not sent in whole.
  size_t offset = 0;                  // Bytes of it already sent.
  bool moved = true;
  while (next < pieces.size()) {
    iovec iov[kMaxPieces];
    size_t count = 0;
    for (size_t k = next; k < pieces.size() && count < kMaxPieces; ++k) {
      const size_t skip = k == next ? offset : 0;
      iov[count].iov_base = const_cast<char*>(pieces[k].data() + skip);
      iov[count].iov_len = pieces[k].size() - skip;
      ++count;
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = count;
    // MSG_NOSIGNAL: a peer that reset the connection gives EPIPE, not SIGPIPE.
    const ssize_t sent = sendmsg(context_->fd, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!WaitFor(POLLOUT, budget, moved)) return false;
        moved = false;
        continue;
      }
      context_->err = REDIS_ERR_IO;
      std::snprintf(context_->errstr, sizeof(context_->errstr), "%s", std::strerror(errno));
      return false;
    }
    moved = sent > 0;
    size_t left = static_cast<size_t>(sent);
    while (next < pieces.size() && left >= pieces[next].size() - offset) {
      left -= pieces[next].size() - offset;
      offset = 0;
      ++next;
    }
    offset += left;
  }
  return true;
}

bool RedisConnection::GetReplyWithin(IoBudget* budget, void** reply) {
  *reply = nullptr;
  // A reply already read (pipelined) needs no I/O.
  if (redisGetReplyFromReader(context_, reply) != REDIS_OK) return false;
  if (*reply != nullptr) return true;
  if (!FlushWithin(budget)) return false;
  budget->woke = std::chrono::steady_clock::now();
  bool moved = true;  // The first wait always looks.
  for (;;) {
    if (!WaitFor(POLLIN, budget, moved)) return false;
    // The reader's buffer grows by what the read got (it is compacted
    // only when replies are taken from it, below).
    const size_t before = context_->reader->len;
    if (redisBufferRead(context_) != REDIS_OK) return false;
    moved = context_->reader->len > before;
    if (redisGetReplyFromReader(context_, reply) != REDIS_OK) return false;
    if (*reply != nullptr) return true;
  }
}

absl::StatusOr<RedisReplyPtr> RedisConnection::ReplyWithin(IoBudget* budget,
                                                           absl::string_view what) {
  void* raw = nullptr;
  if (!GetReplyWithin(budget, &raw)) return IoError(what);
  return RedisReplyPtr(static_cast<redisReply*>(raw));
}

absl::StatusOr<RedisReplyPtr> RedisConnection::CommandWithin(int argc, const char** argv,
                                                             const size_t* argvlen,
                                                             absl::Duration limit,
                                                             absl::string_view what) {
  if (redisAppendCommandArgv(context_, argc, argv, argvlen) != REDIS_OK) return IoError(what);
  return ReplyWithin(limit, what);
}

bool RedisConnection::WaitFor(short events, IoBudget* budget, bool moved) {
  // Sets the context's I/O error, as hiredis does for a failed read.
  const auto fail = [this](const char* text) {
    context_->err = REDIS_ERR_IO;
    std::snprintf(context_->errstr, sizeof(context_->errstr), "%s", text);
    return false;
  };
  if (context_->fd < 0) return fail("connection closed");
  // A timeout says EAGAIN's text, which TimedOut() looks for.
  const auto timed_out = [&fail] { return fail(std::strerror(EAGAIN)); };
  // The steady clock: a step of the wall clock does not stretch a wait.
  auto start = std::chrono::steady_clock::now();
  // The read or write since the last wait (FlushWithin and GetReplyWithin
  // start the count when they are called).
  budget->wait -= absl::FromChrono(start - budget->woke);
  for (;;) {
    // Once the budget is spent, a look that does not wait, and only after
    // progress (a socket ready now was not kept waiting by the server),
    // while the overdraft is within the limit again (the grace, in charged
    // time like the budget: a reply that keeps streaming in cannot hold
    // the thread, and time between calls does not use the grace up).
    if (budget->wait <= absl::ZeroDuration() && (!moved || budget->wait <= -budget->limit)) {
      return timed_out();
    }
    const absl::Duration left = std::max(budget->wait, absl::ZeroDuration());
    const int ms = static_cast<int>(
        std::min<int64_t>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
                          std::numeric_limits<int>::max()));
    pollfd waiting{context_->fd, events, 0};
    const int ready = poll(&waiting, 1, ms);
    const int poll_errno = errno;
    budget->woke = std::chrono::steady_clock::now();
    budget->wait -= absl::FromChrono(budget->woke - start);
    start = budget->woke;
    // Ready, or an error or hang-up that the read or write then reports.
    if (ready > 0) return true;
    if (ready < 0 && poll_errno != EINTR) {
      return fail(absl::StrCat("poll: ", std::strerror(poll_errno)).c_str());
    }
    // Nothing within the time left (or a signal once it was spent).
    if (budget->wait <= absl::ZeroDuration()) return timed_out();
  }
}

bool RedisConnection::TimedOut() const {
  // WaitFor's timeout says EAGAIN's text. A connection the kernel gave up
  // on (keepalive, retransmissions: ETIMEDOUT) failed without a wait of
  // ours, and is worth a retry on a fresh one.
  return context_ != nullptr && context_->err == REDIS_ERR_IO &&
         absl::StrContains(context_->errstr, "temporarily unavailable");
}

absl::Status RedisConnection::IoError(absl::string_view what) const {
  absl::string_view detail = "connection lost";
  if (context_ != nullptr && context_->err != 0) detail = context_->errstr;
  // WaitFor reports a timeout as EAGAIN's text; say what it means. A
  // connect that timed out says ETIMEDOUT's ("Connection timed out").
  const bool wait_timeout = TimedOut();
  const bool timed_out = wait_timeout || absl::StrContains(detail, "timed out");
  if (wait_timeout) detail = "timed out (Resource temporarily unavailable)";
  absl::Status status =
      absl::UnavailableError(absl::StrCat("redis ", address_, ": ", what, ": ", detail));
  if (timed_out) status.SetPayload(kTimeoutPayload, absl::Cord());
  return status;
}

bool IsRedisTimeout(const absl::Status& status) {
  return status.GetPayload(kTimeoutPayload).has_value();
}

}  // namespace rankwire::logstore
