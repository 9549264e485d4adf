// LogSink is what the consumer's writer thread writes batches into: Redis
// (redis_log_sink.h) or the in-process table (memory_log_store.h). It is the
// one seam between queueing (async_log_consumer.h) and storage.
//
// A sink owns its connection state. When its store is down it fails writes
// quickly (it must not hold the writer for longer than its own I/O timeout),
// and it reconnects on its own: on a later Write, or from Poll() when the
// writer is idle.
//
// Thread safety: Write() and Poll() are called from one thread (the writer);
// up() and reconnects() from any thread.
#ifndef RANKWIRE_LOGSTORE_LOG_SINK_H_
#define RANKWIRE_LOGSTORE_LOG_SINK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "logstore/format/packed_fields.h"

namespace rankwire::logstore {

// One request's logs as the store keeps them: one key, one field per item
// (the item id and its encoded value, log_value.h; with records, also the
// layout field), packed as HSET sends them.
struct SinkEntry {
  std::string key;
  PackedFields fields;  // Never empty.
  // What the fields' pieces point into (PackedFields::AddPieces): kept
  // alive until the entry is gone.
  std::shared_ptr<const void> keep;
};

// A write's outcome when its bytes went out whole but no answer came (a
// timeout, a lost connection): the store may hold it or not. `why` says
// what happened; the consumer counts the entry as unknown, not dropped.
absl::Status OutcomeUnknown(const absl::Status& why);
bool IsOutcomeUnknown(const absl::Status& status);

class LogSink {
 public:
  virtual ~LogSink() = default;

  // Stores every entry (its fields, then an expiry of `ttl` on its key) and
  // returns one status per entry, in order. OK means stored;
  // IsOutcomeUnknown means it was sent whole and no answer came;
  // kUnavailable otherwise means the store could not be reached (the entry
  // was not stored); other codes are the store's refusal of that entry.
  // The sink may move from the entries.
  virtual std::vector<absl::Status> Write(absl::Span<SinkEntry> batch, absl::Duration ttl) = 0;

  // Called by the writer when it has nothing to write, about every
  // AsyncLogConsumer poll interval: reconnect if due, purge, and so on.
  virtual void Poll() {}

  // Whether the last write or connection attempt succeeded.
  virtual bool up() const = 0;
  // Whether the last write or connection attempt failed: unlike !up(), false
  // before the first attempt, so a sink still making its first connection
  // is not a store that is down.
  virtual bool failing() const { return false; }
  // Connections made after a failed attempt or a lost connection.
  virtual uint64_t reconnects() const = 0;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_LOG_SINK_H_
