#include "codec/rank_result.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace rankwire {

absl::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kInt:
      return "int";
    case MetricType::kFloat:
      return "float";
    case MetricType::kDouble:
      return "double";
    case MetricType::kString:
      return "string";
  }
  return "unknown";
}

std::optional<MetricType> MetricTypeFromNumber(int number) {
  if (number < 1 || number > 4) return std::nullopt;
  return static_cast<MetricType>(number);
}

std::optional<double> MetricValue::AsDouble() const {
  switch (type()) {
    case MetricType::kInt:
      return static_cast<double>(int_value());
    case MetricType::kFloat:
      return float_value();
    case MetricType::kDouble:
      return double_value();
    case MetricType::kString:
      return std::nullopt;
  }
  return std::nullopt;
}

void MetricValue::SetString(absl::string_view v) {
  rep_[0] = static_cast<uint8_t>(MetricType::kString);
  if (v.size() <= kInlineMax) {
    std::memset(rep_ + 1, 0, sizeof(rep_) - 1);
    rep_[1] = static_cast<uint8_t>(v.size());
    if (!v.empty()) std::memcpy(rep_ + 2, v.data(), v.size());
    return;
  }
  // Allocated before the value changes, so a throwing new leaves it as it
  // was (it used to claim a heap block it did not have yet).
  SetHeap(PlaceHeapString(new char[sizeof(HeapString) + v.size()], v, 0));
}

MetricValue::HeapString* MetricValue::PlaceHeapString(char* at, absl::string_view v,
                                                      uint64_t flags) {
  HeapString* block = new (at) HeapString;
  block->refs.store(1, std::memory_order_relaxed);
  block->size = v.size() | flags;
  std::memcpy(at + sizeof(HeapString), v.data(), v.size());
  return block;
}

void MetricValue::ReleaseHeap(HeapString* block) {
  if (block->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    const bool in_arena = (block->size & kInArena) != 0;
    char* memory = reinterpret_cast<char*>(block);
    block->~HeapString();
    if (in_arena) {
      ArenaChunk* chunk;
      std::memcpy(&chunk, memory - sizeof(chunk), sizeof(chunk));
      ReleaseChunk(chunk, 1);
    } else {
      delete[] memory;
    }
  }
}

void MetricValue::ReleaseChunk(ArenaChunk* chunk, uint64_t n) {
  if (chunk->live.fetch_sub(n, std::memory_order_acq_rel) == n) {
    chunk->~ArenaChunk();
    delete[] reinterpret_cast<char*>(chunk);
  }
}

namespace {
// What a chunk's live count starts at: more than it can ever hold, so that
// blocks released before the chunk is sealed never take it to 0.
constexpr uint64_t kChunkBias = uint64_t{1} << 62;
}  // namespace

MetricValue StringArena::String(absl::string_view v) {
  using HeapString = MetricValue::HeapString;
  using ArenaChunk = MetricValue::ArenaChunk;
  if (v.size() <= MetricValue::kInlineMax || v.size() > kChunkBytes / 8) {
    return MetricValue::String(v);
  }
  // [chunk pointer][HeapString][bytes], 8-aligned (the chunk's own header
  // takes the first 8 bytes).
  constexpr size_t kHeader = sizeof(ArenaChunk*) + sizeof(HeapString);
  static_assert(sizeof(ArenaChunk) == 8 && kHeader % 8 == 0);
  const size_t need = (kHeader + v.size() + 7) & ~size_t{7};
  if (static_cast<size_t>(end_ - next_) < need) {
    Seal();
    // Chunks start small and double, so a result with a few long strings
    // does not hold a large one.
    const size_t size = std::max(next_chunk_bytes_, sizeof(ArenaChunk) + need);
    next_chunk_bytes_ = std::min(2 * next_chunk_bytes_, kChunkBytes);
    char* memory = new char[size];
    chunk_ = new (memory) ArenaChunk;
    chunk_->live.store(kChunkBias, std::memory_order_relaxed);
    next_ = memory + sizeof(ArenaChunk);
    end_ = memory + size;
  }
  std::memcpy(next_, &chunk_, sizeof(chunk_));
  HeapString* block =
      MetricValue::PlaceHeapString(next_ + sizeof(ArenaChunk*), v, MetricValue::kInArena);
  next_ += need;
  ++placed_;
  MetricValue m;
  m.SetHeap(block);
  return m;
}

void StringArena::Seal() {
  if (chunk_ == nullptr) return;
  MetricValue::ReleaseChunk(chunk_, kChunkBias - placed_);
  chunk_ = nullptr;
  next_ = end_ = nullptr;
  placed_ = 0;
}

bool operator==(const MetricValue& a, const MetricValue& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case MetricType::kInt:
      return a.int_value() == b.int_value();
    case MetricType::kFloat: {
      float x = a.float_value(), y = b.float_value();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return x == y && std::signbit(x) == std::signbit(y);
    }
    case MetricType::kDouble: {
      double x = a.double_value(), y = b.double_value();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return x == y && std::signbit(x) == std::signbit(y);
    }
    case MetricType::kString:
      return a.string_value() == b.string_value();
  }
  return false;
}

std::string MetricValue::DebugString() const {
  switch (type()) {
    case MetricType::kInt:
      return absl::StrCat(int_value());
    case MetricType::kFloat:
      return absl::StrCat(float_value(), "f");
    case MetricType::kDouble:
      return absl::StrCat(double_value());
    case MetricType::kString:
      return absl::StrCat("\"", string_value(), "\"");
  }
  return "?";
}

uint32_t RankResult::AddKey(std::string name, MetricType type) {
  keys.push_back(MetricKey{std::move(name), type});
  return static_cast<uint32_t>(keys.size() - 1);
}

std::optional<uint32_t> RankResult::FindKey(absl::string_view name) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].name == name) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

const MetricValue* RankResult::FindMetric(size_t item,
                                          absl::string_view name) const {
  std::optional<uint32_t> key = FindKey(name);
  if (!key || item >= items.size()) return nullptr;
  for (const MetricEntry& e : items[item].metrics) {
    if (e.key == *key) return &e.value;
  }
  return nullptr;
}

absl::Status ValidateResult(const RankResult& result) {
  absl::flat_hash_set<absl::string_view> names;
  names.reserve(result.keys.size());
  for (const MetricKey& key : result.keys) {
    if (!names.insert(key.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric key \"", key.name, "\" appears twice"));
    }
  }
  std::vector<size_t> seen_in_item(result.keys.size(), SIZE_MAX);
  for (size_t i = 0; i < result.items.size(); ++i) {
    const RankedItem& item = result.items[i];
    for (const MetricEntry& e : item.metrics) {
      if (e.key >= result.keys.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("item ", i, " (", item.item_id, "): metric key index ",
                         e.key, " out of range (", result.keys.size(),
                         " keys)"));
      }
      const MetricKey& key = result.keys[e.key];
      if (e.value.type() != key.type) {
        return absl::InvalidArgumentError(absl::StrCat(
            "item ", i, " (", item.item_id, "): metric \"", key.name,
            "\" is ", MetricTypeName(e.value.type()), ", its key says ",
            MetricTypeName(key.type)));
      }
      if (seen_in_item[e.key] == i) {
        return absl::InvalidArgumentError(
            absl::StrCat("item ", i, " (", item.item_id, "): metric \"",
                         key.name, "\" appears twice"));
      }
      seen_in_item[e.key] = i;
    }
  }
  return absl::OkStatus();
}

namespace {

using NamedMetrics = std::vector<std::pair<absl::string_view, const MetricValue*>>;

NamedMetrics Named(const RankResult& r, const RankedItem& item) {
  NamedMetrics out;
  out.reserve(item.metrics.size());
  for (const MetricEntry& e : item.metrics) {
    absl::string_view name =
        e.key < r.keys.size() ? absl::string_view(r.keys[e.key].name) : "<bad>";
    out.emplace_back(name, &e.value);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  return out;
}

bool SameDouble(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y && std::signbit(x) == std::signbit(y);
}

}  // namespace

std::string DiffResults(const RankResult& a, const RankResult& b) {
  absl::flat_hash_map<absl::string_view, MetricType> akeys;
  for (const MetricKey& k : a.keys) akeys[k.name] = k.type;
  if (a.keys.size() != b.keys.size()) {
    return absl::StrCat("key count ", a.keys.size(), " vs ", b.keys.size());
  }
  for (const MetricKey& k : b.keys) {
    auto it = akeys.find(k.name);
    if (it == akeys.end()) return absl::StrCat("key \"", k.name, "\" only in b");
    if (it->second != k.type) {
      return absl::StrCat("key \"", k.name, "\" type ",
                          MetricTypeName(it->second), " vs ",
                          MetricTypeName(k.type));
    }
  }
  if (a.items.size() != b.items.size()) {
    return absl::StrCat("item count ", a.items.size(), " vs ", b.items.size());
  }
  for (size_t i = 0; i < a.items.size(); ++i) {
    const RankedItem& x = a.items[i];
    const RankedItem& y = b.items[i];
    std::string where = absl::StrCat("item ", i, ": ");
    if (x.item_id != y.item_id) {
      return absl::StrCat(where, "id \"", x.item_id, "\" vs \"", y.item_id,
                          "\"");
    }
    if (!SameDouble(x.score, y.score)) {
      return absl::StrCat(where, "score ", x.score, " vs ", y.score);
    }
    if (x.position != y.position) {
      return absl::StrCat(where, "position ", x.position, " vs ", y.position);
    }
    if (x.log != y.log) {
      return absl::StrCat(where, "log differs (", x.log.size(), " vs ",
                          y.log.size(), " bytes)");
    }
    NamedMetrics mx = Named(a, x), my = Named(b, y);
    if (mx.size() != my.size()) {
      return absl::StrCat(where, "metric count ", mx.size(), " vs ",
                          my.size());
    }
    for (size_t m = 0; m < mx.size(); ++m) {
      if (mx[m].first != my[m].first) {
        return absl::StrCat(where, "metric \"", mx[m].first, "\" vs \"",
                            my[m].first, "\"");
      }
      if (*mx[m].second != *my[m].second) {
        return absl::StrCat(where, "metric \"", mx[m].first, "\" ",
                            mx[m].second->DebugString(), " vs ",
                            my[m].second->DebugString());
      }
    }
  }
  return "";
}

}  // namespace rankwire
