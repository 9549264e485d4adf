#include "model/xgboost/tree_shap.h"

#include <cmath>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "model/xgboost/tree_shap_reference.h"
#include "model/xgboost/xgboost_test_util.h"

namespace rankwire::xgboost {
namespace {

XGBoostSpec Parse(const testing::ModelSpec& spec) {
  auto model = XGBoostSpec::Parse(testing::ModelJson(spec), "shap");
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

std::vector<TreeShap::Kernel> Kernels() {
  std::vector<TreeShap::Kernel> kernels = {TreeShap::Kernel::kPortable};
  if (TreeShap::Avx512Available()) kernels.push_back(TreeShap::Kernel::kAvx512);
  return kernels;
}

// TreeShap's contributions of `rows` against the classic algorithm's
// (XGBoost's arithmetic), row by row: within `tolerance` (relative above 1).
void ExpectMatchesReference(const XGBoostSpec& model, const std::vector<float>& rows,
                            TreeShap::Kernel kernel, double tolerance, const std::string& what) {
  const size_t width = model.num_features() + 1;
  const size_t n = rows.size() / model.num_features();
  const TreeShap shap(model, kernel);
  const ReferenceTreeShap reference(model);
  std::vector<float> out(n * width);
  shap.Contributions(rows.data(), n, model.num_features(), out.data());
  std::vector<double> want(width);
  for (size_t r = 0; r < n; ++r) {
    reference.Contributions(rows.data() + r * model.num_features(), want.data());
    for (size_t f = 0; f < width; ++f) {
      ASSERT_NEAR(out[r * width + f], want[f], tolerance * std::max(1.0, std::abs(want[f])))
          << what << " kernel " << shap.kernel_name() << " row " << r << " feature " << f;
    }
  }
}

TEST(TreeShapTest, StumpGivesTheLeafMinusTheExpectationToItsFeature) {
  // f1 < 0 (missing: right) ? 2 : -1, covers 30 left, 10 right.
  testing::ModelSpec spec;
  spec.trees.push_back(
      testing::TreeSpec{{1, -1, -1}, {2, -1, -1}, {1, 0, 0}, {0, 2, -1}, {0, 0, 0}, {40, 30, 10}});
  const XGBoostSpec model = Parse(spec);
  const float expectation = (2.0f * 30 + -1.0f * 10) / 40;
  for (TreeShap::Kernel kernel : Kernels()) {
    const TreeShap shap(model, kernel);
    const float rows[6] = {5, -1, 5, 5, NAN, 5};  // goes left; missing goes right
    float out[8];
    shap.Contributions(rows, 2, 3, out);
    EXPECT_FLOAT_EQ(out[0], 0);
    EXPECT_FLOAT_EQ(out[1], 2 - expectation);
    EXPECT_FLOAT_EQ(out[2], 0);
    EXPECT_FLOAT_EQ(out[3], 0.5f + expectation);  // bias: base_score + expectation
    EXPECT_FLOAT_EQ(out[4 + 1], -1 - expectation);
    EXPECT_FLOAT_EQ(out[4 + 3], 0.5f + expectation);
  }
}

TEST(TreeShapTest, MatchesTheClassicAlgorithmOnRandomModels) {
  // Depth 1 (one quadrature point) to 12 (six); three features make most
  // deep paths split on a feature again.
  for (int depth : {1, 2, 3, 4, 5, 6, 7, 8, 10, 12}) {
    for (int features : {3, 18}) {
      const XGBoostSpec model =
          Parse(testing::RandomModel(depth * 10 + features, 20, depth, features));
      const std::vector<float> rows = testing::RandomRows(depth, 21, features);
      for (TreeShap::Kernel kernel : Kernels()) {
        ExpectMatchesReference(
            model, rows, kernel, 1e-5,
            "depth " + std::to_string(depth) + " features " + std::to_string(features));
      }
    }
  }
}

TEST(TreeShapTest, ContributionsSumToTheMargin) {
  const XGBoostSpec model = Parse(testing::RandomModel(7, 50, 6, 6));
  const std::vector<float> rows = testing::RandomRows(7, 20, 6);
  const TreeShap shap(model);
  std::vector<float> out(20 * 7);
  shap.Contributions(rows.data(), 20, 6, out.data());
  for (size_t r = 0; r < 20; ++r) {
    const double sum = std::accumulate(out.begin() + r * 7, out.begin() + r * 7 + 7, 0.0);
    const double margin = model.PredictMargin(rows.data() + r * 6);
    EXPECT_NEAR(sum, margin, 1e-4 * std::max(1.0, std::abs(margin))) << "row " << r;
  }
}

TEST(TreeShapTest, ARowGetsTheSameValuesWhateverItIsExplainedWith) {
  // 37 rows: blocks of 16, 16 and 5 lanes; each row alone; a row stride
  // wider than the features.
  const XGBoostSpec model = Parse(testing::RandomModel(3, 30, 6, 5));
  const std::vector<float> packed = testing::RandomRows(3, 37, 5);
  std::vector<float> wide(37 * 8, 99.0f);
  for (size_t r = 0; r < 37; ++r) {
    std::copy(packed.begin() + r * 5, packed.begin() + r * 5 + 5, wide.begin() + r * 8);
  }
  const TreeShap shap(model);
  std::vector<float> together(37 * 6), alone(6);
  shap.Contributions(wide.data(), 37, 8, together.data());
  for (size_t r = 0; r < 37; ++r) {
    shap.Contributions(packed.data() + r * 5, 1, 5, alone.data());
    for (size_t f = 0; f < 6; ++f) EXPECT_EQ(together[r * 6 + f], alone[f]) << r << " " << f;
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
  const XGBoostSpec model = Parse(spec);
  const float expectation = (1 * 2 + 2 * 2 + 3 * 4) / 8.0f;
  for (TreeShap::Kernel kernel : Kernels()) {
    const TreeShap shap(model, kernel);
    const float row[3] = {-2, 7, 7};
    float out[4];
    shap.Contributions(row, 1, 3, out);
    EXPECT_FLOAT_EQ(out[0], 1 - expectation);
    EXPECT_EQ(out[1], 0);
    EXPECT_EQ(out[2], 0);
  }
}

TEST(TreeShapTest, AChildWithNoCoverIsFinite) {
  // f0 < 0 ? (f1 < 0 ? 1 : 2 [cover 0]) : 3. XGBoost's arithmetic has no
  // zero division here (no feature repeats): the two agree.
  testing::ModelSpec spec;
  spec.trees.push_back(testing::TreeSpec{{1, 3, -1, -1, -1},
                                         {2, 4, -1, -1, -1},
                                         {0, 1, 0, 0, 0},
                                         {0, 0, 3, 1, 2},
                                         {0, 0, 0, 0, 0},
                                         {8, 4, 4, 4, 0}});
  const XGBoostSpec model = Parse(spec);
  const std::vector<float> rows = {-1, 1, 0, -1, -1, 0, 1, NAN, 0, NAN, NAN, 0};
  for (TreeShap::Kernel kernel : Kernels()) {
    ExpectMatchesReference(model, rows, kernel, 1e-6, "zero cover");
  }
}

TEST(TreeShapTest, ReportsItsMemory) {
  const XGBoostSpec model = Parse(testing::RandomModel(5, 10, 6, 6));
  const TreeShap shap(model);
  EXPECT_GT(shap.MemoryBytes(), model.num_nodes() * sizeof(float));
  EXPECT_LT(shap.MemoryBytes(), model.num_nodes() * 100);
}

}  // namespace
}  // namespace rankwire::xgboost
