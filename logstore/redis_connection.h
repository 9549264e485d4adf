// RedisConnection owns one hiredis connection with connect and I/O
// timeouts (a non-blocking socket; every wait a bounded poll()),
// authenticated (AUTH) when a password is set and checked with a PING
// before it is handed out. Both the Redis sink and the Redis reader use
// it; neither talks to hiredis's connect API directly.
//
// hiredis types are only forward-declared here so that users of the log
// store do not see hiredis headers.
//
// Thread safety: a connection is used by one thread at a time.
#ifndef RANKWIRE_LOGSTORE_REDIS_CONNECTION_H_
#define RANKWIRE_LOGSTORE_REDIS_CONNECTION_H_

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "logstore/log_store.h"

struct redisContext;
struct redisReply;

namespace rankwire::logstore {

struct RedisAddress {
  std::string host;
  int port = 0;
  std::string ToString() const;  // "host:port"
};

// Parses "host:port" ("[::1]:6379" for IPv6). InvalidArgument otherwise.
absl::StatusOr<RedisAddress> ParseRedisAddress(absl::string_view host_port);

struct RedisConnectOptions {
  RedisAddress address;
  std::string password;  // AUTH when not empty.
  absl::Duration connect_timeout = absl::Milliseconds(200);
  absl::Duration io_timeout = absl::Milliseconds(500);
};

// The connection part of a LogStoreConfig, checked: InvalidArgument for a
// bad address or a timeout that is not positive. The sink and the reader
// both start from this.
absl::StatusOr<RedisConnectOptions> ConnectOptionsFrom(const LogStoreConfig& config);
// InvalidArgument unless 0 < reconnect_backoff_min <= reconnect_backoff_max.
absl::Status CheckReconnectBackoff(const LogStoreConfig& config);

// Frees a hiredis reply.
struct RedisReplyDeleter {
  void operator()(redisReply* reply) const;
};
using RedisReplyPtr = std::unique_ptr<redisReply, RedisReplyDeleter>;

// Blocks SIGPIPE in the calling thread while it lives. hiredis writes with
// write(2), not send(MSG_NOSIGNAL): writing to a connection the peer has
// reset (Redis restarted under an idle connection, then a large pipeline)
// raises SIGPIPE, whose default action ends the process. With it blocked
// the write fails with EPIPE and the sink handles it like any lost
// connection. A SIGPIPE raised meanwhile is consumed before the thread's
// mask is restored, so nothing is delivered later. Process-wide signal
// handling is left alone; the server may have its own.
//
// Put one around every hiredis call that writes.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock();
  ~ScopedSigpipeBlock();
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t old_mask_;
  bool already_blocked_ = false;
};

// Whether `status`, from RedisConnection::Connect or IoError, says the
// server did not answer in time (the connect, AUTH, PING or a round trip
// timed out: a slow or stalled server) rather than refusing or closing the
// connection.
bool IsRedisTimeout(const absl::Status& status);

// How long a stalled node is left alone at least: one that timed out on
// CLUSTER SLOTS, on an HMGET, or on the connect, AUTH or PING of a new
// connection (IsRedisTimeout). Several times the sink's and the reader's
// slot map reload spacing (100 ms), so the reloads meanwhile ask other
// nodes at once instead of waiting out its timeout again.
inline constexpr absl::Duration kStalledNodeBackoff = absl::Seconds(1);

// The reconnect backoff of one Redis node, shared by the sink, the cluster
// router and the cluster reader: after a failed attempt the next waits the
// current delay, which then doubles up to `max`; a successful connect puts
// it back to `min`. Used from its owner's thread or under its owner's lock.
class ReconnectBackoff {
 public:
  // LogStoreConfig's defaults: 50 ms, doubling up to 250 ms.
  ReconnectBackoff() = default;
  ReconnectBackoff(absl::Duration min, absl::Duration max) : min_(min), max_(max), delay_(min) {}

  // Whether an attempt may start at `now`.
  bool Ready(absl::Time now) const { return now >= next_attempt_; }
  // An attempt failed at `now`: the next one waits the current delay, or
  // `at_least` if longer, and the delay doubles. Returns the wait.
  absl::Duration Failed(absl::Time now, absl::Duration at_least = absl::ZeroDuration()) {
    const absl::Duration wait = std::max(delay_, at_least);
    next_attempt_ = now + wait;
    delay_ = std::min(delay_ * 2, max_);
    return wait;
  }
  // An attempt failed at `now` with `error`: as Failed, and a node that
  // timed out (IsRedisTimeout) waits at least kStalledNodeBackoff.
  absl::Duration FailedWith(absl::Time now, const absl::Status& error) {
    return Failed(now, IsRedisTimeout(error) ? kStalledNodeBackoff : absl::ZeroDuration());
  }
  // A connect succeeded: no wait, and the delay is back to `min`.
  void Succeeded() {
    next_attempt_ = absl::InfinitePast();
    delay_ = min_;
  }
  // A working connection was lost: the next attempt may start at once (the
  // delay stays, so a node that keeps failing still backs off).
  void RetryNow() { next_attempt_ = absl::InfinitePast(); }

 private:
  absl::Duration min_ = absl::Milliseconds(50);
  absl::Duration max_ = absl::Milliseconds(250);
  absl::Duration delay_ = min_;
  absl::Time next_attempt_ = absl::InfinitePast();
};

// What one exchange with Redis may take on its socket (RedisConnection's
// I/O): `limit` of the time spent inside FlushWithin and GetReplyWithin,
// waits in poll() and the reads and writes between them alike. Time
// between those calls (formatting the next transaction, serving other
// nodes) is not charged. Once it is spent, an exchange whose last read or
// write moved bytes may go on for `limit` more of charged time (its
// grace), not longer.
struct IoBudget {
  explicit IoBudget(absl::Duration limit) : limit(limit), wait(limit) {}
  absl::Duration limit;
  absl::Duration wait;  // Left; below zero in the grace, down to -limit.
  // Since when the current call's time is charged (FlushWithin and
  // GetReplyWithin set it when they are called).
  std::chrono::steady_clock::time_point woke;
};

class RedisConnection {
 public:
  // kUnavailable if the server cannot be reached or does not answer in
  // time; kUnauthenticated if AUTH is refused or the server needs a
  // password that was not given.
  static absl::StatusOr<RedisConnection> Connect(const RedisConnectOptions& options);

  RedisConnection(RedisConnection&& other) noexcept;
  RedisConnection& operator=(RedisConnection&& other) noexcept;
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;
  ~RedisConnection();

  redisContext* get() const { return context_; }

  // The context's I/O error as kUnavailable, prefixed with `what`. Call it
  // after a hiredis call failed; the connection is unusable afterwards.
  absl::Status IoError(absl::string_view what) const;
  // Whether the last I/O error was the I/O timeout (a slow or stalled
  // server) rather than a closed or reset connection.
  bool TimedOut() const;

  // The connection's socket is non-blocking: every exchange waits for the
  // socket in poll(), within an IoBudget. Once the budget is spent, a read
  // or write that moved bytes gets one more look that does not wait (a
  // reply already there is read), during the budget's grace; one that moved
  // none, or a socket not ready at that look, ends the exchange as a
  // timeout. So a reply that trickles in a byte at a time, and a write
  // larger than the socket's send buffer to a server that does not read,
  // both end once the budget is spent, and a reply that keeps streaming in
  // ends within twice it. (A remainder larger than the socket buffers, met
  // once the budget is spent, is cut even from a healthy server: the look
  // does not wait for room.)
  //
  // FlushWithin sends what hiredis has queued (redisAppendCommand*).
  // GetReplyWithin, like hiredis's redisGetReply, sends the queued commands
  // and reads the next reply into `*reply` (a redisReply to free). False on
  // an I/O error, or when the budget runs out (then TimedOut()).
  bool FlushWithin(IoBudget* budget);
  // Sends `pieces` in order, after whatever hiredis has queued, straight
  // from their memory (a request's packed fields are not copied into
  // hiredis's output buffer first). Same budget and errors as FlushWithin;
  // never raises SIGPIPE.
  bool WriteWithin(absl::Span<const absl::string_view> pieces, IoBudget* budget);
  bool GetReplyWithin(IoBudget* budget, void** reply);
  // One exchange with a budget of its own.
  bool GetReplyWithin(absl::Duration limit, void** reply) {
    IoBudget budget(limit);
    return GetReplyWithin(&budget, reply);
  }
  // GetReplyWithin's reply, or the I/O error as IoError(what) gives it.
  absl::StatusOr<RedisReplyPtr> ReplyWithin(IoBudget* budget, absl::string_view what);
  absl::StatusOr<RedisReplyPtr> ReplyWithin(absl::Duration limit, absl::string_view what) {
    IoBudget budget(limit);
    return ReplyWithin(&budget, what);
  }
  // Sends one command (argv as hiredis takes it) and reads its reply within
  // `limit`; IoError(what) on failure.
  absl::StatusOr<RedisReplyPtr> CommandWithin(int argc, const char** argv, const size_t* argvlen,
                                              absl::Duration limit, absl::string_view what);

 private:
  explicit RedisConnection(redisContext* context, std::string address)
      : context_(context), address_(std::move(address)) {}

  // Waits until the socket is ready for `events` (POLLIN, POLLOUT), an
  // error or a hang-up, charging `budget` for the time since the last wait
  // and for the wait; `moved` says whether the read or write since the
  // last wait moved bytes. False, with the context's error set (a timeout
  // when the budget ran out), otherwise.
  bool WaitFor(short events, IoBudget* budget, bool moved);

  redisContext* context_ = nullptr;  // Owned.
  std::string address_;              // For error messages.
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_REDIS_CONNECTION_H_
