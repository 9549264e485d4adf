// Tests of codec/rank_result.h: the 12-byte MetricValue, the columnar
// RankResult (cells, columns, string entries, reuse, the row form), the
// model's invariants (ValidateResult, AppendItem's refusals) and semantic
// comparison (DiffResults).
#include "codec/rank_result.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/row_result.h"

// Array new, which MetricValue and StringArena allocate their blocks with,
// can be made to fail once, on this thread.
namespace {
thread_local bool fail_next_array_new = false;
}  // namespace

void* operator new[](std::size_t n) {
  if (fail_next_array_new) {
    fail_next_array_new = false;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace rankwire {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// True if `s` lies inside the bytes of `v` itself (an inline string).
bool StoredInline(const MetricValue& v, absl::string_view s) {
  const char* begin = reinterpret_cast<const char*>(&v);
  return s.data() >= begin && s.data() + s.size() <= begin + sizeof(v);
}

float FloatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
double DoubleFromBits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

TEST(MetricValueTest, TwelveBytesSoAnEntryIsSixteen) {
  EXPECT_EQ(sizeof(MetricValue), 12u);
  EXPECT_EQ(sizeof(MetricEntry), 16u);
  std::vector<MetricEntry> v(4);
  EXPECT_EQ(reinterpret_cast<const char*>(&v[1]) - reinterpret_cast<const char*>(&v[0]), 16);
}

TEST(MetricValueTest, DefaultIsIntZero) {
  MetricValue v;
  EXPECT_EQ(v.type(), MetricType::kInt);
  EXPECT_EQ(v.int_value(), 0);
}

TEST(MetricValueTest, NumbersKeepTheirValues) {
  EXPECT_EQ(MetricValue::Int(std::numeric_limits<int64_t>::min()).int_value(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(MetricValue::Int(std::numeric_limits<int64_t>::max()).int_value(),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(MetricValue::Float(0.1f).type(), MetricType::kFloat);
  EXPECT_EQ(MetricValue::Float(0.1f).float_value(), 0.1f);
  EXPECT_EQ(MetricValue::Double(0.1).type(), MetricType::kDouble);
  EXPECT_EQ(MetricValue::Double(0.1).double_value(), 0.1);
  EXPECT_EQ(MetricValue::Double(std::numeric_limits<double>::denorm_min()).double_value(),
            std::numeric_limits<double>::denorm_min());
  EXPECT_TRUE(std::signbit(MetricValue::Double(-0.0).double_value()));
  EXPECT_TRUE(std::signbit(MetricValue::Float(-0.0f).float_value()));
  EXPECT_TRUE(std::isinf(MetricValue::Float(-INFINITY).float_value()));
}

TEST(MetricValueTest, StringsOfEveryLengthAroundTheInlineLimit) {
  for (size_t n = 0; n <= 40; ++n) {
    std::string text;
    for (size_t i = 0; i < n; ++i) text.push_back(static_cast<char>('a' + i % 26));
    if (n > 3) text[2] = '\0';  // Embedded NULs are bytes like any other.
    MetricValue v = MetricValue::String(text);
    EXPECT_EQ(v.type(), MetricType::kString);
    EXPECT_EQ(v.string_value(), text) << n;
    // Up to 10 bytes live in the value itself; longer ones on the heap.
    EXPECT_EQ(StoredInline(v, v.string_value()), n <= 10) << n;
  }
}

TEST(MetricValueTest, CopiesOfAHeapStringShareItAndOutliveTheOriginal) {
  const std::string text(100, 'x');
  auto original = std::make_unique<MetricValue>(MetricValue::String(text));
  MetricValue copy(*original);
  MetricValue assigned = MetricValue::Int(1);
  assigned = copy;
  EXPECT_EQ(copy.string_value(), text);
  // One immutable block, shared: copying a long string allocates nothing.
  EXPECT_EQ(copy.string_value().data(), original->string_value().data());
  EXPECT_EQ(assigned.string_value().data(), original->string_value().data());
  original.reset();  // The copies must not depend on the original.
  EXPECT_EQ(copy.string_value(), text);
  copy = MetricValue::Double(2);
  EXPECT_EQ(assigned.string_value(), text);  // The last owner still reads it.
}

TEST(MetricValueTest, SharedHeapStringsAcrossThreads) {
  const MetricValue shared = MetricValue::String(std::string(64, 's'));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 10000; ++i) {
        MetricValue copy = shared;
        MetricValue moved = std::move(copy);
        if (moved.string_value().size() != 64) std::abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(shared.string_value(), std::string(64, 's'));
}

// A value whose heap block could not be allocated is never built: the
// half-built one must not own a block (its destructor released one it
// did not have, through a null pointer).
TEST(MetricValueTest, AHeapStringWhoseAllocationFailsLeavesNothingBehind) {
  const std::string text(100, 'x');
  fail_next_array_new = true;
  EXPECT_THROW(MetricValue::String(text), std::bad_alloc);
  StringArena arena;
  fail_next_array_new = true;
  EXPECT_THROW(arena.String(text), std::bad_alloc);
  // The arena is usable after a failed chunk.
  EXPECT_EQ(arena.String(text).string_value(), text);
  EXPECT_EQ(MetricValue::String(text).string_value(), text);
}

TEST(StringArenaTest, ValuesReadBackAndPackIntoOneChunk) {
  std::vector<std::string> texts;
  for (int i = 0; i < 50; ++i)
    texts.push_back(std::string(11 + i, static_cast<char>('a' + i % 26)));
  std::vector<MetricValue> values;
  {
    StringArena arena;
    for (const std::string& t : texts) values.push_back(arena.String(t));
    values.push_back(arena.String("short"));
  }  // Sealed: the values outlive the arena.
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(values[i].type(), MetricType::kString);
    EXPECT_EQ(values[i].string_value(), texts[i]);
    EXPECT_EQ(values[i], MetricValue::String(texts[i]));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(values[i].string_value().data()) % 8, 0u);
  }
  // Consecutive strings sit one after another in the chunk.
  EXPECT_LT(values[1].string_value().data() - values[0].string_value().data(), 64);
  EXPECT_EQ(values.back().string_value(), "short");
  EXPECT_TRUE(StoredInline(values.back(), values.back().string_value()));
}

TEST(StringArenaTest, AStringTooLongForAChunkGetsItsOwnBlock) {
  const std::string big(StringArena::kChunkBytes, 'b');
  MetricValue v;
  {
    StringArena arena;
    v = arena.String(big);
  }
  EXPECT_EQ(v.string_value(), big);
}

// A chunk is freed only when its last value (or copy) is gone, whether the
// values die before the arena is sealed, after, or on other threads.
// (Use-after-free and leaks here are caught by the sanitizer builds.)
TEST(StringArenaTest, ChunksLiveAsLongAsAnyOfTheirValues) {
  std::vector<MetricValue> kept;
  {
    StringArena arena;
    for (int i = 0; i < 10000; ++i) {
      MetricValue v = arena.String(std::string(100, static_cast<char>('a' + i % 26)));
      if (i % 1000 == 0) kept.push_back(v);  // A copy outlives the original.
    }                                        // Most die before their chunk is sealed.
    EXPECT_EQ(arena.String(std::string(40, 'd')).string_value(), std::string(40, 'd'));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([kept] {  // Copies, released on this thread.
      for (const MetricValue& v : kept) {
        MetricValue copy = v;
        if (copy.string_value().size() != 100) std::abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].string_value(), std::string(100, static_cast<char>('a' + (i * 1000) % 26)));
  }
  kept.clear();
  MetricValue assigned = MetricValue::Int(1);
  {
    StringArena arena;
    MetricValue v = arena.String(std::string(20, 'z'));
    assigned = v;
    v = MetricValue::Double(1);
  }
  EXPECT_EQ(assigned.string_value(), std::string(20, 'z'));
}

TEST(MetricValueTest, CopyOfAnInlineString) {
  MetricValue a = MetricValue::String("short");
  MetricValue b(a);
  EXPECT_EQ(b.string_value(), "short");
  EXPECT_TRUE(StoredInline(b, b.string_value()));
}

TEST(MetricValueTest, MoveTakesTheHeapBlockAndLeavesAValidValue) {
  const std::string text(50, 'm');
  MetricValue a = MetricValue::String(text);
  const char* block = a.string_value().data();
  MetricValue b(std::move(a));
  EXPECT_EQ(b.string_value(), text);
  EXPECT_EQ(b.string_value().data(), block);  // Moved, not copied.
  // The moved-from value owns nothing but stays usable.
  a = MetricValue::Int(3);
  EXPECT_EQ(a.int_value(), 3);

  MetricValue c = MetricValue::Double(1.5);
  c = std::move(b);
  EXPECT_EQ(c.string_value(), text);
  EXPECT_EQ(c.string_value().data(), block);
  MetricValue d(std::move(b));  // Moving a moved-from value is fine too.
  (void)d;
}

TEST(MetricValueTest, AssignmentAcrossKinds) {
  const std::string long_text(30, 'L');
  MetricValue v = MetricValue::String(long_text);
  v = MetricValue::String("inline");  // Heap -> inline frees the block.
  EXPECT_EQ(v.string_value(), "inline");
  v = MetricValue::String(long_text);  // Inline -> heap.
  EXPECT_EQ(v.string_value(), long_text);
  v = MetricValue::Int(-7);  // String -> number.
  EXPECT_EQ(v.type(), MetricType::kInt);
  EXPECT_EQ(v.int_value(), -7);
  const MetricValue heap = MetricValue::String(long_text);
  v = heap;  // Number -> string (copy, sharing the immutable block).
  EXPECT_EQ(v.string_value(), long_text);
  EXPECT_EQ(v.string_value().data(), heap.string_value().data());
}

TEST(MetricValueTest, SelfAssignmentKeepsTheValue) {
  MetricValue v = MetricValue::String(std::string(40, 's'));
  MetricValue& same = v;
  v = same;
  EXPECT_EQ(v.string_value(), std::string(40, 's'));
  v = std::move(same);
  EXPECT_EQ(v.string_value(), std::string(40, 's'));
  MetricValue i = MetricValue::String("abc");
  MetricValue& same_i = i;
  i = same_i;
  EXPECT_EQ(i.string_value(), "abc");
}

TEST(MetricValueTest, VectorGrowthKeepsStrings) {
  // Relocation uses the move constructor: every heap block must survive it.
  std::vector<MetricValue> values;
  for (int i = 0; i < 200; ++i) {
    values.push_back(MetricValue::String(std::string(static_cast<size_t>(i % 40), 'a' + i % 26)));
  }
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(values[i].string_value(), std::string(static_cast<size_t>(i % 40), 'a' + i % 26));
  }
}

TEST(MetricValueEqualityTest, SameTypeAndValue) {
  EXPECT_EQ(MetricValue::Int(5), MetricValue::Int(5));
  EXPECT_NE(MetricValue::Int(5), MetricValue::Int(6));
  EXPECT_EQ(MetricValue::Float(0.5f), MetricValue::Float(0.5f));
  EXPECT_EQ(MetricValue::Double(0.5), MetricValue::Double(0.5));
  EXPECT_NE(MetricValue::Double(0.5), MetricValue::Double(0.25));
  // Equal numbers of different types are different values.
  EXPECT_NE(MetricValue::Int(1), MetricValue::Double(1.0));
  EXPECT_NE(MetricValue::Float(1.0f), MetricValue::Double(1.0));
  EXPECT_NE(MetricValue::String("1"), MetricValue::Int(1));
}

TEST(MetricValueEqualityTest, NanEqualsNanWhateverItsBits) {
  const MetricValue qnan = MetricValue::Double(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(qnan, qnan);
  EXPECT_EQ(qnan, MetricValue::Double(DoubleFromBits(0xfff8000000000001)));
  EXPECT_EQ(MetricValue::Float(FloatFromBits(0x7fc00000)),
            MetricValue::Float(FloatFromBits(0xffc00123)));
  EXPECT_NE(qnan, MetricValue::Double(1.0));
  EXPECT_NE(MetricValue::Double(1.0), qnan);
  EXPECT_NE(MetricValue::Float(NAN), MetricValue::Double(NAN));
}

TEST(MetricValueEqualityTest, SignedZerosDiffer) {
  EXPECT_NE(MetricValue::Double(0.0), MetricValue::Double(-0.0));
  EXPECT_NE(MetricValue::Float(0.0f), MetricValue::Float(-0.0f));
  EXPECT_EQ(MetricValue::Double(-0.0), MetricValue::Double(-0.0));
  EXPECT_EQ(MetricValue::Double(INFINITY), MetricValue::Double(INFINITY));
  EXPECT_NE(MetricValue::Double(INFINITY), MetricValue::Double(-INFINITY));
}

TEST(MetricValueEqualityTest, StringsCompareByContentNotStorage) {
  EXPECT_EQ(MetricValue::String(std::string(20, 'z')), MetricValue::String(std::string(20, 'z')));
  EXPECT_NE(MetricValue::String(std::string(10, 'z')), MetricValue::String(std::string(11, 'z')));
  EXPECT_EQ(MetricValue::String(""), MetricValue::String(""));
  EXPECT_NE(MetricValue::String(std::string("a\0b", 3)), MetricValue::String("a"));
}

TEST(MetricValueTest, AsDouble) {
  EXPECT_EQ(MetricValue::Int(-3).AsDouble(), -3.0);
  EXPECT_EQ(MetricValue::Float(0.5f).AsDouble(), 0.5);
  EXPECT_EQ(MetricValue::Double(2.5).AsDouble(), 2.5);
  EXPECT_EQ(MetricValue::String("2.5").AsDouble(), std::nullopt);
}

TEST(MetricTypeTest, NamesAndNumbers) {
  EXPECT_EQ(MetricTypeName(MetricType::kInt), "int");
  EXPECT_EQ(MetricTypeName(MetricType::kString), "string");
  EXPECT_EQ(MetricTypeFromNumber(0), std::nullopt);
  EXPECT_EQ(MetricTypeFromNumber(5), std::nullopt);
  EXPECT_EQ(MetricTypeFromNumber(-1), std::nullopt);
  for (int n = 1; n <= 4; ++n) {
    ASSERT_TRUE(MetricTypeFromNumber(n).has_value());
    EXPECT_EQ(static_cast<int>(*MetricTypeFromNumber(n)), n);
  }
}

// A small valid result as rows: three keys (one unused), three items.
test::RowResult SampleRows() {
  test::RowResult r;
  const uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
  const uint32_t src = r.AddKey("recall.source", MetricType::kString);
  r.AddKey("unused", MetricType::kInt);
  for (int i = 0; i < 3; ++i) {
    RankedItem& item =
        r.AddItem("sku-" + std::to_string(i), 1.0 / (i + 1), static_cast<uint32_t>(i + 1));
    item.metrics.push_back({ctr, MetricValue::Double(0.1 * i)});
    if (i != 1) item.metrics.push_back({src, MetricValue::String("vector_ann")});
    item.log = i == 2 ? "log line" : "";
  }
  return r;
}

RankResult Sample() { return SampleRows().Build(); }

TEST(RankResultTest, KeysAndLookups) {
  RankResult r = Sample();
  EXPECT_EQ(r.FindKey("recall.source"), 1u);
  EXPECT_EQ(r.FindKey("nope"), std::nullopt);
  ASSERT_TRUE(r.FindMetric(0, "recall.source").has_value());
  EXPECT_EQ(r.FindMetric(0, "recall.source")->string_value(), "vector_ann");
  EXPECT_EQ(r.FindMetric(1, "recall.source"), std::nullopt);  // Item 1 lacks it.
  EXPECT_EQ(r.FindMetric(0, "unused"), std::nullopt);
  EXPECT_EQ(r.FindMetric(9, "score.ctr"), std::nullopt);  // No item 9.
  EXPECT_EQ(r.Get(1, 0), MetricRef::Double(0.1));
  EXPECT_EQ(r.Get(1, 1), std::nullopt);
  EXPECT_EQ(r.Get(0, 3), std::nullopt);  // No key 3.
  EXPECT_EQ(r.log(2), "log line");
  EXPECT_EQ(r.log(0), "");
  EXPECT_TRUE(r.has_logs());
}

TEST(ValidateResultTest, AcceptsValidResults) {
  EXPECT_TRUE(ValidateResult(Sample()).ok());
  EXPECT_TRUE(ValidateResult(RankResult{}).ok());
}

TEST(ValidateResultTest, DuplicateKeyName) {
  RankResult r = Sample();
  r.AddKey("score.ctr", MetricType::kInt);
  absl::Status s = ValidateResult(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("score.ctr"));
  EXPECT_THAT(s.message(), HasSubstr("twice"));
}

TEST(ValidateResultTest, InvalidKeyType) {
  RankResult r = Sample();
  r.AddKey("bad", static_cast<MetricType>(9));
  absl::Status s = ValidateResult(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bad"));
}

// The row model could hold an entry whose key index was out of range, a
// value of another type than its key, or a key twice in one item, and
// ValidateResult found them. The columnar model cannot hold them: AppendItem
// (and Set) refuse them, and leave the result as it was.
TEST(AppendItemTest, RefusesAKeyIndexOutOfRange) {
  RankResult r = Sample();
  RankedItem item = r.Item(2);
  item.metrics.push_back({3, MetricValue::Int(1)});
  absl::Status s = r.AppendItem(item);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("item 3"));
  EXPECT_THAT(s.message(), HasSubstr("out of range"));
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(DiffResults(r, Sample()), "");
}

TEST(AppendItemTest, RefusesAValueOfTheWrongType) {
  RankResult r = Sample();
  RankedItem item = r.Item(1);
  item.metrics[0].value = MetricValue::Float(0.5f);  // score.ctr is a double.
  absl::Status s = r.AppendItem(item);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("score.ctr"));
  EXPECT_THAT(s.message(), HasSubstr("float"));
  EXPECT_THAT(s.message(), HasSubstr("double"));
  EXPECT_EQ(DiffResults(r, Sample()), "");
  // Set refuses it too, and a cell out of range.
  EXPECT_EQ(r.Set(1, 0, MetricRef::Float(0.5f)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Set(3, 0, MetricRef::Double(1)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Set(0, 3, MetricRef::Int(1)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DiffResults(r, Sample()), "");
}

TEST(AppendItemTest, RefusesAKeyTwiceInOneItem) {
  RankResult r = Sample();
  RankedItem item = r.Item(1);
  item.metrics.push_back({0, MetricValue::Double(1)});
  absl::Status s = r.AppendItem(item);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("item 3"));
  EXPECT_THAT(s.message(), HasSubstr("twice"));
  EXPECT_EQ(r.size(), 3u);
  // A wide item, its keys in any order: the repeat is found wherever it is.
  RankResult wide;
  for (int k = 0; k < 100; ++k) wide.AddKey(absl::StrCat("k", k), MetricType::kInt);
  RankedItem many;
  for (uint32_t k = 100; k-- > 0;) many.metrics.push_back({k, MetricValue::Int(k)});
  ASSERT_TRUE(wide.AppendItem(many).ok());
  many.metrics.push_back({57, MetricValue::Int(0)});
  s = wide.AppendItem(many);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"k57\" appears twice"));
  EXPECT_EQ(wide.size(), 1u);
}

TEST(ValidateResultTest, SameKeyInDifferentItemsIsFine) {
  RankResult r;
  const uint32_t k = r.AddKey("k", MetricType::kInt);
  for (int i = 0; i < 4; ++i) {
    RankedItem item;
    item.metrics.push_back({k, MetricValue::Int(i)});
    ASSERT_TRUE(r.AppendItem(item).ok());
  }
  EXPECT_TRUE(ValidateResult(r).ok());
}

TEST(ValidateResultTest, StringCodeOutOfRange) {
  RankResult r;
  const uint32_t s = r.AddKey("s", MetricType::kString);
  r.AddItem("a", 1, 1);
  r.AddItem("b", 1, 2);
  r.SetStringCode(0, s, r.AddStringEntry(s, "x"));
  r.SetStringCode(1, s, 1);  // One entry only.
  absl::Status st = ValidateResult(r);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("item 1"));
  EXPECT_THAT(st.message(), HasSubstr("string code 1"));
  r.AddStringEntry(s, "y");
  EXPECT_TRUE(ValidateResult(r).ok());
  EXPECT_EQ(r.Get(1, s), MetricRef::String("y"));
}

TEST(DiffResultsTest, EqualResults) {
  EXPECT_EQ(DiffResults(Sample(), Sample()), "");
  EXPECT_EQ(DiffResults(RankResult{}, RankResult{}), "");
}

// The rows used to be compared with each item's metrics in another order
// too; the model keeps no per-item order (an item's metrics are read in
// key-table order), so a reversed key table is what is left to reorder.
TEST(DiffResultsTest, KeyOrderDoesNotMatter) {
  test::RowResult rows = SampleRows();
  test::RowResult reversed;
  reversed.AddKey("unused", MetricType::kInt);
  reversed.AddKey("recall.source", MetricType::kString);
  reversed.AddKey("score.ctr", MetricType::kDouble);
  for (const RankedItem& item : rows.items) {
    RankedItem copy = item;
    copy.metrics.clear();
    for (auto it = item.metrics.rbegin(); it != item.metrics.rend(); ++it) {
      copy.metrics.push_back({2 - it->key, it->value});
    }
    reversed.items.push_back(copy);
  }
  const RankResult a = rows.Build(), b = reversed.Build();
  EXPECT_EQ(DiffResults(a, b), "");
  EXPECT_EQ(DiffResults(b, a), "");
}

TEST(DiffResultsTest, ReportsEachKindOfDifference) {
  const RankResult a = Sample();
  auto diff = [&](auto mutate) {
    test::RowResult b = SampleRows();
    mutate(b);
    return DiffResults(a, b.Build());
  };
  using Rows = test::RowResult;
  EXPECT_THAT(diff([](Rows& b) { b.AddKey("extra", MetricType::kInt); }), HasSubstr("key count"));
  EXPECT_THAT(diff([](Rows& b) { b.keys[2].name = "renamed"; }), HasSubstr("renamed"));
  EXPECT_THAT(diff([](Rows& b) { b.keys[2].type = MetricType::kFloat; }), HasSubstr("type"));
  EXPECT_THAT(diff([](Rows& b) { b.items.pop_back(); }), HasSubstr("item count"));
  EXPECT_THAT(diff([](Rows& b) { b.items[1].item_id = "other"; }), HasSubstr("item 1: id"));
  EXPECT_THAT(diff([](Rows& b) { b.items[0].score = 7; }), HasSubstr("item 0: score"));
  EXPECT_THAT(diff([](Rows& b) { b.items[2].position = 9; }), HasSubstr("position"));
  EXPECT_THAT(diff([](Rows& b) { b.items[2].log = "other"; }), HasSubstr("log"));
  EXPECT_THAT(diff([](Rows& b) { b.items[1].metrics.clear(); }), HasSubstr("metric count"));
  EXPECT_THAT(diff([](Rows& b) { b.items[0].metrics[0].value = MetricValue::Double(9); }),
              HasSubstr("score.ctr"));
  EXPECT_THAT(diff([](Rows& b) {
                b.items[1].metrics[0] = {2, MetricValue::Int(0)};  // Another key.
              }),
              HasSubstr("metric \""));
  EXPECT_THAT(
      diff([](Rows& b) { b.items[2].metrics[1].value = MetricValue::String("vector_ann2"); }),
      HasSubstr("recall.source"));
}

TEST(DiffResultsTest, ScoresCompareLikeMetricValues) {
  test::RowResult a = SampleRows(), b = SampleRows();
  a.items[0].score = b.items[0].score = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(DiffResults(a.Build(), b.Build()), "");
  a.items[0].score = 0.0;
  b.items[0].score = -0.0;
  EXPECT_THAT(DiffResults(a.Build(), b.Build()), Not(IsEmpty()));
}

// The columnar model ------------------------------------------------------

TEST(MetricRefTest, EqualityDebugStringAndToValue) {
  EXPECT_EQ(MetricRef::Double(NAN), MetricRef::Double(-NAN));
  EXPECT_NE(MetricRef::Double(0.0), MetricRef::Double(-0.0));
  EXPECT_NE(MetricRef::Float(1.0f), MetricRef::Double(1.0));
  EXPECT_NE(MetricRef::Int(1), MetricRef::Double(1.0));
  EXPECT_EQ(MetricRef::String("ab"), MetricRef::String(std::string("ab")));
  EXPECT_EQ(MetricRef::Int(-3).DebugString(), "-3");
  EXPECT_EQ(MetricRef::Float(0.5f).DebugString(), "0.5f");
  EXPECT_EQ(MetricRef::String("x").DebugString(), "\"x\"");
  const std::string long_text(40, 'q');
  for (const MetricRef& v : {MetricRef::Int(INT64_MIN), MetricRef::Float(0.1f),
                             MetricRef::Double(1e300), MetricRef::String(long_text)}) {
    const MetricValue owned = v.ToValue();
    EXPECT_EQ(MetricRef::Of(owned), v) << v.DebugString();
  }
}

// Items are added first; their cells may then be set in any order, each
// key's column growing as needed.
TEST(ColumnarTest, CellsSetOutOfOrder) {
  RankResult r;
  const uint32_t d = r.AddKey("d", MetricType::kDouble);
  const uint32_t f = r.AddKey("f", MetricType::kFloat);
  const uint32_t n = r.AddKey("n", MetricType::kInt);
  const uint32_t s = r.AddKey("s", MetricType::kString);
  constexpr size_t kItems = 200;
  for (size_t i = 0; i < kItems; ++i) {
    EXPECT_EQ(r.AddItem(absl::StrCat("id", i), 1.0 / (i + 1), static_cast<uint32_t>(i + 1)), i);
  }
  for (size_t i = kItems; i-- > 0;) {
    if (i % 3 != 0) r.SetString(i, s, absl::StrCat("v", i));
    r.SetInt(i, n, -static_cast<int64_t>(i));
  }
  for (size_t i = 0; i < kItems; i += 2) r.SetDouble((i * 37) % kItems, d, 0.5 * i);
  r.SetFloat(kItems - 1, f, 2.5f);
  r.SetFloat(0, f, -1.5f);
  EXPECT_TRUE(ValidateResult(r).ok());
  for (size_t i = 0; i < kItems; ++i) {
    EXPECT_EQ(r.id(i), absl::StrCat("id", i));
    EXPECT_EQ(r.position(i), i + 1);
    EXPECT_EQ(r.Get(i, n), MetricRef::Int(-static_cast<int64_t>(i)));
    if (i % 3 != 0) {
      EXPECT_EQ(r.Get(i, s), MetricRef::String(absl::StrCat("v", i))) << i;
    } else {
      EXPECT_EQ(r.Get(i, s), std::nullopt) << i;
    }
  }
  for (size_t i = 0; i < kItems; i += 2) {
    EXPECT_EQ(r.Get((i * 37) % kItems, d), MetricRef::Double(0.5 * i));
  }
  EXPECT_EQ(r.column(d).present_count(), kItems / 2);
  EXPECT_EQ(r.column(f).present_count(), 2u);
  EXPECT_EQ(r.Get(0, f), MetricRef::Float(-1.5f));
  EXPECT_EQ(r.Get(kItems - 1, f), MetricRef::Float(2.5f));
  EXPECT_EQ(r.Get(1, f), std::nullopt);
  // A cell set twice keeps the last value and counts once.
  r.SetInt(5, n, 42);
  EXPECT_EQ(r.Get(5, n), MetricRef::Int(42));
  EXPECT_EQ(r.column(n).present_count(), kItems);
}

// A sparse column: which items have a value is its bitmap, 64 items a word
// (the slots of the others hold nothing anyone may read).
TEST(ColumnarTest, SparseColumnsAndPresentWords) {
  RankResult r;
  const uint32_t k = r.AddKey("k", MetricType::kDouble);
  const uint32_t never = r.AddKey("never", MetricType::kInt);
  for (size_t i = 0; i < 130; ++i) r.AddItem("", 0, static_cast<uint32_t>(i + 1));
  for (size_t i : {0, 63, 64, 129}) r.SetDouble(i, k, 1.0 + static_cast<double>(i));
  const Column& c = r.column(k);
  EXPECT_EQ(c.type(), MetricType::kDouble);
  EXPECT_EQ(c.present_count(), 4u);
  ASSERT_GE(c.present_words().size(), 3u);
  EXPECT_EQ(c.present_words()[0], (uint64_t{1} << 63) | 1);
  EXPECT_EQ(c.present_words()[1], uint64_t{1});
  EXPECT_EQ(c.present_words()[2], uint64_t{1} << 1);
  for (size_t w = 3; w < c.present_words().size(); ++w) EXPECT_EQ(c.present_words()[w], 0u);
  for (size_t i = 0; i < 130; ++i) {
    const bool has = i == 0 || i == 63 || i == 64 || i == 129;
    EXPECT_EQ(c.present(i), has) << i;
    if (has) {
      EXPECT_EQ(c.doubles()[i], 1.0 + static_cast<double>(i)) << i;
    }
    EXPECT_EQ(r.Item(i).metrics.size(), has ? 1u : 0u) << i;
  }
  // A key no item has: no words at all, or only zeros.
  const Column& none = r.column(never);
  EXPECT_EQ(none.present_count(), 0u);
  for (uint64_t w : none.present_words()) EXPECT_EQ(w, 0u);
  EXPECT_FALSE(none.present(0));
  EXPECT_FALSE(none.present(100000));
}

// Whole columns: every item gets the key; cells set before are kept and
// the rest start at zero.
TEST(ColumnarTest, MutableColumnsKeepCellsSetBefore) {
  RankResult r;
  const uint32_t d = r.AddKey("d", MetricType::kDouble);
  const uint32_t n = r.AddKey("n", MetricType::kInt);
  const uint32_t s = r.AddKey("s", MetricType::kString);
  for (size_t i = 0; i < 70; ++i) r.AddItem("", 0, 1);
  r.SetDouble(3, d, 7.0);
  r.SetInt(69, n, 9);
  double* ds = r.MutableDoubles(d);
  EXPECT_EQ(ds[3], 7.0);
  EXPECT_EQ(ds[4], 0.0);
  for (size_t i = 0; i < 70; i += 2) ds[i] = static_cast<double>(i);
  int64_t* ns = r.MutableInts(n);
  EXPECT_EQ(ns[69], 9);
  EXPECT_EQ(ns[0], 0);
  const uint32_t a = r.AddStringEntry(s, "a");
  const uint32_t b = r.AddStringEntry(s, "b");
  uint32_t* codes = r.MutableCodes(s);
  for (size_t i = 0; i < 70; ++i) codes[i] = i % 5 == 0 ? b : a;
  for (uint32_t k : {d, n, s}) EXPECT_EQ(r.column(k).present_count(), 70u);
  EXPECT_EQ(r.Get(3, d), MetricRef::Double(7.0));
  EXPECT_EQ(r.Get(4, d), MetricRef::Double(4.0));
  EXPECT_EQ(r.Get(5, d), MetricRef::Double(0.0));
  EXPECT_EQ(r.Get(0, s), MetricRef::String("b"));
  EXPECT_EQ(r.Get(1, s), MetricRef::String("a"));
  EXPECT_TRUE(ValidateResult(r).ok());
}

// A string column's values are codes into its entries: one entry may serve
// many items (a dictionary), entries are not deduplicated, and the empty
// string is an entry like any other.
TEST(ColumnarTest, StringEntriesAndCodes) {
  RankResult r;
  const uint32_t s = r.AddKey("s", MetricType::kString);
  for (size_t i = 0; i < 6; ++i) r.AddItem("", 0, 1);
  const uint32_t ann = r.AddStringEntry(s, "vector_ann");
  const uint32_t empty = r.AddStringEntry(s, "");
  const uint32_t ann_again = r.AddStringEntry(s, "vector_ann");
  const std::string nul("a\0b", 3);
  EXPECT_EQ(ann, 0u);
  EXPECT_EQ(empty, 1u);
  EXPECT_EQ(ann_again, 2u);
  r.SetStringCode(0, s, ann);
  r.SetStringCode(1, s, ann);
  r.SetStringCode(2, s, empty);
  r.SetStringCode(3, s, ann_again);
  r.SetString(4, s, nul);  // A new entry, 3.
  const Column& c = r.column(s);
  EXPECT_EQ(c.entry_count(), 4u);
  EXPECT_EQ(c.entry(0), "vector_ann");
  EXPECT_EQ(c.entry(1), "");
  EXPECT_EQ(c.entry(3), nul);
  EXPECT_EQ(c.entry_bytes(), 2 * 10 + 3u);
  EXPECT_EQ(c.codes()[1], ann);
  EXPECT_EQ(c.string_at(3), "vector_ann");
  EXPECT_EQ(c.at(4), MetricRef::String(nul));
  EXPECT_EQ(r.Get(2, s), MetricRef::String(""));  // Present, and empty.
  EXPECT_EQ(r.Get(5, s), std::nullopt);
  // Equal strings under different codes are equal values.
  EXPECT_EQ(r.Item(0).metrics[0].value, r.Item(3).metrics[0].value);
  EXPECT_TRUE(ValidateResult(r).ok());
}

// Clear() and ResetKeys() keep the memory for the next result, never its
// values: no presence, entries, logs or items of the last result show
// through, even where a key's type changed.
TEST(ColumnarTest, ClearAndResetKeysReuseWithoutStaleValues) {
  RankResult r;
  for (int round = 0; round < 3; ++round) {
    r.Clear();
    EXPECT_EQ(r.key_count(), 0u);
    EXPECT_EQ(r.size(), 0u);
    EXPECT_EQ(r.Get(0, 0), std::nullopt);  // No key 0 any more.
    // Key 0 alternates between a string and a double column.
    const MetricType t0 = round % 2 == 0 ? MetricType::kString : MetricType::kDouble;
    const uint32_t k0 = r.AddKey("k0", t0);
    const uint32_t k1 = r.AddKey("k1", MetricType::kInt);
    r.Reserve(100, 100 * 4);
    const size_t items = 100 - 30 * static_cast<size_t>(round);
    for (size_t i = 0; i < items; ++i) {
      r.AddItem(absl::StrCat("r", round, "-", i), static_cast<double>(i), 1);
      // Round 0 sets every cell; later rounds every other one.
      if (round == 0 || i % 2 == 0) {
        if (t0 == MetricType::kString) {
          r.SetString(i, k0, absl::StrCat("s", round, "-", i));
        } else {
          r.SetDouble(i, k0, static_cast<double>(round * 1000 + i));
        }
      }
      if (round == 0) r.SetInt(i, k1, 5);
      if (round == 0) r.SetLog(i, "log");
    }
    EXPECT_EQ(r.has_logs(), round == 0);
    EXPECT_EQ(r.column(k1).present_count(), round == 0 ? items : 0u);
    EXPECT_EQ(r.column(k0).present_count(), round == 0 ? items : (items + 1) / 2);
    if (t0 == MetricType::kString) {
      EXPECT_EQ(r.column(k0).entry_count(), r.column(k0).present_count());
    }
    for (size_t i = 0; i < items; ++i) {
      EXPECT_EQ(r.id(i), absl::StrCat("r", round, "-", i));
      EXPECT_EQ(r.log(i), round == 0 ? "log" : "");
      EXPECT_EQ(r.Get(i, k1).has_value(), round == 0);
      if (round != 0 && i % 2 == 1) {
        EXPECT_EQ(r.Get(i, k0), std::nullopt) << round << " " << i;
      }
    }
    EXPECT_TRUE(ValidateResult(r).ok());
  }
  // ResetKeys: the same schema again, filled by column.
  const std::vector<MetricKey> schema = {{"a", MetricType::kFloat}, {"b", MetricType::kString}};
  for (int round = 0; round < 2; ++round) {
    r.ResetKeys(schema);
    EXPECT_EQ(r.key_count(), 2u);
    EXPECT_EQ(r.key(1).name, "b");
    EXPECT_EQ(r.size(), 0u);
    for (size_t i = 0; i < 10; ++i) r.AddItem("", 0, 1);
    EXPECT_EQ(r.column(0).present_count(), 0u);
    EXPECT_EQ(r.column(1).entry_count(), 0u);
    float* fs = r.MutableFloats(0);
    for (size_t i = 0; i < 10; ++i) fs[i] = static_cast<float>(round * 10 + i);
    r.SetString(9, 1, round == 0 ? "first" : "second");
    EXPECT_EQ(r.Get(3, 0), MetricRef::Float(static_cast<float>(round * 10 + 3)));
    EXPECT_EQ(r.Get(9, 1), MetricRef::String(round == 0 ? "first" : "second"));
    EXPECT_EQ(r.Get(8, 1), std::nullopt);
    EXPECT_EQ(r.column(1).entry_count(), 1u);
  }
}

// Item(i) is AppendItem's inverse, with the metrics in key-table order.
TEST(ColumnarTest, ItemRoundTrip) {
  RankResult r;
  const uint32_t d = r.AddKey("d", MetricType::kDouble);
  const uint32_t s = r.AddKey("s", MetricType::kString);
  const uint32_t n = r.AddKey("n", MetricType::kInt);
  RankedItem item;
  item.item_id = "sku-9";
  item.score = -0.0;
  item.position = 4;
  // Written in another order than the key table's.
  item.metrics = {{n, MetricValue::Int(INT64_MAX)},
                  {s, MetricValue::String(std::string(50, 'x'))},
                  {d, MetricValue::Double(NAN)}};
  item.log = "a log";
  ASSERT_TRUE(r.AppendItem(RankedItem{}).ok());  // An item with nothing.
  ASSERT_TRUE(r.AppendItem(item).ok());
  const RankedItem empty = r.Item(0);
  EXPECT_EQ(empty.item_id, "");
  EXPECT_TRUE(empty.metrics.empty());
  EXPECT_EQ(empty.log, "");
  const RankedItem back = r.Item(1);
  EXPECT_EQ(back.item_id, item.item_id);
  EXPECT_TRUE(std::signbit(back.score));
  EXPECT_EQ(back.position, item.position);
  EXPECT_EQ(back.log, item.log);
  ASSERT_EQ(back.metrics.size(), 3u);
  EXPECT_EQ(back.metrics[0].key, d);
  EXPECT_EQ(back.metrics[0].value, item.metrics[2].value);  // NaN == NaN.
  EXPECT_EQ(back.metrics[1].key, s);
  EXPECT_EQ(back.metrics[1].value, item.metrics[1].value);
  EXPECT_EQ(back.metrics[2].key, n);
  EXPECT_EQ(back.metrics[2].value, item.metrics[0].value);
  // And back again: the same result.
  RankResult again;
  for (const MetricKey& k : r.keys()) again.AddKey(k.name, k.type);
  for (size_t i = 0; i < r.size(); ++i) ASSERT_TRUE(again.AppendItem(r.Item(i)).ok());
  EXPECT_EQ(DiffResults(r, again), "");
}

TEST(ColumnarTest, LogsSetInAnyOrder) {
  RankResult r;
  for (size_t i = 0; i < 5; ++i) r.AddItem("", 0, 1);
  EXPECT_FALSE(r.has_logs());
  r.SetLog(3, "three");
  r.SetLog(1, "one");
  r.SetLog(4, "");
  EXPECT_TRUE(r.has_logs());
  r.AddItem("", 0, 1);  // An item added after the logs has none.
  const char* want[] = {"", "one", "", "three", "", ""};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(r.log(i), want[i]) << i;
  EXPECT_EQ(r.log_bytes(), 8u);
}

TEST(ColumnarTest, CopiesAreIndependent) {
  RankResult a = Sample();
  RankResult b = a;
  b.SetDouble(0, 0, 99);
  b.SetString(1, 1, "new");
  EXPECT_EQ(a.Get(0, 0), MetricRef::Double(0));
  EXPECT_EQ(a.Get(1, 1), std::nullopt);
  EXPECT_EQ(DiffResults(a, Sample()), "");
}

}  // namespace
}  // namespace rankwire
