#include "server/rank_handler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rankwire::server {
namespace {

using Clock = RankHandler::Clock;

uint32_t MicrosSince(Clock::time_point from, Clock::time_point to) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
}

void Record(Histogram* h, uint32_t micros) {
  if (h != nullptr) h->Observe(micros * 1e-6);
}

}  // namespace

RankHandler::RankHandler(const Ranker* ranker, const CodecRegistry* codecs,
                         logstore::LogConsumer* logs, ServerMetrics* metrics,
                         RankHandlerOptions options)
    : ranker_(ranker),
      codecs_(codecs),
      logs_(logs),
      metrics_(metrics),
      options_(std::move(options)),
      budget_(options_.max_response_bytes, options_.rankbin_block_items) {
  for (const LinearModel::Atom& atom : ranker_->model().atoms()) {
    if (atom.source == LinearModel::Source::kItem) known_item_features_.insert(atom.name);
  }
}

absl::Status RankHandler::Admit(const rank::v1::RankRequest& request, const Codec& codec,
                                rank::v1::LogMode log_mode,
                                rank::v1::ResponseHeader* header) const {
  std::vector<std::string> unknown = UnknownItemFeatures(request, known_item_features_);
  if (!unknown.empty()) {
    if (options_.unknown_features == UnknownFeaturePolicy::kReject) {
      return absl::InvalidArgumentError(absl::StrCat(
          "item_feature_names the model ", ranker_->model().full_version(),
          " does not know: ", absl::StrJoin(unknown, ", "),
          " (the server runs with --unknown_features=reject)"));
    }
    for (std::string& name : unknown) {
      if (metrics_) metrics_->unknown_item_features->Increment(name);
      header->add_unknown_item_features(std::move(name));
    }
  }
  absl::Status budget = budget_.Check(request, ranker_->Shape(request), codec, log_mode,
                                      *codecs_);
  if (!budget.ok() && metrics_) metrics_->rejected.response_budget->Increment();
  return budget;
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
    uint32_t deserialize_us, Deadline deadline) const {
  const rank::v1::RankRequest& request = *shared_request;
  EncodedResponse response;
  rank::v1::ServerTimings* timings = response.header.mutable_timings();
  timings->set_request_deserialize_us(deserialize_us);
  if (metrics_) Record(metrics_->request_deserialize, deserialize_us);

  // Validation, unknown features and the response budget count as
  // "validate": everything decided before any ranking work.
  Clock::time_point t0 = Clock::now();
  const rank::v1::LogMode log_mode = EffectiveLogMode(request);
  const Codec& codec =
      codecs_->Negotiate(request.accept_codecs(), *options_.default_codec);
  absl::Status admitted = ValidateRequest(request, options_.limits);
  if (admitted.ok()) admitted = Admit(request, codec, log_mode, &response.header);
  Clock::time_point t1 = Clock::now();
  timings->set_validate_us(MicrosSince(t0, t1));
  if (metrics_) Record(metrics_->validate, timings->validate_us());
  if (!admitted.ok()) return admitted;
  // A caller that has given up gets nothing ranked for it.
  if (std::chrono::system_clock::now() >= deadline) {
    if (metrics_) metrics_->rejected.deadline->Increment();
    return absl::DeadlineExceededError("the call's deadline passed before ranking started");
  }

  const LogDetail detail = log_mode == rank::v1::LOG_MODE_INLINE  ? LogDetail::kInline
                           : log_mode == rank::v1::LOG_MODE_STORE ? LogDetail::kDeferred
                                                                  : LogDetail::kNone;
  RankOutput ranked = ranker_->Rank(shared_request, detail);
  RankResult& result = ranked.result;
  Clock::time_point t2 = Clock::now();
  timings->set_rank_us(MicrosSince(t1, t2));
  if (metrics_) Record(metrics_->rank, timings->rank_us());

  // Logs for the store are handed over unformatted: the consumer only
  // queues them, the writer thread formats and stores them, and the future
  // is not waited on.
  if (log_mode == rank::v1::LOG_MODE_STORE) {
    logstore::RequestLogs logs;
    logs.request_id = request.request_id();
    logs.renderer = std::move(ranked.logs);
    response.header.set_log_key(logs_->KeyFor(request.request_id()));
    logs_->Consume(std::move(logs));
  }
  Clock::time_point t3 = Clock::now();
  timings->set_log_enqueue_us(MicrosSince(t2, t3));
  if (metrics_) Record(metrics_->log_enqueue, timings->log_enqueue_us());

  absl::StatusOr<OwnedBuffer> body = codec.Encode(result, EncodeOptions{request.top_n()});
  if (!body.ok()) {
    return absl::InternalError(absl::StrCat("encoding with ", codec.name(),
                                            " failed: ", body.status().message()));
  }
  Clock::time_point t4 = Clock::now();
  timings->set_response_serialize_us(MicrosSince(t3, t4));
  if (metrics_) Record(metrics_->response_serialize, timings->response_serialize_us());

  rank::v1::ResponseHeader& header = response.header;
  header.set_request_id(request.request_id());
  header.set_codec(std::string(codec.name()));
  header.set_format_version(codec.format_version());
  header.set_item_count(static_cast<uint32_t>(result.items.size()));
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
  timings->set_total_us(MicrosSince(started, Clock::now()));
  if (metrics_) Record(metrics_->total, timings->total_us());
  return response;
}

}  // namespace rankwire::server
