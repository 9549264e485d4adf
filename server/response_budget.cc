#include "server/response_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace rankwire::server {
namespace {

size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// A length-delimited protobuf field (tag < 16) holding `len` bytes.
size_t PbField(size_t len) { return 1 + VarintBytes(len) + len; }

size_t Digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

// Widest text of a metric value in the protobuf baseline (shortest
// round-trip decimal: "-2.2250738585072014e-308", "-1.17549435e-38"; ints
// with a sign).
size_t PbValueText(const OutputShape::Key& key, size_t recall_source_bytes) {
  switch (key.type) {
    case MetricType::kDouble:
      return 24;
    case MetricType::kFloat:
      return 15;
    case MetricType::kInt:
      return 1 + Digits(key.max_int);
    case MetricType::kString:
      return key.is_recall_source ? recall_source_bytes : key.string_bytes;
  }
  return 24;
}

// Widest rankbin value: f64, f32, a zigzag varint of the largest
// magnitude, a length-prefixed string (the writer uses a dictionary only
// when that is smaller) or, for a string every item shares, a 1-byte
// dictionary index (the string itself is counted once, in KEYS). An int
// key may also hold floats (features): 4 bytes, never more than the varint.
size_t RankbinValue(const OutputShape::Key& key, size_t recall_source_bytes) {
  switch (key.type) {
    case MetricType::kDouble:
      return 8;
    case MetricType::kFloat:
      return 4;
    case MetricType::kInt:
      return std::max<size_t>(4, VarintBytes(key.max_int << 1));
    case MetricType::kString:
      if (key.is_recall_source) return VarintBytes(recall_source_bytes) + recall_source_bytes;
      return 1;
  }
  return 10;
}

size_t LineBytes(const OutputShape& shape, const RequestView& r, size_t c) {
  return shape.line_fixed_bytes + r.item_id[c].size() + r.recall_source[c].size();
}

size_t ProtobufBody(const RequestView& request, const OutputShape& shape, bool logs) {
  // Everything but recall.source is the same size for every item.
  size_t metrics_fixed = 0;
  size_t types = 0;
  const OutputShape::Key* source_key = nullptr;
  for (const OutputShape::Key& key : shape.keys) {
    const size_t name = PbField(key.name.size());
    types += PbField(name + 2);
    if (key.is_recall_source) {
      source_key = &key;
      continue;
    }
    metrics_fixed += PbField(name + PbField(PbValueText(key, 0)));
  }
  const size_t n = request.n;
  const size_t position = 1 + VarintBytes(n);
  size_t total = types;
  for (size_t c = 0; c < n; ++c) {
    size_t item = PbField(request.item_id[c].size()) + 9 + position + metrics_fixed;
    if (source_key != nullptr) {
      const size_t name = PbField(source_key->name.size());
      item += PbField(name + PbField(request.recall_source[c].size()));
    }
    if (logs) item += PbField(LineBytes(shape, request, c));
    total += PbField(item);
  }
  return total;
}

size_t RankbinBody(const RequestView& request, const OutputShape& shape, bool logs,
                   bool zstd_logs, size_t block_items) {
  const size_t n = request.n;
  const size_t blocks = (n + block_items - 1) / block_items;
  size_t keys = 5;
  size_t values_fixed = 0;
  const OutputShape::Key* source_key = nullptr;
  for (const OutputShape::Key& key : shape.keys) {
    // Type, name and, for a shared string, its one-entry dictionary.
    const size_t entry = 1 + VarintBytes(key.name.size()) + key.name.size() + 1 +
                         VarintBytes(key.string_bytes) + key.string_bytes;
    keys += VarintBytes(entry) + entry;
    if (key.is_recall_source) {
      source_key = &key;
      continue;
    }
    values_fixed += RankbinValue(key, 0);
  }
  const size_t sections = 8 + 5 * 5;
  const size_t shapes = 10 + 2 * shape.keys.size();
  size_t items = 20;
  size_t values = 5 + 9 * blocks;
  size_t log_bytes = 5 + 9 * blocks;
  // zstd: per block, one line in full and, for each further line, the bytes
  // that differ between lines plus a few bytes per field for the matches
  // in between; never more than the raw block (the writer keeps a block
  // raw when compressing does not save 10 %).
  size_t block_raw = 0;
  size_t block_model = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t id = request.item_id[i].size();
    items += 4 + VarintBytes(id) + id + 8 + 5 + 5 + 5;
    values += values_fixed +
              (source_key ? RankbinValue(*source_key, request.recall_source[i].size()) : 0);
    if (!logs) continue;
    const size_t line = LineBytes(shape, request, i);
    const size_t raw = VarintBytes(line) + line;
    block_raw += raw;
    if (i % block_items == 0) {
      block_model += raw + 64;  // The block's first line, and the frame.
    } else {
      block_model += raw - shape.line_shared_bytes + 3 * shape.line_fields + 8;
    }
    if ((i + 1) % block_items == 0 || i + 1 == n) {
      log_bytes += zstd_logs ? std::min(block_raw, block_model) : block_raw;
      block_raw = block_model = 0;
    }
  }
  return sections + keys + shapes + items + values + (logs ? log_bytes : 0);
}

std::string Megabytes(size_t bytes) { return absl::StrFormat("%.1f MB", bytes / 1e6); }

}  // namespace

size_t EstimateResponseBytes(const RequestView& request, const OutputShape& shape,
                             const Codec& codec, rank::v1::LogMode log_mode,
                             size_t block_items) {
  const bool logs = log_mode == rank::v1::LOG_MODE_INLINE;
  size_t body;
  if (codec.body_kind() == BodyKind::kProtobufResult) {
    body = ProtobufBody(request, shape, logs);
  } else {
    body = RankbinBody(request, shape, logs, codec.name() == "rankbin-zstd",
                       std::max<size_t>(1, block_items));
  }
  // The header: ids, codec, model version, timings, the log key and the
  // unknown-feature list (at most every feature name).
  size_t header = 256 + 2 * request.request_id.size();
  for (const OutputShape::Key& key : shape.keys) header += key.string_bytes;
  for (absl::string_view name : request.item_feature_names) header += PbField(name.size());
  return PbField(header) + PbField(body);
}

absl::Status ResponseBudget::Check(const RequestView& request,
                                   const OutputShape& shape, const Codec& codec,
                                   rank::v1::LogMode log_mode,
                                   const CodecRegistry& codecs) const {
  const size_t estimate = EstimateResponseBytes(request, shape, codec, log_mode, block_items_);
  if (estimate <= max_bytes_) return absl::OkStatus();
  std::string message = absl::StrCat(
      "the response would be about ", Megabytes(estimate), " (", request.n,
      " items, codec ", codec.name(), ", logs ",
      log_mode == rank::v1::LOG_MODE_INLINE ? "inline" : "not inline",
      "), over the server's limit of ", max_bytes_, " bytes (--max_message_bytes); ");
  std::vector<std::string> fixes;
  if (log_mode == rank::v1::LOG_MODE_INLINE) {
    const size_t stored =
        EstimateResponseBytes(request, shape, codec, rank::v1::LOG_MODE_STORE, block_items_);
    fixes.push_back(absl::StrCat("logs in the store (log_mode LOG_MODE_STORE): about ",
                                 Megabytes(stored)));
    for (const std::string& name : codecs.Names()) {
      const Codec* other = codecs.Find(name);
      if (other == nullptr || other == &codec || name != "rankbin-zstd") continue;
      fixes.push_back(absl::StrCat(
          "the compressing codec ", name, " with logs inline: at most about ",
          Megabytes(EstimateResponseBytes(request, shape, *other, log_mode, block_items_))));
    }
  }
  fixes.push_back("fewer candidates or shorter ids, sources and feature names");
  absl::StrAppend(&message, "to make it fit: ", absl::StrJoin(fixes, "; "));
  return absl::ResourceExhaustedError(message);
}

}  // namespace rankwire::server
