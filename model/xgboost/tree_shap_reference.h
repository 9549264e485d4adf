// ReferenceTreeShap explains one row's margin: each feature's SHAP value
// (its share of the margin's distance from the model's expected output) by
// the exact TreeSHAP algorithm (Lundberg, Erion and Lee, "Consistent
// Individualized Feature Attribution for Tree Ensembles", 2018,
// Algorithm 2), computed in float step for step as XGBoost 1.7 computes
// `predict(pred_contribs=True)`, so the two agree to the last bit.
//
// It costs O(trees x leaves x depth^2) per row, about what XGBoost's own
// costs. The server explains with TreeShap (tree_shap.h), an order of
// magnitude faster; this one is the oracle its tests compare against on
// models python3-xgboost is not there to check, and the benchmark's
// baseline.
//
// Thread safety: immutable after construction; Contributions may be called
// from any number of threads at once.
#ifndef RANKWIRE_MODEL_XGBOOST_TREE_SHAP_REFERENCE_H_
#define RANKWIRE_MODEL_XGBOOST_TREE_SHAP_REFERENCE_H_

#include <cstddef>
#include <vector>

#include "model/xgboost/xgboost_spec.h"

namespace rankwire::xgboost {

namespace internal {
struct ShapPathElement;  // tree_shap_reference.cc
}  // namespace internal

class ReferenceTreeShap {
 public:
  // Copies the trees out of `model` and computes each node's expected value.
  explicit ReferenceTreeShap(const XGBoostSpec& model);

  // out[f] (f < num_features()) is feature f's contribution to row's margin;
  // out[num_features()] is the bias: base_margin plus each tree's expected
  // value. They sum to the margin (up to float rounding), in margin space
  // for every objective, as XGBoost's pred_contribs.
  // REQUIRES: row holds num_features() values (NaN = missing); out holds
  // num_features() + 1.
  void Contributions(const float* row, double* out) const;

  size_t num_features() const { return num_features_; }
  // Bytes held by the trees' copies and their nodes' expected values.
  size_t MemoryBytes() const;

 private:
  using PathElement = internal::ShapPathElement;
  struct Walk;  // one row through one tree (tree_shap_reference.cc)

  void Recurse(Walk& walk, int32_t node, PathElement* parent_path, int depth, float zero_fraction,
               float one_fraction, int feature) const;

  size_t num_features_ = 0;
  float base_margin_ = 0;
  int max_depth_ = 0;
  std::vector<XGBoostTree> trees_;
  std::vector<std::vector<float>> mean_;  // per tree, per node: expected value
};

}  // namespace rankwire::xgboost

#endif  // RANKWIRE_MODEL_XGBOOST_TREE_SHAP_REFERENCE_H_
