// The ranking service's output in plain C++ types: RankResult (below) holds
// the ranked items, each with an id, a score, a position, typed metrics and
// an optional log line, column by column. Codecs turn it into bytes and
// back; nothing here knows about protobuf.
//
// Metric keys are a table shared by all items (RankResult::keys()): a key
// has one type in a result and one Column of values. That is how a ranker
// produces them (a fixed output schema), it is what lets an encoder avoid
// hashing key strings per item, and it is what rankbin puts on the wire.
//
// MetricValue and RankedItem are one value and one item as owning copies,
// for reading a few items (a view's MaterializeItem) and for tests.
//
// Thread safety: plain values; const access from many threads is safe.
#ifndef RANKWIRE_CODEC_RANK_RESULT_H_
#define RANKWIRE_CODEC_RANK_RESULT_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rankwire {

// Numbering matches rank.v1.MetricType.
enum class MetricType : uint8_t {
  kInt = 1,     // int64
  kFloat = 2,   // IEEE-754 binary32
  kDouble = 3,  // IEEE-754 binary64
  kString = 4,  // UTF-8 text (not validated; bytes are kept as they are)
};

absl::string_view MetricTypeName(MetricType type);
// REQUIRES: nothing; returns nullopt for values outside the enum.
std::optional<MetricType> MetricTypeFromNumber(int number);

// A typed metric value in 12 bytes: a type tag and an 8-byte number, or a
// string (up to 10 bytes inline, longer ones in one heap block), so that a
// MetricEntry (key + value) is 16 bytes. Encoders walk tens of thousands of
// these per response and their cost is mostly reading them: this is a third
// of the memory a std::variant holding a std::string takes (48 bytes).
//
// Heap strings are immutable and shared by copies (an atomic reference
// count), so the 500 copies of a model version or an experiment bucket a
// result carries are one allocation, not 500. A decoder may place its
// heap strings in the chunks of a StringArena (below) instead of a block
// each.
class StringArena;

class MetricValue {
 public:
  MetricValue() { SetNumber(MetricType::kInt, int64_t{0}); }
  static MetricValue Int(int64_t v) { return MetricValue(MetricType::kInt, v); }
  static MetricValue Float(float v) { return MetricValue(MetricType::kFloat, v); }
  static MetricValue Double(double v) { return MetricValue(MetricType::kDouble, v); }
  static MetricValue String(absl::string_view v) {
    MetricValue m;
    m.SetString(v);
    return m;
  }

  MetricValue(const MetricValue& other) { CopyFrom(other); }
  MetricValue(MetricValue&& other) noexcept {
    std::memcpy(rep_, other.rep_, sizeof(rep_));
    other.rep_[1] = 0;  // Leaves `other` an inline value owning nothing.
  }
  MetricValue& operator=(const MetricValue& other) {
    if (this != &other) {
      Release();
      CopyFrom(other);
    }
    return *this;
  }
  MetricValue& operator=(MetricValue&& other) noexcept {
    if (this != &other) {
      Release();
      std::memcpy(rep_, other.rep_, sizeof(rep_));
      other.rep_[1] = 0;
    }
    return *this;
  }
  ~MetricValue() { Release(); }

  MetricType type() const { return static_cast<MetricType>(rep_[0]); }
  // REQUIRES: type() is the matching type.
  int64_t int_value() const { return Number<int64_t>(); }
  float float_value() const { return Number<float>(); }
  double double_value() const { return Number<double>(); }
  absl::string_view string_value() const {
    if (rep_[1] != kHeap) {
      return absl::string_view(reinterpret_cast<const char*>(rep_ + 2), rep_[1]);
    }
    const HeapString* block = Heap();
    return absl::string_view(block->bytes(), block->size & ~kInArena);
  }
  // Any numeric type as a double (strings give nullopt).
  std::optional<double> AsDouble() const;

  // Same type and same value; NaN equals NaN (bit patterns are not
  // compared, since the protobuf baseline prints every NaN as "nan").
  friend bool operator==(const MetricValue& a, const MetricValue& b);
  friend bool operator!=(const MetricValue& a, const MetricValue& b) { return !(a == b); }
  std::string DebugString() const;

 private:
  // rep_[0]: MetricType. rep_[1]: inline string length (0..10, the bytes at
  // rep_ + 2), or kHeap for a heap string whose HeapString pointer is at
  // rep_ + 4. Numbers live at rep_ + 4 (unaligned; read and written with
  // memcpy).
  friend class StringArena;
  static constexpr uint8_t kHeap = 0xff;
  static constexpr size_t kInlineMax = 10;
  static constexpr size_t kPayload = 4;

  template <typename T>
  MetricValue(MetricType type, T v) {
    SetNumber(type, v);
  }
  template <typename T>
  void SetNumber(MetricType type, T v) {
    rep_[0] = static_cast<uint8_t>(type);
    rep_[1] = 0;
    rep_[2] = rep_[3] = 0;
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(v));
    std::memcpy(rep_ + kPayload, &bits, sizeof(bits));
  }
  template <typename T>
  T Number() const {
    T v;
    std::memcpy(&v, rep_ + kPayload, sizeof(v));
    return v;
  }
  // An immutable string shared by the values that copy it; the bytes
  // follow the header in the same allocation.
  struct HeapString {
    std::atomic<uint64_t> refs;
    uint64_t size;  // With kInArena set for a block in a StringArena chunk.
    const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }
  };
  // A block in a StringArena chunk is a HeapString like any other (so the
  // inlined paths above and below do not change), preceded by a pointer to
  // its chunk, which counts the chunk's live blocks; ReleaseHeap tells them
  // apart by this bit of `size`.
  static constexpr uint64_t kInArena = uint64_t{1} << 63;
  struct ArenaChunk {
    std::atomic<uint64_t> live;
  };
  HeapString* Heap() const {
    HeapString* block;
    // The payload holds the pointer's bytes: its size is meant.
    // NOLINTNEXTLINE(bugprone-sizeof-expression)
    std::memcpy(&block, rep_ + kPayload, sizeof(block));
    return block;
  }
  void SetString(absl::string_view v);
  // Builds a heap block for `v` at `at` (sizeof(HeapString) + v.size()
  // bytes): one reference, `flags` (0 or kInArena) in its size.
  static HeapString* PlaceHeapString(char* at, absl::string_view v, uint64_t flags);
  // Makes this value the string in `block`, taking over one reference to
  // it. REQUIRES: the value owns no block.
  void SetHeap(HeapString* block) {
    rep_[0] = static_cast<uint8_t>(MetricType::kString);
    rep_[1] = kHeap;
    rep_[2] = rep_[3] = 0;
    // NOLINTNEXTLINE(bugprone-sizeof-expression): the pointer's bytes, on purpose.
    std::memcpy(rep_ + kPayload, &block, sizeof(block));
  }
  void CopyFrom(const MetricValue& other) {
    std::memcpy(rep_, other.rep_, sizeof(rep_));
    if (rep_[1] == kHeap) Heap()->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void Release() {
    if (rep_[1] == kHeap) ReleaseHeap(Heap());
  }
  static void ReleaseHeap(HeapString* block);
  // Drops `n` of `chunk`'s live blocks, freeing it at none.
  static void ReleaseChunk(ArenaChunk* chunk, uint64_t n);

  alignas(4) unsigned char rep_[12];
};
static_assert(sizeof(MetricValue) == 12, "MetricValue must stay 12 bytes");

// Builds long string values a few large chunks at a time, for a decoder
// that makes thousands of them in one go: one allocation per chunk instead
// of one per string, and the strings of consecutive items next to each
// other. Values from an arena behave as any MetricValue: copies share the
// bytes, and they may outlive the arena and cross threads. A chunk is freed
// when the last value placed in it (or a copy of one) is gone, so a single
// kept value holds its whole chunk (at most kChunkBytes).
//
// Thread safety: the arena itself is for one thread; its values are as
// thread-safe as any MetricValue.
class StringArena {
 public:
  // Chunks grow from kFirstChunkBytes to kChunkBytes; a string longer than
  // kChunkBytes / 8 gets a block of its own.
  static constexpr size_t kFirstChunkBytes = size_t{4} << 10;
  static constexpr size_t kChunkBytes = size_t{64} << 10;

  StringArena() = default;
  StringArena(const StringArena&) = delete;
  StringArena& operator=(const StringArena&) = delete;
  ~StringArena() { Seal(); }

  // A string value; short ones are inline, as MetricValue::String makes them.
  MetricValue String(absl::string_view v);

 private:
  // Gives the open chunk its real count: values placed in it may already
  // be gone (a chunk starts with a bias, so it cannot reach 0 before this).
  void Seal();

  MetricValue::ArenaChunk* chunk_ = nullptr;
  char* next_ = nullptr;
  char* end_ = nullptr;
  uint64_t placed_ = 0;
  size_t next_chunk_bytes_ = kFirstChunkBytes;
};

struct MetricKey {
  std::string name;
  MetricType type = MetricType::kDouble;
};

struct MetricEntry {
  uint32_t key = 0;  // Index into RankResult::keys().
  MetricValue value;
};
static_assert(sizeof(MetricEntry) == 16, "MetricEntry must stay 16 bytes");

// A metric value read from a result or a view: numbers by value, a string
// as a view of memory its source owns (valid while the RankResult or
// ResultView lives and is not changed).
class MetricRef {
 public:
  static MetricRef Int(int64_t v) { return MetricRef(MetricType::kInt, v, 0, {}); }
  static MetricRef Float(float v) { return MetricRef(MetricType::kFloat, 0, v, {}); }
  static MetricRef Double(double v) { return MetricRef(MetricType::kDouble, 0, v, {}); }
  static MetricRef String(absl::string_view v) { return MetricRef(MetricType::kString, 0, 0, v); }
  // A view of a model value; a string refers to `v`'s bytes.
  static MetricRef Of(const MetricValue& v);

  MetricType type() const { return type_; }
  int64_t int_value() const { return i_; }
  float float_value() const { return static_cast<float>(d_); }
  double double_value() const { return d_; }
  absl::string_view string_value() const { return s_; }
  // Numbers as double; nullopt for strings.
  std::optional<double> AsDouble() const;
  MetricValue ToValue() const;

  // As MetricValue's: same type and value, NaN equal to NaN.
  friend bool operator==(const MetricRef& a, const MetricRef& b);
  friend bool operator!=(const MetricRef& a, const MetricRef& b) { return !(a == b); }
  std::string DebugString() const;

 private:
  MetricRef(MetricType t, int64_t i, double d, absl::string_view s)
      : type_(t), i_(i), d_(d), s_(s) {}
  MetricType type_;
  int64_t i_;
  double d_;  // Holds floats exactly too.
  absl::string_view s_;
};

// One metric key's values over a result's items, typed: an int64, float or
// double per item, or for strings a 32-bit code per item into a table of
// entries (a dictionary when values repeat: a recall source, a bucket; one
// entry per item when they do not). Which items have a value is a bitmap;
// the slots of items without one hold unspecified values (a cleared result
// reuses its arrays without zeroing them).
//
// Columns belong to a RankResult and change only through it.
class Column {
 public:
  explicit Column(MetricType type) : type_(type) {}

  MetricType type() const { return type_; }
  // Whether item i has a value of this key.
  bool present(size_t i) const {
    return i < present_.size() * 64 && ((present_[i >> 6] >> (i & 63)) & 1) != 0;
  }
  // How many items have a value.
  size_t present_count() const { return present_count_; }
  // The presence bits, 64 items a word (bit i % 64 of word i / 64); there
  // may be fewer words than the result's items need (the rest: absent).
  absl::Span<const uint64_t> present_words() const { return present_; }

  // The values, one slot per item: the array of the column's type.
  const int64_t* ints() const { return ints_.data(); }
  const float* floats() const { return floats_.data(); }
  const double* doubles() const { return doubles_.data(); }
  const uint32_t* codes() const { return codes_.data(); }
  // String entries (codes index them).
  size_t entry_count() const { return entry_offsets_.empty() ? 0 : entry_offsets_.size() - 1; }
  absl::string_view entry(uint32_t e) const {
    return absl::string_view(entry_bytes_.data() + entry_offsets_[e],
                             entry_offsets_[e + 1] - entry_offsets_[e]);
  }
  // Bytes of all entries.
  size_t entry_bytes() const { return entry_bytes_.size(); }
  // Where each entry starts in the entries' bytes, and one past the last:
  // entry e is [offsets[e], offsets[e + 1]). For a loop over many.
  const uint64_t* entry_offsets() const { return entry_offsets_.data(); }
  const char* entry_data() const { return entry_bytes_.data(); }
  absl::string_view string_at(size_t i) const { return entry(codes_[i]); }
  // Item i's value. REQUIRES: present(i).
  MetricRef at(size_t i) const;

 private:
  friend class RankResult;
  void Resize(size_t items);
  void MarkPresent(size_t i) {
    uint64_t& word = present_[i >> 6];
    const uint64_t bit = uint64_t{1} << (i & 63);
    present_count_ += (word & bit) == 0;
    word |= bit;
  }
  void MarkAllPresent(size_t items);
  void Clear();

  MetricType type_;
  size_t slots_ = 0;  // Items the arrays below are sized for.
  std::vector<uint64_t> present_;
  size_t present_count_ = 0;
  std::vector<int64_t> ints_;
  std::vector<float> floats_;
  std::vector<double> doubles_;
  std::vector<uint32_t> codes_;
  std::string entry_bytes_;
  // entry_count() + 1 of them, from 0; none until the first entry (most
  // columns are numbers).
  std::vector<uint64_t> entry_offsets_;
};

// One item of a result, decoded whole into owning values (a copy: a view's
// MaterializeItem, RankResult::Item, or what AppendItem takes). Results do
// not keep their items this way; this is for reading a few items or
// building small results in tests and tools.
struct RankedItem {
  std::string item_id;
  double score = 0;
  uint32_t position = 0;  // 1-based rank.
  std::vector<MetricEntry> metrics;
  std::string log;  // Empty when logs are not inline.
};

// RankResult: a ranking's output, column by column. Items (rank order:
// item 0 has position 1) have an id, a score and a position in arrays of
// their own; every metric key is a Column of typed values; inline logs, if
// any, are one buffer. Building a result of n items and k keys allocates
// O(k) blocks, not O(n x k); Clear() keeps the memory for the next result.
//
// Metric keys are a table shared by all items: a key has one type, and an
// item has a value of some keys (an empty slot for the others). An item's
// metrics are read in key-table order; no other order is kept.
//
// Building, by cell (any order once the items exist):
//   RankResult r;
//   uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
//   size_t i = r.AddItem("sku-1", 0.9, 1);
//   r.SetDouble(i, ctr, 0.031);
// or by column, once every item is added (every item then has the key):
//   double* ctrs = r.MutableDoubles(ctr);
//   for (size_t i = 0; i < r.size(); ++i) ctrs[i] = ...;
// Reading:
//   const Column& c = r.column(ctr);
//   if (c.present(i)) use(c.doubles()[i]);
//
// Migration from the row model (RankResult{keys, items}, one RankedItem
// with a metrics vector per item): `r.items.push_back(item)` is
// r.AppendItem(item); `r.items[i]` is r.Item(i) (a copy) or the accessors
// id(i), score(i), position(i), log(i) and column(k).at(i); `r.keys` is
// r.keys(); `r.FindMetric(i, name)` returns an optional MetricRef. Codecs
// encode from columns and decoders fill them (MutableX, AddStringEntry).
//
// Thread safety: const access from many threads is safe; building is for
// one thread.
class RankResult {
 public:
  RankResult() = default;

  // Keys.
  // Appends a key and returns its index. REQUIRES: `name` is not a key yet.
  uint32_t AddKey(std::string name, MetricType type);
  absl::Span<const MetricKey> keys() const { return keys_; }
  size_t key_count() const { return keys_.size(); }
  const MetricKey& key(uint32_t k) const { return keys_[k]; }
  // Index of the key named `name`, if any. Linear; for tests and tools.
  std::optional<uint32_t> FindKey(absl::string_view name) const;
  const Column& column(uint32_t k) const { return columns_[k]; }

  // Items.
  size_t size() const { return scores_.size(); }
  bool empty() const { return scores_.empty(); }
  // Room for `items` items whose ids take `id_bytes` in all.
  void Reserve(size_t items, size_t id_bytes = 0);
  // Appends an item with no metrics; returns its index.
  size_t AddItem(absl::string_view id, double score, uint32_t position);
  // Appends `count` items with no metrics, the r-th at position r + 1 with
  // id ids[order[r]] and score scores[order[r]] (a ranking's output in rank
  // order, from columns in candidate order), in one step.
  void AddRankedItems(absl::Span<const absl::string_view> ids, const double* scores,
                      const uint32_t* order, size_t count);
  absl::string_view id(size_t i) const {
    const uint64_t begin = i == 0 ? 0 : id_ends_[i - 1];
    return absl::string_view(id_bytes_.data() + begin, id_ends_[i] - begin);
  }
  double score(size_t i) const { return scores_[i]; }
  uint32_t position(size_t i) const { return positions_[i]; }
  const double* scores() const { return scores_.data(); }
  const uint32_t* positions() const { return positions_.data(); }
  // Ids' bytes end to end, and where each ends.
  absl::string_view id_bytes() const { return id_bytes_; }

  // Inline logs: empty for items without one (and when logs are not inline).
  void SetLog(size_t i, absl::string_view log);
  absl::string_view log(size_t i) const {
    if (i >= log_spans_.size()) return {};
    return absl::string_view(log_bytes_.data() + log_spans_[i].offset, log_spans_[i].size);
  }
  bool has_logs() const { return has_logs_; }
  size_t log_bytes() const { return log_bytes_.size(); }

  // Cells. REQUIRES: item < size(), key < key_count(), the key's type.
  // Inline: a decoder sets hundreds of thousands of cells a second.
  void SetInt(size_t item, uint32_t key, int64_t v) { Cell(item, key).ints_[item] = v; }
  void SetFloat(size_t item, uint32_t key, float v) { Cell(item, key).floats_[item] = v; }
  void SetDouble(size_t item, uint32_t key, double v) { Cell(item, key).doubles_[item] = v; }
  void SetString(size_t item, uint32_t key, absl::string_view v) {
    SetStringCode(item, key, AddStringEntry(key, v));
  }
  // A string key's entries: AddStringEntry adds one (no search for an equal
  // one) and returns its code; SetStringCode gives an item that value.
  uint32_t AddStringEntry(uint32_t key, absl::string_view v);
  // AddStringEntry for each of `v` in order, in one call (a decoder adding
  // thousands: one call and one resize per batch, not per string); returns
  // the first one's code, the others' follow it.
  uint32_t AddStringEntries(uint32_t key, absl::Span<const absl::string_view> v);
  void SetStringCode(size_t item, uint32_t key, uint32_t code) {
    Cell(item, key).codes_[item] = code;
  }
  // Room for `entries` more entries of `bytes` bytes in all in a string
  // key's column (a decoder that knows about how many it will add).
  void ReserveStringBytes(uint32_t key, size_t entries, size_t bytes);
  // Any type, as its key says. InvalidArgument if `v`'s type is not the
  // key's, or item or key is out of range.
  absl::Status Set(size_t item, uint32_t key, const MetricRef& v);
  // Item `item`'s value of `key`, if it has one.
  std::optional<MetricRef> Get(size_t item, uint32_t key) const;
  std::optional<MetricRef> FindMetric(size_t item, absl::string_view name) const;

  // Whole columns, once every item is added: the key's array for all
  // size() items, every item marked as having the key. Values set before
  // are kept; the others are zero (string codes: 0).
  int64_t* MutableInts(uint32_t key);
  float* MutableFloats(uint32_t key);
  double* MutableDoubles(uint32_t key);
  uint32_t* MutableCodes(uint32_t key);
  // The same for a caller that writes every item's value: the array's
  // contents are unspecified until it does (no zeroing first; a reused
  // result's arrays hold the last result's values).
  int64_t* OverwriteInts(uint32_t key);
  float* OverwriteFloats(uint32_t key);
  double* OverwriteDoubles(uint32_t key);
  uint32_t* OverwriteCodes(uint32_t key);

  // Row form, for tests and tools: appends `item` (its metric keys index
  // keys(); InvalidArgument for a key out of range, a value of another
  // type, or a key twice), and copies item i out.
  absl::Status AppendItem(const RankedItem& item);
  RankedItem Item(size_t i) const;

  // Empties the result (keys too) and keeps its memory for the next one.
  void Clear();
  // Clear(), then these keys: their names are copied into the strings the
  // last keys had, so a result reused for the same schema allocates nothing.
  void ResetKeys(absl::Span<const MetricKey> keys);

 private:
  Column& Cell(size_t item, uint32_t key) {
    Column& c = columns_[key];
    const size_t items = item + 1 > size() ? item + 1 : size();
    if (items > c.slots_) c.Resize(items);
    c.MarkPresent(item);
    return c;
  }
  // The key's column sized for every item and all marked present; with
  // `zero`, the slots not present before are zeroed.
  Column& WholeColumn(uint32_t key, bool zero);
  void ClearItems();
  struct LogSpan {
    uint64_t offset = 0;
    uint32_t size = 0;
  };

  std::vector<MetricKey> keys_;
  std::vector<Column> columns_;
  std::string id_bytes_;
  std::vector<uint64_t> id_ends_;
  std::vector<double> scores_;
  std::vector<uint32_t> positions_;
  std::string log_bytes_;
  std::vector<LogSpan> log_spans_;
  bool has_logs_ = false;
};

// Checks the invariants every codec relies on: key names unique and types
// valid, string codes within their column's entries. InvalidArgument naming
// the first violation otherwise. (Types of values and keys agree by
// construction.)
absl::Status ValidateResult(const RankResult& result);

// Semantic equality: same key set (name and type, in any order), same items
// in the same order, same metrics per item (compared by key name, so key
// order does not matter), same logs. Returns an empty string when equal, otherwise a
// description of the first difference.
std::string DiffResults(const RankResult& a, const RankResult& b);

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_RANK_RESULT_H_
