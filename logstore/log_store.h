// The log store takes per-item log lines off the ranking response. The
// ranking thread hands a request's logs to a LogConsumer and gets a future
// back; a writer thread stores them (Redis with a TTL, or an in-process map
// with the same semantics) and completes the future. Ranking never waits on
// the store: Consume() only moves the logs into a bounded queue, and when the
// queue is full or the store is down the logs are dropped and counted.
//
// Callers read the logs of the few items they show with a LogReader, in one
// round trip, within the TTL.
//
// Keys: one per request, KeyFor(request_id) = key_prefix + request_id
// ("rank:log:req-1"), a hash written whole (DEL + HSET + PEXPIRE in one
// MULTI/EXEC, so a reused request id replaces the earlier logs). With
// Format::kColumns (the default) the hash holds the request's layout
// (field "", version 3), its top_n items' values (field "#0") and every
// item's values as the ranker holds them, column by column (field "#1";
// log_columns.h); with Format::kText one field per item (the item id), 'T'
// + text or 'Z' + a zstd frame of it. Readers read both, and what servers
// of earlier versions wrote: blocks (layout version 2, log_blocks.h) and
// per-item records (version 1, log_record.h). docs/LOGS.md specifies the
// bytes.
//
// Thread safety: LogConsumer::Consume and LogReader::Fetch are safe from many
// threads. Shutdown is called once.
#ifndef RANKWIRE_LOGSTORE_LOG_STORE_H_
#define RANKWIRE_LOGSTORE_LOG_STORE_H_

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "logstore/format/packed_fields.h"

namespace rankwire::logstore {

struct ItemLog {
  std::string item_id;
  std::string text;
};

// Makes a request's log lines from what the ranker captured. It runs on the
// log writer thread, so a ranking thread that hands one over pays for
// handing over the values, not for writing them.
class LogRenderer {
 public:
  virtual ~LogRenderer() = default;
  // How many lines Render() makes, and about how many bytes the renderer
  // holds while queued (for the queue's byte bound).
  virtual size_t ItemCount() const = 0;
  virtual size_t EstimatedBytes() const = 0;
  // Appends one ItemLog per item: ItemCount() of them, which the consumer
  // counts as stored or dropped. Called once (this or RenderColumns).
  virtual void Render(std::vector<ItemLog>* items) = 0;
  // The structured form (log_columns.h): appends the fields "" (the
  // layout), "#0" and "#1" to `fields`, which render to the same text
  // Render() makes. "#1" may be pieces of memory the renderer holds
  // (PackedFields::AddPieces): the renderer must outlive the fields' use.
  // False if this renderer has no structured form (then `fields` is as it
  // was and Render() is used).
  virtual bool RenderColumns(PackedFields* fields) {
    (void)fields;
    return false;
  }
};

// The logs of one ranking request: the lines themselves, or a renderer that
// makes them on the writer thread (then `items` is empty until it runs).
struct RequestLogs {
  std::string request_id;
  std::vector<ItemLog> items;
  // Shared so RequestLogs stays copyable; the writer renders it once.
  std::shared_ptr<LogRenderer> renderer = nullptr;
};

// How one Consume() ended.
struct LogReceipt {
  // kUnknown: the write went out whole but no answer came (a timeout, a
  // lost connection): the store may or may not hold the logs.
  enum class Outcome { kStored, kDropped, kUnknown };
  Outcome outcome = Outcome::kDropped;
  size_t items = 0;
  // Why it was dropped (kUnavailable: store down; kResourceExhausted: queue
  // full; kCancelled: shut down before it was written), or why the outcome
  // is unknown.
  absl::Status status;
};

// Counters since start. Items are per-item log lines. Every line handed
// to Consume() is in exactly one of stored, a dropped_* counter, unknown or
// in flight (queued, or in a writer's hands), so
//
//   items_handed = items_stored + items_dropped_* + items_unknown + items_in_flight
//
// holds in every LogStats (stats() reads them together), and once the
// writers are idle, in_flight is 0.
struct LogStats {
  uint64_t items_handed = 0;
  uint64_t requests_enqueued = 0;
  uint64_t items_enqueued = 0;
  uint64_t items_stored = 0;
  uint64_t items_dropped_queue_full = 0;
  uint64_t items_dropped_store_error = 0;
  uint64_t items_dropped_shutdown = 0;
  uint64_t items_unknown = 0;
  uint64_t items_in_flight = 0;
  uint64_t bytes_stored = 0;  // Value bytes sent to the store (after compression).
  // The writers' CPU time over a sample of batches (LogStoreConfig::
  // cpu_sample_every): making the values, and writing them; the mean per
  // request is each over cpu_sampled_requests.
  uint64_t format_cpu_ns = 0;
  uint64_t store_cpu_ns = 0;
  uint64_t cpu_sampled_requests = 0;
  uint64_t queue_requests = 0;  // Current queue depth.
  uint64_t queue_bytes = 0;
  uint64_t reconnects = 0;
  bool store_up = false;
};

// Takes a request's logs off the ranking path: Consume queues them and
// returns at once; a writer thread stores them. The future says what became
// of them (stored or dropped, and why).
class LogConsumer {
 public:
  virtual ~LogConsumer() = default;
  // O(1) and never blocks on the store. The future completes when the logs
  // are stored or dropped; callers may ignore it.
  virtual std::future<LogReceipt> Consume(RequestLogs logs) = 0;
  // Stops accepting, writes what is queued for at most `timeout`, drops
  // (and counts) the rest, and stops the writer thread. Idempotent.
  virtual void Shutdown(absl::Duration timeout) = 0;
  virtual LogStats stats() const = 0;
  virtual std::string KeyFor(absl::string_view request_id) const = 0;
};

class LogReader {
 public:
  virtual ~LogReader() = default;
  // The logs of `item_ids` of one request, in the same order; nullopt for
  // an item with no log (never written, or expired). One round trip when
  // every id is in the request's first block (its top_n items) or the
  // request was stored per item; a second for the other blocks otherwise.
  // kUnavailable when the store cannot be reached, DataLoss for a stored
  // value that is corrupt.
  absl::StatusOr<std::vector<std::optional<std::string>>> Fetch(
      absl::string_view request_id, absl::Span<const std::string> item_ids) {
    return FetchBefore(request_id, item_ids, absl::InfiniteFuture());
  }
  // The same, for a caller with a deadline (FetchLogs's): no connect, round
  // trip or slot map reload starts after `deadline`, nor does a wait for a
  // shared connection last past it; a call that reaches it gets
  // kDeadlineExceeded. A step under way runs to its store's timeouts.
  absl::StatusOr<std::vector<std::optional<std::string>>> FetchBefore(
      absl::string_view request_id, absl::Span<const std::string> item_ids, absl::Time deadline);

  // The raw values of `fields` of the request's hash (nullopt: absent), in
  // one round trip, under the same deadline rules.
  virtual absl::StatusOr<std::vector<std::optional<std::string>>> ReadFields(
      absl::string_view request_id, absl::Span<const std::string> fields, absl::Time deadline) = 0;
};

struct LogStoreConfig {
  enum class Backend { kMemory, kRedis, kRedisCluster };
  // How lines handed over as renderers are stored: columns of typed values
  // (the default: a fraction of text's Redis memory, nothing formatted on
  // the write path) or text ('T', or 'Z' with `compress`). Lines handed
  // over as text are always stored as text.
  enum class Format { kColumns, kText };
  Backend backend = Backend::kMemory;
  Format format = Format::kColumns;
  // host:port; for kRedisCluster a comma-separated list of seed nodes.
  std::string redis_addr = "127.0.0.1:6379";
  std::string redis_password;  // AUTH when not empty.
  std::string key_prefix = "rank:log:";
  absl::Duration ttl = absl::Milliseconds(1000);
  // Queue bound: whichever is hit first.
  size_t queue_capacity_requests = 256;
  size_t queue_capacity_bytes = size_t{256} << 20;
  // Requests written per pipelined round trip.
  size_t batch_requests = 16;
  // How long a writer lets a batch gather after a write (or until it has
  // batch_requests): one wake-up per batch instead of per request, at the
  // price of logs readable up to this much later. 0: no wait.
  absl::Duration linger = absl::Milliseconds(2);
  // The writers' CPU time is measured on one batch in this many (0: none).
  uint32_t cpu_sample_every = 8;
  // Writer threads, each with its own store connection; 0: DefaultLogWriters().
  size_t writers = 0;
  bool compress = false;  // zstd each value.
  int compress_level = 1;
  // Nice value of the writer thread (Linux: per thread). Positive values let
  // ranking threads take the CPU first when both want it; the writer uses
  // what is left, and if that is not enough the queue bound drops logs.
  int writer_nice = 10;
  // CPUs the writer threads run on (empty: wherever the process may run).
  // Writers on cores of their own never take CPU from ranking.
  std::vector<int> writer_cpus;
  absl::Duration connect_timeout = absl::Milliseconds(200);
  // What one exchange may wait on Redis in all, sending and reading: a
  // connect's AUTH or PING, a reader's HMGET or CLUSTER SLOTS, a writer's
  // whole pipelined batch to one node (RedisConnection::GetReplyWithin).
  absl::Duration io_timeout = absl::Milliseconds(500);
  absl::Duration reconnect_backoff_min = absl::Milliseconds(50);
  // At most this long between connect attempts to a store that is down:
  // a refused connect costs next to nothing, and writes resume this soon
  // after the store is back.
  absl::Duration reconnect_backoff_max = absl::Milliseconds(250);
};

// A consumer and a reader over one backend. For kMemory both share one
// in-process map; for kRedis the reader has its own connection.
struct LogStore {
  std::unique_ptr<LogConsumer> consumer;
  std::unique_ptr<LogReader> reader;
};

// Starts the writer thread. Does not fail when Redis is down: the sink
// connects (and reconnects) on its own; InvalidArgument for a bad config.
absl::StatusOr<LogStore> OpenLogStore(const LogStoreConfig& config);

// The writer count of `config`: its `writers`, or DefaultLogWriters().
size_t WriterCount(const LogStoreConfig& config);

// The writer count used when LogStoreConfig::writers is 0: one per two
// usable CPUs (base/thread_sched.h UsableCpus()), at least 1 and at most 8. Writers mostly wait on
// the store, and ranking threads need the cores more.
size_t DefaultLogWriters();

// A reader for a remote Redis or, with Backend::kRedisCluster, a Redis
// Cluster (the client side of the log store).
absl::StatusOr<std::unique_ptr<LogReader>> OpenRedisLogReader(const LogStoreConfig& config);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_LOG_STORE_H_
