// RankServiceImpl is the gRPC face of rank.v1.RankService: a callback-API
// unary method that works on raw ByteBuffers so the response can be written
// as slices (see encoded_response.h). On gRPC's thread it only admits or
// refuses the call (AdmissionControl, the call's deadline); an admitted call
// waits for a worker, then is parsed, handed to RankHandler, serialized and
// finished on the worker pool, and its response bytes count as unsent until gRPC reports the call
// done.
//
// LogServiceImpl serves rank.v1.LogService.FetchLogs from the server's log
// store, so a client can read the logs of the items it shows even when the
// store is the in-process default.
//
// Thread safety: gRPC calls these from its threads; all state is in the
// (thread-safe) handler and reader.
#ifndef RANKWIRE_SERVER_RANK_SERVICE_H_
#define RANKWIRE_SERVER_RANK_SERVICE_H_

#include <chrono>
#include <string>

#include "logstore/log_store.h"
#include "rank/v1/rank.grpc.pb.h"
#include "server/admission.h"
#include "server/rank_handler.h"
#include "server/server_metrics.h"
#include "server/worker_pool.h"

namespace rankwire::server {

class RankServiceImpl final
    : public rank::v1::RankService::WithRawCallbackMethod_Rank<
          rank::v1::RankService::Service> {
 public:
  // None is owned; all must outlive the service. `metrics` may be null.
  // `workers` may have fewer threads than admission has slots: the calls
  // admitted past the threads wait in its queue (ServerTimings.queue_us).
  RankServiceImpl(const RankHandler* handler, ServerMetrics* metrics,
                  AdmissionControl* admission, WorkerPool* workers)
      : handler_(handler), metrics_(metrics), admission_(admission), workers_(workers) {}

  grpc::ServerUnaryReactor* Rank(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;

 private:
  // Parse, handle, serialize, finish: runs on the worker pool.
  void Serve(grpc::ServerUnaryReactor* reactor, RankHandler::Clock::time_point admitted_at,
             std::chrono::system_clock::time_point deadline,
             const grpc::ByteBuffer* request, grpc::ByteBuffer* response,
             AdmissionControl::Slot slot);

  const RankHandler* handler_;
  ServerMetrics* metrics_;
  AdmissionControl* admission_;
  WorkerPool* workers_;
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
