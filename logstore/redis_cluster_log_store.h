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
// writes. A connection that was open before the batch and turns out closed
// (Redis's idle `timeout`, a restart) gets the node's unconfirmed entries
// resent once on a fresh one (a transaction runs whole or not at all, and
// running one again is harmless: DEL first); after a timeout nothing is
// resent, as the node is slow or stalled and logs are droppable.
//
// RedisClusterReader routes each HMGET the same way (one round trip when
// the map is right; MOVED/ASK/a lost connection cost one more). Its lock
// covers the slot map and a small pool of idle connections per master, not
// the HMGET itself: each call takes a connection out of the pool (or makes
// one) and talks to the master without the lock, so a stalled master slows
// only the reads of its own keys. Map reloads are rate-limited as the
// sink's are, and run without the lock too, on a router of their own, by
// one call at a time; the others go on with the map they have (a stalled
// node asked for the map backs off). Pooled connections that Redis closed
// while idle (its `timeout`) are dropped together on the first one found
// closed, and that try is not counted.
//
// Thread safety: the sink follows LogSink; the reader's Fetch() is safe from
// many threads.
#ifndef RANKWIRE_LOGSTORE_REDIS_CLUSTER_LOG_STORE_H_
#define RANKWIRE_LOGSTORE_REDIS_CLUSTER_LOG_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
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
#include "logstore/redis_connection.h"

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
  bool failing() const override { return failing_.load(std::memory_order_relaxed); }
  uint64_t reconnects() const override { return reconnects_.load(std::memory_order_relaxed); }

 private:
  // Reloads the map if `force` or it is stale and kRefreshInterval passed.
  bool MaybeRefresh(bool force);
  void LogError(const absl::Status& status, size_t dropped_entries);

  RedisClusterRouter router_;
  RedisCommandWriter commands_;
  bool stale_ = true;
  absl::Time last_refresh_ = absl::InfinitePast();
  void RecordAttempt(bool up) {
    up_.store(up, std::memory_order_relaxed);
    failing_.store(!up, std::memory_order_relaxed);
  }
  std::atomic<bool> up_{false};
  std::atomic<bool> failing_{false};
  std::atomic<uint64_t> reconnects_{0};
  LogThrottle error_throttle_;
};

class RedisClusterReader final : public LogReader {
 public:
  static absl::StatusOr<std::unique_ptr<RedisClusterReader>> Create(const LogStoreConfig& config);

  // Idle connections kept per master; more concurrent reads of one master
  // than this make connections that are closed after their call.
  static constexpr size_t kMaxIdlePerNode = 4;
  // How long a MOVED target may outvote reloaded maps that disagree: the
  // cluster's gossip spreads a move well within it; past it, a reload's map
  // is trusted again (a wrong one costs a MOVED, which records it anew).
  static constexpr absl::Duration kMovedLifetime = absl::Seconds(5);

  RedisClusterReader(RedisClusterOptions options, std::string key_prefix)
      : options_(options),
        router_(options),
        refresher_(std::move(options)),
        key_prefix_(std::move(key_prefix)) {}

  // As RedisLogReader's, routed to the key's master.
  absl::StatusOr<std::vector<std::optional<std::string>>> ReadFields(
      absl::string_view request_id, absl::Span<const std::string> fields,
      absl::Time deadline) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A master's idle connections, and its reconnect backoff.
  struct Node {
    std::vector<RedisConnection> idle;
    ReconnectBackoff backoff;
  };
  // Where an attempt goes, and a connection to it (nullopt: connect first).
  struct Target {
    std::string address;
    std::optional<RedisConnection> connection;
    bool pooled = false;  // Taken from the idle pool (it may have been closed).
  };
  // Reloads the map if it is missing, or stale and not reloaded for
  // kRefreshInterval, and no other call is reloading it: on refresher_,
  // without the lock (CLUSTER SLOTS may wait out a stalled node's timeout),
  // then installs it, keeping what was learnt meanwhile (MOVED targets, a
  // failure that makes the new map stale too). Other calls
  // meanwhile use the map they have. Whether this call reloaded.
  bool MaybeRefresh() ABSL_LOCKS_EXCLUDED(mu_);
  bool NotRefreshing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !refreshing_; }
  // Marks the map stale (a node failed, a slot moved).
  void MarkStale() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A node failed (a connect, or a round trip on a fresh connection): the
  // map is stale, and MOVED targets that name it are dropped.
  void NodeFailed(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a MOVED target, which outlives reloads (moved_).
  void RecordMoved(uint16_t slot, const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);
  // `address` answered the HMGET for `slot` with an error (not a redirect):
  // a MOVED target it was is dropped; CLUSTERDOWN (kUnavailable) also
  // marks the map stale.
  void Refused(uint16_t slot, const std::string& address, const absl::Status& error)
      ABSL_LOCKS_EXCLUDED(mu_);
  // After a round trip on `target` failed with an I/O error: a timeout
  // drops the node's idle pool and backs it off for kStalledNodeBackoff
  // (kStop: the read ends); a fresh connection lost marks the map stale
  // (kRetry); a pooled one drops the pool, the first time without costing
  // the read a try (kRetryFree).
  enum class IoOutcome { kStop, kRetry, kRetryFree };
  IoOutcome AfterIoError(const Target& target, bool* pool_dropped) ABSL_LOCKS_EXCLUDED(mu_);
  // Picks the node (`ask_target` or the slot's master) and takes an idle
  // connection to it. Reloads the map first if `*may_refresh` (and then
  // clears it: one reload per Fetch); with no map yet, waits for a reload
  // under way until `deadline`.
  absl::StatusOr<Target> PickTarget(uint16_t slot, const std::string& ask_target, bool* may_refresh,
                                    absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // The node at `address`, made with the configured backoff on first use.
  Node& NodeAt(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Without the lock: connects, counting a failure against the node's backoff.
  absl::Status Connect(Target& target) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives a healthy connection back to its node's pool.
  void Return(Target target) ABSL_LOCKS_EXCLUDED(mu_);
  // One HMGET (after ASKING when `asking`) on `connection`, all within
  // `limit`; the reply or the connection's I/O error.
  static absl::StatusOr<RedisReplyPtr> Exchange(RedisConnection& connection, absl::string_view key,
                                                absl::Span<const std::string> item_ids, bool asking,
                                                absl::Duration limit);

  const RedisClusterOptions options_;
  absl::Mutex mu_;
  RedisClusterRouter router_ ABSL_GUARDED_BY(mu_);  // The map in use.
  // Reloads the map; used only by the call that set refreshing_.
  RedisClusterRouter refresher_;
  bool refreshing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status refresh_status_ ABSL_GUARDED_BY(mu_) =
      absl::UnavailableError("redis cluster: no slot map");
  bool stale_ ABSL_GUARDED_BY(mu_) = false;
  // Counts MarkStale() calls: a reload that started before the latest one
  // leaves the map stale.
  uint64_t stale_marks_ ABSL_GUARDED_BY(mu_) = 0;
  // MOVED targets (slot -> master), applied over every reloaded map: the
  // node a map comes from may not have heard of the move yet. One is
  // dropped when a reloaded map agrees with it, when a later MOVED for its
  // slot replaces it, when its node fails or answers the slot with an
  // error, and at the first reload kMovedLifetime after it was recorded.
  // At most one per slot.
  struct Moved {
    std::string address;
    absl::Time recorded;
  };
  absl::flat_hash_map<uint16_t, Moved> moved_ ABSL_GUARDED_BY(mu_);
  absl::Time last_refresh_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::flat_hash_map<std::string, Node> nodes_ ABSL_GUARDED_BY(mu_);
  const std::string key_prefix_;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_REDIS_CLUSTER_LOG_STORE_H_
