// An XGBoostSpec is a gradient-boosted tree ensemble read from the JSON file
// XGBoost's `Booster.save_model("m.json")` writes (schema of XGBoost 1.7),
// checked in full at load so that nothing is refused at scoring time.
//
// It owns its trees as XGBoost stores them (node arrays, one tree per
// element) and knows how XGBoost turns their leaves into a prediction: the
// margin is base_score (in margin space) plus each tree's leaf, summed in
// float in tree order, then the objective's transform. PredictMargin and
// Predict do exactly that, one row at a time, with the plain walk: they are
// the reference the fast evaluator (tree_evaluator.h) and the tests are held
// to. Scoring many rows belongs to TreeEvaluator; explanations to TreeShap.
//
// Rows are float arrays in model feature order (feature_names()); NaN is a
// missing value and follows each split's default direction.
//
// Example:
//   ASSIGN_OR_RETURN(XGBoostSpec model, XGBoostSpec::LoadFile("m.json"));
//   ASSIGN_OR_RETURN(std::vector<int> columns,
//                    model.BindFeatures(request_feature_names, {}));
//
// Thread safety: immutable after load; any number of threads may read it.
#ifndef RANKWIRE_MODEL_XGBOOST_XGBOOST_SPEC_H_
#define RANKWIRE_MODEL_XGBOOST_XGBOOST_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rankwire::xgboost {

// The objectives rankwire serves. The ranking ones output the raw margin;
// binary:logistic its sigmoid; reg:squarederror the margin.
enum class Objective {
  kRankPairwise,
  kRankNdcg,
  kRankMap,
  kBinaryLogistic,
  kRegSquaredError,
};
absl::string_view ObjectiveName(Objective objective);
// The objective's output transform of a margin, as XGBoost 1.7 computes it
// (binary:logistic: its sigmoid, in float, exp's argument capped at 88.7;
// others: the margin).
float TransformMargin(Objective objective, float margin);

// Where a model feature's value comes from, by its name's prefix: "user.x"
// once per request from the user, "ctx.x" from the request context, any
// other name from each item.
enum class FeatureSource { kItem, kUser, kContext };
FeatureSource SourceOfFeature(absl::string_view name);

struct XGBoostLoadOptions {
  // Deepest tree accepted (root at depth 0, so a stump has depth 1).
  int max_depth = 16;
  // Largest file LoadFile reads; checked before reading anything.
  uint64_t max_file_bytes = uint64_t{256} << 20;
  // A model saved without feature names (trained on a bare numpy array) is
  // refused, since rankwire binds features by name. With this set its
  // features are named f0..f{n-1}, as XGBoost itself names them.
  bool allow_unnamed_features = false;
};

// One tree, as XGBoost's JSON stores it: node i is a leaf when left[i] is
// -1, its value in value[i]; otherwise it sends a row whose feature
// split_feature[i] is < value[i] (float) to left[i], a row with a larger
// value to right[i], and a row missing that feature to the default side.
// Nodes that no path from the root reaches (pruned) are kept but unused.
struct XGBoostTree {
  std::vector<int32_t> left;
  std::vector<int32_t> right;
  std::vector<int32_t> split_feature;
  std::vector<float> value;
  std::vector<uint8_t> default_left;
  std::vector<float> cover;  // sum of hessians: TreeSHAP's weights
  int depth = 0;             // of the deepest reachable leaf

  bool IsLeaf(int32_t node) const { return left[node] < 0; }
  // The child a row with this feature value goes to (NaN: missing).
  int32_t Next(int32_t node, float feature_value) const;
};

class XGBoostSpec {
 public:
  // Parses and checks a saved model. `source_name` (a path, or "<memory>")
  // starts every error message. Errors: kInvalidArgument for JSON that is
  // not an XGBoost model or a model that breaks a check (the message names
  // the tree and node), kUnimplemented for a valid model rankwire does not
  // serve (other objectives, dart, multi-class, categorical splits).
  static absl::StatusOr<XGBoostSpec> Parse(absl::string_view json, absl::string_view source_name,
                                           const XGBoostLoadOptions& options = {});
  // Parse of the file's bytes, read with ReadFileChecked (base/read_file.h):
  // a file larger than options.max_file_bytes is refused
  // (kResourceExhausted) before it is read; kNotFound if missing. Errors
  // carry a reason (base/status_reason.h): the file's, or "empty",
  // "truncated", "invalid_number", and for the rest of Parse's checks none
  // (the code says: kInvalidArgument, kUnimplemented).
  static absl::StatusOr<XGBoostSpec> LoadFile(const std::string& path,
                                              const XGBoostLoadOptions& options = {});

  Objective objective() const { return objective_; }
  // The model's name and version as training set them
  // (booster.set_attr(rankwire_name=..., rankwire_version=...)); empty when
  // not set.
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  // base_score as saved (the objective's output space) and in margin space,
  // where XGBoost adds it to the trees' leaves.
  float base_score() const { return base_score_; }
  float base_margin() const { return base_margin_; }
  const std::vector<std::string>& feature_names() const { return feature_names_; }
  size_t num_features() const { return feature_names_.size(); }
  const std::vector<XGBoostTree>& trees() const { return trees_; }
  // Nodes reachable from the roots, over all trees.
  size_t num_nodes() const { return num_nodes_; }
  int max_depth() const { return max_depth_; }

  float Transform(float margin) const { return TransformMargin(objective_, margin); }
  // REQUIRES: row holds num_features() values.
  float PredictMargin(const float* row) const;
  float Predict(const float* row) const { return Transform(PredictMargin(row)); }

  // For each model feature, its index in `columns` (the names a caller can
  // supply), or -1 when absent: a feature no column supplies is an error
  // (kFailedPrecondition, listing them) unless allow_unbound, when it is
  // always missing.
  absl::StatusOr<std::vector<int>> BindFeatures(absl::Span<const std::string> columns,
                                                bool allow_unbound) const;

 private:
  friend class ModelReader;
  XGBoostSpec() = default;

  Objective objective_ = Objective::kRegSquaredError;
  std::string name_;
  std::string version_;
  float base_score_ = 0.5f;
  float base_margin_ = 0.5f;
  std::vector<std::string> feature_names_;
  std::vector<XGBoostTree> trees_;
  size_t num_nodes_ = 0;
  int max_depth_ = 0;
};

// The model features some reachable split tests, compacted: the evaluator
// and the explainers (TreeShap, ApproxContributions) keep only these per row.
struct UsedFeatures {
  std::vector<int32_t> features;  // Model feature indexes, ascending.
  std::vector<int32_t> compact;   // Per model feature: its index in `features`, or -1.
};
UsedFeatures CompactUsedFeatures(const XGBoostSpec& model);

}  // namespace rankwire::xgboost

#endif  // RANKWIRE_MODEL_XGBOOST_XGBOOST_SPEC_H_
