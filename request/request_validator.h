// Request validation: everything the ranker assumes about a RankRequest is
// checked here first, and a bad request gets INVALID_ARGUMENT with a message
// that names the field and the rule ("candidates[3].features[5] (ctr_7d) is
// nan", "user_id is 102400 bytes; the limit is 256").
//
// The rules are the input contract of rank.v1.RankRequest; rank.proto and
// docs/ARCHITECTURE.md ("Input contract") list them. Every string the server
// copies into each item's metrics or log line has a byte limit here, so that
// no request can make the response (or the log store) grow by more than a
// known factor of its own size; ResponseBudget (response_budget.h) then
// bounds what is left: the number of items times what each carries.
//
// Thread safety: pure functions.
#ifndef RANKWIRE_REQUEST_REQUEST_VALIDATOR_H_
#define RANKWIRE_REQUEST_REQUEST_VALIDATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "rank/v1/rank.pb.h"
#include "request/request_limits.h"
#include "request/request_view.h"

namespace rankwire {

// Which item feature values a request may carry: finite ones, or (for a
// model that reads NaN as a missing value, Model::nan_is_missing) NaN too.
// Infinities are refused either way.
enum class FeatureValues { kFinite, kFiniteOrNan };

// The input contract on a parsed request: INVALID_ARGUMENT naming the first
// rule broken (ids and sources, counts, top_n, names, feature values, no
// id twice).
absl::Status ValidateRequest(const RequestView& request, const RequestLimits& limits,
                             FeatureValues values = FeatureValues::kFinite);
// The same for a protobuf request (tests, tools): parsed into a view first,
// with PrescanRequest's limits.
absl::Status ValidateRequest(const rank::v1::RankRequest& request, const RequestLimits& limits);

// The most bytes a serialized request within `limits` can take (every field
// at its limit, features unpacked), plus 64 KiB for fields this version does
// not know. A request larger than this cannot be valid: the server's default
// --max_request_bytes, so gRPC refuses it before it is even read in whole.
size_t MaxRequestBytes(const RequestLimits& limits);

// The most item ids one FetchLogs call may ask for.
inline constexpr uint32_t kMaxFetchItems = 1000;

// FetchLogs's input contract, Rank's id rules: request_id and every item id
// 1..max_id_bytes, at most kMaxFetchItems ids, none repeated.
// INVALID_ARGUMENT naming the first problem.
absl::Status ValidateFetchLogsRequest(const rank::v1::FetchLogsRequest& request,
                                      const RequestLimits& limits);

// The largest FetchLogsRequest that contract allows, plus 64 KiB: the
// server's receive limit is one for all methods, so the derived
// --max_request_bytes is at least this.
size_t MaxFetchLogsRequestBytes(const RequestLimits& limits);

// Counts the repeated and map fields of a serialized RankRequest without
// parsing it: INVALID_ARGUMENT (the message ValidateRequest would give) when
// one has more entries on the wire than `limits` allow (a map key repeated
// on the wire counts each time), when there are more than
// MaxUnknownRequestFields(limits) unknown fields (the request's and its
// candidates'), or for a group field. Parsing allocates an object per entry
// or unknown field: 2 bytes of wire per empty candidate become ~80 bytes of
// heap, so a request over the limits is refused here, before it is parsed.
// Malformed wire data is left to the parser.
absl::Status PrescanRequest(google::protobuf::io::ZeroCopyInputStream* input,
                            const RequestLimits& limits);

// The item feature names of `request` that are not in `known` (the model's
// item inputs), in request order. REQUIRES: ValidateRequest returned OK (so
// the list is bounded by max_item_features).
std::vector<std::string> UnknownItemFeatures(const RequestView& request,
                                             const absl::flat_hash_set<std::string>& known);

}  // namespace rankwire

#endif  // RANKWIRE_REQUEST_REQUEST_VALIDATOR_H_
