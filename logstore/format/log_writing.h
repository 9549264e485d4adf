// Writing what the log store holds: varints in their shortest form (the
// only form log_reading.h accepts) and strings behind a varint length.
// One definition for every layout version's writer (log_blocks.h,
// log_columns.h, log_record.h); the layouts' shared slot table
// (AppendLogSlots; log_blocks.h's ReadLogSlots reads it).
//
// Thread safety: pure functions over a caller's string.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_WRITING_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_WRITING_H_

#include <cstdint>
#include <string>
#include <vector>

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

// The slots and string table of a layout, as every layout version writes
// them after its own header: the slot count, each slot's leading piece and
// kind byte, the last piece, then the strings behind their count.
// `pieces` has kinds.size() + 1 entries.
template <typename Kind>
void AppendLogSlots(const std::vector<std::string>& pieces, const std::vector<Kind>& kinds,
                    const std::vector<std::string>& strings, std::string* out) {
  AppendLogVarint(kinds.size(), out);
  for (size_t i = 0; i < kinds.size(); ++i) {
    AppendLogString(pieces[i], out);
    out->push_back(static_cast<char>(kinds[i]));
  }
  AppendLogString(pieces.back(), out);
  AppendLogVarint(strings.size(), out);
  for (const std::string& s : strings) AppendLogString(s, out);
}

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_WRITING_H_
