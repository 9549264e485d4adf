// XGBoostModel's memory: what MemoryBytes() says is what the heap holds,
// and a loaded model holds at most twice what XGBoost itself keeps per node.
// (How long a load takes is measured by bench/xgboost_bench's load cells,
// not here.) Its explanations in each --explain mode.
#include "model/xgboost/xgboost_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "model/xgboost/approx_contributions.h"
#include "model/xgboost/tree_shap.h"
#include "model/xgboost/xgboost_spec.h"
#include "model/xgboost/xgboost_test_util.h"
#include "request/request_view.h"

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

namespace rankwire {
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
  xgboost::testing::ModelSpec spec = xgboost::testing::RandomModel(seed, trees, depth, features);
  spec.feature_names[1] = "user.age";
  spec.feature_names[2] = "ctx.hour_of_day";
  absl::StatusOr<xgboost::XGBoostSpec> model =
      xgboost::XGBoostSpec::Parse(xgboost::testing::ModelJson(spec), "generated");
  EXPECT_TRUE(model.ok()) << model.status();
  const int64_t before = g_live_bytes.load();
  auto scorer = std::make_unique<XGBoostModel>(*model, "m", "1", XGBoostModelOptions{});
  const int64_t heap = g_live_bytes.load() - before;
  return {model->num_nodes(), heap, scorer->MemoryBytes()};
}

TEST(XGBoostModelTest, MemoryBytesIsWhatTheHeapHolds) {
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

TEST(XGBoostModelTest, AModelHoldsAtMostTwiceXGBoostsBytesPerNode) {
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

TEST(XGBoostModelTest, ExplainModesByName) {
  for (ExplainMode mode : {ExplainMode::kNone, ExplainMode::kExact, ExplainMode::kApprox}) {
    absl::StatusOr<ExplainMode> parsed = ParseExplainMode(ExplainModeName(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_EQ(ParseExplainMode("shap").status().code(), absl::StatusCode::kInvalidArgument);
}

// A request whose items carry the model's features x0..x5 (x1, x2 as the
// user feature "age" and the context value "hour_of_day").
rank::v1::RankRequest ExplainRequest(const std::vector<float>& rows, size_t n) {
  rank::v1::RankRequest request;
  request.set_request_id("r");
  request.set_top_n(static_cast<uint32_t>(n));
  (*request.mutable_user_features())["age"] = rows[1];
  (*request.mutable_context())["hour_of_day"] = absl::StrCat(rows[2]);
  for (const char* name : {"x0", "x3", "x4", "x5"}) request.add_item_feature_names(name);
  for (size_t c = 0; c < n; ++c) {
    rank::v1::Candidate* candidate = request.add_candidates();
    candidate->set_item_id(absl::StrCat("i", c));
    for (int f : {0, 3, 4, 5}) candidate->add_features(rows[c * 6 + f]);
  }
  return request;
}

TEST(XGBoostModelTest, ExplainsTheShownItemsInEachMode) {
  xgboost::testing::ModelSpec spec = xgboost::testing::RandomModel(11, 40, 5, 6);
  spec.feature_names[1] = "user.age";
  spec.feature_names[2] = "ctx.hour_of_day";
  absl::StatusOr<xgboost::XGBoostSpec> model =
      xgboost::XGBoostSpec::Parse(xgboost::testing::ModelJson(spec), "generated");
  ASSERT_TRUE(model.ok()) << model.status();
  // Rows share the user and context values (a request's; the context's as
  // text, so one that prints exactly).
  std::vector<float> rows = xgboost::testing::RandomRows(4, 20, 6, 0.0f);
  for (size_t c = 0; c < 20; ++c) rows[c * 6 + 1] = 0.75f, rows[c * 6 + 2] = -1.5f;
  const rank::v1::RankRequest request = ExplainRequest(rows, 20);
  const OwnedRequestView view(request);
  ASSERT_TRUE(view.status().ok()) << view.status();
  const std::vector<uint32_t> shown = {7, 3, 19};
  const xgboost::TreeShap exact(*model);
  const xgboost::ApproxContributions approx(*model);
  for (ExplainMode mode : {ExplainMode::kExact, ExplainMode::kApprox}) {
    XGBoostModelOptions options;
    options.mode = mode;
    const XGBoostModel scorer(*model, "m", "1", options);
    ASSERT_TRUE(scorer.outputs()->explains);
    std::vector<int> column(scorer.inputs().item.size());
    for (size_t i = 0; i < column.size(); ++i) {
      const auto& names = request.item_feature_names();
      column[i] = static_cast<int>(std::find(names.begin(), names.end(), scorer.inputs().item[i]) -
                                   names.begin());
    }
    std::vector<Explanation> out;
    const std::vector<std::string> no_sources;
    scorer.Explain(
        ScoreInput{view.view(), view.view().features.data(), column, 20, nullptr, no_sources},
        shown, 3, &out);
    ASSERT_EQ(out.size(), shown.size());
    for (size_t i = 0; i < shown.size(); ++i) {
      std::vector<float> want(7);
      if (mode == ExplainMode::kExact) {
        exact.Contributions(rows.data() + shown[i] * 6, 1, 6, want.data());
      } else {
        approx.Contributions(rows.data() + shown[i] * 6, 1, 6, want.data());
      }
      // The three largest by magnitude, largest first.
      std::vector<int> order = {0, 1, 2, 3, 4, 5};
      std::sort(order.begin(), order.end(),
                [&](int a, int b) { return std::fabs(want[a]) > std::fabs(want[b]); });
      ASSERT_EQ(out[i].contributions.size(), 3u);
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(out[i].contributions[k].first, spec.feature_names[order[k]]);
        EXPECT_EQ(out[i].contributions[k].second, want[order[k]]);
      }
    }
  }
  XGBoostModelOptions none;
  none.mode = ExplainMode::kNone;
  EXPECT_FALSE(XGBoostModel(*model, "m", "1", none).outputs()->explains);
}

}  // namespace
}  // namespace rankwire
