// The embedded log store: an in-process table with Redis's semantics for
// what rankwire does with Redis, so the server runs with no Redis at all.
//
//   - one key per request, one field per item; writing a key again replaces
//     all of its fields and resets its expiry (DEL + HSET + PEXPIRE);
//   - a key is invisible from its expiry on (reads check it, like Redis's
//     lazy expiry) and is purged soon after (like Redis's active expiry), so
//     memory is bounded by what was written in the last TTL.
//
// MemoryLogTable is the shared state; MemoryLogSink writes into it from the
// consumer's writer thread and MemoryLogReader reads from it. Both hold a
// shared_ptr to the table, so it lives as long as either.
//
// Example:
//   auto table = std::make_shared<MemoryLogTable>();
//   absl::StatusOr<LogStore> store = OpenMemoryLogStore(config, table);
//
// Thread safety: MemoryLogTable and MemoryLogReader are safe from many
// threads; MemoryLogSink follows LogSink.
#ifndef RANKWIRE_LOGSTORE_MEMORY_LOG_STORE_H_
#define RANKWIRE_LOGSTORE_MEMORY_LOG_STORE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "logstore/log_sink.h"
#include "logstore/log_store.h"

namespace rankwire::logstore {

class MemoryLogTable {
 public:
  using Clock = std::chrono::steady_clock;
  // Where the table reads the time. Tests pass a manual clock so that
  // expiry is tested without sleeping.
  using NowFunction = std::function<Clock::time_point()>;

  explicit MemoryLogTable(NowFunction now = &Clock::now) : now_(std::move(now)) {}

  // Replaces the fields of `entry.key` with the entry's (moving from them)
  // and sets its expiry to now + ttl. Purges keys that have expired.
  void Put(SinkEntry& entry, absl::Duration ttl);

  // The encoded values of `fields` of `key`, in order; nullopt for a field
  // that is not there or a key that has expired.
  std::vector<std::optional<std::string>> Get(absl::string_view key,
                                              absl::Span<const std::string> fields);

  // Time until `key` expires (like PTTL), nullopt if there is no such key.
  std::optional<absl::Duration> TimeToLive(absl::string_view key);

  // Removes every expired key; returns how many.
  size_t PurgeExpired();

  // Keys held, including expired ones not purged yet.
  size_t key_count() const;
  // Bytes of field names and values held.
  size_t byte_count() const;

 private:
  struct Entry {
    Clock::time_point expires;
    absl::flat_hash_map<std::string, std::string> fields;
    size_t bytes = 0;
  };
  using Expiry = std::pair<Clock::time_point, std::string>;

  size_t PurgeExpiredLocked(Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const NowFunction now_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Min-heap of (expiry, key). A key written again has a stale element here
  // too; purging skips it because the entry's own expiry is later.
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> expiries_
      ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

class MemoryLogSink final : public LogSink {
 public:
  explicit MemoryLogSink(std::shared_ptr<MemoryLogTable> table) : table_(std::move(table)) {}

  std::vector<absl::Status> Write(absl::Span<SinkEntry> batch, absl::Duration ttl) override;
  // Purges expired keys, so memory drains when traffic stops.
  void Poll() override { table_->PurgeExpired(); }
  bool up() const override { return true; }
  uint64_t reconnects() const override { return 0; }

 private:
  const std::shared_ptr<MemoryLogTable> table_;
};

class MemoryLogReader final : public LogReader {
 public:
  MemoryLogReader(std::shared_ptr<MemoryLogTable> table, std::string key_prefix)
      : table_(std::move(table)), key_prefix_(std::move(key_prefix)) {}

  absl::StatusOr<std::vector<std::optional<std::string>>> ReadFields(
      absl::string_view request_id, absl::Span<const std::string> fields,
      absl::Time deadline) override;

 private:
  const std::shared_ptr<MemoryLogTable> table_;
  const std::string key_prefix_;
};

// A consumer writing into `table` and a reader over it. InvalidArgument for
// a bad config (the Redis fields are ignored).
absl::StatusOr<LogStore> OpenMemoryLogStore(const LogStoreConfig& config,
                                            std::shared_ptr<MemoryLogTable> table);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_MEMORY_LOG_STORE_H_
