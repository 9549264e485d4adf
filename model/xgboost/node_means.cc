#include "model/xgboost/node_means.h"

namespace rankwire::xgboost {
namespace {

float FillMeans(const XGBoostTree& tree, int32_t node, std::vector<float>* mean) {
  float result;
  if (tree.IsLeaf(node)) {
    result = tree.value[node];
  } else {
    const int32_t left = tree.left[node];
    const int32_t right = tree.right[node];
    result = FillMeans(tree, left, mean) * tree.cover[left];
    result += FillMeans(tree, right, mean) * tree.cover[right];
    result /= tree.cover[node];
  }
  (*mean)[node] = result;
  return result;
}

}  // namespace

std::vector<float> NodeMeans(const XGBoostTree& tree) {
  std::vector<float> mean(tree.left.size(), 0.0f);
  if (!mean.empty()) FillMeans(tree, 0, &mean);
  return mean;
}

float ContributionBias(const XGBoostSpec& model) {
  float bias = 0;
  for (const XGBoostTree& tree : model.trees()) bias += NodeMeans(tree)[0];
  return bias + model.base_margin();
}

}  // namespace rankwire::xgboost
