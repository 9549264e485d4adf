// RankServiceImpl is the gRPC face of rank.v1.RankService: a callback-API
// unary method that works on raw ByteBuffers so the response can be written
// as slices (see encoded_response.h). The reactor is thin: parse the
// request, call RankHandler, serialize, finish.
//
// LogServiceImpl serves rank.v1.LogService.FetchLogs from the server's log
// store, so a client can read the logs of the items it shows even when the
// store is the in-process default.
//
// Thread safety: gRPC calls these from its threads; all state is in the
// (thread-safe) handler and reader.
#ifndef RANKWIRE_SERVER_RANK_SERVICE_H_
#define RANKWIRE_SERVER_RANK_SERVICE_H_

#include "logstore/log_store.h"
#include "rank/v1/rank.grpc.pb.h"
#include "server/rank_handler.h"
#include "server/server_metrics.h"

namespace rankwire::server {

class RankServiceImpl final
    : public rank::v1::RankService::WithRawCallbackMethod_Rank<
          rank::v1::RankService::Service> {
 public:
  // Neither is owned; both must outlive the service. `metrics` may be null.
  RankServiceImpl(const RankHandler* handler, ServerMetrics* metrics)
      : handler_(handler), metrics_(metrics) {}

  grpc::ServerUnaryReactor* Rank(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;

 private:
  const RankHandler* handler_;
  ServerMetrics* metrics_;
};

class LogServiceImpl final : public rank::v1::LogService::CallbackService {
 public:
  // `reader` is not owned; null means the server keeps no logs.
  explicit LogServiceImpl(logstore::LogReader* reader) : reader_(reader) {}

  grpc::ServerUnaryReactor* FetchLogs(grpc::CallbackServerContext* context,
                                      const rank::v1::FetchLogsRequest* request,
                                      rank::v1::FetchLogsResponse* response) override;

 private:
  logstore::LogReader* reader_;
};

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_RANK_SERVICE_H_
