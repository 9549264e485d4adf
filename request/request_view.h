// RequestView: a serialized rank.v1.RankRequest read in one pass, straight
// into what the server works with: strings as views of the request's bytes,
// the candidates' features feature-major ([f * n + c], the ranker's
// layout), ids, sources and recall ranks in arrays. No object per
// candidate, no string copies; a view kept per thread is reused, so a warm
// server parses a request without allocating.
//
// Parsing accepts what protobuf's parser accepts (fields in any order,
// repeated fields split, packed or unpacked features, map entries with
// missing parts, a later value of a non-repeated field winning, unknown
// fields skipped) and refuses what it refuses (malformed wire data, strings
// that are not UTF-8), and, before any of that costs memory, applies
// PrescanRequest's limits: entries of each repeated or map field as they
// occur on the wire, unknown fields in the request and its candidates,
// groups. Each refusal is INVALID_ARGUMENT with the message the protobuf
// path gave (request_view_test.cc checks the two against each other).
//
// The same pass finds what the input contract's per-candidate rules need
// (CandidateChecks below): the first candidate whose id, source or rank
// breaks a limit, the first with a non-finite or infinite feature value,
// the first whose id an earlier one has, and each candidate's recall
// source as a code into the request's distinct sources. ValidateRequest
// (request_validator.h) then checks the contract on the view without
// reading the candidates again.
//
// Thread safety: a view is plain data; parse into it from one thread.
#ifndef RANKWIRE_REQUEST_REQUEST_VIEW_H_
#define RANKWIRE_REQUEST_REQUEST_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {

struct RequestLimits;

struct RequestView {
  absl::string_view request_id;
  absl::string_view user_id;
  int32_t scene = 0;  // rank.v1.Scene (open enum: any int32).
  int64_t request_time_ms = 0;
  uint32_t top_n = 0;
  int32_t log_mode = 0;  // rank.v1.LogMode.
  // How many shown items to explain; absent: the server's default.
  std::optional<uint32_t> explain_items;
  std::vector<absl::string_view> accept_codecs;
  // Maps: one entry per distinct key (the last value on the wire wins), in
  // the order keys first occur.
  std::vector<std::pair<absl::string_view, double>> user_features;
  std::vector<std::pair<absl::string_view, absl::string_view>> context;
  std::vector<absl::string_view> item_feature_names;

  // Candidates.
  size_t n = 0;
  std::vector<absl::string_view> item_id;
  size_t item_id_bytes = 0;  // Of all ids together.
  std::vector<absl::string_view> recall_source;
  std::vector<uint32_t> recall_rank;
  // How many features each candidate carries on the wire, and the first
  // item_feature_names.size() of them, feature-major: [f * n + c] (a
  // candidate with fewer has zeros past its count).
  std::vector<uint32_t> feature_count;
  std::vector<float> features;
  // Per candidate, its recall source as an index into `sources` (the
  // distinct ones, in first-seen order).
  std::vector<uint32_t> source_code;
  std::vector<absl::string_view> sources;

  // What the parse found about the candidates' rules, for ValidateRequest.
  // SIZE_MAX: no such candidate.
  struct CandidateChecks {
    bool done = false;  // Filled by the parse (false: validation walks).
    // The limits the parse checked ids and sources against.
    uint32_t max_id_bytes = 0;
    uint32_t max_recall_source_bytes = 0;
    size_t first_bad_field = SIZE_MAX;            // Empty or long id, long source, rank 0.
    uint32_t min_features = 0, max_features = 0;  // Over feature_count.
    size_t first_non_finite = SIZE_MAX;           // A NaN or an infinity among its features.
    size_t first_infinite = SIZE_MAX;
    size_t first_duplicate = SIZE_MAX;  // Its id is candidate duplicate_of's.
    size_t duplicate_of = 0;
  } checks;

  size_t feature_names() const { return item_feature_names.size(); }
  float feature(size_t f, size_t c) const { return features[f * n + c]; }
  // Map lookups (linear: the maps are small). Null when absent.
  const double* FindUserFeature(absl::string_view key) const;
  const absl::string_view* FindContext(absl::string_view key) const;
};

// Parses `bytes` (which must outlive the view) into `view`, reusing its
// memory. InvalidArgument as described above.
absl::Status ParseRequestView(absl::string_view bytes, const RequestLimits& limits,
                              RequestView* view);

// A request already parsed by protobuf (tests, tools, the in-process
// client), as a view: serialized into `storage`, which must outlive it.
absl::Status RequestViewOf(const rank::v1::RankRequest& request, const RequestLimits& limits,
                           std::string* storage, RequestView* view);

// A protobuf request's view together with the bytes it points into: for
// tests and tools that hold requests as messages. Neither copied nor moved
// (the view points into its own member).
class OwnedRequestView {
 public:
  explicit OwnedRequestView(const rank::v1::RankRequest& request);
  OwnedRequestView(const rank::v1::RankRequest& request, const RequestLimits& limits);
  OwnedRequestView(const OwnedRequestView&) = delete;
  OwnedRequestView& operator=(const OwnedRequestView&) = delete;

  const RequestView& view() const { return view_; }
  operator const RequestView&() const { return view_; }  // NOLINT: a view by design.
  // The parse's outcome (InvalidArgument for a request over the limits).
  const absl::Status& status() const { return status_; }

 private:
  std::string bytes_;
  RequestView view_;
  absl::Status status_;
};

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF), as protobuf requires of string fields.
bool IsValidUtf8(absl::string_view s);

}  // namespace rankwire

#endif  // RANKWIRE_REQUEST_REQUEST_VIEW_H_
