#include "server/rank_service.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rpc/status.h"
#include "spdlog/spdlog.h"

namespace rankwire::server {
namespace {

constexpr size_t kMaxFetchItems = 1000;

// The FetchLogs call against `reader`, as an absl::Status the reactor
// converts once.
absl::Status FetchLogs(logstore::LogReader* reader, const rank::v1::FetchLogsRequest& request,
                       rank::v1::FetchLogsResponse* response) {
  if (reader == nullptr) {
    return absl::FailedPreconditionError("this server keeps no logs (--log_mode=none)");
  }
  if (request.request_id().empty()) {
    return absl::InvalidArgumentError("request_id is empty");
  }
  if (static_cast<size_t>(request.item_ids_size()) > kMaxFetchItems) {
    return absl::InvalidArgumentError(absl::StrCat(
        request.item_ids_size(), " item ids exceed the limit of ", kMaxFetchItems));
  }
  std::vector<std::string> ids(request.item_ids().begin(), request.item_ids().end());
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> logs,
                   reader->Fetch(request.request_id(), ids));
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
    reactor->Finish(
        ToGrpcStatus(absl::InvalidArgumentError("request is not a valid rank.v1.RankRequest")));
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
  *response = ToByteBuffer(*encoded);
  if (metrics_) metrics_->rpcs_ok->Increment();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* LogServiceImpl::FetchLogs(
    grpc::CallbackServerContext* context, const rank::v1::FetchLogsRequest* request,
    rank::v1::FetchLogsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(server::FetchLogs(reader_, *request, response)));
  return reactor;
}

}  // namespace rankwire::server
