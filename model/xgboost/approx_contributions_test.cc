#include "model/xgboost/approx_contributions.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "model/xgboost/node_means.h"
#include "model/xgboost/xgboost_test_util.h"

namespace rankwire::xgboost {
namespace {

XGBoostSpec Parse(const testing::ModelSpec& spec) {
  auto model = XGBoostSpec::Parse(testing::ModelJson(spec), "approx");
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// XGBoost 1.7's CalculateContributionsApprox and its summing, written out
// as plainly as XGBoost writes them: one tree at a time into a zeroed
// vector, walking the row's path, then added to the row's totals.
std::vector<float> Saabas(const XGBoostSpec& model, const float* row) {
  const size_t n = model.num_features();
  std::vector<float> total(n + 1, 0.0f);
  for (const XGBoostTree& tree : model.trees()) {
    const std::vector<float> mean = NodeMeans(tree);
    std::vector<float> this_tree(n + 1, 0.0f);
    float node_value = mean[0];
    this_tree[n] += node_value;
    if (!tree.IsLeaf(0)) {
      int32_t node = 0;
      int32_t split = 0;
      while (!tree.IsLeaf(node)) {
        split = tree.split_feature[node];
        node = tree.Next(node, row[split]);
        const float new_value = mean[node];
        this_tree[split] += new_value - node_value;
        node_value = new_value;
      }
      this_tree[split] += tree.value[node] - node_value;
    }
    for (size_t c = 0; c <= n; ++c) total[c] += this_tree[c];
  }
  total[n] += model.base_margin();
  return total;
}

TEST(ApproxContributionsTest, StumpGivesTheStepToItsFeature) {
  // f1 < 0 (missing: right) ? 2 : -1, covers 30 left, 10 right.
  testing::ModelSpec spec;
  spec.trees.push_back(
      testing::TreeSpec{{1, -1, -1}, {2, -1, -1}, {1, 0, 0}, {0, 2, -1}, {0, 0, 0}, {40, 30, 10}});
  const XGBoostSpec model = Parse(spec);
  const ApproxContributions approx(model);
  const float mean = (2.0f * 30 + -1.0f * 10) / 40;
  const float rows[6] = {5, -1, 5, 5, NAN, 5};
  float out[8];
  approx.Contributions(rows, 2, 3, out);
  EXPECT_FLOAT_EQ(out[1], 2 - mean);
  EXPECT_FLOAT_EQ(out[3], 0.5f + mean);
  EXPECT_FLOAT_EQ(out[4 + 1], -1 - mean);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[2], 0);
}

TEST(ApproxContributionsTest, EqualsXGBoostsArithmeticBitForBit) {
  for (int depth : {1, 3, 6, 9}) {
    for (int features : {2, 12}) {
      const XGBoostSpec model = Parse(testing::RandomModel(depth + features, 40, depth, features));
      const std::vector<float> rows = testing::RandomRows(depth, 35, features);
      // Both layouts: the walk (no bytes for tables), the tables.
      for (const size_t budget : {size_t{0}, SIZE_MAX}) {
        const ApproxContributions approx(model, budget);
        ASSERT_EQ(approx.uses_tables(), budget != 0);
        const size_t width = features + 1;
        std::vector<float> out(35 * width);
        approx.Contributions(rows.data(), 35, features, out.data());
        for (size_t r = 0; r < 35; ++r) {
          const std::vector<float> want = Saabas(model, rows.data() + r * features);
          for (size_t f = 0; f < width; ++f) {
            ASSERT_EQ(out[r * width + f], want[f])
                << "depth " << depth << " features " << features << " row " << r << " col " << f
                << (budget != 0 ? " tables" : " walk");
          }
        }
      }
    }
  }
}

TEST(ApproxContributionsTest, TablesExactlyWhenTheirBytesFit) {
  for (int depth : {2, 6, 10}) {
    const XGBoostSpec model = Parse(testing::RandomModel(depth, 30, depth, 20));
    const size_t tables = ApproxContributions(model).MemoryBytes();
    const ApproxContributions fits(model, tables);
    const ApproxContributions short_one(model, tables - 1);
    EXPECT_TRUE(fits.uses_tables()) << depth;
    EXPECT_EQ(fits.MemoryBytes(), tables) << depth;
    EXPECT_FALSE(short_one.uses_tables()) << depth;
    // The walk holds 24 B per node; the tables more, the deeper the trees.
    EXPECT_LT(short_one.MemoryBytes(), tables) << depth;
  }
}

TEST(ApproxContributionsTest, ASingleLeafModelHasOnlyABias) {
  testing::ModelSpec spec;
  spec.trees.push_back(testing::TreeSpec{{-1}, {-1}, {0}, {1.5f}, {0}, {10}});
  const XGBoostSpec model = Parse(spec);
  const ApproxContributions approx(model);
  const float row[3] = {1, 2, 3};
  float out[4];
  approx.Contributions(row, 1, 3, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[3], 0.5f + 1.5f);
}

}  // namespace
}  // namespace rankwire::xgboost
