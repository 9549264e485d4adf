#include "logstore/format/log_reading.h"

#include "absl/strings/str_cat.h"

namespace rankwire::logstore {

uint64_t LogVarint(coding::Reader& r, const char* what) {
  const char* start = r.position();
  const uint64_t v = r.Varint64(what);
  if (r.ok() && static_cast<size_t>(r.position() - start) != coding::VarintLength(v)) {
    r.Fail(what, "varint not in its shortest form");
    return 0;
  }
  return v;
}

uint32_t LogVarint32(coding::Reader& r, const char* what) {
  const uint64_t v = LogVarint(r, what);
  if (v > UINT32_MAX) {
    r.Fail(what, "varint exceeds 32 bits");
    return 0;
  }
  return static_cast<uint32_t>(v);
}

absl::Status LogDataLoss(absl::string_view layout, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(layout, ": ", what));
}

absl::string_view LogString(coding::Reader& r, const char* what) {
  const uint64_t n = LogVarint(r, what);
  return r.Bytes(n, what);
}

uint64_t LogCount(coding::Reader& r, uint64_t min_bytes_each, const char* what) {
  const uint64_t n = LogVarint(r, what);
  if (r.ok() && min_bytes_each > 0 && n > r.remaining() / min_bytes_each) {
    r.Fail(what, "count exceeds the remaining bytes");
    return 0;
  }
  return n;
}

}  // namespace rankwire::logstore
