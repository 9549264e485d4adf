#include "model/xgboost/tree_evaluator.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "model/xgboost/xgboost_test_util.h"

namespace rankwire::xgboost {
namespace {

std::vector<TreeEvaluator::Kernel> Kernels() {
  std::vector<TreeEvaluator::Kernel> kernels = {TreeEvaluator::Kernel::kScalar};
  if (TreeEvaluator::Avx512Available()) kernels.push_back(TreeEvaluator::Kernel::kAvx512);
  return kernels;
}

XGBoostSpec Parse(const testing::ModelSpec& spec) {
  auto model = XGBoostSpec::Parse(testing::ModelJson(spec), "random");
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// Every kernel gives the reference walk's float, bit for bit, for any number
// of rows (partial blocks and passes) and a row stride wider than the model.
void ExpectSameAsReference(const XGBoostSpec& model, size_t n_rows, size_t stride, uint32_t seed) {
  const size_t features = model.num_features();
  std::vector<float> rows = testing::RandomRows(seed, n_rows * stride / features + 1, features);
  rows.resize(n_rows * stride);
  for (TreeEvaluator::Kernel kernel : Kernels()) {
    const TreeEvaluator evaluator(model, kernel);
    std::vector<float> margins(n_rows, -1), scores(n_rows, -1);
    evaluator.ScoreMargin(rows.data(), n_rows, stride, margins.data());
    evaluator.Score(rows.data(), n_rows, stride, scores.data());
    for (size_t r = 0; r < n_rows; ++r) {
      const float* row = rows.data() + r * stride;
      ASSERT_EQ(margins[r], model.PredictMargin(row))
          << evaluator.kernel_name() << " row " << r << " of " << n_rows;
      ASSERT_EQ(scores[r], model.Predict(row)) << evaluator.kernel_name() << " row " << r;
    }
  }
}

TEST(TreeEvaluatorTest, MatchesReferenceOverDepthsAndRowCounts) {
  for (int depth = 1; depth <= 8; ++depth) {
    const XGBoostSpec model = Parse(testing::RandomModel(depth, 40, depth, 7));
    for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{64}, size_t{100}}) {
      ExpectSameAsReference(model, n, model.num_features(), depth * 1000 + n);
    }
  }
}

TEST(TreeEvaluatorTest, DeepTreesUseTheCompactLayoutAndStillMatch) {
  const XGBoostSpec model = Parse(testing::RandomModel(77, 20, 12, 9));
  EXPECT_GT(model.max_depth(), 8);
  ExpectSameAsReference(model, 130, model.num_features(), 5);
  // Compact trees are not padded to 2^depth nodes.
  const TreeEvaluator evaluator(model);
  EXPECT_LT(evaluator.MemoryBytes(), 40 * model.num_nodes() + 4096);
}

TEST(TreeEvaluatorTest, SingleLeafTreesStridesAndLogistic) {
  testing::ModelSpec spec = testing::RandomModel(3, 30, 5, 4);
  spec.trees.push_back(testing::TreeSpec{{-1}, {-1}, {0}, {0.75f}, {0}, {1}});
  spec.objective = "binary:logistic";
  spec.base_score = "3E-1";
  const XGBoostSpec model = Parse(spec);
  ExpectSameAsReference(model, 70, 11, 9);
}

TEST(TreeEvaluatorTest, MissingFollowsDefaultAndAllMissingRowsScore) {
  const XGBoostSpec model = Parse(testing::RandomModel(11, 50, 6, 5));
  std::vector<float> rows(33 * 5, NAN);
  for (TreeEvaluator::Kernel kernel : Kernels()) {
    const TreeEvaluator evaluator(model, kernel);
    std::vector<float> out(33);
    evaluator.ScoreMargin(rows.data(), 33, 5, out.data());
    for (float score : out) EXPECT_EQ(score, model.PredictMargin(rows.data()));
  }
}

TEST(TreeEvaluatorTest, InfiniteFeatureValuesCompareAsXGBoostDoes) {
  const XGBoostSpec model = Parse(testing::RandomModel(12, 30, 4, 3));
  std::vector<float> rows = {INFINITY, -INFINITY, 0.0f, -INFINITY, INFINITY, NAN};
  ExpectSameAsReference(model, 2, 3, 1);
  for (TreeEvaluator::Kernel kernel : Kernels()) {
    const TreeEvaluator evaluator(model, kernel);
    std::vector<float> out(2);
    evaluator.ScoreMargin(rows.data(), 2, 3, out.data());
    EXPECT_EQ(out[0], model.PredictMargin(rows.data()));
    EXPECT_EQ(out[1], model.PredictMargin(rows.data() + 3));
  }
}

TEST(TreeEvaluatorTest, AWideModelCopiesOnlyTheFeaturesItsSplitsRead) {
  // 100,000 features, of which the trees read at most a few hundred: a
  // block must not be 100,000 x 2 x 16 floats.
  testing::ModelSpec spec = testing::RandomModel(21, 20, 5, 100000);
  const XGBoostSpec model = Parse(spec);
  ExpectSameAsReference(model, 40, model.num_features(), 3);
  const TreeEvaluator evaluator(model);
  EXPECT_LT(evaluator.MemoryBytes(), 100000 * 8 + 64 * 1024);
}

TEST(TreeEvaluatorTest, MemoryIsWithinTwiceXGBoostsNodes) {
  // XGBoost holds a node in 20 bytes (RegTree::Node) plus 16 of statistics.
  const XGBoostSpec model = Parse(testing::RandomModel(5, 300, 6, 18));
  const TreeEvaluator evaluator(model);
  EXPECT_LE(evaluator.MemoryBytes(), 2 * 36 * model.num_nodes());
}

}  // namespace
}  // namespace rankwire::xgboost
