#include "logstore/log_store.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "logstore/async_log_consumer.h"
#include "logstore/memory_log_store.h"
#include "logstore/redis_cluster_log_store.h"
#include "logstore/redis_log_reader.h"
#include "logstore/redis_log_sink.h"

namespace rankwire::logstore {

size_t DefaultLogWriters() {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<size_t>(cores / 2, 1, 8);
}

size_t WriterCount(const LogStoreConfig& config) {
  return config.writers == 0 ? DefaultLogWriters() : config.writers;
}

namespace {

// A Redis backend: a reader and one sink (so one connection, or one per
// master) per writer. Both are created before the writer threads start, so
// a bad config fails here and not in a background log line.
template <typename Sink, typename Reader>
absl::StatusOr<LogStore> OpenRemoteLogStore(const LogStoreConfig& config) {
  absl::StatusOr<std::unique_ptr<Reader>> reader = Reader::Create(config);
  if (!reader.ok()) return reader.status();
  std::vector<std::unique_ptr<LogSink>> sinks;
  for (size_t i = 0; i < WriterCount(config) && i <= AsyncLogConsumer::kMaxWriters; ++i) {
    absl::StatusOr<std::unique_ptr<Sink>> sink = Sink::Create(config);
    if (!sink.ok()) return sink.status();
    sinks.push_back(*std::move(sink));
  }
  absl::StatusOr<std::unique_ptr<AsyncLogConsumer>> consumer =
      AsyncLogConsumer::Create(config, std::move(sinks));
  if (!consumer.ok()) return consumer.status();
  LogStore store;
  store.consumer = *std::move(consumer);
  store.reader = *std::move(reader);
  return store;
}

}  // namespace

absl::StatusOr<LogStore> OpenLogStore(const LogStoreConfig& config) {
  switch (config.backend) {
    case LogStoreConfig::Backend::kMemory:
      return OpenMemoryLogStore(config, std::make_shared<MemoryLogTable>());
    case LogStoreConfig::Backend::kRedis:
      return OpenRemoteLogStore<RedisLogSink, RedisLogReader>(config);
    case LogStoreConfig::Backend::kRedisCluster:
      return OpenRemoteLogStore<RedisClusterSink, RedisClusterReader>(config);
  }
  return absl::InvalidArgumentError("unknown log store backend");
}

absl::StatusOr<std::unique_ptr<LogReader>> OpenRedisLogReader(
    const LogStoreConfig& config) {
  if (config.backend == LogStoreConfig::Backend::kRedisCluster) {
    absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader =
        RedisClusterReader::Create(config);
    if (!reader.ok()) return reader.status();
    return std::unique_ptr<LogReader>(*std::move(reader));
  }
  absl::StatusOr<std::unique_ptr<RedisLogReader>> reader = RedisLogReader::Create(config);
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<LogReader>(*std::move(reader));
}

}  // namespace rankwire::logstore
