#include "request/request_validator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"

namespace rankwire {
namespace {

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// "<field> is <n> bytes; the limit is <limit>" when `value` is too long.
absl::Status CheckBytes(absl::string_view field, absl::string_view value, uint32_t limit) {
  if (value.size() <= limit) return absl::OkStatus();
  return Invalid(absl::StrCat(field, " is ", value.size(), " bytes; the limit is ", limit));
}

// The same for a repeated or map entry, whose name `field()` builds only
// when the check fails: a valid request builds no strings.
template <typename FieldName>
absl::Status CheckEntryBytes(const FieldName& field, absl::string_view value, uint32_t limit) {
  if (value.size() <= limit) return absl::OkStatus();
  return CheckBytes(field(), value, limit);
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

absl::Status ValidateHeaderFields(const RequestView& request, const RequestLimits& limits) {
  if (request.request_id.empty()) return Invalid("request_id is empty");
  if (auto s = CheckBytes("request_id", request.request_id, limits.max_id_bytes); !s.ok()) {
    return s;
  }
  if (!rank::v1::Scene_IsValid(request.scene)) {
    return Invalid(absl::StrCat("scene ", request.scene, " is not a known Scene"));
  }
  if (auto s = CheckBytes("user_id", request.user_id, limits.max_id_bytes); !s.ok()) return s;
  if (request.request_time_ms < 0) {
    return Invalid(absl::StrCat("request_time_ms ", request.request_time_ms,
                                " is negative (milliseconds since the Unix epoch)"));
  }
  if (!rank::v1::LogMode_IsValid(request.log_mode)) {
    return Invalid(absl::StrCat("log_mode ", request.log_mode, " is not a known LogMode"));
  }
  const int codecs = static_cast<int>(request.accept_codecs.size());
  if (auto s = CheckCount("accept_codecs", codecs, limits.max_accept_codecs); !s.ok()) {
    return s;
  }
  for (int i = 0; i < codecs; ++i) {
    if (auto s = CheckEntryBytes([&] { return absl::StrCat("accept_codecs[", i, "]"); },
                                 request.accept_codecs[i], limits.max_codec_name_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateUserAndContext(const RequestView& request, const RequestLimits& limits) {
  if (auto s = CheckCount("user features", static_cast<int>(request.user_features.size()),
                          limits.max_user_features);
      !s.ok()) {
    return s;
  }
  for (const auto& [name, value] : request.user_features) {
    // (Init-captures: C++17 lambdas cannot capture structured bindings.)
    auto field = [&n = name] {
      return absl::StrCat("user_features key \"", KeyForMessage(n), "\"");
    };
    if (auto s = CheckEntryBytes(field, name, limits.max_feature_name_bytes); !s.ok()) {
      return s;
    }
    if (!std::isfinite(value)) {
      return Invalid(absl::StrCat("user_features[\"", name, "\"] is ", value,
                                  "; feature values must be finite"));
    }
  }
  if (auto s = CheckCount("context entries", static_cast<int>(request.context.size()),
                          limits.max_context_entries);
      !s.ok()) {
    return s;
  }
  for (const auto& [key, value] : request.context) {
    auto field = [&k = key] { return absl::StrCat("context key \"", KeyForMessage(k), "\""); };
    if (auto s = CheckEntryBytes(field, key, limits.max_context_key_bytes); !s.ok()) {
      return s;
    }
    if (auto s = CheckEntryBytes([&k = key] { return absl::StrCat("context[\"", k, "\"]"); }, value,
                                 limits.max_context_value_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateFeatureNames(const RequestView& request, const RequestLimits& limits) {
  const int feature_count = static_cast<int>(request.item_feature_names.size());
  if (auto s = CheckCount("item features", feature_count, limits.max_item_features); !s.ok()) {
    return s;
  }
  absl::flat_hash_set<absl::string_view> feature_names;
  for (int j = 0; j < feature_count; ++j) {
    const absl::string_view name = request.item_feature_names[j];
    if (name.empty()) return Invalid(absl::StrCat("item_feature_names[", j, "] is empty"));
    if (auto s = CheckEntryBytes([&] { return absl::StrCat("item_feature_names[", j, "]"); }, name,
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

// The first candidate whose id, source, rank or feature count breaks the
// contract, in candidate order; the features' values are checked apart
// (column by column, in ValidateFeatureValues).
absl::Status ValidateCandidate(const RequestView& request, size_t c, const RequestLimits& limits) {
  const absl::string_view id = request.item_id[c];
  if (id.empty()) return Invalid(absl::StrCat("candidates[", c, "].item_id is empty"));
  if (auto s = CheckEntryBytes([&] { return absl::StrCat("candidates[", c, "].item_id"); }, id,
                               limits.max_id_bytes);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckEntryBytes([&] { return absl::StrCat("candidates[", c, "].recall_source"); },
                               request.recall_source[c], limits.max_recall_source_bytes);
      !s.ok()) {
    return s;
  }
  if (request.recall_rank[c] < 1) {
    return Invalid(absl::StrCat("candidates[", c, "].recall_rank is 0; it is 1-based"));
  }
  const size_t feature_count = request.item_feature_names.size();
  if (request.feature_count[c] != feature_count) {
    return Invalid(absl::StrCat("candidates[", c, "] has ", request.feature_count[c],
                                " features but item_feature_names names ", feature_count));
  }
  return absl::OkStatus();
}

// The first candidate with a feature value `values` does not allow
// (SIZE_MAX: none), found column by column (a loop the compiler
// vectorizes), and its message.
size_t FirstBadFeature(const RequestView& request, FeatureValues values, absl::Status* status) {
  const size_t n = request.n;
  const bool nan_ok = values == FeatureValues::kFiniteOrNan;
  // Whether v is refused: an infinity, or a NaN unless NaN means missing.
  auto bad_value = [nan_ok](float v) { return nan_ok ? std::isinf(v) : !std::isfinite(v); };
  bool bad = false;
  for (size_t f = 0; f < request.feature_names(); ++f) {
    const float* column = request.features.data() + f * n;
    uint32_t refused = 0;
    for (size_t c = 0; c < n; ++c) refused |= bad_value(column[c]);
    bad = bad || refused != 0;
  }
  if (!bad) return SIZE_MAX;
  for (size_t c = 0; c < n; ++c) {
    for (size_t f = 0; f < request.feature_names(); ++f) {
      const float v = request.feature(f, c);
      if (bad_value(v)) {
        *status = Invalid(absl::StrCat(
            "candidates[", c, "].features[", f, "] (", request.item_feature_names[f], ") is ", v,
            nan_ok ? "; feature values must be finite, or NaN for a missing value"
                   : "; feature values must be finite"));
        return c;
      }
    }
  }
  return SIZE_MAX;
}

// The first candidate whose item id an earlier one has (SIZE_MAX: none),
// and its message. A per-thread table of candidate indexes by id hash,
// reused from call to call (no allocation per request once warm).
size_t FirstDuplicateId(const RequestView& request, absl::Status* status) {
  thread_local std::vector<uint32_t> table;
  const size_t n = request.n;
  size_t size = 16;
  while (size < 2 * n) size <<= 1;
  table.assign(size, UINT32_MAX);
  const size_t mask = size - 1;
  for (size_t c = 0; c < n; ++c) {
    const absl::string_view id = request.item_id[c];
    size_t slot = absl::HashOf(id) & mask;
    while (table[slot] != UINT32_MAX) {
      const uint32_t other = table[slot];
      if (request.item_id[other] == id) {
        *status = Invalid(absl::StrCat("duplicate item id \"", id, "\" at candidates[", other,
                                       "] and candidates[", c, "]"));
        return c;
      }
      slot = (slot + 1) & mask;
    }
    table[slot] = static_cast<uint32_t>(c);
  }
  return SIZE_MAX;
}

// The message for candidate c's first refused feature value. REQUIRES: it
// has one.
absl::Status BadFeatureOf(const RequestView& request, size_t c, FeatureValues values) {
  const bool nan_ok = values == FeatureValues::kFiniteOrNan;
  for (size_t f = 0; f < request.feature_names(); ++f) {
    const float v = request.feature(f, c);
    if (nan_ok ? std::isinf(v) : !std::isfinite(v)) {
      return Invalid(absl::StrCat(
          "candidates[", c, "].features[", f, "] (", request.item_feature_names[f], ") is ", v,
          nan_ok ? "; feature values must be finite, or NaN for a missing value"
                 : "; feature values must be finite"));
    }
  }
  return absl::OkStatus();
}

// ValidateCandidates from what the parse found (RequestView::checks), in
// the same order of precedence: reads no candidate but the ones it names.
absl::Status ValidateCheckedCandidates(const RequestView& request, const RequestLimits& limits,
                                       FeatureValues values) {
  const RequestView::CandidateChecks& k = request.checks;
  size_t first_basic = k.first_bad_field;
  const size_t m = request.feature_names();
  if (k.min_features != m || k.max_features != m) {
    for (size_t c = 0; c < request.n && c < first_basic; ++c) {
      if (request.feature_count[c] != m) first_basic = c;
    }
  }
  const size_t first_value =
      values == FeatureValues::kFiniteOrNan ? k.first_infinite : k.first_non_finite;
  const size_t first_duplicate = k.first_duplicate;
  if (first_basic != SIZE_MAX && first_basic <= first_value && first_basic <= first_duplicate) {
    return ValidateCandidate(request, first_basic, limits);
  }
  if (first_value != SIZE_MAX && first_value <= first_duplicate) {
    return BadFeatureOf(request, first_value, values);
  }
  if (first_duplicate == SIZE_MAX) return absl::OkStatus();
  return Invalid(absl::StrCat("duplicate item id \"", request.item_id[first_duplicate],
                              "\" at candidates[", k.duplicate_of, "] and candidates[",
                              first_duplicate, "]"));
}

// The candidates' rules, reported as a walk in candidate order would find
// them first: per candidate its id, source, rank and feature count, then
// its feature values, then whether its id is a repeat.
absl::Status ValidateCandidates(const RequestView& request, const RequestLimits& limits,
                                FeatureValues values) {
  // The parse found them already, against these limits.
  if (request.checks.done && request.checks.max_id_bytes == limits.max_id_bytes &&
      request.checks.max_recall_source_bytes == limits.max_recall_source_bytes) {
    return ValidateCheckedCandidates(request, limits, values);
  }
  absl::Status basic;
  size_t first_basic = SIZE_MAX;
  for (size_t c = 0; c < request.n; ++c) {
    basic = ValidateCandidate(request, c, limits);
    if (!basic.ok()) {
      first_basic = c;
      break;
    }
  }
  absl::Status value, duplicate;
  const size_t first_value = FirstBadFeature(request, values, &value);
  const size_t first_duplicate = FirstDuplicateId(request, &duplicate);
  if (first_basic != SIZE_MAX && first_basic <= first_value && first_basic <= first_duplicate) {
    return basic;
  }
  if (first_value != SIZE_MAX && first_value <= first_duplicate) return value;
  return duplicate;
}

}  // namespace

absl::Status ValidateRequest(const RequestView& request, const RequestLimits& limits,
                             FeatureValues values) {
  if (auto s = ValidateHeaderFields(request, limits); !s.ok()) return s;
  const size_t n = request.n;
  if (n == 0) return Invalid("no candidates: the request must carry at least one");
  if (n > limits.max_candidates) {
    return Invalid(absl::StrCat(n, " candidates exceed the limit of ", limits.max_candidates,
                                " (--max_candidates)"));
  }
  if (request.top_n < 1 || request.top_n > n) {
    return Invalid(absl::StrCat("top_n ", request.top_n, " is out of range [1, ", n,
                                "] (1 to the number of candidates)"));
  }
  if (request.explain_items.value_or(0) > limits.max_explain_items) {
    return Invalid(absl::StrCat("explain_items ", *request.explain_items, " exceeds the limit of ",
                                limits.max_explain_items, " (--max_explain_items)"));
  }
  if (auto s = ValidateFeatureNames(request, limits); !s.ok()) return s;
  if (auto s = ValidateUserAndContext(request, limits); !s.ok()) return s;
  return ValidateCandidates(request, limits, values);
}

absl::Status ValidateRequest(const rank::v1::RankRequest& request, const RequestLimits& limits) {
  std::string storage;
  RequestView view;
  if (absl::Status s = RequestViewOf(request, limits, &storage, &view); !s.ok()) return s;
  return ValidateRequest(view, limits);
}

std::vector<std::string> UnknownItemFeatures(const RequestView& request,
                                             const absl::flat_hash_set<std::string>& known) {
  std::vector<std::string> unknown;
  for (absl::string_view name : request.item_feature_names) {
    if (!known.contains(name)) unknown.emplace_back(name);
  }
  return unknown;
}

namespace {

// Bytes of a length-delimited field (one-byte tag) with a `body`-byte body.
uint64_t LengthDelimited(uint64_t body) {
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(body) + body;
}
constexpr uint64_t kVarintField = 1 + 10;  // Tag and the longest varint.

// Skips the value of a field with `wire_type`; false on malformed data.
bool SkipValue(google::protobuf::io::CodedInputStream& in, int wire_type) {
  switch (wire_type) {
    case 0: {
      uint64_t ignored;
      return in.ReadVarint64(&ignored);
    }
    case 1:
      return in.Skip(8);
    case 2: {
      uint32_t length;
      return in.ReadVarint32(&length) && in.Skip(static_cast<int>(length));
    }
    case 5:
      return in.Skip(4);
    default:
      return false;  // Groups (never in rank.v1) and invalid types.
  }
}

}  // namespace

size_t MaxRequestBytes(const RequestLimits& l) {
  const uint64_t candidate =
      LengthDelimited(LengthDelimited(l.max_id_bytes) + LengthDelimited(l.max_recall_source_bytes) +
                      kVarintField + uint64_t{l.max_item_features} * 5);  // Unpacked floats.
  const uint64_t user_feature = LengthDelimited(LengthDelimited(l.max_feature_name_bytes) + 9);
  const uint64_t context_entry = LengthDelimited(LengthDelimited(l.max_context_key_bytes) +
                                                 LengthDelimited(l.max_context_value_bytes));
  const uint64_t total = 2 * LengthDelimited(l.max_id_bytes) + 5 * kVarintField +
                         uint64_t{l.max_user_features} * user_feature +
                         uint64_t{l.max_context_entries} * context_entry +
                         uint64_t{l.max_item_features} * LengthDelimited(l.max_feature_name_bytes) +
                         uint64_t{l.max_candidates} * candidate +
                         uint64_t{l.max_accept_codecs} * LengthDelimited(l.max_codec_name_bytes) +
                         (64 << 10);
  return static_cast<size_t>(total);
}

namespace {

constexpr int kGroupStart = 3, kGroupEnd = 4;

// Whether a Candidate field (`number`, `wire_type`) is one rank.v1 has:
// item_id, recall_source (length-delimited), recall_rank (varint),
// features (packed, or unpacked fixed32).
bool KnownCandidateField(int number, int wire_type) {
  switch (number) {
    case 1:
    case 2:
      return wire_type == 2;
    case 3:
      return wire_type == 0;
    case 4:
      return wire_type == 2 || wire_type == 5;
    default:
      return false;
  }
}

// Walks one candidate's fields (the next `length` bytes), adding the ones
// Candidate does not have to `*unknown`. False on malformed data or a group.
bool ScanCandidate(google::protobuf::io::CodedInputStream& in, uint32_t length, uint32_t* unknown,
                   bool* group) {
  const auto limit = in.PushLimit(static_cast<int>(length));
  while (const uint32_t tag = in.ReadTag()) {
    const int number = static_cast<int>(tag >> 3);
    const int wire_type = static_cast<int>(tag & 7);
    if (wire_type == kGroupStart || wire_type == kGroupEnd) {
      *group = true;
      return false;
    }
    if (!KnownCandidateField(number, wire_type)) ++*unknown;
    if (!SkipValue(in, wire_type)) return false;
  }
  const bool whole = in.BytesUntilLimit() == 0;
  in.PopLimit(limit);
  return whole;
}

}  // namespace

absl::Status ValidateFetchLogsRequest(const rank::v1::FetchLogsRequest& request,
                                      const RequestLimits& limits) {
  if (request.request_id().empty()) return Invalid("request_id is empty");
  if (auto s = CheckBytes("request_id", request.request_id(), limits.max_id_bytes); !s.ok()) {
    return s;
  }
  if (auto s = CheckCount("item ids", request.item_ids_size(), kMaxFetchItems); !s.ok()) return s;
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(request.item_ids_size());
  for (int i = 0; i < request.item_ids_size(); ++i) {
    const std::string& id = request.item_ids(i);
    auto field = [i] { return absl::StrCat("item_ids[", i, "]"); };
    if (id.empty()) {
      return Invalid(
          absl::StrCat(field(), " is 0 bytes; ids are 1..", limits.max_id_bytes, " bytes"));
    }
    if (auto s = CheckEntryBytes(field, id, limits.max_id_bytes); !s.ok()) return s;
    if (!seen.insert(id).second) {
      return Invalid(absl::StrCat(field(), " repeats an earlier id; ask for each item once"));
    }
  }
  return absl::OkStatus();
}

size_t MaxFetchLogsRequestBytes(const RequestLimits& limits) {
  return static_cast<size_t>((uint64_t{kMaxFetchItems} + 1) * LengthDelimited(limits.max_id_bytes) +
                             (64 << 10));
}

absl::Status PrescanRequest(google::protobuf::io::ZeroCopyInputStream* input,
                            const RequestLimits& limits) {
  google::protobuf::io::CodedInputStream in(input);
  uint32_t counts[11] = {};
  uint32_t unknown = 0;
  bool group = false;
  while (const uint32_t tag = in.ReadTag()) {
    const int number = static_cast<int>(tag >> 3);
    const int wire_type = static_cast<int>(tag & 7);
    if (wire_type == kGroupStart || wire_type == kGroupEnd) {
      group = true;
      break;
    }
    // Fields 1..11 only: explain_items (12) counts as an unknown field in
    // this walk (not in the parse's), as before the field table moved to
    // request_limits.h.
    if (number <= 11 && RequestFieldWireType(static_cast<uint32_t>(number)) == wire_type) {
      if (IsCountedField(static_cast<uint32_t>(number))) ++counts[number - 1];
    } else {
      ++unknown;
    }
    if (number == 8 && wire_type == 2) {
      // Inside each candidate too: its unknown fields are kept, an object each.
      uint32_t length = 0;
      if (!in.ReadVarint32(&length) || !ScanCandidate(in, length, &unknown, &group)) break;
    } else if (!SkipValue(in, wire_type)) {
      break;  // Malformed: the parser reports it.
    }
  }
  return CheckWireCounts(counts, unknown, group, limits);
}

}  // namespace rankwire
