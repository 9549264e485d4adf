#include "server/rank_handler.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rankwire::server {
namespace {

using Clock = RankHandler::Clock;
using TimingSetter = void (rank::v1::ServerTimings::*)(uint32_t);
using PhaseHistogram = Histogram* ServerMetrics::*;

uint32_t MicrosSince(Clock::time_point from, Clock::time_point to) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
}

// Times the handler's phases back to back: each End() closes the phase that
// began at the previous one, writes its duration into the response header's
// timings and records it in the phase's histogram.
class PhaseTimer {
 public:
  PhaseTimer(rank::v1::ServerTimings* timings, ServerMetrics* metrics)
      : timings_(timings), metrics_(metrics), mark_(Clock::now()) {}

  void End(TimingSetter set, PhaseHistogram histogram) {
    const Clock::time_point now = Clock::now();
    Record(set, histogram, MicrosSince(mark_, now));
    mark_ = now;
  }
  // A phase measured elsewhere (request parsing, the whole call).
  void Record(TimingSetter set, PhaseHistogram histogram, uint32_t micros) {
    (timings_->*set)(micros);
    if (metrics_ != nullptr) (metrics_->*histogram)->Observe(micros * 1e-6);
  }

 private:
  rank::v1::ServerTimings* timings_;
  ServerMetrics* metrics_;
  Clock::time_point mark_;
};

LogDetail DetailFor(rank::v1::LogMode mode) {
  switch (mode) {
    case rank::v1::LOG_MODE_INLINE:
      return LogDetail::kInline;
    case rank::v1::LOG_MODE_STORE:
      return LogDetail::kDeferred;
    default:
      return LogDetail::kNone;
  }
}

}  // namespace

RankHandler::RankHandler(const Ranker* ranker, const CodecRegistry* codecs,
                         logstore::LogConsumer* logs, ServerMetrics* metrics,
                         RankHandlerOptions options)
    : ranker_(ranker),
      codecs_(codecs),
      logs_(logs),
      metrics_(metrics),
      options_(std::move(options)) {
  // A programmer error, not input: fail at start-up rather than on the
  // first request that negotiates no codec.
  if (options_.default_codec == nullptr) {
    std::fputs("RankHandler: RankHandlerOptions::default_codec is null\n", stderr);
    std::abort();
  }
}

rank::v1::LogMode RankHandler::EffectiveLogMode(
    const rank::v1::RankRequest& request) const {
  rank::v1::LogMode mode = request.log_mode() == rank::v1::LOG_MODE_DEFAULT
                               ? options_.default_log_mode
                               : request.log_mode();
  if (mode == rank::v1::LOG_MODE_STORE && logs_ == nullptr) {
    return rank::v1::LOG_MODE_NONE;
  }
  return mode;
}

absl::StatusOr<EncodedResponse> RankHandler::Handle(
    std::shared_ptr<const rank::v1::RankRequest> shared_request, Clock::time_point started,
    uint32_t deserialize_us) const {
  const rank::v1::RankRequest& request = *shared_request;
  EncodedResponse response;
  rank::v1::ResponseHeader& header = response.header;
  using T = rank::v1::ServerTimings;
  PhaseTimer phases(header.mutable_timings(), metrics_);
  phases.Record(&T::set_request_deserialize_us, &ServerMetrics::request_deserialize,
                deserialize_us);

  absl::Status valid = ValidateRequest(request, options_.limits);
  phases.End(&T::set_validate_us, &ServerMetrics::validate);
  RETURN_IF_ERROR(valid);

  const rank::v1::LogMode log_mode = EffectiveLogMode(request);
  RankOutput ranked = ranker_->Rank(shared_request, DetailFor(log_mode));
  phases.End(&T::set_rank_us, &ServerMetrics::rank);

  // Logs for the store are handed over unformatted: the consumer only
  // queues them, the writer thread formats and stores them, and the future
  // is not waited on.
  if (log_mode == rank::v1::LOG_MODE_STORE) {
    logstore::RequestLogs logs;
    logs.request_id = request.request_id();
    logs.renderer = std::move(ranked.logs);
    header.set_log_key(logs_->KeyFor(request.request_id()));
    logs_->Consume(std::move(logs));
  }
  phases.End(&T::set_log_enqueue_us, &ServerMetrics::log_enqueue);

  const Codec& codec = codecs_->Negotiate(request.accept_codecs(), *options_.default_codec);
  absl::StatusOr<OwnedBuffer> body = codec.Encode(ranked.result);
  if (!body.ok()) {
    // The codec's code goes to the caller as is: a result over a format
    // limit is RESOURCE_EXHAUSTED or INVALID_ARGUMENT there, not INTERNAL.
    return absl::Status(body.status().code(), absl::StrCat("encoding with ", codec.name(),
                                                           ": ", body.status().message()));
  }
  phases.End(&T::set_response_serialize_us, &ServerMetrics::response_serialize);

  header.set_request_id(request.request_id());
  header.set_codec(std::string(codec.name()));
  header.set_format_version(codec.format_version());
  header.set_item_count(static_cast<uint32_t>(ranked.result.items.size()));
  header.set_log_mode(log_mode);
  header.set_model_version(ranker_->model().full_version());
  response.body_kind = codec.body_kind();
  if (metrics_) {
    if (const auto* c = metrics_->ForCodec(codec.name())) {
      c->responses->Increment();
      c->response_bytes->Observe(static_cast<double>(body->size()));
    }
  }
  response.body = std::make_shared<const OwnedBuffer>(*std::move(body));
  phases.Record(&T::set_total_us, &ServerMetrics::total, MicrosSince(started, Clock::now()));
  return response;
}

}  // namespace rankwire::server
