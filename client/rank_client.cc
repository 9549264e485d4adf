#include "client/rank_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <chrono>

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

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target,
                                           int max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

RankClient::RankClient(std::shared_ptr<grpc::Channel> channel,
                       const CodecRegistry* codecs)
    : channel_(std::move(channel)),
      codecs_(codecs),
      generic_(std::make_unique<grpc::GenericStub>(channel_)),
      logs_(rank::v1::LogService::NewStub(channel_)) {}

absl::StatusOr<RankReply> RankClient::Rank(const rank::v1::RankRequest& request,
                                           const CallOptions& options) const {
  ClientTimings timings;
  const Clock::time_point t0 = Clock::now();
  grpc::ByteBuffer request_bytes;
  bool own = false;
  RETURN_IF_ERROR(FromGrpcStatus(grpc::SerializationTraits<rank::v1::RankRequest>::Serialize(
      request, &request_bytes, &own)));
  const Clock::time_point t1 = Clock::now();
  timings.request_serialize_us = Micros(t0, t1);

  grpc::ClientContext context;
  SetDeadline(&context, options);
  grpc::ByteBuffer response_bytes;
  grpc::Status call_status;
  absl::Notification done;
  generic_->UnaryCall(&context, kRankMethod, grpc::StubOptions(), &request_bytes,
                      &response_bytes, [&](grpc::Status s) {
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
    return absl::FailedPreconditionError(absl::StrCat(
        "server answered with codec \"", codec_name, "\" which this client does not have"));
  }
  if (codec->body_kind() != envelope.body_kind) {
    return absl::DataLossError(absl::StrCat("codec \"", codec_name,
                                            "\" body arrived in the wrong envelope field"));
  }
  const size_t body_bytes = envelope.body.size();
  ASSIGN_OR_RETURN(std::unique_ptr<ResultView> view, codec->Open(envelope.body));
  // A protobuf body cut at a field boundary still parses; the header's
  // count is what tells.
  if (view->size() != envelope.header.item_count()) {
    return absl::DataLossError(absl::StrCat("the response header announces ",
                                            envelope.header.item_count(),
                                            " items, the body holds ", view->size()));
  }
  timings.open_us = Micros(t3, Clock::now());
  return RankReply(std::move(envelope.header), std::move(view), bytes.size(), body_bytes,
                   timings);
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
