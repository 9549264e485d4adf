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
      // The pointer's own bytes precede the block: its size is meant.
      // NOLINTNEXTLINE(bugprone-sizeof-expression)
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
  // NOLINTNEXTLINE(bugprone-sizeof-expression): the pointer's bytes, on purpose.
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

std::optional<double> MetricRef::AsDouble() const {
  switch (type_) {
    case MetricType::kInt:
      return static_cast<double>(i_);
    case MetricType::kFloat:
    case MetricType::kDouble:
      return d_;
    case MetricType::kString:
      return std::nullopt;
  }
  return std::nullopt;
}

MetricRef MetricRef::Of(const MetricValue& v) {
  switch (v.type()) {
    case MetricType::kInt:
      return Int(v.int_value());
    case MetricType::kFloat:
      return Float(v.float_value());
    case MetricType::kDouble:
      return Double(v.double_value());
    case MetricType::kString:
      break;
  }
  return String(v.string_value());
}

MetricValue MetricRef::ToValue() const {
  switch (type_) {
    case MetricType::kInt:
      return MetricValue::Int(i_);
    case MetricType::kFloat:
      return MetricValue::Float(static_cast<float>(d_));
    case MetricType::kDouble:
      return MetricValue::Double(d_);
    case MetricType::kString:
      return MetricValue::String(s_);
  }
  return MetricValue();
}

namespace {

bool SameDouble(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y && std::signbit(x) == std::signbit(y);
}

}  // namespace

bool operator==(const MetricRef& a, const MetricRef& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case MetricType::kInt:
      return a.int_value() == b.int_value();
    case MetricType::kFloat:
    case MetricType::kDouble:
      return SameDouble(a.double_value(), b.double_value());
    case MetricType::kString:
      return a.string_value() == b.string_value();
  }
  return false;
}

std::string MetricRef::DebugString() const {
  switch (type_) {
    case MetricType::kInt:
      return absl::StrCat(i_);
    case MetricType::kFloat:
      return absl::StrCat(float_value(), "f");
    case MetricType::kDouble:
      return absl::StrCat(d_);
    case MetricType::kString:
      return absl::StrCat("\"", s_, "\"");
  }
  return "?";
}

MetricRef Column::at(size_t i) const {
  switch (type_) {
    case MetricType::kInt:
      return MetricRef::Int(ints_[i]);
    case MetricType::kFloat:
      return MetricRef::Float(floats_[i]);
    case MetricType::kDouble:
      return MetricRef::Double(doubles_[i]);
    case MetricType::kString:
      break;
  }
  return MetricRef::String(string_at(i));
}

void Column::Resize(size_t items) {
  if (items <= slots_) return;
  // Grown geometrically: cells set item by item while items are added
  // would otherwise resize on every item.
  const size_t slots = std::max(items, 2 * slots_);
  present_.resize((slots + 63) / 64, 0);
  // A cleared column keeps its array (and the last result's values in the
  // slots, which no present bit names): only new room is initialized.
  const auto grow = [slots](auto& v) {
    if (v.size() < slots) v.resize(slots);
  };
  switch (type_) {
    case MetricType::kInt:
      grow(ints_);
      break;
    case MetricType::kFloat:
      grow(floats_);
      break;
    case MetricType::kDouble:
      grow(doubles_);
      break;
    case MetricType::kString:
      grow(codes_);
      break;
  }
  slots_ = slots;
}

void Column::MarkAllPresent(size_t items) {
  std::fill(present_.begin(), present_.begin() + static_cast<ptrdiff_t>(items / 64), ~uint64_t{0});
  if (items % 64 != 0) present_[items / 64] |= (uint64_t{1} << (items % 64)) - 1;
  present_count_ = items;
}

void Column::Clear() {
  // The value arrays keep their size: Resize() reuses them, and no present
  // bit names their old values.
  slots_ = 0;
  present_.clear();
  present_count_ = 0;
  entry_bytes_.clear();
  entry_offsets_.clear();
}

uint32_t RankResult::AddKey(std::string name, MetricType type) {
  keys_.push_back(MetricKey{std::move(name), type});
  const size_t k = keys_.size() - 1;
  if (columns_.size() > k) {
    // A cleared result's column, its memory kept.
    columns_[k].Clear();
    columns_[k].type_ = type;
  } else {
    columns_.emplace_back(type);
  }
  return static_cast<uint32_t>(k);
}

std::optional<uint32_t> RankResult::FindKey(absl::string_view name) const {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i].name == name) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

void RankResult::Reserve(size_t items, size_t id_bytes) {
  // The keys' columns too: cells set item by item then never resize.
  for (size_t k = 0; k < keys_.size(); ++k) columns_[k].Resize(items);
  id_ends_.reserve(items);
  scores_.reserve(items);
  positions_.reserve(items);
  id_bytes_.reserve(id_bytes);
}

size_t RankResult::AddItem(absl::string_view id, double score, uint32_t position) {
  id_bytes_.append(id.data(), id.size());
  id_ends_.push_back(id_bytes_.size());
  scores_.push_back(score);
  positions_.push_back(position);
  return scores_.size() - 1;
}

void RankResult::AddRankedItems(absl::Span<const absl::string_view> ids, const double* scores,
                                const uint32_t* order, size_t count) {
  const size_t first = scores_.size();
  size_t bytes = 0;
  for (size_t r = 0; r < count; ++r) bytes += ids[order[r]].size();
  size_t at = id_bytes_.size();
  id_bytes_.resize(at + bytes);
  id_ends_.resize(first + count);
  scores_.resize(first + count);
  positions_.resize(first + count);
  for (size_t r = 0; r < count; ++r) {
    const uint32_t c = order[r];
    const absl::string_view id = ids[c];
    if (!id.empty()) std::memcpy(&id_bytes_[at], id.data(), id.size());
    at += id.size();
    id_ends_[first + r] = at;
    scores_[first + r] = scores[c];
    positions_[first + r] = static_cast<uint32_t>(r + 1);
  }
}

void RankResult::SetLog(size_t i, absl::string_view log) {
  if (log_spans_.size() < size()) log_spans_.resize(size());
  log_spans_[i] = LogSpan{log_bytes_.size(), static_cast<uint32_t>(log.size())};
  log_bytes_.append(log.data(), log.size());
  has_logs_ = has_logs_ || !log.empty();
}

void RankResult::ReserveStringBytes(uint32_t key, size_t entries, size_t bytes) {
  Column& c = columns_[key];
  c.entry_bytes_.reserve(c.entry_bytes_.size() + bytes);
  c.entry_offsets_.reserve(std::max<size_t>(c.entry_offsets_.size(), 1) + entries);
}

uint32_t RankResult::AddStringEntry(uint32_t key, absl::string_view v) {
  Column& c = columns_[key];
  if (c.entry_offsets_.empty()) c.entry_offsets_.push_back(0);
  c.entry_bytes_.append(v.data(), v.size());
  c.entry_offsets_.push_back(c.entry_bytes_.size());
  return static_cast<uint32_t>(c.entry_offsets_.size() - 2);
}

uint32_t RankResult::AddStringEntries(uint32_t key, absl::Span<const absl::string_view> v) {
  Column& c = columns_[key];
  if (c.entry_offsets_.empty()) c.entry_offsets_.push_back(0);
  const size_t first = c.entry_offsets_.size() - 1;
  size_t at = c.entry_bytes_.size();
  size_t bytes = 0;
  for (absl::string_view s : v) bytes += s.size();
  c.entry_bytes_.resize(at + bytes);
  c.entry_offsets_.resize(first + 1 + v.size());
  for (size_t j = 0; j < v.size(); ++j) {
    if (!v[j].empty()) std::memcpy(&c.entry_bytes_[at], v[j].data(), v[j].size());
    at += v[j].size();
    c.entry_offsets_[first + 1 + j] = at;
  }
  return static_cast<uint32_t>(first);
}

absl::Status RankResult::Set(size_t item, uint32_t key, const MetricRef& v) {
  if (item >= size() || key >= keys_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("cell (item ", item, ", key ", key,
                                                   ") out of range (", size(), " items, ",
                                                   keys_.size(), " keys)"));
  }
  if (v.type() != keys_[key].type) {
    return absl::InvalidArgumentError(
        absl::StrCat("item ", item, " (", id(item), "): metric \"", keys_[key].name, "\" is ",
                     MetricTypeName(v.type()), ", its key says ", MetricTypeName(keys_[key].type)));
  }
  switch (v.type()) {
    case MetricType::kInt:
      SetInt(item, key, v.int_value());
      break;
    case MetricType::kFloat:
      SetFloat(item, key, v.float_value());
      break;
    case MetricType::kDouble:
      SetDouble(item, key, v.double_value());
      break;
    case MetricType::kString:
      SetString(item, key, v.string_value());
      break;
  }
  return absl::OkStatus();
}

std::optional<MetricRef> RankResult::Get(size_t item, uint32_t key) const {
  // keys_, not columns_: columns past the key table are a cleared result's,
  // kept for their memory, and still hold its values.
  if (key >= keys_.size() || !columns_[key].present(item)) return std::nullopt;
  return columns_[key].at(item);
}

std::optional<MetricRef> RankResult::FindMetric(size_t item, absl::string_view name) const {
  std::optional<uint32_t> key = FindKey(name);
  if (!key || item >= size()) return std::nullopt;
  return Get(item, *key);
}

namespace {

// Zeroes the slots of `values` (the first `items`) whose bit in `present`
// is not set: all of them for a column with no value yet.
template <typename T>
void ZeroAbsent(const std::vector<uint64_t>& present, size_t present_count, size_t items,
                T* values) {
  if (present_count == 0) {
    std::fill(values, values + items, T{});
    return;
  }
  for (size_t i = 0; i < items; ++i) {
    if (((present[i >> 6] >> (i & 63)) & 1) == 0) values[i] = T{};
  }
}

}  // namespace

Column& RankResult::WholeColumn(uint32_t key, bool zero) {
  Column& c = columns_[key];
  c.Resize(size());
  if (zero && c.present_count_ < size()) {
    switch (c.type_) {
      case MetricType::kInt:
        ZeroAbsent(c.present_, c.present_count_, size(), c.ints_.data());
        break;
      case MetricType::kFloat:
        ZeroAbsent(c.present_, c.present_count_, size(), c.floats_.data());
        break;
      case MetricType::kDouble:
        ZeroAbsent(c.present_, c.present_count_, size(), c.doubles_.data());
        break;
      case MetricType::kString:
        ZeroAbsent(c.present_, c.present_count_, size(), c.codes_.data());
        break;
    }
  }
  c.MarkAllPresent(size());
  return c;
}

int64_t* RankResult::MutableInts(uint32_t key) { return WholeColumn(key, true).ints_.data(); }
float* RankResult::MutableFloats(uint32_t key) { return WholeColumn(key, true).floats_.data(); }
double* RankResult::MutableDoubles(uint32_t key) { return WholeColumn(key, true).doubles_.data(); }
uint32_t* RankResult::MutableCodes(uint32_t key) { return WholeColumn(key, true).codes_.data(); }
int64_t* RankResult::OverwriteInts(uint32_t key) { return WholeColumn(key, false).ints_.data(); }
float* RankResult::OverwriteFloats(uint32_t key) { return WholeColumn(key, false).floats_.data(); }
double* RankResult::OverwriteDoubles(uint32_t key) {
  return WholeColumn(key, false).doubles_.data();
}
uint32_t* RankResult::OverwriteCodes(uint32_t key) { return WholeColumn(key, false).codes_.data(); }

namespace {

// A key that `metrics` holds twice, if any: pairwise for a few metrics,
// sorted for many (pairwise, an item of 65536 metrics took seconds).
std::optional<uint32_t> RepeatedKey(const std::vector<MetricEntry>& metrics) {
  constexpr size_t kPairwiseMax = 32;
  if (metrics.size() <= kPairwiseMax) {
    for (size_t a = 0; a < metrics.size(); ++a) {
      for (size_t b = 0; b < a; ++b) {
        if (metrics[a].key == metrics[b].key) return metrics[a].key;
      }
    }
    return std::nullopt;
  }
  std::vector<uint32_t> keys(metrics.size());
  for (size_t m = 0; m < metrics.size(); ++m) keys[m] = metrics[m].key;
  std::sort(keys.begin(), keys.end());
  auto twice = std::adjacent_find(keys.begin(), keys.end());
  if (twice == keys.end()) return std::nullopt;
  return *twice;
}

}  // namespace

absl::Status RankResult::AppendItem(const RankedItem& item) {
  for (const MetricEntry& e : item.metrics) {
    if (e.key >= keys_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("item ", size(), " (", item.item_id,
                                                     "): metric key index ", e.key,
                                                     " out of range (", keys_.size(), " keys)"));
    }
    if (e.value.type() != keys_[e.key].type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "item ", size(), " (", item.item_id, "): metric \"", keys_[e.key].name, "\" is ",
          MetricTypeName(e.value.type()), ", its key says ", MetricTypeName(keys_[e.key].type)));
    }
  }
  if (std::optional<uint32_t> twice = RepeatedKey(item.metrics)) {
    return absl::InvalidArgumentError(absl::StrCat("item ", size(), " (", item.item_id,
                                                   "): metric \"", keys_[*twice].name,
                                                   "\" appears twice"));
  }
  const size_t i = AddItem(item.item_id, item.score, item.position);
  for (const MetricEntry& e : item.metrics) {
    (void)Set(i, e.key, MetricRef::Of(e.value));
  }
  if (!item.log.empty()) SetLog(i, item.log);
  return absl::OkStatus();
}

RankedItem RankResult::Item(size_t i) const {
  RankedItem item;
  item.item_id = std::string(id(i));
  item.score = score(i);
  item.position = position(i);
  for (uint32_t k = 0; k < columns_.size() && k < keys_.size(); ++k) {
    if (columns_[k].present(i)) item.metrics.push_back(MetricEntry{k, columns_[k].at(i).ToValue()});
  }
  item.log = std::string(log(i));
  return item;
}

void RankResult::Clear() {
  keys_.clear();
  ClearItems();
}

void RankResult::ClearItems() {
  // Columns stay, cleared when their index is reused.
  id_bytes_.clear();
  id_ends_.clear();
  scores_.clear();
  positions_.clear();
  log_bytes_.clear();
  log_spans_.clear();
  has_logs_ = false;
}

void RankResult::ResetKeys(absl::Span<const MetricKey> keys) {
  ClearItems();
  // The names are assigned into the strings already there (no allocation
  // when they fit).
  keys_.resize(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    keys_[k].name.assign(keys[k].name);
    keys_[k].type = keys[k].type;
    if (columns_.size() <= k) {
      columns_.emplace_back(keys[k].type);
    } else {
      columns_[k].Clear();
      columns_[k].type_ = keys[k].type;
    }
  }
}

absl::Status ValidateResult(const RankResult& result) {
  absl::flat_hash_set<absl::string_view> names;
  names.reserve(result.key_count());
  for (uint32_t k = 0; k < result.key_count(); ++k) {
    const MetricKey& key = result.key(k);
    if (!names.insert(key.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric key \"", key.name, "\" appears twice"));
    }
    if (!MetricTypeFromNumber(static_cast<int>(key.type))) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric key \"", key.name, "\" has no valid type"));
    }
    const Column& c = result.column(k);
    if (key.type != MetricType::kString) continue;
    for (size_t i = 0; i < result.size(); ++i) {
      if (c.present(i) && c.codes()[i] >= c.entry_count()) {
        return absl::InvalidArgumentError(
            absl::StrCat("item ", i, " (", result.id(i), "): metric \"", key.name,
                         "\" has string code ", c.codes()[i], " of ", c.entry_count(), " entries"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// Item i's metrics by key name, sorted.
using NamedMetrics = std::vector<std::pair<absl::string_view, MetricRef>>;

NamedMetrics Named(const RankResult& r, size_t i) {
  NamedMetrics out;
  for (uint32_t k = 0; k < r.key_count(); ++k) {
    if (r.column(k).present(i)) out.emplace_back(r.key(k).name, r.column(k).at(i));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return out;
}

std::string DiffKeys(const RankResult& a, const RankResult& b) {
  if (a.key_count() != b.key_count()) {
    return absl::StrCat("key count ", a.key_count(), " vs ", b.key_count());
  }
  absl::flat_hash_map<absl::string_view, MetricType> akeys;
  for (const MetricKey& k : a.keys()) akeys[k.name] = k.type;
  for (const MetricKey& k : b.keys()) {
    auto it = akeys.find(k.name);
    if (it == akeys.end()) return absl::StrCat("key \"", k.name, "\" only in b");
    if (it->second != k.type) {
      return absl::StrCat("key \"", k.name, "\" type ", MetricTypeName(it->second), " vs ",
                          MetricTypeName(k.type));
    }
  }
  return "";
}

std::string DiffItem(const RankResult& a, const RankResult& b, size_t i) {
  const std::string where = absl::StrCat("item ", i, ": ");
  if (a.id(i) != b.id(i)) return absl::StrCat(where, "id \"", a.id(i), "\" vs \"", b.id(i), "\"");
  if (!SameDouble(a.score(i), b.score(i))) {
    return absl::StrCat(where, "score ", a.score(i), " vs ", b.score(i));
  }
  if (a.position(i) != b.position(i)) {
    return absl::StrCat(where, "position ", a.position(i), " vs ", b.position(i));
  }
  if (a.log(i) != b.log(i)) {
    return absl::StrCat(where, "log differs (", a.log(i).size(), " vs ", b.log(i).size(),
                        " bytes)");
  }
  NamedMetrics mx = Named(a, i), my = Named(b, i);
  if (mx.size() != my.size()) {
    return absl::StrCat(where, "metric count ", mx.size(), " vs ", my.size());
  }
  for (size_t m = 0; m < mx.size(); ++m) {
    if (mx[m].first != my[m].first) {
      return absl::StrCat(where, "metric \"", mx[m].first, "\" vs \"", my[m].first, "\"");
    }
    if (mx[m].second != my[m].second) {
      return absl::StrCat(where, "metric \"", mx[m].first, "\" ", mx[m].second.DebugString(),
                          " vs ", my[m].second.DebugString());
    }
  }
  return "";
}

}  // namespace

std::string DiffResults(const RankResult& a, const RankResult& b) {
  if (std::string keys = DiffKeys(a, b); !keys.empty()) return keys;
  if (a.size() != b.size()) return absl::StrCat("item count ", a.size(), " vs ", b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::string item = DiffItem(a, b, i); !item.empty()) return item;
  }
  return "";
}

}  // namespace rankwire
