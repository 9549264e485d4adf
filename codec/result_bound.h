// ResultBound: an upper bound on a RankResult that does not exist yet, in
// the terms a codec needs to bound the bytes it would write for it
// (Codec::EstimateEncodedBytes). The server fills one from a request and the
// ranker's output shape before anything is ranked (ranking/response_budget.h)
// and asks the negotiated codec; the codec, not the server, knows its
// layout.
//
// Building one costs O(keys): the per-item parts are views of the caller's
// arrays (the request's ids and sources), never copies.
//
// Example (a codec's estimate):
//   size_t bytes = 0;
//   for (size_t i = 0; i < bound.items; ++i) {
//     bytes += bound.ids[i].size() + (bound.logs ? bound.LogLineBytes(i) : 0);
//   }
//
// Thread safety: plain data; read from any thread while the arrays it views
// live.
#ifndef RANKWIRE_CODEC_RESULT_BOUND_H_
#define RANKWIRE_CODEC_RESULT_BOUND_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/rank_result.h"

namespace rankwire {

// One metric key of the result, at its largest.
struct KeyBound {
  std::string name;
  // The type every item's value will have. An int key whose items may hold
  // floats instead is kInt with a max_int whose encodings bound a float's
  // (9.0e15) in every codec.
  MetricType type = MetricType::kDouble;
  // kInt: the largest magnitude.
  uint64_t max_int = 0;
  // kString: the value's bytes, the same string in every item...
  size_t string_bytes = 0;
  // ...or, when set, each item's own string: ResultBound::item_strings[i].
  // At most one key of a bound sets it.
  bool per_item_string = false;
};

struct ResultBound {
  // In the order of RankResult::keys(); every item has a value for every
  // key.
  absl::Span<const KeyBound> keys;
  size_t items = 0;
  // Each item's id, and the value of the key with per_item_string: `items`
  // entries each (item_strings may be empty when no key sets it).
  absl::Span<const absl::string_view> ids;
  absl::Span<const absl::string_view> item_strings;
  // Whether the result carries log lines (inline logs). Item i's line has
  // at most LogLineBytes(i) bytes, of which log_shared_bytes are the same
  // text in every line, and log_fields is the number of separate runs of
  // varying text (numbers, ids) between them (what a compressor cannot
  // match from the line before).
  bool logs = false;
  size_t log_fixed_bytes = 0;
  size_t log_shared_bytes = 0;
  size_t log_fields = 0;

  // The lines quote the item's id and its per-item string; everything else
  // in them is bounded by log_fixed_bytes.
  size_t LogLineBytes(size_t i) const {
    return log_fixed_bytes + ids[i].size() + (i < item_strings.size() ? item_strings[i].size() : 0);
  }
  size_t ItemStringBytes(size_t i) const {
    return i < item_strings.size() ? item_strings[i].size() : 0;
  }
};

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_RESULT_BOUND_H_
