// ResponseBudget refuses, before anything is ranked or encoded, a request
// whose response would be larger than the server may send
// (--max_message_bytes). Without it a 100 KB request (a long string copied
// into each of 1000 items' log lines) made the server build a 100 MB
// response and then fail to send it.
//
// The estimate is an upper bound computed from the request and the
// ranker's OutputShape in O(candidates) arithmetic: no allocation
// proportional to the response. The body is the codec's own estimate
// (Codec::EstimateEncodedBytes over a ResultBound of the request and the
// shape): the server knows no codec's layout. The envelope and header are
// the server's. response_budget_test compares the estimate with real
// encoded sizes across every codec under test and both log modes.
//
// Example:
//   ResponseBudget budget(max_message_bytes);
//   absl::Status s = budget.Check(request, ranker.Shape(request), codec, mode,
//                                 codecs);  // ResourceExhausted if too big.
//
// Thread safety: const methods, safe from many threads.
#ifndef RANKWIRE_RANKING_RESPONSE_BUDGET_H_
#define RANKWIRE_RANKING_RESPONSE_BUDGET_H_

#include <cstddef>

#include "absl/status/status.h"
#include "codec/codec.h"
#include "codec/registry.h"
#include "rank/v1/rank.pb.h"
#include "ranking/ranker.h"
#include "request/request_view.h"

namespace rankwire {

// Bytes of the RankResponse message (envelope + body) that `codec` would
// write for `request` with logs in `log_mode` (INLINE puts them in the body;
// any other mode leaves them out), by the codec's estimate of its body.
size_t EstimateResponseBytes(const RequestView& request, const OutputShape& shape,
                             const Codec& codec, rank::v1::LogMode log_mode);

class ResponseBudget {
 public:
  explicit ResponseBudget(size_t max_message_bytes) : max_bytes_(max_message_bytes) {}

  // ResourceExhausted, saying how big the response would be and what would
  // make it fit (logs in the store, a codec that compresses logs
  // (Codec::compresses_logs), fewer candidates), when the estimate exceeds
  // the budget. `codecs` lists the alternatives.
  absl::Status Check(const RequestView& request, const OutputShape& shape, const Codec& codec,
                     rank::v1::LogMode log_mode, const CodecRegistry& codecs) const;

  size_t max_bytes() const { return max_bytes_; }

 private:
  size_t max_bytes_;
};

}  // namespace rankwire

#endif  // RANKWIRE_RANKING_RESPONSE_BUDGET_H_
