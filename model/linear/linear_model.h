// LinearModel: a LinearSpec (the linear format: logistic heads over
// transformed inputs and crosses, combined with per-head exponents and a
// per-recall-source boost) as a Model. Its value columns, per head, are
// the probability p_h and the logit; then every term's contribution; then
// the boost. Metrics: "score.<head>" (double) for every head and
// "contrib.<head>.<input>" (float) for the heads the file marks explain.
// Log line: " | <head> p=", " logit=" and " <input>:" per head and term,
// then " | boost=".
//
// Scores: p_h = sigmoid(logit_h), score = boost * exp(sum_h e_h * log p_h)
// (the product of p_h^e_h with one exp per candidate instead of a pow per
// head), by vector loops with no libm call per element
// (model/vector_math.h), within 1e-13 relative of the same formula
// through libm.
//
// Thread safety: immutable; Score() keeps its scratch per thread.
#ifndef RANKWIRE_MODEL_LINEAR_LINEAR_MODEL_H_
#define RANKWIRE_MODEL_LINEAR_LINEAR_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "model/linear/linear_spec.h"
#include "model/model.h"

namespace rankwire {

class LinearModel final : public Model {
 public:
  explicit LinearModel(LinearSpec model);

  absl::string_view kind() const override { return "linear"; }
  const std::string& full_version() const override { return model_.full_version(); }
  const std::string& name() const override { return model_.name(); }
  const ModelInputs& inputs() const override { return inputs_; }
  const std::shared_ptr<const ModelOutputs>& outputs() const override { return outputs_; }
  void Score(const ScoreInput& in, double* score, double* values) const override;
  const std::string& BucketOf(absl::string_view user_id) const override {
    return model_.BucketOf(user_id);
  }

  const LinearSpec& model() const { return model_; }

 private:
  LinearSpec model_;
  ModelInputs inputs_;
  std::vector<int> atom_feature_;  // Per atom: its index in inputs_.item, or -1.
  size_t terms_ = 0;
  std::shared_ptr<const ModelOutputs> outputs_;
};

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_LINEAR_LINEAR_MODEL_H_
