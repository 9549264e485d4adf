// TreeEvaluator scores many rows with an XGBoostSpec's trees, fast, and
// with the same float result as XGBoost's predictor (bit for bit: the same
// comparisons, leaves added in the same order, the same transform).
//
// How (see docs/MODELS.md for the measurements):
//  - Rows are scored 16 at a time (a "block"), up to four blocks per pass
//    over the trees, so each tree's nodes are read once per 64 rows and the
//    rows' walks are independent instruction streams.
//  - A block is transposed into feature-major order with each feature twice:
//    once with NaN replaced by +inf and once by -inf. A node whose missing
//    values go left reads the -inf copy, one that sends them right the +inf
//    copy, so `!(x < threshold)` alone picks the child: no missing-value
//    branch or test in the walk. (The model's thresholds are finite: the
//    loader checks.)
//  - A tree up to depth 8 is stored complete (pruned branches padded with
//    nodes that always go left), in heap order as flat arrays of (feature
//    slot, threshold) and its 2^depth leaves: the walk is index arithmetic,
//    j = 2j + (x >= t), with no child pointers. Deeper trees keep their own
//    node count (children stored side by side, leaves looping on
//    themselves) so a sparse deep tree does not cost 2^depth nodes.
//  - With AVX-512 (checked at run time) the 16 rows of a block are the 16
//    lanes of a vector; the top five levels' nodes and leaves (up to 32) are
//    looked up with register permutes, deeper ones with gathers. Otherwise a
//    portable loop does the same walk lane by lane.
//
// Trees are evaluated in model order and their leaves summed in float from
// base_margin, as XGBoost does: regrouping trees would change the float
// sum's rounding, and scores near zero would then differ relatively by more
// than the 1e-6 the parity test allows.
//
// Thread safety: immutable after construction; Score may be called from any
// number of threads at once (each call uses its own scratch).
#ifndef RANKWIRE_MODEL_XGBOOST_TREE_EVALUATOR_H_
#define RANKWIRE_MODEL_XGBOOST_TREE_EVALUATOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "model/xgboost/xgboost_spec.h"

namespace rankwire::xgboost {

namespace internal {
// Where one tree lives in TreeEvaluator's arrays (tree_evaluator.cc).
struct EvalTree {
  uint32_t nodes;   // first node in slot / threshold (and child)
  uint32_t leaves;  // first leaf
  uint16_t depth;   // number of levels walked
  bool complete;    // heap layout; else child links
};
}  // namespace internal

class TreeEvaluator {
 public:
  enum class Kernel {
    kAuto,    // AVX-512 when the CPU has it, else portable
    kScalar,  // the portable loop, whatever the CPU
    kAvx512,  // REQUIRES: Avx512Available()
  };
  static bool Avx512Available();

  // Copies what scoring needs out of `model` (which may then be destroyed).
  explicit TreeEvaluator(const XGBoostSpec& model, Kernel kernel = Kernel::kAuto);

  // Scores n_rows rows: row r's features (model order, NaN = missing) start
  // at rows + r * row_stride. out[r] is XGBoost's predict(output_margin=
  // False) for row r: the objective's transform of the margin.
  // REQUIRES: row_stride >= num_features(); out holds n_rows floats.
  void Score(const float* rows, size_t n_rows, size_t row_stride, float* out) const;
  // As Score, but the margin (XGBoost's output_margin=True).
  void ScoreMargin(const float* rows, size_t n_rows, size_t row_stride, float* out) const;

  size_t num_features() const { return num_features_; }
  // Bytes held by the node and leaf arrays.
  size_t MemoryBytes() const;
  absl::string_view kernel_name() const;

 private:
  using Tree = internal::EvalTree;
  static constexpr int kLanes = 16;
  static constexpr int kMaxBlocks = 4;
  static constexpr int kMaxCompleteDepth = 8;

  void AddCompleteTree(const XGBoostTree& tree);
  void AddCompactTree(const XGBoostTree& tree);
  int32_t SlotOf(const XGBoostTree& tree, int32_t node) const;
  void FillBlock(const float* rows, size_t n, size_t row_stride, float* block) const;
  void ScoreBlocks(const float* blocks, int n_blocks, float* acc) const;
  void ScoreBlockScalar(const float* block, float* acc) const;
  void ScoreBlocksAvx512(const float* blocks, int n_blocks, float* acc) const;

  size_t num_features_ = 0;
  // The features some split reads, in model order: only they are copied
  // into a block, so a model with many features costs only those it uses.
  std::vector<int32_t> used_features_;
  std::vector<int32_t> compact_feature_;  // model feature -> index in used_features_
  size_t block_floats_ = 0;               // (2 * used_features_.size() + 1) * kLanes
  float base_margin_ = 0;
  Objective objective_ = Objective::kRegSquaredError;
  Kernel kernel_ = Kernel::kScalar;
  std::vector<Tree> trees_;
  std::vector<int32_t> slot_;  // feature slot * kLanes, per node
  std::vector<float> threshold_;
  std::vector<int32_t> child_;  // compact trees: left child, right = left + 1
  std::vector<float> leaf_;
};

}  // namespace rankwire::xgboost

#endif  // RANKWIRE_MODEL_XGBOOST_TREE_EVALUATOR_H_
