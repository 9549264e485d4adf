#include "codec/coding.h"

#include "absl/strings/str_cat.h"

namespace rankwire::coding {

uint64_t Reader::SlowVarint64(const char* what) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
    uint64_t byte = static_cast<uint8_t>(*p_++);
    if (shift == 63 && byte > 1) {
      Fail(what, "varint overflows 64 bits");
      return 0;
    }
    result |= (byte & 0x7f) << shift;
    if (byte < 0x80) return result;
  }
  if (p_ >= end_) {
    Truncated(what, "varint");
  } else {
    Fail(what, "varint longer than 10 bytes");
  }
  return 0;
}

void Reader::Truncated(const char* what, const char* kind) {
  if (!status_.ok()) return;
  status_ = absl::DataLossError(
      absl::StrCat(context_, ": truncated ", kind, " (", what, ") at offset ", offset()));
  p_ = end_;
}

void Reader::Fail(const char* what, absl::string_view problem) {
  if (!status_.ok()) return;
  status_ = absl::DataLossError(
      absl::StrCat(context_, ": ", problem, " (", what, ") at offset ", offset()));
  p_ = end_;
}

void Reader::FailWith(absl::Status status) {
  if (!status_.ok() || status.ok()) return;
  status_ = std::move(status);
  p_ = end_;
}

}  // namespace rankwire::coding
