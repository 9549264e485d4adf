#include "logstore/format/log_record.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "codec/coding.h"
#include "logstore/format/log_number.h"
#include "logstore/format/log_writing.h"

namespace rankwire::logstore {

LogRecordBuilder::LogRecordBuilder() {
  Grow(0);
  buffer_[0] = kRecordTag;
  size_ = 1;
}

void LogRecordBuilder::Grow(size_t bytes) {
  capacity_ = std::max(2 * capacity_, size_ + bytes + 256);
  std::unique_ptr<char[]> grown(new char[capacity_]);  // Not zero-filled.
  if (size_ > 0) std::memcpy(grown.get(), buffer_.get(), size_);
  buffer_ = std::move(grown);
}

void LogRecordBuilder::PutVarint(uint64_t v) {
  char* end = coding::EncodeVarint64(Reserve(coding::kMaxVarint64Length), v);
  size_ = static_cast<size_t>(end - buffer_.get());
}

void LogRecordBuilder::CaptureSlot(SlotKind kind) {
  kinds_.push_back(kind);
  pieces_.emplace_back();
}

void LogRecordBuilder::FlushNumbers() {
  char* end = Reserve(held_count_ * kMaxLogNumberBytes);
  for (size_t i = 0; i < held_count_; ++i) end = EncodeLogNumber(held_[i], end);
  size_ = static_cast<size_t>(end - buffer_.get());
  held_count_ = 0;
}

void LogRecordBuilder::Int(int64_t value) {
  Slot(SlotKind::kInt);
  if (held_count_ > 0) FlushNumbers();
  PutVarint(coding::ZigZagEncode64(value));
}

void LogRecordBuilder::String(absl::string_view text) {
  Slot(SlotKind::kString);
  if (held_count_ > 0) FlushNumbers();
  // Looked up by view: no allocation for a string seen before.
  auto it = string_index_.find(text);
  if (it == string_index_.end()) {
    it = string_index_.emplace(std::string(text), static_cast<uint32_t>(strings_.size())).first;
    strings_.emplace_back(text);
  }
  PutVarint(it->second);
}

void LogRecordBuilder::LabeledNumbers(const std::string* labels, const double* values,
                                      size_t count) {
  if (capturing_ || slot_ >= kinds_.size() || number_run_[slot_] < count) {
    for (size_t i = 0; i < count; ++i) {
      Literal(labels[i]);
      Number(values[i]);
    }
    return;
  }
  slot_ += count;
  while (count > 0) {
    const size_t n = std::min(count, kHeldNumbers - held_count_);
    std::memcpy(held_ + held_count_, values, n * sizeof(double));
    held_count_ += n;
    values += n;
    count -= n;
    if (held_count_ == kHeldNumbers) FlushNumbers();
  }
}

void LogRecordBuilder::EndLine() {
  if (held_count_ > 0) FlushNumbers();
  if (!capturing_ && slot_ != kinds_.size()) consistent_ = false;
  if (capturing_) {
    number_run_.assign(kinds_.size(), 0);
    for (size_t i = kinds_.size(); i-- > 0;) {
      if (kinds_[i] == SlotKind::kNumber) {
        number_run_[i] = 1 + (i + 1 < kinds_.size() ? number_run_[i + 1] : 0);
      }
    }
  }
  capturing_ = false;
  slot_ = 0;
}

std::string LogRecordBuilder::FinishRecord() {
  EndLine();
  std::string value(buffer_.get(), size_);
  size_ = 1;  // The tag stays.
  return value;
}

void LogRecordBuilder::FinishRecordInto(absl::string_view item_id, PackedFields* fields) {
  EndLine();
  fields->Add(item_id, absl::string_view(buffer_.get(), size_));
  size_ = 1;
}

std::string LogRecordBuilder::Layout() const {
  std::string out;
  out.push_back(kLayoutTag);
  out.push_back(static_cast<char>(kLayoutVersion));
  AppendLogSlots(pieces_, kinds_, strings_, &out);
  return out;
}

absl::StatusOr<LogLayout> LogLayout::Parse(absl::string_view value) {
  coding::Reader in(value, "log layout");
  if (in.Byte("tag") != static_cast<uint8_t>(kLayoutTag)) {
    return absl::DataLossError("log layout: value does not start with 'L'");
  }
  const uint8_t version = in.Byte("version");
  if (in.ok() && version != kLayoutVersion) {
    return absl::DataLossError(
        absl::StrCat("log layout: version ", version, " (this reader knows ", kLayoutVersion, ")"));
  }
  LogLayout layout;
  // Each slot takes at least two bytes (an empty piece's length, a kind).
  const uint64_t slots = in.Count(2, "slot count");
  if (slots > kMaxLayoutSlots) return absl::DataLossError("log layout: too many slots");
  layout.kinds_.reserve(slots);
  layout.pieces_.reserve(slots + 1);
  for (uint64_t i = 0; i < slots && in.ok(); ++i) {
    layout.pieces_.emplace_back(in.LengthPrefixed("literal"));
    const uint8_t kind = in.Byte("slot kind");
    if (in.ok() && (kind < static_cast<uint8_t>(SlotKind::kItemId) ||
                    kind > static_cast<uint8_t>(SlotKind::kNumber))) {
      return absl::DataLossError(absl::StrCat("log layout: unknown slot kind ", kind));
    }
    layout.kinds_.push_back(static_cast<SlotKind>(kind));
  }
  layout.pieces_.emplace_back(in.LengthPrefixed("last literal"));
  const uint64_t strings = in.Count(1, "string count");
  if (strings > kMaxLayoutStrings) return absl::DataLossError("log layout: too many strings");
  for (uint64_t i = 0; i < strings && in.ok(); ++i) {
    layout.strings_.emplace_back(in.LengthPrefixed("string"));
  }
  if (!in.ok()) return absl::DataLossError(in.status().message());
  if (!in.empty()) return absl::DataLossError("log layout: trailing bytes");
  return layout;
}

absl::StatusOr<std::string> LogLayout::Render(absl::string_view item_id,
                                              absl::string_view value) const {
  coding::Reader in(value, "log record");
  if (in.Byte("tag") != static_cast<uint8_t>(kRecordTag)) {
    return absl::DataLossError("log record: value does not start with 'R'");
  }
  std::string out;
  out.reserve(1536);
  char buf[32];
  for (size_t i = 0; i < kinds_.size() && in.ok(); ++i) {
    out.append(pieces_[i]);
    switch (kinds_[i]) {
      case SlotKind::kItemId:
        out.append(item_id.data(), item_id.size());
        break;
      case SlotKind::kInt: {
        const int64_t v = in.SignedVarint64("int");
        out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
        break;
      }
      case SlotKind::kString: {
        const uint64_t index = in.Varint64("string index");
        if (in.ok() && index >= strings_.size()) {
          return absl::DataLossError(absl::StrCat("log record: string index ", index,
                                                  " beyond the layout's ", strings_.size()));
        }
        if (in.ok()) out.append(strings_[index]);
        break;
      }
      case SlotKind::kNumber: {
        absl::StatusOr<double> number = ReadLogNumber(in);
        if (!number.ok()) return number.status();
        const double v = *number;
        // One expression: SixDigits's buffer lives until its end.
        absl::StrAppend(&out, absl::SixDigits(v));
        break;
      }
    }
    if (out.size() > kMaxRenderedBytes) {
      return absl::ResourceExhaustedError("log record: rendered text exceeds the limit");
    }
  }
  if (!in.ok()) return absl::DataLossError(in.status().message());
  if (!in.empty()) return absl::DataLossError("log record: trailing bytes");
  out.append(pieces_.back());
  return out;
}

absl::StatusOr<std::string> RenderLogRecord(absl::string_view layout, absl::string_view item_id,
                                            absl::string_view value) {
  absl::StatusOr<LogLayout> parsed = LogLayout::Parse(layout);
  if (!parsed.ok()) return parsed.status();
  return parsed->Render(item_id, value);
}

}  // namespace rankwire::logstore
