#include "logstore/memory_log_store.h"

#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "logstore/async_log_consumer.h"
#include "logstore/format/log_record.h"
#include "logstore/format/log_value.h"

namespace rankwire::logstore {

void MemoryLogTable::Put(SinkEntry& entry, absl::Duration ttl) {
  const Clock::time_point now = now_();
  const Clock::time_point expires = now + absl::ToChronoNanoseconds(ttl);
  absl::MutexLock lock(&mu_);
  PurgeExpiredLocked(now);
  Entry& stored = entries_[entry.key];
  // Like DEL before HSET: a key written again holds only the new fields.
  bytes_ -= stored.bytes;
  stored.bytes = 0;
  stored.fields.clear();
  // A cursor, not ForEach: -Wthread-safety cannot see that a lambda runs
  // under mu_.
  PackedFields::Cursor cursor(entry.fields);
  for (absl::string_view name, value; cursor.Next(&name, &value);) {
    const size_t size = name.size() + value.size();
    auto [it, inserted] = stored.fields.try_emplace(std::string(name));
    if (!inserted) {
      const size_t old = it->first.size() + it->second.size();
      stored.bytes -= old;
      bytes_ -= old;
    }
    it->second.assign(value.data(), value.size());
    stored.bytes += size;
    bytes_ += size;
  }
  stored.expires = expires;
  expiries_.emplace(expires, entry.key);
}

std::vector<std::optional<std::string>> MemoryLogTable::Get(absl::string_view key,
                                                            absl::Span<const std::string> fields) {
  std::vector<std::optional<std::string>> values(fields.size());
  const Clock::time_point now = now_();
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.expires <= now) return values;
  for (size_t i = 0; i < fields.size(); ++i) {
    auto field = it->second.fields.find(fields[i]);
    if (field != it->second.fields.end()) values[i] = field->second;
  }
  return values;
}

std::optional<absl::Duration> MemoryLogTable::TimeToLive(absl::string_view key) {
  const Clock::time_point now = now_();
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.expires <= now) return std::nullopt;
  return absl::FromChrono(it->second.expires - now);
}

size_t MemoryLogTable::PurgeExpired() {
  absl::MutexLock lock(&mu_);
  return PurgeExpiredLocked(now_());
}

size_t MemoryLogTable::PurgeExpiredLocked(Clock::time_point now) {
  size_t purged = 0;
  while (!expiries_.empty() && expiries_.top().first <= now) {
    auto it = entries_.find(expiries_.top().second);
    if (it != entries_.end() && it->second.expires <= now) {
      bytes_ -= it->second.bytes;
      entries_.erase(it);
      ++purged;
    }
    expiries_.pop();
  }
  return purged;
}

size_t MemoryLogTable::key_count() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

size_t MemoryLogTable::byte_count() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

std::vector<absl::Status> MemoryLogSink::Write(absl::Span<SinkEntry> batch, absl::Duration ttl) {
  for (SinkEntry& entry : batch) table_->Put(entry, ttl);
  return std::vector<absl::Status>(batch.size());
}

absl::StatusOr<std::vector<std::optional<std::string>>> MemoryLogReader::ReadFields(
    absl::string_view request_id, absl::Span<const std::string> fields, absl::Time deadline) {
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError("the log read's deadline passed before it started");
  }
  return table_->Get(absl::StrCat(key_prefix_, request_id),
                     std::vector<std::string>(fields.begin(), fields.end()));
}

absl::StatusOr<LogStore> OpenMemoryLogStore(const LogStoreConfig& config,
                                            std::shared_ptr<MemoryLogTable> table) {
  if (table == nullptr) return absl::InvalidArgumentError("memory log table is null");
  std::vector<std::unique_ptr<LogSink>> sinks;
  for (size_t i = 0; i < WriterCount(config) && i <= AsyncLogConsumer::kMaxWriters; ++i) {
    sinks.push_back(std::make_unique<MemoryLogSink>(table));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<AsyncLogConsumer> consumer,
                   AsyncLogConsumer::Create(config, std::move(sinks)));
  LogStore store;
  store.consumer = std::move(consumer);
  store.reader = std::make_unique<MemoryLogReader>(std::move(table), config.key_prefix);
  return store;
}

}  // namespace rankwire::logstore
