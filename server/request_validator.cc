#include "server/request_validator.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace rankwire::server {
namespace {

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// "<field> is <n> bytes; the limit is <limit>" when `value` is too long.
absl::Status CheckBytes(absl::string_view field, absl::string_view value, uint32_t limit) {
  if (value.size() <= limit) return absl::OkStatus();
  return Invalid(absl::StrCat(field, " is ", value.size(), " bytes; the limit is ", limit));
}

absl::Status CheckCount(absl::string_view field, int count, uint32_t limit) {
  if (static_cast<uint32_t>(count) <= limit) return absl::OkStatus();
  return Invalid(absl::StrCat(count, " ", field, " exceed the limit of ", limit));
}

// A map key in a message, shortened: the key itself may be what is too long.
std::string KeyForMessage(absl::string_view key) {
  constexpr size_t kShown = 32;
  if (key.size() <= kShown) return std::string(key);
  return absl::StrCat(key.substr(0, kShown), "...");
}

absl::Status ValidateHeaderFields(const rank::v1::RankRequest& request,
                                  const RequestLimits& limits) {
  if (request.request_id().empty()) return Invalid("request_id is empty");
  if (auto s = CheckBytes("request_id", request.request_id(), limits.max_id_bytes); !s.ok()) {
    return s;
  }
  if (!rank::v1::Scene_IsValid(request.scene())) {
    return Invalid(absl::StrCat("scene ", request.scene(), " is not a known Scene"));
  }
  if (auto s = CheckBytes("user_id", request.user_id(), limits.max_id_bytes); !s.ok()) return s;
  if (request.request_time_ms() < 0) {
    return Invalid(absl::StrCat("request_time_ms ", request.request_time_ms(),
                                " is negative (milliseconds since the Unix epoch)"));
  }
  if (!rank::v1::LogMode_IsValid(request.log_mode())) {
    return Invalid(absl::StrCat("log_mode ", request.log_mode(), " is not a known LogMode"));
  }
  if (auto s = CheckCount("accept_codecs", request.accept_codecs_size(),
                          limits.max_accept_codecs);
      !s.ok()) {
    return s;
  }
  for (int i = 0; i < request.accept_codecs_size(); ++i) {
    if (auto s = CheckBytes(absl::StrCat("accept_codecs[", i, "]"), request.accept_codecs(i),
                            limits.max_codec_name_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateUserAndContext(const rank::v1::RankRequest& request,
                                    const RequestLimits& limits) {
  if (auto s = CheckCount("user features", request.user_features_size(),
                          limits.max_user_features);
      !s.ok()) {
    return s;
  }
  for (const auto& [name, value] : request.user_features()) {
    if (auto s = CheckBytes(absl::StrCat("user_features key \"", KeyForMessage(name), "\""),
                            name, limits.max_feature_name_bytes);
        !s.ok()) {
      return s;
    }
    if (!std::isfinite(value)) {
      return Invalid(absl::StrCat("user_features[\"", name, "\"] is ", value,
                                  "; feature values must be finite"));
    }
  }
  if (auto s = CheckCount("context entries", request.context_size(),
                          limits.max_context_entries);
      !s.ok()) {
    return s;
  }
  for (const auto& [key, value] : request.context()) {
    if (auto s = CheckBytes(absl::StrCat("context key \"", KeyForMessage(key), "\""), key,
                            limits.max_context_key_bytes);
        !s.ok()) {
      return s;
    }
    if (auto s = CheckBytes(absl::StrCat("context[\"", key, "\"]"), value,
                            limits.max_context_value_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateFeatureNames(const rank::v1::RankRequest& request,
                                  const RequestLimits& limits) {
  const int feature_count = request.item_feature_names_size();
  if (auto s = CheckCount("item features", feature_count, limits.max_item_features); !s.ok()) {
    return s;
  }
  absl::flat_hash_set<absl::string_view> feature_names;
  for (int j = 0; j < feature_count; ++j) {
    const std::string& name = request.item_feature_names(j);
    if (name.empty()) return Invalid(absl::StrCat("item_feature_names[", j, "] is empty"));
    if (auto s = CheckBytes(absl::StrCat("item_feature_names[", j, "]"), name,
                            limits.max_feature_name_bytes);
        !s.ok()) {
      return s;
    }
    if (!feature_names.insert(name).second) {
      return Invalid(absl::StrCat("item feature \"", name, "\" is named twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateCandidate(const rank::v1::RankRequest& request, int i,
                               const RequestLimits& limits) {
  const rank::v1::Candidate& c = request.candidates(i);
  if (c.item_id().empty()) return Invalid(absl::StrCat("candidates[", i, "].item_id is empty"));
  if (auto s = CheckBytes(absl::StrCat("candidates[", i, "].item_id"), c.item_id(),
                          limits.max_id_bytes);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckBytes(absl::StrCat("candidates[", i, "].recall_source"), c.recall_source(),
                          limits.max_recall_source_bytes);
      !s.ok()) {
    return s;
  }
  if (c.recall_rank() < 1) {
    return Invalid(absl::StrCat("candidates[", i, "].recall_rank is 0; it is 1-based"));
  }
  const int feature_count = request.item_feature_names_size();
  if (c.features_size() != feature_count) {
    return Invalid(absl::StrCat("candidates[", i, "] has ", c.features_size(),
                                " features but item_feature_names names ", feature_count));
  }
  for (int j = 0; j < feature_count; ++j) {
    float v = c.features(j);
    if (!std::isfinite(v)) {
      return Invalid(absl::StrCat("candidates[", i, "].features[", j, "] (",
                                  request.item_feature_names(j), ") is ", v,
                                  "; feature values must be finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRequest(const rank::v1::RankRequest& request,
                             const RequestLimits& limits) {
  if (auto s = ValidateHeaderFields(request, limits); !s.ok()) return s;
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
  if (auto s = ValidateFeatureNames(request, limits); !s.ok()) return s;
  if (auto s = ValidateUserAndContext(request, limits); !s.ok()) return s;
  absl::flat_hash_map<absl::string_view, int> seen;
  seen.reserve(n);
  for (int i = 0; i < n; ++i) {
    if (auto s = ValidateCandidate(request, i, limits); !s.ok()) return s;
    auto [it, inserted] = seen.emplace(request.candidates(i).item_id(), i);
    if (!inserted) {
      return Invalid(absl::StrCat("duplicate item id \"", request.candidates(i).item_id(),
                                  "\" at candidates[", it->second, "] and candidates[", i,
                                  "]"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> UnknownItemFeatures(const rank::v1::RankRequest& request,
                                             const absl::flat_hash_set<std::string>& known) {
  std::vector<std::string> unknown;
  for (const std::string& name : request.item_feature_names()) {
    if (!known.contains(name)) unknown.push_back(name);
  }
  return unknown;
}

}  // namespace rankwire::server
