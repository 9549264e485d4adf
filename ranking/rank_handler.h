// RankHandler is everything between a parsed RankRequest and an encoded
// response: validate, rank, send the logs where the request wants them,
// encode with the negotiated codec, fill the header. It knows nothing about
// gRPC; the reactor in rank_service.cc parses, calls Handle() and finishes.
//
// Ranking (the Ranker of the request's bucket, from the ModelSet current
// when the request starts: ranking/model_set.h), encoding (Codec) and
// logging (LogConsumer) are separate objects passed in; the handler only
// sequences them and times each phase.
//
// Thread safety: Handle() is safe from many threads; everything passed in
// must be thread-safe and outlive the handler.
#ifndef RANKWIRE_RANKING_RANK_HANDLER_H_
#define RANKWIRE_RANKING_RANK_HANDLER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "base/cpu_sampler.h"
#include "codec/registry.h"
#include "logstore/log_store.h"
#include "metrics/server_metrics.h"
#include "rank/v1/rank.pb.h"
#include "ranking/encoded_response.h"
#include "ranking/model_set.h"
#include "ranking/ranker.h"
#include "ranking/response_budget.h"
#include "request/request_validator.h"
#include "request/request_view.h"

namespace rankwire {

// What to do with item feature names the model does not know (a misspelt
// name otherwise silently contributes 0 to every score).
enum class UnknownFeaturePolicy {
  kCount,   // Rank; count per name; list them in ResponseHeader.unknown_item_features.
  kReject,  // INVALID_ARGUMENT naming them.
};

struct RankHandlerOptions {
  RequestLimits limits;
  UnknownFeaturePolicy unknown_features = UnknownFeaturePolicy::kCount;
  // Largest response the server may send (--max_message_bytes); a request
  // whose estimated response is larger is refused before ranking.
  size_t max_response_bytes = 64 << 20;
  // The codec used when the request accepts none this server has (--codec).
  // REQUIRES: not null (the constructor aborts otherwise: a programmer error).
  const Codec* default_codec = nullptr;
  // Where logs go when the request says LOG_MODE_DEFAULT (--log_mode).
  rank::v1::LogMode default_log_mode = rank::v1::LOG_MODE_STORE;
};

class RankHandler {
 public:
  using Clock = std::chrono::steady_clock;
  using Deadline = std::chrono::system_clock::time_point;

  // `logs` may be null: LOG_MODE_STORE then behaves as LOG_MODE_NONE and the
  // header says so. `metrics` may be null.
  RankHandler(const ServingModels* models, const CodecRegistry* codecs, logstore::LogConsumer* logs,
              ServerMetrics* metrics, RankHandlerOptions options);

  // `started` is when the call began (before request parsing) and
  // `deserialize_us` how long parsing took; both go into the header. The
  // request is not kept after Handle() returns (logs for the store take
  // copies of what they need). With a sampling `cpu` (started by the
  // caller), the CPU of each phase goes to ServerMetrics' phase counters,
  // from validation on; the encode phase is left for the caller to close.
  // InvalidArgument for a bad request; ResourceExhausted when its response
  // would exceed the budget; DeadlineExceeded when `deadline` has passed
  // before ranking starts (only OK ranks); if encoding fails, the codec's
  // error (its code kept, e.g. ResourceExhausted for a result over a format
  // limit).
  absl::StatusOr<EncodedResponse> Handle(const RequestView& request, Clock::time_point started,
                                         uint32_t deserialize_us,
                                         Deadline deadline = Deadline::max(),
                                         CpuSampler* cpu = nullptr) const;
  // The same for a protobuf request (tests, tools): parsed into a view
  // with limits() first.
  absl::StatusOr<EncodedResponse> Handle(const rank::v1::RankRequest& request,
                                         Clock::time_point started, uint32_t deserialize_us,
                                         Deadline deadline = Deadline::max()) const;

  // The input contract's limits (what PrescanRequest checks before parsing).
  const RequestLimits& limits() const { return options_.limits; }

  // The log mode a request gets (the request's, or the server default).
  rank::v1::LogMode EffectiveLogMode(const RequestView& request) const;

 private:
  const ServingModels* models_;
  const CodecRegistry* codecs_;
  logstore::LogConsumer* logs_;
  ServerMetrics* metrics_;
  // Checks before ranking: the input contract, unknown features, the
  // response budget. Fills the header's unknown_item_features.
  absl::Status Admit(const RequestView& request, const ModelSet::Route& route, const Codec& codec,
                     rank::v1::LogMode log_mode, rank::v1::ResponseHeader* header) const;

  RankHandlerOptions options_;
  ResponseBudget budget_;
};

}  // namespace rankwire

#endif  // RANKWIRE_RANKING_RANK_HANDLER_H_
