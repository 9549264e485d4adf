#include "logstore/log_store.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "base/thread_sched.h"
#include "logstore/async_log_consumer.h"
#include "logstore/memory_log_store.h"
#include "logstore/redis_cluster_log_store.h"
#include "logstore/redis_log_reader.h"
#include "logstore/redis_log_sink.h"

namespace rankwire::logstore {

size_t DefaultLogWriters() {
  return std::clamp<size_t>(static_cast<size_t>(UsableCpus()) / 2, 1, 8);
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
  ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, Reader::Create(config));
  std::vector<std::unique_ptr<LogSink>> sinks;
  for (size_t i = 0; i < WriterCount(config) && i <= AsyncLogConsumer::kMaxWriters; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<Sink> sink, Sink::Create(config));
    sinks.push_back(std::move(sink));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<AsyncLogConsumer> consumer,
                   AsyncLogConsumer::Create(config, std::move(sinks)));
  LogStore store;
  store.consumer = std::move(consumer);
  store.reader = std::move(reader);
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
    ASSIGN_OR_RETURN(std::unique_ptr<RedisClusterReader> reader,
                     RedisClusterReader::Create(config));
    return std::unique_ptr<LogReader>(std::move(reader));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RedisLogReader> reader, RedisLogReader::Create(config));
  return std::unique_ptr<LogReader>(std::move(reader));
}

}  // namespace rankwire::logstore
