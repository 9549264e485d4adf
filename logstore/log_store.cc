#include "logstore/log_store.h"

#include <memory>
#include <utility>

#include "base/status_macros.h"
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
      ASSIGN_OR_RETURN(std::unique_ptr<RedisLogReader> reader, RedisLogReader::Create(config));
      ASSIGN_OR_RETURN(std::unique_ptr<RedisLogSink> sink, RedisLogSink::Create(config));
      ASSIGN_OR_RETURN(std::unique_ptr<AsyncLogConsumer> consumer,
          AsyncLogConsumer::Create(config, std::move(sink)));
      LogStore store;
      store.consumer = std::move(consumer);
      store.reader = std::move(reader);
      return store;
    }
  }
  return absl::InvalidArgumentError("unknown log store backend");
}

absl::StatusOr<std::unique_ptr<LogReader>> OpenRedisLogReader(
    const LogStoreConfig& config) {
  ASSIGN_OR_RETURN(std::unique_ptr<RedisLogReader> reader, RedisLogReader::Create(config));
  return std::unique_ptr<LogReader>(std::move(reader));
}

}  // namespace rankwire::logstore
