#include "server/request_validator.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace rankwire::server {
namespace {

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

}  // namespace

absl::Status ValidateRequest(const rank::v1::RankRequest& request,
                             const RequestLimits& limits) {
  if (request.request_id().empty()) return Invalid("request_id is empty");
  if (request.request_id().size() > limits.max_id_bytes) {
    return Invalid(absl::StrCat("request_id is ", request.request_id().size(),
                                " bytes; the limit is ", limits.max_id_bytes));
  }
  const int n = request.candidates_size();
  if (n == 0) return Invalid("no candidates: the request must carry at least one");
  if (static_cast<uint32_t>(n) > limits.max_candidates) {
    return Invalid(absl::StrCat(n, " candidates exceed the limit of ",
                                limits.max_candidates, " (--max_candidates)"));
  }
  if (request.top_n() < 1 || request.top_n() > static_cast<uint32_t>(n)) {
    return Invalid(absl::StrCat("top_n ", request.top_n(),
                                " is out of range [1, ", n,
                                "] (1 to the number of candidates)"));
  }
  if (!rank::v1::LogMode_IsValid(request.log_mode())) {
    return Invalid(absl::StrCat("log_mode ", request.log_mode(), " is not a known LogMode"));
  }
  const int feature_count = request.item_feature_names_size();
  if (static_cast<uint32_t>(feature_count) > limits.max_item_features) {
    return Invalid(absl::StrCat(feature_count, " item features exceed the limit of ",
                                limits.max_item_features));
  }
  absl::flat_hash_set<absl::string_view> feature_names;
  for (int j = 0; j < feature_count; ++j) {
    const std::string& name = request.item_feature_names(j);
    if (name.empty()) return Invalid(absl::StrCat("item_feature_names[", j, "] is empty"));
    if (!feature_names.insert(name).second) {
      return Invalid(absl::StrCat("item feature \"", name, "\" is named twice"));
    }
  }
  for (const auto& [name, value] : request.user_features()) {
    if (!std::isfinite(value)) {
      return Invalid(absl::StrCat("user_features[\"", name, "\"] is ", value,
                                  "; feature values must be finite"));
    }
  }
  absl::flat_hash_map<absl::string_view, int> seen;
  seen.reserve(n);
  for (int i = 0; i < n; ++i) {
    const rank::v1::Candidate& c = request.candidates(i);
    if (c.item_id().empty()) return Invalid(absl::StrCat("candidates[", i, "].item_id is empty"));
    if (c.item_id().size() > limits.max_id_bytes) {
      return Invalid(absl::StrCat("candidates[", i, "].item_id is ", c.item_id().size(),
                                  " bytes; the limit is ", limits.max_id_bytes));
    }
    auto [it, inserted] = seen.emplace(c.item_id(), i);
    if (!inserted) {
      return Invalid(absl::StrCat("duplicate item id \"", c.item_id(), "\" at candidates[",
                                  it->second, "] and candidates[", i, "]"));
    }
    if (c.features_size() != feature_count) {
      return Invalid(absl::StrCat("candidates[", i, "] has ", c.features_size(),
                                  " features but item_feature_names names ",
                                  feature_count));
    }
    for (int j = 0; j < feature_count; ++j) {
      float v = c.features(j);
      if (!std::isfinite(v)) {
        return Invalid(absl::StrCat("candidates[", i, "].features[", j, "] (",
                                    request.item_feature_names(j), ") is ", v,
                                    "; feature values must be finite"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace rankwire::server
