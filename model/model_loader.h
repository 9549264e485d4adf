// Loading models: what --model names (a file, a directory of versions, or a
// directory with a bucket manifest), each file in either format, and the
// check a model passes before it may serve.
//
// --model=FILE         that file.
// --model=DIR          DIR/rankwire.manifest if present (below); otherwise
//                      the newest version among DIR's files named
//                      "<version>.model" or "<version>.json", a version
//                      being numbers separated by dots ("7", "2026.12.06.1"),
//                      compared number by number. Hidden files (".x",
//                      Kubernetes' "..data") and other names are ignored.
//
// The manifest maps experiment buckets to models, with traffic shares:
//
//   rankwire-manifest 1
//   # bucket <name> <percent> <model file or version directory>
//   bucket control   50 ecom_search_lr.model
//   bucket xgb_ndcg  50 xgb_ndcg/            # its newest version
//   # Optional: the features callers send. A model reading any other is
//   # refused at load (a misspelt name would otherwise score as missing).
//   item_features price sales_30d rating
//   user_features price_pref
//   context_features city_tier
//   end
//
// The header line and "end" are required (a manifest without its "end" may
// be half written); an error without them shows the smallest manifest:
//
//   rankwire-manifest 1
//   model ecom_search_lr.model
//   end
//
// Paths are relative to the manifest's directory. Percents sum to 100.
// Instead of bucket lines, one line "model <model file or version
// directory>" serves one model to every user (its own experiment buckets,
// if it names any, label them): a directory whose manifest names the model
// to serve, such as a Kubernetes ConfigMap of models.
//
// A file's format: a file named *.json is XGBoost JSON (Booster.save_model),
// whatever it holds (an empty or non-JSON one is refused as not valid JSON);
// any other name goes by content: '{' starts XGBoost JSON, anything else is
// the linear format. Its name@version:
// the linear file's own "name" and "version" lines; for XGBoost, the
// booster attributes rankwire_name / rankwire_version if set, else the
// file's stem (the directory's name for a versioned file) and the file
// name's version, else "sha-" and 12 hex digits of the bytes.
//
// Every error carries a reason (base/status_reason.h), as counted in
// rankwire_model_reload_failures_total{reason}.
//
// Thread safety: pure functions of their arguments and the file system.
#ifndef RANKWIRE_MODEL_MODEL_LOADER_H_
#define RANKWIRE_MODEL_MODEL_LOADER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/read_file.h"
#include "model/model.h"
#include "model/xgboost/xgboost_model.h"
#include "model/xgboost/xgboost_spec.h"
#include "request/request_validator.h"

namespace rankwire {

inline constexpr char kManifestName[] = "rankwire.manifest";
// How many older versions of a version directory a server starting with
// no model tries after the newest is refused.
inline constexpr size_t kMaxOlderVersions = 8;

// Every reason a model can be refused for (base/status_reason.h), as
// counted in rankwire_model_reload_failures_total{reason}.
inline constexpr const char* kRefusalReasons[] = {
    "not_found",       "permission_denied",
    "not_a_file",      "too_large",
    "file_changed",    "io",
    "empty",           "truncated",
    "invalid_number",  "unknown_transform",
    "unknown_feature", "check_failed",
    "manifest",        "invalid_model",
    "unsupported",
};

// The reason a refusal is counted under: its own if it carries one of
// kRefusalReasons, else "unsupported" for UNIMPLEMENTED (valid, but not
// something rankwire serves) and "invalid_model" for the rest (a model
// that breaks a rule of its format).
std::string RefusalReason(const absl::Status& status);

struct ModelLoadOptions {
  // Largest model file read (a larger one is refused unread).
  uint64_t max_file_bytes = uint64_t{256} << 20;
  // XGBoost's limits (its max_file_bytes is this struct's).
  xgboost::XGBoostLoadOptions xgboost;
  XGBoostModelOptions explain;
  // With a manifest's feature lists: allow a model to read features callers
  // do not send (they are then always missing, or 0 for a linear model).
  bool allow_unsupplied_features = false;
};

// What --model resolves to now.
struct ModelPlan {
  struct Entry {
    std::string bucket;  // Empty without a manifest.
    int percent = 100;
    std::string path;
    std::string name_hint;     // For XGBoost files without rankwire_name.
    std::string version_hint;  // From a versioned file name, or empty.
    // A version directory's older versions, newest first (at most
    // kMaxOlderVersions): what a server with no model yet falls back to
    // when this entry does not load. Empty for a file named directly.
    std::vector<Entry> older;
  };
  std::string source;  // --model.
  std::vector<Entry> entries;
  bool bucketed = false;  // From a manifest.
  // The manifest's feature lists, if it has any.
  std::optional<ModelInputs> supplied;
  // Every file and directory the plan was made from, with its stamp: a
  // change in any means the plan must be made again (what a poll compares).
  std::vector<std::pair<std::string, FileStamp>> watched;
};

absl::StatusOr<ModelPlan> PlanModels(const std::string& source);

// A loaded model and the file it came from.
struct LoadedModel {
  std::shared_ptr<const Model> model;
  FileStamp stamp;
};

// Reads and parses one entry's file.
absl::StatusOr<LoadedModel> LoadModel(const ModelPlan::Entry& entry,
                                      const ModelLoadOptions& options);

// Whether the model reads only features callers supply (when `supplied`
// says which): FailedPrecondition with reason "unknown_feature" otherwise.
// Cheap; run again for a kept model when a manifest's lists change.
absl::Status CheckSupplied(const Model& model, const std::optional<ModelInputs>& supplied,
                           bool allow_unsupplied_features);

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_MODEL_LOADER_H_
