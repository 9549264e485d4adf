#include "server/xgboost/tree_shap.h"

#include <cmath>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "server/xgboost/xgboost_test_util.h"

namespace rankwire::xgb {
namespace {

XGBoostModel Parse(const testing::ModelSpec& spec) {
  auto model = XGBoostModel::Parse(testing::ModelJson(spec), "shap");
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

TEST(TreeShapTest, StumpGivesTheLeafMinusTheExpectationToItsFeature) {
  // f1 < 0 (missing: right) ? 2 : -1, covers 30 left, 10 right.
  testing::ModelSpec spec;
  spec.trees.push_back(
      testing::TreeSpec{{1, -1, -1}, {2, -1, -1}, {1, 0, 0}, {0, 2, -1}, {0, 0, 0}, {40, 30, 10}});
  const XGBoostModel model = Parse(spec);
  const TreeShap shap(model);
  const float expectation = (2.0f * 30 + -1.0f * 10) / 40;
  double out[4];
  const float left_row[3] = {5, -1, 5};
  shap.Contributions(left_row, out);
  EXPECT_FLOAT_EQ(out[0], 0);
  EXPECT_FLOAT_EQ(out[1], 2 - expectation);
  EXPECT_FLOAT_EQ(out[2], 0);
  EXPECT_FLOAT_EQ(out[3], 0.5f + expectation);  // bias: base_score + expectation
  const float missing_row[3] = {5, NAN, 5};
  shap.Contributions(missing_row, out);
  EXPECT_FLOAT_EQ(out[1], -1 - expectation);
}

TEST(TreeShapTest, ContributionsSumToTheMarginForRandomModels) {
  for (int depth : {1, 3, 6, 10}) {
    const XGBoostModel model = Parse(testing::RandomModel(depth, 25, depth, 6));
    const TreeShap shap(model);
    const std::vector<float> rows = testing::RandomRows(depth, 20, 6);
    for (size_t r = 0; r < 20; ++r) {
      std::vector<double> out(7);
      shap.Contributions(rows.data() + r * 6, out.data());
      const double sum = std::accumulate(out.begin(), out.end(), 0.0);
      const double margin = model.PredictMargin(rows.data() + r * 6);
      EXPECT_NEAR(sum, margin, 1e-4 * std::max(1.0, std::abs(margin)))
          << "depth " << depth << " row " << r;
    }
  }
}

TEST(TreeShapTest, FeatureSplitTwiceOnAPathIsCountedOnce) {
  // f0 < 0 ? (f0 < -1 ? 1 : 2) : 3: only f0 matters, so it takes it all.
  testing::ModelSpec spec;
  spec.trees.push_back(testing::TreeSpec{{1, 3, -1, -1, -1},
                                         {2, 4, -1, -1, -1},
                                         {0, 0, 0, 0, 0},
                                         {0, -1, 3, 1, 2},
                                         {0, 0, 0, 0, 0},
                                         {8, 4, 4, 2, 2}});
  const XGBoostModel model = Parse(spec);
  const TreeShap shap(model);
  const float row[3] = {-2, 7, 7};
  double out[4];
  shap.Contributions(row, out);
  const float expectation = (1 * 2 + 2 * 2 + 3 * 4) / 8.0f;
  EXPECT_FLOAT_EQ(out[0], 1 - expectation);
  EXPECT_EQ(out[1], 0);
  EXPECT_EQ(out[2], 0);
}

}  // namespace
}  // namespace rankwire::xgb
