// RequestLimits: the byte and count limits of the input contract, shared by
// the one-pass parse (request_view.h), which stops at the first field over
// its limit, and the validator (request_validator.h), which checks the rest
// of the contract on the parsed view. The server sets them from its flags
// (--max_candidates, --max_explain_items, ...).
#ifndef RANKWIRE_REQUEST_REQUEST_LIMITS_H_
#define RANKWIRE_REQUEST_REQUEST_LIMITS_H_

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"

namespace rankwire {

// Limits of the input contract. Byte limits count UTF-8 bytes (protobuf has
// already checked that strings are UTF-8 when the request parsed).
struct RequestLimits {
  uint32_t max_candidates = 1000;          // --max_candidates (same default)
  uint32_t max_item_features = 256;        // item_feature_names entries
  uint32_t max_user_features = 256;        // user_features entries
  uint32_t max_context_entries = 64;       // context entries
  uint32_t max_accept_codecs = 16;         // accept_codecs entries
  uint32_t max_id_bytes = 256;             // request_id, user_id, candidates[].item_id
  uint32_t max_recall_source_bytes = 64;   // candidates[].recall_source
  uint32_t max_feature_name_bytes = 128;   // item_feature_names[], user_features keys
  uint32_t max_context_key_bytes = 64;     // context keys
  uint32_t max_context_value_bytes = 512;  // context values (the query is one)
  uint32_t max_codec_name_bytes = 64;      // accept_codecs[]
  uint32_t max_explain_items = 100;        // explain_items (--max_explain_items)
};

// Unknown fields a request may carry (a newer client's), counted as they
// occur on the wire, in the request and in its candidates: 64 plus 16 per
// allowed candidate (16,064 at the defaults), so a newer client may add up
// to 16 fields to every candidate at any --max_candidates. The parser keeps
// each as an object (~80 bytes), so this bounds the parse at ~1.3 MB per
// request at the defaults; the receive limit's 64 KiB of slack for new
// fields usually binds first.
inline uint32_t MaxUnknownRequestFields(const RequestLimits& limits) {
  const uint64_t bound = 64 + uint64_t{16} * limits.max_candidates;
  return static_cast<uint32_t>(std::min<uint64_t>(bound, std::numeric_limits<uint32_t>::max()));
}

// The wire type rank.v1.RankRequest's field `number` has (0 varint, 2
// length-delimited; -1: no such field, an unknown field to the parser).
inline int RequestFieldWireType(uint32_t number) {
  switch (number) {
    case 1:   // request_id
    case 3:   // user_id
    case 5:   // user_features
    case 6:   // context
    case 7:   // item_feature_names
    case 8:   // candidates
    case 10:  // accept_codecs
      return 2;
    case 2:   // scene
    case 4:   // request_time_ms
    case 9:   // top_n
    case 11:  // log_mode
    case 12:  // explain_items
      return 0;
    default:
      return -1;
  }
}

// Whether the limits count the entries of field `number`: user_features
// (5), context (6), item_feature_names (7), candidates (8), accept_codecs
// (10). A bit test, as the parse asks it of every field.
inline bool IsCountedField(uint32_t number) {
  constexpr uint32_t kCounted = 1u << 5 | 1u << 6 | 1u << 7 | 1u << 8 | 1u << 10;
  return number < 32 && ((kCounted >> number) & 1u) != 0;
}

// rank.v1.RankRequest's repeated and map fields whose entries the limits
// count, by field number: the entries' name in messages (nullptr for the
// other fields), and their limit (UINT32_MAX for the other fields).
inline const char* CountedFieldName(uint32_t number) {
  switch (number) {
    case 5:
      return "user features";
    case 6:
      return "context entries";
    case 7:
      return "item features";
    case 8:
      return "candidates";
    case 10:
      return "accept_codecs";
    default:
      return nullptr;
  }
}
inline uint32_t CountedFieldLimit(uint32_t number, const RequestLimits& limits) {
  switch (number) {
    case 5:
      return limits.max_user_features;
    case 6:
      return limits.max_context_entries;
    case 7:
      return limits.max_item_features;
    case 8:
      return limits.max_candidates;
    case 10:
      return limits.max_accept_codecs;
    default:
      return UINT32_MAX;
  }
}

// The verdict on what one pass over a request's wire counted (the parse,
// request_view.h, and the prescan, request_validator.h, give the same one):
// `group` (a group field), `counts[n - 1]` entries of field n, `unknown`
// unknown fields. INVALID_ARGUMENT for a group or the first count over its
// limit (WireCountsError says which), else OK. Inline: the parse asks it
// of every request.
absl::Status WireCountsError(const uint32_t (&counts)[11], uint32_t unknown, bool group,
                             const RequestLimits& limits);
inline absl::Status CheckWireCounts(const uint32_t (&counts)[11], uint32_t unknown, bool group,
                                    const RequestLimits& limits) {
  if (group) return WireCountsError(counts, unknown, group, limits);
  for (uint32_t number = 1; number <= 11; ++number) {
    if (counts[number - 1] > CountedFieldLimit(number, limits)) {
      return WireCountsError(counts, unknown, group, limits);
    }
  }
  if (unknown > MaxUnknownRequestFields(limits)) {
    return WireCountsError(counts, unknown, group, limits);
  }
  return absl::OkStatus();
}

}  // namespace rankwire

#endif  // RANKWIRE_REQUEST_REQUEST_LIMITS_H_
