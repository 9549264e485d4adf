// Writing what the log store holds: varints in their shortest form (the
// only form log_reading.h accepts) and strings behind a varint length.
// One definition for every layout version's writer (log_blocks.h,
// log_columns.h, log_record.h).
//
// Thread safety: pure functions over a caller's string.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_WRITING_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_WRITING_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "codec/coding.h"

namespace rankwire::logstore {

inline void AppendLogVarint(uint64_t v, std::string* out) {
  char buf[coding::kMaxVarint64Length];
  char* end = coding::EncodeVarint64(buf, v);
  out->append(buf, static_cast<size_t>(end - buf));
}

// A varint length, then the bytes.
inline void AppendLogString(absl::string_view s, std::string* out) {
  AppendLogVarint(s.size(), out);
  out->append(s.data(), s.size());
}

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_WRITING_H_
