#include "logstore/log_blocks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
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

BlocksWriter::BlocksWriter(const BlockLayout& layout, const absl::string_view* ids) {
  const size_t blocks = layout.BlockCount();
  begin_.resize(blocks + 1);
  for (size_t b = 0; b < blocks; ++b) begin_[b] = layout.BlockBegin(b);
  begin_.back() = layout.items;
  // Room per block: the tag and count, each value at its largest (a 10-byte
  // varint; a number column's form byte and its top byte's spare), and the
  // ids (a 5-byte length each, the block's prefix once more).
  start_.resize(blocks + 1);
  end_.resize(blocks);
  const size_t per_item = 10 * layout.kinds.size() + 5;
  size_t total = 0;
  for (size_t b = 0; b < blocks; ++b) {
    start_[b] = total;
    size_t block_ids = 0;
    for (uint32_t j = begin_[b]; j < begin_[b + 1]; ++j) block_ids += ids[j].size();
    total += 16 + 4 * layout.kinds.size() + per_item * (begin_[b + 1] - begin_[b]) + block_ids;
  }
  start_.back() = total;
  buffer_.reset(new char[total]);  // Not zero-filled: every byte used is written.
  for (size_t b = 0; b < blocks; ++b) {
    char* p = buffer_.get() + start_[b];
    *p++ = kBlockTag;
    p = coding::EncodeVarint64(p, begin_[b + 1] - begin_[b]);
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

void BlocksWriter::ItemIds(const absl::string_view* ids) {
  for (size_t b = 0; b < end_.size(); ++b) {
    const absl::string_view* block_ids = ids + begin_[b];
    const uint32_t count = begin_[b + 1] - begin_[b];
    // The prefix every id of the block shares ("sku-", a tenant), once.
    size_t prefix = block_ids[0].size();
    for (uint32_t j = 1; j < count && prefix > 0; ++j) {
      const absl::string_view id = block_ids[j];
      size_t k = 0;
      const size_t limit = std::min(prefix, id.size());
      while (k < limit && id[k] == block_ids[0][k]) ++k;
      prefix = k;
    }
    char* p = buffer_.get() + end_[b];
    p = coding::EncodeVarint64(p, prefix);
    std::memcpy(p, block_ids[0].data(), prefix);
    p += prefix;
    for (uint32_t j = 0; j < count; ++j) {
      const absl::string_view suffix = block_ids[j].substr(prefix);
      p = coding::EncodeVarint64(p, suffix.size());
      std::memcpy(p, suffix.data(), suffix.size());
      p += suffix.size();
    }
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

void BlocksWriter::Ints(const int64_t* values) {
  for (size_t b = 0; b < end_.size(); ++b) {
    char* p = buffer_.get() + end_[b];
    for (uint32_t j = begin_[b]; j < begin_[b + 1]; ++j) {
      p = coding::EncodeVarint64(p, coding::ZigZagEncode64(values[j]));
    }
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

void BlocksWriter::Strings(const uint32_t* indexes) {
  for (size_t b = 0; b < end_.size(); ++b) {
    char* p = buffer_.get() + end_[b];
    for (uint32_t j = begin_[b]; j < begin_[b + 1]; ++j) p = coding::EncodeVarint64(p, indexes[j]);
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

namespace {

// Whether every value is a whole number below 2^24 in magnitude (not -0),
// and their varints' bytes. Stops at the first that is not.
bool AllWhole(const float* values, uint32_t count, size_t* bytes) {
  size_t total = 0;
  for (uint32_t j = 0; j < count; ++j) {
    const float v = values[j];
    if (!(v > -16777216.0f && v < 16777216.0f)) return false;
    const int32_t i = static_cast<int32_t>(v);
    if (static_cast<float>(i) != v || (i == 0 && (FloatBits(v) >> 31) != 0)) return false;
    total += coding::VarintLength(coding::ZigZagEncode64(i));
  }
  *bytes = total;
  return true;
}

// One block's slice of a number column, in its cheapest form, written at
// `p`; returns the end. Constant and shared-top-byte come from one OR of
// every value's bits against the first (a loop that vectorizes); whole
// numbers are tried only when the first value is one.
char* PutNumbers(const float* values, uint32_t n, char* p) {
  const uint32_t first = n == 0 ? 0 : FloatBits(values[0]);
  uint32_t differ = 0;
  for (uint32_t j = 0; j < n; ++j) differ |= FloatBits(values[j]) ^ first;
  const size_t raw_bytes = 4 * size_t{n};
  if (differ == 0 && n > 1) {
    *p++ = static_cast<char>(NumberForm::kConstant);
    std::memcpy(p, &first, 4);
    return p + 4;
  }
  const size_t top_bytes = (differ >> 24) == 0 ? 1 + 3 * size_t{n} : SIZE_MAX;
  size_t whole_bytes = SIZE_MAX;
  if (n > 0 && values[0] == std::trunc(values[0]) && !AllWhole(values, n, &whole_bytes)) {
    whole_bytes = SIZE_MAX;
  }
  if (whole_bytes <= std::min(raw_bytes, top_bytes)) {
    *p++ = static_cast<char>(NumberForm::kWhole);
    for (uint32_t j = 0; j < n; ++j) {
      p = coding::EncodeVarint64(p, coding::ZigZagEncode64(static_cast<int32_t>(values[j])));
    }
    return p;
  }
  if (top_bytes < raw_bytes) {
    *p++ = static_cast<char>(NumberForm::kTopByte);
    *p++ = static_cast<char>(first >> 24);
    // Four bytes at a time, each store's top byte overwritten by the next
    // (the region's room allows the one spare byte).
    for (uint32_t j = 0; j < n; ++j, p += 3) {
      const uint32_t bits = FloatBits(values[j]);
      std::memcpy(p, &bits, 4);
    }
    return p;
  }
  *p++ = static_cast<char>(NumberForm::kRaw);
  std::memcpy(p, values, raw_bytes);
  return p + raw_bytes;
}

}  // namespace

void BlocksWriter::Numbers(const float* values) {
  for (size_t b = 0; b < end_.size(); ++b) {
    char* p = PutNumbers(values + begin_[b], begin_[b + 1] - begin_[b], buffer_.get() + end_[b]);
    end_[b] = static_cast<size_t>(p - buffer_.get());
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
