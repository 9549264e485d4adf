#include "codec/rankbin/writer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "codec/coding.h"
#include "codec/compression.h"
#include "codec/rankbin/accepted_names.h"
#include "codec/rankbin/format.h"
#include "codec/rankbin/serializers.h"
#include "codec/rankbin/short_dict.h"

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
  // Bytes of the numbers: doubles and floats exactly, ints at their
  // longest varint (their exact size is found as they are written).
  size_t numbers_bound = 0;
  // Wire order is doubles, floats, ints, strings: [0, double_end) are
  // doubles, [double_end, float_end) floats, [float_end, int_end) ints and
  // [int_end, size) strings.
  uint32_t double_end = 0;
  uint32_t float_end = 0;
  uint32_t int_end = 0;
};

// The shape index keys views of item_keys, so a growing shapes vector must
// move Shapes (keeping their buffers), never copy them.
static_assert(std::is_nothrow_move_constructible_v<Shape>);

struct StringKey {
  std::vector<absl::string_view> entries;  // The dictionary, by index.
  ShortDict short_index;                   // Entries of up to 16 bytes.
  // Entries longer than that: their indexes (searched linearly while few),
  // then a hash map of them.
  std::vector<uint32_t> long_entries;
  absl::flat_hash_map<absl::string_view, uint32_t> long_index;
  uint64_t plain_bytes = 0;  // Size of the values written as plain strings.
  uint64_t index_bytes = 0;  // Size of the values written as indexes.
  uint32_t last = UINT32_MAX;  // Index of the previous long value.
  uint32_t seen = 0;           // Values looked up so far.
  bool overflow = false;       // No dictionary: too many distinct values.
  bool use_dict = false;

  void ClearDict() {
    // Emptied, and given back when an earlier, larger dictionary grew them
    // (long_index.clear() already frees a large table).
    constexpr size_t kKeepEntries = 512;
    if (entries.capacity() > kKeepEntries) std::vector<absl::string_view>().swap(entries);
    if (long_entries.capacity() > kKeepEntries) std::vector<uint32_t>().swap(long_entries);
    entries.clear();
    short_index.Clear();
    long_entries.clear();
    long_index.clear();
    last = UINT32_MAX;
  }
  void Reset() {
    ClearDict();
    plain_bytes = index_bytes = 0;
    seen = 0;
    overflow = use_dict = false;
  }
};

// A key's long dictionary values are searched linearly while at most this many.
constexpr size_t kLinearDictMax = 8;
// A string key's dictionary is kept or dropped after this many values.
constexpr uint32_t kDictSample = 64;
// ... or after its first kDictEarlySample values if every one was new
// (unless the threshold keeps every dictionary: 1 or more). A key that
// distinct is past the threshold at kDictSample too (for values drawn from
// N at random, 16 distinct of 16 is likely only for N in the hundreds,
// where 64 values are ~85 % distinct), and hashing 48 more long values per
// key was ~5 % of a string-heavy encode.
constexpr uint32_t kDictEarlySample = 16;
// A plain string of at least this many bytes counts towards its block's
// "compressible string bytes" (short strings are mostly length prefixes).
constexpr size_t kLongString = 32;
// After this many blocks in a row that did not pay, a column stops trying.
constexpr int kMaxCompressMisses = 4;

// Shapes are compared one by one while a result has at most this many; the
// index is built past that (most results have one shape).
constexpr size_t kLinearShapesMax = 8;
// The index is given up after kShapeIndexSample lookups if fewer than one
// in kShapeIndexMinHits found an earlier shape.
constexpr uint32_t kShapeIndexSample = 64;
constexpr uint32_t kShapeIndexMinHits = 8;

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

// What an Encoder keeps per key, per shape and per item. One per thread,
// reused from call to call: a small result otherwise paid for a dozen
// allocations and a StringKey per key (a hash map each), which were most
// of the encode of a 10-item result. Encoder::Reset() empties it at the
// start of every Encode(), and Trim() gives back what a much larger
// result left behind, so a thread holds memory in proportion to the
// results it encodes now.
struct EncoderScratch {
  std::vector<uint8_t> key_code;  // Final type code per key.
  std::vector<uint8_t> key_rank;  // WireRank of each key's type.
  absl::flat_hash_set<absl::string_view> key_names;  // CheckKeys's.
  AcceptedNames accepted_keys;                       // CheckKeys's.
  std::vector<Shape> shapes;
  // Shapes of earlier calls, kept for their vectors' capacity.
  std::vector<Shape> spare_shapes;
  std::vector<uint32_t> item_shape;
  // Built once a result has more than kLinearShapesMax shapes.
  // Its keys are views of the shapes' own item_keys (a vector's buffer stays
  // put when its Shape is moved).
  absl::flat_hash_map<absl::Span<const uint32_t>, uint32_t> shape_index;
  std::vector<uint32_t> scratch_keys;  // NewShape's.
  std::vector<uint8_t> seen;           // NewShape's, all 0 between calls.
  // Per key; only string keys' entries are used (and reset by Reset()).
  std::vector<StringKey> strings;
  std::vector<uint32_t> string_keys;  // The string keys of the last call.
  std::vector<uint32_t> string_values;  // Dictionary index of every string value, in write order.
  std::vector<uint64_t> values_bound;   // Per item, strings included either way.
  std::vector<uint32_t> values_offset;  // Per item, in its block; set while writing.
  std::vector<uint64_t> value_block_bounds;  // Per VALUES block; WriteValues's.
  std::vector<uint64_t> log_block_raw;
  // Per VALUES block: bytes of long strings of keys without a dictionary.
  std::vector<uint64_t> values_long_strings;
  // Every shape's SHAPES entry, in order, written by WireOrder() while the
  // shape's keys are in cache (WriteShapes() copies them out).
  std::vector<char> shape_entries;
};

// Gives the last call's shapes to the spares, for NewShape to refill (three
// allocations per shape otherwise). A thread keeps at most max(8, items)
// spares, none with vectors far larger than `keys` needs: the spares kept
// from a wide, many-shaped result are freed by the next narrower or
// smaller one (12.9 MB stayed on a thread after a 20,000-key result
// otherwise).
void RecycleShapes(EncoderScratch& s, size_t keys, size_t items) {
  constexpr size_t kKeepKeys = 1 << 12;
  const size_t keep_keys = std::max(kKeepKeys, 4 * keys);
  const size_t keep_spares = std::max<size_t>(8, items);
  const auto too_large = [keep_keys](const Shape& shape) {
    return shape.item_keys.capacity() > keep_keys || shape.perm.capacity() > keep_keys ||
           shape.wire_keys.capacity() > keep_keys;
  };
  s.spare_shapes.erase(std::remove_if(s.spare_shapes.begin(), s.spare_shapes.end(), too_large),
                       s.spare_shapes.end());
  for (Shape& shape : s.shapes) {
    if (s.spare_shapes.size() >= keep_spares) break;
    if (!too_large(shape)) s.spare_shapes.push_back(std::move(shape));
  }
  s.shapes.clear();
  if (s.spare_shapes.size() > keep_spares) s.spare_shapes.resize(keep_spares);
}

EncoderScratch& ThreadEncoderScratch() {
  thread_local EncoderScratch scratch;
  return scratch;
}

// Frees a scratch vector whose capacity is far beyond what this call needs.
template <typename T>
void Trim(std::vector<T>& v, size_t needed) {
  constexpr size_t kKeepAlways = 1 << 14;
  if (v.capacity() > kKeepAlways && v.capacity() / 4 > needed) std::vector<T>().swap(v);
}

// Encodes in three passes over the items. Fast mode assumes an item has the
// previous item's keys when it has as many (ranker output almost always
// does) and verifies that in the write pass, which reads every key anyway;
// a wrong guess makes Encode() start over in careful mode, which compares
// every item's keys up front. Errors are only reported from careful mode.
class Encoder {
 public:
  Encoder(const RankResult& result, const WriterOptions& options, bool careful)
      : r_(result), o_(options), careful_(careful), s_(ThreadEncoderScratch()) {}

  absl::StatusOr<OwnedBuffer> Encode();
  bool speculation_failed() const { return speculation_failed_; }

 private:
  // Empties the thread's scratch for this result (see EncoderScratch).
  void Reset();
  absl::Status CheckKeys();
  // The one pass before writing, per item: shape, string type checks,
  // dictionary indexes, log and record sizes.
  absl::Status Analyze();
  // After Analyze: which string keys get a dictionary (the smaller
  // encoding), and the size of the value runs (exact but for ints).
  void DecideDictionaries();
  // The shape of item `item`: the previous item's, or NewShape's.
  absl::Status ItemShape(size_t item, uint32_t* id);
  absl::Status NewShape(size_t item, uint32_t* id);
  // InvalidArgument if item `item`'s keys repeat one or name none.
  absl::Status CheckShapeKeys(size_t item, absl::Span<const uint32_t> keys);
  // Fills shape's wire order (perm, wire_keys, the type boundaries).
  // Also appends its entry to s_.shape_entries.
  void WireOrder(absl::Span<const uint32_t> keys, Shape* shape);
  // The dictionary index of `v` for its key, or UINT32_MAX when the key
  // has (or now gives up) no dictionary. The common case, a short value
  // already in the dictionary, is inline: as one out-of-line function, its
  // entry and exit (saving and restoring registers for the rare paths) were
  // a quarter of its instructions (callgrind, string-heavy encode).
  inline uint32_t DictIndex(StringKey& sk, absl::string_view v);
  // The rare paths: the sample's verdict, adding a short value, long values.
  ABSL_ATTRIBUTE_NOINLINE bool SampleSaysNoDict(const StringKey& sk) const;
  ABSL_ATTRIBUTE_NOINLINE uint32_t AddShort(StringKey& sk, absl::string_view v,
                                            const ShortString& key, size_t slot);
  ABSL_ATTRIBUTE_NOINLINE uint32_t LongDictIndex(StringKey& sk, absl::string_view v);
  // Appends `v` to the key's entries: its index, or UINT32_MAX (the key
  // given up) past max_dict_entries.
  uint32_t AddEntry(StringKey& sk, absl::string_view v);

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
  // Writes blocks of `raw_sizes` through `fill(block, dst)`, trying to
  // compress the blocks for which `candidate(block)` holds; a block stays
  // compressed only when that saves min_saving, and after
  // kMaxCompressMisses blocks in a row that did not, the column stops
  // trying.
  template <typename Fill>
  absl::Status WriteBlocks(coding::Writer& w, const std::vector<uint64_t>& raw_sizes,
                           absl::FunctionRef<bool(size_t)> candidate, Fill fill);
  // Whether VALUES block b is worth trying to compress: always with
  // compress_values; with compress_string_values, when at least half of
  // its bytes are long plain strings.
  bool ValuesCandidate(size_t b, const std::vector<uint64_t>& bounds) const {
    return o_.compress_values ||
           (o_.compress_string_values && bounds[b] > 0 && 2 * s_.values_long_strings[b] >= bounds[b]);
  }
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

  EncoderScratch& s_;
  // Every value run: strings exact, ints bounded (Shape::numbers_bound).
  uint64_t values_total_ = 0;
  bool has_logs_ = false;
  uint64_t records_bound_ = 0;
  absl::Status error_;  // Set by the write pass.
  // The shape index's record (NewShape): lookups, lookups that found an
  // earlier shape, and whether it was given up.
  uint32_t shape_lookups_ = 0;
  uint32_t shape_hits_ = 0;
  bool shape_index_off_ = false;
};

void Encoder::Reset() {
  const size_t keys = r_.keys.size();
  // The previous call's string keys that are not string keys now give
  // back their dictionaries (no Reset() below would reach them). Only
  // those are visited: a thread that once encoded a 200-key result keeps
  // 200 StringKeys, and walking them all cost a 39-key, 10-item encode
  // ~15 %.
  for (uint32_t k : s_.string_keys) {
    if (k >= keys || r_.keys[k].type != MetricType::kString) s_.strings[k] = StringKey();
  }
  Trim(s_.key_code, keys);
  Trim(s_.key_rank, keys);
  Trim(s_.seen, keys);
  Trim(s_.strings, keys);
  Trim(s_.string_keys, keys);
  Trim(s_.scratch_keys, keys);
  Trim(s_.shapes, n_);
  Trim(s_.spare_shapes, n_);
  Trim(s_.item_shape, n_);
  Trim(s_.values_bound, n_);
  Trim(s_.values_offset, n_);
  Trim(s_.value_block_bounds, blocks_);
  Trim(s_.log_block_raw, blocks_);
  Trim(s_.values_long_strings, blocks_);
  // All 0, as NewShape expects, even if an earlier call left early
  // between setting and clearing a byte (an exception out of StrCat).
  s_.seen.assign(keys, 0);
  s_.key_code.clear();
  s_.key_rank.clear();
  s_.key_names.clear();
  s_.shape_index.clear();
  RecycleShapes(s_, keys, n_);
  s_.string_values.clear();
  s_.string_keys.clear();
  Trim(s_.shape_entries, keys * n_);
  s_.shape_entries.clear();
  if (s_.strings.size() < keys) s_.strings.resize(keys);
  for (size_t k = 0; k < keys; ++k) {
    if (r_.keys[k].type == MetricType::kString) {
      s_.strings[k].Reset();
      s_.string_keys.push_back(static_cast<uint32_t>(k));
    }
  }
  // Analyze reserves one dictionary index per string key per item.
  Trim(s_.string_values, n_ * s_.string_keys.size());
}

absl::Status Encoder::CheckKeys() {
  const auto key_at = [this](size_t k) {
    return AcceptedNames::Entry{r_.keys[k].name, static_cast<uint8_t>(r_.keys[k].type)};
  };
  // Unique names and valid types; skipped for the very table that passed
  // last on this thread.
  if (!s_.accepted_keys.Matches(r_.keys.size(), key_at)) {
    s_.accepted_keys.Forget();
    absl::flat_hash_set<absl::string_view>& names = s_.key_names;
    names.reserve(r_.keys.size());
    for (const MetricKey& key : r_.keys) {
      if (!names.insert(key.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("rankbin: metric key \"", key.name, "\" appears twice"));
      }
      if (!MetricTypeFromNumber(static_cast<int>(key.type))) {
        return absl::InvalidArgumentError(
            absl::StrCat("rankbin: metric key \"", key.name, "\" has no valid type"));
      }
    }
    s_.accepted_keys.Remember(r_.keys.size(), key_at);
  }
  s_.key_code.resize(r_.keys.size());
  s_.key_rank.resize(r_.keys.size());
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    s_.key_code[k] = PlainCode(r_.keys[k].type);
    s_.key_rank[k] = static_cast<uint8_t>(WireRank(r_.keys[k].type));
  }
  return absl::OkStatus();
}

absl::Status Encoder::CheckShapeKeys(size_t i, absl::Span<const uint32_t> keys) {
  const size_t key_count = r_.keys.size();
  // Keys in increasing order (a ranker's schema order; sparse features
  // listed by index) are distinct and, if the last is, in range: one
  // compare per key, with no table to set and clear.
  const uint32_t* key = keys.data();
  uint32_t descents = 0;  // A count, not a flag, so the loop vectorizes.
  for (size_t j = 1; j < keys.size(); ++j) descents += key[j - 1] >= key[j];
  if (descents == 0 && (keys.empty() || keys.back() < key_count)) return absl::OkStatus();
  // Otherwise a table of the keys seen (s_.seen has a 0 per key: Reset()).
  absl::Status bad;
  for (uint32_t k : keys) {
    if (k >= key_count) {
      bad = Invalid(i, r_, absl::StrCat("metric key index ", k, " out of range (", key_count,
                                        " keys)"));
      break;
    }
    if (s_.seen[k]) {
      bad = Invalid(i, r_, absl::StrCat("metric \"", r_.keys[k].name, "\" appears twice"));
      break;
    }
    s_.seen[k] = 1;
  }
  for (uint32_t k : keys) {
    if (k < key_count) s_.seen[k] = 0;
  }
  return bad;
}

void Encoder::WireOrder(absl::Span<const uint32_t> keys, Shape* shape) {
  // Wire order by a counting sort on the wire rank: stable, and with no
  // branch on each key's type (items that each carry different keys of
  // mixed types mispredicted one per key per rank: a third of their encode).
  const uint8_t* rank = s_.key_rank.data();
  const uint32_t* key = keys.data();
  const uint32_t n = static_cast<uint32_t>(keys.size());
  shape->perm.resize(n);
  shape->wire_keys.resize(n);
  uint32_t* perm = shape->perm.data();
  uint32_t* wire = shape->wire_keys.data();
  // One pass counts the keys of each rank, as 16-bit fields of one
  // register (used below while n < 2^16), and sizes the shape's SHAPES
  // entry while its keys are in cache (Encode() read every shape's keys
  // again for that). Counters in memory made each key wait for the
  // previous key's store of the same counter (a store-to-load chain per
  // key: ~40 % of encoding 500 items that each have their own 100 of 200
  // keys).
  uint64_t packed = 0;
  uint64_t wire_bytes = coding::VarintLength(n) + n;
  // Every key is below the key count (CheckShapeKeys), which bounds the
  // width of its varint: the loop tests only the widths that can occur.
  const auto count = [&](auto extra_bytes) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t k = key[j];
      packed += uint64_t{1} << (16 * rank[k]);
      wire_bytes += extra_bytes(k);
    }
  };
  const size_t key_count = r_.keys.size();
  if (key_count <= (1u << 7)) {
    count([](uint32_t) { return 0u; });
  } else if (key_count <= (1u << 14)) {
    count([](uint32_t k) { return static_cast<uint32_t>(k >= (1u << 7)); });
  } else {
    count([](uint32_t k) {
      return static_cast<uint32_t>((k >= (1u << 7)) + (k >= (1u << 14)) + (k >= (1u << 21)) +
                                   (k >= (1u << 28)));
    });
  }
  uint32_t start[5] = {};
  if (n < (1u << 16)) {
    // The cursors too are 16-bit fields of one register.
    uint64_t cursors = 0;
    for (int r = 0, sum = 0; r < 4; ++r) {
      start[r] = static_cast<uint32_t>(sum);
      cursors |= uint64_t(sum) << (16 * r);
      sum += static_cast<int>((packed >> (16 * r)) & 0xffff);
    }
    for (uint32_t j = 0; j < n; ++j) {
      const unsigned shift = 16 * rank[key[j]];
      const uint32_t at = static_cast<uint32_t>((cursors >> shift) & 0xffff);
      cursors += uint64_t{1} << shift;
      perm[at] = j;
      wire[at] = key[j];
    }
    start[4] = n;
  } else {
    for (uint32_t k : keys) ++start[rank[k] + 1];
    for (int r = 0; r < 4; ++r) start[r + 1] += start[r];
    uint32_t cursor[4] = {start[0], start[1], start[2], start[3]};
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t at = cursor[rank[key[j]]]++;
      perm[at] = j;
      wire[at] = key[j];
    }
  }
  shape->double_end = start[1];
  shape->float_end = start[2];
  shape->int_end = start[3];
  shape->numbers_bound = 8 * size_t{shape->double_end} +
                         4 * size_t{shape->float_end - shape->double_end} +
                         coding::kMaxVarint64Length * size_t{shape->int_end - shape->float_end};
  std::vector<char>& entries = s_.shape_entries;
  const size_t at = entries.size();
  entries.resize(at + wire_bytes);
  coding::Writer w(entries.data() + at, entries.data() + entries.size());
  w.PutVarint64(n);
  w.PutVarint32s(wire, n);
}

absl::Status Encoder::NewShape(size_t i, uint32_t* id) {
  std::vector<uint32_t>& keys = s_.scratch_keys;
  const std::vector<MetricEntry>& m = r_.items[i].metrics;
  keys.resize(m.size());
  for (size_t j = 0; j < m.size(); ++j) keys.data()[j] = m[j].key;
  if (s_.shapes.size() <= kLinearShapesMax) {
    for (size_t d = 0; d < s_.shapes.size(); ++d) {
      if (absl::MakeConstSpan(s_.shapes[d].item_keys) == absl::MakeConstSpan(keys)) {
        *id = static_cast<uint32_t>(d);
        return absl::OkStatus();
      }
    }
  } else if (!shape_index_off_) {
    ++shape_lookups_;
    if (auto it = s_.shape_index.find(absl::MakeConstSpan(keys)); it != s_.shape_index.end()) {
      ++shape_hits_;
      *id = it->second;
      return absl::OkStatus();
    }
    // Decided from a sample, as for dictionaries: when items rarely
    // repeat an earlier shape but the previous item's (sparse features:
    // each item its own subset of the keys), hashing every item's keys
    // finds nothing, so stop. A repeat found later then gets a second,
    // equal shape (allowed: docs/FORMAT.md), a few bytes per such item.
    if (shape_lookups_ >= kShapeIndexSample && shape_hits_ * kShapeIndexMinHits < shape_lookups_) {
      shape_index_off_ = true;
      s_.shape_index.clear();
    }
  }
  // A new shape: check it once, for every item that will share it.
  RETURN_IF_ERROR(CheckShapeKeys(i, keys));
  if (s_.shapes.size() >= UINT32_MAX) return Invalid(i, r_, "too many shapes");
  Shape shape;
  if (!s_.spare_shapes.empty()) {
    shape = std::move(s_.spare_shapes.back());
    s_.spare_shapes.pop_back();
  }
  shape.item_keys.assign(keys.begin(), keys.end());
  WireOrder(keys, &shape);
  *id = static_cast<uint32_t>(s_.shapes.size());
  s_.shapes.push_back(std::move(shape));
  // The index holds views of the shapes' own key vectors, which stay put
  // when s_.shapes grows (a moved vector keeps its buffer).
  if (s_.shapes.size() > kLinearShapesMax && !shape_index_off_) {
    if (s_.shape_index.empty()) {
      for (size_t d = 0; d < s_.shapes.size(); ++d) {
        s_.shape_index.emplace(absl::MakeConstSpan(s_.shapes[d].item_keys),
                               static_cast<uint32_t>(d));
      }
    } else {
      s_.shape_index.emplace(absl::MakeConstSpan(s_.shapes.back().item_keys), *id);
    }
  }
  return absl::OkStatus();
}

// Drops a key's dictionary: its values are written plain from now on.
void GiveUpDict(StringKey& sk) {
  sk.overflow = true;
  sk.ClearDict();
}

uint32_t Encoder::DictIndex(StringKey& sk, absl::string_view v) {
  if (sk.overflow) return UINT32_MAX;
  // Decide early, from a sample, as ORC does (orc.dictionary.key.threshold):
  // after the key's first kDictSample values, a key whose values are mostly
  // distinct will not get a dictionary that pays, so stop hashing them.
  ++sk.seen;
  if (ABSL_PREDICT_FALSE(sk.seen == kDictEarlySample + 1 || sk.seen == kDictSample) &&
      SampleSaysNoDict(sk)) {
    GiveUpDict(sk);
    return UINT32_MAX;
  }
  if (ABSL_PREDICT_FALSE(v.size() > ShortString::kMax)) return LongDictIndex(sk, v);
  // Short values (categories, buckets, sources): one probe, no memcmp.
  const ShortString key = ShortString::Of(v);
  size_t slot = 0;
  uint32_t index = sk.short_index.Find(key, &slot);
  if (ABSL_PREDICT_FALSE(index == UINT32_MAX)) {
    index = AddShort(sk, v, key, slot);
    if (index == UINT32_MAX) return UINT32_MAX;
  }
  sk.index_bytes += coding::VarintLength(index);
  return index;
}

// Both checks run before the value that makes the count: at seen == n the
// entries are those of the first n - 1 values.
bool Encoder::SampleSaysNoDict(const StringKey& sk) const {
  return (sk.seen == kDictEarlySample + 1 && sk.entries.size() == kDictEarlySample &&
          o_.dict_distinct_threshold < 1) ||
         (sk.seen == kDictSample &&
          sk.entries.size() > static_cast<size_t>(kDictSample * o_.dict_distinct_threshold));
}

uint32_t Encoder::AddEntry(StringKey& sk, absl::string_view v) {
  if (sk.entries.size() >= o_.max_dict_entries) {
    GiveUpDict(sk);
    return UINT32_MAX;
  }
  sk.entries.push_back(v);
  return static_cast<uint32_t>(sk.entries.size() - 1);
}

uint32_t Encoder::AddShort(StringKey& sk, absl::string_view v, const ShortString& key,
                           size_t slot) {
  const uint32_t index = AddEntry(sk, v);
  if (index != UINT32_MAX) sk.short_index.Insert(slot, key, index);
  return index;
}

uint32_t Encoder::LongDictIndex(StringKey& sk, absl::string_view v) {
  // Long values mostly repeat the previous item's (a model version) or
  // come from a handful: compare with the last one, then scan a few, and
  // hash only beyond that.
  uint32_t index = UINT32_MAX;
  if (sk.last < sk.entries.size() && SameString(sk.entries[sk.last], v)) {
    index = sk.last;
  } else if (sk.long_entries.size() <= kLinearDictMax) {
    for (uint32_t d : sk.long_entries) {
      if (SameString(sk.entries[d], v)) {
        index = d;
        break;
      }
    }
  } else if (auto it = sk.long_index.find(v); it != sk.long_index.end()) {
    index = it->second;
  }
  if (index == UINT32_MAX) {
    index = AddEntry(sk, v);
    if (index == UINT32_MAX) return UINT32_MAX;
    sk.long_entries.push_back(index);
    if (sk.long_entries.size() > kLinearDictMax) {
      if (sk.long_index.empty()) {
        for (uint32_t d : sk.long_entries) sk.long_index.emplace(sk.entries[d], d);
      } else {
        sk.long_index.emplace(v, index);
      }
    }
  }
  sk.last = index;
  sk.index_bytes += coding::VarintLength(index);
  return index;
}

// The item's shape: almost always the previous item's. Careful mode
// compares every key here; fast mode leaves that to the write pass.
absl::Status Encoder::ItemShape(size_t i, uint32_t* id) {
  const std::vector<MetricEntry>& m = r_.items[i].metrics;
  *id = i > 0 ? s_.item_shape[i - 1] : 0;
  bool same = i > 0 && s_.shapes[*id].item_keys.size() == m.size();
  if (same) {
    const uint32_t* keys = s_.shapes[*id].item_keys.data();
    if (careful_ || s_.shapes.size() > kLinearShapesMax) {
      // Careful mode, and fast mode once a result has many shapes (sparse
      // features: items that each carry a different subset of as many
      // keys), compare every key up to the first difference. Three samples
      // let one item in a few hundred of 500 random halves of 200 keys
      // through, and the encode then restarted in careful mode (a fifth of
      // its time); each new shape costs far more than the comparison.
      for (size_t j = 0; j < m.size(); ++j) {
        if (m[j].key != keys[j]) {
          same = false;
          break;
        }
      }
    } else if (!m.empty()) {
      // Fast mode samples three keys while a result has few shapes (most
      // have one): a wrong guess is caught later and restarts the encode.
      const size_t mid = m.size() / 2, last = m.size() - 1;
      same = m[0].key == keys[0] && m[mid].key == keys[mid] && m[last].key == keys[last];
    }
  }
  return same ? absl::OkStatus() : NewShape(i, id);
}

absl::Status Encoder::Analyze() {
  s_.string_values.reserve(n_ * s_.string_keys.size());
  s_.item_shape.resize(n_);
  values_total_ = 0;  // The numbers now; DecideDictionaries adds the strings.
  s_.values_bound.resize(n_);
  s_.log_block_raw.assign(blocks_, 0);
  s_.values_long_strings.assign(blocks_, 0);
  // The item's block, counted rather than divided (a division per item
  // showed in profiles of small items).
  size_t block = 0;
  size_t block_left = block_items_;
  for (size_t i = 0; i < n_; ++i, --block_left) {
    if (block_left == 0) {
      ++block;
      block_left = block_items_;
    }
    const RankedItem& item = r_.items[i];
    const std::vector<MetricEntry>& m = item.metrics;
    uint32_t id = 0;
    RETURN_IF_ERROR(ItemShape(i, &id));
    s_.item_shape[i] = id;
    const Shape& shape = s_.shapes[id];
    // Numbers are bounded by the shape, and checked when they are written
    // (an exact size for ints here was a second pass over them: a tenth of
    // the encode, perf). Strings: type and dictionary index; their exact
    // size waits for the dictionaries to be decided, so the item also gets
    // a bound that holds either way.
    const uint64_t size = shape.numbers_bound;
    uint64_t string_bound = 0;
    for (uint32_t j = shape.int_end; j < shape.perm.size(); ++j) {
      const MetricValue& v = m[shape.perm[j]].value;
      if (ABSL_PREDICT_FALSE(v.type() != MetricType::kString)) {
        if (!careful_) return SpeculationFailed();
        return WrongTypeStatus(i, shape.wire_keys[j], v);
      }
      StringKey& sk = s_.strings[shape.wire_keys[j]];
      absl::string_view text = v.string_value();
      const size_t plain = coding::LengthPrefixedLength(text.size());
      sk.plain_bytes += plain;
      string_bound += std::max<size_t>(plain, coding::kMaxVarint32Length);
      const uint32_t index = DictIndex(sk, text);
      if (index == UINT32_MAX && text.size() >= kLongString) {
        s_.values_long_strings[block] += plain;
      }
      s_.string_values.push_back(index);
    }
    values_total_ += size;
    s_.values_bound[i] = size + string_bound;
    s_.log_block_raw[block] += coding::LengthPrefixedLength(item.log.size());
    if (!item.log.empty()) has_logs_ = true;
    records_bound_ += coding::LengthPrefixedLength(item.item_id.size()) + 8 +
                      coding::VarintLength(item.position) + coding::VarintLength(id) +
                      coding::kMaxVarint32Length;
  }
  for (size_t b = 0; b < blocks_; ++b) {
    if (s_.log_block_raw[b] > UINT32_MAX) {
      return absl::InvalidArgumentError("rankbin: a logs block exceeds 4 GiB");
    }
  }
  DecideDictionaries();
  return absl::OkStatus();
}

void Encoder::DecideDictionaries() {
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    StringKey& sk = s_.strings[k];
    if (r_.keys[k].type != MetricType::kString || sk.overflow || sk.entries.empty()) continue;
    uint64_t dict_bytes = coding::VarintLength(sk.entries.size());
    for (absl::string_view e : sk.entries) dict_bytes += coding::LengthPrefixedLength(e.size());
    sk.use_dict = dict_bytes + sk.index_bytes < sk.plain_bytes;
    if (sk.use_dict) s_.key_code[k] = kStringDict;
  }
  // Every value run together, now that the dictionaries are decided (the
  // numbers were summed by Analyze).
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    if (r_.keys[k].type != MetricType::kString) continue;
    values_total_ += s_.strings[k].use_dict ? s_.strings[k].index_bytes : s_.strings[k].plain_bytes;
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
    Serializer<KeyEntry>::Write(w, s_.key_code[k], r_.keys[k].name, s_.strings[k].entries);
  }
}

void Encoder::WriteShapes(coding::Writer& w) {
  w.PutVarint64(s_.shapes.size());
  w.PutBytes(absl::string_view(s_.shape_entries.data(), s_.shape_entries.size()));
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
        w, ItemRecord{item.item_id, item.score, item.position, s_.item_shape[i], s_.values_offset[i]});
  }
}

bool Encoder::WriteItemValues(coding::Writer& out, size_t i, size_t* str_cursor) {
  const MetricEntry* m = r_.items[i].metrics.data();
  const Shape& shape = s_.shapes[s_.item_shape[i]];
  const uint32_t* perm = shape.perm.data();
  // A local copy whose address never escapes: the compiler keeps its write
  // pointer in a register instead of reloading it after every byte store
  // (char stores may alias anything else).
  coding::Writer w = out;
  // Strings were type-checked by Analyze(); numbers are checked here, in
  // the one pass that reads them. The wire order groups
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
    if (ABSL_PREDICT_FALSE(e.value.type() != MetricType::kInt)) {
      return WrongType(i, keys[j], e.value);
    }
    w.PutSignedVarint64(e.value.int_value());
  }
  const uint32_t count = static_cast<uint32_t>(shape.perm.size());
  for (; j < count; ++j) {
    const MetricEntry& e = m[perm[j]];
    if (ABSL_PREDICT_FALSE(e.key != keys[j])) return Misguessed();
    const uint32_t index = s_.string_values[(*str_cursor)++];
    if (s_.key_code[keys[j]] == kStringDict) {
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
                                  absl::FunctionRef<bool(size_t)> candidate, Fill fill) {
  w.PutVarint64(raw_bounds.size());
  char* directory = w.Skip(raw_bounds.size() * kBlockEntryBytes);
  int misses = 0;
  for (size_t b = 0; b < raw_bounds.size(); ++b) {
    BlockEntry entry{static_cast<uint8_t>(BlockCodec::kRaw), 0, 0};
    if (misses >= kMaxCompressMisses || !candidate(b)) {
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
                                                   w.position(), w.remaining(),
                                                   o_.zstd_checksum);
      if (!stored.ok()) return stored.status();
      if (raw > 0 && *stored <= static_cast<double>(raw) * (1.0 - o_.min_saving)) {
        entry.codec = static_cast<uint8_t>(BlockCodec::kZstd);
        entry.stored_size = static_cast<uint32_t>(*stored);
        w.Skip(*stored);
        misses = 0;
      } else {
        w.PutBytes(absl::string_view(scratch, raw));
        if (raw > 0) ++misses;
      }
    }
    coding::Writer dw(directory + b * kBlockEntryBytes, directory + (b + 1) * kBlockEntryBytes);
    Serializer<BlockEntry>::Write(dw, entry);
  }
  return absl::OkStatus();
}

absl::Status Encoder::WriteValues(coding::Writer& w) {
  // Per-block bounds: only compressed blocks need them (for the scratch).
  std::vector<uint64_t>& bounds = s_.value_block_bounds;
  bounds.assign(blocks_, 0);
  for (size_t b = 0, i = 0; b < blocks_; ++b) {
    for (const size_t end = std::min(n_, i + block_items_); i < end; ++i) {
      bounds[b] += s_.values_bound[i];
    }
  }
  s_.values_offset.resize(n_);
  // Items are written in order, so one cursor over the string values works
  // across blocks.
  size_t str_cursor = 0;
  return WriteBlocks(w, bounds, [&](size_t b) { return ValuesCandidate(b, bounds); },
                     [&](size_t block, coding::Writer& bw) {
                       size_t end = std::min(n_, (block + 1) * block_items_);
                       for (size_t i = block * block_items_; i < end; ++i) {
                         if (bw.written() > UINT32_MAX) {
                           error_ = Invalid(i, r_, "values block exceeds 4 GiB");
                           return false;
                         }
                         s_.values_offset[i] = static_cast<uint32_t>(bw.written());
                         if (!WriteItemValues(bw, i, &str_cursor)) return false;
                       }
                       return true;
                     });
}

absl::Status Encoder::WriteLogs(coding::Writer& w) {
  return WriteBlocks(w, s_.log_block_raw, [&](size_t) { return o_.compress_logs; },
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
  Reset();
  RETURN_IF_ERROR(CheckKeys());
  RETURN_IF_ERROR(Analyze());

  size_t keys_bytes = coding::VarintLength(r_.keys.size());
  for (size_t k = 0; k < r_.keys.size(); ++k) {
    keys_bytes += Serializer<KeyEntry>::Size(s_.key_code[k], r_.keys[k].name,
                                             s_.strings[k].entries);
  }
  // Every shape's entry is already written (WireOrder).
  const size_t shapes_bytes = coding::VarintLength(s_.shapes.size()) + s_.shape_entries.size();
  // ITEMS: exact but for each record's values offset, bounded at 5 bytes.
  const size_t items_bound = coding::VarintLength(n_) + coding::VarintLength(block_items_) +
                             4 * n_ + records_bound_;
  const size_t block_directory = coding::VarintLength(blocks_) + blocks_ * kBlockEntryBytes;
  // VALUES: exact when raw but for ints (10 bytes each in the bound, 1-3
  // written for most); compressed blocks may take zstd's bound (size +
  // size/256 + 64 per block, summed over blocks).
  const bool may_compress_values =
      o_.compress_values ||
      (o_.compress_string_values &&
       std::any_of(s_.values_long_strings.begin(), s_.values_long_strings.end(),
                   [](uint64_t n) { return n > 0; }));
  const size_t values_bound =
      block_directory + (may_compress_values ? values_total_ + (values_total_ >> 8) + 64 * blocks_
                                             : values_total_);
  const size_t logs_bound = has_logs_ ? BlockSectionBound(s_.log_block_raw, o_.compress_logs) : 0;
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
