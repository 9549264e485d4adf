// XGBoostModel: an XGBoost model (model/xgboost/) as a Model. Features
// bind by name: a model feature "user.<x>" reads the request's user feature
// x, "ctx.<y>" its context value y (parsed as a number), any other name the
// item feature of that name. A feature the request does not carry, or a NaN
// item feature value, is missing and follows each split's default
// direction, as in XGBoost.
//
// Scores are TreeEvaluator's (bit-exact XGBoost predictions: the
// objective's output). The model adds no value columns or metrics of its
// own; it explains: the first min(top_n, explain_items) items in rank order
// (explain_items: the request's, else the options') carry their
// explain_top_k largest contributions by magnitude, in margin space, as
// metrics "explain.<k>.feature" / "explain.<k>.contribution" and in their
// log line: exact TreeSHAP (TreeShap, XGBoost's pred_contribs) or Saabas'
// approximation (ApproxContributions, XGBoost's approx_contribs). The rows
// explained are gathered and explained together.
//
// Thread safety: immutable; Score and Explain keep scratch per thread.
#ifndef RANKWIRE_MODEL_XGBOOST_XGBOOST_MODEL_H_
#define RANKWIRE_MODEL_XGBOOST_XGBOOST_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/model.h"
#include "model/xgboost/approx_contributions.h"
#include "model/xgboost/tree_evaluator.h"
#include "model/xgboost/tree_shap.h"
#include "model/xgboost/xgboost_spec.h"

namespace rankwire {

// How an XGBoost model explains its shown items (--explain).
enum class ExplainMode {
  kNone,    // no explanations, no explain.* keys
  kExact,   // TreeSHAP: XGBoost's pred_contribs
  kApprox,  // Saabas: XGBoost's approx_contribs
};
// "none", "exact" or "approx"; InvalidArgument otherwise.
absl::StatusOr<ExplainMode> ParseExplainMode(absl::string_view name);
absl::string_view ExplainModeName(ExplainMode mode);

struct XGBoostModelOptions {
  // Saabas by default: ~4 us per explained item against exact TreeSHAP's
  // ~30 (300 trees, depth 6), so the default explanations cost a request
  // ~1.2x of its CPU, not ~1.6x (docs/MODELS.md, "Explanations").
  ExplainMode mode = ExplainMode::kApprox;
  // Contributions per explained item (0: no explanations).
  size_t explain_top_k = 3;
  // Items explained when the request does not say (--explain_items).
  size_t explain_items = 10;
  // The most a request may ask for (--max_explain_items; the request
  // validator enforces it): with 0 and explain_items 0 nothing is ever
  // explained, and the result has no explain.* keys.
  size_t max_explain_items = 100;
};

class XGBoostModel final : public Model {
 public:
  // `name` and `version` make full_version() "name@version".
  XGBoostModel(const xgboost::XGBoostSpec& model, std::string name, std::string version,
               const XGBoostModelOptions& options);

  absl::string_view kind() const override { return "xgboost"; }
  const std::string& full_version() const override { return full_version_; }
  const std::string& name() const override { return name_; }
  const ModelInputs& inputs() const override { return inputs_; }
  const std::shared_ptr<const ModelOutputs>& outputs() const override { return outputs_; }
  bool nan_is_missing() const override { return true; }
  void Score(const ScoreInput& in, double* score, double* values) const override;
  void Explain(const ScoreInput& in, const std::vector<uint32_t>& shown, size_t top_k,
               std::vector<Explanation>* out) const override;
  const std::string& BucketOf(absl::string_view user_id) const override;

  const xgboost::TreeEvaluator& evaluator() const { return evaluator_; }
  // --explain=approx's explainer (null in other modes), as the server built it.
  const xgboost::ApproxContributions* approx() const { return approx_.get(); }
  size_t num_features() const { return feature_names_.size(); }
  // Bytes this model holds: the evaluator's node arrays, the explainer's
  // tables, the feature names and bindings.
  size_t MemoryBytes() const;
  // The explainer's share of MemoryBytes().
  size_t ExplainMemoryBytes() const;

 private:
  // Where model feature f's value comes from.
  struct Binding {
    xgboost::FeatureSource source;
    uint32_t index;  // In inputs_.item / .user / .context.
  };
  // Rows of the candidates `which` (all n when null) in model feature order
  // into rows (count x num_features()), missing as NaN.
  void GatherRows(const RequestView& request, const float* features, const std::vector<int>& column,
                  size_t n, const uint32_t* which, size_t count, float* rows) const;

  std::string name_;
  std::string version_;
  std::string full_version_;
  std::vector<std::string> feature_names_;
  std::vector<Binding> bindings_;
  ModelInputs inputs_;
  xgboost::TreeEvaluator evaluator_;
  // The explainer --explain asks for (neither for kNone).
  std::unique_ptr<xgboost::TreeShap> shap_;
  std::unique_ptr<xgboost::ApproxContributions> approx_;
  std::shared_ptr<const ModelOutputs> outputs_;
};

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_XGBOOST_XGBOOST_MODEL_H_
