// Reading what the log store holds (every layout version): varints that
// must be in their shortest form, and strings and counts built on them.
// docs/LOGS.md states it once for all stored values: a varint written with
// more bytes than it needs is damage, so a reader refuses it (DataLoss)
// wherever it meets one. The rankbin codec's varints are another format's
// (docs/FORMAT.md) and are not checked this way.
//
// Thread safety: pure functions over a caller's Reader.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_READING_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_READING_H_

#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "codec/coding.h"

namespace rankwire::logstore {

// A varint; fails `r` if it is not in its shortest form.
uint64_t LogVarint(coding::Reader& r, const char* what);
// A varint below 2^32.
uint32_t LogVarint32(coding::Reader& r, const char* what);
// A zigzag varint.
inline int64_t LogSignedVarint(coding::Reader& r, const char* what) {
  return coding::ZigZagDecode64(LogVarint(r, what));
}
// A varint length, then that many bytes.
absl::string_view LogString(coding::Reader& r, const char* what);
// A varint count of elements of at least `min_bytes_each` bytes each (a
// count the rest cannot hold fails before anything is sized with it).
uint64_t LogCount(coding::Reader& r, uint64_t min_bytes_each, const char* what);
// The binary32 whose bits are `bits` (the number columns hold).
inline float LogFloat(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}
// DataLoss "<layout>: <what>": damage a layout's reader found.
absl::Status LogDataLoss(absl::string_view layout, absl::string_view what);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_READING_H_
