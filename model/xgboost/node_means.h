// NodeMeans: each node's expected value (its subtree's leaves weighted by
// cover), in float and in the order XGBoost 1.7's FillNodeMeanValues
// computes them, so that explanations built on them (TreeSHAP's bias,
// approx_contribs' steps) match XGBoost's to the bit where XGBoost's own
// arithmetic is followed.
//
// Thread safety: pure functions.
#ifndef RANKWIRE_MODEL_XGBOOST_NODE_MEANS_H_
#define RANKWIRE_MODEL_XGBOOST_NODE_MEANS_H_

#include <vector>

#include "model/xgboost/xgboost_spec.h"

namespace rankwire::xgboost {

// One value per node of `tree` (unreachable nodes: 0). A leaf's is its
// value; an internal node's is (left mean * left cover + right mean * right
// cover) / its cover, in float.
std::vector<float> NodeMeans(const XGBoostTree& tree);

// What every row's bias column (pred_contribs' and approx_contribs' last)
// holds: each tree's root mean added in float in tree order, then
// base_margin, as XGBoost sums them.
float ContributionBias(const XGBoostSpec& model);

}  // namespace rankwire::xgboost

#endif  // RANKWIRE_MODEL_XGBOOST_NODE_MEANS_H_
