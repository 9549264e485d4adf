#include "codec/rankbin/reader.h"

#include <cstring>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "codec/coding.h"
#include "codec/compression.h"
#include "codec/rankbin/format.h"
#include "codec/rankbin/serializers.h"

namespace rankwire::rankbin {
namespace {

constexpr char kContext[] = "rankbin";
constexpr uint32_t kNone = UINT32_MAX;

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat(kContext, ": ", what));
}

class RankbinView final : public ResultView {
 public:
  RankbinView(SharedBytes bytes, const ReaderOptions& options)
      : bytes_(std::move(bytes)), options_(options) {}

  absl::Status Parse();

  size_t size() const override { return n_; }
  absl::Span<const MetricKey> keys() const override;
  absl::StatusOr<ItemRef> Item(size_t i) const override;
  absl::StatusOr<std::optional<MetricRef>> FindMetric(
      size_t i, absl::string_view name) const override;
  absl::Status ForEachMetric(size_t i, MetricVisitor visit) const override;
  absl::StatusOr<absl::string_view> Log(size_t i) const override;
  absl::StatusOr<RankResult> Materialize() const override;

 private:
  struct Key {
    uint8_t code = 0;
    absl::string_view name;
    uint32_t dict_begin = 0;
    uint32_t dict_size = 0;
    uint32_t model_index = kNone;  // Index in keys(); kNone for unknown types.
  };
  struct Shape {
    uint32_t begin = 0;  // Into shape_keys_ / shape_offset_.
    uint32_t size = 0;
  };
  struct BlockCache {
    absl::once_flag once;
    std::unique_ptr<char[]> data;
    absl::Status status;
  };
  struct Block {
    BlockCodec codec = BlockCodec::kRaw;
    const char* stored = nullptr;
    uint32_t stored_size = 0;
    uint32_t raw_size = 0;
  };
  struct Column {
    bool present = false;
    std::vector<Block> blocks;
    std::unique_ptr<BlockCache[]> cache;
  };

  absl::Status ParseKeys(absl::string_view body, size_t base);
  absl::Status ParseShapes(absl::string_view body, size_t base);
  absl::Status ParseItems(absl::string_view body, size_t base);
  absl::Status ParseColumn(absl::string_view body, size_t base, const char* name,
                           Column* column, uint64_t* decoded_total);
  absl::StatusOr<ItemRecord> Record(size_t i) const;
  absl::StatusOr<absl::string_view> BlockData(const Column& column, size_t block) const;
  // Item i's values, positioned at its first value, and its shape.
  absl::Status ValuesOf(size_t i, const ItemRecord& rec, coding::Reader* out,
                        const Shape** shape) const;
  // Reads one value of key `key` and passes it to `visit` when its type is
  // known; skips it otherwise.
  template <typename Visit>
  bool ReadValue(coding::Reader& r, uint32_t key, Visit&& visit) const;
  absl::Status OutOfRange(size_t i) const {
    return absl::OutOfRangeError(absl::StrCat("item ", i, " out of range (", n_, " items)"));
  }
  size_t Offset(const char* p) const { return static_cast<size_t>(p - bytes_.data()); }

  SharedBytes bytes_;
  ReaderOptions options_;

  std::vector<Key> keys_;
  std::vector<absl::string_view> dict_;
  // Key name -> index, built on the first lookup by name (most readers of
  // a top-N never look a key up by name, and hashing 40 names is a third of
  // Open()). A repeated name is found then, and fails name lookups and
  // Materialize().
  absl::Status Names() const;
  mutable absl::once_flag names_once_;
  mutable absl::flat_hash_map<absl::string_view, uint32_t> by_name_;
  mutable absl::Status names_status_;
  mutable absl::once_flag model_keys_once_;
  mutable std::vector<MetricKey> model_keys_;

  std::vector<uint32_t> shape_keys_;
  // Byte offset of each shape position from the item's first value, when
  // every value before it is fixed-width; kNone otherwise.
  std::vector<uint32_t> shape_offset_;
  // At each shape position, how many consecutive values from there are
  // doubles (or floats) of known keys: read as one bounds-checked run with
  // no per-value dispatch. 0 where no such run starts.
  std::vector<uint32_t> shape_run_;
  std::vector<Shape> shapes_;

  size_t n_ = 0;
  uint32_t block_items_ = 1;
  const char* offsets_ = nullptr;
  const char* records_ = nullptr;
  size_t records_size_ = 0;

  Column values_;
  Column logs_;
};

absl::Status RankbinView::Parse() {
  absl::string_view all = bytes_.view();
  if (all.size() < kHeaderSize) {
    return Corrupt(absl::StrCat("payload of ", all.size(),
                                " bytes is shorter than the 8-byte header"));
  }
  if (std::memcmp(all.data(), kMagic, 4) != 0) {
    return Corrupt("bad magic: not a rankbin payload");
  }
  const uint8_t major = static_cast<uint8_t>(all[4]);
  if (major != kMajorVersion) {
    return absl::UnimplementedError(absl::StrCat(
        kContext, ": format version ", major, ".", static_cast<int>(static_cast<uint8_t>(all[5])),
        " is not supported; this reader reads ", kMajorVersion, ".x"));
  }
  // Minor versions only add what a 1.x reader can skip (sections, trailing
  // fields, type codes); the section count covers the sections it adds too.
  const uint16_t section_count = static_cast<uint16_t>(
      static_cast<uint8_t>(all[6]) | (static_cast<uint8_t>(all[7]) << 8));
  absl::string_view sections[6];
  size_t section_base[6] = {};
  coding::Reader r(all.substr(kHeaderSize), kContext, kHeaderSize);
  for (uint16_t n = 0; n < section_count; ++n) {
    const uint8_t id = r.Byte("section id");
    const uint32_t length = r.Fixed32("section length");
    const size_t base = r.offset();
    absl::string_view body = r.Bytes(length, "section body");
    if (!r.ok()) {
      return Corrupt(absl::StrCat("the header announces ", section_count, " sections; section ",
                                  n + 1, " is cut short (", r.status().message(), ")"));
    }
    if (id >= 1 && id <= 5) {
      if (sections[id].data() != nullptr) {
        return Corrupt(absl::StrCat("section ", static_cast<int>(id), " appears twice"));
      }
      sections[id] = body.data() == nullptr ? absl::string_view("", 0) : body;
      section_base[id] = base;
    }
  }
  if (!r.empty()) {
    return Corrupt(absl::StrCat(r.remaining(), " bytes after the ", section_count,
                                " sections the header announces"));
  }
  constexpr const char* kNames[] = {"", "KEYS", "SHAPES", "ITEMS", "VALUES", "LOGS"};
  for (int id = 1; id <= 4; ++id) {
    if (sections[id].data() == nullptr) {
      return Corrupt(absl::StrCat("missing ", kNames[id], " section"));
    }
  }
  if (absl::Status s = ParseKeys(sections[1], section_base[1]); !s.ok()) return s;
  if (absl::Status s = ParseShapes(sections[2], section_base[2]); !s.ok()) return s;
  if (absl::Status s = ParseItems(sections[3], section_base[3]); !s.ok()) return s;
  uint64_t decoded = 0;
  if (absl::Status s = ParseColumn(sections[4], section_base[4], "VALUES", &values_, &decoded);
      !s.ok()) {
    return s;
  }
  if (sections[5].data() != nullptr) {
    if (absl::Status s = ParseColumn(sections[5], section_base[5], "LOGS", &logs_, &decoded);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status RankbinView::ParseKeys(absl::string_view body, size_t base) {
  coding::Reader r(body, kContext, base);
  const uint64_t count = r.Count(Serializer<KeyEntry>::kMinBytes, "key count");
  if (!r.ok()) return r.status();
  keys_.resize(count);
  uint32_t model_index = 0;
  KeyEntry entry;
  for (uint64_t k = 0; k < count; ++k) {
    Serializer<KeyEntry>::Read(r, &entry, "key entry");
    if (!r.ok()) return r.status();
    if (!IsKnownWireClass(entry.type_code)) {
      return Corrupt(absl::StrCat("key ", k, " (\"", entry.name, "\") has reserved wire class ",
                                  entry.type_code & 7));
    }
    Key& key = keys_[k];
    key.code = entry.type_code;
    key.name = entry.name;
    key.dict_begin = static_cast<uint32_t>(dict_.size());
    key.dict_size = static_cast<uint32_t>(entry.dict.size());
    dict_.insert(dict_.end(), entry.dict.begin(), entry.dict.end());
    if (ModelTypeOf(entry.type_code)) key.model_index = model_index++;
  }
  return absl::OkStatus();
}

absl::Status RankbinView::ParseShapes(absl::string_view body, size_t base) {
  coding::Reader r(body, kContext, base);
  const uint64_t count = r.Count(1, "shape count");
  if (!r.ok()) return r.status();
  shapes_.resize(count);
  // Every shape entry takes at least a byte, so this bounds them.
  shape_keys_.reserve(body.size());
  shape_offset_.reserve(body.size());
  shape_run_.reserve(body.size());
  std::vector<bool> seen(keys_.size(), false);
  std::vector<uint32_t> keys;
  for (uint64_t s = 0; s < count; ++s) {
    IndexSetSerializer::Read(r, static_cast<uint32_t>(keys_.size()), &seen, &keys, "shape keys");
    if (!r.ok()) return r.status();
    shapes_[s].begin = static_cast<uint32_t>(shape_keys_.size());
    shapes_[s].size = static_cast<uint32_t>(keys.size());
    uint32_t offset = 0;
    for (uint32_t key : keys) {
      shape_keys_.push_back(key);
      shape_offset_.push_back(offset);
      size_t fixed = ValueSerializer::FixedSize(keys_[key].code);
      offset = (offset == kNone || fixed == 0) ? kNone : offset + static_cast<uint32_t>(fixed);
    }
    // Runs, computed backwards: a run continues while the code repeats.
    const size_t first = shape_run_.size();
    shape_run_.resize(first + keys.size(), 0);
    for (size_t j = keys.size(); j-- > 0;) {
      const Key& key = keys_[keys[j]];
      const bool fixed = key.model_index != kNone &&
                         (key.code == static_cast<uint8_t>(TypeCode::kDouble) ||
                          key.code == static_cast<uint8_t>(TypeCode::kFloat));
      if (!fixed) continue;
      const bool continues = j + 1 < keys.size() && shape_run_[first + j + 1] > 0 &&
                             keys_[keys[j + 1]].code == key.code;
      shape_run_[first + j] = continues ? shape_run_[first + j + 1] + 1 : 1;
    }
  }
  return absl::OkStatus();
}

absl::Status RankbinView::ParseItems(absl::string_view body, size_t base) {
  coding::Reader r(body, kContext, base);
  n_ = r.Count(kMinItemBytes, "item count");
  block_items_ = r.Varint32("block items");
  if (!r.ok()) return r.status();
  if (block_items_ == 0) return Corrupt("block items is 0");
  absl::string_view offsets = r.Bytes(4 * uint64_t{n_}, "item directory");
  if (!r.ok()) return r.status();
  offsets_ = offsets.data();
  records_ = r.position();
  records_size_ = r.remaining();
  uint32_t previous = 0;
  for (size_t i = 0; i < n_; ++i) {
    uint32_t off = coding::DecodeFixed32(offsets_ + 4 * i);
    if (off < previous || off > records_size_) {
      return Corrupt(absl::StrCat("item directory entry ", i, " (", off,
                                  ") is out of order or past the records (", records_size_,
                                  " bytes)"));
    }
    previous = off;
  }
  return absl::OkStatus();
}

absl::Status RankbinView::ParseColumn(absl::string_view body, size_t base, const char* name,
                                      Column* column, uint64_t* decoded_total) {
  coding::Reader r(body, kContext, base);
  const uint64_t blocks = r.Count(kBlockEntryBytes, "block count");
  if (!r.ok()) return r.status();
  const uint64_t expected = (uint64_t{n_} + block_items_ - 1) / block_items_;
  if (blocks != expected) {
    return Corrupt(absl::StrCat(name, " has ", blocks, " blocks; ", n_, " items in blocks of ",
                                block_items_, " need ", expected));
  }
  column->present = true;
  column->blocks.resize(blocks);
  for (uint64_t b = 0; b < blocks; ++b) {
    BlockEntry e;
    Serializer<BlockEntry>::Read(r, &e, "block entry");
    if (!r.ok()) return r.status();
    Block& block = column->blocks[b];
    block.stored_size = e.stored_size;
    block.raw_size = e.raw_size;
    if (e.codec == static_cast<uint8_t>(BlockCodec::kRaw)) {
      block.codec = BlockCodec::kRaw;
      if (e.raw_size != e.stored_size) {
        return Corrupt(absl::StrCat(name, " block ", b, " is raw but its sizes differ (",
                                    e.stored_size, " stored, ", e.raw_size, " raw)"));
      }
    } else if (e.codec == static_cast<uint8_t>(BlockCodec::kZstd)) {
      block.codec = BlockCodec::kZstd;
      *decoded_total += e.raw_size;
      if (*decoded_total > options_.max_decoded_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            kContext, ": compressed blocks would decode to more than ",
            options_.max_decoded_bytes, " bytes"));
      }
    } else {
      return Corrupt(absl::StrCat(name, " block ", b, " has unknown codec ",
                                  static_cast<int>(e.codec)));
    }
  }
  for (uint64_t b = 0; b < blocks; ++b) {
    Block& block = column->blocks[b];
    block.stored = r.Bytes(block.stored_size, "block data").data();
    if (!r.ok()) return r.status();
  }
  column->cache.reset(new BlockCache[blocks]);
  return absl::OkStatus();
}

absl::Status RankbinView::Names() const {
  absl::call_once(names_once_, [this] {
    by_name_.reserve(keys_.size());
    for (size_t k = 0; k < keys_.size(); ++k) {
      if (keys_[k].model_index == kNone) continue;
      if (!by_name_.emplace(keys_[k].name, static_cast<uint32_t>(k)).second) {
        names_status_ = Corrupt(absl::StrCat("metric key \"", keys_[k].name, "\" appears twice"));
        return;
      }
    }
  });
  return names_status_;
}

absl::Span<const MetricKey> RankbinView::keys() const {
  absl::call_once(model_keys_once_, [this] {
    model_keys_.reserve(keys_.size());
    for (const Key& k : keys_) {
      if (k.model_index == kNone) continue;
      model_keys_.push_back(MetricKey{std::string(k.name), *ModelTypeOf(k.code)});
    }
  });
  return model_keys_;
}

absl::StatusOr<ItemRecord> RankbinView::Record(size_t i) const {
  if (i >= n_) return OutOfRange(i);
  const uint32_t begin = coding::DecodeFixed32(offsets_ + 4 * i);
  const size_t end =
      i + 1 < n_ ? coding::DecodeFixed32(offsets_ + 4 * (i + 1)) : records_size_;
  coding::Reader r(absl::string_view(records_ + begin, end - begin), kContext,
                   Offset(records_ + begin));
  ItemRecord rec;
  Serializer<ItemRecord>::Read(r, &rec);
  if (!r.ok()) return r.status();
  return rec;
}

absl::StatusOr<ItemRef> RankbinView::Item(size_t i) const {
  absl::StatusOr<ItemRecord> rec = Record(i);
  if (!rec.ok()) return rec.status();
  return ItemRef(this, i, rec->id, rec->score, rec->position);
}

absl::StatusOr<absl::string_view> RankbinView::BlockData(const Column& column,
                                                         size_t b) const {
  const Block& block = column.blocks[b];
  if (block.codec == BlockCodec::kRaw) {
    return absl::string_view(block.stored, block.raw_size);
  }
  BlockCache& cache = column.cache[b];
  absl::call_once(cache.once, [&] {
    cache.data.reset(new char[block.raw_size > 0 ? block.raw_size : 1]);
    cache.status = compression::ZstdDecompressExact(
        absl::string_view(block.stored, block.stored_size), cache.data.get(), block.raw_size);
    if (!cache.status.ok()) {
      cache.status = Corrupt(absl::StrCat("block ", b, ": ", cache.status.message()));
      cache.data.reset();
    }
  });
  if (!cache.status.ok()) return cache.status;
  return absl::string_view(cache.data.get(), block.raw_size);
}

absl::Status RankbinView::ValuesOf(size_t i, const ItemRecord& rec, coding::Reader* out,
                                   const Shape** shape) const {
  if (rec.shape >= shapes_.size()) {
    return Corrupt(absl::StrCat("item ", i, " refers to shape ", rec.shape, " of ",
                                shapes_.size()));
  }
  *shape = &shapes_[rec.shape];
  absl::StatusOr<absl::string_view> data = BlockData(values_, i / block_items_);
  if (!data.ok()) return data.status();
  if (rec.values_offset > data->size()) {
    return Corrupt(absl::StrCat("item ", i, " values offset ", rec.values_offset,
                                " is past its block (", data->size(), " bytes)"));
  }
  // Offsets of decompressed blocks are relative to the block.
  *out = coding::Reader(data->substr(rec.values_offset), kContext, rec.values_offset);
  return absl::OkStatus();
}

template <typename Visit>
bool RankbinView::ReadValue(coding::Reader& r, uint32_t key, Visit&& visit) const {
  const Key& k = keys_[key];
  if (k.model_index == kNone) {
    ValueSerializer::Skip(r, k.code);
    return r.ok();
  }
  MetricRef value = MetricRef::Int(0);
  if (!ValueSerializer::Read(r, k.code, dict_.data() + k.dict_begin, k.dict_size, &value)) {
    return false;
  }
  visit(k.model_index, value);
  return true;
}

absl::Status RankbinView::ForEachMetric(size_t i, MetricVisitor visit) const {
  absl::StatusOr<ItemRecord> rec = Record(i);
  if (!rec.ok()) return rec.status();
  coding::Reader r(absl::string_view(), kContext);
  const Shape* shape = nullptr;
  if (absl::Status s = ValuesOf(i, *rec, &r, &shape); !s.ok()) return s;
  const uint32_t* keys = shape_keys_.data() + shape->begin;
  const uint32_t* run = shape_run_.data() + shape->begin;
  for (uint32_t j = 0; j < shape->size;) {
    if (const uint32_t n = run[j]; n > 0) {
      const bool doubles = keys_[keys[j]].code == static_cast<uint8_t>(TypeCode::kDouble);
      const char* p = r.Bytes(uint64_t{n} * (doubles ? 8 : 4), "fixed-width values").data();
      if (!r.ok()) return r.status();
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t model_index = keys_[keys[j + k]].model_index;
        if (doubles) {
          double v;
          std::memcpy(&v, p + 8 * k, 8);
          visit(model_index, MetricRef::Double(v));
        } else {
          float v;
          std::memcpy(&v, p + 4 * k, 4);
          visit(model_index, MetricRef::Float(v));
        }
      }
      j += n;
      continue;
    }
    if (!ReadValue(r, keys[j], visit)) return r.status();
    ++j;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<MetricRef>> RankbinView::FindMetric(
    size_t i, absl::string_view name) const {
  absl::StatusOr<ItemRecord> rec = Record(i);
  if (!rec.ok()) return rec.status();
  if (absl::Status s = Names(); !s.ok()) return s;
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  const uint32_t key = it->second;
  coding::Reader r(absl::string_view(), kContext);
  const Shape* shape = nullptr;
  if (absl::Status s = ValuesOf(i, *rec, &r, &shape); !s.ok()) return s;
  const uint32_t* keys = shape_keys_.data() + shape->begin;
  uint32_t j = 0;
  while (j < shape->size && keys[j] != key) ++j;
  if (j == shape->size) return std::nullopt;
  const uint32_t fixed = shape_offset_[shape->begin + j];
  if (fixed != kNone) {
    r.Skip(fixed, "value");
  } else {
    for (uint32_t p = 0; p < j && r.ok(); ++p) ValueSerializer::Skip(r, keys_[keys[p]].code);
  }
  std::optional<MetricRef> found;
  if (!ReadValue(r, key, [&](uint32_t, const MetricRef& v) { found = v; })) return r.status();
  return found;
}

absl::StatusOr<absl::string_view> RankbinView::Log(size_t i) const {
  if (i >= n_) return OutOfRange(i);
  if (!logs_.present) return absl::string_view();
  absl::StatusOr<absl::string_view> data = BlockData(logs_, i / block_items_);
  if (!data.ok()) return data.status();
  coding::Reader r(*data, kContext);
  for (size_t skip = i % block_items_; skip > 0; --skip) r.LengthPrefixed("log");
  absl::string_view log = r.LengthPrefixed("log");
  if (!r.ok()) return r.status();
  return log;
}

absl::StatusOr<RankResult> RankbinView::Materialize() const {
  if (absl::Status s = Names(); !s.ok()) return s;
  RankResult result;
  absl::Span<const MetricKey> k = keys();
  result.keys.assign(k.begin(), k.end());
  result.items.resize(n_);
  // Each dictionary string becomes one value that every item using it
  // shares (MetricValue heap strings are reference-counted).
  std::vector<MetricValue> dict_values;
  dict_values.reserve(dict_.size());
  for (absl::string_view d : dict_) dict_values.push_back(MetricValue::String(d));
  // Items may share value runs in a hostile payload, so the model can be far
  // larger than the payload: cap it.
  uint64_t materialized = 0;
  auto too_big = [&] {
    return absl::ResourceExhaustedError(absl::StrCat(
        kContext, ": the result would materialize to more than ", options_.max_materialized_bytes,
        " bytes"));
  };
  const size_t blocks = values_.blocks.size();
  for (size_t b = 0; b < blocks; ++b) {
    coding::Reader logs(absl::string_view(), kContext);
    if (logs_.present) {
      absl::StatusOr<absl::string_view> data = BlockData(logs_, b);
      if (!data.ok()) return data.status();
      logs = coding::Reader(*data, kContext);
    }
    const size_t end = std::min(n_, (b + 1) * size_t{block_items_});
    for (size_t i = b * block_items_; i < end; ++i) {
      absl::StatusOr<ItemRecord> rec = Record(i);
      if (!rec.ok()) return rec.status();
      RankedItem& item = result.items[i];
      item.item_id.assign(rec->id.data(), rec->id.size());
      item.score = rec->score;
      item.position = rec->position;
      coding::Reader r(absl::string_view(), kContext);
      const Shape* shape = nullptr;
      if (absl::Status s = ValuesOf(i, *rec, &r, &shape); !s.ok()) return s;
      materialized += rec->id.size() + uint64_t{shape->size} * sizeof(MetricEntry);
      if (materialized > options_.max_materialized_bytes) return too_big();
      // Sized once and filled by index (a push_back per value was 14% of
      // the decode: perf); trimmed below if a key of unknown type was
      // skipped.
      std::vector<MetricEntry>& metrics = item.metrics;
      metrics.resize(shape->size);
      MetricEntry* out = metrics.data();
      const uint32_t* keys = shape_keys_.data() + shape->begin;
      // Decoded straight into the model: runs of doubles or floats in one
      // go, other values with one switch each, no intermediate MetricRef.
      const uint32_t* run = shape_run_.data() + shape->begin;
      for (uint32_t j = 0; j < shape->size && r.ok(); ++j) {
        if (const uint32_t n = run[j]; n > 0) {
          const bool doubles = keys_[keys[j]].code == static_cast<uint8_t>(TypeCode::kDouble);
          const char* p = r.Bytes(uint64_t{n} * (doubles ? 8 : 4), "fixed-width values").data();
          if (!r.ok()) break;
          for (uint32_t k = 0; k < n; ++k) {
            const uint32_t model_index = keys_[keys[j + k]].model_index;
            if (doubles) {
              double v;
              std::memcpy(&v, p + 8 * k, 8);
              *out++ = MetricEntry{model_index, MetricValue::Double(v)};
            } else {
              float v;
              std::memcpy(&v, p + 4 * k, 4);
              *out++ = MetricEntry{model_index, MetricValue::Float(v)};
            }
          }
          j += n - 1;
          continue;
        }
        const Key& key = keys_[keys[j]];
        switch (static_cast<TypeCode>(key.code)) {
          case TypeCode::kDouble:
            *out++ = MetricEntry{key.model_index, MetricValue::Double(r.Double("double value"))};
            break;
          case TypeCode::kFloat:
            *out++ = MetricEntry{key.model_index, MetricValue::Float(r.Float("float value"))};
            break;
          case TypeCode::kInt:
            *out++ = MetricEntry{key.model_index, MetricValue::Int(r.SignedVarint64("int value"))};
            break;
          case TypeCode::kString: {
            absl::string_view text = r.LengthPrefixed("string value");
            materialized += text.size();
            if (materialized > options_.max_materialized_bytes) return too_big();
            *out++ = MetricEntry{key.model_index, MetricValue::String(text)};
            break;
          }
          case TypeCode::kStringDict: {
            const uint64_t index = r.Varint64("dictionary index");
            if (r.ok() && index >= key.dict_size) {
              r.Fail("dictionary index", absl::StrCat("index ", index, " out of range (",
                                                      key.dict_size, " entries)"));
              break;
            }
            if (r.ok()) {
              *out++ = MetricEntry{key.model_index, dict_values[key.dict_begin + index]};
            }
            break;
          }
          default:
            ValueSerializer::Skip(r, key.code);  // A type this reader does not know.
        }
      }
      if (!r.ok()) return r.status();
      metrics.resize(static_cast<size_t>(out - metrics.data()));
      if (logs_.present) {
        absl::string_view log = logs.LengthPrefixed("log");
        if (!logs.ok()) return logs.status();
        materialized += log.size();
        if (materialized > options_.max_materialized_bytes) return too_big();
        item.log.assign(log.data(), log.size());
      }
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ResultView>> OpenRankbin(SharedBytes bytes,
                                                        const ReaderOptions& options) {
  auto view = std::make_unique<RankbinView>(std::move(bytes), options);
  if (absl::Status s = view->Parse(); !s.ok()) return s;
  return std::unique_ptr<ResultView>(std::move(view));
}

}  // namespace rankwire::rankbin
