#include "client/rank_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <grpcpp/support/validate_service_config.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/status_macros.h"
#include "codec/envelope.h"
#include "rpc/status.h"

namespace rankwire::client {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kRankMethod[] = "/rank.v1.RankService/Rank";

uint32_t Micros(Clock::time_point a, Clock::time_point b) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(b - a).count());
}

void SetDeadline(grpc::ClientContext* context, const CallOptions& options) {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMicroseconds(options.deadline));
}

// The received message as one contiguous view. gRPC usually delivers a
// large message as several slices; then they are joined once here.
SharedBytes Contiguous(grpc::ByteBuffer* buffer) {
  auto slice = std::make_shared<grpc::Slice>();
  if (!buffer->TrySingleSlice(slice.get()).ok()) {
    buffer->DumpToSingleSlice(slice.get());
  }
  absl::string_view bytes(reinterpret_cast<const char*>(slice->begin()), slice->size());
  return SharedBytes(std::move(slice), bytes);
}

CallInfo CallInfoOf(const grpc::ClientContext& context) {
  CallInfo info;
  info.peer = context.peer();
  return info;
}

}  // namespace

std::string ServiceConfigJson(const ChannelOptions& options) {
  if (!options.service_config.empty()) return options.service_config;
  std::string json = absl::StrCat(R"({"loadBalancingConfig":[{")", options.lb_policy, R"(":{}}])");
  if (options.max_attempts > 1) {
    // Both methods are idempotent: a Rank retried elsewhere ranks the same
    // candidates again. Only UNAVAILABLE (the replica went away or is
    // unreachable): RESOURCE_EXHAUSTED is the server shedding load, and
    // retrying it would add the load it sheds.
    absl::StrAppend(&json, R"(,"methodConfig":[{"name":[)",
                    R"({"service":"rank.v1.RankService","method":"Rank"},)",
                    R"({"service":"rank.v1.LogService","method":"FetchLogs"}],)",
                    R"("retryPolicy":{"maxAttempts":)", options.max_attempts,
                    R"(,"initialBackoff":"0.005s","maxBackoff":"0.1s",)",
                    R"("backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}])");
  }
  if (!options.health_service.empty()) {
    absl::StrAppend(&json, R"(,"healthCheckConfig":{"serviceName":")", options.health_service,
                    R"("})");
  }
  json += "}";
  return json;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ChannelOptions& options) {
  if (options.service_config.empty()) {
    if (options.lb_policy != "round_robin" && options.lb_policy != "pick_first") {
      return absl::InvalidArgumentError(absl::StrCat("lb policy \"", options.lb_policy,
                                                     "\": expected round_robin or pick_first"));
    }
    if (options.max_attempts < 1 || options.max_attempts > 5) {
      return absl::InvalidArgumentError(
          absl::StrCat("max attempts ", options.max_attempts, ": expected 1 to 5 (gRPC's limit)"));
    }
    if (absl::StrContains(options.health_service, '"') ||
        absl::StrContains(options.health_service, '\\')) {
      return absl::InvalidArgumentError("health service name holds a quote or backslash");
    }
  }
  if (options.credentials == nullptr) {
    return absl::InvalidArgumentError("channel options carry no credentials");
  }
  const std::string config = ServiceConfigJson(options);
  if (std::string error = grpc::experimental::ValidateServiceConfigJSON(config); !error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("service config: ", error));
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (!options.ssl_target_name.empty()) args.SetSslTargetNameOverride(options.ssl_target_name);
  // The default config; a config published by the resolver (DNS TXT) would
  // override it, and we do not want a DNS record to change client behaviour.
  args.SetServiceConfigJSON(config);
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
  args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, options.retry_buffer_bytes);
  rpc::ApplyTransportArgs(options.transport_args, &args);
  if (options.max_reconnect_backoff_ms > 0) {
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                std::min(1000, options.max_reconnect_backoff_ms));
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, options.max_reconnect_backoff_ms);
  }
  return grpc::CreateCustomChannel(target, options.credentials, args);
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(target, ChannelOptions{});
  // The defaults are valid by construction (the unit test checks them).
  return *std::move(channel);
}

absl::string_view HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kServing:
      return "SERVING";
    case HealthStatus::kNotServing:
      return "NOT_SERVING";
    case HealthStatus::kServiceUnknown:
      return "SERVICE_UNKNOWN";
    case HealthStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

absl::StatusOr<HealthStatus> CheckHealth(grpc::Channel* channel, const std::string& service,
                                         const CallOptions& options) {
  // The two health messages are one field each, so they are written and
  // read here rather than compiled from health.proto: HealthCheckRequest is
  // {1: string service}, HealthCheckResponse is {1: enum status}.
  if (service.size() > 1024) return absl::InvalidArgumentError("health service name too long");
  std::string request;
  if (!service.empty()) {
    request.push_back(0x0a);  // Field 1, length-delimited.
    uint32_t n = service.size();
    while (n >= 0x80) {
      request.push_back(static_cast<char>((n & 0x7f) | 0x80));
      n >>= 7;
    }
    request.push_back(static_cast<char>(n));
    request += service;
  }
  grpc::Slice slice(request);
  grpc::ByteBuffer request_bytes(&slice, 1);
  grpc::ByteBuffer response_bytes;
  grpc::ClientContext context;
  SetDeadline(&context, options);
  grpc::GenericStub stub(channel->shared_from_this());
  grpc::Status call_status;
  absl::Notification done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request_bytes,
                 &response_bytes, [&](grpc::Status s) {
                   call_status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  RETURN_IF_ERROR(FromGrpcStatus(call_status));
  SharedBytes bytes = Contiguous(&response_bytes);
  absl::string_view in = bytes.view();
  // An empty message is status 0 (UNKNOWN); otherwise expect field 1 varint.
  if (in.empty()) return HealthStatus::kUnknown;
  if (in.size() != 2 || in[0] != 0x08 || static_cast<uint8_t>(in[1]) > 3) {
    return absl::DataLossError("malformed HealthCheckResponse");
  }
  return static_cast<HealthStatus>(in[1]);
}

RankClient::RankClient(std::shared_ptr<grpc::Channel> channel, const CodecRegistry* codecs)
    : channel_(std::move(channel)),
      codecs_(codecs),
      generic_(std::make_unique<grpc::GenericStub>(channel_)),
      logs_(rank::v1::LogService::NewStub(channel_)) {}

absl::StatusOr<RankReply> RankClient::Rank(const rank::v1::RankRequest& request,
                                           const CallOptions& options) const {
  const Clock::time_point t0 = Clock::now();
  grpc::ByteBuffer request_bytes;
  bool own = false;
  RETURN_IF_ERROR(FromGrpcStatus(
      grpc::SerializationTraits<rank::v1::RankRequest>::Serialize(request, &request_bytes, &own)));
  return RankSerialized(request_bytes, options, Micros(t0, Clock::now()));
}

absl::StatusOr<RankReply> RankClient::RankSerialized(const grpc::ByteBuffer& request,
                                                     const CallOptions& options,
                                                     uint32_t serialize_us) const {
  ClientTimings timings;
  timings.request_serialize_us = serialize_us;
  const Clock::time_point t1 = Clock::now();
  // A copy shares the slices: the caller's buffer stays whole for its next call.
  grpc::ByteBuffer request_bytes(request);

  grpc::ClientContext context;
  SetDeadline(&context, options);
  grpc::ByteBuffer response_bytes;
  grpc::Status call_status;
  absl::Notification done;
  generic_->UnaryCall(&context, kRankMethod, grpc::StubOptions(), &request_bytes, &response_bytes,
                      [&](grpc::Status s) {
                        call_status = std::move(s);
                        done.Notify();
                      });
  done.WaitForNotification();
  const Clock::time_point t2 = Clock::now();
  timings.call_us = Micros(t1, t2);
  RETURN_IF_ERROR(FromGrpcStatus(call_status));

  SharedBytes bytes = Contiguous(&response_bytes);
  ASSIGN_OR_RETURN(Envelope envelope, ParseEnvelope(bytes));
  const Clock::time_point t3 = Clock::now();
  timings.envelope_us = Micros(t2, t3);
  if (!envelope.has_body) {
    return absl::DataLossError("response carries no body");
  }
  const std::string& codec_name = envelope.header.codec();
  const Codec* codec = codecs_->Find(codec_name);
  if (codec == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("server answered with codec \"", codec_name,
                                                      "\" which this client does not have"));
  }
  if (codec->body_kind() != envelope.body_kind) {
    return absl::DataLossError(
        absl::StrCat("codec \"", codec_name, "\" body arrived in the wrong envelope field"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ResultView> view, codec->Open(envelope.body));
  // A protobuf body cut at a field boundary still parses; the header's
  // count is what tells.
  if (view->size() != envelope.header.item_count()) {
    return absl::DataLossError(absl::StrCat("the response header announces ",
                                            envelope.header.item_count(), " items, the body holds ",
                                            view->size()));
  }
  timings.open_us = Micros(t3, Clock::now());
  return RankReply(std::move(envelope.header), std::move(view), std::move(bytes),
                   std::move(envelope.body), timings, CallInfoOf(context));
}

absl::StatusOr<std::vector<ItemLogResult>> RankClient::FetchLogs(
    const std::string& request_id, const std::vector<std::string>& item_ids,
    const CallOptions& options) const {
  rank::v1::FetchLogsRequest request;
  request.set_request_id(request_id);
  for (const std::string& id : item_ids) request.add_item_ids(id);
  rank::v1::FetchLogsResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, options);
  RETURN_IF_ERROR(FromGrpcStatus(logs_->FetchLogs(&context, request, &response)));
  std::vector<ItemLogResult> out;
  out.reserve(response.logs_size());
  for (const rank::v1::ItemLogEntry& e : response.logs()) {
    ItemLogResult r{e.item_id(), std::nullopt};
    if (e.found()) r.log = e.log();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace rankwire::client
