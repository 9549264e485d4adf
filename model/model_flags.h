// The flags that decide which models a server accepts and how it builds
// them, defined once for the two binaries that load models: rankwire-server
// (--model) and rankwire-cli (--model_features, which must refuse what a
// server with the same flags would refuse).
//
//   --model_max_bytes                  largest model file read
//   --xgboost_max_depth                deepest XGBoost tree accepted (1..64)
//   --xgboost_allow_unnamed_features   accept a model without feature names
//   --allow_unsupplied_features        accept a model reading features a
//                                      manifest says callers do not send
//   --explain_top_k, --explain_items   what an explaining model explains
//
// Example (ASSIGN_OR_RETURN is base/status_macros.h's):
//   ASSIGN_OR_RETURN(options.model_load, ModelLoadOptionsFromFlags());
//
// Thread safety: read the flags after parsing them, from any thread.
#ifndef RANKWIRE_MODEL_MODEL_FLAGS_H_
#define RANKWIRE_MODEL_MODEL_FLAGS_H_

#include "absl/status/statusor.h"
#include "model/model_loader.h"

namespace rankwire {

// The options the flags say; InvalidArgument for a value out of range.
absl::StatusOr<ModelLoadOptions> ModelLoadOptionsFromFlags();

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_MODEL_FLAGS_H_
