// RankClient calls rank.v1.RankService.Rank and returns a RankReply: the
// response header and a lazy ResultView over the body. Nothing beyond the
// small header is decoded until the caller reads it, so showing the top ten
// of five hundred items decodes ten (with the custom codecs; the protobuf
// baseline has to parse its whole message when the view is opened).
//
// Example:
//   RankClient client(MakeChannel("ipv4:10.0.0.1:50051,10.0.0.2:50051"), &codecs);
//   request.add_accept_codecs("rankbin");
//   absl::StatusOr<RankReply> reply = client.Rank(request, {});
//   for (const ItemRef& item : *reply->view().TopN(10)) { ... item.score() ... }
//
// Thread safety: RankClient is thread-safe. A RankReply is a value owned by
// the caller; its view may be read from many threads.
#ifndef RANKWIRE_CLIENT_RANK_CLIENT_H_
#define RANKWIRE_CLIENT_RANK_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "codec/buffer.h"
#include "codec/codec.h"
#include "codec/registry.h"
#include "rank/v1/rank.grpc.pb.h"
#include "rank/v1/rank.pb.h"
#include "rpc/transport_args.h"

namespace rankwire::client {

struct CallOptions {
  absl::Duration deadline = absl::Seconds(5);
};

// Client-side phase costs of one call, in microseconds.
struct ClientTimings {
  uint32_t request_serialize_us = 0;
  uint32_t call_us = 0;      // Send to full response received.
  uint32_t envelope_us = 0;  // Response bytes made contiguous + header parsed.
  uint32_t open_us = 0;      // Codec Open() (a full parse for protobuf).
};

// Where a call went: the replica that answered ("ipv4:10.0.0.7:50051").
// gRPC reports the peer of the call's first attempt, so a call the retry
// policy re-sent elsewhere names the replica that failed it (the server
// counts retried calls: rankwire_rank_rpcs_retried_total).
struct CallInfo {
  std::string peer;
};

class RankReply {
 public:
  // `response` is the whole RankResponse as received; `body` the codec's
  // bytes inside it.
  RankReply(rank::v1::ResponseHeader header, std::unique_ptr<ResultView> view, SharedBytes response,
            SharedBytes body, ClientTimings timings, CallInfo call = {})
      : header_(std::move(header)),
        view_(std::move(view)),
        response_(std::move(response)),
        body_(std::move(body)),
        timings_(timings),
        call_(std::move(call)) {}

  const rank::v1::ResponseHeader& header() const { return header_; }
  const ResultView& view() const { return *view_; }
  // The RankResponse message's bytes (gRPC framing not included), e.g. to
  // save a response as a serialized rank.v1.RankResponse.
  absl::string_view response() const { return response_.view(); }
  size_t response_bytes() const { return response_.size(); }
  // The codec's body inside it (a RankResult message, or a custom codec's
  // payload): what two calls with the same request and codec answer alike.
  absl::string_view body() const { return body_.view(); }
  size_t body_bytes() const { return body_.size(); }
  const ClientTimings& timings() const { return timings_; }
  const CallInfo& call() const { return call_; }

 private:
  rank::v1::ResponseHeader header_;
  std::unique_ptr<ResultView> view_;
  SharedBytes response_;
  SharedBytes body_;
  ClientTimings timings_;
  CallInfo call_;
};

struct ItemLogResult {
  std::string item_id;
  std::optional<std::string> log;  // nullopt: not in the store (expired or dropped).
};

// How MakeChannel builds a channel. The defaults are what central-control
// should use against a fleet: round_robin over every address the target
// resolves to (one HTTP/2 connection per replica, not one per caller), a
// retry of UNAVAILABLE on the idempotent Rank and FetchLogs, and
// client-side health checking, so a replica that says NOT_SERVING (a
// draining pod) gets no new calls.
struct ChannelOptions {
  // Transport security. Insecure by default; TLS credentials go here.
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  // The name checked against the server's certificate instead of the
  // target's host (client/tls.h ClientSecurity::server_name); empty: none.
  std::string ssl_target_name;
  int max_message_bytes = 64 << 20;

  // The service config. Non-empty: used as is (JSON, as in gRPC's
  // service_config.md). Empty: built by ServiceConfigJson() from the fields
  // below.
  std::string service_config;
  // "round_robin" or "pick_first".
  std::string lb_policy = "round_robin";
  // Attempts per call when an attempt fails with UNAVAILABLE (1: no retry).
  // gRPC caps this at 5.
  int max_attempts = 4;
  // Health service name the channel watches on every replica (empty: no
  // client-side health checking). Needs round_robin: pick_first ignores it.
  std::string health_service = "rank.v1.RankService";
  // How much of one call's request gRPC keeps to be able to retry it; a
  // larger request is sent once (gRPC's default of 256 KiB is below a
  // 1000-candidate request).
  int retry_buffer_bytes = 4 << 20;
  // Longest wait between reconnection attempts to a replica that went away.
  // gRPC's default (120 s) leaves a replica restarted on the same address
  // (a crashed container in its pod) without traffic for minutes.
  int max_reconnect_backoff_ms = 2000;
  // HTTP/2 and TCP arguments (rpc/transport_args.h): the client's window
  // and frame size are what the server's responses are sent within.
  rpc::TransportArgs transport_args = rpc::DefaultTransportArgs();
};

// The service config JSON for `options` (options.service_config if set).
std::string ServiceConfigJson(const ChannelOptions& options);

// A channel to `target`: "host:port", "dns:///name:port" (every A record is a
// replica) or "ipv4:a:p,b:p,..." (a fixed list of replicas).
// InvalidArgument for a bad lb_policy, max_attempts or service config.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ChannelOptions& options);
// The same with default options; a default channel cannot fail to build.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target);

// grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class HealthStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };
absl::string_view HealthStatusName(HealthStatus status);

// grpc.health.v1.Health/Check of `service` ("" is the whole server). The
// call's gRPC status if it fails (NotFound: the server has no such service).
// Use a channel without client-side health checking (health_service = "")
// to ask a replica that is draining: a health-checked channel sends it no
// calls at all.
absl::StatusOr<HealthStatus> CheckHealth(grpc::Channel* channel, const std::string& service,
                                         const CallOptions& options);

class RankClient {
 public:
  // `codecs` is not owned and must outlive the client.
  RankClient(std::shared_ptr<grpc::Channel> channel, const CodecRegistry* codecs);

  // The gRPC status of a failed call becomes the returned status (same code
  // and message). FailedPrecondition if the server answers with a codec this
  // client does not have; DataLoss for a malformed response.
  absl::StatusOr<RankReply> Rank(const rank::v1::RankRequest& request,
                                 const CallOptions& options) const;
  // The same for a request serialized once (a serialized rank.v1.RankRequest)
  // and sent many times, as a load generator does: the client then spends no
  // CPU per call on the request. `serialize_us` is reported in the timings.
  absl::StatusOr<RankReply> RankSerialized(const grpc::ByteBuffer& request,
                                           const CallOptions& options,
                                           uint32_t serialize_us = 0) const;

  // Logs of `item_ids` of a ranked request, through the server's
  // rank.v1.LogService (works with any server log store).
  absl::StatusOr<std::vector<ItemLogResult>> FetchLogs(const std::string& request_id,
                                                       const std::vector<std::string>& item_ids,
                                                       const CallOptions& options) const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  const CodecRegistry* codecs_;
  std::unique_ptr<grpc::GenericStub> generic_;
  std::unique_ptr<rank::v1::LogService::Stub> logs_;
};

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_RANK_CLIENT_H_
