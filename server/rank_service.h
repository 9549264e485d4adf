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
// store is the in-process default. On gRPC's thread it only validates (ids
// as Rank's contract has them: 1..256 bytes, at most 1000, no repeats) and
// admits (the unsent-bytes bounds, --max_concurrent_fetch_logs); the store
// is read on a pool of its own, so a stalled Redis holds those threads, not
// gRPC's (which would stall Rank calls too). Its responses count as unsent
// bytes like Rank's.
//
// Thread safety: gRPC calls these from its threads; all state is in the
// (thread-safe) handler and reader.
#ifndef RANKWIRE_SERVER_RANK_SERVICE_H_
#define RANKWIRE_SERVER_RANK_SERVICE_H_

#include <atomic>
#include <chrono>
#include <string>

#include "logstore/log_store.h"
#include "metrics/server_metrics.h"
#include "rank/v1/rank.grpc.pb.h"
#include "ranking/rank_handler.h"
#include "server/admission.h"
#include "server/worker_pool.h"

namespace rankwire {

class RankServiceImpl final
    : public rank::v1::RankService::WithRawCallbackMethod_Rank<rank::v1::RankService::Service> {
 public:
  // None is owned; all must outlive the service. `metrics` may be null.
  // `workers` may have fewer threads than admission has slots: the calls
  // admitted past the threads wait in its queue (ServerTimings.queue_us).
  RankServiceImpl(const RankHandler* handler, ServerMetrics* metrics, AdmissionControl* admission,
                  WorkerPool* workers)
      : handler_(handler), metrics_(metrics), admission_(admission), workers_(workers) {}

  grpc::ServerUnaryReactor* Rank(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;

 private:
  // Parse, handle, serialize, finish: runs on the worker pool.
  void Serve(grpc::ServerUnaryReactor* reactor, RankHandler::Clock::time_point admitted_at,
             std::chrono::system_clock::time_point deadline, const grpc::ByteBuffer* request,
             grpc::ByteBuffer* response, AdmissionControl::Slot slot);

  const RankHandler* handler_;
  ServerMetrics* metrics_;
  AdmissionControl* admission_;
  WorkerPool* workers_;
};

class LogServiceImpl final : public rank::v1::LogService::CallbackService {
 public:
  // None is owned. `reader` null means the server keeps no logs; `metrics`
  // may be null. `workers` runs the fetches; at most `max_concurrent` are
  // admitted at once (in work or queued), the rest get RESOURCE_EXHAUSTED.
  LogServiceImpl(logstore::LogReader* reader, ServerMetrics* metrics, AdmissionControl* admission,
                 WorkerPool* workers, int max_concurrent)
      : reader_(reader),
        metrics_(metrics),
        admission_(admission),
        workers_(workers),
        max_concurrent_(max_concurrent) {}

  grpc::ServerUnaryReactor* FetchLogs(grpc::CallbackServerContext* context,
                                      const rank::v1::FetchLogsRequest* request,
                                      rank::v1::FetchLogsResponse* response) override;

 private:
  void Serve(grpc::ServerUnaryReactor* reactor, std::chrono::system_clock::time_point deadline,
             const rank::v1::FetchLogsRequest* request, rank::v1::FetchLogsResponse* response);

  logstore::LogReader* reader_;
  ServerMetrics* metrics_;
  AdmissionControl* admission_;
  WorkerPool* workers_;
  const int max_concurrent_;
  std::atomic<int> in_flight_{0};
};

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_RANK_SERVICE_H_
