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
// results equal XGBoost's to the bit. Two layouts, chosen at construction
// by the bytes they would hold, give the same values:
// - tables: a walk to each tree's leaf, then the leaf's per-feature sums of
//   its path, precomputed (12 B per node, 8 more per node for the leaf's
//   range and 8 per distinct feature on a leaf's path: ~40 B per node at
//   depth 6, ~65 at depth 12); the faster one;
// - the lean walk: each step's change in expected value kept in the node
//   it leaves (24 B per node), added to the row's totals on the way down.
//
// Thread safety: immutable after construction; Contributions may be called
// from any number of threads at once.
#ifndef RANKWIRE_MODEL_XGBOOST_APPROX_CONTRIBUTIONS_H_
#define RANKWIRE_MODEL_XGBOOST_APPROX_CONTRIBUTIONS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "model/xgboost/xgboost_spec.h"

namespace rankwire::xgboost {

class ApproxContributions {
 public:
  // Copies what it needs out of `model` (which may then be destroyed).
  // Precomputes the leaves' tables when they fit in `max_table_bytes`
  // (everything this object would hold with them), else keeps the walk.
  explicit ApproxContributions(const XGBoostSpec& model,
                               size_t max_table_bytes = std::numeric_limits<size_t>::max());

  // As TreeShap::Contributions (same layout: per row num_features()
  // contributions, then the bias), with Saabas' values.
  // REQUIRES: row_stride >= num_features(); out holds n_rows *
  // (num_features() + 1) floats.
  void Contributions(const float* rows, size_t n_rows, size_t row_stride, float* out) const;

  size_t num_features() const { return num_features_; }
  // Bytes held: the layout's nodes (and tables), and the feature lists.
  size_t MemoryBytes() const;
  // True when the leaves' tables were precomputed (see above).
  bool uses_tables() const { return !leaf_steps_.empty(); }

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
  // The tables layout: a split (a leaf: itself, threshold NaN), and per
  // leaf its path's per-feature sums in steps_.
  struct Split {
    int32_t left;
    uint32_t slot;
    float threshold;
  };
  struct Step {
    uint32_t feature;
    float value;
  };
  struct StepRange {
    uint32_t first;
    uint32_t count;
  };

  // What the tables layout of `model` would hold, in bytes.
  size_t TableBytes(const XGBoostSpec& model) const;
  void AddTree(const XGBoostTree& tree);
  void AddTreeTables(const XGBoostTree& tree);
  // Rows first .. first + count (copies: their values) into sums.
  void WalkAll(size_t count, const float* copies, float* sums, size_t width) const;
  void LookUpAll(size_t count, const float* copies, float* sums, size_t width) const;
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
  std::vector<Node> nodes_;  // the walk's
  // The tables' (leaf_steps_ per node, leaves' entries only).
  std::vector<Split> splits_;
  std::vector<StepRange> leaf_steps_;
  std::vector<Step> steps_;
};

}  // namespace rankwire::xgboost

#endif  // RANKWIRE_MODEL_XGBOOST_APPROX_CONTRIBUTIONS_H_
