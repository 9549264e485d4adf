// RankResult is the ranking service's output in plain C++ types: the ranked
// items, each with an id, a score, a position, typed metrics and a log line.
// Codecs turn it into bytes and back; nothing here knows about protobuf.
//
// Metric keys are a table shared by all items (RankResult::keys): an item's
// metric refers to its key by index, and a key has one type in a result. That
// is how a ranker produces them (a fixed output schema), it is what lets an
// encoder avoid hashing key strings per item, and it is what rankbin puts on
// the wire.
//
// Example:
//   RankResult r;
//   uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
//   RankedItem& item = r.items.emplace_back();
//   item.item_id = "sku-1";
//   item.metrics.push_back({ctr, MetricValue::Double(0.031)});
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
  friend bool operator!=(const MetricValue& a, const MetricValue& b) {
    return !(a == b);
  }
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
  uint32_t key = 0;  // Index into RankResult::keys.
  MetricValue value;
};
static_assert(sizeof(MetricEntry) == 16, "MetricEntry must stay 16 bytes");

struct RankedItem {
  std::string item_id;
  double score = 0;
  uint32_t position = 0;  // 1-based rank.
  std::vector<MetricEntry> metrics;
  std::string log;  // Empty when logs are not inline.
};

struct RankResult {
  std::vector<MetricKey> keys;
  std::vector<RankedItem> items;  // Rank order: items[0] has position 1.

  // Appends a key and returns its index. REQUIRES: `name` is not a key yet.
  uint32_t AddKey(std::string name, MetricType type);
  // Index of the key named `name`, if any. Linear; for tests and tools.
  std::optional<uint32_t> FindKey(absl::string_view name) const;
  // The value of metric `name` on item `item`, if present.
  const MetricValue* FindMetric(size_t item, absl::string_view name) const;
};

// Checks the invariants every codec relies on: key names unique, entry key
// indexes in range, each value of its key's type, no key twice in an item.
// InvalidArgument naming the first violation otherwise.
absl::Status ValidateResult(const RankResult& result);

// Semantic equality: same key set (name and type, in any order), same items
// in the same order, same metrics per item (in any order, compared by key
// name), same logs. Returns an empty string when equal, otherwise a
// description of the first difference.
std::string DiffResults(const RankResult& a, const RankResult& b);

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_RANK_RESULT_H_
