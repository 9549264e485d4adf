// Ranker scores a validated RankRequest with a LinearModel and returns the
// RankResult a production ranker emits: items sorted by score, each with the
// model's sub-scores, per-input contributions, the item's feature values,
// recall source and rank, experiment bucket, model version and, if asked,
// a per-item log line (a feature dump of about 1 KB).
//
// Everything in the result is computed from the request; the same request
// gives the same result, byte for byte.
//
// Log lines cost more to format than the scores cost to compute (500 lines
// of ~1.2 KB), so when they go to the log store the ranker does not format
// them: LogDetail::kDeferred returns a renderer holding the request and the
// scores, and the log writer thread formats the lines off the ranking path.
//
// Thread safety: const and stateless per call; share one Ranker.
#ifndef RANKWIRE_SERVER_RANKER_H_
#define RANKWIRE_SERVER_RANKER_H_

#include <memory>

#include "codec/rank_result.h"
#include "logstore/log_store.h"
#include "rank/v1/rank.pb.h"
#include "server/linear_model.h"

namespace rankwire::server {

enum class LogDetail {
  kNone,      // No log lines.
  kInline,    // In each RankedItem::log.
  kDeferred,  // In RankOutput::logs, formatted when rendered.
};

struct RankOutput {
  RankResult result;
  // With LogDetail::kDeferred: the request's log lines, to be rendered on
  // another thread (it keeps the request alive).
  std::unique_ptr<logstore::LogRenderer> logs;
};

class Ranker {
 public:
  // `model` is not owned and must outlive the Ranker (and the renderers it
  // returns).
  explicit Ranker(const LinearModel* model) : model_(model) {}

  // Scores every candidate, orders them, emits the result's items and the
  // log lines `detail` asks for. The request is shared because a deferred
  // renderer keeps it.
  // REQUIRES: ValidateRequest(*request, ...) returned OK.
  RankOutput Rank(std::shared_ptr<const rank::v1::RankRequest> request, LogDetail detail) const;

  const LinearModel& model() const { return *model_; }

 private:
  const LinearModel* model_;
};

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_RANKER_H_
