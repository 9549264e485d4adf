// Ranker scores a validated request with a Model (model/model.h) and
// returns the RankResult a production ranker emits: items sorted by score,
// each with its final score, the model's metrics (a linear model's
// sub-scores and contributions; an XGBoost model's margin and, for the
// items shown, their largest contributions), the item's feature values,
// recall source and rank, experiment bucket, model version and, if asked, a
// per-item log line (ranking/log_line.h).
//
// Everything in the result is computed from the request and the model; the
// same request gives the same result, byte for byte.
//
// It works column by column, in a RankWorkspace the caller keeps from call
// to call (one per thread): the candidates' features are gathered once
// (feature-major), the model scores them in vector loops, candidates are
// ordered by a radix sort, and the result's columns are written in rank
// order. A warm workspace and a reused RankResult make a request allocate
// nothing per item or per metric.
//
// Log lines cost more to format than the scores cost to compute, so when
// they go to the log store the ranker does not format them:
// TakeLogValues() moves the values out of the workspace, and a log writer
// thread writes them.
//
// Thread safety: const; share one Ranker. A workspace is for one thread.
#ifndef RANKWIRE_RANKING_RANKER_H_
#define RANKWIRE_RANKING_RANKER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "codec/rank_result.h"
#include "codec/result_bound.h"
#include "logstore/log_store.h"
#include "model/model.h"
#include "rank/v1/rank.pb.h"
#include "ranking/log_line.h"
#include "request/request_view.h"

namespace rankwire {

enum class LogDetail {
  kNone,      // No log lines.
  kInline,    // In the result's logs.
  kDeferred,  // In LogValues, formatted by a log writer.
};

// An upper bound on what Rank() puts in each item of a request's result,
// known before ranking: ResponseBudget turns it into a response size per
// codec. Building it costs O(features + model terms), never O(response).
struct OutputShape {
  // A key at its largest (codec/result_bound.h). For an item feature, which
  // Rank() emits as an int when every candidate's value is whole and as a
  // float otherwise: kInt with max_int 9.0e15. A string key's value is the
  // same in every item (string_bytes) but for the item's recall_source
  // (per_item_string).
  using Key = KeyBound;
  std::vector<Key> keys;  // In the order of RankResult::keys().
  // An inline log line of candidate c has at most
  // line_fixed_bytes + |c.item_id| + |c.recall_source| bytes...
  size_t line_fixed_bytes = 0;
  // ...of which line_shared_bytes are the same text in every line of the
  // request (labels, user, context), and line_fields the number of separate
  // runs of varying text (numbers, ids) between them.
  size_t line_shared_bytes = 0;
  size_t line_fields = 0;
};

// The memory OrderBestFirst sorts in, kept from call to call.
struct SortScratch {
  std::vector<uint64_t> keys;  // Per candidate: its score as a key.
  std::vector<uint32_t> high, high_tmp, order_tmp;
};

// The candidates' rank order: indexes of `score` best first, ties (== ,
// so -0 and +0 too) in index order, into *order. A stable LSD radix sort
// of the keys' high 32 bits, skipping the bytes in which every key agrees,
// then each run of equal high bits (scores within ~1e-6 of each other:
// rare but for ties) ordered by the whole key. Ranker::Score's sort.
void OrderBestFirst(absl::Span<const double> score, SortScratch* scratch,
                    std::vector<uint32_t>* order);

// What a ranking computes, by column, reused from call to call. Opaque to
// callers but for keeping one per thread.
struct RankWorkspace {
  // The values the log lines are made of (and most of the result's): the
  // features, the heads' logits and probabilities, every term's
  // contribution, boosts and scores, ids, sources and recall ranks, and the
  // rank order.
  LogValues v;
  // Where TakeLogValues() gets memory for `v` back from the log writers.
  std::shared_ptr<LogValuesPool> log_values_pool = std::make_shared<LogValuesPool>();
  std::vector<uint8_t> integral;  // Per item feature: every value whole.
  SortScratch sort;
  // Per model item feature, the request column it reads (-1: none), kept
  // while the model and the request's feature names repeat.
  std::vector<int> feature_column;
  uint64_t bound_model = 0;  // Model::serial(), not the address (reused).
  std::vector<std::string> bound_features;
  // The key table of the last request, kept while its model, feature
  // names and integral features repeat (a ranker's schema, call after
  // call).
  struct Schema {
    std::vector<MetricKey> keys;
    uint32_t final_score = 0;
    std::vector<uint32_t> model;    // Per ModelOutputs::metrics entry.
    std::vector<uint32_t> feature;  // Per item feature.
    uint32_t source = 0, recall_rank = 0, pre_rank = 0, bucket = 0, version = 0;
    // Per k: "explain.<k>.feature" and "explain.<k>.contribution".
    std::vector<uint32_t> explain_feature, explain_value;
  } schema;
  uint64_t schema_model = 0;
  std::vector<std::string> schema_features;
  std::vector<uint8_t> schema_integral;
};

struct RankOutput {
  RankResult result;
  // With LogDetail::kDeferred: the request's log lines, to be rendered on
  // a log writer thread.
  std::unique_ptr<logstore::LogRenderer> logs;
};

class Ranker {
 public:
  // `model` is shared with the renderers and log values the ranker hands
  // out (a reload may replace it while they are queued).
  explicit Ranker(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

  // The bucket a user falls into when no bucket manifest decides: the
  // model's.
  const std::string& BucketOf(absl::string_view user_id) const { return model_->BucketOf(user_id); }

  // Scores every candidate and orders them (ties keep request order), in
  // `ws`. REQUIRES: ValidateRequest(request, ...) returned OK.
  void Score(const RequestView& request, RankWorkspace* ws) const;
  // Writes the result of the last Score() into `result` (cleared first,
  // its memory reused): keys, items in rank order, their metrics, and
  // with LogDetail::kInline their log lines. `bucket` is the request's
  // experiment bucket (in every item and line).
  void Build(const RequestView& request, const std::string& bucket, LogDetail detail,
             RankWorkspace* ws, RankResult* result) const;
  // The values of the last Score()'s log lines, moved out of `ws` (which
  // gets the memory of values already written back in their place,
  // LogValuesPool), for a log writer to store.
  std::unique_ptr<LogValues> TakeLogValues(const RequestView& request, const std::string& bucket,
                                           RankWorkspace* ws) const;
  // A renderer of `values`' lines for the log store.
  std::unique_ptr<logstore::LogRenderer> Renderer(std::unique_ptr<LogValues> values) const;

  // Score + Build (+ the renderer with kDeferred), with a workspace of its
  // own and the model's bucket, for a protobuf request: for tests and tools.
  // REQUIRES: ValidateRequest(proto, ...) returned OK.
  RankOutput Rank(const rank::v1::RankRequest& proto, LogDetail detail) const;

  // REQUIRES: ValidateRequest(request, ...) returned OK.
  OutputShape Shape(const RequestView& request, const std::string& bucket) const;
  // The same into *shape, its memory reused; the log line's bound
  // (line_*) only with `line_bound` (left as they were otherwise: the
  // response holds no line unless logs are inline).
  void Shape(const RequestView& request, const std::string& bucket, bool line_bound,
             OutputShape* shape) const;
  // With the model's bucket for the request's user.
  OutputShape Shape(const RequestView& request) const {
    return Shape(request, BucketOf(request.user_id));
  }

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& shared_model() const { return model_; }

 private:
  std::shared_ptr<const Model> model_;
};

}  // namespace rankwire

#endif  // RANKWIRE_RANKING_RANKER_H_
