// The Redis Cluster backend (--logstore=redis-cluster): the same keys,
// values and transactions as the single-node backend, each request's
// MULTI / DEL / HSET / PEXPIRE / EXEC sent to the master of its key's slot
// (redis_cluster.h).
//
// RedisClusterSink groups a batch by master, sends every master its
// transactions in one pipeline (all masters first, then all replies, so the
// masters work in parallel), and follows redirects: -MOVED reloads the slot
// map and resends to the new master, -ASK resends once to the named node
// after ASKING. At most two redirect rounds per batch. A master that
// cannot be reached fails its entries with kUnavailable at once (the
// consumer drops and counts them) and the map is reloaded before the next
// batch (rate-limited), so after a failover the promoted replica gets the
// writes. Nothing is retried on a lost connection: a transaction either ran
// whole or not at all, and logs are droppable.
//
// RedisClusterReader routes each HMGET the same way (one round trip when
// the map is right; MOVED/ASK/a lost connection cost one more).
//
// Thread safety: the sink follows LogSink; the reader's Fetch() is safe from
// many threads (one at a time, under a lock).
#ifndef RANKWIRE_LOGSTORE_REDIS_CLUSTER_LOG_STORE_H_
#define RANKWIRE_LOGSTORE_REDIS_CLUSTER_LOG_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "logstore/log_sink.h"
#include "logstore/log_store.h"
#include "logstore/log_throttle.h"
#include "logstore/redis_cluster.h"
#include "logstore/redis_commands.h"

namespace rankwire::logstore {

class RedisClusterSink final : public LogSink {
 public:
  // The slot map is reloaded at most this often after a node failure
  // (a MOVED reloads it at once).
  static constexpr absl::Duration kRefreshInterval = absl::Milliseconds(100);

  // InvalidArgument for a bad seed list or timeouts. Does not connect.
  static absl::StatusOr<std::unique_ptr<RedisClusterSink>> Create(const LogStoreConfig& config);

  explicit RedisClusterSink(RedisClusterOptions options) : router_(std::move(options)) {}

  std::vector<absl::Status> Write(absl::Span<SinkEntry> batch, absl::Duration ttl) override;
  // Loads the slot map if it is missing or stale.
  void Poll() override;
  bool up() const override { return up_.load(std::memory_order_relaxed); }
  uint64_t reconnects() const override { return reconnects_.load(std::memory_order_relaxed); }

 private:
  // Reloads the map if `force` or it is stale and kRefreshInterval passed.
  bool MaybeRefresh(bool force);
  void LogError(const absl::Status& status, size_t dropped_entries);

  RedisClusterRouter router_;
  RedisCommandWriter commands_;
  bool stale_ = true;
  absl::Time last_refresh_ = absl::InfinitePast();
  std::atomic<bool> up_{false};
  std::atomic<uint64_t> reconnects_{0};
  LogThrottle error_throttle_;
};

class RedisClusterReader final : public LogReader {
 public:
  static absl::StatusOr<std::unique_ptr<RedisClusterReader>> Create(const LogStoreConfig& config);

  RedisClusterReader(RedisClusterOptions options, std::string key_prefix)
      : router_(std::move(options)), key_prefix_(std::move(key_prefix)) {}

  // As RedisLogReader::Fetch, routed to the key's master.
  absl::StatusOr<std::vector<std::optional<std::string>>> Fetch(
      absl::string_view request_id, absl::Span<const std::string> item_ids) override;

 private:
  absl::Mutex mu_;
  RedisClusterRouter router_ ABSL_GUARDED_BY(mu_);
  RedisCommandWriter commands_ ABSL_GUARDED_BY(mu_);
  const std::string key_prefix_;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_REDIS_CLUSTER_LOG_STORE_H_
