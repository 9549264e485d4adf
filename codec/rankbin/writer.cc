#include "codec/rankbin/writer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "codec/coding.h"
#include "codec/compression.h"
#include "codec/rankbin/format.h"
#include "codec/rankbin/serializers.h"

namespace rankwire::rankbin {
namespace {

constexpr uint8_t kInt = static_cast<uint8_t>(TypeCode::kInt);
constexpr uint8_t kFloat = static_cast<uint8_t>(TypeCode::kFloat);
constexpr uint8_t kDouble = static_cast<uint8_t>(TypeCode::kDouble);
constexpr uint8_t kString = static_cast<uint8_t>(TypeCode::kString);
constexpr uint8_t kStringDict = static_cast<uint8_t>(TypeCode::kStringDict);

uint8_t PlainCode(MetricType type) {
  switch (type) {
    case MetricType::kInt:
      return kInt;
    case MetricType::kFloat:
      return kFloat;
    case MetricType::kDouble:
      return kDouble;
    case MetricType::kString:
      return kString;
  }
  return kString;
}

// Wire order within a shape: fixed-width values first (widest first), so a
// reader finds any of them at a constant offset, then varints, then strings.
int WireRank(MetricType type) {
  switch (type) {
    case MetricType::kDouble:
      return 0;
    case MetricType::kFloat:
      return 1;
    case MetricType::kInt:
      return 2;
    case MetricType::kString:
      return 3;
  }
  return 3;
}

absl::Status Invalid(size_t item, const RankResult& r, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("rankbin: item ", item, " (", r.items[item].item_id, "): ", problem));
}

struct Shape {
  std::vector<uint32_t> item_keys;  // Keys in the items' own order.
  std::vector<uint32_t> wire_keys;  // Keys in wire order.
  std::vector<uint32_t> perm;       // Wire position -> index in item.metrics.
  size_t fixed_bytes = 0;           // Bytes of the fixed-width values.
  // Wire order is doubles, floats, ints, strings: [0, double_end) are
  // doubles, [double_end, float_end) floats, [float_end, int_end) ints and
  // [int_end, size) strings.
  uint32_t double_end = 0;
  uint32_t float_end = 0;
  uint32_t int_end = 0;
};

struct StringKey {
  absl::flat_hash_map<absl::string_view, uint32_t> index;
  std::vector<absl::string_view> entries;
  uint64_t plain_bytes = 0;  // Size of the values written as plain strings.
  uint64_t index_bytes = 0;  // Size of the values written as indexes.
  uint32_t last = UINT32_MAX;  // Index of the previous value.
  bool overflow = false;
  bool use_dict = false;
};

// Dictionaries up to this size are searched linearly.
constexpr size_t kLinearDictMax = 8;

struct SpanHash {
  size_t operator()(absl::Span<const uint32_t> s) const {
    return absl::HashOf(s);
  }
};

// String equality that skips the byte comparison when both views are the
// same bytes: items share one heap block for a repeated long string
// (MetricValue), so that is the common case for a model version or bucket.
inline bool SameString(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() &&
         (a.data() == b.data() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// Scratch for raw blocks that will be compressed; grows, never shrinks.
char* Scratch(size_t n) {
  thread_local std::unique_ptr<char[]> buffer;
  thread_local size_t capacity = 0;
  if (n > capacity) {
    capacity = std::max(n, capacity * 2);
    buffer.reset(new char[capacity]);
  }
  return buffer.get();
}

// Encodes in three passes over the items. Fast mode assumes an item has the
// previous item's keys when it has as many (ranker output almost always
// does) and verifies that in the write pass, which reads every key anyway;
// a wrong guess makes Encode() start over in careful mode, which compares
// every item's keys up front. Errors are only reported from careful mode.
class Encoder {
 public:
  Encoder(const RankResult& result, const WriterOptions& options, bool careful)
      : r_(result), o_(options), careful_(careful) {}

  absl::StatusOr<OwnedBuffer> Encode();
  bool speculation_failed() const { return speculation_failed_; }

 private:
  absl::Status CheckKeys();
  // The one pass before writing, per item: shape, type checks, int sizes,
  // dictionary indexes, log and record sizes.
  absl::Status Analyze();
  // After Analyze's pass: which string keys get a dictionary, and the exact
  // size of the value runs that follows from that.
  void DecideDictionaries();
  absl::Status NewShape(size_t item, uint32_t* id);
  uint32_t DictIndex(StringKey& sk, absl::string_view v);

  void WriteKeys(coding::Writer& w);
  void WriteShapes(coding::Writer& w);
  void WriteItems(coding::Writer& w);
  absl::Status WriteValues(coding::Writer& w);
  absl::Status WriteLogs(coding::Writer& w);
  // False (with error_ set) if a value's type is not its key's.
  bool WriteItemValues(coding::Writer& w, size_t item, size_t* str_cursor);
  bool WrongType(size_t item, uint32_t key, const MetricValue& v);
  absl::Status SpeculationFailed() {
    speculation_failed_ = true;
    return absl::AbortedError("rankbin: fast-mode guess failed");
  }
  absl::Status WrongTypeStatus(size_t item, uint32_t key, const MetricValue& v) const;
  // Writes blocks of `raw_sizes` through `fill(block, dst)`, compressing
  // each when `compress`.
  template <typename Fill>
  absl::Status WriteBlocks(coding::Writer& w, const std::vector<uint64_t>& raw_sizes,
                           bool compress, Fill fill);
  size_t BlockSectionBound(const std::vector<uint64_t>& raw_sizes, bool compress) const;

  // In fast mode: the guess about an item's keys was wrong somewhere.
  bool Misguessed() {
    speculation_failed_ = true;
    return false;
  }

  const RankResult& r_;
  const WriterOptions& o_;
  const bool careful_;
  bool speculation_failed_ = false;
  size_t n_ = 0;
  size_t blocks_ = 0;
  uint32_t block_items_ = 1;

  std::vector<uint8_t> key_code_;  // Final type code per key.
  std::vector<Shape> shapes_;
  std::vector<uint32_t> item_shape_;
  absl::flat_hash_map<std::vector<uint32_t>, uint32_t> shape_index_;
  std::vector<StringKey> strings_;       // Per key; used for string keys.
  std::vector<uint32_t> string_values_;  // Dictionary index of every string value, in write order.

  std::vector<uint64_t> values_size_;    // Per item, without its strings.
  std::vector<uint64_t> values_bound_;   // Per item, strings included either way.
  uint64_t values_total_ = 0;            // Every value run, exact.
  std::vector<uint32_t> values_offset_;  // Per item, in its block; set while writing.
  std::vector<uint64_t> log_block_raw_;
  bool has_logs_ = false;
  uint64_t records_bound_ = 0;
  absl::Status error_;  // Set by the write pass.
};

absl::Status Encoder::CheckKeys() {
  absl::flat_hash_set<absl::string_view> names;
  names.reserve(r_.keys.size());
  key_code_.resize(r_.keys.size());
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    const MetricKey& key = r_.keys[k];
    if (!names.insert(key.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("rankbin: metric key \"", key.name, "\" appears twice"));
    }
    if (!MetricTypeFromNumber(static_cast<int>(key.type))) {
      return absl::InvalidArgumentError(
          absl::StrCat("rankbin: metric key \"", key.name, "\" has no valid type"));
    }
    key_code_[k] = PlainCode(key.type);
  }
  return absl::OkStatus();
}

absl::Status Encoder::NewShape(size_t i, uint32_t* id) {
  const size_t key_count = r_.keys.size();
  std::vector<uint32_t> keys;
  keys.reserve(r_.items[i].metrics.size());
  for (const MetricEntry& e : r_.items[i].metrics) keys.push_back(e.key);
  if (auto it = shape_index_.find(keys); it != shape_index_.end()) {
    *id = it->second;
    return absl::OkStatus();
  }
  // A new shape: check it once, for every item that will share it.
  std::vector<uint8_t> seen(key_count, 0);
  for (uint32_t k : keys) {
    if (k >= key_count) {
      return Invalid(i, r_, absl::StrCat("metric key index ", k, " out of range (", key_count,
                                         " keys)"));
    }
    if (seen[k]) {
      return Invalid(i, r_, absl::StrCat("metric \"", r_.keys[k].name, "\" appears twice"));
    }
    seen[k] = 1;
  }
  if (shapes_.size() >= UINT32_MAX) return Invalid(i, r_, "too many shapes");
  Shape shape;
  shape.item_keys = keys;
  shape.perm.resize(keys.size());
  for (uint32_t j = 0; j < keys.size(); ++j) shape.perm[j] = j;
  std::stable_sort(shape.perm.begin(), shape.perm.end(), [&](uint32_t a, uint32_t b) {
    return WireRank(r_.keys[keys[a]].type) < WireRank(r_.keys[keys[b]].type);
  });
  for (uint32_t j = 0; j < shape.perm.size(); ++j) {
    const uint32_t key = keys[shape.perm[j]];
    shape.wire_keys.push_back(key);
    switch (r_.keys[key].type) {
      case MetricType::kDouble:
        shape.fixed_bytes += 8;
        shape.double_end = shape.float_end = shape.int_end = j + 1;
        break;
      case MetricType::kFloat:
        shape.fixed_bytes += 4;
        shape.float_end = shape.int_end = j + 1;
        break;
      case MetricType::kInt:
        shape.int_end = j + 1;
        break;
      case MetricType::kString:
        break;
    }
  }
  *id = static_cast<uint32_t>(shapes_.size());
  shape_index_.emplace(std::move(keys), *id);
  shapes_.push_back(std::move(shape));
  return absl::OkStatus();
}

uint32_t Encoder::DictIndex(StringKey& sk, absl::string_view v) {
  if (sk.overflow) return UINT32_MAX;
  // Most string metrics repeat the previous item's value (model version,
  // bucket) or come from a handful of values (recall source): compare with
  // the last one, then scan a small dictionary, and hash only beyond that.
  uint32_t index = UINT32_MAX;
  if (sk.last < sk.entries.size() && SameString(sk.entries[sk.last], v)) {
    index = sk.last;
  } else if (sk.entries.size() <= kLinearDictMax) {
    for (uint32_t d = 0; d < sk.entries.size(); ++d) {
      if (SameString(sk.entries[d], v)) {
        index = d;
        break;
      }
    }
  } else if (auto it = sk.index.find(v); it != sk.index.end()) {
    index = it->second;
  }
  if (index == UINT32_MAX) {
    if (sk.entries.size() >= o_.max_dict_entries) {
      sk.overflow = true;
      sk.index.clear();
      sk.entries.clear();
      return UINT32_MAX;
    }
    index = static_cast<uint32_t>(sk.entries.size());
    sk.entries.push_back(v);
    if (sk.entries.size() > kLinearDictMax) {
      if (sk.index.empty()) {
        for (uint32_t d = 0; d < sk.entries.size(); ++d) sk.index.emplace(sk.entries[d], d);
      } else {
        sk.index.emplace(v, index);
      }
    }
  }
  sk.last = index;
  sk.index_bytes += coding::VarintLength(index);
  return index;
}

absl::Status Encoder::Analyze() {
  string_values_.reserve(n_ * 4);
  item_shape_.resize(n_);
  values_size_.resize(n_);
  values_bound_.resize(n_);
  strings_.resize(r_.keys.size());
  log_block_raw_.assign(blocks_, 0);
  for (size_t i = 0; i < n_; ++i) {
    const RankedItem& item = r_.items[i];
    const std::vector<MetricEntry>& m = item.metrics;
    // The item's shape: almost always the previous item's. Careful mode
    // compares every key here; fast mode leaves that to the write pass.
    uint32_t id = i > 0 ? item_shape_[i - 1] : 0;
    bool same = i > 0 && shapes_[id].item_keys.size() == m.size();
    if (same && careful_) {
      const uint32_t* keys = shapes_[id].item_keys.data();
      for (size_t j = 0; j < m.size(); ++j) same &= m[j].key == keys[j];
    }
    if (!same) {
      RETURN_IF_ERROR(NewShape(i, &id));
    }
    item_shape_[i] = id;
    const Shape& shape = shapes_[id];
    // Ints: type and size. Strings: type and dictionary index; their exact
    // size waits for the dictionaries to be decided, so the item also gets
    // a bound that holds either way.
    uint64_t size = shape.fixed_bytes;
    uint64_t string_bound = 0;
    for (uint32_t j = shape.float_end; j < shape.int_end; ++j) {
      const MetricValue& v = m[shape.perm[j]].value;
      if (ABSL_PREDICT_FALSE(v.type() != MetricType::kInt)) {
        if (!careful_) return SpeculationFailed();
        return WrongTypeStatus(i, shape.wire_keys[j], v);
      }
      size += coding::VarintLength(coding::ZigZagEncode64(v.int_value()));
    }
    for (uint32_t j = shape.int_end; j < shape.perm.size(); ++j) {
      const MetricValue& v = m[shape.perm[j]].value;
      if (ABSL_PREDICT_FALSE(v.type() != MetricType::kString)) {
        if (!careful_) return SpeculationFailed();
        return WrongTypeStatus(i, shape.wire_keys[j], v);
      }
      StringKey& sk = strings_[shape.wire_keys[j]];
      absl::string_view text = v.string_value();
      const size_t plain = coding::LengthPrefixedLength(text.size());
      sk.plain_bytes += plain;
      string_bound += std::max<size_t>(plain, coding::kMaxVarint32Length);
      string_values_.push_back(DictIndex(sk, text));
    }
    values_size_[i] = size;
    values_bound_[i] = size + string_bound;
    const size_t block = i / block_items_;
    log_block_raw_[block] += coding::LengthPrefixedLength(item.log.size());
    if (!item.log.empty()) has_logs_ = true;
    records_bound_ += coding::LengthPrefixedLength(item.item_id.size()) + 8 +
                      coding::VarintLength(item.position) + coding::VarintLength(id) +
                      coding::kMaxVarint32Length;
  }
  for (size_t b = 0; b < blocks_; ++b) {
    if (log_block_raw_[b] > UINT32_MAX) {
      return absl::InvalidArgumentError("rankbin: a logs block exceeds 4 GiB");
    }
  }
  DecideDictionaries();
  return absl::OkStatus();
}

void Encoder::DecideDictionaries() {
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    StringKey& sk = strings_[k];
    if (r_.keys[k].type != MetricType::kString || sk.overflow || sk.entries.empty()) continue;
    uint64_t dict_bytes = coding::VarintLength(sk.entries.size());
    for (absl::string_view e : sk.entries) dict_bytes += coding::LengthPrefixedLength(e.size());
    sk.use_dict = dict_bytes + sk.index_bytes < sk.plain_bytes;
    if (sk.use_dict) key_code_[k] = kStringDict;
  }
  // The exact size of every value run together, now that the dictionaries
  // are decided.
  values_total_ = 0;
  for (uint64_t v : values_size_) values_total_ += v;
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    if (r_.keys[k].type != MetricType::kString) continue;
    values_total_ += strings_[k].use_dict ? strings_[k].index_bytes : strings_[k].plain_bytes;
  }
}

size_t Encoder::BlockSectionBound(const std::vector<uint64_t>& raw_sizes, bool compress) const {
  size_t n = coding::VarintLength(raw_sizes.size()) + raw_sizes.size() * kBlockEntryBytes;
  for (uint64_t raw : raw_sizes) {
    n += compress ? std::max<size_t>(raw, compression::ZstdBound(raw)) : raw;
  }
  return n;
}

void Encoder::WriteKeys(coding::Writer& w) {
  w.PutVarint64(r_.keys.size());
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    KeyEntry entry{key_code_[k], r_.keys[k].name, {}};
    if (key_code_[k] == kStringDict) entry.dict = strings_[k].entries;
    Serializer<KeyEntry>::Write(w, entry);
  }
}

void Encoder::WriteShapes(coding::Writer& w) {
  w.PutVarint64(shapes_.size());
  for (const Shape& s : shapes_) IndexSetSerializer::Write(w, s.wire_keys);
}

void Encoder::WriteItems(coding::Writer& w) {
  w.PutVarint64(n_);
  w.PutVarint64(block_items_);
  char* directory = w.Skip(4 * n_);
  const char* records = w.position();
  for (size_t i = 0; i < n_; ++i) {
    coding::EncodeFixed32(directory + 4 * i, static_cast<uint32_t>(w.position() - records));
    const RankedItem& item = r_.items[i];
    Serializer<ItemRecord>::Write(
        w, ItemRecord{item.item_id, item.score, item.position, item_shape_[i], values_offset_[i]});
  }
}

bool Encoder::WriteItemValues(coding::Writer& out, size_t i, size_t* str_cursor) {
  const MetricEntry* m = r_.items[i].metrics.data();
  const Shape& shape = shapes_[item_shape_[i]];
  const uint32_t* perm = shape.perm.data();
  // A local copy whose address never escapes: the compiler keeps its write
  // pointer in a register instead of reloading it after every byte store
  // (char stores may alias anything else).
  coding::Writer w = out;
  // Ints and strings were type-checked by Analyze(); doubles and floats are
  // checked here, in the one pass that reads them. The wire order groups
  // the types, so each loop has a single kind of store.
  // Every key is compared with the shape's here, in the pass that reads
  // the values anyway (fast mode's only check of them).
  const uint32_t* keys = shape.wire_keys.data();
  uint32_t j = 0;
  for (; j < shape.double_end; ++j) {
    const MetricEntry& e = m[perm[j]];
    if (ABSL_PREDICT_FALSE(e.key != keys[j])) return Misguessed();
    if (ABSL_PREDICT_FALSE(e.value.type() != MetricType::kDouble)) return WrongType(i, keys[j], e.value);
    w.PutDouble(e.value.double_value());
  }
  for (; j < shape.float_end; ++j) {
    const MetricEntry& e = m[perm[j]];
    if (ABSL_PREDICT_FALSE(e.key != keys[j])) return Misguessed();
    if (ABSL_PREDICT_FALSE(e.value.type() != MetricType::kFloat)) return WrongType(i, keys[j], e.value);
    w.PutFloat(e.value.float_value());
  }
  for (; j < shape.int_end; ++j) {
    const MetricEntry& e = m[perm[j]];
    if (ABSL_PREDICT_FALSE(e.key != keys[j])) return Misguessed();
    w.PutSignedVarint64(e.value.int_value());
  }
  const uint32_t count = static_cast<uint32_t>(shape.perm.size());
  for (; j < count; ++j) {
    const MetricEntry& e = m[perm[j]];
    if (ABSL_PREDICT_FALSE(e.key != keys[j])) return Misguessed();
    const uint32_t index = string_values_[(*str_cursor)++];
    if (key_code_[keys[j]] == kStringDict) {
      w.PutVarint64(index);
    } else {
      w.PutLengthPrefixed(e.value.string_value());
    }
  }
  out = w;
  return true;
}

absl::Status Encoder::WrongTypeStatus(size_t i, uint32_t key, const MetricValue& v) const {
  return Invalid(i, r_, absl::StrCat("metric \"", r_.keys[key].name, "\" is ",
                                     MetricTypeName(v.type()), ", its key says ",
                                     MetricTypeName(r_.keys[key].type)));
}

bool Encoder::WrongType(size_t i, uint32_t key, const MetricValue& v) {
  if (!careful_) return Misguessed();
  error_ = WrongTypeStatus(i, key, v);
  return false;
}

template <typename Fill>
absl::Status Encoder::WriteBlocks(coding::Writer& w, const std::vector<uint64_t>& raw_bounds,
                                  bool compress, Fill fill) {
  w.PutVarint64(raw_bounds.size());
  char* directory = w.Skip(raw_bounds.size() * kBlockEntryBytes);
  for (size_t b = 0; b < raw_bounds.size(); ++b) {
    BlockEntry entry{static_cast<uint8_t>(BlockCodec::kRaw), 0, 0};
    if (!compress) {
      // Raw blocks go straight into the output; `fill` reports the size.
      coding::Writer bw(w.position(), w.position() + w.remaining());
      if (!fill(b, bw)) return speculation_failed_ ? SpeculationFailed() : error_;
      entry.raw_size = entry.stored_size = static_cast<uint32_t>(bw.written());
      w.Skip(bw.written());
    } else {
      char* scratch = Scratch(raw_bounds[b]);
      coding::Writer bw(scratch, scratch + raw_bounds[b]);
      if (!fill(b, bw)) return speculation_failed_ ? SpeculationFailed() : error_;
      const size_t raw = bw.written();
      entry.raw_size = entry.stored_size = static_cast<uint32_t>(raw);
      absl::StatusOr<size_t> stored =
          raw == 0 ? absl::StatusOr<size_t>(0)
                   : compression::ZstdCompressInto(absl::string_view(scratch, raw), o_.zstd_level,
                                                   w.position(), w.remaining());
      if (!stored.ok()) return stored.status();
      if (raw > 0 && *stored <= static_cast<double>(raw) * (1.0 - o_.min_saving)) {
        entry.codec = static_cast<uint8_t>(BlockCodec::kZstd);
        entry.stored_size = static_cast<uint32_t>(*stored);
        w.Skip(*stored);
      } else {
        w.PutBytes(absl::string_view(scratch, raw));
      }
    }
    coding::Writer dw(directory + b * kBlockEntryBytes, directory + (b + 1) * kBlockEntryBytes);
    Serializer<BlockEntry>::Write(dw, entry);
  }
  return absl::OkStatus();
}

absl::Status Encoder::WriteValues(coding::Writer& w) {
  // Per-block bounds: only compressed blocks need them (for the scratch).
  std::vector<uint64_t> bounds(blocks_, 0);
  for (size_t i = 0; i < n_; ++i) bounds[i / block_items_] += values_bound_[i];
  values_offset_.resize(n_);
  // Items are written in order, so one cursor over the string values works
  // across blocks.
  size_t str_cursor = 0;
  return WriteBlocks(w, bounds, o_.compress_values,
                     [&](size_t block, coding::Writer& bw) {
                       size_t end = std::min(n_, (block + 1) * block_items_);
                       for (size_t i = block * block_items_; i < end; ++i) {
                         if (bw.written() > UINT32_MAX) {
                           error_ = Invalid(i, r_, "values block exceeds 4 GiB");
                           return false;
                         }
                         values_offset_[i] = static_cast<uint32_t>(bw.written());
                         if (!WriteItemValues(bw, i, &str_cursor)) return false;
                       }
                       return true;
                     });
}

absl::Status Encoder::WriteLogs(coding::Writer& w) {
  return WriteBlocks(w, log_block_raw_, o_.compress_logs,
                     [&](size_t block, coding::Writer& bw) {
                       size_t end = std::min(n_, (block + 1) * block_items_);
                       for (size_t i = block * block_items_; i < end; ++i) {
                         bw.PutLengthPrefixed(r_.items[i].log);
                       }
                       return true;
                     });
}

absl::StatusOr<OwnedBuffer> Encoder::Encode() {
  n_ = r_.items.size();
  if (n_ > UINT32_MAX) return absl::InvalidArgumentError("rankbin: too many items");
  block_items_ = std::max<uint32_t>(1, o_.block_items);
  blocks_ = (n_ + block_items_ - 1) / block_items_;
  RETURN_IF_ERROR(CheckKeys());
  RETURN_IF_ERROR(Analyze());

  size_t keys_bytes = coding::VarintLength(r_.keys.size());
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    KeyEntry entry{key_code_[k], r_.keys[k].name, {}};
    if (key_code_[k] == kStringDict) entry.dict = strings_[k].entries;
    keys_bytes += Serializer<KeyEntry>::Size(entry);
  }
  size_t shapes_bytes = coding::VarintLength(shapes_.size());
  for (const Shape& s : shapes_) shapes_bytes += IndexSetSerializer::Size(s.wire_keys);
  // ITEMS: exact but for each record's values offset, bounded at 5 bytes.
  const size_t items_bound = coding::VarintLength(n_) + coding::VarintLength(block_items_) +
                             4 * n_ + records_bound_;
  // VALUES: exact when raw; compressed blocks may take zstd's bound
  // (size + size/256 + 64 per block, summed over blocks).
  const size_t block_directory = coding::VarintLength(blocks_) + blocks_ * kBlockEntryBytes;
  const size_t values_bound =
      block_directory + (o_.compress_values ? values_total_ + (values_total_ >> 8) + 64 * blocks_
                                            : values_total_);
  const size_t logs_bound = has_logs_ ? BlockSectionBound(log_block_raw_, o_.compress_logs) : 0;
  const int sections = has_logs_ ? 5 : 4;
  const size_t capacity = kHeaderSize + sections * kSectionHeaderSize + keys_bytes +
                          shapes_bytes + items_bound + values_bound + logs_bound;
  for (size_t s : {keys_bytes, shapes_bytes, items_bound, values_bound, logs_bound}) {
    if (s > UINT32_MAX) return absl::InvalidArgumentError("rankbin: a section exceeds 4 GiB");
  }

  OwnedBuffer out = OwnedBuffer::Allocate(capacity);
  coding::Writer w(out.data(), out.data() + capacity);
  w.PutBytes(absl::string_view(kMagic, 4));
  w.PutByte(kMajorVersion);
  w.PutByte(kMinorVersion);
  // Section count, so a reader detects a payload cut between sections.
  const uint16_t section_count = static_cast<uint16_t>(sections);
  w.PutByte(static_cast<uint8_t>(section_count & 0xff));
  w.PutByte(static_cast<uint8_t>(section_count >> 8));

  auto section = [&](SectionId id, auto&& body) -> absl::Status {
    w.PutByte(static_cast<uint8_t>(id));
    char* length_at = w.Skip(4);
    char* begin = w.position();
    absl::Status s = body();
    coding::EncodeFixed32(length_at, static_cast<uint32_t>(w.position() - begin));
    return s;
  };
  auto ok = [](auto fn) {
    return [fn]() {
      fn();
      return absl::OkStatus();
    };
  };
  // VALUES before ITEMS: the records hold each item's values offset, which
  // is known once its values are written.
  RETURN_IF_ERROR(section(SectionId::kKeys, ok([&] { WriteKeys(w); })));
  RETURN_IF_ERROR(section(SectionId::kShapes, ok([&] { WriteShapes(w); })));
  RETURN_IF_ERROR(section(SectionId::kValues, [&] { return WriteValues(w); }));
  if (has_logs_) RETURN_IF_ERROR(section(SectionId::kLogs, [&] { return WriteLogs(w); }));
  RETURN_IF_ERROR(section(SectionId::kItems, ok([&] { WriteItems(w); })));
  out.set_size(w.written());
  return out;
}

}  // namespace

absl::StatusOr<OwnedBuffer> WriteRankbin(const RankResult& result,
                                         const WriterOptions& options) {
  Encoder fast(result, options, /*careful=*/false);
  absl::StatusOr<OwnedBuffer> out = fast.Encode();
  if (out.ok() || !fast.speculation_failed()) return out;
  return Encoder(result, options, /*careful=*/true).Encode();
}

}  // namespace rankwire::rankbin
