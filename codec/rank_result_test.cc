// Tests of codec/rank_result.h: the 12-byte MetricValue, the model's
// invariants (ValidateResult) and semantic comparison (DiffResults).
#include "codec/rank_result.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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
  for (int i = 0; i < 50; ++i) texts.push_back(std::string(11 + i, static_cast<char>('a' + i % 26)));
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
    }  // Most die before their chunk is sealed.
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

// A small valid result: two keys, three items.
RankResult Sample() {
  RankResult r;
  const uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
  const uint32_t src = r.AddKey("recall.source", MetricType::kString);
  r.AddKey("unused", MetricType::kInt);
  for (int i = 0; i < 3; ++i) {
    RankedItem& item = r.items.emplace_back();
    item.item_id = "sku-" + std::to_string(i);
    item.score = 1.0 / (i + 1);
    item.position = static_cast<uint32_t>(i + 1);
    item.metrics.push_back({ctr, MetricValue::Double(0.1 * i)});
    if (i != 1) item.metrics.push_back({src, MetricValue::String("vector_ann")});
    item.log = i == 2 ? "log line" : "";
  }
  return r;
}

TEST(RankResultTest, KeysAndLookups) {
  RankResult r = Sample();
  EXPECT_EQ(r.FindKey("recall.source"), 1u);
  EXPECT_EQ(r.FindKey("nope"), std::nullopt);
  ASSERT_NE(r.FindMetric(0, "recall.source"), nullptr);
  EXPECT_EQ(r.FindMetric(0, "recall.source")->string_value(), "vector_ann");
  EXPECT_EQ(r.FindMetric(1, "recall.source"), nullptr);  // Item 1 lacks it.
  EXPECT_EQ(r.FindMetric(0, "unused"), nullptr);
  EXPECT_EQ(r.FindMetric(9, "score.ctr"), nullptr);  // No item 9.
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

TEST(ValidateResultTest, KeyIndexOutOfRange) {
  RankResult r = Sample();
  r.items[2].metrics.push_back({3, MetricValue::Int(1)});
  absl::Status s = ValidateResult(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("item 2"));
  EXPECT_THAT(s.message(), HasSubstr("out of range"));
}

TEST(ValidateResultTest, ValueOfTheWrongType) {
  RankResult r = Sample();
  r.items[1].metrics[0].value = MetricValue::Float(0.5f);  // score.ctr is a double.
  absl::Status s = ValidateResult(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("score.ctr"));
  EXPECT_THAT(s.message(), HasSubstr("float"));
  EXPECT_THAT(s.message(), HasSubstr("double"));
}

TEST(ValidateResultTest, KeyTwiceInOneItem) {
  RankResult r = Sample();
  r.items[1].metrics.push_back({0, MetricValue::Double(1)});
  absl::Status s = ValidateResult(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("item 1"));
  EXPECT_THAT(s.message(), HasSubstr("twice"));
}

TEST(ValidateResultTest, SameKeyInDifferentItemsIsFine) {
  RankResult r;
  const uint32_t k = r.AddKey("k", MetricType::kInt);
  for (int i = 0; i < 4; ++i) {
    r.items.emplace_back().metrics.push_back({k, MetricValue::Int(i)});
  }
  EXPECT_TRUE(ValidateResult(r).ok());
}

TEST(DiffResultsTest, EqualResults) {
  EXPECT_EQ(DiffResults(Sample(), Sample()), "");
  EXPECT_EQ(DiffResults(RankResult{}, RankResult{}), "");
}

TEST(DiffResultsTest, KeyOrderAndMetricOrderDoNotMatter) {
  RankResult a = Sample();
  // The same result with its key table reversed and metrics reordered.
  RankResult b;
  b.AddKey("unused", MetricType::kInt);
  b.AddKey("recall.source", MetricType::kString);
  b.AddKey("score.ctr", MetricType::kDouble);
  for (const RankedItem& item : a.items) {
    RankedItem copy = item;
    copy.metrics.clear();
    for (auto it = item.metrics.rbegin(); it != item.metrics.rend(); ++it) {
      copy.metrics.push_back({2 - it->key, it->value});
    }
    b.items.push_back(copy);
  }
  EXPECT_EQ(DiffResults(a, b), "");
  EXPECT_EQ(DiffResults(b, a), "");
}

TEST(DiffResultsTest, ReportsEachKindOfDifference) {
  const RankResult a = Sample();
  auto diff = [&](auto mutate) {
    RankResult b = Sample();
    mutate(b);
    return DiffResults(a, b);
  };
  EXPECT_THAT(diff([](RankResult& b) { b.AddKey("extra", MetricType::kInt); }), HasSubstr("key count"));
  EXPECT_THAT(diff([](RankResult& b) { b.keys[2].name = "renamed"; }), HasSubstr("renamed"));
  EXPECT_THAT(diff([](RankResult& b) { b.keys[2].type = MetricType::kFloat; }), HasSubstr("type"));
  EXPECT_THAT(diff([](RankResult& b) { b.items.pop_back(); }), HasSubstr("item count"));
  EXPECT_THAT(diff([](RankResult& b) { b.items[1].item_id = "other"; }), HasSubstr("item 1: id"));
  EXPECT_THAT(diff([](RankResult& b) { b.items[0].score = 7; }), HasSubstr("item 0: score"));
  EXPECT_THAT(diff([](RankResult& b) { b.items[2].position = 9; }), HasSubstr("position"));
  EXPECT_THAT(diff([](RankResult& b) { b.items[2].log = "other"; }), HasSubstr("log"));
  EXPECT_THAT(diff([](RankResult& b) { b.items[1].metrics.clear(); }), HasSubstr("metric count"));
  EXPECT_THAT(diff([](RankResult& b) { b.items[0].metrics[0].value = MetricValue::Double(9); }),
              HasSubstr("score.ctr"));
  EXPECT_THAT(diff([](RankResult& b) {
                b.items[1].metrics[0] = {2, MetricValue::Int(0)};  // Another key.
              }),
              HasSubstr("metric \""));
  EXPECT_THAT(diff([](RankResult& b) {
                b.items[2].metrics[1].value = MetricValue::String("vector_ann2");
              }),
              HasSubstr("recall.source"));
}

TEST(DiffResultsTest, ScoresCompareLikeMetricValues) {
  RankResult a = Sample(), b = Sample();
  a.items[0].score = b.items[0].score = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(DiffResults(a, b), "");
  a.items[0].score = 0.0;
  b.items[0].score = -0.0;
  EXPECT_THAT(DiffResults(a, b), Not(IsEmpty()));
}

}  // namespace
}  // namespace rankwire
