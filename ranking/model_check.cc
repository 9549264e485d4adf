#include "ranking/model_check.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/status_reason.h"
#include "model/model_loader.h"
#include "rank/v1/rank.pb.h"
#include "ranking/ranker.h"
#include "request/request_validator.h"
#include "request/request_view.h"

namespace rankwire {
namespace {

absl::Status CheckFailed(const Model& model, absl::string_view problem) {
  return WithReason(absl::FailedPreconditionError(
                        absl::StrCat(model.full_version(), " fails the load check: ", problem)),
                    "check_failed");
}

// The built-in check request: `candidates` candidates carrying every
// feature the model reads, values in [0, 1] (and NaN in the last, for a
// model with missing values); user and context values 0.5; the first two
// shown.
rank::v1::RankRequest CheckRequest(const Model& model, int candidates) {
  const ModelInputs& reads = model.inputs();
  rank::v1::RankRequest request;
  request.set_request_id("rankwire-model-check");
  request.set_scene(rank::v1::SCENE_SEARCH);
  request.set_user_id("rankwire-model-check");
  for (const std::string& name : reads.user) (*request.mutable_user_features())[name] = 0.5;
  for (const std::string& name : reads.context) (*request.mutable_context())[name] = "0.5";
  for (const std::string& name : reads.item) request.add_item_feature_names(name);
  static constexpr float kValues[] = {0.0f, 1.0f, 0.5f, 0.25f, 0.75f, 0.1f, 0.9f, 0.0f};
  static constexpr const char* kSources[] = {"text_bm25",    "vector_ann", "i2i_cf", "hot_sale",
                                             "personalized", "",           "other",  "text_bm25"};
  for (int c = 0; c < candidates; ++c) {
    rank::v1::Candidate* candidate = request.add_candidates();
    candidate->set_item_id(absl::StrCat("check-", c));
    candidate->set_recall_source(kSources[c % 8]);
    candidate->set_recall_rank(static_cast<uint32_t>(c + 1));
    for (size_t f = 0; f < reads.item.size(); ++f) {
      const bool missing = model.nan_is_missing() && c == candidates - 1;
      candidate->add_features(missing ? std::nanf("") : kValues[(c + f) % 8]);
    }
  }
  // Two shown items: the shape check sees explained and unexplained items
  // (a model that explains, as XGBoost's does, explains only the shown
  // ones), and a load does not pay TreeSHAP for all of them: explaining an
  // item costs about a thousand scorings (tens of ms for 8 items of a
  // 300-tree depth-8 model).
  request.set_top_n(static_cast<uint32_t>(std::min(candidates, 2)));
  return request;
}

// The result's keys and types are those the output shape (what the
// response budget sizes) says; an item feature's key may be a float where
// the shape bounds it as an int.
absl::Status CheckShape(const Model& model, const RankResult& result, const OutputShape& shape) {
  if (shape.keys.size() != result.key_count()) {
    return CheckFailed(model, absl::StrCat("the result has ", result.key_count(),
                                           " keys; its output shape says ", shape.keys.size()));
  }
  for (uint32_t k = 0; k < result.key_count(); ++k) {
    const MetricKey& key = result.key(k);
    const OutputShape::Key& want = shape.keys[k];
    const bool as_shaped =
        key.type == want.type || (want.type == MetricType::kInt && key.type == MetricType::kFloat);
    if (key.name != want.name || !as_shaped) {
      return CheckFailed(model, absl::StrCat("result key ", k, " is \"", key.name,
                                             "\"; its output shape says \"", want.name, "\""));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckModel(const Model& model, const std::optional<ModelInputs>& supplied,
                        bool allow_unsupplied_features, const RequestLimits& limits) {
  RETURN_IF_ERROR(CheckSupplied(model, supplied, allow_unsupplied_features));
  const ModelInputs& reads = model.inputs();
  if (reads.item.size() > limits.max_item_features) {
    return CheckFailed(model, absl::StrCat("it reads ", reads.item.size(),
                                           " item features; a request carries at most ",
                                           limits.max_item_features));
  }
  constexpr int kCandidates = 8;
  const rank::v1::RankRequest request = CheckRequest(model, kCandidates);
  std::string storage;
  RequestView view;
  if (absl::Status s = RequestViewOf(request, limits, &storage, &view); !s.ok()) {
    return CheckFailed(model, s.message());
  }
  if (absl::Status s = ValidateRequest(
          view, limits,
          model.nan_is_missing() ? FeatureValues::kFiniteOrNan : FeatureValues::kFinite);
      !s.ok()) {
    return CheckFailed(model, s.message());
  }
  // Ranked as a request is, with inline log lines.
  std::shared_ptr<const Model> unowned(std::shared_ptr<const Model>(), &model);
  Ranker ranker(unowned);
  RankWorkspace ws;
  RankResult result;
  const std::string& bucket = model.BucketOf(view.user_id);
  ranker.Score(view, &ws);
  ranker.Build(view, bucket, LogDetail::kInline, &ws, &result);
  if (result.size() != kCandidates) {
    return CheckFailed(model, absl::StrCat(result.size(), " items ranked of ", kCandidates));
  }
  for (size_t i = 0; i < result.size(); ++i) {
    if (!std::isfinite(result.score(i))) {
      return CheckFailed(model, absl::StrCat("the score of check item ", result.id(i), " is ",
                                             result.score(i), ", not finite"));
    }
    if (result.log(i).empty()) {
      return CheckFailed(model, absl::StrCat("check item ", result.id(i), " has no log line"));
    }
  }
  return CheckShape(model, result, ranker.Shape(view, bucket));
}

}  // namespace rankwire
