// Model: what the ranker scores with, whatever its kind. Two kinds exist:
// the linear format (LinearModel, model/linear/linear_model.h) and XGBoost
// (model/xgboost/xgboost_model.h). The request validator, the response budget,
// the result's common keys, the log line's common part and the metrics do
// not depend on which one is loaded; a model says what it adds.
//
// A model scores every candidate of a request into
//   - the final score of each candidate (what the items are ranked by), and
//   - `value columns` of its own: numbers per candidate (a linear model's
//     head probabilities, logits and per-input contributions and its boost;
//     an XGBoost model's margin),
// and declares, once, which of its columns become result metrics (name and
// type) and which appear in the log line (after the features, before
// " final="), with the literal label before each.
//
// A model may also explain the items shown (the top N after ranking): per
// item, its largest per-feature contributions, as metrics of those items
// only and as a string in their log lines. The other items pay nothing.
//
// Thread safety: immutable once loaded; Score and Explain are const and
// safe from many threads (scratch lives in the caller's workspace).
#ifndef RANKWIRE_MODEL_MODEL_H_
#define RANKWIRE_MODEL_MODEL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codec/rank_result.h"
#include "request/request_view.h"

namespace rankwire {

// What a model adds to the result and the log line.
struct ModelOutputs {
  // Numbers per candidate the model's Score() writes: column j of
  // candidate c at values[j * n + c].
  size_t value_columns = 0;
  struct Metric {
    std::string name;                       // The result key ("score.ctr").
    MetricType type = MetricType::kDouble;  // kDouble, or kFloat (rounded).
    uint32_t column = 0;
  };
  std::vector<Metric> metrics;
  struct LogField {
    std::string label;  // The literal text before the value (" | ctr p=").
    uint32_t column = 0;
  };
  std::vector<LogField> log;
  // Whether Explain() does anything: the shown items then carry metrics
  // "explain.<k>.feature" (string) and "explain.<k>.contribution" (float)
  // for k = 1..explain_top_k, and their log lines the same after
  // " | explain=" ("name:value name:value ..."; empty for other items).
  bool explains = false;
  size_t explain_top_k = 0;
  // How many items a request that does not say (RankRequest.explain_items)
  // gets explained: the first min(top_n, explain_items) in rank order. A
  // request may ask for up to --max_explain_items (the request validator's
  // limit): explanations cost more per item than scoring, and a caller must
  // not be able to make them unbounded.
  size_t explain_items = 0;
  // The longest explanation text an item's line can carry.
  size_t explain_text_bound = 0;
};

// What a model reads from a request, by name: item features (a request's
// item_feature_names), user features ("user.<name>" in the model: the
// request's user features) and context values ("ctx.<name>": the
// request's context, parsed as numbers).
struct ModelInputs {
  std::vector<std::string> item;
  std::vector<std::string> user;
  std::vector<std::string> context;
};

// What Score() reads: the request, and what the ranker has gathered from it.
struct ScoreInput {
  const RequestView& request;
  // The request's item features, feature-major ([f * n + c]).
  const float* features;
  // column[i]: the request column of item_features()[i], or -1 when the
  // request does not carry it.
  const std::vector<int>& column;
  size_t n;
  // Per candidate, its recall source as an index into `sources` (the
  // request's distinct sources, in first-seen order).
  const uint32_t* source_code;
  const std::vector<std::string>& sources;
};

// One shown item's explanation: its largest contributions, largest first.
struct Explanation {
  std::vector<std::pair<std::string, float>> contributions;
};

class Model {
 public:
  Model() : serial_(next_serial_.fetch_add(1, std::memory_order_relaxed) + 1) {
    live_.fetch_add(1, std::memory_order_relaxed);
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  virtual ~Model() { live_.fetch_sub(1, std::memory_order_relaxed); }

  // Models alive in this process (loaded, and not yet freed by the last
  // request or queued log line using them): a reload that leaks shows here
  // (rankwire_models_live).
  static int64_t Live() { return live_.load(std::memory_order_relaxed); }
  // Unique per model object in this process, never reused (unlike its
  // address, which a model loaded after another is freed may get): what
  // per-thread caches of a model's bindings are keyed by.
  uint64_t serial() const { return serial_; }

  // "linear" or "xgboost".
  virtual absl::string_view kind() const = 0;
  // "name@version": in every response header, item and log line.
  virtual const std::string& full_version() const = 0;
  // "name", as in rankwire_model_info{name=...}.
  virtual const std::string& name() const = 0;
  // The version alone: full_version() after "name@".
  std::string version() const { return full_version().substr(name().size() + 1); }
  // What the model reads from a request.
  virtual const ModelInputs& inputs() const = 0;
  // The item features the model reads, by name (a request's feature
  // columns bind to them; names it lacks score as the model says).
  const std::vector<std::string>& item_features() const { return inputs().item; }
  // Whether a NaN item feature value means "missing" to this model (an
  // XGBoost model follows each split's default direction). Otherwise a
  // request with a NaN feature is refused, as with any non-finite value.
  virtual bool nan_is_missing() const { return false; }
  // What Score() writes and the result and log line show; shared, so a
  // request's queued log values keep it after the model is replaced.
  virtual const std::shared_ptr<const ModelOutputs>& outputs() const = 0;

  // Scores the n candidates: writes score[c] (n values) and values
  // (outputs().value_columns * n). REQUIRES: the request is valid.
  virtual void Score(const ScoreInput& in, double* score, double* values) const = 0;

  // The explanations of the candidates `shown` (candidate indexes into
  // `in`, the input Score() read), when outputs().explains: at most `top_k`
  // contributions each.
  virtual void Explain(const ScoreInput& in, const std::vector<uint32_t>& shown, size_t top_k,
                       std::vector<Explanation>* out) const {
    (void)in, (void)shown, (void)top_k;
    out->clear();
  }

  // The experiment bucket a user falls into when no bucket manifest says
  // otherwise (the linear format can name buckets; otherwise "default").
  virtual const std::string& BucketOf(absl::string_view user_id) const = 0;

 private:
  static inline std::atomic<int64_t> live_{0};
  static inline std::atomic<uint64_t> next_serial_{0};
  const uint64_t serial_;
};

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_MODEL_H_
