#include "logstore/format/log_value.h"

#include "absl/strings/str_cat.h"
#include "codec/compression.h"
#include "logstore/format/log_record.h"

namespace rankwire::logstore {

void EncodeLogValue(bool compress, int level, std::string* value) {
  if (compress && !value->empty()) {
    // One scratch buffer per thread: the writer thread encodes every value,
    // and allocating ZstdBound bytes per line would dominate small lines.
    thread_local std::string scratch;
    const size_t bound = compression::ZstdBound(value->size()) + 1;
    if (scratch.size() < bound) scratch.resize(bound);
    absl::StatusOr<size_t> n =
        compression::ZstdCompressInto(*value, level, scratch.data() + 1, scratch.size() - 1);
    // 'Z' only pays when the frame plus its tag is smaller than 'T' + text.
    if (n.ok() && *n < value->size()) {
      scratch[0] = kZstdLogTag;
      value->assign(scratch.data(), *n + 1);
      return;
    }
  }
  value->insert(value->begin(), kPlainLogTag);
}

absl::StatusOr<std::string> DecodeLogValue(absl::string_view value, size_t max_text_bytes) {
  if (value.empty()) return absl::DataLossError("log value is empty (no tag byte)");
  const char tag = value.front();
  value.remove_prefix(1);
  switch (tag) {
    case kPlainLogTag:
      return std::string(value);
    case kZstdLogTag:
      return compression::ZstdDecompress(value, max_text_bytes);
    default:
      return absl::DataLossError(
          absl::StrCat("log value has unknown tag byte 0x",
                       absl::Hex(static_cast<unsigned char>(tag), absl::kZeroPad2),
                       " (expected 'T', 'Z' or 'R')"));
  }
}

absl::Status DecodeLogValues(absl::string_view request_id, const std::optional<std::string>& layout,
                             absl::Span<const std::string> item_ids,
                             std::vector<std::optional<std::string>>* values) {
  std::optional<LogLayout> parsed;  // Parsed at the first 'R' value.
  for (size_t i = 0; i < values->size() && i < item_ids.size(); ++i) {
    std::optional<std::string>& value = (*values)[i];
    if (!value.has_value()) continue;
    absl::StatusOr<std::string> text;
    if (!value->empty() && value->front() == kRecordTag) {
      if (!parsed.has_value()) {
        if (!layout.has_value()) {
          text = absl::DataLossError("a record value but the request has no layout field");
        } else {
          absl::StatusOr<LogLayout> l = LogLayout::Parse(*layout);
          if (l.ok()) {
            parsed = *std::move(l);
          } else {
            text = l.status();
          }
        }
      }
      if (parsed.has_value()) text = parsed->Render(item_ids[i], *value);
    } else {
      text = DecodeLogValue(*value);
    }
    if (!text.ok()) {
      return absl::Status(text.status().code(),
                          absl::StrCat("log of item '", item_ids[i], "' of request '", request_id,
                                       "': ", text.status().message()));
    }
    value = *std::move(text);
  }
  return absl::OkStatus();
}

}  // namespace rankwire::logstore
