// XGBoostScorer's memory: what MemoryBytes() says is what the heap holds,
// and a loaded model holds at most twice what XGBoost itself keeps per node.
// (How long a load takes is measured by bench/xgboost_bench's load cells,
// not here.)
#include "server/xgboost_scorer.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/xgboost/xgboost_model.h"
#include "server/xgboost/xgboost_test_util.h"

// Every operator new in this binary counts its bytes (a size prefix, so
// delete can subtract them whatever the allocator). Out of line, so that the
// compiler does not see malloc's pointer offset into a new'd one.
namespace {
std::atomic<int64_t> g_live_bytes{0};
constexpr size_t kPrefix = alignof(std::max_align_t);

[[gnu::noinline]] void* CountedAllocate(size_t size) {
  char* p = static_cast<char*>(std::malloc(size + kPrefix));
  if (p == nullptr) throw std::bad_alloc();
  *reinterpret_cast<size_t*>(p) = size;
  g_live_bytes.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
  return p + kPrefix;
}

[[gnu::noinline]] void CountedRelease(void* ptr) noexcept {
  if (ptr == nullptr) return;
  char* p = static_cast<char*>(ptr) - kPrefix;
  g_live_bytes.fetch_sub(static_cast<int64_t>(*reinterpret_cast<size_t*>(p)),
                         std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void* operator new(size_t size) { return CountedAllocate(size); }
void* operator new[](size_t size) { return CountedAllocate(size); }
void operator delete(void* ptr) noexcept { CountedRelease(ptr); }
void operator delete[](void* ptr) noexcept { CountedRelease(ptr); }
void operator delete(void* ptr, size_t) noexcept { CountedRelease(ptr); }
void operator delete[](void* ptr, size_t) noexcept { CountedRelease(ptr); }

namespace rankwire::server {
namespace {

// What XGBoost 1.7 keeps per node in memory: RegTree::Node (parent, left,
// right, feature index with the default direction, threshold or leaf value:
// 20 bytes) and RTreeNodeStat (loss change, sum of hessians, base weight,
// leaf count: 16 bytes).
constexpr size_t kXGBoostNodeBytes = 36;

struct Held {
  size_t nodes;
  int64_t heap;      // bytes the scorer's allocations hold
  size_t accounted;  // its MemoryBytes()
};

Held Load(int trees, int depth, int features, int seed) {
  xgb::testing::ModelSpec spec = xgb::testing::RandomModel(seed, trees, depth, features);
  spec.feature_names[1] = "user.age";
  spec.feature_names[2] = "ctx.hour_of_day";
  absl::StatusOr<xgb::XGBoostModel> model =
      xgb::XGBoostModel::Parse(xgb::testing::ModelJson(spec), "generated");
  EXPECT_TRUE(model.ok()) << model.status();
  const int64_t before = g_live_bytes.load();
  auto scorer = std::make_unique<XGBoostScorer>(*model, "m", "1", XGBoostScorerOptions{});
  const int64_t heap = g_live_bytes.load() - before;
  return {model->num_nodes(), heap, scorer->MemoryBytes()};
}

TEST(XGBoostScorerTest, MemoryBytesIsWhatTheHeapHolds) {
  for (int depth : {2, 4, 6, 8, 12}) {
    const Held held = Load(300, depth, 18, depth);
    SCOPED_TRACE(absl::StrCat("300 trees, depth ", depth, ": ", held.nodes, " nodes, ", held.heap,
                              " bytes held, ", held.accounted, " accounted"));
    // The scorer's own object is on the heap too, and small strings and
    // vectors' headers are counted in place.
    EXPECT_GE(static_cast<int64_t>(held.accounted), held.heap * 95 / 100);
    EXPECT_LE(static_cast<int64_t>(held.accounted), held.heap);
  }
}

TEST(XGBoostScorerTest, AModelHoldsAtMostTwiceXGBoostsBytesPerNode) {
  // 300 trees at the depths rankers train (XGBoost's default is 6), and a
  // deep sparse one (stored with child links, not padded).
  for (int depth : {4, 6, 8, 12}) {
    const Held held = Load(300, depth, 40, 100 + depth);
    std::printf("300 trees, depth %2d: %6zu nodes, %8lld bytes held, %.1f per node\n", depth,
                held.nodes, static_cast<long long>(held.heap),
                static_cast<double>(held.heap) / held.nodes);
    EXPECT_LE(held.heap, static_cast<int64_t>(2 * held.nodes * kXGBoostNodeBytes));
  }
}

}  // namespace
}  // namespace rankwire::server
