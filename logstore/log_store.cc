#include "logstore/log_store.h"

#include <memory>
#include <utility>

#include "logstore/async_log_consumer.h"
#include "logstore/memory_log_store.h"
#include "logstore/redis_log_reader.h"
#include "logstore/redis_log_sink.h"

namespace rankwire::logstore {

absl::StatusOr<LogStore> OpenLogStore(const LogStoreConfig& config) {
  switch (config.backend) {
    case LogStoreConfig::Backend::kMemory:
      return OpenMemoryLogStore(config, std::make_shared<MemoryLogTable>());
    case LogStoreConfig::Backend::kRedis: {
      // Both are checked before the writer thread starts, so a bad config
      // fails here and not in a background log line.
      absl::StatusOr<std::unique_ptr<RedisLogReader>> reader = RedisLogReader::Create(config);
      if (!reader.ok()) return reader.status();
      absl::StatusOr<std::unique_ptr<RedisLogSink>> sink = RedisLogSink::Create(config);
      if (!sink.ok()) return sink.status();
      absl::StatusOr<std::unique_ptr<AsyncLogConsumer>> consumer =
          AsyncLogConsumer::Create(config, *std::move(sink));
      if (!consumer.ok()) return consumer.status();
      LogStore store;
      store.consumer = *std::move(consumer);
      store.reader = *std::move(reader);
      return store;
    }
  }
  return absl::InvalidArgumentError("unknown log store backend");
}

absl::StatusOr<std::unique_ptr<LogReader>> OpenRedisLogReader(
    const LogStoreConfig& config) {
  absl::StatusOr<std::unique_ptr<RedisLogReader>> reader = RedisLogReader::Create(config);
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<LogReader>(*std::move(reader));
}

}  // namespace rankwire::logstore
