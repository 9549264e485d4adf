#include "model/xgboost/xgboost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rankwire {
namespace {

constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();
// The longest text AppendLogNumberText writes for a binary32 ("%g": sign,
// six digits, point, exponent): "-1.17549e-38".
constexpr size_t kNumberTextBound = 13;
// What XGBoost 1.7 keeps per node: RegTree::Node (20 bytes) and
// RTreeNodeStat (16); xgboost_scorer_test checks a model holds at most twice.
constexpr size_t kXGBoostNodeBytes = 36;

std::shared_ptr<const ModelOutputs> OutputsOf(const std::vector<std::string>& names,
                                              const XGBoostModelOptions& options) {
  auto out = std::make_shared<ModelOutputs>();
  out->explains = options.mode != ExplainMode::kNone && options.explain_top_k > 0 &&
                  (options.explain_items > 0 || options.max_explain_items > 0);
  out->explain_top_k = options.explain_top_k;
  out->explain_items = options.explain_items;
  size_t longest = 0;
  for (const std::string& name : names) longest = std::max(longest, name.size());
  // "name:value" per contribution, space-separated.
  out->explain_text_bound = options.explain_top_k * (longest + 1 + kNumberTextBound + 1);
  return out;
}

// The index of `name` in `names`, added if absent.
uint32_t IndexIn(std::vector<std::string>& names, absl::string_view name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) it = names.insert(names.end(), std::string(name));
  return static_cast<uint32_t>(it - names.begin());
}

}  // namespace

absl::StatusOr<ExplainMode> ParseExplainMode(absl::string_view name) {
  for (ExplainMode mode : {ExplainMode::kNone, ExplainMode::kExact, ExplainMode::kApprox}) {
    if (name == ExplainModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown explain mode \"", name, "\": exact, approx or none"));
}

absl::string_view ExplainModeName(ExplainMode mode) {
  switch (mode) {
    case ExplainMode::kNone:
      return "none";
    case ExplainMode::kExact:
      return "exact";
    case ExplainMode::kApprox:
      return "approx";
  }
  return "?";
}

XGBoostModel::XGBoostModel(const xgboost::XGBoostSpec& model, std::string name, std::string version,
                           const XGBoostModelOptions& options)
    : name_(std::move(name)),
      version_(std::move(version)),
      full_version_(absl::StrCat(name_, "@", version_)),
      feature_names_(model.feature_names()),
      evaluator_(model),
      outputs_(OutputsOf(model.feature_names(), options)) {
  for (const std::string& feature : feature_names_) {
    absl::string_view bare = feature;
    const xgboost::FeatureSource source = xgboost::SourceOfFeature(bare);
    switch (source) {
      case xgboost::FeatureSource::kItem:
        bindings_.push_back({source, IndexIn(inputs_.item, bare)});
        break;
      case xgboost::FeatureSource::kUser:
        bindings_.push_back({source, IndexIn(inputs_.user, bare.substr(5))});
        break;
      case xgboost::FeatureSource::kContext:
        bindings_.push_back({source, IndexIn(inputs_.context, bare.substr(4))});
        break;
    }
  }
  if (outputs_->explains && options.mode == ExplainMode::kExact) {
    shap_ = std::make_unique<xgboost::TreeShap>(model);
  } else if (outputs_->explains && options.mode == ExplainMode::kApprox) {
    // Saabas' faster tables only where the model then still holds at most
    // twice XGBoost's bytes per node (issue 39), less a sixteenth for what
    // MemoryBytes() does not see (this object, the outputs, the allocator).
    const size_t bound = 2 * kXGBoostNodeBytes * model.num_nodes() / 16 * 15;
    const size_t held = MemoryBytes();
    approx_ =
        std::make_unique<xgboost::ApproxContributions>(model, bound > held ? bound - held : 0);
  }
}

void XGBoostModel::GatherRows(const RequestView& request, const float* features,
                              const std::vector<int>& column, size_t n, const uint32_t* which,
                              size_t count, float* rows) const {
  const size_t stride = feature_names_.size();
  for (size_t f = 0; f < stride; ++f) {
    const Binding& b = bindings_[f];
    float constant = kMissing;
    if (b.source == xgboost::FeatureSource::kItem) {
      const int col = column[b.index];
      if (col >= 0) {
        const float* values = features + static_cast<size_t>(col) * n;
        if (which == nullptr) {
          for (size_t c = 0; c < count; ++c) rows[c * stride + f] = values[c];
        } else {
          for (size_t c = 0; c < count; ++c) rows[c * stride + f] = values[which[c]];
        }
        continue;
      }
    } else if (b.source == xgboost::FeatureSource::kUser) {
      if (const double* v = request.FindUserFeature(inputs_.user[b.index])) {
        constant = static_cast<float>(*v);
      }
    } else if (const absl::string_view* v = request.FindContext(inputs_.context[b.index])) {
      float parsed;
      if (absl::SimpleAtof(*v, &parsed)) constant = parsed;
    }
    for (size_t c = 0; c < count; ++c) rows[c * stride + f] = constant;
  }
}

void XGBoostModel::Score(const ScoreInput& in, double* score, double* values) const {
  (void)values;  // No value columns.
  thread_local std::vector<float> rows, out;
  const size_t n = in.n;
  const size_t stride = feature_names_.size();
  rows.resize(n * stride);
  out.resize(n);
  GatherRows(in.request, in.features, in.column, n, nullptr, n, rows.data());
  evaluator_.Score(rows.data(), n, stride, out.data());
  for (size_t c = 0; c < n; ++c) score[c] = out[c];
}

void XGBoostModel::Explain(const ScoreInput& in, const std::vector<uint32_t>& shown, size_t top_k,
                           std::vector<Explanation>* out) const {
  out->clear();
  if (shown.empty() || (shap_ == nullptr && approx_ == nullptr)) return;
  const size_t stride = feature_names_.size();
  const size_t width = stride + 1;  // the features' contributions, then the bias
  thread_local std::vector<float> rows, contributions;
  thread_local std::vector<uint32_t> order;
  rows.resize(shown.size() * stride);
  contributions.resize(shown.size() * width);
  GatherRows(in.request, in.features, in.column, in.n, shown.data(), shown.size(), rows.data());
  if (shap_ != nullptr) {
    shap_->Contributions(rows.data(), shown.size(), stride, contributions.data());
  } else {
    approx_->Contributions(rows.data(), shown.size(), stride, contributions.data());
  }
  out->resize(shown.size());
  for (size_t i = 0; i < shown.size(); ++i) {
    const float* c = contributions.data() + i * width;
    // The largest by magnitude (not the bias); features with no
    // contribution say nothing and are left out (as is NaN, which a model
    // with zero-cover nodes can give). Ties keep model order.
    order.clear();
    for (uint32_t f = 0; f < stride; ++f) {
      if (c[f] != 0 && !std::isnan(c[f])) order.push_back(f);
    }
    const size_t k = std::min(top_k, order.size());
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [c](uint32_t a, uint32_t b) {
      const float x = std::fabs(c[a]), y = std::fabs(c[b]);
      return x > y || (x == y && a < b);
    });
    auto& list = (*out)[i].contributions;
    for (size_t e = 0; e < k; ++e) list.emplace_back(feature_names_[order[e]], c[order[e]]);
  }
}

size_t XGBoostModel::ExplainMemoryBytes() const {
  if (shap_ != nullptr) return shap_->MemoryBytes();
  return approx_ != nullptr ? approx_->MemoryBytes() : 0;
}

size_t XGBoostModel::MemoryBytes() const {
  size_t bytes =
      evaluator_.MemoryBytes() + ExplainMemoryBytes() + bindings_.capacity() * sizeof(Binding);
  for (const std::vector<std::string>* names :
       {&feature_names_, &inputs_.item, &inputs_.user, &inputs_.context}) {
    bytes += names->capacity() * sizeof(std::string);
    for (const std::string& name : *names) {
      if (name.capacity() > std::string().capacity()) bytes += name.capacity() + 1;
    }
  }
  return bytes;
}

const std::string& XGBoostModel::BucketOf(absl::string_view user_id) const {
  (void)user_id;
  static const std::string* const kDefault = new std::string("default");
  return *kDefault;
}

}  // namespace rankwire
