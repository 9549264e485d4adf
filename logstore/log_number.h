// The number slot of a structured log record (log_record.h): a double kept
// as the six significant decimal digits its text shows ("%g", what
// absl::SixDigits prints), in one varint of 1 to 4 bytes, or as the raw
// double where the digits cannot carry it exactly. docs/LOGS.md specifies
// the bytes; decoding and rendering with SixDigits gives the writer's text.
//
// A request's lines hold ~24,000 numbers, so their coding is most of what a
// log writer does per request: EncodeLogNumbers codes eight at a time with
// AVX-512 where the CPU has it, four at a time with AVX2 where it has that
// (checked once, at run time), and otherwise one at a time; every path
// gives the same bytes.
//
// Thread safety: the coding and reading functions are safe from any thread.
// The path EncodeLogNumbers takes is process-wide state: the CPU's, read
// once, capped by LimitLogNumberPath (an atomic; calls already running on
// other threads may finish on the old path, which gives the same bytes).
#ifndef RANKWIRE_LOGSTORE_LOG_NUMBER_H_
#define RANKWIRE_LOGSTORE_LOG_NUMBER_H_

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

// The slots of `count` values, one after another: the bytes EncodeLogNumber
// writes for each. REQUIRES: count * kMaxLogNumberBytes of room at `dst`.
char* EncodeLogNumbers(const double* values, size_t count, char* dst);

// The same as EncodeLogNumber, appended to `out`.
void AppendLogNumber(double value, std::string* out);

// Reads one slot from `in` and returns its value (the double SixDigits
// renders). DataLoss for a slot that is not well formed or is cut short.
absl::StatusOr<double> ReadLogNumber(coding::Reader& in);

// The ways EncodeLogNumbers can code, narrowest first.
enum class LogNumberPath { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// The path EncodeLogNumbers takes now: the widest the CPU has, capped by
// LimitLogNumberPath.
LogNumberPath ActiveLogNumberPath();

// "scalar", "avx2" or "avx512", for the start-up line and reports.
const char* LogNumberPathName(LogNumberPath path);

// Caps the path, process-wide (no cap at start). The server's
// --log_numbers=avx2 caps it at kAvx2: on CPUs that lower their clock for
// 512-bit work (Intel Skylake-SP, Cascade Lake), where the writers share
// cores with ranking, an operator may prefer that. Tests and benchmarks use
// it to run every path the CPU has.
void LimitLogNumberPath(LogNumberPath widest);

// The cap a flag names: "auto" or "avx512" (no cap: the widest the CPU
// has), "avx2" or "scalar". InvalidArgument for anything else.
absl::StatusOr<LogNumberPath> ParseLogNumberPath(absl::string_view text);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_LOG_NUMBER_H_
