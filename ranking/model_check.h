// The load check: what a model must pass before it serves, run by the
// reloader on every load and by rankwire-cli --model_features. It ranks a
// built-in request with the model through the Ranker, so it lives above
// the model layer (model/model_loader.h parses and loads; this runs).
//
// Thread safety: a pure function of the model.
#ifndef RANKWIRE_RANKING_MODEL_CHECK_H_
#define RANKWIRE_RANKING_MODEL_CHECK_H_

#include <optional>

#include "absl/status/status.h"
#include "model/model.h"
#include "request/request_limits.h"

namespace rankwire {

// What a model must pass before it serves: CheckSupplied, and the built-in
// check request
// (eight candidates carrying every feature the model reads, values in
// [0, 1] and, for a model with missing values, NaN; user and context
// values 0.5) validates, ranks with every score finite, and gives the keys
// and types the model's output shape says, and a log line per item.
// FailedPrecondition with reason "unknown_feature" or "check_failed".
absl::Status CheckModel(const Model& model, const std::optional<ModelInputs>& supplied,
                        bool allow_unsupplied_features, const RequestLimits& limits);

}  // namespace rankwire

#endif  // RANKWIRE_RANKING_MODEL_CHECK_H_
