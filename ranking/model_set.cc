#include "ranking/model_set.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/stable_hash.h"

namespace rankwire {

ServedModel::ServedModel(std::string bucket_name, int share, std::string file, FileStamp file_stamp,
                         std::shared_ptr<const Model> loaded)
    : bucket(std::move(bucket_name)),
      percent(share),
      path(std::move(file)),
      stamp(file_stamp),
      model(std::move(loaded)),
      ranker(model),
      feature_values(model->nan_is_missing() ? FeatureValues::kFiniteOrNan
                                             : FeatureValues::kFinite) {
  for (const std::string& name : model->item_features()) known_item_features.insert(name);
}

std::shared_ptr<const ModelSet> ModelSet::Of(std::shared_ptr<const Model> model) {
  return Single(std::make_shared<const ServedModel>("", 100, "", FileStamp{}, std::move(model)));
}

std::shared_ptr<const ModelSet> ModelSet::Single(std::shared_ptr<const ServedModel> model,
                                                 uint64_t generation) {
  std::shared_ptr<ModelSet> set(new ModelSet());
  set->models_.push_back(std::move(model));
  set->generation_ = generation;
  return set;
}

absl::StatusOr<std::shared_ptr<const ModelSet>> ModelSet::Buckets(
    std::vector<std::shared_ptr<const ServedModel>> models, uint64_t generation) {
  if (models.empty() || models.size() > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat(models.size(), " buckets; a manifest has 1 to 100"));
  }
  std::shared_ptr<ModelSet> set(new ModelSet());
  absl::flat_hash_set<std::string> names;
  int slot = 0;
  for (size_t m = 0; m < models.size(); ++m) {
    const ServedModel& served = *models[m];
    if (served.bucket.empty() || !names.insert(served.bucket).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("bucket name \"", served.bucket, "\" is empty or repeated"));
    }
    if (served.percent < 1 || served.percent > 100 - slot) {
      return absl::InvalidArgumentError(
          absl::StrCat("bucket \"", served.bucket, "\": percent ", served.percent,
                       " is out of range (each 1..100, summing to 100)"));
    }
    for (int i = 0; i < served.percent; ++i) set->slot_model_[slot++] = static_cast<uint8_t>(m);
  }
  if (slot != 100) {
    return absl::InvalidArgumentError(absl::StrCat("bucket percents sum to ", slot, ", not 100"));
  }
  set->models_ = std::move(models);
  set->bucketed_ = true;
  set->generation_ = generation;
  return std::shared_ptr<const ModelSet>(std::move(set));
}

ModelSet::Route ModelSet::RouteOf(absl::string_view user_id) const {
  if (!bucketed_) {
    const ServedModel& only = *models_.front();
    return {only.model->BucketOf(user_id), only};
  }
  const ServedModel& served = *models_[slot_model_[UserSlot(user_id)]];
  return {served.bucket, served};
}

std::string ModelSet::Summary() const {
  if (!bucketed_) return models_.front()->model->full_version();
  std::string out;
  for (const auto& m : models_) {
    absl::StrAppend(&out, out.empty() ? "" : " ", m->bucket, "=", m->model->full_version(), "(",
                    m->percent, "%)");
  }
  return out;
}

}  // namespace rankwire
