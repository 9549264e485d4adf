// ResponseBudget refuses, before anything is ranked or encoded, a request
// whose response would be larger than the server may send
// (--max_message_bytes). Without it a 100 KB request (a long string copied
// into each of 1000 items' log lines) made the server build a 100 MB
// response and then fail to send it.
//
// The estimate is an upper-bound model of each codec's layout, computed
// from the request and the ranker's OutputShape in O(candidates) arithmetic:
// no allocation proportional to the response. It errs high (numbers are
// counted at their widest text or varint form; zstd log blocks are counted
// as one full line plus each further line's varying bytes), and
// response_budget_test compares it with real encoded sizes across codecs
// and log modes.
//
// Example:
//   ResponseBudget budget(max_message_bytes, block_items);
//   absl::Status s = budget.Check(request, ranker.Shape(request), codec, mode,
//                                 codecs);  // ResourceExhausted if too big.
//
// Thread safety: const methods, safe from many threads.
#ifndef RANKWIRE_SERVER_RESPONSE_BUDGET_H_
#define RANKWIRE_SERVER_RESPONSE_BUDGET_H_

#include <cstddef>

#include "absl/status/status.h"
#include "codec/codec.h"
#include "codec/registry.h"
#include "rank/v1/rank.pb.h"
#include "server/ranker.h"
#include "server/request_view.h"

namespace rankwire::server {

// Bytes of the RankResponse message (envelope + body) that `codec` would
// write for `request` with logs in `log_mode` (INLINE puts them in the body;
// any other mode leaves them out). Codecs are modelled by name: "protobuf"
// (and any other codec with a protobuf body) by the protobuf layout,
// "rankbin-zstd" by rankbin with zstd log blocks, any other opaque codec by
// the rankbin layout.
// `block_items` is the rankbin codecs' block size (--rankbin_block_items).
size_t EstimateResponseBytes(const RequestView& request, const OutputShape& shape,
                             const Codec& codec, rank::v1::LogMode log_mode,
                             size_t block_items);

class ResponseBudget {
 public:
  ResponseBudget(size_t max_message_bytes, size_t block_items)
      : max_bytes_(max_message_bytes), block_items_(block_items) {}

  // ResourceExhausted, saying how big the response would be and what would
  // make it fit (logs in the store, a compressing codec, fewer candidates),
  // when the estimate exceeds the budget. `codecs` lists the alternatives.
  absl::Status Check(const RequestView& request, const OutputShape& shape,
                     const Codec& codec, rank::v1::LogMode log_mode,
                     const CodecRegistry& codecs) const;

  size_t max_bytes() const { return max_bytes_; }

 private:
  size_t max_bytes_;
  size_t block_items_;
};

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_RESPONSE_BUDGET_H_
