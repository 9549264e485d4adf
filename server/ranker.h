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
// scores, and a log writer thread makes structured records of them
// (logstore/log_record.h; rendered back to the same text on read) or the
// text, off the ranking path. One description of the line serves both.
//
// Thread safety: const and stateless per call; share one Ranker.
#ifndef RANKWIRE_SERVER_RANKER_H_
#define RANKWIRE_SERVER_RANKER_H_

#include <memory>
#include <string>
#include <vector>

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

// An upper bound on what Rank() puts in each item of a request's result,
// known before ranking: ResponseBudget turns it into a response size per
// codec. Building it costs O(features + model terms), never O(response).
struct OutputShape {
  struct Key {
    std::string name;
    MetricType type = MetricType::kDouble;  // As Rank() will emit it.
    // Int values: the largest magnitude.
    uint64_t max_int = 0;
    // String values: the value's bytes (the same in every item), or the
    // item's recall_source.
    size_t string_bytes = 0;
    bool is_recall_source = false;
  };
  std::vector<Key> keys;  // In the order of RankResult::keys.
  // An inline log line of candidate c has at most
  // line_fixed_bytes + |c.item_id| + |c.recall_source| bytes...
  size_t line_fixed_bytes = 0;
  // ...of which line_shared_bytes are the same text in every line of the
  // request (labels, user, context), and line_fields the number of separate
  // runs of varying text (numbers, ids) between them.
  size_t line_shared_bytes = 0;
  size_t line_fields = 0;
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

  // REQUIRES: ValidateRequest(request, ...) returned OK.
  OutputShape Shape(const rank::v1::RankRequest& request) const;

  const LinearModel& model() const { return *model_; }

 private:
  const LinearModel* model_;
};

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_RANKER_H_
