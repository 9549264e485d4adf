// libFuzzer target: the stored-log coding and its readers (docs/LOGS.md;
// logstore/log_record.h, log_number.h, log_blocks.h, log_value.h, and
// LogReader::FetchBefore in log_store.h) over any bytes. The first byte
// picks what the rest is (its value mod 4):
//   0, 2  doubles (8 bytes each, any bit pattern): EncodeLogNumbers (AVX-512
//      where the CPU has it) must write exactly the bytes EncodeLogNumber
//      writes for each, in an output buffer of exactly the size it
//      requires, and every slot must read back (ReadLogNumber) to a value
//      SixDigits renders as it renders the input;
//   1  a layout value and a record value (a 2-byte little-endian length
//      splits them), as a reader finds them in Redis: LogLayout::Parse and
//      Render must return a value or DataLoss/ResourceExhausted, never
//      crash or read past the bytes;
//   3  a request's hash: values each after a 2-byte little-endian length,
//      field "" first, then "#0", "#1", ...: BlockLayout::Parse and
//      BlockReader::Parse of each block with every item rendered, each
//      value as a text value (DecodeLogValue), and LogReader::FetchBefore
//      of block 0's ids and a few others over that hash must each return
//      a value or DataLoss/ResourceExhausted, never crash.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/coding.h"
#include "logstore/log_blocks.h"
#include "logstore/log_number.h"
#include "logstore/log_record.h"
#include "logstore/log_store.h"
#include "logstore/log_value.h"
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
  RANKWIRE_FUZZ_CHECK(
      absl::string_view(batch.get(), static_cast<size_t>(batch_end - batch.get())) == one_by_one,
      "EncodeLogNumbers differs from EncodeLogNumber");
  rankwire::coding::Reader in(one_by_one, "slots");
  for (double v : values) {
    absl::StatusOr<double> read = rankwire::logstore::ReadLogNumber(in);
    RANKWIRE_FUZZ_CHECK(read.ok(), read.status().ToString());
    RANKWIRE_FUZZ_CHECK(SixDigits(*read) == SixDigits(v),
                        absl::StrCat(SixDigits(v), " read back as ", SixDigits(*read)));
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

bool Refused(const absl::Status& status) {
  return status.code() == absl::StatusCode::kDataLoss ||
         status.code() == absl::StatusCode::kResourceExhausted;
}

// A request's hash in memory.
class HashReader : public rankwire::logstore::LogReader {
 public:
  explicit HashReader(std::map<std::string, std::string> fields) : fields_(std::move(fields)) {}
  absl::StatusOr<std::vector<std::optional<std::string>>> ReadFields(
      absl::string_view, absl::Span<const std::string> names, absl::Time) override {
    std::vector<std::optional<std::string>> out;
    for (const std::string& name : names) {
      auto it = fields_.find(name);
      if (it == fields_.end()) {
        out.emplace_back();
      } else {
        out.emplace_back(it->second);
      }
    }
    return out;
  }

 private:
  std::map<std::string, std::string> fields_;
};

void Hash(const uint8_t* data, size_t size) {
  namespace ls = rankwire::logstore;
  std::vector<std::string> values;
  while (size >= 2 && values.size() < 64) {
    const size_t n = std::min<size_t>(size - 2, data[0] | size_t{data[1]} << 8);
    values.emplace_back(reinterpret_cast<const char*>(data + 2), n);
    data += 2 + n;
    size -= 2 + n;
  }
  if (values.empty()) return;
  std::map<std::string, std::string> fields;
  fields[""] = values[0];
  for (size_t i = 1; i < values.size(); ++i) fields[ls::LogBlockField(i - 1)] = values[i];
  std::vector<std::string> ids = {"nope", "#1"};
  absl::StatusOr<ls::BlockLayout> layout = ls::BlockLayout::Parse(values[0]);
  if (!layout.ok()) RANKWIRE_FUZZ_CHECK(Refused(layout.status()), layout.status().ToString());
  for (size_t i = 1; layout.ok() && i < values.size(); ++i) {
    absl::StatusOr<ls::BlockReader> block = ls::BlockReader::Parse(*layout, i - 1, values[i]);
    if (!block.ok()) {
      RANKWIRE_FUZZ_CHECK(Refused(block.status()), block.status().ToString());
      continue;
    }
    for (size_t j = 0; j < block->size(); ++j) {
      if (i == 1 && j < 4) ids.push_back(block->id(j));
      absl::StatusOr<std::string> text = block->Render(j);
      if (!text.ok()) RANKWIRE_FUZZ_CHECK(Refused(text.status()), text.status().ToString());
    }
  }
  for (const std::string& value : values) {
    absl::StatusOr<std::string> text = ls::DecodeLogValue(value, size_t{1} << 16);
    if (!text.ok()) RANKWIRE_FUZZ_CHECK(Refused(text.status()), text.status().ToString());
  }
  HashReader reader(std::move(fields));
  absl::StatusOr<std::vector<std::optional<std::string>>> got = reader.Fetch("r", ids);
  if (got.ok()) {
    RANKWIRE_FUZZ_CHECK(got->size() == ids.size(), "FetchBefore answered another count");
  } else {
    RANKWIRE_FUZZ_CHECK(Refused(got.status()), got.status().ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 4) {
    case 1:
      Record(data + 1, size - 1);
      break;
    case 3:
      Hash(data + 1, size - 1);
      break;
    default:
      Numbers(data + 1, size - 1);
      break;
  }
  return 0;
}
