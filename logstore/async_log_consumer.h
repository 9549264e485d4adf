// AsyncLogConsumer is the LogConsumer behind every backend: a bounded queue
// of requests' logs and writer threads that drain it, each into its own
// LogSink (its own store connection).
//
// The ranking thread calls Consume(): it sizes the request (one pass over
// the item lengths, no copying), takes a lock, and either moves the logs
// into the queue or, when the queue is at its bound (requests or bytes,
// whichever is hit first) or the consumer is shut down, completes the
// future at once as dropped. It never waits on the store. A full queue
// drops the new request; what is queued keeps its place. The drop is
// counted as a queue-full one while the store is up, and as a store error
// while it is down (a sink's last write or connect failed: a writer stuck
// on a stalled Redis is what filled the queue).
//
// A writer thread takes up to batch_requests requests at a time: after a
// write it lets the next batch gather for up to `linger` (or until it is
// full), so under load a writer wakes once per batch rather than once per
// request; an idle writer takes the first request at once. It renders them (columns,
// log_columns.h, or text, log_value.h, compressing if asked), hands
// the batch to its sink in one call (one pipelined round trip) and
// completes each future with the sink's per-request outcome. Writers share
// the queue, so rendering and writing scale over them; each runs at
// `writer_nice` so ranking threads get the CPU first, on `writer_cpus` if
// given. When idle a writer
// calls LogSink::Poll() every few tens of milliseconds so a sink that is
// down reconnects without waiting for traffic.
//
// Every future completes, exactly once, with kStored, kDropped or kUnknown
// (sent whole, no answer); counters are updated before the future
// completes, so a caller that has waited on a future sees it counted in
// stats(). Each item handed to Consume() is counted in items_handed and
// ends up in exactly one of items_stored, the items_dropped_* counters or
// items_unknown; until then it is in flight. The counters change together
// under the queue's lock, so every stats() holds LogStats's identity
// exactly; items_enqueued counts the ones that entered the queue.
//
// Ownership: owns the sinks and the writer threads. The destructor calls
// Shutdown(kDestructorFlushTimeout).
//
// Thread safety: Consume(), stats() and KeyFor() are safe from many
// threads; Shutdown() may be called from any thread, more than once.
#ifndef RANKWIRE_LOGSTORE_ASYNC_LOG_CONSUMER_H_
#define RANKWIRE_LOGSTORE_ASYNC_LOG_CONSUMER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "logstore/log_sink.h"
#include "logstore/log_store.h"
#include "logstore/log_throttle.h"

namespace rankwire::logstore {

class AsyncLogConsumer final : public LogConsumer {
 public:
  // How long the destructor lets the writer flush the queue.
  static constexpr absl::Duration kDestructorFlushTimeout = absl::Seconds(1);
  // A batch stops growing at this many queued bytes even if batch_requests
  // is not reached, which bounds the sink's per-round-trip buffers.
  static constexpr size_t kMaxBatchBytes = size_t{8} << 20;
  // The longest TTL accepted. Logs live for a second or so; a bound keeps
  // expiry arithmetic far from overflow.
  static constexpr absl::Duration kMaxTtl = absl::Hours(24 * 30);
  // How often an idle writer calls LogSink::Poll().
  static constexpr absl::Duration kIdlePollInterval = absl::Milliseconds(50);

  // The most writer threads accepted.
  static constexpr size_t kMaxWriters = 64;

  // Uses the queue, batch, TTL, key, format and compression fields of
  // `config`. InvalidArgument if one is out of range (zero capacity or
  // batch, TTL outside [1 ms, kMaxTtl], compression level above 22), if
  // `sinks` is empty or holds a null, or has more than kMaxWriters. Starts
  // one writer thread per sink.
  static absl::StatusOr<std::unique_ptr<AsyncLogConsumer>> Create(
      const LogStoreConfig& config, std::vector<std::unique_ptr<LogSink>> sinks);

  ~AsyncLogConsumer() override;

  AsyncLogConsumer(const AsyncLogConsumer&) = delete;
  AsyncLogConsumer& operator=(const AsyncLogConsumer&) = delete;

  std::future<LogReceipt> Consume(RequestLogs logs) override;
  // Stops accepting, lets the writer write what is queued until `timeout`
  // has passed, drops the rest as kCancelled and joins the writer. A batch
  // already handed to the sink finishes first, so the wait can exceed
  // `timeout` by one round trip (bounded by the sink's I/O timeout).
  void Shutdown(absl::Duration timeout) override;
  LogStats stats() const override;
  std::string KeyFor(absl::string_view request_id) const override;

 private:
  struct Pending {
    RequestLogs logs;
    size_t bytes = 0;
    std::promise<LogReceipt> promise;
  };

  AsyncLogConsumer(const LogStoreConfig& config, std::vector<std::unique_ptr<LogSink>> sinks);

  // `index` 0 also reports queue-full drops.
  void WriterLoop(size_t index);
  void WriteBatch(LogSink& sink, std::vector<Pending>& batch);
  void ReportQueueFullDrops();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  }
  bool BatchFullOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.size() >= batch_requests_ || stopping_;
  }
  // Whether some sink's last write or connect failed (LogSink::failing()).
  bool StoreFailing() const;

  const std::string key_prefix_;
  const absl::Duration ttl_;
  const size_t capacity_requests_;
  const size_t capacity_bytes_;
  const size_t batch_requests_;
  const LogStoreConfig::Format format_;
  const bool compress_;
  const int compress_level_;
  const int writer_nice_;
  const absl::Duration linger_;
  const uint32_t cpu_sample_every_;
  const std::vector<int> writer_cpus_;
  // sinks_[i] is used by writer thread i only (up() and reconnects() by any).
  const std::vector<std::unique_ptr<LogSink>> sinks_;

  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  size_t queue_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // Also: no longer accepting.
  absl::Time flush_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();

  // The line counts (LogStats), changed together under mu_ so that a
  // stats() snapshot adds up: items queued and items in writers' hands are
  // the ones in flight.
  struct Counts {
    uint64_t handed = 0;
    uint64_t requests_enqueued = 0;
    uint64_t enqueued = 0;
    uint64_t stored = 0;
    uint64_t dropped_queue_full = 0;
    uint64_t dropped_store_error = 0;
    uint64_t dropped_shutdown = 0;
    uint64_t unknown = 0;
    uint64_t queued = 0;
    uint64_t writing = 0;
  };
  Counts counts_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> bytes_stored_{0};
  std::atomic<uint64_t> format_cpu_ns_{0};
  std::atomic<uint64_t> store_cpu_ns_{0};
  std::atomic<uint64_t> cpu_sampled_requests_{0};

  // Writer 0 only: queue-full drops already reported in a log line.
  uint64_t queue_full_reported_ = 0;
  LogThrottle queue_full_throttle_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  std::vector<std::thread> writers_;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_ASYNC_LOG_CONSUMER_H_
