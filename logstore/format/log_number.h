// The number slot of a structured log record (log_record.h): a double kept
// as the six significant decimal digits its text shows ("%g", what
// absl::SixDigits prints), in one varint of 1 to 4 bytes, or as the raw
// double where the digits cannot carry it exactly. docs/LOGS.md specifies
// the bytes; decoding and rendering with SixDigits gives the writer's text.
//
// Servers of layout version 1 wrote records; nothing writes them now (log
// writers store binary32 columns, log_columns.h). Readers still read them
// (a store may hold them during a rolling upgrade), and tests build them
// with EncodeLogNumber.
//
// Thread safety: the coding and reading functions are safe from any thread.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_NUMBER_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_NUMBER_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codec/coding.h"

namespace rankwire::logstore {

// The most bytes one slot takes: a varint code and 8 raw bytes.
inline constexpr size_t kMaxLogNumberBytes = 10;

// Writes the slot of `value` at `dst` and returns its end. REQUIRES:
// kMaxLogNumberBytes of room at `dst`, whatever the value: bytes between
// the returned end and dst + kMaxLogNumberBytes may be overwritten (a short
// slot is written as one 4-byte store).
char* EncodeLogNumber(double value, char* dst);

// The same as EncodeLogNumber, appended to `out`.
void AppendLogNumber(double value, std::string* out);

// Reads one slot from `in` and returns its value (the double SixDigits
// renders). DataLoss for a slot that is not well formed or is cut short.
absl::StatusOr<double> ReadLogNumber(coding::Reader& in);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_NUMBER_H_
