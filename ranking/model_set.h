// ModelSet: what a server ranks with at one moment. One model per
// experiment bucket (from a bucket manifest), or one model for every user
// (whose own experiment buckets, if it names any, label the users). A user's
// bucket is a stable hash of the user id (base/stable_hash.h), so it does
// not move between replicas, restarts or reloads; only the manifest's
// shares move it.
//
// A set is immutable. A reload builds a new one and swaps it into
// ServingModels; a request takes the current set once, at its start, and
// ranks, builds its response and queues its logs with that set's model, so
// it never mixes two versions, and the old model is freed when the last
// request or queued log line holding it is done.
//
// Thread safety: ModelSet is immutable; ServingModels' Current() and Swap()
// are safe from any thread.
#ifndef RANKWIRE_RANKING_MODEL_SET_H_
#define RANKWIRE_RANKING_MODEL_SET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/read_file.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "ranking/ranker.h"
#include "request/request_validator.h"

namespace rankwire {

// One bucket's model, with what the handler needs per request. Shared
// between sets: a reload that changes only the manifest keeps the models
// whose files did not change.
struct ServedModel {
  ServedModel(std::string bucket_name, int share, std::string file, FileStamp file_stamp,
              std::shared_ptr<const Model> loaded);

  std::string bucket;  // The manifest's name; empty: one model for all.
  int percent = 100;
  std::string path;  // The file it was loaded from ("" in tests).
  FileStamp stamp;   // ...as it was then.
  std::shared_ptr<const Model> model;
  Ranker ranker;
  absl::flat_hash_set<std::string> known_item_features;
  FeatureValues feature_values = FeatureValues::kFinite;
  int64_t loaded_unix_ms = 0;
  uint32_t load_ms = 0;
  // Requests ranked by this bucket and version (may be null); shared with
  // the metrics page, which may drop the series of a model long gone.
  std::shared_ptr<Counter> requests;
};

class ModelSet {
 public:
  // One model for every user, loaded from no file (tests and tools).
  static std::shared_ptr<const ModelSet> Of(std::shared_ptr<const Model> model);
  // One model for every user.
  static std::shared_ptr<const ModelSet> Single(std::shared_ptr<const ServedModel> model,
                                                uint64_t generation = 1);
  // A model per bucket: names distinct and non-empty, percents 1..100
  // summing to 100 (InvalidArgument otherwise). Users are routed by slot
  // (UserSlot: 0..99) to the buckets in order.
  static absl::StatusOr<std::shared_ptr<const ModelSet>> Buckets(
      std::vector<std::shared_ptr<const ServedModel>> models, uint64_t generation);

  struct Route {
    const std::string& bucket;
    const ServedModel& served;
  };
  Route RouteOf(absl::string_view user_id) const;

  const std::vector<std::shared_ptr<const ServedModel>>& models() const { return models_; }
  bool bucketed() const { return bucketed_; }
  uint64_t generation() const { return generation_; }
  // "name@version" for one model; "bucket=name@version(percent%) ..." per
  // bucket otherwise.
  std::string Summary() const;

 private:
  ModelSet() = default;
  std::vector<std::shared_ptr<const ServedModel>> models_;
  bool bucketed_ = false;
  uint64_t generation_ = 0;
  // Per user slot, the index of its bucket's model (bucketed only).
  uint8_t slot_model_[100] = {};
};

class ServingModels {
 public:
  explicit ServingModels(std::shared_ptr<const ModelSet> initial) : current_(std::move(initial)) {}
  std::shared_ptr<const ModelSet> Current() const { return std::atomic_load(&current_); }
  void Swap(std::shared_ptr<const ModelSet> next) { std::atomic_store(&current_, std::move(next)); }

 private:
  std::shared_ptr<const ModelSet> current_;
};

}  // namespace rankwire

#endif  // RANKWIRE_RANKING_MODEL_SET_H_
