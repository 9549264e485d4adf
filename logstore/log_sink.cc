#include "logstore/log_sink.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace rankwire::logstore {
namespace {

// The payload that marks a write whose outcome is unknown.
constexpr absl::string_view kUnknownPayload = "rankwire.logstore/outcome-unknown";

}  // namespace

absl::Status OutcomeUnknown(const absl::Status& why) {
  absl::Status status(
      why.code() == absl::StatusCode::kOk ? absl::StatusCode::kUnavailable : why.code(),
      absl::StrCat("sent, no answer: ", why.message()));
  // The cause's payloads stay (a timeout is still IsRedisTimeout).
  why.ForEachPayload([&status](absl::string_view url, const absl::Cord& payload) {
    status.SetPayload(url, payload);
  });
  status.SetPayload(kUnknownPayload, absl::Cord());
  return status;
}

bool IsOutcomeUnknown(const absl::Status& status) {
  return status.GetPayload(kUnknownPayload).has_value();
}

}  // namespace rankwire::logstore
