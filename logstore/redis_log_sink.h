// RedisLogSink writes log batches to Redis over one hiredis connection.
//
// Each request becomes one pipelined transaction
//   MULTI / DEL key / HSET key item value [item value ...] / PEXPIRE key ttl_ms / EXEC
// and a batch of requests goes out in one round trip. The DEL makes a
// request's write replace the key (a request id reused within the TTL never
// merges two requests' logs). MULTI/EXEC makes the DEL, the HSET and its
// PEXPIRE land together: if the connection is cut mid-batch
// (I/O timeout against a stalled server, say), Redis discards the
// unfinished transaction instead of keeping a key that never expires.
//
// When Redis cannot be reached the sink fails writes at once with
// kUnavailable (the consumer drops and counts them) and reconnects on its
// own with exponential backoff between attempts. A connection found dead on
// use (Redis restarted while it was idle) is replaced and the unconfirmed
// part of the batch retried once; that is safe because a request's
// transaction is idempotent. A timeout is not retried. An entry that went
// to the socket whole but got no answer (a timeout, a connection lost after
// it) may have run: its outcome is unknown (OutcomeUnknown), not a drop.
// Errors go to spdlog, at most one line per second with a count of the ones
// held back.
//
// Thread safety: see LogSink (one writer thread; up() and reconnects() from
// any thread).
#ifndef RANKWIRE_LOGSTORE_REDIS_LOG_SINK_H_
#define RANKWIRE_LOGSTORE_REDIS_LOG_SINK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "logstore/log_sink.h"
#include "logstore/log_store.h"
#include "logstore/log_throttle.h"
#include "logstore/redis_commands.h"
#include "logstore/redis_connection.h"

namespace rankwire::logstore {

struct RedisSinkOptions {
  RedisConnectOptions connect;
  absl::Duration backoff_min = absl::Milliseconds(50);
  absl::Duration backoff_max = absl::Milliseconds(250);
};

class RedisLogSink final : public LogSink {
 public:
  // An idle sink PINGs this often, so up() turns false when Redis goes away
  // with no traffic, and a dead connection is replaced before the next batch.
  static constexpr absl::Duration kIdlePingInterval = absl::Seconds(1);

  // Takes the Redis fields of `config`. InvalidArgument for a bad address or
  // timeouts. Does not connect: the first Write() or Poll() does.
  static absl::StatusOr<std::unique_ptr<RedisLogSink>> Create(const LogStoreConfig& config);

  explicit RedisLogSink(RedisSinkOptions options);

  std::vector<absl::Status> Write(absl::Span<SinkEntry> batch, absl::Duration ttl) override;
  // Reconnects if down and due; PINGs if idle for kIdlePingInterval.
  void Poll() override;
  bool up() const override { return up_.load(std::memory_order_relaxed); }
  bool failing() const override { return failing_.load(std::memory_order_relaxed); }
  uint64_t reconnects() const override { return reconnects_.load(std::memory_order_relaxed); }

 private:
  // Connects if not connected and an attempt is due. False while down.
  bool EnsureConnected();
  // Drops the connection after an I/O error; the next attempt is immediate.
  void Disconnect(const absl::Status& why);
  void LogError(const absl::Status& status, size_t dropped_entries);
  // Sends `entries` as one pipeline on the current connection and fills
  // `results`, adding one to `*sent` per entry whose transaction went to
  // the socket whole and one to `*done` per entry with a reply. Returns the
  // I/O error that ended it early, if any.
  absl::Status WritePipeline(absl::Span<const SinkEntry> entries, const std::string& ttl_ms,
                             absl::Span<absl::Status> results, size_t* done, size_t* sent);

  const RedisSinkOptions options_;
  const std::string address_;

  // Writer thread only.
  std::optional<RedisConnection> connection_;
  ReconnectBackoff backoff_;
  absl::Time last_io_ = absl::InfinitePast();  // Last successful round trip.
  bool had_failure_ = false;                   // Since the last successful connect.
  absl::Status last_error_;
  RedisCommandWriter commands_;

  void RecordAttempt(bool up) {
    up_.store(up, std::memory_order_relaxed);
    failing_.store(!up, std::memory_order_relaxed);
  }
  std::atomic<bool> up_{false};
  std::atomic<bool> failing_{false};
  std::atomic<uint64_t> reconnects_{0};
  LogThrottle error_throttle_;
  LogThrottle connect_throttle_;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_REDIS_LOG_SINK_H_
