#include "server/rank_service.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/cpu_sampler.h"
#include "base/status_macros.h"
#include "request/request_validator.h"
#include "rpc/status.h"
#include "spdlog/spdlog.h"

namespace rankwire {
namespace {

// The reactor of one Rank or FetchLogs call. It lives until gRPC reports the call done
// (the response sent, or the call cancelled); then the response bytes stop
// counting as unsent.
class CallReactor final : public grpc::ServerUnaryReactor {
 public:
  CallReactor(AdmissionControl* admission, std::string peer)
      : admission_(admission), peer_(std::move(peer)) {}

  // Before Finish(): these bytes stay in the server until the peer reads them.
  void HoldUnsent(size_t bytes) {
    unsent_ = bytes;
    admission_->AddUnsent(peer_, bytes);
  }
  void OnDone() override {
    if (unsent_ > 0) admission_->RemoveUnsent(peer_, unsent_);
    delete this;
  }
  void OnCancel() override {}
  const std::string& peer() const { return peer_; }

 private:
  AdmissionControl* admission_;
  std::string peer_;
  size_t unsent_ = 0;
};

void CountRejection(ServerMetrics* metrics, AdmissionControl::Refusal refusal) {
  if (metrics == nullptr) return;
  metrics->rpcs_rejected->Increment();
  (refusal == AdmissionControl::Refusal::kOverload ? metrics->rejected.overload
                                                   : metrics->rejected.unsent_bytes)
      ->Increment();
}

// A call not ranked because its deadline had passed (on arrival, or while
// it waited for a worker).
void CountDeadlineRefusal(ServerMetrics* metrics) {
  if (metrics == nullptr) return;
  metrics->rpcs_rejected->Increment();
  metrics->rejected.deadline->Increment();
}

// What a thread keeps for parsing requests, reused call after call: the
// request's slices (references: a small slice's bytes are inside the
// slice object), the bytes flattened when they are in several slices, and
// the view, which points into one or the other until the next call.
struct ParseState {
  std::vector<grpc::Slice> slices;
  std::string flat;
  RequestView view;
};

// The request's bytes in one piece: its one slice, or a copy into `flat`.
absl::string_view Contiguous(const grpc::ByteBuffer& request, ParseState* state) {
  state->slices.clear();
  // A copy of a ByteBuffer shares its slices.
  if (!grpc::ByteBuffer(request).Dump(&state->slices).ok()) return {};
  if (state->slices.size() == 1) {
    const grpc::Slice& s = state->slices[0];
    return absl::string_view(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  state->flat.clear();
  for (const grpc::Slice& s : state->slices) {
    state->flat.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return state->flat;
}

ParseState& ThreadParseState() {
  thread_local ParseState state;
  return state;
}

// A FetchLogs call's outcome in rankwire_fetch_logs_total: refusals
// (RESOURCE_EXHAUSTED) and deadlines passed apart from the caller's
// mistakes and the store's failures.
void CountFetch(ServerMetrics* metrics, const absl::Status& status) {
  if (metrics == nullptr) return;
  Counter* counter = metrics->fetch_logs.failed;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      counter = metrics->fetch_logs.ok;
      break;
    case absl::StatusCode::kInvalidArgument:
      counter = metrics->fetch_logs.invalid_argument;
      break;
    case absl::StatusCode::kDeadlineExceeded:
      counter = metrics->fetch_logs.deadline;
      break;
    case absl::StatusCode::kResourceExhausted:
      counter = metrics->fetch_logs.rejected;
      break;
    default:
      break;
  }
  counter->Increment();
}

// The FetchLogs call against `reader` (validated), as an absl::Status the
// reactor converts once. No try on the store starts after `deadline`.
absl::Status FetchLogs(logstore::LogReader* reader, const rank::v1::FetchLogsRequest& request,
                       absl::Time deadline, rank::v1::FetchLogsResponse* response) {
  std::vector<std::string> ids(request.item_ids().begin(), request.item_ids().end());
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> logs,
                   reader->FetchBefore(request.request_id(), ids, deadline));
  for (size_t i = 0; i < ids.size(); ++i) {
    rank::v1::ItemLogEntry* entry = response->add_logs();
    entry->set_item_id(ids[i]);
    if (logs[i].has_value()) {
      entry->set_found(true);
      entry->set_log(*std::move(logs[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

grpc::ServerUnaryReactor* RankServiceImpl::Rank(grpc::CallbackServerContext* context,
                                                const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) {
  std::string peer = context->peer();
  auto* reactor = new CallReactor(admission_, peer);
  // A client's retry of an attempt that failed with UNAVAILABLE (counted on
  // arrival, admitted or not).
  if (metrics_ && context->client_metadata().count("grpc-previous-rpc-attempts") > 0) {
    metrics_->rpcs_retried->Increment();
  }
  const auto deadline = context->deadline();
  if (std::chrono::system_clock::now() >= deadline) {
    CountDeadlineRefusal(metrics_);
    reactor->Finish(ToGrpcStatus(
        absl::DeadlineExceededError("the call's deadline passed before the server received it")));
    return reactor;
  }
  std::optional<AdmissionControl::Slot> slot;
  AdmissionControl::Refusal refusal;
  absl::Status admitted = admission_->Admit(peer, &slot, &refusal);
  if (!admitted.ok()) {
    CountRejection(metrics_, refusal);
    reactor->Finish(ToGrpcStatus(admitted));
    return reactor;
  }
  // std::function needs a copyable callable; the slot moves through a
  // shared_ptr.
  auto held = std::make_shared<AdmissionControl::Slot>(*std::move(slot));
  const auto admitted_at = RankHandler::Clock::now();
  // On this thread while a ranking slot is free (no hand-off), else queued.
  workers_->RunOrSubmit([this, reactor, deadline, request, response, held, admitted_at] {
    Serve(reactor, admitted_at, deadline, request, response, std::move(*held));
  });
  return reactor;
}

// The ranking slot (last parameter) is held until the call is finished: it
// is released just before Finish(), so the call's clean-up after it (freeing
// the request and result) does not hold it.
void RankServiceImpl::Serve(grpc::ServerUnaryReactor* base_reactor,
                            RankHandler::Clock::time_point admitted_at,
                            std::chrono::system_clock::time_point deadline,
                            const grpc::ByteBuffer* request, grpc::ByteBuffer* response,
                            AdmissionControl::Slot slot) {
  auto* reactor = static_cast<CallReactor*>(base_reactor);
  const auto started = RankHandler::Clock::now();
  // Time spent admitted but queued behind busy workers: reported on its
  // own, so the phases below stay the work of this call.
  const auto queue_us = static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(started - admitted_at).count());
  if (metrics_) metrics_->queue->Observe(queue_us * 1e-6);
  // Every way out frees the slot first.
  auto finish = [&slot, reactor](const absl::Status& status) {
    slot.Release();
    reactor->Finish(ToGrpcStatus(status));
  };
  // A call whose caller gave up while it waited is not even parsed.
  if (std::chrono::system_clock::now() >= deadline) {
    CountDeadlineRefusal(metrics_);
    finish(absl::DeadlineExceededError(
        "the call's deadline passed while it waited for a ranking worker"));
    return;
  }
  // Counts the call as in flight until it has been finished.
  struct InFlight {
    explicit InFlight(ServerMetrics* m) : metrics(m) {
      if (metrics) metrics->in_flight.fetch_add(1, std::memory_order_relaxed);
    }
    ~InFlight() {
      if (metrics) metrics->in_flight.fetch_sub(1, std::memory_order_relaxed);
    }
    ServerMetrics* metrics;
  } in_flight(metrics_);

  // Read in one pass into this thread's view (no object per candidate, no
  // string copies). The request's slices live until the call is finished.
  CpuSampler cpu(metrics_ ? metrics_->cpu_sample_every : 0);
  cpu.Start();
  ParseState& state = ThreadParseState();
  RequestView& parsed = state.view;
  if (absl::Status s = ParseRequestView(Contiguous(*request, &state), handler_->limits(), &parsed);
      !s.ok()) {
    if (metrics_) metrics_->rpcs_invalid_argument->Increment();
    finish(s);
    return;
  }
  if (cpu.sampling()) metrics_->RecordPhaseCpu(Phase::kParse, cpu.Lap());
  const auto parsed_at = RankHandler::Clock::now();
  const auto deserialize_us = static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(parsed_at - started).count());

  absl::StatusOr<EncodedResponse> encoded =
      handler_->Handle(parsed, started, deserialize_us, deadline, &cpu);
  if (!encoded.ok()) {
    const absl::StatusCode code = encoded.status().code();
    const bool refused = code == absl::StatusCode::kInvalidArgument ||
                         code == absl::StatusCode::kResourceExhausted ||
                         code == absl::StatusCode::kDeadlineExceeded;
    if (metrics_) {
      (code == absl::StatusCode::kInvalidArgument ? metrics_->rpcs_invalid_argument
       : refused                                  ? metrics_->rpcs_rejected
                                                  : metrics_->rpcs_failed)
          ->Increment();
    }
    // Refusals are the caller's doing and are counted, not logged.
    if (!refused) spdlog::error("Rank failed: {}", encoded.status().ToString());
    finish(encoded.status());
    return;
  }
  encoded->header.mutable_timings()->set_queue_us(queue_us);
  *response = ToByteBuffer(*encoded);
  if (cpu.sampling()) metrics_->RecordPhaseCpu(Phase::kEncode, cpu.Lap());
  if (metrics_) metrics_->rpcs_ok->Increment();
  reactor->HoldUnsent(response->Length());
  finish(absl::OkStatus());
}

grpc::ServerUnaryReactor* LogServiceImpl::FetchLogs(grpc::CallbackServerContext* context,
                                                    const rank::v1::FetchLogsRequest* request,
                                                    rank::v1::FetchLogsResponse* response) {
  auto* reactor = new CallReactor(admission_, context->peer());
  // On gRPC's thread: only checks that cost nothing and never wait.
  auto refuse = [&](const absl::Status& status) {
    CountFetch(metrics_, status);
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  };
  if (reader_ == nullptr) {
    return refuse(absl::FailedPreconditionError("this server keeps no logs (--log_mode=none)"));
  }
  if (absl::Status valid = ValidateFetchLogsRequest(*request, RequestLimits()); !valid.ok()) {
    return refuse(valid);
  }
  const auto deadline = context->deadline();
  if (std::chrono::system_clock::now() >= deadline) {
    return refuse(
        absl::DeadlineExceededError("the call's deadline passed before the server received it"));
  }
  if (absl::Status unsent = admission_->CheckUnsent(reactor->peer()); !unsent.ok()) {
    return refuse(unsent);
  }
  if (in_flight_.fetch_add(1, std::memory_order_acq_rel) >= max_concurrent_) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    return refuse(absl::ResourceExhaustedError(
        absl::StrCat("the server is serving its maximum of ", max_concurrent_,
                     " FetchLogs calls (--max_concurrent_fetch_logs); retry after a backoff")));
  }
  workers_->Submit([this, reactor, deadline, request, response] {
    Serve(reactor, deadline, request, response);
  });
  return reactor;
}

// On the fetch pool: the store's wait (up to its I/O timeouts) holds one of
// these threads, never one of gRPC's, so a slow store delays log reads only.
void LogServiceImpl::Serve(grpc::ServerUnaryReactor* base_reactor,
                           std::chrono::system_clock::time_point deadline,
                           const rank::v1::FetchLogsRequest* request,
                           rank::v1::FetchLogsResponse* response) {
  auto* reactor = static_cast<CallReactor*>(base_reactor);
  absl::Status status;
  if (std::chrono::system_clock::now() >= deadline) {
    status = absl::DeadlineExceededError(
        "the call's deadline passed while it waited for a log fetch worker");
  } else {
    status = rankwire::FetchLogs(reader_, *request, absl::FromChrono(deadline), response);
  }
  CountFetch(metrics_, status);
  if (status.ok()) reactor->HoldUnsent(response->ByteSizeLong());
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  reactor->Finish(ToGrpcStatus(status));
}

}  // namespace rankwire
