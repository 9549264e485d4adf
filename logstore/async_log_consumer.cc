#include "logstore/async_log_consumer.h"

#include "base/cpu_sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/thread_sched.h"
#include "logstore/format/log_record.h"
#include "logstore/format/log_value.h"

namespace rankwire::logstore {
namespace {

std::future<LogReceipt> Completed(LogReceipt::Outcome outcome, size_t items, absl::Status status) {
  std::promise<LogReceipt> promise;
  promise.set_value(LogReceipt{outcome, items, std::move(status)});
  return promise.get_future();
}

// Bytes the queue is charged for a request: its ids and log text (or, for
// lines not rendered yet, the renderer's estimate).
size_t RequestBytes(const RequestLogs& logs) {
  size_t bytes = logs.request_id.size();
  for (const ItemLog& item : logs.items) bytes += item.item_id.size() + item.text.size();
  if (logs.renderer) bytes += logs.renderer->EstimatedBytes();
  return bytes;
}

// Log lines of a request, rendered or not.
size_t ItemCount(const RequestLogs& logs) {
  return logs.items.size() + (logs.renderer ? logs.renderer->ItemCount() : 0);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AsyncLogConsumer>> AsyncLogConsumer::Create(
    const LogStoreConfig& config, std::vector<std::unique_ptr<LogSink>> sinks) {
  if (sinks.empty() || sinks.size() > kMaxWriters) {
    return absl::InvalidArgumentError(
        absl::StrCat("log writers must be in [1, ", kMaxWriters, "], got ", sinks.size()));
  }
  for (const auto& sink : sinks) {
    if (sink == nullptr) return absl::InvalidArgumentError("log sink is null");
  }
  if (config.queue_capacity_requests == 0 || config.queue_capacity_bytes == 0) {
    return absl::InvalidArgumentError("log queue capacity (requests and bytes) must be positive");
  }
  if (config.batch_requests == 0) {
    return absl::InvalidArgumentError("log batch size must be positive");
  }
  if (config.ttl < absl::Milliseconds(1) || config.ttl > kMaxTtl) {
    return absl::InvalidArgumentError(absl::StrCat("log TTL must be in [1ms, ",
                                                   absl::FormatDuration(kMaxTtl), "], got ",
                                                   absl::FormatDuration(config.ttl)));
  }
  if (config.compress && config.compress_level > 22) {
    return absl::InvalidArgumentError(
        absl::StrCat("zstd level must be at most 22, got ", config.compress_level));
  }
  return std::unique_ptr<AsyncLogConsumer>(new AsyncLogConsumer(config, std::move(sinks)));
}

AsyncLogConsumer::AsyncLogConsumer(const LogStoreConfig& config,
                                   std::vector<std::unique_ptr<LogSink>> sinks)
    : key_prefix_(config.key_prefix),
      ttl_(config.ttl),
      capacity_requests_(config.queue_capacity_requests),
      capacity_bytes_(config.queue_capacity_bytes),
      batch_requests_(config.batch_requests),
      format_(config.format),
      compress_(config.compress),
      compress_level_(config.compress_level),
      writer_nice_(config.writer_nice),
      linger_(std::max(config.linger, absl::ZeroDuration())),
      cpu_sample_every_(config.cpu_sample_every),
      writer_cpus_(config.writer_cpus),
      sinks_(std::move(sinks)) {
  writers_.reserve(sinks_.size());
  for (size_t i = 0; i < sinks_.size(); ++i) {
    writers_.emplace_back([this, i] { WriterLoop(i); });
  }
}

AsyncLogConsumer::~AsyncLogConsumer() { Shutdown(kDestructorFlushTimeout); }

std::string AsyncLogConsumer::KeyFor(absl::string_view request_id) const {
  return absl::StrCat(key_prefix_, request_id);
}

std::future<LogReceipt> AsyncLogConsumer::Consume(RequestLogs logs) {
  const size_t items = ItemCount(logs);
  // Nothing to store; HSET needs at least one field.
  if (items == 0) return Completed(LogReceipt::Outcome::kStored, 0, absl::OkStatus());
  const size_t bytes = RequestBytes(logs);
  std::promise<LogReceipt> promise;
  std::future<LogReceipt> future = promise.get_future();
  bool shut_down = false;
  bool store_down = false;
  {
    absl::MutexLock lock(&mu_);
    counts_.handed += items;
    if (stopping_) {
      shut_down = true;
      counts_.dropped_shutdown += items;
    } else if (queue_.size() < capacity_requests_ && queue_bytes_ + bytes <= capacity_bytes_) {
      queue_.push_back(Pending{std::move(logs), bytes, std::move(promise)});
      queue_bytes_ += bytes;
      ++counts_.requests_enqueued;
      counts_.enqueued += items;
      counts_.queued += items;
      return future;
    } else if (!StoreFailing()) {
      counts_.dropped_queue_full += items;
    } else {
      store_down = true;
      counts_.dropped_store_error += items;
    }
  }
  // Dropped: complete outside the lock. The warning line for queue-full
  // drops is the writer thread's job, so the ranking thread never logs.
  promise.set_value(LogReceipt{
      LogReceipt::Outcome::kDropped, items,
      shut_down    ? absl::CancelledError("log consumer is shut down")
      : store_down ? absl::UnavailableError("log store is down and the log queue is full")
                   : absl::ResourceExhaustedError("log queue is full")});
  return future;
}

void AsyncLogConsumer::WriterLoop(size_t index) {
  LogSink& sink = *sinks_[index];
  const bool reporter = index == 0;
  // Throughput work: the default time slice even when the server gives its
  // other threads a short one, a lower priority than ranking, and its own
  // CPUs if given (on Linux all three are per thread).
  if (absl::Status s = PlaceThroughputThread({"rankwire-logw", writer_nice_, writer_cpus_});
      !s.ok()) {
    spdlog::warn("log writer: {}", s.ToString());
  }
  std::vector<Pending> batch;
  bool wrote_last_round = false;
  for (;;) {
    batch.clear();
    std::deque<Pending> cancelled;
    bool exit = false;
    {
      absl::MutexLock lock(&mu_);
      // A batch gathers for up to linger_ after the last write (one wake-up
      // per batch, not per request: each is a context switch); an idle
      // writer takes the first request that comes at once.
      if (linger_ > absl::ZeroDuration() && wrote_last_round) {
        mu_.AwaitWithTimeout(absl::Condition(this, &AsyncLogConsumer::BatchFullOrStopping),
                             linger_);
      }
      mu_.AwaitWithTimeout(absl::Condition(this, &AsyncLogConsumer::HasWorkOrStopping),
                           kIdlePollInterval);
      if (stopping_ && (queue_.empty() || absl::Now() >= flush_deadline_)) {
        exit = true;
        cancelled.swap(queue_);
        queue_bytes_ = 0;
        for (const Pending& p : cancelled) {
          const size_t items = ItemCount(p.logs);
          counts_.queued -= items;
          counts_.dropped_shutdown += items;
        }
      } else {
        size_t batch_bytes = 0;
        while (!queue_.empty() && batch.size() < batch_requests_ &&
               (batch.empty() || batch_bytes + queue_.front().bytes <= kMaxBatchBytes)) {
          const size_t items = ItemCount(queue_.front().logs);
          counts_.queued -= items;
          counts_.writing += items;
          batch_bytes += queue_.front().bytes;
          queue_bytes_ -= queue_.front().bytes;
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
    }
    if (exit) {
      for (Pending& p : cancelled) {
        p.promise.set_value(LogReceipt{
            LogReceipt::Outcome::kDropped, ItemCount(p.logs),
            absl::CancelledError("log consumer shut down before these logs were written")});
      }
      if (reporter) ReportQueueFullDrops();
      return;
    }
    wrote_last_round = !batch.empty();
    if (batch.empty()) {
      sink.Poll();  // Idle: let the sink reconnect or purge.
    } else {
      WriteBatch(sink, batch);
    }
    if (reporter) ReportQueueFullDrops();
  }
}

void AsyncLogConsumer::WriteBatch(LogSink& sink, std::vector<Pending>& batch) {
  // A sample of the batches measures the writers' CPU per request: making
  // the stored values (log_format), writing them (log_store).
  CpuSampler cpu(cpu_sample_every_);
  cpu.Start();
  std::vector<SinkEntry> entries(batch.size());
  std::vector<size_t> items(batch.size(), 0);
  std::vector<size_t> value_bytes(batch.size(), 0);
  for (size_t i = 0; i < batch.size(); ++i) {
    RequestLogs& logs = batch[i].logs;
    SinkEntry& entry = entries[i];
    entry.key = KeyFor(logs.request_id);
    items[i] = ItemCount(logs);
    // Lines handed over unrendered are made here, off the ranking path:
    // as columns (the layout and "#0" written into the entry's fields, "#1"
    // mostly pieces of the renderer's memory, which the entry keeps alive)
    // or as text to be tagged below.
    if (logs.renderer) {
      if (format_ != LogStoreConfig::Format::kColumns ||
          !logs.renderer->RenderColumns(&entry.fields)) {
        logs.renderer->Render(&logs.items);
      }
      entry.keep = std::move(logs.renderer);
    }
    for (ItemLog& item : logs.items) {
      EncodeLogValue(compress_, compress_level_, &item.text);
      entry.fields.Add(item.item_id, item.text);
    }
    logs.items = std::vector<ItemLog>();  // Packed: one copy of the text is enough.
    value_bytes[i] = entry.fields.value_bytes();
  }
  const int64_t format_ns = cpu.Lap();
  // The sink may move from the entries.
  std::vector<absl::Status> results = sink.Write(absl::MakeSpan(entries), ttl_);
  std::vector<LogReceipt> receipts(batch.size());
  uint64_t stored_bytes = 0;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < batch.size(); ++i) {
      absl::Status status = i < results.size()
                                ? std::move(results[i])
                                : absl::InternalError("log sink returned too few results");
      counts_.writing -= items[i];
      if (status.ok()) {
        counts_.stored += items[i];
        stored_bytes += value_bytes[i];
        receipts[i] = LogReceipt{LogReceipt::Outcome::kStored, items[i], absl::OkStatus()};
      } else if (IsOutcomeUnknown(status)) {
        counts_.unknown += items[i];
        receipts[i] = LogReceipt{LogReceipt::Outcome::kUnknown, items[i], std::move(status)};
      } else {
        counts_.dropped_store_error += items[i];
        receipts[i] = LogReceipt{LogReceipt::Outcome::kDropped, items[i], std::move(status)};
      }
    }
  }
  bytes_stored_.fetch_add(stored_bytes, std::memory_order_relaxed);
  for (size_t i = 0; i < batch.size(); ++i) batch[i].promise.set_value(std::move(receipts[i]));
  if (cpu.sampling()) {
    format_cpu_ns_.fetch_add(static_cast<uint64_t>(format_ns), std::memory_order_relaxed);
    store_cpu_ns_.fetch_add(static_cast<uint64_t>(cpu.Lap()), std::memory_order_relaxed);
    cpu_sampled_requests_.fetch_add(batch.size(), std::memory_order_relaxed);
  }
}

void AsyncLogConsumer::ReportQueueFullDrops() {
  uint64_t dropped = 0;
  {
    absl::MutexLock lock(&mu_);
    dropped = counts_.dropped_queue_full;
  }
  if (dropped == queue_full_reported_) return;
  uint64_t suppressed = 0;
  if (!queue_full_throttle_.Allow(&suppressed)) return;
  spdlog::warn(
      "logstore: log queue full (bound {} requests / {} bytes); dropped {} log lines "
      "since the last report, {} in total",
      capacity_requests_, capacity_bytes_, dropped - queue_full_reported_, dropped);
  queue_full_reported_ = dropped;
}

void AsyncLogConsumer::Shutdown(absl::Duration timeout) {
  absl::MutexLock shutdown_lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    flush_deadline_ = absl::Now() + std::max(timeout, absl::ZeroDuration());
  }
  for (std::thread& writer : writers_) writer.join();
}

bool AsyncLogConsumer::StoreFailing() const {
  for (const auto& sink : sinks_) {
    if (sink->failing()) return true;
  }
  return false;
}

LogStats AsyncLogConsumer::stats() const {
  LogStats s;
  {
    absl::MutexLock lock(&mu_);
    s.queue_requests = queue_.size();
    s.queue_bytes = queue_bytes_;
    s.items_handed = counts_.handed;
    s.requests_enqueued = counts_.requests_enqueued;
    s.items_enqueued = counts_.enqueued;
    s.items_stored = counts_.stored;
    s.items_dropped_queue_full = counts_.dropped_queue_full;
    s.items_dropped_store_error = counts_.dropped_store_error;
    s.items_dropped_shutdown = counts_.dropped_shutdown;
    s.items_unknown = counts_.unknown;
    s.items_in_flight = counts_.queued + counts_.writing;
  }
  s.bytes_stored = bytes_stored_.load(std::memory_order_relaxed);
  s.format_cpu_ns = format_cpu_ns_.load(std::memory_order_relaxed);
  s.store_cpu_ns = store_cpu_ns_.load(std::memory_order_relaxed);
  s.cpu_sampled_requests = cpu_sampled_requests_.load(std::memory_order_relaxed);
  s.store_up = true;
  for (const auto& sink : sinks_) {
    s.reconnects += sink->reconnects();
    s.store_up = s.store_up && sink->up();
  }
  return s;
}

}  // namespace rankwire::logstore
