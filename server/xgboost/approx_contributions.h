// ApproxContributions explains rows' margins the cheap way: what XGBoost
// 1.7's `predict(pred_contribs=True, approx_contribs=True)` computes (Saabas,
// "Interpreting random forests", 2014). Along the row's path through each
// tree, every split's feature gets the change in the expected value (the
// cover-weighted mean of the leaves below) from the node to the child the
// row goes to. O(trees x depth) per row, about what scoring the row costs;
// unlike TreeSHAP the values depend on the order of the splits.
//
// Computed in float, step for step in XGBoost's order (each tree's steps
// summed per feature from 0, then added to the totals in tree order), so the
// results equal XGBoost's to the bit. Each step's change in expected value
// is precomputed at construction, in the child it leads to.
//
// Thread safety: immutable after construction; Contributions may be called
// from any number of threads at once.
#ifndef RANKWIRE_SERVER_XGBOOST_APPROX_CONTRIBUTIONS_H_
#define RANKWIRE_SERVER_XGBOOST_APPROX_CONTRIBUTIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "server/xgboost/xgboost_model.h"

namespace rankwire::xgb {

class ApproxContributions {
 public:
  // Copies what it needs out of `model` (which may then be destroyed).
  explicit ApproxContributions(const XGBoostModel& model);

  // As TreeShap::Contributions (same layout: per row num_features()
  // contributions, then the bias), with Saabas' values.
  // REQUIRES: row_stride >= num_features(); out holds n_rows *
  // (num_features() + 1) floats.
  void Contributions(const float* rows, size_t n_rows, size_t row_stride, float* out) const;

  size_t num_features() const { return num_features_; }
  // Bytes held: 24 per node, and the feature lists.
  size_t MemoryBytes() const;

 private:
  // Rows walked through a tree together (independent walks overlap).
  static constexpr int kRows = 16;

  // A walk's step is left + (x >= threshold): the right child follows the
  // left one, and a leaf (threshold NaN) steps to itself.
  struct Node {
    int32_t left;   // leaf: itself
    uint32_t slot;  // internal: the row copy's value it reads, 2 * used feature + default
    float threshold;
    // Each child's mean minus this node's: what the split's feature gets
    // when the row goes there (a leaf: 0, 0).
    float step[2];
    // 1: an ancestor or a descendant splits on the same feature, so the
    // row's steps on it are summed before they join the total.
    uint8_t shared;
  };
  struct Tree {
    uint32_t first_node;
    uint32_t depth;
  };

  void AddTree(const XGBoostTree& tree);
  void WalkTree(const Tree& tree, size_t count, const float* copies, float* this_tree,
                uint32_t* path, uint32_t* path_size, float* sums, size_t width) const;

  size_t num_features_ = 0;
  size_t max_depth_ = 0;
  // The features some split reads, in model order; a model feature's index
  // among them.
  std::vector<int32_t> used_features_;
  std::vector<int32_t> compact_feature_;
  float bias_ = 0;
  std::vector<Tree> trees_;
  std::vector<Node> nodes_;
};

}  // namespace rankwire::xgb

#endif  // RANKWIRE_SERVER_XGBOOST_APPROX_CONTRIBUTIONS_H_
