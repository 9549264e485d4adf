// The lazy reader's shapes and blocks (RankbinView::ParseShapesUpTo,
// LocateBlocksUpTo, BlockData, keys()): many threads reading a result whose
// every item has its own shape, a SHAPES section cut short, and
// allocations that fail in the middle of a parse.
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/buffer.h"
#include "codec/codec.h"
#include "codec/rank_result.h"
#include "codec/rankbin/reader.h"
#include "codec/rankbin/writer.h"
#include "gtest/gtest.h"

// Array new (a shape's keys and runs, a chunk of blocks, a decompressed
// block) and plain new (vectors) can be made to fail on this thread after
// that many more calls.
namespace {
thread_local int fail_array_new_after = -1;
thread_local int fail_new_after = -1;
}  // namespace

// GCC sees std::allocator's new inlined next to these free()s and warns of
// a mismatch; both are this file's replacements, which match.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new[](std::size_t n) {
  if (fail_array_new_after >= 0 && fail_array_new_after-- == 0) throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void* operator new(std::size_t n) {
  if (fail_new_after >= 0 && fail_new_after-- == 0) throw std::bad_alloc();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace rankwire::rankbin {
namespace {

constexpr size_t kItems = 500;
constexpr size_t kKeys = 200;
constexpr int kThreads = 4;

// Every item its own subset of the keys (20 to 169 of them, their cells set
// in a random order), so the writer makes one shape per item, numbered by
// first use.
RankResult OneShapePerItem(uint64_t seed) {
  std::mt19937_64 rng(seed);
  RankResult r;
  for (size_t k = 0; k < kKeys; ++k) {
    r.AddKey(absl::StrCat("k", k), k % 10 == 7 ? MetricType::kInt : MetricType::kDouble);
  }
  std::vector<uint32_t> order(kKeys);
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = 0; i < kItems; ++i) {
    const size_t item = r.AddItem(absl::StrCat("sku-", i), 1.0 / static_cast<double>(i + 1),
                                  static_cast<uint32_t>(i + 1));
    std::shuffle(order.begin(), order.end(), rng);
    for (auto k = order.begin(); k != order.begin() + 20 + i % 150; ++k) {
      if (r.key(*k).type == MetricType::kInt) {
        r.SetInt(item, *k, static_cast<int64_t>(i * 1000 + *k));
      } else {
        r.SetDouble(item, *k, static_cast<double>(i) + *k / 1000.0);
      }
    }
  }
  return r;
}

std::string Encode(const RankResult& r) {
  absl::StatusOr<OwnedBuffer> b = WriteRankbin(r, {});
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::string(b->view()) : std::string();
}

std::unique_ptr<ResultView> Open(const std::string& bytes) {
  auto view = OpenRankbin(SharedBytes::FromBuffer(OwnedBuffer::CopyOf(bytes)), {});
  EXPECT_TRUE(view.ok()) << view.status();
  return view.ok() ? *std::move(view) : nullptr;
}

// "" when item i reads back as written; the error or the difference if not.
std::string Check(const RankResult& r, const ResultView& view, size_t i) {
  std::vector<std::pair<std::string, double>> got;
  absl::Status s = view.ForEachMetric(i, [&](uint32_t key, const MetricRef& m) {
    got.emplace_back(view.keys()[key].name, m.type() == MetricType::kInt
                                                ? static_cast<double>(m.int_value())
                                                : m.double_value());
  });
  if (!s.ok()) return absl::StrCat("item ", i, ": ", s.ToString());
  std::vector<std::pair<std::string, double>> want;
  for (uint32_t k = 0; k < r.key_count(); ++k) {
    if (std::optional<MetricRef> v = r.Get(i, k)) {
      want.emplace_back(r.key(k).name, v->type() == MetricType::kInt
                                           ? static_cast<double>(v->int_value())
                                           : v->double_value());
    }
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  if (got != want) {
    return absl::StrCat("item ", i, ": ", got.size(), " metrics read, ", want.size(),
                        " written, or a value differs");
  }
  return "";
}

// Reads every item from kThreads threads, each in its own order (forward,
// backward, shuffled, a stride), and returns the first unexpected outcome:
// items before `first_bad` must read back as written, the others must fail
// with DATA_LOSS.
std::string ReadFromThreads(const RankResult& r, const ResultView& view, size_t first_bad,
                            uint64_t seed) {
  std::vector<std::vector<size_t>> orders(kThreads, std::vector<size_t>(kItems));
  for (std::vector<size_t>& o : orders) std::iota(o.begin(), o.end(), 0);
  std::reverse(orders[1].begin(), orders[1].end());
  std::mt19937_64 rng(seed);
  std::shuffle(orders[2].begin(), orders[2].end(), rng);
  for (size_t i = 0; i < kItems; ++i) orders[3][i] = (i * 37) % kItems;
  // keys() is built here first, so the threads race only on the shapes.
  static_cast<void>(view.keys());
  std::vector<std::string> first(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i : orders[t]) {
        const std::string e = Check(r, view, i);
        const bool ok = i < first_bad ? e.empty() : e.find("DATA_LOSS") != std::string::npos;
        if (!ok && first[t].empty()) first[t] = absl::StrCat("[", e, "] item ", i);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& f : first) {
    if (!f.empty()) return f;
  }
  return "";
}

TEST(ShapeParseTest, ThreadsReadingOneShapePerItemAgree) {
  const RankResult r = OneShapePerItem(1);
  const std::string bytes = Encode(r);
  for (int round = 0; round < 10; ++round) {
    std::unique_ptr<ResultView> view = Open(bytes);
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(ReadFromThreads(r, *view, kItems, round), "") << "round " << round;
    EXPECT_TRUE(view->Materialize().ok());
  }
}

// Where the SHAPES section's body and each shape start, from the section
// table (docs/FORMAT.md: the header's section count at bytes 6-7, then
// 5-byte entries: id, fixed32 length).
struct ShapesLayout {
  size_t length_at = 0;
  size_t body = 0;
  size_t size = 0;
  std::vector<size_t> shape_at;
};

uint64_t ReadVarint(const std::string& s, size_t* at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = static_cast<uint8_t>(s[(*at)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) return v;
  }
}

ShapesLayout LayoutOf(const std::string& s) {
  ShapesLayout l;
  const size_t sections = static_cast<uint8_t>(s[6]) | static_cast<uint8_t>(s[7]) << 8;
  for (size_t n = 0, at = 8; n < sections; ++n) {
    uint32_t size;
    std::memcpy(&size, s.data() + at + 1, 4);
    if (s[at] == 2) {
      l.length_at = at + 1;
      l.body = at + 5;
      l.size = size;
    }
    at += 5 + size;
  }
  size_t at = l.body;
  for (uint64_t k = 0, count = ReadVarint(s, &at); k < count; ++k) {
    l.shape_at.push_back(at);
    for (uint64_t j = 0, n = ReadVarint(s, &at); j < n; ++j) ReadVarint(s, &at);
  }
  EXPECT_EQ(at, l.body + l.size);
  return l;
}

TEST(ShapeParseTest, ThreadsSeeACutShortSectionFailFromTheCutOn) {
  const RankResult r = OneShapePerItem(3);
  const std::string bytes = Encode(r);
  const ShapesLayout l = LayoutOf(bytes);
  ASSERT_EQ(l.shape_at.size(), kItems);
  // Shape 300 keeps its count and two key indexes; the rest is cut.
  constexpr size_t kCut = 300;
  const size_t cut = l.shape_at[kCut] + 3;
  std::string bad = bytes.substr(0, cut) + bytes.substr(l.body + l.size);
  const uint32_t size = static_cast<uint32_t>(cut - l.body);
  std::memcpy(&bad[l.length_at], &size, 4);
  for (int round = 0; round < 10; ++round) {
    std::unique_ptr<ResultView> view = Open(bad);
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(ReadFromThreads(r, *view, kCut, 100 + round), "") << "round " << round;
    EXPECT_FALSE(view->Materialize().ok());
  }
}

// A read that parses shapes 1 to 5 and whose allocation for shape 3 throws:
// a later read must still parse shape 3 from its own bytes.
TEST(ShapeParseTest, AFailedAllocationMidParseLeavesLaterShapesRight) {
  const RankResult r = OneShapePerItem(5);
  std::unique_ptr<ResultView> view = Open(Encode(r));
  ASSERT_NE(view, nullptr);
  ASSERT_EQ(Check(r, *view, 0), "");  // Shape 0 and the parse's scratch.
  fail_array_new_after = 2;           // Shapes 1 and 2 are allocated, 3 throws.
  bool threw = false;
  try {
    static_cast<void>(view->ForEachMetric(5, [](uint32_t, const MetricRef&) {}));
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  fail_array_new_after = -1;
  ASSERT_TRUE(threw);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(Check(r, *view, i), "");
  EXPECT_TRUE(view->Materialize().ok());
}

// Blocks: 5000 items of varying sizes (a string whose length depends on
// the item), 16 to a block, so 313 blocks per column of differing sizes,
// and a block read from another block's bytes reads wrong values.
constexpr size_t kBlockedItems = 5000;
constexpr uint32_t kBlockItems = 16;

// Built column by column, as a ranker builds its output.
RankResult VaryingItems() {
  RankResult r;
  r.AddKey("a", MetricType::kDouble);
  r.AddKey("b", MetricType::kInt);
  r.AddKey("s", MetricType::kString);
  for (size_t i = 0; i < kBlockedItems; ++i) {
    r.AddItem(absl::StrCat("sku-", i), 1.0 / static_cast<double>(i + 1),
              static_cast<uint32_t>(i + 1));
    r.SetLog(i, absl::StrCat("log line for item ", i, std::string(i % 7, 'y')));
  }
  double* a = r.MutableDoubles(0);
  int64_t* b = r.MutableInts(1);
  for (size_t i = 0; i < kBlockedItems; ++i) {
    a[i] = static_cast<double>(i) + 0.25;
    b[i] = static_cast<int64_t>(i * 7);
  }
  for (size_t i = 0; i < kBlockedItems; ++i) {
    r.SetString(i, 2, absl::StrCat("value-", i, std::string(i % 13, 'x')));
  }
  return r;
}

std::string EncodeBlocks(const RankResult& r, bool compress) {
  WriterOptions o;
  o.block_items = kBlockItems;
  if (compress) {
    o.compress_values = o.compress_string_values = o.compress_logs = true;
    o.min_saving = -1.0;  // Keep every compressed block.
  }
  absl::StatusOr<OwnedBuffer> b = WriteRankbin(r, o);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::string(b->view()) : std::string();
}

// "" when item i of VaryingItems() reads back as written: its metrics, and
// its log (the LOGS column's block).
std::string CheckBlocks(const RankResult& r, const ResultView& view, size_t i) {
  int seen = 0;
  bool same = true;
  absl::Status s = view.ForEachMetric(i, [&](uint32_t key, const MetricRef& m) {
    ++seen;
    same &= r.Get(i, key) == m;
  });
  if (!s.ok()) return absl::StrCat("item ", i, ": ", s.ToString());
  if (!same || seen != 3) return absl::StrCat("item ", i, ": metrics differ");
  absl::StatusOr<ItemRef> item = view.Item(i);
  if (!item.ok()) return absl::StrCat("item ", i, ": ", item.status().ToString());
  absl::StatusOr<absl::string_view> log = item->Log();
  if (!log.ok()) return absl::StrCat("item ", i, ": ", log.status().ToString());
  return *log == r.log(i) ? "" : absl::StrCat("item ", i, ": log differs");
}

// A read that locates blocks 8 to 20 and whose allocation of the chunk for
// blocks 16-23 throws: blocks 8-15 are published, and a later read must
// still locate block 16 from its own bytes.
TEST(LazyBlocksTest, AFailedChunkAllocationMidLocateLeavesLaterBlocksRight) {
  const RankResult r = VaryingItems();
  for (bool compress : {false, true}) {
    std::unique_ptr<ResultView> view = Open(EncodeBlocks(r, compress));
    ASSERT_NE(view, nullptr);
    ASSERT_EQ(CheckBlocks(r, *view, 0), "");  // Both columns' chunk 0.
    fail_array_new_after = 1;                 // Chunk 1 is allocated, chunk 2 throws.
    bool threw = false;
    try {
      static_cast<void>(view->ForEachMetric(20 * kBlockItems, [](uint32_t, const MetricRef&) {}));
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    fail_array_new_after = -1;
    ASSERT_TRUE(threw);
    for (size_t i = 0; i < 40 * kBlockItems; i += 3) {
      ASSERT_EQ(CheckBlocks(r, *view, i), "") << "compress " << compress;
    }
    EXPECT_TRUE(view->Materialize().ok()) << "compress " << compress;
  }
}

// A decompressed block's buffer, or keys(), whose allocation throws: the
// next call must try again (absl::call_once left its flag "running", and
// every later call waited forever). In a child process with an alarm, so a
// hang fails the test instead of the run.
TEST(LazyBlocksDeathTest, AFailedAllocationInACallOnceIsRetried) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  const RankResult r = VaryingItems();
  const std::string bytes = EncodeBlocks(r, true);
  EXPECT_EXIT(
      {
        alarm(10);
        std::unique_ptr<ResultView> view = Open(bytes);
        if (CheckBlocks(r, *view, 0) != "") _exit(2);
        const size_t item = 5 * kBlockItems;
        fail_array_new_after = 0;  // Block 5's decompression buffer.
        bool threw = false;
        try {
          static_cast<void>(view->ForEachMetric(item, [](uint32_t, const MetricRef&) {}));
        } catch (const std::bad_alloc&) {
          threw = true;
        }
        fail_array_new_after = -1;
        if (!threw || CheckBlocks(r, *view, item) != "") _exit(3);
        std::unique_ptr<ResultView> fresh = Open(bytes);
        fail_new_after = 0;  // keys()'s vector.
        threw = false;
        try {
          static_cast<void>(fresh->keys());
        } catch (const std::bad_alloc&) {
          threw = true;
        }
        fail_new_after = -1;
        _exit(threw && fresh->keys().size() == 3 ? 0 : 4);
      },
      ::testing::ExitedWithCode(0), "");
}

// Every value type (a run of doubles, a float, an int, a plain string, a
// dictionary string) over two shapes and two blocks.
RankResult EveryType() {
  RankResult r;
  const uint32_t ctr = r.AddKey("ctr", MetricType::kDouble);
  const uint32_t cvr = r.AddKey("cvr", MetricType::kDouble);
  const uint32_t boost = r.AddKey("boost", MetricType::kFloat);
  const uint32_t stock = r.AddKey("stock", MetricType::kInt);
  const uint32_t title = r.AddKey("title", MetricType::kString);
  const uint32_t source = r.AddKey("source", MetricType::kString);
  constexpr const char* kSources[] = {"recall", "boost", "ads"};
  for (size_t i = 0; i < 24; ++i) {
    const size_t item = r.AddItem(absl::StrCat("sku-", i), 1.0 / static_cast<double>(i + 1),
                                  static_cast<uint32_t>(i + 1));
    r.SetDouble(item, ctr, 0.01 * static_cast<double>(i));
    r.SetDouble(item, cvr, 0.001 * static_cast<double>(i));
    if (i % 3 != 0) r.SetFloat(item, boost, 0.5f * static_cast<float>(i));
    r.SetInt(item, stock, static_cast<int64_t>(i * 977) - 5000);
    r.SetString(item, title, std::string(i % 5, 't'));
    r.SetString(item, source, kSources[i % 3]);
  }
  return r;
}

// Every metric item i's read visits, in order, and the status it returns.
std::string Visits(const ResultView& view, size_t i) {
  std::string out;
  absl::Status s = view.ForEachMetric(i, [&](uint32_t key, const MetricRef& m) {
    absl::StrAppend(&out, key, "=", m.DebugString(), "; ");
  });
  return absl::StrCat(out, "-> ", s.ToString());
}

// TopN(n) of a view, and Item(0), Item(1), ... up to its first error: the
// same items (id, score, position) and the same error.
std::string TopNAndItems(const ResultView& view) {
  std::string top;
  absl::StatusOr<std::vector<ItemRef>> items = view.TopN(view.size() + 1);
  if (items.ok()) {
    for (const ItemRef& item : *items) {
      absl::StrAppend(&top, item.id(), " ", item.score(), " ", item.position(), "; ");
    }
  } else {
    top = items.status().ToString();
  }
  std::string one;
  for (size_t i = 0; i < view.size(); ++i) {
    absl::StatusOr<ItemRef> item = view.Item(i);
    if (!item.ok()) {
      one = item.status().ToString();
      break;
    }
    absl::StrAppend(&one, item->id(), " ", item->score(), " ", item->position(), "; ");
  }
  return top == one ? "" : absl::StrCat("TopN: ", top, "\nItem: ", one);
}

// A view whose items before i were read has item i's shape and block ready
// (the reads' fast path, in place); a fresh view reads item i first (shape
// and block looked up, the values through a Reader). With any byte of the
// payload changed, both must visit the same metrics, each once, and end
// with the same status. TopN reads the items Item reads.
TEST(LazyValuesTest, AWarmViewReadsEveryChangedPayloadAsAFreshViewDoes) {
  const std::string bytes = Encode(EveryType());
  size_t compared = 0;
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (char c : {'\x00', '\x03', '\x7f', '\x80', '\xff'}) {
      std::string bad = bytes;
      bad[at] = c;
      auto warm = OpenRankbin(SharedBytes::FromBuffer(OwnedBuffer::CopyOf(bad)), {});
      if (!warm.ok()) continue;
      ASSERT_EQ(TopNAndItems(**warm), "") << "byte " << at;
      for (size_t i = 0; i < (*warm)->size(); ++i) {
        auto fresh = OpenRankbin(SharedBytes::FromBuffer(OwnedBuffer::CopyOf(bad)), {});
        ASSERT_TRUE(fresh.ok());
        ASSERT_EQ(Visits(**warm, i), Visits(**fresh, i))
            << "byte " << at << " = " << static_cast<int>(static_cast<uint8_t>(c)) << ", item "
            << i;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, bytes.size());
}

}  // namespace
}  // namespace rankwire::rankbin
