// libFuzzer target: the stored-log record coding (logstore/log_record.h,
// logstore/log_number.h) over any bytes. The first byte picks what the rest
// is:
//   0  doubles (8 bytes each, any bit pattern): EncodeLogNumbers (AVX-512
//      where the CPU has it) must write exactly the bytes EncodeLogNumber
//      writes for each, in an output buffer of exactly the size it
//      requires, and every slot must read back (ReadLogNumber) to a value
//      SixDigits renders as it renders the input;
//   1  a layout value and a record value (a 2-byte little-endian length
//      splits them), as a reader finds them in Redis: LogLayout::Parse and
//      Render must return a value or DataLoss/ResourceExhausted, never
//      crash or read past the bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/coding.h"
#include "logstore/log_number.h"
#include "logstore/log_record.h"
#include "tests/fuzz/view_checks.h"

namespace {

std::string SixDigits(double v) { return absl::StrCat(absl::SixDigits(v)); }

void Numbers(const uint8_t* data, size_t size) {
  const size_t count = size / 8;
  std::vector<double> values(count);
  if (count > 0) std::memcpy(values.data(), data, count * 8);
  const size_t room = count * rankwire::logstore::kMaxLogNumberBytes;
  // Exactly the room EncodeLogNumbers requires, so a sanitizer sees a
  // write past it.
  std::unique_ptr<char[]> batch(new char[room > 0 ? room : 1]);
  const char* batch_end = rankwire::logstore::EncodeLogNumbers(values.data(), count, batch.get());
  std::string one_by_one;
  for (double v : values) rankwire::logstore::AppendLogNumber(v, &one_by_one);
  RANKWIRE_FUZZ_CHECK(absl::string_view(batch.get(), static_cast<size_t>(batch_end - batch.get())) ==
                          one_by_one,
                      "EncodeLogNumbers differs from EncodeLogNumber");
  rankwire::coding::Reader in(one_by_one, "slots");
  for (double v : values) {
    absl::StatusOr<double> read = rankwire::logstore::ReadLogNumber(in);
    RANKWIRE_FUZZ_CHECK(read.ok(), read.status().ToString());
    RANKWIRE_FUZZ_CHECK(SixDigits(*read) == SixDigits(v), absl::StrCat(SixDigits(v), " read back as ", SixDigits(*read)));
  }
  RANKWIRE_FUZZ_CHECK(in.empty(), "bytes left after the last slot");
}

void Record(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const size_t layout_size = std::min<size_t>(size - 2, data[0] | size_t{data[1]} << 8);
  // Copies of exactly their sizes, so a sanitizer sees reads past either.
  std::unique_ptr<char[]> layout(new char[layout_size + 1]);
  std::memcpy(layout.get(), data + 2, layout_size);
  const size_t record_size = size - 2 - layout_size;
  std::unique_ptr<char[]> record(new char[record_size + 1]);
  std::memcpy(record.get(), data + 2 + layout_size, record_size);
  absl::StatusOr<rankwire::logstore::LogLayout> parsed =
      rankwire::logstore::LogLayout::Parse(absl::string_view(layout.get(), layout_size));
  if (!parsed.ok()) {
    RANKWIRE_FUZZ_CHECK(parsed.status().code() == absl::StatusCode::kDataLoss,
                        parsed.status().ToString());
    return;
  }
  absl::StatusOr<std::string> text =
      parsed->Render("item-1", absl::string_view(record.get(), record_size));
  if (!text.ok()) {
    RANKWIRE_FUZZ_CHECK(text.status().code() == absl::StatusCode::kDataLoss ||
                            text.status().code() == absl::StatusCode::kResourceExhausted,
                        text.status().ToString());
    return;
  }
  RANKWIRE_FUZZ_CHECK(text->size() <= rankwire::logstore::kMaxRenderedBytes + (1 << 16),
                      "rendered text past the limit");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    Numbers(data + 1, size - 1);
  } else {
    Record(data + 1, size - 1);
  }
  return 0;
}
