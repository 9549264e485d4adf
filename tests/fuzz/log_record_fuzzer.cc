// libFuzzer target: the stored-log coding and its readers (docs/LOGS.md;
// logstore/format/log_columns.h, log_blocks.h, log_record.h, log_number.h,
// log_value.h, and LogReader::FetchBefore in log_store.h) over any bytes.
// The first byte picks what the rest is (its value mod 4):
//   0  a request's hash in layout version 3: values each after a 2-byte
//      little-endian length, fields "", "#0", "#1": ColumnsLayout::Parse,
//      ColumnsReader::ParseTop and ParseAll with every item rendered,
//      CheckTopAgrees, and LogReader::FetchBefore of "#0"'s ids, "#1"'s
//      last id and a few others must each return a value or
//      DataLoss/ResourceExhausted, never crash or read past the bytes;
//   1  a layout value and a record value (a 2-byte little-endian length
//      splits them), as a reader finds them in Redis: LogLayout::Parse and
//      Render must return a value or DataLoss/ResourceExhausted, never
//      crash or read past the bytes;
//   2  a request's values (the rest as item count, top count, then
//      binary32 bit patterns, any): ColumnsWriter writes them and the
//      reader must give back, for every item, the text the values render
//      to (every number form, NaN, -0 and subnormals included);
//   3  a request's hash in layout version 2: values each after a 2-byte
//      little-endian length, field "" first, then "#0", "#1", ...:
//      BlockLayout::Parse and BlockReader::Parse of each block with every
//      item rendered, each value as a text value (DecodeLogValue), and
//      LogReader::FetchBefore of block 0's ids and a few others over that
//      hash must each return a value or DataLoss/ResourceExhausted, never
//      crash.
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
#include "logstore/format/log_blocks.h"
#include "logstore/format/log_columns.h"
#include "logstore/format/log_record.h"
#include "logstore/format/log_value.h"
#include "logstore/log_store.h"
#include "tests/fuzz/view_checks.h"

namespace {

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

// Values each after a 2-byte little-endian length, at most `most`.
std::vector<std::string> Values(const uint8_t* data, size_t size, size_t most) {
  std::vector<std::string> values;
  while (size >= 2 && values.size() < most) {
    const size_t n = std::min<size_t>(size - 2, data[0] | size_t{data[1]} << 8);
    values.emplace_back(reinterpret_cast<const char*>(data + 2), n);
    data += 2 + n;
    size -= 2 + n;
  }
  return values;
}

void RenderAll(const rankwire::logstore::ColumnsReader& reader, std::vector<std::string>* ids) {
  for (size_t j = 0; j < reader.size(); ++j) {
    if (ids->size() < 8) ids->emplace_back(reader.id(j));
    absl::StatusOr<std::string> text = reader.Render(j);
    if (!text.ok()) RANKWIRE_FUZZ_CHECK(Refused(text.status()), text.status().ToString());
  }
}

void Columns(const uint8_t* data, size_t size) {
  namespace ls = rankwire::logstore;
  std::vector<std::string> values = Values(data, size, 3);
  if (values.empty()) return;
  std::map<std::string, std::string> fields;
  const char* names[] = {"", "#0", "#1"};
  for (size_t i = 0; i < values.size(); ++i) fields[names[i]] = values[i];
  std::vector<std::string> ids = {"nope", "#1"};
  absl::StatusOr<ls::ColumnsLayout> layout = ls::ColumnsLayout::Parse(values[0]);
  if (!layout.ok()) RANKWIRE_FUZZ_CHECK(Refused(layout.status()), layout.status().ToString());
  std::optional<ls::ColumnsReader> top, all;
  if (layout.ok() && values.size() > 1) {
    absl::StatusOr<ls::ColumnsReader> t = ls::ColumnsReader::ParseTop(*layout, values[1]);
    if (t.ok()) {
      RenderAll(*t, &ids);
      top = *std::move(t);
    } else {
      RANKWIRE_FUZZ_CHECK(Refused(t.status()), t.status().ToString());
    }
  }
  if (layout.ok() && values.size() > 2) {
    absl::StatusOr<ls::ColumnsReader> a = ls::ColumnsReader::ParseAll(*layout, values[2]);
    if (a.ok()) {
      if (a->size() > 0) ids.emplace_back(a->id(a->size() - 1));
      RenderAll(*a, &ids);
      all = *std::move(a);
    } else {
      RANKWIRE_FUZZ_CHECK(Refused(a.status()), a.status().ToString());
    }
  }
  if (top.has_value() && all.has_value()) {
    const absl::Status agree = ls::CheckTopAgrees(*top, *all);
    if (!agree.ok()) RANKWIRE_FUZZ_CHECK(Refused(agree), agree.ToString());
  }
  HashReader reader(std::move(fields));
  absl::StatusOr<std::vector<std::optional<std::string>>> got = reader.Fetch("r", ids);
  if (got.ok()) {
    RANKWIRE_FUZZ_CHECK(got->size() == ids.size(), "FetchBefore answered another count");
  } else {
    RANKWIRE_FUZZ_CHECK(Refused(got.status()), got.status().ToString());
  }
}

// Writes a request of the input's values as columns and reads it back.
void WriteAndRead(const uint8_t* data, size_t size) {
  namespace ls = rankwire::logstore;
  if (size < 2) return;
  const uint32_t n = 1 + data[0] % 64;
  const uint32_t t = 1 + data[1] % n;
  data += 2;
  size -= 2;
  // Two number columns (floats, then doubles widened from floats) and an
  // int column, from the input's bits (repeated to fill the columns).
  std::vector<float> f(n), g(n);
  std::vector<double> d(n);
  std::vector<uint32_t> ints(n), order(n);
  for (uint32_t c = 0; c < n; ++c) {
    uint32_t bits[3] = {};
    for (int k = 0; k < 3; ++k) {
      for (int byte = 0; byte < 4 && size > 0; ++byte) {
        const size_t at = (12 * size_t{c} + 4 * size_t(k) + size_t(byte)) % size;
        bits[k] |= uint32_t{data[at]} << (8 * byte);
      }
    }
    std::memcpy(&f[c], &bits[0], 4);
    std::memcpy(&g[c], &bits[1], 4);
    d[c] = g[c];
    ints[c] = bits[2] >> (bits[2] % 24);
    order[c] = (c * 7 + bits[2]) % n;
  }
  // A permutation: each index once.
  std::vector<bool> used(n);
  for (uint32_t& o : order) {
    while (used[o]) o = (o + 1) % n;
    used[o] = true;
  }
  ls::ColumnsLayout layout;
  layout.items = n;
  layout.top_items = t;
  layout.pieces = {"id=", " p=", " r=", " i=", " f=", " d=", ";"};
  layout.kinds = {ls::LogSlot::kItemId, ls::LogSlot::kPosition, ls::LogSlot::kRequestIndex,
                  ls::LogSlot::kInt,    ls::LogSlot::kNumber,   ls::LogSlot::kNumber};
  std::string ids;
  std::vector<uint32_t> ends;
  for (uint32_t c = 0; c < n; ++c) {
    absl::StrAppend(&ids, "i", c);
    ends.push_back(static_cast<uint32_t>(ids.size()));
  }
  ls::ColumnsWriter writer(layout, order.data());
  writer.ItemIds(ids, ends.data());
  writer.Ints(ints.data());
  writer.Numbers(f.data());
  writer.Numbers(d.data());
  std::string all_value;
  for (absl::string_view piece : writer.all()) all_value.append(piece.data(), piece.size());
  const std::string top_value(writer.top());
  absl::StatusOr<ls::ColumnsReader> top = ls::ColumnsReader::ParseTop(layout, top_value);
  absl::StatusOr<ls::ColumnsReader> all = ls::ColumnsReader::ParseAll(layout, all_value);
  RANKWIRE_FUZZ_CHECK(top.ok(), top.status().ToString());
  RANKWIRE_FUZZ_CHECK(all.ok(), all.status().ToString());
  for (uint32_t r = 0; r < n; ++r) {
    const uint32_t c = order[r];
    std::string want = absl::StrCat("id=i", c, " p=", r + 1, " r=", c + 1, " i=", ints[c], " f=");
    ls::AppendLogNumberText(f[c], &want);
    want += " d=";
    ls::AppendLogNumberText(static_cast<float>(d[c]), &want);
    want += ";";
    absl::StatusOr<std::string> got = all->Render(c);
    RANKWIRE_FUZZ_CHECK(got.ok() && *got == want, absl::StrCat("\"#1\" item ", c, ": ", want));
    if (r < t) {
      got = top->Render(r);
      RANKWIRE_FUZZ_CHECK(got.ok() && *got == want, absl::StrCat("\"#0\" item ", r, ": ", want));
    }
  }
  RANKWIRE_FUZZ_CHECK(ls::CheckTopAgrees(*top, *all).ok(), "\"#0\" and \"#1\" disagree");
}

void Hash(const uint8_t* data, size_t size) {
  namespace ls = rankwire::logstore;
  std::vector<std::string> values = Values(data, size, 64);
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
    case 0:
      Columns(data + 1, size - 1);
      break;
    case 1:
      Record(data + 1, size - 1);
      break;
    case 2:
      WriteAndRead(data + 1, size - 1);
      break;
    default:
      Hash(data + 1, size - 1);
      break;
  }
  return 0;
}
