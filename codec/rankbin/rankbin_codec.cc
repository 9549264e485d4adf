#include "codec/rankbin/rankbin_codec.h"

#include <algorithm>

#include "codec/coding.h"
#include "codec/rankbin/format.h"

namespace rankwire {

uint32_t RankbinCodec::format_version() const { return rankbin::kMajorVersion; }

absl::StatusOr<OwnedBuffer> RankbinCodec::Encode(const RankResult& result) const {
  return rankbin::WriteRankbin(result, writer_);
}

absl::StatusOr<std::unique_ptr<ResultView>> RankbinCodec::Open(SharedBytes bytes) const {
  return rankbin::OpenRankbin(std::move(bytes), reader_);
}

namespace {

// Widest value: f64, f32, a zigzag varint of the largest magnitude, a
// length-prefixed string (the writer uses a dictionary only when that is
// smaller) or, for a string every item shares, a 1-byte dictionary index
// (the string itself is counted once, in KEYS). An int key may also hold
// floats (features): 4 bytes, never more than the varint.
size_t ValueBound(const KeyBound& key, size_t item_string_bytes) {
  switch (key.type) {
    case MetricType::kDouble:
      return 8;
    case MetricType::kFloat:
      return 4;
    case MetricType::kInt:
      return std::max<size_t>(4, coding::VarintLength(key.max_int << 1));
    case MetricType::kString:
      if (key.per_item_string) return coding::LengthPrefixedLength(item_string_bytes);
      return 1;
  }
  return 10;
}

// The LOGS section: raw lines, or with compress_logs per block one line in
// full and, for each further line, the bytes that differ between lines
// plus a few bytes per field for the matches in between; never more than
// the raw block (the writer keeps a block raw when compressing does not
// save min_saving).
size_t LogsBound(const ResultBound& bound, size_t block_items, bool compressed) {
  size_t log_bytes = 5 + 9 * ((bound.items + block_items - 1) / block_items);
  size_t block_raw = 0;
  size_t block_model = 0;
  for (size_t i = 0; i < bound.items; ++i) {
    const size_t raw = coding::LengthPrefixedLength(bound.LogLineBytes(i));
    block_raw += raw;
    if (i % block_items == 0) {
      block_model += raw + 64;  // The block's first line, and the frame.
    } else {
      block_model += raw - bound.log_shared_bytes + 3 * bound.log_fields + 8;
    }
    if ((i + 1) % block_items == 0 || i + 1 == bound.items) {
      log_bytes += compressed ? std::min(block_raw, block_model) : block_raw;
      block_raw = block_model = 0;
    }
  }
  return log_bytes;
}

}  // namespace

// Section table, KEYS, SHAPES, ITEMS, VALUES (counted uncompressed) and
// LOGS (docs/FORMAT.md).
size_t RankbinCodec::EstimateEncodedBytes(const ResultBound& bound) const {
  const size_t n = bound.items;
  const size_t block_items = std::max<size_t>(1, writer_.block_items);
  const size_t blocks = (n + block_items - 1) / block_items;
  size_t keys = 5;
  size_t values_fixed = 0;
  const KeyBound* item_key = nullptr;
  for (const KeyBound& key : bound.keys) {
    // Type, name and, for a shared string, its one-entry dictionary.
    const size_t entry = 1 + coding::LengthPrefixedLength(key.name.size()) + 1 +
                         coding::LengthPrefixedLength(key.string_bytes);
    keys += coding::LengthPrefixedLength(entry);
    if (key.per_item_string) {
      item_key = &key;
      continue;
    }
    values_fixed += ValueBound(key, 0);
  }
  const size_t sections = 8 + 5 * 5;
  const size_t shapes = 10 + 2 * bound.keys.size();
  size_t items = 20;
  size_t values = 5 + 9 * blocks;
  for (size_t i = 0; i < n; ++i) {
    items += 4 + coding::LengthPrefixedLength(bound.ids[i].size()) + 8 + 5 + 5 + 5;
    values += values_fixed + (item_key ? ValueBound(*item_key, bound.ItemStringBytes(i)) : 0);
  }
  const size_t logs = bound.logs ? LogsBound(bound, block_items, writer_.compress_logs) : 0;
  return sections + keys + shapes + items + values + logs;
}

}  // namespace rankwire
