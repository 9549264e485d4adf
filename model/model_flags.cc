#include "model/model_flags.h"

#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "base/status_macros.h"
#include "model/xgboost/xgboost_model.h"

ABSL_FLAG(uint64_t, model_max_bytes, uint64_t{256} << 20,
          "Largest model file read; a larger one is refused without being read.");
ABSL_FLAG(int, xgboost_max_depth, 16, "Deepest XGBoost tree accepted at load.");
ABSL_FLAG(bool, xgboost_allow_unnamed_features, false,
          "Accept an XGBoost model saved without feature names (its features are then "
          "f0..f{n-1}, bound to item features of those names).");
ABSL_FLAG(std::string, explain, "approx",
          "How an XGBoost model explains the items shown: approx (Saabas, XGBoost's "
          "approx_contribs), exact (TreeSHAP, XGBoost's pred_contribs) or none.");
ABSL_FLAG(uint32_t, explain_top_k, 3,
          "Contributions per explained item, for models that explain (XGBoost); 0: none.");
ABSL_FLAG(uint32_t, explain_items, 10,
          "Items explained when the request does not say (RankRequest.explain_items): the "
          "first min(top_n, this) in rank order.");
ABSL_FLAG(uint32_t, max_explain_items, 100,
          "The most items a request may ask to have explained (RankRequest.explain_items); "
          "more is INVALID_ARGUMENT. At least --explain_items.");
ABSL_FLAG(bool, allow_unsupplied_features, false,
          "Load a model that reads features a bucket manifest's feature lists say callers do "
          "not send (they then score as missing).");

namespace rankwire {

absl::StatusOr<ModelLoadOptions> ModelLoadOptionsFromFlags() {
  ModelLoadOptions options;
  options.max_file_bytes = absl::GetFlag(FLAGS_model_max_bytes);
  options.xgboost.max_depth = absl::GetFlag(FLAGS_xgboost_max_depth);
  if (options.xgboost.max_depth < 1 || options.xgboost.max_depth > 64) {
    return absl::InvalidArgumentError("--xgboost_max_depth must be 1..64");
  }
  options.xgboost.allow_unnamed_features = absl::GetFlag(FLAGS_xgboost_allow_unnamed_features);
  ASSIGN_OR_RETURN(options.explain.mode, ParseExplainMode(absl::GetFlag(FLAGS_explain)));
  options.explain.explain_top_k = absl::GetFlag(FLAGS_explain_top_k);
  options.explain.explain_items = absl::GetFlag(FLAGS_explain_items);
  options.explain.max_explain_items = absl::GetFlag(FLAGS_max_explain_items);
  if (options.explain.explain_top_k > 64 || options.explain.max_explain_items > 1000 ||
      options.explain.explain_items > options.explain.max_explain_items) {
    return absl::InvalidArgumentError(
        "--explain_top_k must be <= 64 and --explain_items <= --max_explain_items <= 1000");
  }
  options.allow_unsupplied_features = absl::GetFlag(FLAGS_allow_unsupplied_features);
  return options;
}

}  // namespace rankwire
