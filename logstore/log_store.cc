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
#include "logstore/format/log_blocks.h"
#include "logstore/format/log_columns.h"
#include "logstore/format/log_record.h"
#include "logstore/format/log_value.h"
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
// An id's first index in the ids asked for.
using Wanted = absl::flat_hash_map<absl::string_view, size_t>;

absl::Status Corrupt(absl::string_view request_id, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("logs of request ", request_id, ": ", what));
}

// What one attempt of FetchBefore found: the lines, or that the request
// was written again between its two reads (then it reads again).
struct Attempt {
  Values lines;
  bool rewritten = false;
};

Wanted WantedIds(absl::Span<const std::string> item_ids) {
  Wanted wanted;
  for (size_t i = item_ids.size(); i-- > 0;) wanted[item_ids[i]] = i;
  return wanted;
}

// An id asked for twice gets its text twice.
void CopyRepeats(absl::Span<const std::string> item_ids, const Wanted& wanted, Values* out) {
  for (size_t i = 0; i < item_ids.size(); ++i) {
    const size_t first = wanted.at(item_ids[i]);
    if (first != i) (*out)[i] = (*out)[first];
  }
}

// Renders into `out` the items of block `b` (`value`) that `wanted` asks
// for. Every id of every block read is checked against the others
// (`seen`): an id twice is damage, whichever ids were asked for.
absl::Status TakeBlock(absl::string_view request_id, const BlockLayout& layout, size_t b,
                       absl::string_view value, const Wanted& wanted,
                       absl::flat_hash_set<std::string>* seen, Values* out) {
  absl::StatusOr<BlockReader> block = BlockReader::Parse(layout, b, value);
  if (!block.ok()) {
    return Corrupt(request_id, absl::StrCat("block ", b, ": ", block.status().message()));
  }
  for (size_t j = 0; j < block->size(); ++j) {
    std::string id = block->id(j);
    auto it = wanted.find(id);
    if (!seen->insert(std::move(id)).second) {
      return Corrupt(request_id, absl::StrCat("an item id of block ", b, " is in a block already"));
    }
    if (it == wanted.end()) continue;
    ASSIGN_OR_RETURN(std::string text, block->Render(j));
    (*out)[it->second] = std::move(text);
  }
  return absl::OkStatus();
}

// Whether `id` is a field name of a layout's own: "#0" .. "#<count - 1>".
// An item may be called that; its HMGET value is then the layout's field.
bool IsOwnField(size_t fields, absl::string_view id) {
  size_t b = 0;
  return absl::ConsumePrefix(&id, "#") && !id.empty() && (id == "0" || id[0] != '0') &&
         absl::SimpleAtoi(id, &b) && b < fields;
}

// A hash holds a layout's fields or items, never both: an id asked for
// with a value of its own beside a layout is damage.
absl::Status CheckNoItemFields(absl::string_view request_id, size_t own_fields,
                               absl::Span<const std::string> item_ids, const Values& got) {
  for (size_t i = 0; i < item_ids.size(); ++i) {
    if (got[2 + i].has_value() && !IsOwnField(own_fields, item_ids[i])) {
      return Corrupt(request_id, absl::StrCat("item '", item_ids[i],
                                              "' has a field of its own beside the layout"));
    }
  }
  return absl::OkStatus();
}

bool Missing(const Wanted& wanted, const Values& out) {
  for (const auto& [id, i] : wanted) {
    if (!out[i].has_value()) return true;
  }
  return false;
}

// Layout version 3 (log_columns.h): "#0" holds the top items; "#1", read
// only for ids not there, holds every item.
absl::StatusOr<Attempt> FetchColumns(LogReader& reader, absl::string_view request_id,
                                     absl::Span<const std::string> item_ids, Values got,
                                     absl::Time deadline) {
  absl::StatusOr<ColumnsLayout> layout = ColumnsLayout::Parse(*got[0]);
  if (!layout.ok()) return Corrupt(request_id, layout.status().message());
  const size_t own_fields = layout->items == 0 ? 0 : 2;
  RETURN_IF_ERROR(CheckNoItemFields(request_id, own_fields, item_ids, got));
  Attempt attempt;
  attempt.lines.resize(item_ids.size());
  if (layout->items == 0) {
    if (got[1].has_value()) return Corrupt(request_id, "a \"#0\" beside a layout of no items");
    return attempt;
  }
  if (!got[1].has_value()) return Corrupt(request_id, "no \"#0\" beside a layout of items");
  absl::StatusOr<ColumnsReader> top = ColumnsReader::ParseTop(*layout, *got[1]);
  if (!top.ok()) return Corrupt(request_id, top.status().message());
  const Wanted wanted = WantedIds(item_ids);
  Values& out = attempt.lines;
  for (size_t j = 0; j < top->size(); ++j) {
    auto it = wanted.find(top->id(j));
    if (it == wanted.end()) continue;
    ASSIGN_OR_RETURN(out[it->second], top->Render(j));
  }
  // "#1" holds more than "#0" only when the request has more than top_n items.
  if (layout->top_items < layout->items && Missing(wanted, out)) {
    // The three fields in one read, so "#0" and "#1" are of one write.
    const std::vector<std::string> fields = {std::string(kLayoutField), std::string(kTopField),
                                             std::string(kAllField)};
    ASSIGN_OR_RETURN(Values more, reader.ReadFields(request_id, fields, deadline));
    if (more.size() != fields.size()) return absl::InternalError("log store: short read");
    if (more[0] != got[0] || more[1] != got[1]) {
      attempt.rewritten = true;
      return attempt;
    }
    if (!more[2].has_value()) return Corrupt(request_id, "no \"#1\" beside a layout of items");
    absl::StatusOr<ColumnsReader> all = ColumnsReader::ParseAll(*layout, *more[2]);
    if (!all.ok()) return Corrupt(request_id, all.status().message());
    if (absl::Status agree = CheckTopAgrees(*top, *all); !agree.ok()) {
      return Corrupt(request_id, agree.message());
    }
    for (size_t j = 0; j < all->size(); ++j) {
      auto it = wanted.find(all->id(j));
      if (it == wanted.end() || out[it->second].has_value()) continue;
      ASSIGN_OR_RETURN(out[it->second], all->Render(j));
    }
  }
  CopyRepeats(item_ids, wanted, &out);
  return attempt;
}

// Layout version 2 (log_blocks.h), which servers before columns wrote:
// block 0 holds the top items; the other blocks are read only for ids not
// there.
absl::StatusOr<Attempt> FetchBlocks(LogReader& reader, absl::string_view request_id,
                                    absl::Span<const std::string> item_ids, Values got,
                                    absl::Time deadline) {
  const std::string layout_value = *std::move(got[0]);
  absl::StatusOr<BlockLayout> layout = BlockLayout::Parse(layout_value);
  if (!layout.ok()) return Corrupt(request_id, layout.status().message());
  RETURN_IF_ERROR(CheckNoItemFields(request_id, layout->BlockCount(), item_ids, got));
  const Wanted wanted = WantedIds(item_ids);
  Attempt attempt;
  Values& out = attempt.lines;
  out.resize(item_ids.size());
  absl::flat_hash_set<std::string> seen;
  if (got[1].has_value()) {
    RETURN_IF_ERROR(TakeBlock(request_id, *layout, 0, *got[1], wanted, &seen, &out));
  }
  if (layout->BlockCount() > 1 && Missing(wanted, out)) {
    std::vector<std::string> more{std::string(kLayoutField)};
    for (size_t b = 1; b < layout->BlockCount(); ++b) more.push_back(LogBlockField(b));
    ASSIGN_OR_RETURN(Values blocks, reader.ReadFields(request_id, more, deadline));
    if (blocks.size() != more.size()) return absl::InternalError("log store: short read");
    if (blocks[0] != layout_value) {
      attempt.rewritten = true;
      return attempt;
    }
    for (size_t b = 1; b < blocks.size(); ++b) {
      if (!blocks[b].has_value()) continue;
      RETURN_IF_ERROR(TakeBlock(request_id, *layout, b, *blocks[b], wanted, &seen, &out));
    }
  }
  CopyRepeats(item_ids, wanted, &out);
  return attempt;
}

}  // namespace

absl::StatusOr<std::vector<std::optional<std::string>>> LogReader::FetchBefore(
    absl::string_view request_id, absl::Span<const std::string> item_ids, absl::Time deadline) {
  if (item_ids.empty()) return Values();
  // One round trip: the layout, the first block or the top items (a
  // request stored in blocks or columns) and the ids (a request stored per
  // item).
  std::vector<std::string> fields;
  fields.reserve(item_ids.size() + 2);
  fields.emplace_back(kLayoutField);
  fields.emplace_back(kTopField);
  fields.insert(fields.end(), item_ids.begin(), item_ids.end());
  // Twice at most: a request id written again between the two reads of a
  // request stored in blocks or columns is read again from the start.
  for (int attempt = 0; attempt < 2; ++attempt) {
    ASSIGN_OR_RETURN(Values got, ReadFields(request_id, fields, deadline));
    if (got.size() != fields.size()) return absl::InternalError("log store: short read");
    // Field "" is nil (text values, or nothing stored) or a layout of
    // version 1 (per-item records), 2 (blocks) or 3 (columns); anything
    // else is damage, never "no logs".
    absl::StatusOr<Attempt> found;
    if (got[0].has_value() && ColumnsLayout::IsColumns(*got[0])) {
      found = FetchColumns(*this, request_id, item_ids, std::move(got), deadline);
    } else if (got[0].has_value() && BlockLayout::IsBlocks(*got[0])) {
      found = FetchBlocks(*this, request_id, item_ids, std::move(got), deadline);
    } else {
      if (got[0].has_value()) {
        if (absl::Status v1 = LogLayout::Parse(*got[0]).status(); !v1.ok()) {
          return Corrupt(request_id, absl::StrCat("field \"\" is not a layout of version 1, 2 "
                                                  "or 3: ",
                                                  v1.message()));
        }
      }
      Values values(std::make_move_iterator(got.begin() + 2), std::make_move_iterator(got.end()));
      RETURN_IF_ERROR(DecodeLogValues(request_id, got[0], item_ids, &values));
      return values;
    }
    if (!found.ok()) return found.status();
    if (!found->rewritten) return std::move(found->lines);
  }
  return absl::UnavailableError(
      absl::StrCat("logs of request ", request_id, " were rewritten while they were read"));
}

}  // namespace rankwire::logstore
