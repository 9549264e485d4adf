// The stored form of one log line: a one-byte tag, then the payload.
//
//   'T' + text              plain text
//   'Z' + zstd frame        the text compressed (the frame declares its size)
//   'R' + record            a structured record, rendered with the request's
//                           layout (field "" of the same hash; log_record.h)
//
// The writer picks 'Z' only when compression was asked for and the frame is
// smaller than the text; readers accept both, so a store may hold a mix (for
// example after --log_compress was switched on). Compression goes through
// codec/compression.h, the project's one zstd wrapper.
//
// Example:
//   std::string value = "req=r1 item=sku-1 | feats price=78.7";
//   EncodeLogValue(/*compress=*/true, /*level=*/1, &value);   // in place
//   absl::StatusOr<std::string> text = DecodeLogValue(value);  // the line
//
// Thread safety: pure functions; safe from any thread.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_VALUE_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_VALUE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rankwire::logstore {

inline constexpr char kPlainLogTag = 'T';
inline constexpr char kZstdLogTag = 'Z';

// The largest text a 'Z' value may declare. A log line is ~1.2 KB; the cap
// only stops a hostile or corrupt frame from asking for a huge allocation.
inline constexpr size_t kMaxLogTextBytes = size_t{4} << 20;

// Turns the log text in `*value` into its stored form, reusing the string's
// buffer where it can. Never fails: if compression fails or does not pay,
// the value is stored plain.
void EncodeLogValue(bool compress, int level, std::string* value);

// The log text of a stored value. DataLoss for an empty value, an unknown
// tag or a corrupt frame; ResourceExhausted if a frame declares more than
// `max_text_bytes`.
absl::StatusOr<std::string> DecodeLogValue(absl::string_view value,
                                           size_t max_text_bytes = kMaxLogTextBytes);

// Turns the values read from one request's hash into text, in place:
// `layout` is the value of field "" (nullopt if there is none), `values[i]`
// the value of `item_ids[i]` (nullopt stays nullopt). 'T', 'Z' and 'R'
// values may be mixed. DataLoss (naming the item and request) for a corrupt
// value or an 'R' value with no layout.
absl::Status DecodeLogValues(absl::string_view request_id, const std::optional<std::string>& layout,
                             absl::Span<const std::string> item_ids,
                             std::vector<std::optional<std::string>>* values);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_VALUE_H_
