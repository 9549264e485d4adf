// Request validation: everything the ranker assumes about a RankRequest is
// checked here first, and a bad request gets INVALID_ARGUMENT with a message
// that names the problem ("candidates[3].features[5] (ctr_7d) is nan").
//
// Thread safety: pure functions.
#ifndef RANKWIRE_SERVER_REQUEST_VALIDATOR_H_
#define RANKWIRE_SERVER_REQUEST_VALIDATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "rank/v1/rank.pb.h"

namespace rankwire::server {

struct RequestLimits {
  uint32_t max_candidates = 1000;      // --max_candidates (same default)
  uint32_t max_item_features = 256;
  uint32_t max_id_bytes = 256;         // request id, item ids
};

absl::Status ValidateRequest(const rank::v1::RankRequest& request,
                             const RequestLimits& limits);

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_REQUEST_VALIDATOR_H_
