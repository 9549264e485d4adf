#include "logstore/format/log_blocks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codec/coding.h"
#include "logstore/format/log_reading.h"
#include "logstore/format/log_writing.h"

namespace rankwire::logstore {
namespace {

constexpr char kContext[] = "log block";

absl::Status Corrupt(absl::string_view what) { return LogDataLoss(kContext, what); }

}  // namespace

std::string LogBlockField(size_t b) { return absl::StrCat("#", b); }

size_t BlockLayout::BlockCount() const {
  if (items == 0) return 0;
  const uint32_t rest = items - std::min(items, top_items);
  return 1 + (rest + block_items - 1) / block_items;
}

uint32_t BlockLayout::BlockBegin(size_t b) const {
  if (b == 0) return 0;
  return top_items + static_cast<uint32_t>(b - 1) * block_items;
}

uint32_t BlockLayout::BlockSize(size_t b) const {
  if (b >= BlockCount()) return 0;
  const uint32_t begin = BlockBegin(b);
  const uint32_t end = b == 0 ? top_items : begin + block_items;
  return std::min(end, items) - begin;
}

size_t BlockLayout::BlockOf(uint32_t position) const {
  if (position < top_items) return 0;
  return 1 + (position - top_items) / block_items;
}

std::string BlockLayout::Serialize() const {
  std::string out;
  out.push_back(kBlocksLayoutTag);
  out.push_back(static_cast<char>(kBlocksLayoutVersion));
  AppendLogVarint(items, &out);
  AppendLogVarint(top_items, &out);
  AppendLogVarint(block_items, &out);
  AppendLogSlots(pieces, kinds, strings, &out);
  return out;
}

bool BlockLayout::IsBlocks(absl::string_view value) {
  return value.size() >= 2 && value[0] == kBlocksLayoutTag &&
         static_cast<uint8_t>(value[1]) == kBlocksLayoutVersion;
}

absl::Status ReadLogSlots(coding::Reader& r, uint64_t slots, LogSlot last_kind,
                          absl::string_view layout, std::vector<std::string>* pieces,
                          std::vector<LogSlot>* kinds, std::vector<std::string>* strings) {
  if (slots > kMaxLogSlots) return LogDataLoss(layout, "too many slots");
  for (uint64_t i = 0; i < slots && r.ok(); ++i) {
    pieces->emplace_back(LogString(r, "piece"));
    const uint8_t kind = r.Byte("slot kind");
    if (r.ok() && (kind < 1 || kind > static_cast<uint8_t>(last_kind))) {
      return LogDataLoss(layout, absl::StrCat("slot kind ", kind));
    }
    kinds->push_back(static_cast<LogSlot>(kind));
  }
  pieces->emplace_back(LogString(r, "last piece"));
  const uint64_t count = LogCount(r, 1, "strings");
  if (r.ok() && count > kMaxLogStrings) return LogDataLoss(layout, "too many strings");
  for (uint64_t i = 0; i < count && r.ok(); ++i) strings->emplace_back(LogString(r, "string"));
  return r.status();
}

absl::StatusOr<BlockLayout> BlockLayout::Parse(absl::string_view value) {
  if (!IsBlocks(value)) return Corrupt("not a version-2 layout");
  coding::Reader r(value.substr(2), kContext, 2);
  BlockLayout layout;
  layout.items = LogVarint32(r, "items");
  layout.top_items = LogVarint32(r, "top items");
  layout.block_items = LogVarint32(r, "block items");
  const uint64_t slots = LogCount(r, 2, "slots");
  if (!r.ok()) return r.status();
  if (layout.items > kMaxLogItems) return Corrupt("more items than a request may have");
  if (layout.block_items == 0 || (layout.items > 0 && layout.top_items == 0)) {
    return Corrupt("a block of no items");
  }
  RETURN_IF_ERROR(ReadLogSlots(r, slots, LogSlot::kPosition, kContext, &layout.pieces,
                               &layout.kinds, &layout.strings));
  if (!r.empty()) return Corrupt("bytes after the layout");
  // The id column is how a reader finds items: exactly one.
  const size_t id_slots =
      static_cast<size_t>(std::count(layout.kinds.begin(), layout.kinds.end(), LogSlot::kItemId));
  if (id_slots != 1) {
    return Corrupt(
        absl::StrCat("a version-2 layout with ", id_slots, " item id slots (it has exactly one)"));
  }
  return layout;
}

namespace {

// A kTwoTops column of `n` numbers: the two top bytes (the smaller first),
// a bit per item (1: the second), then the low 3 bytes of each. Refuses
// what the writer never writes: equal or unordered top bytes, a column
// that uses only one of them, bits set past the last item.
absl::Status ReadTwoTops(coding::Reader& r, uint32_t n, float* out) {
  const uint32_t top0 = r.Byte("top byte");
  const uint32_t top1 = r.Byte("second top byte");
  absl::string_view bits = r.Bytes((uint64_t{n} + 7) / 8, "top byte bits");
  absl::string_view low = r.Bytes(3 * uint64_t{n}, "numbers");
  if (!r.ok()) return r.status();
  if (top0 >= top1) return Corrupt("two top bytes not in increasing order");
  uint32_t ones = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t one = (static_cast<uint8_t>(bits[j / 8]) >> (j % 8)) & 1;
    ones += one;
    uint32_t value = 0;
    std::memcpy(&value, low.data() + 3 * size_t{j}, 3);
    out[j] = LogFloat(value | (one != 0 ? top1 : top0) << 24);
  }
  if (n % 8 != 0 && (static_cast<uint8_t>(bits.back()) >> (n % 8)) != 0) {
    return Corrupt("top byte bits set past the last item");
  }
  if (ones == 0 || ones == n) return Corrupt("a two-top-byte column that uses one of them");
  return absl::OkStatus();
}

// 10^-k, each the binary64 nearest to it (as C and Python read "1e-2").
constexpr double kTenths[kMaxDecimalScale + 1] = {1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};

// The value of a kDecimal number: the binary32 of the binary64 product
// d * 10^-k.
inline float DecimalValue(int64_t d, int k) {
  return static_cast<float>(static_cast<double>(d) * kTenths[k]);
}

// A kDecimal column: the scale k, then each item's zigzag varint d; the
// value is the binary32 of the binary64 d * 10^-k.
absl::Status ReadDecimals(coding::Reader& r, uint32_t n, float* out) {
  const uint8_t scale = r.Byte("decimal scale");
  if (r.ok() && (scale < 1 || scale > kMaxDecimalScale)) {
    return Corrupt(absl::StrCat("decimal scale ", scale, " (1..", kMaxDecimalScale, ")"));
  }
  for (uint32_t j = 0; j < n && r.ok(); ++j) {
    const int64_t d = LogSignedVarint(r, "decimal digits");
    if (r.ok() && (d <= -kDecimalDigitsLimit || d >= kDecimalDigitsLimit)) {
      return Corrupt("decimal digits out of range");
    }
    out[j] = DecimalValue(d, scale);
  }
  return r.status();
}

}  // namespace

namespace {

// A kNumber column of `n` numbers: its form byte, then the form's bytes.
absl::Status ReadNumbers(coding::Reader& r, uint32_t n, std::vector<float>* numbers) {
  const uint8_t form = r.Byte("number form");
  numbers->resize(n);
  if (form == static_cast<uint8_t>(NumberForm::kRaw)) {
    absl::string_view raw = r.Bytes(4 * uint64_t{n}, "numbers");
    if (r.ok()) std::memcpy(numbers->data(), raw.data(), raw.size());
  } else if (form == static_cast<uint8_t>(NumberForm::kTopByte)) {
    const uint32_t top = r.Byte("top byte");
    absl::string_view low = r.Bytes(3 * uint64_t{n}, "numbers");
    for (uint32_t j = 0; j < n && r.ok(); ++j) {
      uint32_t bits = 0;
      std::memcpy(&bits, low.data() + size_t{3} * j, 3);
      (*numbers)[j] = LogFloat(bits | top << 24);
    }
  } else if (form == static_cast<uint8_t>(NumberForm::kWhole)) {
    for (uint32_t j = 0; j < n && r.ok(); ++j) {
      const int64_t v = LogSignedVarint(r, "whole number");
      if (r.ok() && (v <= -16777216 || v >= 16777216)) return Corrupt("whole number too large");
      (*numbers)[j] = static_cast<float>(v);
    }
  } else if (form == static_cast<uint8_t>(NumberForm::kConstant)) {
    const float v = r.Float("constant");
    std::fill(numbers->begin(), numbers->end(), v);
  } else if (form == static_cast<uint8_t>(NumberForm::kTwoTops)) {
    RETURN_IF_ERROR(ReadTwoTops(r, n, numbers->data()));
  } else if (form == static_cast<uint8_t>(NumberForm::kDecimal)) {
    RETURN_IF_ERROR(ReadDecimals(r, n, numbers->data()));
  } else if (r.ok()) {
    return Corrupt(absl::StrCat("number form ", form));
  }
  return r.status();
}

}  // namespace

absl::StatusOr<BlockReader> BlockReader::Parse(const BlockLayout& layout, size_t b,
                                               absl::string_view value) {
  if (b >= layout.BlockCount()) {
    return Corrupt(absl::StrCat("block ", b, " of a layout of ", layout.BlockCount(), " blocks"));
  }
  if (value.empty() || value[0] != kBlockTag) return Corrupt("not a block");
  coding::Reader r(value.substr(1), kContext, 1);
  BlockReader block;
  block.layout_ = &layout;
  block.begin_ = layout.BlockBegin(b);
  block.count_ = LogVarint32(r, "count");
  if (!r.ok()) return r.status();
  if (block.count_ != layout.BlockSize(b)) {
    return Corrupt(absl::StrCat("block ", b, " holds ", block.count_, " items, its layout says ",
                                layout.BlockSize(b)));
  }
  const uint32_t n = block.count_;
  for (LogSlot kind : layout.kinds) {
    Column& column = block.columns_.emplace_back();
    column.kind = kind;
    switch (kind) {
      case LogSlot::kPosition:
        break;
      case LogSlot::kRequestIndex:
        return Corrupt("slot kind 6 in a version-2 layout");
      case LogSlot::kItemId:
        block.id_prefix_ = std::string(LogString(r, "id prefix"));
        block.id_suffixes_.clear();
        for (uint32_t j = 0; j < n && r.ok(); ++j) {
          block.id_suffixes_.emplace_back(LogString(r, "id"));
          if (r.ok() && block.id_prefix_.empty() && block.id_suffixes_.back().empty()) {
            return Corrupt("an empty item id");
          }
        }
        break;
      case LogSlot::kInt:
      case LogSlot::kString:
        for (uint32_t j = 0; j < n && r.ok(); ++j) {
          column.ints.push_back(kind == LogSlot::kInt
                                    ? LogSignedVarint(r, "int")
                                    : static_cast<int64_t>(LogVarint32(r, "string index")));
          if (kind == LogSlot::kString && r.ok() &&
              static_cast<uint64_t>(column.ints.back()) >= layout.strings.size()) {
            return Corrupt("string index past the layout's table");
          }
        }
        break;
      case LogSlot::kNumber:
        RETURN_IF_ERROR(ReadNumbers(r, n, &column.numbers));
        break;
    }
    if (!r.ok()) return r.status();
  }
  if (!r.empty()) return Corrupt("bytes after the last column");
  return block;
}

std::string BlockReader::id(size_t j) const {
  return absl::StrCat(id_prefix_, j < id_suffixes_.size() ? id_suffixes_[j] : "");
}

absl::StatusOr<std::string> BlockReader::Render(size_t j) const {
  const BlockLayout& layout = *layout_;
  return RenderLogLine(layout, "log block", [&](size_t s, std::string* out) {
    const Column& column = columns_[s];
    switch (column.kind) {
      case LogSlot::kItemId:
        absl::StrAppend(out, id_prefix_, id_suffixes_[j]);
        break;
      case LogSlot::kRequestIndex:  // Refused by Parse.
      case LogSlot::kPosition:
        absl::StrAppend(out, begin_ + j + 1);
        break;
      case LogSlot::kInt:
        absl::StrAppend(out, column.ints[j]);
        break;
      case LogSlot::kString:
        out->append(layout.strings[static_cast<size_t>(column.ints[j])]);
        break;
      case LogSlot::kNumber:
        AppendLogNumberText(column.numbers[j], out);
        break;
    }
  });
}

void AppendLogNumberText(float value, std::string* out) {
  absl::StrAppend(out, absl::SixDigits(static_cast<double>(value)));
}

}  // namespace rankwire::logstore
