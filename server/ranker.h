// Ranker scores a validated RankRequest with a LinearModel and returns the
// RankResult a production ranker emits: items sorted by score, each with the
// model's sub-scores, per-input contributions, the item's feature values,
// recall source and rank, experiment bucket, model version and, if asked,
// a per-item log line (a feature dump of about 1 KB).
//
// Everything in the result is computed from the request; the same request
// gives the same result, byte for byte.
//
// Thread safety: const and stateless per call; share one Ranker.
#ifndef RANKWIRE_SERVER_RANKER_H_
#define RANKWIRE_SERVER_RANKER_H_

#include "codec/rank_result.h"
#include "rank/v1/rank.pb.h"
#include "server/linear_model.h"

namespace rankwire::server {

class Ranker {
 public:
  // `model` is not owned and must outlive the Ranker.
  explicit Ranker(const LinearModel* model) : model_(model) {}

  // REQUIRES: ValidateRequest(request, ...) returned OK.
  RankResult Rank(const rank::v1::RankRequest& request, bool with_logs) const;

  const LinearModel& model() const { return *model_; }

 private:
  const LinearModel* model_;
};

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_RANKER_H_
