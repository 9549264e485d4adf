#include "ranking/response_budget.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "codec/coding.h"
#include "codec/result_bound.h"

namespace rankwire {
namespace {

// A length-delimited protobuf field (tag < 16) holding `len` bytes: the
// envelope's header and body fields.
size_t PbField(size_t len) { return 1 + coding::VarintLength(len) + len; }

std::string Megabytes(size_t bytes) { return absl::StrFormat("%.1f MB", bytes / 1e6); }

}  // namespace

size_t EstimateResponseBytes(const RequestView& request, const OutputShape& shape,
                             const Codec& codec, rank::v1::LogMode log_mode) {
  ResultBound bound;
  bound.keys = shape.keys;
  bound.items = request.n;
  bound.ids = request.item_id;
  bound.item_strings = request.recall_source;
  bound.logs = log_mode == rank::v1::LOG_MODE_INLINE;
  bound.log_fixed_bytes = shape.line_fixed_bytes;
  bound.log_shared_bytes = shape.line_shared_bytes;
  bound.log_fields = shape.line_fields;
  const size_t body = codec.EstimateEncodedBytes(bound);
  // The header: ids, codec, model version, timings, the log key and the
  // unknown-feature list (at most every feature name).
  size_t header = 256 + 2 * request.request_id.size();
  for (const OutputShape::Key& key : shape.keys) header += key.string_bytes;
  for (absl::string_view name : request.item_feature_names) header += PbField(name.size());
  return PbField(header) + PbField(body);
}

absl::Status ResponseBudget::Check(const RequestView& request, const OutputShape& shape,
                                   const Codec& codec, rank::v1::LogMode log_mode,
                                   const CodecRegistry& codecs) const {
  const size_t estimate = EstimateResponseBytes(request, shape, codec, log_mode);
  if (estimate <= max_bytes_) return absl::OkStatus();
  std::string message = absl::StrCat(
      "the response would be about ", Megabytes(estimate), " (", request.n, " items, codec ",
      codec.name(), ", logs ", log_mode == rank::v1::LOG_MODE_INLINE ? "inline" : "not inline",
      "), over the server's limit of ", max_bytes_, " bytes (--max_message_bytes); ");
  std::vector<std::string> fixes;
  if (log_mode == rank::v1::LOG_MODE_INLINE) {
    const size_t stored = EstimateResponseBytes(request, shape, codec, rank::v1::LOG_MODE_STORE);
    fixes.push_back(
        absl::StrCat("logs in the store (log_mode LOG_MODE_STORE): about ", Megabytes(stored)));
    for (const std::string& name : codecs.Names()) {
      const Codec* other = codecs.Find(name);
      if (other == nullptr || other == &codec || !other->compresses_logs()) continue;
      fixes.push_back(
          absl::StrCat("the compressing codec ", name, " with logs inline: at most about ",
                       Megabytes(EstimateResponseBytes(request, shape, *other, log_mode))));
    }
  }
  fixes.push_back("fewer candidates or shorter ids, sources and feature names");
  absl::StrAppend(&message, "to make it fit: ", absl::StrJoin(fixes, "; "));
  return absl::ResourceExhaustedError(message);
}

}  // namespace rankwire
