#include "logstore/log_blocks.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "codec/coding.h"

namespace rankwire::logstore {
namespace {

constexpr char kContext[] = "log block";

void AppendVarint(uint64_t v, std::string* out) {
  char buf[coding::kMaxVarint64Length];
  char* end = coding::EncodeVarint64(buf, v);
  out->append(buf, static_cast<size_t>(end - buf));
}

void AppendLength(absl::string_view s, std::string* out) {
  AppendVarint(s.size(), out);
  out->append(s.data(), s.size());
}

uint32_t FloatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits;
}

float BitsFloat(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("log block: ", what));
}

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
  AppendVarint(items, &out);
  AppendVarint(top_items, &out);
  AppendVarint(block_items, &out);
  AppendVarint(kinds.size(), &out);
  for (size_t i = 0; i < kinds.size(); ++i) {
    AppendLength(pieces[i], &out);
    out.push_back(static_cast<char>(kinds[i]));
  }
  AppendLength(pieces.back(), &out);
  AppendVarint(strings.size(), &out);
  for (const std::string& s : strings) AppendLength(s, &out);
  return out;
}

bool BlockLayout::IsBlocks(absl::string_view value) {
  return value.size() >= 2 && value[0] == kBlocksLayoutTag &&
         static_cast<uint8_t>(value[1]) == kBlocksLayoutVersion;
}

absl::StatusOr<BlockLayout> BlockLayout::Parse(absl::string_view value) {
  if (!IsBlocks(value)) return Corrupt("not a version-2 layout");
  coding::Reader r(value.substr(2), kContext, 2);
  BlockLayout layout;
  layout.items = r.Varint32("items");
  layout.top_items = r.Varint32("top items");
  layout.block_items = r.Varint32("block items");
  const uint64_t slots = r.Count(2, "slots");
  if (!r.ok()) return r.status();
  if (layout.items > kMaxLogItems) return Corrupt("more items than a request may have");
  if (layout.items > 0 && (layout.top_items == 0 || layout.block_items == 0)) {
    return Corrupt("a block of no items");
  }
  if (slots > kMaxLogSlots) return Corrupt("too many slots");
  for (uint64_t i = 0; i < slots; ++i) {
    layout.pieces.emplace_back(r.LengthPrefixed("piece"));
    const uint8_t kind = r.Byte("slot kind");
    if (r.ok() && (kind < 1 || kind > 5)) return Corrupt(absl::StrCat("slot kind ", kind));
    layout.kinds.push_back(static_cast<LogSlot>(kind));
  }
  layout.pieces.emplace_back(r.LengthPrefixed("last piece"));
  const uint64_t strings = r.Count(1, "strings");
  if (r.ok() && strings > kMaxLogStrings) return Corrupt("too many strings");
  for (uint64_t i = 0; i < strings && r.ok(); ++i) {
    layout.strings.emplace_back(r.LengthPrefixed("string"));
  }
  if (!r.ok()) return r.status();
  if (!r.empty()) return Corrupt("bytes after the layout");
  return layout;
}

void BlockWriter::PutVarint(uint64_t v) { AppendVarint(v, &out_); }

void BlockWriter::Begin(uint32_t count) {
  count_ = count;
  out_.clear();
  out_.push_back(kBlockTag);
  PutVarint(count);
}

void BlockWriter::ItemIds(const absl::string_view* ids) {
  // The prefix every id of the block shares ("sku-", a tenant), once.
  size_t prefix = count_ == 0 ? 0 : ids[0].size();
  for (uint32_t j = 1; j < count_ && prefix > 0; ++j) {
    const absl::string_view id = ids[j];
    size_t k = 0;
    const size_t limit = std::min(prefix, id.size());
    while (k < limit && id[k] == ids[0][k]) ++k;
    prefix = k;
  }
  AppendLength(count_ == 0 ? absl::string_view() : ids[0].substr(0, prefix), &out_);
  for (uint32_t j = 0; j < count_; ++j) AppendLength(ids[j].substr(prefix), &out_);
}

void BlockWriter::Ints(const int64_t* values) {
  for (uint32_t j = 0; j < count_; ++j) PutVarint(coding::ZigZagEncode64(values[j]));
}

void BlockWriter::Strings(const uint32_t* indexes) {
  for (uint32_t j = 0; j < count_; ++j) PutVarint(indexes[j]);
}

void BlockWriter::Numbers(const float* values) {
  // The column's cheapest form: one pass over its values decides.
  const uint32_t first = count_ == 0 ? 0 : FloatBits(values[0]);
  bool constant = true, same_top = true, whole = true;
  size_t whole_bytes = 0;
  for (uint32_t j = 0; j < count_; ++j) {
    const uint32_t bits = FloatBits(values[j]);
    constant = constant && bits == first;
    same_top = same_top && (bits >> 24) == (first >> 24);
    const float v = values[j];
    // Whole and below 2^24 (so the int is exact), and not -0.
    const bool is_whole = v > -16777216.0f && v < 16777216.0f &&
                          static_cast<float>(static_cast<int32_t>(v)) == v &&
                          !(v == 0.0f && (bits >> 31) != 0);
    whole = whole && is_whole;
    if (is_whole) {
      whole_bytes += coding::VarintLength(coding::ZigZagEncode64(static_cast<int32_t>(v)));
    }
  }
  const size_t raw_bytes = 4 * size_t{count_};
  const size_t top_bytes = same_top ? 1 + 3 * size_t{count_} : SIZE_MAX;
  const size_t whole_total = whole ? whole_bytes : SIZE_MAX;
  if (constant && count_ > 1) {
    out_.push_back(static_cast<char>(NumberForm::kConstant));
    out_.append(reinterpret_cast<const char*>(&first), 4);
  } else if (whole_total <= std::min(raw_bytes, top_bytes)) {
    out_.push_back(static_cast<char>(NumberForm::kWhole));
    for (uint32_t j = 0; j < count_; ++j) {
      PutVarint(coding::ZigZagEncode64(static_cast<int32_t>(values[j])));
    }
  } else if (top_bytes < raw_bytes) {
    out_.push_back(static_cast<char>(NumberForm::kTopByte));
    out_.push_back(static_cast<char>(first >> 24));
    const size_t at = out_.size();
    out_.resize(at + 3 * size_t{count_});
    char* p = out_.data() + at;
    for (uint32_t j = 0; j < count_; ++j, p += 3) {
      const uint32_t bits = FloatBits(values[j]);
      std::memcpy(p, &bits, 3);  // The low three bytes (little-endian).
    }
  } else {
    out_.push_back(static_cast<char>(NumberForm::kRaw));
    out_.append(reinterpret_cast<const char*>(values), raw_bytes);
  }
}

absl::StatusOr<BlockReader> BlockReader::Parse(const BlockLayout& layout, size_t b,
                                               absl::string_view value) {
  if (value.empty() || value[0] != kBlockTag) return Corrupt("not a block");
  coding::Reader r(value.substr(1), kContext, 1);
  BlockReader block;
  block.layout_ = &layout;
  block.begin_ = layout.BlockBegin(b);
  block.count_ = r.Varint32("count");
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
      case LogSlot::kItemId:
        block.id_prefix_ = std::string(r.LengthPrefixed("id prefix"));
        block.id_suffixes_.clear();
        for (uint32_t j = 0; j < n && r.ok(); ++j) {
          block.id_suffixes_.emplace_back(r.LengthPrefixed("id"));
        }
        break;
      case LogSlot::kInt:
      case LogSlot::kString:
        for (uint32_t j = 0; j < n && r.ok(); ++j) {
          column.ints.push_back(kind == LogSlot::kInt
                                    ? r.SignedVarint64("int")
                                    : static_cast<int64_t>(r.Varint32("string index")));
          if (kind == LogSlot::kString && r.ok() &&
              static_cast<uint64_t>(column.ints.back()) >= layout.strings.size()) {
            return Corrupt("string index past the layout's table");
          }
        }
        break;
      case LogSlot::kNumber: {
        const uint8_t form = r.Byte("number form");
        column.numbers.resize(n);
        if (form == static_cast<uint8_t>(NumberForm::kRaw)) {
          absl::string_view raw = r.Bytes(4 * uint64_t{n}, "numbers");
          if (r.ok()) std::memcpy(column.numbers.data(), raw.data(), raw.size());
        } else if (form == static_cast<uint8_t>(NumberForm::kTopByte)) {
          const uint32_t top = r.Byte("top byte");
          absl::string_view low = r.Bytes(3 * uint64_t{n}, "numbers");
          for (uint32_t j = 0; j < n && r.ok(); ++j) {
            uint32_t bits = 0;
            std::memcpy(&bits, low.data() + 3 * j, 3);
            column.numbers[j] = BitsFloat(bits | top << 24);
          }
        } else if (form == static_cast<uint8_t>(NumberForm::kWhole)) {
          for (uint32_t j = 0; j < n && r.ok(); ++j) {
            const int64_t v = r.SignedVarint64("whole number");
            if (r.ok() && (v <= -16777216 || v >= 16777216)) return Corrupt("whole number too large");
            column.numbers[j] = static_cast<float>(v);
          }
        } else if (form == static_cast<uint8_t>(NumberForm::kConstant)) {
          const float v = r.Float("constant");
          std::fill(column.numbers.begin(), column.numbers.end(), v);
        } else if (r.ok()) {
          return Corrupt(absl::StrCat("number form ", form));
        }
        break;
      }
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
  std::string out;
  for (size_t s = 0; s < layout.kinds.size(); ++s) {
    out.append(layout.pieces[s]);
    const Column& column = columns_[s];
    switch (column.kind) {
      case LogSlot::kItemId:
        absl::StrAppend(&out, id_prefix_, id_suffixes_[j]);
        break;
      case LogSlot::kPosition:
        absl::StrAppend(&out, begin_ + j + 1);
        break;
      case LogSlot::kInt:
        absl::StrAppend(&out, column.ints[j]);
        break;
      case LogSlot::kString:
        out.append(layout.strings[static_cast<size_t>(column.ints[j])]);
        break;
      case LogSlot::kNumber:
        AppendLogNumberText(column.numbers[j], &out);
        break;
    }
    if (out.size() > kMaxLogLineBytes) {
      return absl::ResourceExhaustedError("log block: a rendered line exceeds 1 MiB");
    }
  }
  out.append(layout.pieces.back());
  return out;
}

void AppendLogNumberText(float value, std::string* out) {
  absl::StrAppend(out, absl::SixDigits(static_cast<double>(value)));
}

}  // namespace rankwire::logstore
