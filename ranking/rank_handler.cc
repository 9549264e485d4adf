#include "ranking/rank_handler.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/cpu_sampler.h"
#include "base/status_macros.h"

namespace rankwire {
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
  PhaseTimer(rank::v1::ServerTimings* timings, ServerMetrics* metrics, CpuSampler* cpu)
      : timings_(timings), metrics_(metrics), cpu_(cpu), mark_(Clock::now()) {
    if (cpu_ != nullptr && cpu_->sampling()) cpu_->Lap();  // Phases start here.
  }

  void End(TimingSetter set, PhaseHistogram histogram) {
    const Clock::time_point now = Clock::now();
    Record(set, histogram, MicrosSince(mark_, now));
    mark_ = now;
  }
  // The CPU time since the last lap, as `phase` (sampled calls only).
  void Cpu(Phase phase) {
    if (cpu_ != nullptr && cpu_->sampling() && metrics_ != nullptr) {
      metrics_->RecordPhaseCpu(phase, cpu_->Lap());
    }
  }
  // A phase measured elsewhere (request parsing, the whole call).
  void Record(TimingSetter set, PhaseHistogram histogram, uint32_t micros) {
    (timings_->*set)(micros);
    if (metrics_ != nullptr) (metrics_->*histogram)->Observe(micros * 1e-6);
  }

 private:
  rank::v1::ServerTimings* timings_;
  ServerMetrics* metrics_;
  CpuSampler* cpu_;
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

RankHandler::RankHandler(const ServingModels* models, const CodecRegistry* codecs,
                         logstore::LogConsumer* logs, ServerMetrics* metrics,
                         RankHandlerOptions options)
    : models_(models),
      codecs_(codecs),
      logs_(logs),
      metrics_(metrics),
      options_(options),
      budget_(options_.max_response_bytes) {
  // A programmer error, not input: fail at start-up rather than on the
  // first request that negotiates no codec.
  if (options_.default_codec == nullptr) {
    std::fputs("RankHandler: RankHandlerOptions::default_codec is null\n", stderr);
    std::abort();
  }
}

absl::Status RankHandler::Admit(const RequestView& request, const ModelSet::Route& route,
                                const Codec& codec, rank::v1::LogMode log_mode,
                                rank::v1::ResponseHeader* header) const {
  std::vector<std::string> unknown = UnknownItemFeatures(request, route.served.known_item_features);
  if (!unknown.empty()) {
    if (options_.unknown_features == UnknownFeaturePolicy::kReject) {
      return absl::InvalidArgumentError(absl::StrCat(
          "item_feature_names the model ", route.served.model->full_version(), " does not know: ",
          absl::StrJoin(unknown, ", "), " (the server runs with --unknown_features=reject)"));
    }
    for (std::string& name : unknown) {
      if (metrics_) metrics_->unknown_item_features->Increment(name);
      header->add_unknown_item_features(std::move(name));
    }
  }
  thread_local OutputShape shape;  // Its memory reused call after call.
  route.served.ranker.Shape(request, route.bucket, log_mode == rank::v1::LOG_MODE_INLINE, &shape);
  absl::Status budget = budget_.Check(request, shape, codec, log_mode, *codecs_);
  if (!budget.ok() && metrics_) metrics_->rejected.response_budget->Increment();
  return budget;
}

rank::v1::LogMode RankHandler::EffectiveLogMode(const RequestView& request) const {
  rank::v1::LogMode mode = request.log_mode == rank::v1::LOG_MODE_DEFAULT
                               ? options_.default_log_mode
                               : static_cast<rank::v1::LogMode>(request.log_mode);
  if (mode == rank::v1::LOG_MODE_STORE && logs_ == nullptr) {
    return rank::v1::LOG_MODE_NONE;
  }
  return mode;
}

// What a thread keeps from one request to the next: the ranker's columns
// and the result, whose memory is reused (a warm thread allocates nothing
// per item or metric).
struct ThreadState {
  RankWorkspace workspace;
  RankResult result;
};

ThreadState& ThisThread() {
  thread_local ThreadState state;
  return state;
}

namespace {

// The set a request ranks with. None while no model has loaded (the
// server started with a broken model and says NOT_SERVING): UNAVAILABLE,
// which clients retry on another replica.
absl::StatusOr<std::shared_ptr<const ModelSet>> ServingSet(const ServingModels& serving) {
  std::shared_ptr<const ModelSet> set = serving.Current();
  if (set == nullptr) {
    return absl::UnavailableError(
        "no model loaded yet (GetModels says why); this replica's health is NOT_SERVING");
  }
  return set;
}

}  // namespace

absl::StatusOr<EncodedResponse> RankHandler::Handle(const RequestView& request,
                                                    Clock::time_point started,
                                                    uint32_t deserialize_us, Deadline deadline,
                                                    CpuSampler* cpu) const {
  EncodedResponse response;
  rank::v1::ResponseHeader& header = response.header;
  using T = rank::v1::ServerTimings;
  PhaseTimer phases(header.mutable_timings(), metrics_, cpu);
  phases.Record(&T::set_request_deserialize_us, &ServerMetrics::request_deserialize,
                deserialize_us);

  // Validation, unknown features and the response budget count as
  // "validate": everything decided before any ranking work.
  const rank::v1::LogMode log_mode = EffectiveLogMode(request);
  // Held to the end: a reload meanwhile does not change this request's model.
  ASSIGN_OR_RETURN(const std::shared_ptr<const ModelSet> models, ServingSet(*models_));
  const ModelSet::Route route = models->RouteOf(request.user_id);
  const Ranker& ranker = route.served.ranker;
  absl::Status admitted = ValidateRequest(request, options_.limits, route.served.feature_values);
  // Negotiated only once accept_codecs is known to be short.
  const Codec& codec = admitted.ok()
                           ? codecs_->Negotiate(request.accept_codecs, *options_.default_codec)
                           : *options_.default_codec;
  const std::string& bucket = route.bucket;
  if (admitted.ok()) admitted = Admit(request, route, codec, log_mode, &header);
  phases.End(&T::set_validate_us, &ServerMetrics::validate);
  phases.Cpu(Phase::kValidate);
  RETURN_IF_ERROR(admitted);
  // A caller that has given up gets nothing ranked for it.
  if (std::chrono::system_clock::now() >= deadline) {
    if (metrics_) metrics_->rejected.deadline->Increment();
    return absl::DeadlineExceededError("the call's deadline passed before ranking started");
  }

  ThreadState& state = ThisThread();
  RankResult& result = state.result;
  ranker.Score(request, &state.workspace);
  phases.Cpu(Phase::kScore);
  ranker.Build(request, bucket, DetailFor(log_mode), &state.workspace, &result);
  phases.Cpu(Phase::kBuild);
  phases.End(&T::set_rank_us, &ServerMetrics::rank);

  // Logs for the store are handed over unformatted: the consumer only
  // queues them, the writer thread formats and stores them, and the future
  // is not waited on.
  if (log_mode == rank::v1::LOG_MODE_STORE) {
    logstore::RequestLogs logs;
    logs.request_id = std::string(request.request_id);
    logs.renderer = ranker.Renderer(ranker.TakeLogValues(request, bucket, &state.workspace));
    header.set_log_key(logs_->KeyFor(request.request_id));
    logs_->Consume(std::move(logs));
  }
  phases.End(&T::set_log_enqueue_us, &ServerMetrics::log_enqueue);
  if (log_mode == rank::v1::LOG_MODE_STORE) phases.Cpu(Phase::kLogHandoff);

  absl::StatusOr<OwnedBuffer> body = codec.Encode(result);
  if (!body.ok()) {
    // The codec's code goes to the caller as is: a result over a format
    // limit is RESOURCE_EXHAUSTED or INVALID_ARGUMENT there, not INTERNAL.
    return absl::Status(body.status().code(), absl::StrCat("encoding with ", codec.name(), ": ",
                                                           body.status().message()));
  }
  phases.End(&T::set_response_serialize_us, &ServerMetrics::response_serialize);

  header.set_request_id(std::string(request.request_id));
  header.set_codec(std::string(codec.name()));
  header.set_format_version(codec.format_version());
  header.set_item_count(static_cast<uint32_t>(result.size()));
  header.set_log_mode(log_mode);
  header.set_model_version(route.served.model->full_version());
  header.set_experiment_bucket(bucket);
  if (route.served.requests != nullptr) route.served.requests->Increment();
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

absl::StatusOr<EncodedResponse> RankHandler::Handle(const rank::v1::RankRequest& request,
                                                    Clock::time_point started,
                                                    uint32_t deserialize_us,
                                                    Deadline deadline) const {
  std::string storage;
  RequestView view;
  RETURN_IF_ERROR(RequestViewOf(request, options_.limits, &storage, &view));
  return Handle(view, started, deserialize_us, deadline);
}

}  // namespace rankwire
