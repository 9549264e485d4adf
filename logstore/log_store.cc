#include "logstore/log_store.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "base/thread_sched.h"
#include "logstore/async_log_consumer.h"
#include "logstore/log_blocks.h"
#include "logstore/log_record.h"
#include "logstore/log_value.h"
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

absl::StatusOr<std::unique_ptr<LogReader>> OpenRedisLogReader(const LogStoreConfig& config) {
  if (config.backend == LogStoreConfig::Backend::kRedisCluster) {
    ASSIGN_OR_RETURN(std::unique_ptr<RedisClusterReader> reader,
                     RedisClusterReader::Create(config));
    return std::unique_ptr<LogReader>(std::move(reader));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RedisLogReader> reader, RedisLogReader::Create(config));
  return std::unique_ptr<LogReader>(std::move(reader));
}

}  // namespace rankwire::logstore

namespace rankwire::logstore {
namespace {

using Values = std::vector<std::optional<std::string>>;

absl::Status Corrupt(absl::string_view request_id, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("logs of request ", request_id, ": ", what));
}

// Renders into `out` the items of block `b` (`value`) that `item_ids` ask
// for; `wanted` maps an id to its first index in item_ids. An id twice in
// the block, or met again in a later block, is damage.
absl::Status TakeBlock(absl::string_view request_id, const BlockLayout& layout, size_t b,
                       absl::string_view value,
                       const absl::flat_hash_map<absl::string_view, size_t>& wanted, Values* out) {
  absl::StatusOr<BlockReader> block = BlockReader::Parse(layout, b, value);
  if (!block.ok()) {
    return Corrupt(request_id, absl::StrCat("block ", b, ": ", block.status().message()));
  }
  absl::flat_hash_set<std::string> seen;
  seen.reserve(block->size());
  for (size_t j = 0; j < block->size(); ++j) {
    std::string id = block->id(j);
    auto it = wanted.find(id);
    if (!seen.insert(std::move(id)).second) {
      return Corrupt(request_id, absl::StrCat("block ", b, " holds an item id twice"));
    }
    if (it == wanted.end()) continue;
    if ((*out)[it->second].has_value()) {
      return Corrupt(request_id,
                     absl::StrCat("an item id of block ", b, " is in an earlier block"));
    }
    ASSIGN_OR_RETURN(std::string text, block->Render(j));
    (*out)[it->second] = std::move(text);
  }
  return absl::OkStatus();
}

// Whether `id` names a block of `layout` ("#0" .. "#<count - 1>"): an item
// may be called that, and its HMGET value is then the block.
bool IsBlockField(const BlockLayout& layout, absl::string_view id) {
  size_t b = 0;
  return absl::ConsumePrefix(&id, "#") && !id.empty() && (id == "0" || id[0] != '0') &&
         absl::SimpleAtoi(id, &b) && b < layout.BlockCount();
}

}  // namespace

absl::StatusOr<std::vector<std::optional<std::string>>> LogReader::FetchBefore(
    absl::string_view request_id, absl::Span<const std::string> item_ids, absl::Time deadline) {
  if (item_ids.empty()) return Values();
  // One round trip: the layout, the first block (the top_n items of a
  // request stored in blocks) and the ids (a request stored per item).
  std::vector<std::string> fields;
  fields.reserve(item_ids.size() + 2);
  fields.emplace_back(kLayoutField);
  fields.push_back(LogBlockField(0));
  fields.insert(fields.end(), item_ids.begin(), item_ids.end());
  // Twice at most: a request id written again between the two reads of a
  // blocks request (its layout changed) is read again from the start.
  for (int attempt = 0; attempt < 2; ++attempt) {
    ASSIGN_OR_RETURN(Values got, ReadFields(request_id, fields, deadline));
    if (got.size() != fields.size()) return absl::InternalError("log store: short read");
    // Field "" is nil (text values, or nothing stored), a version-1 layout
    // (per-item records) or a version-2 one (blocks); anything else is
    // damage, never "no logs".
    if (!got[0].has_value() || !BlockLayout::IsBlocks(*got[0])) {
      if (got[0].has_value()) {
        if (absl::Status v1 = LogLayout::Parse(*got[0]).status(); !v1.ok()) {
          return Corrupt(request_id, absl::StrCat("field \"\" is not a layout of version 1 or 2: ",
                                                  v1.message()));
        }
      }
      Values values(std::make_move_iterator(got.begin() + 2), std::make_move_iterator(got.end()));
      RETURN_IF_ERROR(DecodeLogValues(request_id, got[0], item_ids, &values));
      return values;
    }
    const std::string layout_value = *std::move(got[0]);
    absl::StatusOr<BlockLayout> layout = BlockLayout::Parse(layout_value);
    if (!layout.ok()) return Corrupt(request_id, layout.status().message());
    // A hash holds blocks or items, never both.
    for (size_t i = 0; i < item_ids.size(); ++i) {
      if (got[2 + i].has_value() && !IsBlockField(*layout, item_ids[i])) {
        return Corrupt(request_id, absl::StrCat("item '", item_ids[i],
                                                "' has a field of its own beside the blocks"));
      }
    }
    absl::flat_hash_map<absl::string_view, size_t> wanted;
    for (size_t i = item_ids.size(); i-- > 0;) wanted[item_ids[i]] = i;
    Values out(item_ids.size());
    if (got[1].has_value()) {
      RETURN_IF_ERROR(TakeBlock(request_id, *layout, 0, *got[1], wanted, &out));
    }
    const auto missing = [&] {
      for (const auto& [id, i] : wanted) {
        if (!out[i].has_value()) return true;
      }
      return false;
    };
    if (layout->BlockCount() > 1 && missing()) {
      std::vector<std::string> more{std::string(kLayoutField)};
      for (size_t b = 1; b < layout->BlockCount(); ++b) more.push_back(LogBlockField(b));
      ASSIGN_OR_RETURN(Values blocks, ReadFields(request_id, more, deadline));
      if (blocks.size() != more.size()) return absl::InternalError("log store: short read");
      if (blocks[0] != layout_value) continue;  // Rewritten meanwhile.
      for (size_t b = 1; b < blocks.size(); ++b) {
        if (!blocks[b].has_value()) continue;
        RETURN_IF_ERROR(TakeBlock(request_id, *layout, b, *blocks[b], wanted, &out));
      }
    }
    // An id asked for twice gets its text twice.
    for (size_t i = 0; i < item_ids.size(); ++i) {
      const size_t first = wanted[item_ids[i]];
      if (first != i) out[i] = out[first];
    }
    return out;
  }
  return absl::UnavailableError(
      absl::StrCat("logs of request ", request_id, " were rewritten while they were read"));
}

}  // namespace rankwire::logstore
