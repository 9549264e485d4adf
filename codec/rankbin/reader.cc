#include "codec/rankbin/reader.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "codec/coding.h"
#include "codec/compression.h"
#include "codec/rankbin/accepted_names.h"
#include "codec/rankbin/format.h"
#include "codec/rankbin/serializers.h"

namespace rankwire::rankbin {
namespace {

constexpr char kContext[] = "rankbin";
constexpr uint32_t kNone = UINT32_MAX;

// Two fields of a parsed key (RankbinView::Key), from its type code, for
// ParseKeys and ParseSimpleKeys alike: the value's fixed width (0 for
// varints and strings), and its code if its values may form a run (a
// double or a float, both known codes; 0 otherwise).
constexpr uint8_t FixedSizeOf(uint8_t code) {
  return static_cast<uint8_t>(ValueSerializer::FixedSize(code));
}
constexpr uint8_t RunCodeOf(uint8_t code) {
  return code == static_cast<uint8_t>(TypeCode::kDouble) ||
                 code == static_cast<uint8_t>(TypeCode::kFloat)
             ? code
             : 0;
}

// Per type code, for ParseSimpleKeys: whether it is a code of this version
// with no params (INT, FLOAT, DOUBLE, STRING), and its two fields above.
struct SimpleCode {
  bool simple = false;
  uint8_t fixed_size = 0;
  uint8_t run_code = 0;
};
constexpr std::array<SimpleCode, 256> MakeSimpleCodes() {
  std::array<SimpleCode, 256> codes{};
  for (TypeCode type : {TypeCode::kInt, TypeCode::kFloat, TypeCode::kDouble, TypeCode::kString}) {
    const auto code = static_cast<uint8_t>(type);
    codes[code] = {true, FixedSizeOf(code), RunCodeOf(code)};
  }
  return codes;
}
constexpr std::array<SimpleCode, 256> kSimpleCodes = MakeSimpleCodes();

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat(kContext, ": ", what));
}

// The view's one lock, taken to parse shapes and locate blocks on first
// use. Not absl::Mutex: Debian's Abseil is built without NDEBUG, so each
// absl::Mutex::Lock() and ~Mutex() also updates a process-wide deadlock
// graph under a global lock (perf: ~12% of a 4-key top-10 read went to
// GraphCycles and Mutex, for two uncontended mutexes per view). These
// critical sections are short and rarely contended.
class ABSL_LOCKABLE ViewMutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE ViewLock {
 public:
  explicit ViewLock(ViewMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~ViewLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  ViewLock(const ViewLock&) = delete;
  ViewLock& operator=(const ViewLock&) = delete;

 private:
  ViewMutex* const mu_;
};

// Runs a step once, for a view shared by threads; if the step throws (a
// failed allocation), the next call runs it again. absl::call_once
// (20220623) left its flag "running" when the body threw, so every later
// call waited forever; std::call_once retries, but glibc's pthread_once
// makes a futex syscall after every first run (+16 % on a rankbin-zstd
// top-10 read, which decompresses two blocks). Uncontended, this is an
// atomic load, and a lock only on the first call.
class RetryableOnce {
 public:
  template <typename F>
  void Call(F&& step) {
    if (done_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.load(std::memory_order_relaxed)) return;
    step();
    done_.store(true, std::memory_order_release);
  }
  // Whether a step has run to its end: what it wrote is then visible to
  // the caller (Call's release store), without the lock.
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> done_{false};
  std::mutex mu_;
};

// A varint of one to three bytes at p (below e), as Reader::Varint32 reads
// it; false (p unmoved) for a longer one or one cut short.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ShortVarint32(const char*& p, const char* e, uint32_t* v) {
  const ptrdiff_t left = e - p;
  if (ABSL_PREDICT_FALSE(left < 1)) return false;
  const uint32_t b0 = static_cast<uint8_t>(p[0]);
  if (b0 < 0x80) {
    *v = b0;
    p += 1;
    return true;
  }
  if (left < 2) return false;
  const uint32_t b1 = static_cast<uint8_t>(p[1]);
  if (b1 < 0x80) {
    *v = (b0 & 0x7f) | b1 << 7;
    p += 2;
    return true;
  }
  if (left < 3) return false;
  const uint32_t b2 = static_cast<uint8_t>(p[2]);
  if (b2 >= 0x80) return false;
  *v = (b0 & 0x7f) | (b1 & 0x7f) << 7 | b2 << 14;
  p += 3;
  return true;
}

// A varint at p (below e) as Reader::Varint64 reads it: 1 to 10 bytes, the
// 10th 0 or 1; false for anything the Reader would refuse.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ReadVarint64(const char*& p, const char* e, uint64_t* v) {
  if (ABSL_PREDICT_TRUE(p < e && static_cast<uint8_t>(*p) < 0x80)) {
    *v = static_cast<uint8_t>(*p++);
    return true;
  }
  // Two bytes (lengths of 128 B to 16 KB) inline too.
  if (ABSL_PREDICT_TRUE(e - p >= 2 && static_cast<uint8_t>(p[1]) < 0x80)) {
    *v = (static_cast<uint8_t>(p[0]) & 0x7fu) | uint64_t{static_cast<uint8_t>(p[1])} << 7;
    p += 2;
    return true;
  }
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && p < e; shift += 7) {
    const uint64_t byte = static_cast<uint8_t>(*p++);
    if (shift == 63 && byte > 1) return false;
    result |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      *v = result;
      return true;
    }
  }
  return false;
}

class RankbinView final : public ResultView {
 public:
  RankbinView(SharedBytes bytes, const ReaderOptions& options)
      : bytes_(std::move(bytes)), options_(options) {}

  absl::Status Parse();

  size_t size() const override { return n_; }
  absl::Span<const MetricKey> keys() const override;
  absl::StatusOr<ItemRef> Item(size_t i) const override;
  absl::StatusOr<std::vector<ItemRef>> TopN(size_t n) const override;
  absl::StatusOr<std::optional<MetricRef>> FindMetric(size_t i,
                                                      absl::string_view name) const override;
  absl::Status ForEachMetric(size_t i, MetricVisitor visit) const override;
  absl::StatusOr<std::optional<MetricRef>> FindMetricOf(const ItemRef& item,
                                                        absl::string_view name) const override;
  absl::Status ForEachMetricOf(const ItemRef& item, MetricVisitor visit) const override;
  absl::StatusOr<absl::string_view> Log(size_t i) const override;
  absl::StatusOr<RankResult> Materialize() const override;

 private:
  struct Key {
    uint8_t code = 0;
    // Precomputed: the value's fixed width (0 for varints and strings;
    // FindMetricAt sums them), and its code if it may be part of a run
    // (a double or float of a known key; 0 otherwise; shape parsing).
    uint8_t fixed_size = 0;
    uint8_t run_code = 0;
    absl::string_view name;
    uint32_t dict_begin = 0;
    uint32_t dict_size = 0;
    uint32_t model_index = kNone;  // Index in keys(); kNone for unknown types.
  };
  // One shape, parsed: per position, the key index, and how many
  // consecutive values from there are doubles (or floats) of known keys,
  // read as one bounds-checked run with no per-value dispatch (0 where no
  // such run starts). (A value's byte offset is summed by FindMetricAt.)
  struct Shape {
    uint32_t size = 0;
    std::unique_ptr<uint32_t[]> data;  // keys, runs: size each.
    const uint32_t* keys() const { return data.get(); }
    const uint32_t* runs() const { return data.get() + size; }
  };
  // A VALUES or LOGS block, located and checked; a zstd block is also
  // decompressed on first read, at most once (once, data, status).
  struct Block {
    BlockCodec codec = BlockCodec::kRaw;
    uint32_t stored_size = 0;
    uint32_t raw_size = 0;
    const char* stored = nullptr;
    mutable RetryableOnce once;
    mutable std::unique_ptr<char[]> data;
    mutable absl::Status status;
  };
  // Blocks are allocated in chunks as they are located, so a read of the
  // first items allocates one chunk whatever the payload's block count.
  static constexpr uint64_t kChunk = 8;
  // A VALUES or LOGS section. Open checks only the block count and that the
  // directory fits (a 5000-item payload has 313 blocks per column, and a
  // top-10 read needs the first). Entry b is checked, and block b located,
  // on the first read of block b, together with every entry before it: a
  // block's bytes start after those of every block before it. The lazy
  // fields are written under mu_; blocks [0, ready) are immutable
  // and read without the lock.
  struct Column {
    const char* name = "";
    bool present = false;
    uint64_t count = 0;
    const char* entries = nullptr;  // count entries of kBlockEntryBytes.
    size_t entries_base = 0;        // Offsets in the payload, for errors.
    absl::string_view data;         // Every block's stored bytes, in order.
    size_t data_base = 0;
    mutable std::atomic<uint64_t> ready{0};
    mutable size_t next = 0;      // Offset in data of block `ready`.
    mutable absl::Status status;  // The first error; every later read returns it.
    mutable std::unique_ptr<std::unique_ptr<Block[]>[]> chunks;
    const Block& at(uint64_t b) const { return chunks[b / kChunk][b % kChunk]; }
  };

  absl::Status ParseKeys(absl::string_view body, size_t base);
  // ParseKeys's common case, read in place from r: keys k, k + 1, ...
  // while each entry is a one-byte length, a type code of this version
  // with no params, and a name (so of at most 125 bytes, with a one-byte
  // length): what writers write for every key but a dictionary's.
  // Returns the first key it did not read (count when it read them all),
  // with r just before that key's entry. Through the Reader each entry
  // stored and reloaded its position, and one Open of a 3000-key payload
  // took ~16 µs.
  uint64_t ParseSimpleKeys(coding::Reader& r, uint64_t k, uint64_t count, uint32_t* model_index);
  // The other common entry, a dictionary key's (its type and name, then
  // its dictionary), read in place: the strings appended to dict_, and
  // key's code, name and dict_size set. False, with dict_ as it was, for
  // any other body, or one ReadBody would refuse (ReadBody reads those,
  // and gives the error). Through ReadBody, a dictionary was read into a
  // vector of its own and copied to dict_: two allocations per Open.
  bool ReadDictBody(absl::string_view body, Key* key);
  absl::Status ParseShapes(absl::string_view body, size_t base);
  absl::Status ParseItems(absl::string_view body, size_t base);
  absl::Status ParseColumn(absl::string_view body, size_t base, const char* name, Column* column);
  // Block b of `column`, located and checked (with every block before it)
  // on first use.
  absl::StatusOr<const Block*> GetBlock(const Column& column, uint64_t b) const {
    if (ABSL_PREDICT_TRUE(b < column.ready.load(std::memory_order_acquire))) {
      return &column.at(b);
    }
    return LocateBlock(column, b);
  }
  // GetBlock's first use of block b, out of line so that the common path
  // above stays a load and a compare.
  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<const Block*> LocateBlock(const Column& column,
                                                                   uint64_t b) const;
  absl::Status LocateBlocksUpTo(const Column& column, uint64_t b) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ItemRecord> Record(size_t i) const;
  ABSL_ATTRIBUTE_NOINLINE absl::Status DirectoryError(size_t i, size_t begin, size_t end) const;
  absl::StatusOr<absl::string_view> BlockData(const Column& column, size_t block) const;
  // Shape s, parsed (with every shape before it) on first use.
  absl::StatusOr<const Shape*> GetShape(uint32_t s) const {
    if (ABSL_PREDICT_TRUE(s < shapes_ready_.load(std::memory_order_acquire))) return &shapes_[s];
    return ParseShape(s);
  }
  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<const Shape*> ParseShape(uint32_t s) const;
  // The reads' common case, with no lock and no status: shape s if it is
  // parsed (else null), and block b's bytes if the block is located and
  // readable (raw, or decompressed without error; else false). Whatever
  // they decline, GetShape and BlockData do, with the error if any.
  const Shape* ReadyShape(uint32_t s) const {
    return ABSL_PREDICT_TRUE(s < shapes_ready_.load(std::memory_order_acquire)) ? &shapes_[s]
                                                                                : nullptr;
  }
  bool ReadyBlock(const Column& column, uint64_t b, absl::string_view* data) const {
    if (ABSL_PREDICT_FALSE(b >= column.ready.load(std::memory_order_acquire))) return false;
    const Block& block = column.at(b);
    if (ABSL_PREDICT_TRUE(block.codec == BlockCodec::kRaw)) {
      *data = absl::string_view(block.stored, block.raw_size);
      return true;
    }
    if (!block.once.done() || !block.status.ok()) return false;
    *data = absl::string_view(block.data.get(), block.raw_size);
    return true;
  }
  // Item i's block. (A 32-bit division: ITEMS, a section of at most 4 GB,
  // holds fewer than 2^28 items.)
  uint32_t BlockOf(size_t i) const { return static_cast<uint32_t>(i) / block_items_; }
  absl::Status ParseShapesUpTo(uint64_t s) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Item i's values, positioned at its first value, and its shape, from
  // its record's shape and values offset.
  absl::Status ValuesOf(size_t i, uint32_t shape_id, uint32_t values_offset, coding::Reader* out,
                        const Shape** shape) const;
  // The one decoder of an item's values: from r, one value per key of
  // `shape` into `sink` (sink.Double/Float/Int/String(model_index, v),
  // sink.DictString(model_index, key, index)); unknown types skipped.
  // Starts at position `first` of the shape (r at its value).
  template <typename Sink>
  bool DecodeValues(coding::Reader& r, const Shape& shape, Sink& sink, uint32_t first = 0) const;
  // ForEachMetricAt's common case: the values at *p (below e) by `shape`,
  // read in place and visited. Returns how many of the shape's positions
  // it visited, with *p after them; it stops, visiting nothing of it, at a
  // position DecodeValues would refuse (or whose bytes it leaves to
  // DecodeValues), which DecodeValues then reads from there.
  uint32_t VisitValues(const Shape& shape, const char** p, const char* e,
                       MetricVisitor visit) const;
  absl::Status ForEachMetricAt(size_t i, uint32_t shape_id, uint32_t values_offset,
                               MetricVisitor visit) const;
  // What ForEachMetricAt's common case declined: item i's values from
  // values_offset in its block, from position `first` of its shape on,
  // looked up and read through a Reader (with their errors).
  // The shape's first parse, or the block's first location (and
  // decompression), for ForEachMetricAt: a null shape on an error, which
  // VisitRest then meets again (each is kept) and returns.
  struct FoundValues {
    const Shape* shape = nullptr;
    absl::string_view block;
  };
  ABSL_ATTRIBUTE_NOINLINE FoundValues FirstLookUp(size_t i, uint32_t shape_id) const;
  ABSL_ATTRIBUTE_NOINLINE absl::Status VisitRest(size_t i, uint32_t shape_id,
                                                 uint32_t values_offset, uint32_t first,
                                                 MetricVisitor visit) const;
  absl::StatusOr<std::optional<MetricRef>> FindMetricAt(size_t i, uint32_t shape_id,
                                                        uint32_t values_offset,
                                                        absl::string_view name) const;
  // Materialize(): every record read first (ReadRecords), the items added
  // in one step, then each item's values and log, one block at a time.
  struct Budget;
  struct Records;
  void ReservePlainStrings(RankResult* result) const;
  // Record(i) for the common record (a one-byte id length, varints of at
  // most three bytes, the directory in order), read in place: false, and
  // nothing decided, for anything else, which Record(i) then reads.
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool ShortRecord(size_t i, ItemRecord* rec) const;
  // Record i: ShortRecord's in-place read, else Record(i) with its error.
  ABSL_ATTRIBUTE_ALWAYS_INLINE absl::Status ReadRecord(size_t i, ItemRecord* rec) const;
  // Records 0, 1, ... into `out` until one fails; returns how many were
  // read (n_ when all were).
  size_t ReadRecords(Records* out) const;
  // The values and logs of items [0, n_), in the order a reader of one
  // item at a time meets them (so a payload gives the error it always
  // gave): `read` records were read, record `read` fails. `uniform` is
  // every item's shape when they share one, else null.
  template <typename Sink>
  absl::Status MaterializeItems(const Records& records, size_t read, const Shape* uniform,
                                Budget* budget, Sink& sink) const;
  // The `read` records' items, into *result in one step where they are in
  // rank order.
  static void AddRecords(const Records& records, size_t read, RankResult* result);
  // MaterializeItems for items that all have shape `uniform`: its values
  // straight into whole columns, by a plan of the shape.
  absl::Status MaterializeUniform(const Records& records, size_t read, const Shape& uniform,
                                  Budget* budget, RankResult* result) const;
  // Per key of `result`, the whole array that a key of `uniform` fills
  // (null for the others).
  std::vector<void*> UniformColumns(const Shape& uniform, RankResult* result) const;
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
  // Names()'s check alone, for Materialize, which looks nothing up by name.
  absl::Status UniqueNames() const;
  // The keys a model sees (known types), in order, appended to `out`.
  void ModelKeys(std::vector<MetricKey>* out) const;
  mutable RetryableOnce names_once_;
  mutable absl::flat_hash_map<absl::string_view, uint32_t> by_name_;
  mutable absl::Status names_status_;
  mutable RetryableOnce model_keys_once_;
  mutable std::vector<MetricKey> model_keys_;

  // Guards the lazy parsing of SHAPES and of the block directories.
  mutable ViewMutex mu_;

  // SHAPES, parsed lazily: most readers of a top-N touch the first few
  // shapes, and a result whose items each carry a different subset of keys
  // has as many shapes as items. Shapes [0, shapes_ready_) are parsed and
  // immutable (shapes_ is sized once), so readers use them without the lock.
  absl::string_view shapes_body_;
  size_t shapes_base_ = 0;
  uint64_t shape_count_ = 0;
  size_t shapes_first_ = 0;  // Offset in shapes_body_ of the first shape.
  mutable std::atomic<uint64_t> shapes_ready_{0};
  // Offset in shapes_body_ of shape shapes_ready_; 0 until a shape is parsed.
  mutable size_t shapes_next_ ABSL_GUARDED_BY(mu_) = 0;
  mutable absl::Status shapes_status_ ABSL_GUARDED_BY(mu_);
  // IndexSetSerializer::Read's stamps, one per key, and the last stamp
  // given: ParseShapesUpTo's scratch, kept for the view's later shapes.
  mutable std::unique_ptr<uint32_t[]> shape_stamps_ ABSL_GUARDED_BY(mu_);
  mutable uint32_t shape_stamp_ ABSL_GUARDED_BY(mu_) = 0;
  // Room for every shape, each constructed when it is parsed: a result
  // whose items each have their own shape has as many shapes as items,
  // and a top-10 read parses ~10 of them (constructing and destroying all
  // 500 of shape (d)'s was ~5 % of its top-10 read).
  class ShapeSlots {
   public:
    ShapeSlots() = default;
    ShapeSlots(const ShapeSlots&) = delete;
    ShapeSlots& operator=(const ShapeSlots&) = delete;
    ~ShapeSlots() {
      for (size_t i = 0; i < constructed_; ++i) slots_[i].~Shape();
      if (slots_ != nullptr) std::allocator<Shape>().deallocate(slots_, capacity_);
    }
    bool allocated() const { return slots_ != nullptr; }
    void Allocate(size_t n) {
      slots_ = std::allocator<Shape>().allocate(n);
      capacity_ = n;
    }
    // Slot i, constructed first if it is the next one. Indexed rather than
    // "the next slot", so a parse that left early after constructing its
    // slot (an exception from an allocation) cannot shift later shapes
    // into the wrong slots: the retry gets the same slot again.
    Shape& Slot(size_t i) {
      assert(i <= constructed_ && i < capacity_);
      if (i == constructed_) {
        new (&slots_[i]) Shape();
        ++constructed_;
      }
      return slots_[i];
    }
    const Shape& operator[](size_t i) const { return slots_[i]; }

   private:
    Shape* slots_ = nullptr;
    size_t capacity_ = 0;
    size_t constructed_ = 0;
  };
  mutable ShapeSlots shapes_;

  uint8_t minor_ = 0;  // The payload's minor version.
  size_t n_ = 0;
  uint32_t block_items_ = 1;
  const char* offsets_ = nullptr;
  const char* records_ = nullptr;
  size_t records_size_ = 0;

  Column values_;
  Column logs_;
  // raw_size of every zstd block located so far, VALUES and LOGS together,
  // against options_.max_decoded_bytes.
  mutable uint64_t decoded_total_ ABSL_GUARDED_BY(mu_) = 0;
};

absl::Status RankbinView::Parse() {
  absl::string_view all = bytes_.view();
  if (all.size() < kHeaderSize) {
    return Corrupt(
        absl::StrCat("payload of ", all.size(), " bytes is shorter than the 8-byte header"));
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
  minor_ = static_cast<uint8_t>(all[5]);
  // Minor versions only add what a 1.x reader can skip (sections, trailing
  // fields, type codes); the section count covers the sections it adds too.
  const uint16_t section_count =
      static_cast<uint16_t>(static_cast<uint8_t>(all[6]) | (static_cast<uint8_t>(all[7]) << 8));
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
  if (absl::Status s = ParseColumn(sections[4], section_base[4], "VALUES", &values_); !s.ok()) {
    return s;
  }
  if (sections[5].data() != nullptr) {
    if (absl::Status s = ParseColumn(sections[5], section_base[5], "LOGS", &logs_); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

uint64_t RankbinView::ParseSimpleKeys(coding::Reader& r, uint64_t k, uint64_t count,
                                      uint32_t* model_index) {
  const char* p = r.position();
  const char* const end = p + r.remaining();
  uint32_t next_model = *model_index;
  for (; k < count; ++k) {
    // entry_length (one byte), type, name length (one byte), name: the
    // entry is exactly its type and name, of a type this reader knows and
    // that has no params. Anything else is left to ParseKeys.
    if (end - p < 3) break;
    const auto length = static_cast<uint8_t>(p[0]);
    const auto code = static_cast<uint8_t>(p[1]);
    const auto name_length = static_cast<uint8_t>(p[2]);
    if (length >= 0x80 || length != 2 + name_length || end - p - 1 < length) {
      break;
    }
    const SimpleCode& simple = kSimpleCodes[code];
    if (!simple.simple) break;
    Key& key = keys_[k];
    key.code = code;
    key.fixed_size = simple.fixed_size;
    key.run_code = simple.run_code;
    key.name = absl::string_view(p + 3, name_length);
    key.dict_begin = static_cast<uint32_t>(dict_.size());
    key.model_index = next_model++;
    p += 1 + length;
  }
  *model_index = next_model;
  r.Skip(static_cast<uint64_t>(p - r.position()), "key entry");
  return k;
}

bool RankbinView::ReadDictBody(absl::string_view body, Key* key) {
  const char* p = body.data();
  const char* const e = p + body.size();
  if (p == e || static_cast<uint8_t>(*p) != static_cast<uint8_t>(TypeCode::kStringDict)) {
    return false;
  }
  ++p;
  uint64_t name_size;
  uint64_t count;
  if (!ReadVarint64(p, e, &name_size) || name_size > static_cast<uint64_t>(e - p)) return false;
  const absl::string_view name(p, name_size);
  p += name_size;
  // As Reader::Count: each entry takes at least a byte.
  if (!ReadVarint64(p, e, &count) || count > static_cast<uint64_t>(e - p)) return false;
  const size_t first = dict_.size();
  if (dict_.capacity() < first + count) {
    dict_.reserve(std::max<size_t>(first + count, 2 * dict_.capacity()));
  }
  for (uint64_t d = 0; d < count; ++d) {
    uint64_t size;
    if (!ReadVarint64(p, e, &size) || size > static_cast<uint64_t>(e - p)) {
      dict_.resize(first);
      return false;
    }
    dict_.emplace_back(p, size);
    p += size;
  }
  key->code = static_cast<uint8_t>(TypeCode::kStringDict);
  key->name = name;
  key->dict_size = static_cast<uint32_t>(count);
  return true;
}

absl::Status RankbinView::ParseKeys(absl::string_view body, size_t base) {
  coding::Reader r(body, kContext, base);
  const uint64_t count = r.Count(Serializer<KeyEntry>::kMinBytes, "key count");
  if (!r.ok()) return r.status();
  keys_.resize(count);
  uint32_t model_index = 0;
  KeyEntry entry;
  for (uint64_t k = 0; k < count; ++k) {
    k = ParseSimpleKeys(r, k, count, &model_index);
    if (k == count) break;
    const absl::string_view entry_body = r.LengthPrefixed("key entry");
    if (!r.ok()) return r.status();
    Key& key = keys_[k];
    key.dict_begin = static_cast<uint32_t>(dict_.size());
    // Most entries are a type and a short name (ReadSimpleBody): read in
    // place, Open of a 200-key payload takes ~0.6x the time.
    if (!Serializer<KeyEntry>::ReadSimpleBody(entry_body, &key.code, &key.name) &&
        !ReadDictBody(entry_body, &key)) {
      Serializer<KeyEntry>::ReadBody(r, entry_body, &entry);
      if (!r.ok()) return r.status();
      key.code = entry.type_code;
      key.name = entry.name;
      key.dict_size = static_cast<uint32_t>(entry.dict.size());
      dict_.insert(dict_.end(), entry.dict.begin(), entry.dict.end());
    }
    if (!IsKnownWireClass(key.code)) {
      return Corrupt(
          absl::StrCat("key ", k, " (\"", key.name, "\") has reserved wire class ", key.code & 7));
    }
    if (ModelTypeOf(key.code)) key.model_index = model_index++;
    key.fixed_size = FixedSizeOf(key.code);
    key.run_code = RunCodeOf(key.code);
  }
  if (!r.empty()) return Corrupt(absl::StrCat(r.remaining(), " bytes after the last key"));
  return absl::OkStatus();
}

absl::Status RankbinView::ParseShapes(absl::string_view body, size_t base) {
  coding::Reader r(body, kContext, base);
  shape_count_ = r.Count(1, "shape count");
  if (!r.ok()) return r.status();
  shapes_body_ = body;
  shapes_base_ = base;
  shapes_first_ = body.size() - r.remaining();
  if (shape_count_ == 0 && !r.empty()) {
    return Corrupt(absl::StrCat(r.remaining(), " bytes after the last shape"));
  }
  return absl::OkStatus();
}

absl::StatusOr<const RankbinView::Shape*> RankbinView::ParseShape(uint32_t s) const {
  if (s >= shape_count_) {
    return Corrupt(absl::StrCat("shape ", s, " out of range (", shape_count_, " shapes)"));
  }
  ViewLock lock(&mu_);
  if (absl::Status st = ParseShapesUpTo(s); !st.ok()) return st;
  return &shapes_[s];
}

absl::Status RankbinView::ParseShapesUpTo(uint64_t s) const {
  uint64_t ready = shapes_ready_.load(std::memory_order_relaxed);
  if (s < ready) return absl::OkStatus();
  if (!shapes_status_.ok()) return shapes_status_;
  if (!shapes_.allocated()) shapes_.Allocate(shape_count_);
  if (shapes_next_ == 0) shapes_next_ = shapes_first_;
  coding::Reader r(shapes_body_.substr(shapes_next_), kContext, shapes_base_ + shapes_next_);
  if (shape_stamps_ == nullptr) shape_stamps_.reset(new uint32_t[keys_.size() + 1]());
  for (; ready <= s; ++ready) {
    // A shape that failed to parse is constructed too, but stops every
    // later call (shapes_status_).
    Shape& shape = shapes_.Slot(ready);
    // Stamps start at 0, so the first set gets 1; after 2^32 - 1 sets they
    // are cleared and counting starts again.
    if (++shape_stamp_ == 0) {
      std::fill_n(shape_stamps_.get(), keys_.size() + 1, 0u);
      shape_stamp_ = 1;
    }
    const uint64_t n = IndexSetSerializer::Read(
        r, static_cast<uint32_t>(keys_.size()), shape_stamps_.get(), shape_stamp_,
        [&shape](uint64_t count) {
          shape.data.reset(new uint32_t[2 * count + 1]);
          return shape.data.get();
        },
        "shape keys");
    if (!r.ok()) {
      shape.data.reset();
      return shapes_status_ = r.status();
    }
    shape.size = static_cast<uint32_t>(n);
    const uint32_t* keys = shape.data.get();
    uint32_t* out_runs = shape.data.get() + n;
    // Runs, computed backwards: a run continues while the code repeats.
    // (The run length stays in a register: read back from out_runs[j + 1],
    // each key waited on the previous key's store.)
    uint8_t next_code = 0;
    uint32_t run = 0;
    for (size_t j = n; j-- > 0;) {
      const uint8_t code = keys_[keys[j]].run_code;
      run = code == 0 ? 0 : code == next_code ? run + 1 : 1;
      out_runs[j] = run;
      next_code = code;
    }
    // The offset moves with the ready count, so an exception from a later
    // shape's allocation cannot leave it behind (the retry would parse
    // that shape from an earlier shape's bytes); and the last shape is
    // published only if nothing follows it, so the error sticks for every
    // reader, not just the one whose read parsed it.
    shapes_next_ = shapes_body_.size() - r.remaining();
    if (ready + 1 == shape_count_ && !r.empty()) {
      return shapes_status_ = Corrupt(absl::StrCat(r.remaining(), " bytes after the last shape"));
    }
    shapes_ready_.store(ready + 1, std::memory_order_release);
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
  // The directory is checked entry by entry as items are read (Record), so
  // opening a payload costs the same for 10 items as for 5000; a full
  // decode reads, and so checks, every entry.
  return absl::OkStatus();
}

absl::Status RankbinView::ParseColumn(absl::string_view body, size_t base, const char* name,
                                      Column* column) {
  coding::Reader r(body, kContext, base);
  const uint64_t blocks = r.Count(kBlockEntryBytes, "block count");
  if (!r.ok()) return r.status();
  const uint64_t expected = (uint64_t{n_} + block_items_ - 1) / block_items_;
  if (blocks != expected) {
    return Corrupt(absl::StrCat(name, " has ", blocks, " blocks; ", n_, " items in blocks of ",
                                block_items_, " need ", expected));
  }
  column->name = name;
  column->present = true;
  column->count = blocks;
  column->entries_base = r.offset();
  column->entries = r.Bytes(blocks * kBlockEntryBytes, "block directory").data();
  if (!r.ok()) return r.status();  // Count() has checked it fits; kept for safety.
  column->data_base = r.offset();
  column->data = absl::string_view(r.position(), r.remaining());
  return absl::OkStatus();
}

absl::StatusOr<const RankbinView::Block*> RankbinView::LocateBlock(const Column& column,
                                                                   uint64_t b) const {
  if (b >= column.count) {
    return Corrupt(
        absl::StrCat(column.name, " block ", b, " out of range (", column.count, " blocks)"));
  }
  ViewLock lock(&mu_);
  if (absl::Status s = LocateBlocksUpTo(column, b); !s.ok()) return s;
  return &column.at(b);
}

absl::Status RankbinView::LocateBlocksUpTo(const Column& column, uint64_t b) const {
  uint64_t ready = column.ready.load(std::memory_order_relaxed);
  if (b < ready) return absl::OkStatus();
  if (!column.status.ok()) return column.status;
  if (column.chunks == nullptr) {
    column.chunks.reset(new std::unique_ptr<Block[]>[(column.count + kChunk - 1) / kChunk]);
  }
  coding::Reader entries(absl::string_view(column.entries + ready * kBlockEntryBytes,
                                           (b + 1 - ready) * kBlockEntryBytes),
                         kContext, column.entries_base + ready * kBlockEntryBytes);
  coding::Reader data(column.data.substr(column.next), kContext, column.data_base + column.next);
  const char* name = column.name;
  for (; ready <= b; ++ready) {
    std::unique_ptr<Block[]>& chunk = column.chunks[ready / kChunk];
    if (chunk == nullptr) chunk.reset(new Block[std::min(kChunk, column.count - ready)]);
    BlockEntry e;
    Serializer<BlockEntry>::Read(entries, &e, "block entry");
    if (!entries.ok()) return column.status = entries.status();
    Block& block = chunk[ready % kChunk];
    block.stored_size = e.stored_size;
    block.raw_size = e.raw_size;
    if (e.codec == static_cast<uint8_t>(BlockCodec::kRaw)) {
      block.codec = BlockCodec::kRaw;
      if (e.raw_size != e.stored_size) {
        return column.status =
                   Corrupt(absl::StrCat(name, " block ", ready, " is raw but its sizes differ (",
                                        e.stored_size, " stored, ", e.raw_size, " raw)"));
      }
    } else if (e.codec == static_cast<uint8_t>(BlockCodec::kZstd)) {
      block.codec = BlockCodec::kZstd;
      decoded_total_ += e.raw_size;
      if (decoded_total_ > options_.max_decoded_bytes) {
        return column.status = absl::ResourceExhaustedError(
                   absl::StrCat(kContext, ": compressed blocks would decode to more than ",
                                options_.max_decoded_bytes, " bytes"));
      }
    } else {
      return column.status = Corrupt(absl::StrCat(name, " block ", ready, " has unknown codec ",
                                                  static_cast<int>(e.codec)));
    }
    if (block.stored_size > data.remaining()) {
      return column.status = Corrupt(absl::StrCat(name, " block ", ready, ": block data of ",
                                                  block.stored_size, " bytes at offset ",
                                                  data.offset(), " passes the end of its section (",
                                                  data.remaining(), " bytes left)"));
    }
    block.stored = data.Bytes(block.stored_size, "block data").data();
    // Moves with the ready count: a later chunk's allocation may throw.
    column.next = column.data.size() - data.remaining();
    column.ready.store(ready + 1, std::memory_order_release);
  }
  return absl::OkStatus();
}

absl::Status RankbinView::Names() const {
  names_once_.Call([this] {
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

absl::Status RankbinView::UniqueNames() const {
  // The last table that passed on this thread (AcceptedNames): a client
  // decodes one server's results, whose keys rarely change.
  thread_local AcceptedNames accepted;
  const auto key_at = [this](size_t k) {
    return AcceptedNames::Entry{keys_[k].name, static_cast<uint8_t>(keys_[k].model_index != kNone)};
  };
  if (accepted.Matches(keys_.size(), key_at)) return absl::OkStatus();
  accepted.Forget();
  if (absl::Status s = Names(); !s.ok()) return s;
  accepted.Remember(keys_.size(), key_at);
  return absl::OkStatus();
}

void RankbinView::ModelKeys(std::vector<MetricKey>* out) const {
  out->reserve(keys_.size());
  for (const Key& k : keys_) {
    if (k.model_index == kNone) continue;
    out->push_back(MetricKey{std::string(k.name), *ModelTypeOf(k.code)});
  }
}

absl::Span<const MetricKey> RankbinView::keys() const {
  model_keys_once_.Call([this] { ModelKeys(&model_keys_); });
  return model_keys_;
}

absl::Status RankbinView::DirectoryError(size_t i, size_t begin, size_t end) const {
  return Corrupt(absl::StrCat("item directory entries ", i, " and ", i + 1, " (", begin, ", ", end,
                              ") are out of order or past the records (", records_size_,
                              " bytes)"));
}

absl::StatusOr<ItemRecord> RankbinView::Record(size_t i) const {
  if (i >= n_) return OutOfRange(i);
  const uint32_t begin = coding::DecodeFixed32(offsets_ + 4 * i);
  const size_t end = i + 1 < n_ ? coding::DecodeFixed32(offsets_ + 4 * (i + 1)) : records_size_;
  if (ABSL_PREDICT_FALSE(begin > end || end > records_size_)) return DirectoryError(i, begin, end);
  coding::Reader r(absl::string_view(records_ + begin, end - begin), kContext,
                   Offset(records_ + begin));
  ItemRecord rec;
  Serializer<ItemRecord>::Read(r, &rec);
  if (!r.ok()) return r.status();
  return rec;
}

inline absl::Status RankbinView::ReadRecord(size_t i, ItemRecord* rec) const {
  if (ABSL_PREDICT_TRUE(i < n_ && ShortRecord(i, rec))) return absl::OkStatus();
  absl::StatusOr<ItemRecord> read = Record(i);
  if (!read.ok()) return read.status();
  *rec = *read;
  return absl::OkStatus();
}

absl::StatusOr<ItemRef> RankbinView::Item(size_t i) const {
  ItemRecord rec;
  if (absl::Status s = ReadRecord(i, &rec); !s.ok()) return s;
  return ItemRef(this, i, rec.id, rec.score, rec.position,
                 ItemRef::Cursor{rec.shape, rec.values_offset});
}

absl::StatusOr<std::vector<ItemRef>> RankbinView::TopN(size_t n) const {
  // Item(i)'s records, without a StatusOr per item.
  std::vector<ItemRef> out;
  const size_t count = std::min(n, n_);
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    ItemRecord rec;
    if (absl::Status s = ReadRecord(i, &rec); !s.ok()) return s;
    out.emplace_back(this, i, rec.id, rec.score, rec.position,
                     ItemRef::Cursor{rec.shape, rec.values_offset});
  }
  return out;
}

absl::StatusOr<absl::string_view> RankbinView::BlockData(const Column& column, size_t b) const {
  if (absl::string_view data; ReadyBlock(column, b, &data)) return data;
  absl::StatusOr<const Block*> located = GetBlock(column, b);
  if (!located.ok()) return located.status();
  const Block& block = **located;
  if (block.codec == BlockCodec::kRaw) {
    return absl::string_view(block.stored, block.raw_size);
  }
  block.once.Call([&] {
    const absl::string_view frame(block.stored, block.stored_size);
    // From version 1.1 every frame carries zstd's content checksum, which
    // the decompression verifies; a 1.0 payload's frames may lack it.
    block.status = compression::CheckBlockFrame(frame, block.raw_size, minor_ >= 1);
    if (block.status.ok()) {
      block.data.reset(new char[block.raw_size > 0 ? block.raw_size : 1]);
      block.status = compression::ZstdDecompressExact(frame, block.data.get(), block.raw_size);
    }
    if (!block.status.ok()) {
      block.status = Corrupt(absl::StrCat(column.name, " block ", b, ": ", block.status.message()));
      block.data.reset();
    }
  });
  if (!block.status.ok()) return block.status;
  return absl::string_view(block.data.get(), block.raw_size);
}

absl::Status RankbinView::ValuesOf(size_t i, uint32_t shape_id, uint32_t values_offset,
                                   coding::Reader* out, const Shape** shape) const {
  absl::string_view block;
  if (const Shape* ready = ReadyShape(shape_id);
      ABSL_PREDICT_TRUE(ready != nullptr && ReadyBlock(values_, BlockOf(i), &block) &&
                        values_offset <= block.size())) {
    *shape = ready;
    *out = coding::Reader(block.substr(values_offset), kContext, values_offset);
    return absl::OkStatus();
  }
  absl::StatusOr<const Shape*> found = GetShape(shape_id);
  if (!found.ok()) {
    return Corrupt(absl::StrCat("item ", i, ": ", found.status().message()));
  }
  *shape = *found;
  absl::StatusOr<absl::string_view> data = BlockData(values_, BlockOf(i));
  if (!data.ok()) return data.status();
  if (values_offset > data->size()) {
    return Corrupt(absl::StrCat("item ", i, " values offset ", values_offset,
                                " is past its block (", data->size(), " bytes)"));
  }
  // Offsets of decompressed blocks are relative to the block.
  *out = coding::Reader(data->substr(values_offset), kContext, values_offset);
  return absl::OkStatus();
}

template <typename Sink>
bool RankbinView::DecodeValues(coding::Reader& r, const Shape& shape, Sink& sink,
                               uint32_t first) const {
  const uint32_t* keys = shape.keys();
  const uint32_t* run = shape.runs();
  for (uint32_t j = first; j < shape.size;) {
    if (const uint32_t n = run[j]; n > 0) {
      // A run of doubles or floats: one bounds check, no per-value dispatch.
      const bool doubles = keys_[keys[j]].code == static_cast<uint8_t>(TypeCode::kDouble);
      const char* p = r.Bytes(uint64_t{n} * (doubles ? 8 : 4), "fixed-width values").data();
      if (!r.ok()) return false;
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t model_index = keys_[keys[j + k]].model_index;
        if (doubles) {
          double v;
          std::memcpy(&v, p + size_t{8} * k, 8);
          sink.Double(model_index, v);
        } else {
          float v;
          std::memcpy(&v, p + size_t{4} * k, 4);
          sink.Float(model_index, v);
        }
      }
      j += n;
      continue;
    }
    const Key& key = keys_[keys[j++]];
    if (key.model_index == kNone) {
      ValueSerializer::Skip(r, key.code);  // A type this reader does not know.
      if (!r.ok()) return false;
      continue;
    }
    // Binds the key to the sink for the one-value decoder.
    struct KeySink {
      Sink& sink;
      const Key& key;
      void Int(int64_t v) { sink.Int(key.model_index, v); }
      void Float(float v) { sink.Float(key.model_index, v); }
      void Double(double v) { sink.Double(key.model_index, v); }
      void String(absl::string_view v) { sink.String(key.model_index, v); }
      void DictString(uint32_t index) { sink.DictString(key.model_index, key, index); }
    } bound{sink, key};
    if (!ValueSerializer::Decode(r, key.code, key.dict_size, bound)) return false;
  }
  return true;
}

absl::Status RankbinView::ForEachMetric(size_t i, MetricVisitor visit) const {
  ItemRecord rec;
  if (absl::Status s = ReadRecord(i, &rec); !s.ok()) return s;
  return ForEachMetricAt(i, rec.shape, rec.values_offset, visit);
}

absl::Status RankbinView::ForEachMetricOf(const ItemRef& item, MetricVisitor visit) const {
  const ItemRef::Cursor& c = item.cursor();
  if (c.a == ItemRef::Cursor::kNone) return ForEachMetric(item.index(), visit);
  return ForEachMetricAt(item.index(), c.a, c.b, visit);
}

// One value of `key` (not a double or a float: those come in runs) at p,
// visited; false, p unmoved and nothing visited, for a value DecodeValues
// would refuse.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool VisitOne(uint8_t code, uint32_t model_index,
                                                  const absl::string_view* dict, uint32_t dict_size,
                                                  const char*& p, const char* e,
                                                  MetricVisitor visit) {
  const char* q = p;
  uint64_t v;
  if (model_index == kNone) {  // A type this reader does not know: skipped.
    switch (WireClassOf(code)) {
      case WireClass::kVarint:
        if (!ReadVarint64(q, e, &v)) return false;
        break;
      case WireClass::kFixed32:
      case WireClass::kFixed64:
        v = WireClassOf(code) == WireClass::kFixed32 ? 4 : 8;
        if (static_cast<uint64_t>(e - q) < v) return false;
        q += v;
        break;
      case WireClass::kBytes:
        if (!ReadVarint64(q, e, &v) || v > static_cast<uint64_t>(e - q)) return false;
        q += v;
        break;
      default:
        return false;
    }
    p = q;
    return true;
  }
  switch (static_cast<TypeCode>(code)) {
    case TypeCode::kInt:
      if (!ReadVarint64(q, e, &v)) return false;
      visit(model_index, MetricRef::Int(coding::ZigZagDecode64(v)));
      break;
    case TypeCode::kString:
      if (!ReadVarint64(q, e, &v) || v > static_cast<uint64_t>(e - q)) return false;
      visit(model_index, MetricRef::String(absl::string_view(q, v)));
      q += v;
      break;
    case TypeCode::kStringDict:
      if (!ReadVarint64(q, e, &v) || v >= dict_size) return false;
      visit(model_index, MetricRef::String(dict[v]));
      break;
    default:
      return false;
  }
  p = q;
  return true;
}

uint32_t RankbinView::VisitValues(const Shape& shape, const char** at, const char* e,
                                  MetricVisitor visit) const {
  // In locals: the visitor may write anywhere, so members would be loaded
  // again after every call.
  const Key* const key_table = keys_.data();
  const absl::string_view* const dict = dict_.data();
  const uint32_t* const keys = shape.keys();
  const uint32_t* const run = shape.runs();
  const uint32_t size = shape.size;
  const char* p = *at;
  uint32_t j = 0;
  while (j < size) {
    const Key& key = key_table[keys[j]];
    if (const uint32_t n = run[j]; n > 0) {
      // A run of doubles or floats: one bounds check, as DecodeValues's.
      const bool doubles = key.code == static_cast<uint8_t>(TypeCode::kDouble);
      const uint64_t width = doubles ? 8 : 4;
      if (static_cast<uint64_t>(e - p) < width * n) break;
      for (const uint32_t end = j + n; j < end; ++j, p += width) {
        const uint32_t model_index = key_table[keys[j]].model_index;
        if (doubles) {
          double v;
          std::memcpy(&v, p, 8);
          visit(model_index, MetricRef::Double(v));
        } else {
          float v;
          std::memcpy(&v, p, 4);
          visit(model_index, MetricRef::Float(v));
        }
      }
      continue;
    }
    if (!VisitOne(key.code, key.model_index, dict + key.dict_begin, key.dict_size, p, e, visit)) {
      break;
    }
    ++j;
  }
  *at = p;
  return j;
}

absl::Status RankbinView::ForEachMetricAt(size_t i, uint32_t shape_id, uint32_t values_offset,
                                          MetricVisitor visit) const {
  // The common case: the shape parsed, the block located (and decompressed),
  // the values read in place: no Reader, no status. The positions it
  // visited are not visited again: VisitRest reads the rest, if any, from
  // where it stopped, for the error it would have given.
  const Shape* shape = ReadyShape(shape_id);
  absl::string_view block;
  if (ABSL_PREDICT_FALSE(shape == nullptr || !ReadyBlock(values_, BlockOf(i), &block))) {
    // (Returned by value: an address passed out of line would keep shape
    // and block in memory for the whole read.)
    const FoundValues found = FirstLookUp(i, shape_id);
    if (found.shape == nullptr) return VisitRest(i, shape_id, values_offset, 0, visit);
    shape = found.shape;
    block = found.block;
  }
  if (ABSL_PREDICT_TRUE(values_offset <= block.size())) {
    const char* p = block.data() + values_offset;
    const uint32_t done = VisitValues(*shape, &p, block.data() + block.size(), visit);
    if (ABSL_PREDICT_TRUE(done == shape->size)) return absl::OkStatus();
    return VisitRest(i, shape_id, static_cast<uint32_t>(p - block.data()), done, visit);
  }
  return VisitRest(i, shape_id, values_offset, 0, visit);
}

RankbinView::FoundValues RankbinView::FirstLookUp(size_t i, uint32_t shape_id) const {
  absl::StatusOr<const Shape*> shape = GetShape(shape_id);
  if (!shape.ok()) return {};
  absl::StatusOr<absl::string_view> block = BlockData(values_, BlockOf(i));
  if (!block.ok()) return {};
  return {*shape, *block};
}

absl::Status RankbinView::VisitRest(size_t i, uint32_t shape_id, uint32_t values_offset,
                                    uint32_t first, MetricVisitor visit) const {
  coding::Reader r(absl::string_view(), kContext);
  const Shape* shape = nullptr;
  if (absl::Status s = ValuesOf(i, shape_id, values_offset, &r, &shape); !s.ok()) return s;
  struct VisitSink {
    MetricVisitor visit;
    const RankbinView* view;
    void Int(uint32_t m, int64_t v) { visit(m, MetricRef::Int(v)); }
    void Float(uint32_t m, float v) { visit(m, MetricRef::Float(v)); }
    void Double(uint32_t m, double v) { visit(m, MetricRef::Double(v)); }
    void String(uint32_t m, absl::string_view v) { visit(m, MetricRef::String(v)); }
    void DictString(uint32_t m, const Key& key, uint32_t index) {
      visit(m, MetricRef::String(view->dict_[key.dict_begin + index]));
    }
  } sink{visit, this};
  if (!DecodeValues(r, *shape, sink, first)) return r.status();
  return absl::OkStatus();
}

absl::StatusOr<std::optional<MetricRef>> RankbinView::FindMetric(size_t i,
                                                                 absl::string_view name) const {
  ItemRecord rec;
  if (absl::Status s = ReadRecord(i, &rec); !s.ok()) return s;
  return FindMetricAt(i, rec.shape, rec.values_offset, name);
}

absl::StatusOr<std::optional<MetricRef>> RankbinView::FindMetricOf(const ItemRef& item,
                                                                   absl::string_view name) const {
  const ItemRef::Cursor& c = item.cursor();
  if (c.a == ItemRef::Cursor::kNone) return FindMetric(item.index(), name);
  return FindMetricAt(item.index(), c.a, c.b, name);
}

absl::StatusOr<std::optional<MetricRef>> RankbinView::FindMetricAt(size_t i, uint32_t shape_id,
                                                                   uint32_t values_offset,
                                                                   absl::string_view name) const {
  if (absl::Status s = Names(); !s.ok()) return s;
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  const uint32_t key = it->second;
  coding::Reader r(absl::string_view(), kContext);
  const Shape* shape = nullptr;
  if (absl::Status s = ValuesOf(i, shape_id, values_offset, &r, &shape); !s.ok()) return s;
  // The value's offset is summed on the way to it while every value before
  // it is fixed-width (kNone from the first that is not): computed per
  // lookup, which walks those keys anyway, rather than stored per shape
  // position when the shape is parsed (a third of parsing a shape, which
  // a top-N read of sparse items does once per item).
  const uint32_t* keys = shape->keys();
  uint32_t j = 0;
  uint32_t fixed = 0;
  for (; j < shape->size && keys[j] != key; ++j) {
    const uint32_t width = keys_[keys[j]].fixed_size;
    fixed = (fixed == kNone || width == 0) ? kNone : fixed + width;
  }
  if (j == shape->size) return std::nullopt;
  if (fixed != kNone) {
    r.Skip(fixed, "value");
  } else {
    for (uint32_t p = 0; p < j && r.ok(); ++p) ValueSerializer::Skip(r, keys_[keys[p]].code);
  }
  const Key& k = keys_[key];
  MetricRef value = MetricRef::Int(0);
  if (!r.ok() ||
      !ValueSerializer::Read(r, k.code, dict_.data() + k.dict_begin, k.dict_size, &value)) {
    return r.status();
  }
  return value;
}

absl::StatusOr<absl::string_view> RankbinView::Log(size_t i) const {
  if (i >= n_) return OutOfRange(i);
  if (!logs_.present) return absl::string_view();
  absl::StatusOr<absl::string_view> data = BlockData(logs_, BlockOf(i));
  if (!data.ok()) return data.status();
  coding::Reader r(*data, kContext);
  for (size_t skip = i % block_items_; skip > 0; --skip) r.LengthPrefixed("log");
  absl::string_view log = r.LengthPrefixed("log");
  if (!r.ok()) return r.status();
  return log;
}

// Items may share value runs in a hostile payload, so the model can be far
// larger than the payload: Materialize counts what it builds against a cap.
struct RankbinView::Budget {
  uint64_t used = 0;
  uint64_t cap = 0;
  absl::Status Add(uint64_t n) {
    if (ABSL_PREDICT_TRUE(!Over(n))) return absl::OkStatus();
    return Error();
  }
  // Adds n; whether the total is now past the cap.
  bool Over(uint64_t n) {
    used += n;
    return used > cap;
  }
  absl::Status Error() const {
    return absl::ResourceExhaustedError(
        absl::StrCat(kContext, ": the result would materialize to more than ", cap, " bytes"));
  }
};

// Every item's record, read before any value: the ids, scores and
// positions go into the result in one step.
// (Arrays left uninitialized until read: zeroing them first was a tenth of
// a 4-key decode's instructions.)
struct RankbinView::Records {
  explicit Records(size_t n)
      : ids(static_cast<absl::string_view*>(::operator new(sizeof(absl::string_view) * n))),
        scores(new double[n]),
        numbers(new uint32_t[3 * n]),
        positions(numbers.get()),
        shapes(numbers.get() + n),
        values_offsets(numbers.get() + 2 * n) {}
  Records(const Records&) = delete;
  Records& operator=(const Records&) = delete;
  ~Records() { ::operator delete(ids); }

  absl::string_view* const ids;  // Placed as they are read.
  const std::unique_ptr<double[]> scores;
  const std::unique_ptr<uint32_t[]> numbers;
  uint32_t* const positions;
  uint32_t* const shapes;
  uint32_t* const values_offsets;
  bool ranked = true;     // Every position is its index + 1.
  bool one_shape = true;  // Every item names shape shapes[0].
};

inline bool RankbinView::ShortRecord(size_t i, ItemRecord* rec) const {
  const uint32_t begin = coding::DecodeFixed32(offsets_ + 4 * i);
  const size_t end = i + 1 < n_ ? coding::DecodeFixed32(offsets_ + 4 * (i + 1)) : records_size_;
  if (ABSL_PREDICT_FALSE(begin > end || end > records_size_)) return false;
  const char* p = records_ + begin;
  const char* const e = records_ + end;
  // id length, id, score, and the three varints' first bytes.
  if (ABSL_PREDICT_FALSE(p == e)) return false;
  const auto id_size = static_cast<uint8_t>(p[0]);
  if (ABSL_PREDICT_FALSE(id_size >= 0x80 || e - p < 1 + id_size + 8 + 3)) return false;
  rec->id = absl::string_view(p + 1, id_size);
  p += 1 + id_size;
  std::memcpy(&rec->score, p, 8);
  p += 8;
  return ShortVarint32(p, e, &rec->position) && ShortVarint32(p, e, &rec->shape) &&
         ShortVarint32(p, e, &rec->values_offset);
}

size_t RankbinView::ReadRecords(Records* out) const {
  bool ranked = true;
  bool one_shape = true;
  size_t i = 0;
  for (; i < n_; ++i) {
    ItemRecord rec;
    if (ABSL_PREDICT_FALSE(!ShortRecord(i, &rec))) {
      absl::StatusOr<ItemRecord> read = Record(i);
      if (!read.ok()) break;  // MaterializeItems reads it again, in its turn.
      rec = *read;
    }
    new (&out->ids[i]) absl::string_view(rec.id);
    out->scores[i] = rec.score;
    out->positions[i] = rec.position;
    out->shapes[i] = rec.shape;
    out->values_offsets[i] = rec.values_offset;
    ranked = ranked && rec.position == i + 1;
    one_shape = one_shape && rec.shape == out->shapes[0];
  }
  out->ranked = ranked;
  out->one_shape = one_shape;
  return i;
}

// Values into the result's columns cell by cell (any shapes).
struct CellSink {
  RankResult* out;
  size_t item = 0;
  uint64_t string_bytes = 0;
  // No plan: every item goes through DecodeValues.
  bool Decode(const char* /*p*/, const char* /*e*/) { return false; }
  void ItemDone() {}
  void Flush() {}
  void Int(uint32_t m, int64_t v) { out->SetInt(item, m, v); }
  void Float(uint32_t m, float v) { out->SetFloat(item, m, v); }
  void Double(uint32_t m, double v) { out->SetDouble(item, m, v); }
  void String(uint32_t m, absl::string_view v) {
    string_bytes += v.size();
    out->SetString(item, m, v);
  }
  template <typename Key>
  void DictString(uint32_t m, const Key& /*key*/, uint32_t index) {
    out->SetStringCode(item, m, index);
  }
};

// Values straight into the columns' arrays, for a result whose items all
// have one shape: its keys' columns are whole (every item has them), so
// no cell needs its presence bit or a size check. columns[m] is key m's
// array (Overwrite*), of its type.
//
// Decode() reads an item's values by a plan made once from the shape (a
// step per value: what it is and where it goes), from raw pointers: per
// item, the Reader's construction and status checks and the per-key
// lookups of DecodeValues were most of a 4-key item's values. It refuses
// what DecodeValues refuses and nothing more, and says only whether it
// succeeded: on false, the caller decodes the item again with
// DecodeValues, for its precise error.
struct ArraySink {
  enum class Op : uint8_t {
    kDoubles,  // `count` doubles (1, or a run of the shape's): this step's
               // and the next count - 1 steps'.
    kFloats,   // The same for floats.
    kInt,
    kString,
    kDict,
    kSkipVarint,  // Keys of unknown types, by wire class.
    kSkip4,
    kSkip8,
    kSkipBytes,
  };
  struct Step {
    Op op;
    uint32_t count;  // kDoubles, kFloats.
    uint32_t model_index;
    uint32_t dict_size;  // kDict.
    uint32_t slot;       // kString: its strings' row in `staged`.
    void* column;        // The key's array; null for skipped values.
  };
  // Plain strings are staged, kStage items of each string key at a time,
  // and added to their keys in one AddStringEntries call per key (one
  // resize, then the copies). One AddStringEntry per string (a call, and
  // std::string::append's and push_back's checks: ~60 instructions besides
  // the copy) was a sixth of decoding 500 items of six 150-300 B strings;
  // batched, that decode took 0.73x the time (more than the instructions
  // saved: the batch's resize writes the destination lines just before the
  // copies do, docs/bench-notes/2026-12-07-decode-shapes.md).
  static constexpr size_t kStage = 64;

  RankResult* out;
  void* const* columns;
  const Step* steps = nullptr;
  size_t step_count = 0;
  const uint32_t* string_steps = nullptr;  // The kString steps' indexes.
  size_t string_step_count = 0;
  absl::string_view* staged = nullptr;  // kStage per string step.
  size_t staged_items = 0;              // Items staged, from staged_first.
  size_t staged_first = 0;
  size_t item = 0;
  uint64_t string_bytes = 0;

  bool Decode(const char* p, const char* e) {
    // In locals, and stored as typed values: through the members (or with
    // memcpy into the columns, which may alias anything) every value
    // reloaded the plan, the item and the step after the store before it.
    const Step* const plan = steps;
    const size_t count = step_count;
    const size_t at = item;
    uint64_t bytes = 0;
    for (size_t j = 0; j < count; ++j) {
      const Step& s = plan[j];
      uint64_t v;
      switch (s.op) {
        case Op::kDoubles:
          if (ABSL_PREDICT_FALSE(!ReadNumbers<double>(plan + j, at, &p, e))) return false;
          j += s.count - 1;
          break;
        case Op::kFloats:
          if (ABSL_PREDICT_FALSE(!ReadNumbers<float>(plan + j, at, &p, e))) return false;
          j += s.count - 1;
          break;
        case Op::kInt:
          if (ABSL_PREDICT_FALSE(!ReadVarint64(p, e, &v))) return false;
          static_cast<int64_t*>(s.column)[at] = coding::ZigZagDecode64(v);
          break;
        case Op::kString:
          if (ABSL_PREDICT_FALSE(!ReadVarint64(p, e, &v) || v > static_cast<uint64_t>(e - p))) {
            return false;
          }
          bytes += v;
          staged[s.slot * kStage + staged_items] = absl::string_view(p, v);
          p += v;
          break;
        case Op::kDict:
          if (ABSL_PREDICT_FALSE(!ReadVarint64(p, e, &v) || v >= s.dict_size)) return false;
          static_cast<uint32_t*>(s.column)[at] = static_cast<uint32_t>(v);
          break;
        case Op::kSkipVarint:
          if (ABSL_PREDICT_FALSE(!ReadVarint64(p, e, &v))) return false;
          break;
        case Op::kSkip4:
        case Op::kSkip8: {
          const ptrdiff_t n = s.op == Op::kSkip4 ? 4 : 8;
          if (ABSL_PREDICT_FALSE(e - p < n)) return false;
          p += n;
          break;
        }
        case Op::kSkipBytes:
          if (ABSL_PREDICT_FALSE(!ReadVarint64(p, e, &v) || v > static_cast<uint64_t>(e - p))) {
            return false;
          }
          p += v;
          break;
      }
    }
    string_bytes = bytes;
    return true;
  }
  // After Decode() succeeded for `item`: its strings are staged.
  void ItemDone() {
    if (string_step_count == 0) return;
    if (staged_items == 0) staged_first = item;
    if (++staged_items == kStage) Flush();
  }
  // Adds the staged strings to their keys, and their codes to the items.
  void Flush() {
    if (staged_items == 0) return;
    for (size_t k = 0; k < string_step_count; ++k) {
      const Step& s = steps[string_steps[k]];
      const uint32_t first = out->AddStringEntries(
          s.model_index, absl::MakeConstSpan(staged + s.slot * kStage, staged_items));
      uint32_t* codes = static_cast<uint32_t*>(s.column) + staged_first;
      for (size_t j = 0; j < staged_items; ++j) codes[j] = first + static_cast<uint32_t>(j);
    }
    staged_items = 0;
  }
  // The run of `run->count` fixed-width values at *p into item `at` of
  // the run's steps' columns, after one bounds check for the run (as
  // DecodeValues makes); false if the bytes end first.
  template <typename T>
  static bool ReadNumbers(const Step* run, size_t at, const char** p, const char* e) {
    const uint32_t n = run->count;
    const char* q = *p;
    if (static_cast<uint64_t>(e - q) < uint64_t{sizeof(T)} * n) return false;
    for (uint32_t k = 0; k < n; ++k, q += sizeof(T)) {
      T v;
      std::memcpy(&v, q, sizeof(T));
      static_cast<T*>(run[k].column)[at] = v;
    }
    *p = q;
    return true;
  }

  // DecodeValues's sink, for an item Decode() refused.
  void Int(uint32_t m, int64_t v) { static_cast<int64_t*>(columns[m])[item] = v; }
  void Float(uint32_t m, float v) { static_cast<float*>(columns[m])[item] = v; }
  void Double(uint32_t m, double v) { static_cast<double*>(columns[m])[item] = v; }
  void String(uint32_t m, absl::string_view v) {
    string_bytes += v.size();
    static_cast<uint32_t*>(columns[m])[item] = out->AddStringEntry(m, v);
  }
  template <typename Key>
  void DictString(uint32_t m, const Key& /*key*/, uint32_t index) {
    static_cast<uint32_t*>(columns[m])[item] = index;
  }
};

absl::StatusOr<RankResult> RankbinView::Materialize() const {
  if (absl::Status s = UniqueNames(); !s.ok()) return s;
  RankResult result;
  // Built here, not copied from keys() (which a full decode never needs).
  std::vector<MetricKey> keys;
  ModelKeys(&keys);
  // The columns take a slot per item and key, whatever the items carry;
  // counted before they exist, so a hostile payload (many items, many
  // keys, few values) cannot make them huge.
  Budget budget{0, options_.max_materialized_bytes};
  if (absl::Status s = budget.Add(uint64_t{n_} * (keys.size() * 8 + 24)); !s.ok()) return s;
  for (MetricKey& k : keys) result.AddKey(std::move(k.name), k.type);
  result.Reserve(n_, 0);
  // A dictionary key's entries are its dictionary: an item's value is its
  // index, no string is copied per item.
  for (const Key& k : keys_) {
    if (k.model_index == kNone || k.dict_size == 0) continue;
    for (uint32_t d = 0; d < k.dict_size; ++d) {
      result.AddStringEntry(k.model_index, dict_[k.dict_begin + d]);
    }
  }
  // Locate every block up front, in one pass under the lock per column (and
  // so check the whole directories and the zstd cap before decoding any).
  for (const Column* column : {&values_, &logs_}) {
    if (column->present && column->count > 0) {
      if (absl::StatusOr<const Block*> last = GetBlock(*column, column->count - 1); !last.ok()) {
        return last.status();
      }
    }
  }
  ReservePlainStrings(&result);
  // The records first, into the result in one step (a record that fails
  // stops them; its error comes when the items before it are done). Per
  // item, adding it alone cost more than reading its record.
  Records records(n_);
  const size_t read = ReadRecords(&records);
  AddRecords(records, read, &result);
  // Items of one shape (what writers write for a result whose items carry
  // the same keys) fill whole columns; a shape that fails to parse is left
  // to MaterializeItems, which reports it at the first item.
  const Shape* uniform = nullptr;
  if (read == n_ && n_ > 0 && records.one_shape) {
    absl::StatusOr<const Shape*> shape = GetShape(records.shapes[0]);
    if (shape.ok()) uniform = *shape;
  }
  if (uniform != nullptr) {
    if (absl::Status s = MaterializeUniform(records, read, *uniform, &budget, &result); !s.ok()) {
      return s;
    }
  } else {
    CellSink sink{&result};
    if (absl::Status s = MaterializeItems(records, read, nullptr, &budget, sink); !s.ok()) {
      return s;
    }
  }
  // Every shape is read by now unless no item names the last ones: parse
  // them too, so a full decode checks the whole section.
  if (shape_count_ > 0) {
    if (absl::StatusOr<const Shape*> last = GetShape(static_cast<uint32_t>(shape_count_ - 1));
        !last.ok()) {
      return last.status();
    }
  }
  return result;
}

void RankbinView::AddRecords(const Records& records, size_t read, RankResult* result) {
  if (records.ranked) {
    // Item i is record i: the order is the identity.
    std::unique_ptr<uint32_t[]> order(new uint32_t[read]);
    for (size_t i = 0; i < read; ++i) order[i] = static_cast<uint32_t>(i);
    result->AddRankedItems(absl::MakeConstSpan(records.ids, read), records.scores.get(),
                           order.get(), read);
  } else {
    for (size_t i = 0; i < read; ++i) {
      result->AddItem(records.ids[i], records.scores[i], records.positions[i]);
    }
  }
}

std::vector<void*> RankbinView::UniformColumns(const Shape& uniform, RankResult* result) const {
  std::vector<void*> columns(result->key_count(), nullptr);
  for (uint32_t j = 0; j < uniform.size; ++j) {
    const Key& k = keys_[uniform.keys()[j]];
    if (k.model_index == kNone) continue;
    switch (result->key(k.model_index).type) {
      case MetricType::kInt:
        columns[k.model_index] = result->OverwriteInts(k.model_index);
        break;
      case MetricType::kFloat:
        columns[k.model_index] = result->OverwriteFloats(k.model_index);
        break;
      case MetricType::kDouble:
        columns[k.model_index] = result->OverwriteDoubles(k.model_index);
        break;
      case MetricType::kString:
        columns[k.model_index] = result->OverwriteCodes(k.model_index);
        break;
    }
  }
  return columns;
}

absl::Status RankbinView::MaterializeUniform(const Records& records, size_t read,
                                             const Shape& uniform, Budget* budget,
                                             RankResult* result) const {
  std::vector<void*> columns = UniformColumns(uniform, result);
  std::vector<ArraySink::Step> steps;
  steps.reserve(uniform.size);
  std::vector<uint32_t> string_steps;
  for (uint32_t j = 0; j < uniform.size; ++j) {
    const Key& k = keys_[uniform.keys()[j]];
    ArraySink::Step step{ArraySink::Op::kSkipVarint, 1, k.model_index, k.dict_size, 0, nullptr};
    if (k.model_index != kNone) step.column = columns[k.model_index];
    switch (k.model_index == kNone ? 0xff : k.code) {
      case static_cast<uint8_t>(TypeCode::kDouble):
        step.op = ArraySink::Op::kDoubles;
        break;
      case static_cast<uint8_t>(TypeCode::kFloat):
        step.op = ArraySink::Op::kFloats;
        break;
      case static_cast<uint8_t>(TypeCode::kInt):
        step.op = ArraySink::Op::kInt;
        break;
      case static_cast<uint8_t>(TypeCode::kString):
        step.op = ArraySink::Op::kString;
        step.slot = static_cast<uint32_t>(string_steps.size());
        string_steps.push_back(j);
        break;
      case static_cast<uint8_t>(TypeCode::kStringDict):
        step.op = ArraySink::Op::kDict;
        break;
      default:
        switch (WireClassOf(k.code)) {
          case WireClass::kVarint:
            step.op = ArraySink::Op::kSkipVarint;
            break;
          case WireClass::kFixed32:
            step.op = ArraySink::Op::kSkip4;
            break;
          case WireClass::kFixed64:
            step.op = ArraySink::Op::kSkip8;
            break;
          case WireClass::kBytes:
            step.op = ArraySink::Op::kSkipBytes;
            break;
        }
    }
    // The shape's runs of doubles (floats) of known keys are read as one.
    const uint32_t run = uniform.runs()[j];
    if (run > 1) step.count = run;
    steps.push_back(step);
  }
  std::vector<absl::string_view> staged(string_steps.size() * ArraySink::kStage);
  ArraySink sink{result,       columns.data(),      steps.data(),
                 steps.size(), string_steps.data(), string_steps.size(),
                 staged.data()};
  return MaterializeItems(records, read, &uniform, budget, sink);
}

void RankbinView::ReservePlainStrings(RankResult* result) const {
  // Plain (no dictionary) string keys' entries: room reserved up front, an
  // equal share each of the values' stored bytes (which bound all of them
  // together, so this is at most the payload's size), so that a column of
  // long strings is not copied again every time its buffer doubles (a
  // third of decoding 500 items of six 150-300 B strings).
  const auto plain_string = [](const Key& k) {
    return k.model_index != kNone && k.dict_size == 0 &&
           k.code == static_cast<uint8_t>(TypeCode::kString);
  };
  size_t plain = 0;
  for (const Key& k : keys_) plain += plain_string(k) ? 1 : 0;
  if (plain == 0) return;
  const size_t share = values_.data.size() / plain;
  for (const Key& k : keys_) {
    if (plain_string(k)) result->ReserveStringBytes(k.model_index, n_, share);
  }
}

template <typename Sink>
absl::Status RankbinView::MaterializeItems(const Records& records, size_t read,
                                           const Shape* uniform, Budget* budget, Sink& sink) const {
  // Item by item, the checks of Record(i), ValuesOf and Log in their order;
  // the shape and the values block are looked up again only when they
  // change (a block's items share it; most items share a shape).
  const Shape* shape = uniform;
  uint32_t shape_id = uniform != nullptr ? records.shapes[0] : 0;
  for (size_t b = 0; b < values_.count; ++b) {
    coding::Reader logs(absl::string_view(), kContext);
    if (logs_.present) {
      absl::StatusOr<absl::string_view> data = BlockData(logs_, b);
      if (!data.ok()) return data.status();
      logs = coding::Reader(*data, kContext);
    }
    absl::string_view block;
    bool have_block = false;
    const size_t end = std::min(n_, (b + 1) * size_t{block_items_});
    for (size_t i = b * block_items_; i < end; ++i) {
      if (ABSL_PREDICT_FALSE(i == read)) return Record(i).status();
      if (ABSL_PREDICT_FALSE(budget->Over(records.ids[i].size()))) return budget->Error();
      if (shape == nullptr || records.shapes[i] != shape_id) {
        absl::StatusOr<const Shape*> found = GetShape(records.shapes[i]);
        if (!found.ok()) {
          return Corrupt(absl::StrCat("item ", i, ": ", found.status().message()));
        }
        shape = *found;
        shape_id = records.shapes[i];
      }
      if (!have_block) {
        absl::StatusOr<absl::string_view> data = BlockData(values_, b);
        if (!data.ok()) return data.status();
        block = *data;
        have_block = true;
      }
      const uint32_t values_offset = records.values_offsets[i];
      if (ABSL_PREDICT_FALSE(values_offset > block.size())) {
        return Corrupt(absl::StrCat("item ", i, " values offset ", values_offset,
                                    " is past its block (", block.size(), " bytes)"));
      }
      sink.item = i;
      sink.string_bytes = 0;
      if (ABSL_PREDICT_TRUE(
              sink.Decode(block.data() + values_offset, block.data() + block.size()))) {
        sink.ItemDone();
      } else {
        // The items before this one in order first (this one's strings,
        // if any were staged, are not counted).
        sink.Flush();
        sink.string_bytes = 0;
        // Offsets of decompressed blocks are relative to the block.
        coding::Reader r(block.substr(values_offset), kContext, values_offset);
        if (!DecodeValues(r, *shape, sink)) return r.status();
      }
      // One item's strings are bounded by its block, so counting them after
      // the item keeps the total within the cap plus one block.
      if (ABSL_PREDICT_FALSE(budget->Over(sink.string_bytes))) return budget->Error();
      if (logs_.present) {
        absl::string_view log = logs.LengthPrefixed("log");
        if (!logs.ok()) return logs.status();
        if (ABSL_PREDICT_FALSE(budget->Over(log.size()))) return budget->Error();
        if (!log.empty()) sink.out->SetLog(i, log);
      }
    }
  }
  sink.Flush();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ResultView>> OpenRankbin(SharedBytes bytes,
                                                        const ReaderOptions& options) {
  auto view = std::make_unique<RankbinView>(std::move(bytes), options);
  if (absl::Status s = view->Parse(); !s.ok()) return s;
  return std::unique_ptr<ResultView>(std::move(view));
}

}  // namespace rankwire::rankbin
