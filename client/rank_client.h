// RankClient calls rank.v1.RankService.Rank and returns a RankReply: the
// response header and a lazy ResultView over the body. Nothing beyond the
// small header is decoded until the caller reads it, so showing the top ten
// of five hundred items decodes ten (with the custom codecs; the protobuf
// baseline has to parse its whole message when the view is opened).
//
// Example:
//   RankClient client(MakeChannel("localhost:50051"), &codecs);
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

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/tls.h"
#include "codec/codec.h"
#include "codec/registry.h"
#include "rank/v1/rank.grpc.pb.h"
#include "rank/v1/rank.pb.h"

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

class RankReply {
 public:
  RankReply(rank::v1::ResponseHeader header, std::unique_ptr<ResultView> view,
            size_t response_bytes, size_t body_bytes, ClientTimings timings)
      : header_(std::move(header)),
        view_(std::move(view)),
        response_bytes_(response_bytes),
        body_bytes_(body_bytes),
        timings_(timings) {}

  const rank::v1::ResponseHeader& header() const { return header_; }
  const ResultView& view() const { return *view_; }
  // Size of the RankResponse message (gRPC framing not included).
  size_t response_bytes() const { return response_bytes_; }
  // Size of the codec's body inside it.
  size_t body_bytes() const { return body_bytes_; }
  const ClientTimings& timings() const { return timings_; }

 private:
  rank::v1::ResponseHeader header_;
  std::unique_ptr<ResultView> view_;
  size_t response_bytes_;
  size_t body_bytes_;
  ClientTimings timings_;
};

struct ItemLogResult {
  std::string item_id;
  std::optional<std::string> log;  // nullopt: not in the store (expired or dropped).
};

// A channel with message limits large enough for ranking responses;
// plaintext unless `security` (client/tls.h: TLS or mutual TLS) is given.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target,
                                           int max_message_bytes = 64 << 20,
                                           const ClientSecurity* security = nullptr);

class RankClient {
 public:
  // `codecs` is not owned and must outlive the client.
  RankClient(std::shared_ptr<grpc::Channel> channel, const CodecRegistry* codecs);

  // The gRPC status of a failed call becomes the returned status (same code
  // and message). FailedPrecondition if the server answers with a codec this
  // client does not have; DataLoss for a malformed response.
  absl::StatusOr<RankReply> Rank(const rank::v1::RankRequest& request,
                                 const CallOptions& options) const;

  // Logs of `item_ids` of a ranked request, through the server's
  // rank.v1.LogService (works with any server log store).
  absl::StatusOr<std::vector<ItemLogResult>> FetchLogs(
      const std::string& request_id, const std::vector<std::string>& item_ids,
      const CallOptions& options) const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  const CodecRegistry* codecs_;
  std::unique_ptr<grpc::GenericStub> generic_;
  std::unique_ptr<rank::v1::LogService::Stub> logs_;
};

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_RANK_CLIENT_H_
