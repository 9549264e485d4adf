// TreeShap explains rows' margins: each feature's SHAP value (its share of
// the margin's distance from the model's expected output), exactly what
// XGBoost 1.7's `predict(pred_contribs=True)` computes (path-dependent
// TreeSHAP, Lundberg, Erion and Lee 2018), to float rounding (the tests hold
// them to 1e-5), at a fraction of its cost.
//
// How (docs/MODELS.md "Explanations" has the measurements):
//  - For one leaf with the unique path features U (feature j's splits on
//    the path: "one" o_j = 1 when the row goes their way, else 0; "zero"
//    z_j = the product of their cover fractions), TreeSHAP's value for i is
//    the Shapley sum over subsets of U, which equals Owen's integral
//        (o_i - z_i) * leaf * Integral_0^1 prod_{j != i} (z_j (1-t) + o_j t) dt.
//    The integrand is a polynomial of degree < |U|, so Gauss-Legendre
//    quadrature with ceil(D/2) points (D: the tree's longest unique path)
//    computes it exactly: a tree's work per row is O(nodes x D/2), not
//    TreeSHAP's O(leaves x D^2). (The integral form is Linear TreeSHAP's,
//    Yu et al. 2022, with quadrature in place of its interpolation.)
//  - The sum over leaves is shared by subtrees: going down, each node
//    multiplies its parent's quadrature values by its edge's factor; going
//    up, each node sums its leaves' (leaf value times factors) and an edge
//    into it adds (o - z) times that sum divided by its own factor to its
//    feature. A feature split again below divides out its earlier factor
//    (and the earlier edge then leaves out that subtree), as TreeSHAP's
//    UNWIND does.
//  - Everything that does not depend on the row (the tree in depth-first
//    order, each edge's factor and its division folded into per-point
//    constants) is computed once, at construction. A row contributes only
//    which way it goes at each split.
//  - 16 rows are explained together, one per vector lane: every tree is
//    walked once per 16 rows, each node's few operations done for all of
//    them at once (AVX-512 when the CPU has it, checked at run time).
//  - Each tree's contributions are added in float to the running sums, in
//    tree order, as XGBoost adds them; the bias column is computed as
//    XGBoost computes it (bit for bit).
//
// Thread safety: immutable after construction; Contributions may be called
// from any number of threads at once (scratch is per thread).
#ifndef RANKWIRE_MODEL_XGBOOST_TREE_SHAP_H_
#define RANKWIRE_MODEL_XGBOOST_TREE_SHAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "model/xgboost/xgboost_spec.h"

namespace rankwire::xgboost {

namespace internal {
// A tree in TreeShap's arrays; a node of one, in depth-first order
// (tree_shap.cc).
struct ShapTree;
struct ShapNode;
}  // namespace internal

class TreeShap {
 public:
  enum class Kernel {
    kAuto,      // AVX-512 when the CPU has it, else portable
    kPortable,  // the same code for whatever vector unit the build targets
    kAvx512,    // REQUIRES: Avx512Available()
  };
  static bool Avx512Available();
  // Rows explained together (one per vector lane).
  static constexpr int kLanes = 16;

  // Precomputes what explaining needs from `model` (which may then be
  // destroyed): O(nodes x depth) time and memory.
  explicit TreeShap(const XGBoostSpec& model, Kernel kernel = Kernel::kAuto);
  ~TreeShap();
  TreeShap(TreeShap&&) noexcept;
  TreeShap& operator=(TreeShap&&) noexcept;

  // Explains n_rows rows: row r's features (model order, NaN = missing) at
  // rows + r * row_stride. out[r * (num_features() + 1) + f] is feature f's
  // contribution to row r's margin, and out[r * (num_features() + 1) +
  // num_features()] the bias (base_margin plus each tree's expected value):
  // XGBoost's pred_contribs row, in margin space for every objective. A row
  // sums to its margin (to float rounding).
  // REQUIRES: row_stride >= num_features(); out holds n_rows *
  // (num_features() + 1) floats.
  void Contributions(const float* rows, size_t n_rows, size_t row_stride, float* out) const;

  size_t num_features() const { return num_features_; }
  // Bytes held: the trees' nodes and their per-edge constants.
  size_t MemoryBytes() const;
  absl::string_view kernel_name() const;

 private:
  using Tree = internal::ShapTree;
  using Node = internal::ShapNode;
  struct Builder;  // construction (tree_shap.cc)
  struct Scratch;  // per-thread work arrays (tree_shap.cc)

  void ExplainBlock(const float* rows, size_t count, size_t row_stride, float* out) const;

  size_t num_features_ = 0;
  float bias_ = 0;
  Kernel kernel_ = Kernel::kPortable;
  // The features some split reads, in model order; a model feature's index
  // among them (-1: none reads it).
  std::vector<int32_t> used_features_;
  std::vector<int32_t> compact_feature_;
  std::vector<Tree> trees_;
  std::vector<Node> nodes_;
  // The constants of edges on a feature split again, and of pairs of
  // leaves (tree_shap.cc).
  std::vector<float> consts_;
  // Per tree, the features its splits read (indexes into used_features_).
  std::vector<uint32_t> tree_features_;
  // Per quadrature size m (1..max_points_): m points t, then their m
  // weights, at m * (m - 1).
  std::vector<float> quadrature_;
  int max_depth_ = 0;
  int max_points_ = 1;
};

}  // namespace rankwire::xgboost

#endif  // RANKWIRE_MODEL_XGBOOST_TREE_SHAP_H_
