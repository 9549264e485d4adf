// A machine-readable reason on an absl::Status, for errors whose callers
// count them by kind (a model reload's failures, by reason) where the code
// alone is too coarse: "truncated" and "invalid_number" are both
// InvalidArgument. The reason travels as a status payload, so it survives
// RETURN_IF_ERROR and a status copied up the stack; it is not part of the
// message.
//
// Example:
//   return WithReason(absl::InvalidArgumentError("m.model:7: \"nan\" is not a
//                     finite number"), "invalid_number");
//   ...
//   metrics->reload_failures->Increment(ReasonOf(status).value_or("other"));
//
// Thread safety: pure functions.
#ifndef RANKWIRE_BASE_STATUS_REASON_H_
#define RANKWIRE_BASE_STATUS_REASON_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace rankwire {

inline constexpr absl::string_view kStatusReasonUrl = "type.rankwire.dev/reason";

// `status` with `reason` attached (an OK status is returned as is).
inline absl::Status WithReason(absl::Status status, absl::string_view reason) {
  if (!status.ok()) status.SetPayload(kStatusReasonUrl, absl::Cord(reason));
  return status;
}

// The reason WithReason attached, if any.
inline std::optional<std::string> ReasonOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kStatusReasonUrl);  // absl::optional<absl::Cord>
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

}  // namespace rankwire

#endif  // RANKWIRE_BASE_STATUS_REASON_H_
