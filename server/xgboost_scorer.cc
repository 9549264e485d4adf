#include "server/xgboost_scorer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rankwire::server {
namespace {

constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();
// The longest text AppendLogNumberText writes for a binary32 ("%g": sign,
// six digits, point, exponent): "-1.17549e-38".
constexpr size_t kNumberTextBound = 13;

std::shared_ptr<const ModelOutputs> OutputsOf(const std::vector<std::string>& names,
                                              const XGBoostScorerOptions& options) {
  auto out = std::make_shared<ModelOutputs>();
  out->explains = options.explain_top_k > 0 && options.explain_items > 0;
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

XGBoostScorer::XGBoostScorer(const xgb::XGBoostModel& model, std::string name, std::string version,
                             const XGBoostScorerOptions& options)
    : name_(std::move(name)),
      version_(std::move(version)),
      full_version_(absl::StrCat(name_, "@", version_)),
      feature_names_(model.feature_names()),
      evaluator_(model),
      shap_(model),
      outputs_(OutputsOf(model.feature_names(), options)) {
  for (const std::string& feature : feature_names_) {
    absl::string_view bare = feature;
    const xgb::FeatureSource source = xgb::SourceOfFeature(bare);
    switch (source) {
      case xgb::FeatureSource::kItem:
        bindings_.push_back({source, IndexIn(inputs_.item, bare)});
        break;
      case xgb::FeatureSource::kUser:
        bindings_.push_back({source, IndexIn(inputs_.user, bare.substr(5))});
        break;
      case xgb::FeatureSource::kContext:
        bindings_.push_back({source, IndexIn(inputs_.context, bare.substr(4))});
        break;
    }
  }
}

void XGBoostScorer::GatherRows(const RequestView& request, const float* features,
                               const std::vector<int>& column, size_t n, const uint32_t* which,
                               size_t count, float* rows) const {
  const size_t stride = feature_names_.size();
  for (size_t f = 0; f < stride; ++f) {
    const Binding& b = bindings_[f];
    float constant = kMissing;
    if (b.source == xgb::FeatureSource::kItem) {
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
    } else if (b.source == xgb::FeatureSource::kUser) {
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

void XGBoostScorer::Score(const ScoreInput& in, double* score, double* values) const {
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

void XGBoostScorer::Explain(const RequestView& request, const float* features,
                            const std::vector<int>& column, size_t n,
                            const std::vector<uint32_t>& shown, size_t top_k,
                            std::vector<Explanation>* out) const {
  out->clear();
  const size_t stride = feature_names_.size();
  thread_local std::vector<float> row;
  thread_local std::vector<double> contributions;
  thread_local std::vector<uint32_t> order;
  row.resize(stride);
  contributions.resize(stride + 1);
  out->resize(shown.size());
  for (size_t i = 0; i < shown.size(); ++i) {
    GatherRows(request, features, column, n, &shown[i], 1, row.data());
    shap_.Contributions(row.data(), contributions.data());
    // The largest by magnitude (not the bias); features with no
    // contribution say nothing and are left out. Ties keep model order.
    order.clear();
    for (uint32_t f = 0; f < stride; ++f) {
      if (contributions[f] != 0) order.push_back(f);
    }
    const size_t k = std::min(top_k, order.size());
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [](uint32_t a, uint32_t b) {
      const double x = std::fabs(contributions[a]), y = std::fabs(contributions[b]);
      return x > y || (x == y && a < b);
    });
    auto& list = (*out)[i].contributions;
    for (size_t e = 0; e < k; ++e) {
      list.emplace_back(feature_names_[order[e]], static_cast<float>(contributions[order[e]]));
    }
  }
}

size_t XGBoostScorer::MemoryBytes() const {
  size_t bytes =
      evaluator_.MemoryBytes() + shap_.MemoryBytes() + bindings_.capacity() * sizeof(Binding);
  for (const std::vector<std::string>* names :
       {&feature_names_, &inputs_.item, &inputs_.user, &inputs_.context}) {
    bytes += names->capacity() * sizeof(std::string);
    for (const std::string& name : *names) {
      if (name.capacity() > std::string().capacity()) bytes += name.capacity() + 1;
    }
  }
  return bytes;
}

const std::string& XGBoostScorer::BucketOf(absl::string_view user_id) const {
  (void)user_id;
  static const std::string* const kDefault = new std::string("default");
  return *kDefault;
}

}  // namespace rankwire::server
