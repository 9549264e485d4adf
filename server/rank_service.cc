#include "server/rank_service.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include "absl/strings/str_cat.h"
#include "server/status_util.h"
#include "spdlog/spdlog.h"

namespace rankwire::server {
namespace {

constexpr size_t kMaxFetchItems = 1000;

}  // namespace

grpc::ServerUnaryReactor* RankServiceImpl::Rank(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const auto started = RankHandler::Clock::now();
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
  if (metrics_ && context->client_metadata().count("grpc-previous-rpc-attempts") > 0) {
    metrics_->rpcs_retried->Increment();
  }

  // A copy of a ByteBuffer shares its slices; parsing consumes the copy.
  grpc::ByteBuffer input(*request);
  // Shared: with logs in the store, the log writer formats from it later.
  auto parsed = std::make_shared<rank::v1::RankRequest>();
  grpc::Status parse = grpc::SerializationTraits<rank::v1::RankRequest>::Deserialize(
      &input, parsed.get());
  const auto parsed_at = RankHandler::Clock::now();
  if (!parse.ok()) {
    if (metrics_) metrics_->rpcs_invalid_argument->Increment();
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "request is not a valid rank.v1.RankRequest"));
    return reactor;
  }
  const auto deserialize_us = static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(parsed_at - started).count());

  absl::StatusOr<EncodedResponse> encoded =
      handler_->Handle(std::move(parsed), started, deserialize_us);
  if (!encoded.ok()) {
    if (metrics_) {
      (encoded.status().code() == absl::StatusCode::kInvalidArgument
           ? metrics_->rpcs_invalid_argument
           : metrics_->rpcs_failed)
          ->Increment();
    }
    if (encoded.status().code() != absl::StatusCode::kInvalidArgument) {
      spdlog::error("Rank {} failed: {}", parsed->request_id(),
                    encoded.status().ToString());
    }
    reactor->Finish(ToGrpcStatus(encoded.status()));
    return reactor;
  }
  bool own = false;
  grpc::Status written =
      grpc::SerializationTraits<EncodedResponse>::Serialize(*encoded, response, &own);
  if (metrics_) (written.ok() ? metrics_->rpcs_ok : metrics_->rpcs_failed)->Increment();
  reactor->Finish(written);
  return reactor;
}

grpc::ServerUnaryReactor* LogServiceImpl::FetchLogs(
    grpc::CallbackServerContext* context, const rank::v1::FetchLogsRequest* request,
    rank::v1::FetchLogsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (reader_ == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                 "this server keeps no logs (--log_mode=none)"));
    return reactor;
  }
  if (request->request_id().empty()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "request_id is empty"));
    return reactor;
  }
  if (static_cast<size_t>(request->item_ids_size()) > kMaxFetchItems) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat(request->item_ids_size(), " item ids exceed the limit of ",
                     kMaxFetchItems)));
    return reactor;
  }
  std::vector<std::string> ids(request->item_ids().begin(), request->item_ids().end());
  auto logs = reader_->Fetch(request->request_id(), ids);
  if (!logs.ok()) {
    reactor->Finish(ToGrpcStatus(logs.status()));
    return reactor;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    rank::v1::ItemLogEntry* entry = response->add_logs();
    entry->set_item_id(ids[i]);
    if ((*logs)[i].has_value()) {
      entry->set_found(true);
      entry->set_log(*std::move((*logs)[i]));
    }
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace rankwire::server
