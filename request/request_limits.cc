#include "request/request_limits.h"

#include "absl/strings/str_cat.h"

namespace rankwire {

absl::Status WireCountsError(const uint32_t (&counts)[11], uint32_t unknown, bool group,
                             const RequestLimits& limits) {
  if (group) {
    return absl::InvalidArgumentError("request is not a valid rank.v1.RankRequest (a group field)");
  }
  for (uint32_t number = 1; number <= 11; ++number) {
    const char* counted = CountedFieldName(number);
    if (counted == nullptr) continue;
    const uint32_t limit = CountedFieldLimit(number, limits);
    if (counts[number - 1] <= limit) continue;
    return absl::InvalidArgumentError(absl::StrCat(counts[number - 1], " ", counted,
                                                   " exceed the limit of ", limit,
                                                   number == 8 ? " (--max_candidates)" : ""));
  }
  if (const uint32_t limit = MaxUnknownRequestFields(limits); unknown > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat(unknown, " unknown fields exceed the limit of ", limit,
                     " (fields rank.v1 does not have, in the request and its candidates: 64 + "
                     "16 per --max_candidates)"));
  }
  return absl::InternalError("WireCountsError: the counts are within the limits");
}

}  // namespace rankwire
