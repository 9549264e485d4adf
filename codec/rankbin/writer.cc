#include "codec/rankbin/writer.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

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

// A string key's dictionary is decided from a sample of its first values,
// as ORC does: past kDictSample referenced entries, a key with more than
// dict_distinct_threshold of them distinct gets no dictionary (long
// distinct strings are then not hashed for nothing).
constexpr uint32_t kDictSample = 64;
// A plain string of at least this many bytes counts towards its block's
// "compressible string bytes" (short strings are mostly length prefixes).
constexpr size_t kLongString = 32;
// After this many blocks in a row that did not pay, a column stops trying.
constexpr int kMaxCompressMisses = 4;
// Shapes are compared one by one while a result has at most this many; the
// index is built past that (most results have one shape).
constexpr size_t kLinearShapesMax = 8;

// A shape's keys go on the wire grouped by type: doubles, floats, ints,
// strings (each group in key-table order).
inline uint8_t WireGroup(MetricType type) {
  switch (type) {
    case MetricType::kDouble:
      return 0;
    case MetricType::kFloat:
      return 1;
    case MetricType::kInt:
      return 2;
    case MetricType::kString:
      break;
  }
  return 3;
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

// A string key's column as WriteRun writes it.
struct StringColumn {
  const uint32_t* codes;    // Per item, its entry.
  const uint32_t* remap;    // Null: plain strings.
  const uint64_t* offsets;  // Column::entry_offsets().
  const char* data;         // Column::entry_data().
};

// A set of keys items carry, in key-table order, and the same keys in wire
// order, split by type.
struct Shape {
  std::vector<uint32_t> keys;  // Key-table order (how items are compared).
  std::vector<uint32_t> wire;  // Wire order: doubles, floats, ints, strings.
  uint32_t double_end = 0;
  uint32_t float_end = 0;
  uint32_t int_end = 0;
  // Bytes of the numbers: doubles and floats exactly, ints at their
  // longest varint.
  uint64_t numbers_bound = 0;
  // What WriteRun reads, found once per encode (not per run of items):
  // the number columns' arrays in wire order, and the string columns.
  std::vector<const void*> columns;
  std::vector<StringColumn> strings;
};

// A string key's encoding: a dictionary of its distinct referenced entries
// (`dict`, with `remap` from the column's entry codes), or plain strings.
struct StringKey {
  bool use_dict = false;
  std::vector<absl::string_view> dict;
  std::vector<uint32_t> remap;  // Column entry code -> dictionary index.
};

// What an Encoder keeps between calls on a thread: vectors reused, so an
// encode allocates only its output once warm.
struct EncoderScratch {
  std::vector<uint8_t> key_code;
  std::vector<uint8_t> key_group;  // Per key, WireGroup of its type.
  std::vector<Shape> shapes;
  std::vector<uint32_t> item_shape;
  std::vector<uint32_t> scratch_keys;
  std::vector<uint64_t> item_sparse;  // Per item: which sparse keys it has.
  std::vector<int8_t> sparse_bit;     // Per key: its bit there, -1 if dense.
  std::vector<StringKey> strings;     // Per key; used for string keys.
  // A dictionary's entries by value: those of at most 16 bytes (most: a
  // category, a bucket, a source) as packed words, the longer ones hashed.
  ShortDict short_index;
  absl::flat_hash_map<absl::string_view, uint32_t> dict_index;
  absl::flat_hash_set<absl::string_view> key_names;
  AcceptedNames accepted_keys;
  std::vector<uint64_t> item_strings;  // Per item: bytes of its string values.
  std::vector<uint32_t> entry_uses;    // DecideString's, per entry of a column.
  std::vector<uint32_t> entry_bound;
  absl::flat_hash_set<absl::string_view> sample_strings;
  std::vector<uint32_t> values_offset;
  std::vector<uint64_t> value_block_bounds;
  std::vector<uint64_t> values_long_strings;
  std::vector<uint64_t> log_block_raw;
  std::vector<char> shape_entries;
  // Built once a result has more than kLinearShapesMax shapes; its keys are
  // views of the shapes' own key vectors.
  absl::flat_hash_map<absl::Span<const uint32_t>, uint32_t> shape_index;
};

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

// Encodes a columnar result: one analysis pass (shapes from the columns'
// presence, string keys' dictionaries from their entries and codes, sizes),
// then the sections written in one buffer.
class Encoder {
 public:
  Encoder(const RankResult& result, const WriterOptions& options)
      : r_(result), o_(options), s_(ThreadEncoderScratch()) {}

  absl::StatusOr<OwnedBuffer> Encode();

 private:
  void Reset();
  absl::Status CheckKeys();
  // Every item's shape (s_.item_shape), every shape's SHAPES entry.
  absl::Status AssignShapes();
  bool AssignShapesFewSparse();
  uint32_t ShapeOf(absl::Span<const uint32_t> keys);
  uint32_t AddShape(absl::Span<const uint32_t> keys);
  // Each string key's dictionary or not, and the bytes of every item's
  // string values (s_.item_strings) and of each block's long plain ones.
  absl::Status DecideStrings();
  absl::Status DecideString(uint32_t k);
  // DecideString's steps: each entry's uses (s_.entry_uses) and whether a
  // sample of the values says a dictionary may pay; the dictionary of the
  // used entries (false if it has none or outgrew max_dict_entries); the
  // long plain strings of each block.
  absl::Status CountUses(uint32_t k, bool* dict_worth_trying);
  // DecideString's first step: a key whose first 16 present values are
  // distinct (an id, a trace, free text) gets no dictionary (the sample's
  // first verdict), and every item is sized as plain in one pass over the
  // codes, no entry counted. *done false, and nothing changed, otherwise.
  absl::Status SizePlainIfDistinct(uint32_t k, bool* done);
  absl::Status CodeError(uint32_t k, size_t i, uint32_t code, size_t entries) const;
  bool BuildDictionary(const Column& c, StringKey& sk, uint64_t* index_bytes);
  void CountLongStrings(const Column& c);
  void SizeLogs();

  void WriteKeys(coding::Writer& w);
  void WriteShapes(coding::Writer& w);
  void WriteItems(coding::Writer& w);
  absl::Status WriteValues(coding::Writer& w);
  absl::Status WriteLogs(coding::Writer& w);
  // The values of items [begin, end), which all have shape `shape`.
  void WriteRun(coding::Writer& out, size_t begin, size_t end, const Shape& shape);
  // The shape's columns for WriteRun, once the string keys are decided.
  void PrepareColumns(Shape& shape) const;
  template <typename Fill>
  absl::Status WriteBlocks(coding::Writer& w, const std::vector<uint64_t>& raw_bounds,
                           absl::FunctionRef<bool(size_t)> candidate, Fill fill);
  // Whether a block's bound decides anything (whether it is compressed);
  // without compression the values need only a bound in total.
  bool BlockBoundsMatter() const { return o_.compress_values || o_.compress_string_values; }
  bool ValuesCandidate(size_t b) const {
    const std::vector<uint64_t>& bounds = s_.value_block_bounds;
    return o_.compress_values || (o_.compress_string_values && bounds[b] > 0 &&
                                  2 * s_.values_long_strings[b] >= bounds[b]);
  }
  size_t BlockSectionBound(const std::vector<uint64_t>& raw_sizes, bool compress) const;

  const RankResult& r_;
  const WriterOptions& o_;
  EncoderScratch& s_;
  size_t n_ = 0;
  size_t k_ = 0;
  size_t blocks_ = 0;
  uint32_t block_items_ = 1;
  uint64_t values_total_ = 0;
  uint64_t records_bound_ = 0;
  bool has_logs_ = false;
  size_t shape_count_ = 0;  // This call's shapes: the first ones of s_.shapes.
  uint32_t shape_lookups_ = 0;
  uint32_t shape_hits_ = 0;
  bool shape_index_off_ = false;
};

void Encoder::Reset() {
  Trim(s_.key_code, k_);
  Trim(s_.strings, k_);
  Trim(s_.item_shape, n_);
  Trim(s_.item_sparse, n_);
  Trim(s_.item_strings, n_);
  Trim(s_.values_offset, n_);
  Trim(s_.value_block_bounds, blocks_);
  Trim(s_.values_long_strings, blocks_);
  Trim(s_.log_block_raw, blocks_);
  Trim(s_.shape_entries, k_ * 8 + 64);
  if (s_.shapes.size() > std::max<size_t>(8, n_)) s_.shapes.resize(std::max<size_t>(8, n_));
  for (Shape& shape : s_.shapes) {
    Trim(shape.keys, k_);
    Trim(shape.wire, k_);
  }
  s_.shape_entries.clear();
  if (s_.strings.size() < k_) s_.strings.resize(k_);
}

absl::Status Encoder::CheckKeys() {
  const auto key_at = [this](size_t k) {
    const MetricKey& key = r_.key(static_cast<uint32_t>(k));
    return AcceptedNames::Entry{key.name, static_cast<uint8_t>(key.type)};
  };
  // Unique names and valid types; skipped for the very table that passed
  // last on this thread (a ranker's schema, call after call).
  if (!s_.accepted_keys.Matches(k_, key_at)) {
    s_.accepted_keys.Forget();
    s_.key_names.clear();
    s_.key_names.reserve(k_);
    for (const MetricKey& key : r_.keys()) {
      if (!s_.key_names.insert(key.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("rankbin: metric key \"", key.name, "\" appears twice"));
      }
      if (!MetricTypeFromNumber(static_cast<int>(key.type))) {
        return absl::InvalidArgumentError(
            absl::StrCat("rankbin: metric key \"", key.name, "\" has no valid type"));
      }
    }
    s_.accepted_keys.Remember(k_, key_at);
  }
  s_.key_code.resize(k_);
  s_.key_group.resize(k_);
  for (size_t k = 0; k < k_; ++k) {
    const MetricType type = r_.key(static_cast<uint32_t>(k)).type;
    s_.key_code[k] = PlainCode(type);
    s_.key_group[k] = WireGroup(type);
  }
  return absl::OkStatus();
}

uint32_t Encoder::AddShape(absl::Span<const uint32_t> keys) {
  const uint32_t id = static_cast<uint32_t>(shape_count_);
  if (s_.shapes.size() <= shape_count_) s_.shapes.emplace_back();
  Shape& shape = s_.shapes[shape_count_++];
  shape.keys.assign(keys.begin(), keys.end());
  // Wire order: a stable split by type (keys stay in key-table order within
  // each type), as a counting sort: each group counted, then every key
  // placed. The four counters, then the four cursors, are 16-bit fields of
  // one register (counters in memory make every key wait on the previous
  // key's store); a shape of 2^16 keys or more takes counters in memory.
  const uint8_t* group = s_.key_group.data();
  size_t bytes = coding::VarintLength(keys.size());
  shape.wire.resize(keys.size());
  uint32_t* wire = shape.wire.data();
  uint64_t count[4] = {0, 0, 0, 0};
  if (keys.size() < 0x10000) {
    uint64_t packed = 0;
    for (uint32_t k : keys) {
      packed += uint64_t{1} << (16 * group[k]);
      bytes += coding::VarintLength(k);
    }
    for (int g = 0; g < 4; ++g) count[g] = (packed >> (16 * g)) & 0xFFFF;
    uint64_t cursors =
        (count[0] << 16) | ((count[0] + count[1]) << 32) | ((count[0] + count[1] + count[2]) << 48);
    for (uint32_t k : keys) {
      const unsigned shift = 16 * group[k];
      wire[(cursors >> shift) & 0xFFFF] = k;
      cursors += uint64_t{1} << shift;
    }
  } else {
    for (uint32_t k : keys) {
      ++count[group[k]];
      bytes += coding::VarintLength(k);
    }
    uint64_t cursor[4] = {0, count[0], count[0] + count[1], count[0] + count[1] + count[2]};
    for (uint32_t k : keys) wire[cursor[group[k]]++] = k;
  }
  shape.double_end = static_cast<uint32_t>(count[0]);
  shape.float_end = static_cast<uint32_t>(count[0] + count[1]);
  shape.int_end = static_cast<uint32_t>(count[0] + count[1] + count[2]);
  shape.numbers_bound = 8 * uint64_t{shape.double_end} +
                        4 * uint64_t{shape.float_end - shape.double_end} +
                        coding::kMaxVarint64Length * uint64_t{shape.int_end - shape.float_end};
  // Its SHAPES entry, now, while its keys are in cache.
  const size_t at = s_.shape_entries.size();
  s_.shape_entries.resize(at + bytes);
  coding::Writer w(s_.shape_entries.data() + at, s_.shape_entries.data() + at + bytes);
  w.PutVarint64(shape.wire.size());
  w.PutVarint32s(shape.wire.data(), shape.wire.size());
  // The index holds views of the shapes' own key vectors, which stay put
  // when s_.shapes grows (a moved vector keeps its buffer) and are not
  // assigned again in this call.
  if (shape_count_ > kLinearShapesMax && !shape_index_off_) {
    if (s_.shape_index.empty()) {
      for (size_t d = 0; d < shape_count_; ++d) {
        s_.shape_index.emplace(absl::MakeConstSpan(s_.shapes[d].keys), static_cast<uint32_t>(d));
      }
    } else {
      s_.shape_index.emplace(absl::MakeConstSpan(shape.keys), id);
    }
  }
  return id;
}

uint32_t Encoder::ShapeOf(absl::Span<const uint32_t> keys) {
  if (shape_count_ <= kLinearShapesMax) {
    for (size_t d = 0; d < shape_count_; ++d) {
      if (absl::MakeConstSpan(s_.shapes[d].keys) == keys) return static_cast<uint32_t>(d);
    }
  } else if (!shape_index_off_) {
    ++shape_lookups_;
    if (auto it = s_.shape_index.find(keys); it != s_.shape_index.end()) {
      ++shape_hits_;
      return it->second;
    }
    // Decided from a sample: when items rarely repeat an earlier shape
    // (sparse features, each item its own subset of the keys), hashing
    // every item's keys finds nothing, so stop. A repeat found later gets
    // a second, equal shape (allowed: docs/FORMAT.md).
    if (shape_lookups_ >= 64 && shape_hits_ * 8 < shape_lookups_) {
      shape_index_off_ = true;
      s_.shape_index.clear();
    }
  }
  return AddShape(keys);
}

// Most keys dense, at most 64 not (a ranker's explanations: a few keys in
// the top items only): each item's sparse keys as bits, and an item's key
// list made (and its shape found) only where its bits differ from the item
// before's, as the general path below does where its lists differ. The
// same shapes and item shapes, with one step per sparse value and per item
// instead of per value. False (nothing done) with more sparse keys.
bool Encoder::AssignShapesFewSparse() {
  std::vector<int8_t>& bit = s_.sparse_bit;
  bit.assign(k_, -1);
  int sparse = 0;
  for (uint32_t k = 0; k < k_; ++k) {
    if (r_.column(k).present_count() == n_) continue;
    if (sparse == 64) return false;
    bit[k] = static_cast<int8_t>(sparse++);
  }
  std::vector<uint64_t>& mask = s_.item_sparse;
  mask.assign(n_, 0);
  for (uint32_t k = 0; k < k_; ++k) {
    if (bit[k] < 0) continue;
    const uint64_t b = uint64_t{1} << bit[k];
    const absl::Span<const uint64_t> words = r_.column(k).present_words();
    for (size_t wi = 0; wi < words.size() && wi * 64 < n_; ++wi) {
      for (uint64_t w = words[wi]; w != 0; w &= w - 1) {
        const size_t i = wi * 64 + static_cast<size_t>(__builtin_ctzll(w));
        if (i < n_) mask[i] |= b;
      }
    }
  }
  std::vector<uint32_t>& keys = s_.scratch_keys;
  uint32_t previous = UINT32_MAX;
  for (size_t i = 0; i < n_; ++i) {
    if (i == 0 || mask[i] != mask[i - 1]) {
      keys.clear();
      for (uint32_t k = 0; k < k_; ++k) {
        if (bit[k] < 0 || (mask[i] >> bit[k] & 1) != 0) keys.push_back(k);
      }
      previous = ShapeOf(keys);
    }
    s_.item_shape[i] = previous;
  }
  return true;
}

absl::Status Encoder::AssignShapes() {
  shape_count_ = 0;
  s_.shape_index.clear();
  s_.item_shape.resize(n_);
  bool dense = true;
  for (uint32_t k = 0; k < k_; ++k) dense = dense && r_.column(k).present_count() == n_;
  if (dense) {
    // Every item carries every key (a ranker's output): one shape.
    if (n_ == 0) return absl::OkStatus();
    s_.scratch_keys.resize(k_);
    for (uint32_t k = 0; k < k_; ++k) s_.scratch_keys[k] = k;
    AddShape(s_.scratch_keys);
    std::fill(s_.item_shape.begin(), s_.item_shape.end(), 0);
    return absl::OkStatus();
  }
  if (AssignShapesFewSparse()) return absl::OkStatus();
  // Each item's keys, from the columns' presence bits: counted, then filled
  // (keys visited in increasing order, so each list is in key-table order).
  // The work is one step per value, not per item and key.
  std::vector<uint32_t>& start = s_.values_offset;  // Borrowed until WriteValues.
  start.assign(n_ + 1, 0);
  // Each present value once: the set bits of each column's words.
  const auto for_each_present = [this](const Column& c, auto visit) {
    const absl::Span<const uint64_t> words = c.present_words();
    for (size_t wi = 0; wi < words.size() && wi * 64 < n_; ++wi) {
      for (uint64_t bits = words[wi]; bits != 0; bits &= bits - 1) {
        const size_t i = wi * 64 + static_cast<size_t>(__builtin_ctzll(bits));
        if (i < n_) visit(i);
      }
    }
  };
  for (uint32_t k = 0; k < k_; ++k) {
    for_each_present(r_.column(k), [&start](size_t i) { ++start[i + 1]; });
  }
  for (size_t i = 0; i < n_; ++i) start[i + 1] += start[i];
  std::vector<uint32_t>& flat = s_.scratch_keys;
  flat.resize(start[n_]);
  std::vector<uint32_t>& fill = s_.item_shape;  // Cursor per item, replaced below.
  for (size_t i = 0; i < n_; ++i) fill[i] = start[i];
  for (uint32_t k = 0; k < k_; ++k) {
    for_each_present(r_.column(k), [&flat, &fill, k](size_t i) { flat[fill[i]++] = k; });
  }
  uint32_t previous = UINT32_MAX;
  for (size_t i = 0; i < n_; ++i) {
    const absl::Span<const uint32_t> keys(flat.data() + start[i], start[i + 1] - start[i]);
    if (previous == UINT32_MAX || absl::MakeConstSpan(s_.shapes[previous].keys) != keys) {
      previous = ShapeOf(keys);
    }
    s_.item_shape[i] = previous;
  }
  if (shape_count_ > UINT32_MAX - 1) return absl::InvalidArgumentError("rankbin: too many shapes");
  return absl::OkStatus();
}

absl::Status Encoder::CountUses(uint32_t k, bool* dict_worth_trying) {
  const Column& c = r_.column(k);
  const size_t entries = c.entry_count();
  std::vector<uint32_t>& uses = s_.entry_uses;
  uses.assign(entries, 0);
  const uint32_t* codes = c.codes();
  const bool dense = c.present_count() == n_;
  // Distinct strings among the first kDictSample present items (compared by
  // value: entries may repeat a string). Not hashed at all when the column
  // has too few entries for the verdict below to refuse a dictionary (a
  // recall source, a bucket: a handful of entries). A key whose first 16
  // values are all distinct never gets here (SizePlainIfDistinct).
  s_.sample_strings.clear();
  const bool sample = entries >= 16 || entries > kDictSample * o_.dict_distinct_threshold;
  const size_t sample_end = sample ? kDictSample : 0;
  for (size_t i = 0, seen = 0; i < n_; ++i) {
    if (!dense && !c.present(i)) continue;
    const uint32_t code = codes[i];
    if (ABSL_PREDICT_FALSE(code >= entries)) return CodeError(k, i, code, entries);
    if (seen < sample_end) s_.sample_strings.insert(c.entry(code));
    ++seen;
    ++uses[code];
  }
  // The sample's verdict, as ORC decides: no dictionary when more than the
  // threshold's share of its first 64 values are distinct.
  *dict_worth_trying = !(c.present_count() >= kDictSample &&
                         s_.sample_strings.size() > kDictSample * o_.dict_distinct_threshold);
  return absl::OkStatus();
}

// Whether codes[i] == i for every item: an OR of differences, four at a
// time where SSE2 is there (-O2 does not vectorise the loop).
bool CountsUp(const uint32_t* codes, size_t n) {
  size_t i = 0;
  uint32_t differ = 0;
#if defined(__SSE2__)
  __m128i expect = _mm_setr_epi32(0, 1, 2, 3);
  const __m128i four = _mm_set1_epi32(4);
  __m128i acc = _mm_setzero_si128();
  for (; i + 4 <= n; i += 4) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i));
    acc = _mm_or_si128(acc, _mm_xor_si128(c, expect));
    expect = _mm_add_epi32(expect, four);
  }
  differ = _mm_movemask_epi8(_mm_cmpeq_epi32(acc, _mm_setzero_si128())) == 0xFFFF ? 0 : 1;
#endif
  for (; i < n; ++i) differ |= codes[i] ^ static_cast<uint32_t>(i);
  return differ == 0;
}

absl::Status Encoder::CodeError(uint32_t k, size_t i, uint32_t code, size_t entries) const {
  return absl::InvalidArgumentError(
      absl::StrCat("rankbin: item ", i, " (", r_.id(i), "): metric \"", r_.key(k).name,
                   "\" has string code ", code, " of ", entries, " entries"));
}

absl::Status Encoder::SizePlainIfDistinct(uint32_t k, bool* done) {
  *done = false;
  const Column& c = r_.column(k);
  const size_t entries = c.entry_count();
  const size_t present = c.present_count();
  // The first of the sample's verdicts, as ORC decides: no dictionary for a
  // key (of more than 16 values) whose first 16 are all distinct, unless
  // the threshold keeps every dictionary.
  if (!(entries >= 16 && o_.dict_distinct_threshold < 1 && present > 16)) return absl::OkStatus();
  const uint32_t* codes = c.codes();
  const bool dense = present == n_;
  // Compared pairwise, not hashed: a repeat among a few categories shows
  // within a few values, and distinct long values mostly differ in size.
  absl::string_view first[16];
  size_t i = 0;
  for (size_t seen = 0; seen < 16; ++i) {
    if (!dense && !c.present(i)) continue;
    if (ABSL_PREDICT_FALSE(codes[i] >= entries)) return CodeError(k, i, codes[i], entries);
    first[seen] = c.entry(codes[i]);
    for (size_t earlier = 0; earlier < seen; ++earlier) {
      if (first[earlier] == first[seen]) return absl::OkStatus();
    }
    ++seen;
  }
  // Distinct: plain strings, each item's value its length and bytes.
  const uint64_t* offsets = c.entry_offsets();
  StringKey& sk = s_.strings[k];
  sk.use_dict = false;
  sk.dict.clear();
  if (dense && entries >= n_ && !BlockBoundsMatter() && CountsUp(codes, n_)) {
    // Every item its own entry, in item order (a result built or decoded
    // item by item): the codes are in range, and the values take at most
    // the entries' bytes and a longest length prefix each, without reading
    // an entry. Nothing is compressed, so no block's bound is needed.
    values_total_ += offsets[n_] - offsets[0] + uint64_t{coding::kMaxVarint32Length} * n_;
    *done = true;
    return absl::OkStatus();
  }
  uint64_t* item_strings = s_.item_strings.data();
  uint64_t plain_bytes = 0;
  for (i = 0; i < n_; ++i) {
    if (!dense && !c.present(i)) continue;
    const uint32_t code = codes[i];
    if (ABSL_PREDICT_FALSE(code >= entries)) return CodeError(k, i, code, entries);
    const size_t plain = coding::LengthPrefixedLength(offsets[code + 1] - offsets[code]);
    // The bound DecideString gives an entry either way (so a block's
    // bound, and with it rankbin-zstd's choice to compress, are the same).
    item_strings[i] += std::max<size_t>(plain, coding::kMaxVarint32Length);
    plain_bytes += plain;
  }
  values_total_ += plain_bytes;
  if (o_.compress_string_values) CountLongStrings(c);
  *done = true;
  return absl::OkStatus();
}

bool Encoder::BuildDictionary(const Column& c, StringKey& sk, uint64_t* index_bytes) {
  const std::vector<uint32_t>& uses = s_.entry_uses;
  const size_t entries = c.entry_count();
  sk.remap.assign(entries, UINT32_MAX);
  s_.short_index.Clear();
  s_.dict_index.clear();
  const uint32_t max_entries = std::max<uint32_t>(1, o_.max_dict_entries);
  *index_bytes = 0;
  for (size_t e = 0; e < entries; ++e) {
    if (uses[e] == 0) continue;
    const absl::string_view v = c.entry(static_cast<uint32_t>(e));
    const auto next = static_cast<uint32_t>(sk.dict.size());
    uint32_t index;
    if (v.size() <= ShortString::kMax) {
      const ShortString key = ShortString::Of(v);
      size_t slot = 0;
      index = s_.short_index.Find(key, &slot);
      if (index == UINT32_MAX) {
        s_.short_index.Insert(slot, key, next);
        index = next;
      }
    } else {
      index = s_.dict_index.emplace(v, next).first->second;
    }
    if (index == next) sk.dict.push_back(v);
    sk.remap[e] = index;
    *index_bytes += uint64_t{uses[e]} * coding::VarintLength(index);
    if (sk.dict.size() > max_entries) return false;
  }
  return !sk.dict.empty();
}

absl::Status Encoder::DecideString(uint32_t k) {
  bool done = false;
  RETURN_IF_ERROR(SizePlainIfDistinct(k, &done));
  if (done) return absl::OkStatus();
  const Column& c = r_.column(k);
  StringKey& sk = s_.strings[k];
  sk.use_dict = false;
  sk.dict.clear();
  // Per entry: how many items use it (one pass over the codes), then every
  // cost from the entries (usually a handful: a recall source, a bucket).
  bool dict_worth_trying = false;
  RETURN_IF_ERROR(CountUses(k, &dict_worth_trying));
  const std::vector<uint32_t>& uses = s_.entry_uses;
  const size_t entries = c.entry_count();
  const uint32_t* codes = c.codes();
  const bool dense = c.present_count() == n_;
  // Per entry: its plain size, and the bound an item's value takes either
  // way (plain, or a dictionary index of at most 5 bytes).
  std::vector<uint32_t>& bound = s_.entry_bound;
  bound.resize(entries);
  uint64_t plain_bytes = 0;
  for (size_t e = 0; e < entries; ++e) {
    const size_t plain = coding::LengthPrefixedLength(c.entry(static_cast<uint32_t>(e)).size());
    bound[e] = static_cast<uint32_t>(std::max<size_t>(plain, coding::kMaxVarint32Length));
    plain_bytes += uint64_t{uses[e]} * plain;
  }
  for (size_t i = 0; i < n_; ++i) {
    if (dense || c.present(i)) s_.item_strings[i] += bound[codes[i]];
  }
  // A dictionary of the distinct referenced entries (entries are not
  // deduplicated when added), when it is smaller than the plain strings.
  uint64_t index_bytes = 0;
  if (dict_worth_trying && BuildDictionary(c, sk, &index_bytes)) {
    uint64_t dict_bytes = coding::VarintLength(sk.dict.size());
    for (absl::string_view e : sk.dict) dict_bytes += coding::LengthPrefixedLength(e.size());
    sk.use_dict = dict_bytes + index_bytes < plain_bytes;
  }
  if (sk.use_dict) {
    s_.key_code[k] = kStringDict;
    values_total_ += index_bytes;
    return absl::OkStatus();
  }
  sk.dict.clear();
  values_total_ += plain_bytes;
  if (o_.compress_string_values) CountLongStrings(c);
  return absl::OkStatus();
}

void Encoder::CountLongStrings(const Column& c) {
  // Long plain strings make their block worth compressing.
  const bool dense = c.present_count() == n_;
  for (size_t b = 0; b < blocks_; ++b) {
    const size_t end = std::min(n_, (b + 1) * size_t{block_items_});
    for (size_t i = b * block_items_; i < end; ++i) {
      if (!dense && !c.present(i)) continue;
      const size_t size = c.entry(c.codes()[i]).size();
      if (size >= kLongString) s_.values_long_strings[b] += coding::LengthPrefixedLength(size);
    }
  }
}

absl::Status Encoder::DecideStrings() {
  s_.item_strings.assign(n_, 0);
  s_.values_long_strings.assign(blocks_, 0);
  for (uint32_t k = 0; k < k_; ++k) {
    if (r_.key(k).type == MetricType::kString) RETURN_IF_ERROR(DecideString(k));
  }
  return absl::OkStatus();
}

void Encoder::SizeLogs() {
  has_logs_ = r_.has_logs();
  s_.log_block_raw.assign(has_logs_ ? blocks_ : 0, 0);
  records_bound_ = 0;
  if (has_logs_) {
    for (size_t b = 0; b < blocks_; ++b) {
      const size_t end = std::min(n_, (b + 1) * size_t{block_items_});
      for (size_t i = b * block_items_; i < end; ++i) {
        s_.log_block_raw[b] += coding::LengthPrefixedLength(r_.log(i).size());
      }
    }
  }
  // Records: exact but for the values offset (5 bytes) and the shape
  // index; ids are summed from their bytes and count.
  const size_t shape_bytes = coding::VarintLength(shape_count_);
  records_bound_ = r_.id_bytes().size() + n_ * (8 + shape_bytes + coding::kMaxVarint32Length);
  for (size_t i = 0; i < n_; ++i) {
    records_bound_ += coding::VarintLength(r_.id(i).size()) + coding::VarintLength(r_.position(i));
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
  w.PutVarint64(k_);
  for (uint32_t k = 0; k < k_; ++k) {
    Serializer<KeyEntry>::Write(w, s_.key_code[k], r_.key(k).name, s_.strings[k].dict);
  }
}

void Encoder::WriteShapes(coding::Writer& w) {
  w.PutVarint64(shape_count_);
  w.PutBytes(absl::string_view(s_.shape_entries.data(), s_.shape_entries.size()));
}

void Encoder::WriteItems(coding::Writer& w) {
  w.PutVarint64(n_);
  w.PutVarint64(block_items_);
  char* directory = w.Skip(4 * n_);
  const char* records = w.position();
  for (size_t i = 0; i < n_; ++i) {
    coding::EncodeFixed32(directory + 4 * i, static_cast<uint32_t>(w.position() - records));
    Serializer<ItemRecord>::Write(w, ItemRecord{r_.id(i), r_.score(i), r_.position(i),
                                                s_.item_shape[i], s_.values_offset[i]});
  }
}

void Encoder::PrepareColumns(Shape& shape) const {
  shape.columns.resize(shape.int_end);
  shape.strings.clear();
  for (size_t j = 0; j < shape.wire.size(); ++j) {
    const Column& c = r_.column(shape.wire[j]);
    switch (c.type()) {
      case MetricType::kDouble:
        shape.columns[j] = c.doubles();
        break;
      case MetricType::kFloat:
        shape.columns[j] = c.floats();
        break;
      case MetricType::kInt:
        shape.columns[j] = c.ints();
        break;
      case MetricType::kString: {
        const StringKey& sk = s_.strings[shape.wire[j]];
        shape.strings.push_back(StringColumn{c.codes(), sk.use_dict ? sk.remap.data() : nullptr,
                                             c.entry_offsets(), c.entry_data()});
        break;
      }
    }
  }
}

void Encoder::WriteRun(coding::Writer& out, size_t begin, size_t end, const Shape& shape) {
  // Everything the loop reads in locals: stores through the writer's char
  // pointer may alias any memory, so members would be reloaded per value.
  const void* const* col = shape.columns.data();
  const uint32_t double_end = shape.double_end;
  const uint32_t float_end = shape.float_end;
  const uint32_t int_end = shape.int_end;
  const StringColumn* string_cols = shape.strings.data();
  const size_t string_count = shape.strings.size();
  uint32_t* values_offset = s_.values_offset.data();
  coding::Writer w = out;
  const char* const values_start = w.position() - w.written();
  for (size_t i = begin; i < end; ++i) {
    values_offset[i] = static_cast<uint32_t>(w.position() - values_start);
    uint32_t j = 0;
    for (; j < double_end; ++j) w.PutDouble(static_cast<const double*>(col[j])[i]);
    for (; j < float_end; ++j) w.PutFloat(static_cast<const float*>(col[j])[i]);
    for (; j < int_end; ++j) w.PutSignedVarint64(static_cast<const int64_t*>(col[j])[i]);
    for (size_t t = 0; t < string_count; ++t) {
      const StringColumn& c = string_cols[t];
      const uint32_t code = c.codes[i];
      if (c.remap != nullptr) {
        w.PutVarint64(c.remap[code]);
      } else {
        const uint64_t begin = c.offsets[code];
        w.PutLengthPrefixed(absl::string_view(c.data + begin, c.offsets[code + 1] - begin));
      }
    }
  }
  out = w;
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
      RETURN_IF_ERROR(fill(b, bw));
      entry.raw_size = entry.stored_size = static_cast<uint32_t>(bw.written());
      w.Skip(bw.written());
    } else {
      char* scratch = Scratch(raw_bounds[b]);
      coding::Writer bw(scratch, scratch + raw_bounds[b]);
      RETURN_IF_ERROR(fill(b, bw));
      const size_t raw = bw.written();
      entry.raw_size = entry.stored_size = static_cast<uint32_t>(raw);
      absl::StatusOr<size_t> stored =
          raw == 0 ? absl::StatusOr<size_t>(0)
                   : compression::ZstdCompressInto(absl::string_view(scratch, raw), o_.zstd_level,
                                                   w.position(), w.remaining(), o_.zstd_checksum);
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
  // Per-block bounds: sizes of the raw blocks (exact but for ints and
  // strings, bounded).
  std::vector<uint64_t>& bounds = s_.value_block_bounds;
  bounds.assign(blocks_, 0);
  for (size_t b = 0; BlockBoundsMatter() && b < blocks_; ++b) {
    const size_t end = std::min(n_, (b + 1) * size_t{block_items_});
    for (size_t i = b * block_items_; i < end; ++i) {
      bounds[b] += s_.shapes[s_.item_shape[i]].numbers_bound + s_.item_strings[i];
    }
  }
  s_.values_offset.resize(n_);
  for (size_t d = 0; d < shape_count_; ++d) PrepareColumns(s_.shapes[d]);
  return WriteBlocks(
      w, bounds, [&](size_t b) { return ValuesCandidate(b); },
      [&](size_t block, coding::Writer& bw) -> absl::Status {
        const size_t end = std::min(n_, (block + 1) * block_items_);
        // Runs of items of one shape (most blocks are one run).
        for (size_t i = block * block_items_; i < end;) {
          size_t j = i + 1;
          while (j < end && s_.item_shape[j] == s_.item_shape[i]) ++j;
          WriteRun(bw, i, j, s_.shapes[s_.item_shape[i]]);
          if (bw.written() > UINT32_MAX) {
            return absl::InvalidArgumentError("rankbin: a values block exceeds 4 GiB");
          }
          i = j;
        }
        return absl::OkStatus();
      });
}

absl::Status Encoder::WriteLogs(coding::Writer& w) {
  return WriteBlocks(
      w, s_.log_block_raw, [&](size_t) { return o_.compress_logs; },
      [&](size_t block, coding::Writer& bw) -> absl::Status {
        const size_t end = std::min(n_, (block + 1) * block_items_);
        for (size_t i = block * block_items_; i < end; ++i) {
          bw.PutLengthPrefixed(r_.log(i));
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<OwnedBuffer> Encoder::Encode() {
  n_ = r_.size();
  k_ = r_.key_count();
  if (n_ > UINT32_MAX) return absl::InvalidArgumentError("rankbin: too many items");
  block_items_ = std::max<uint32_t>(1, o_.block_items);
  blocks_ = (n_ + block_items_ - 1) / block_items_;
  Reset();
  RETURN_IF_ERROR(CheckKeys());
  RETURN_IF_ERROR(AssignShapes());
  values_total_ = 0;
  for (size_t i = 0; i < n_; ++i) values_total_ += s_.shapes[s_.item_shape[i]].numbers_bound;
  RETURN_IF_ERROR(DecideStrings());
  SizeLogs();
  for (uint64_t raw : s_.log_block_raw) {
    if (raw > UINT32_MAX) return absl::InvalidArgumentError("rankbin: a logs block exceeds 4 GiB");
  }

  size_t keys_bytes = coding::VarintLength(k_);
  for (uint32_t k = 0; k < k_; ++k) {
    keys_bytes += Serializer<KeyEntry>::Size(s_.key_code[k], r_.key(k).name, s_.strings[k].dict);
  }
  const size_t shapes_bytes = coding::VarintLength(shape_count_) + s_.shape_entries.size();
  // ITEMS: exact but for each record's values offset, bounded at 5 bytes.
  const size_t items_bound =
      coding::VarintLength(n_) + coding::VarintLength(block_items_) + 4 * n_ + records_bound_;
  const size_t block_directory = coding::VarintLength(blocks_) + blocks_ * kBlockEntryBytes;
  // VALUES: exact when raw but for ints (10 bytes each in the bound);
  // compressed blocks may take zstd's bound.
  const bool may_compress_values =
      o_.compress_values ||
      (o_.compress_string_values &&
       std::any_of(s_.values_long_strings.begin(), s_.values_long_strings.end(),
                   [](uint64_t n) { return n > 0; }));
  const size_t values_bound =
      block_directory +
      (may_compress_values ? values_total_ + (values_total_ >> 8) + 64 * blocks_ : values_total_);
  const size_t logs_bound = has_logs_ ? BlockSectionBound(s_.log_block_raw, o_.compress_logs) : 0;
  const int sections = has_logs_ ? 5 : 4;
  const size_t capacity = kHeaderSize + sections * kSectionHeaderSize + keys_bytes + shapes_bytes +
                          items_bound + values_bound + logs_bound;
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

absl::StatusOr<OwnedBuffer> WriteRankbin(const RankResult& result, const WriterOptions& options) {
  return Encoder(result, options).Encode();
}

}  // namespace rankwire::rankbin
