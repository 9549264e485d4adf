// serve_floor: what serving a Rank call costs with this gRPC when the server
// does no work of its own. It reads each Rank request (gRPC has it in whole
// before the method runs) and answers with the recorded bytes of a real
// rankwire-server response, without parsing the request, ranking or
// encoding. The response is handed to gRPC as one slice of memory that
// lives for the whole run (no copy), as rankwire-server hands over its
// payload.
//
// It is set up as rankwire-server is: the callback API with a raw Rank
// method, the same message-size limits, the default health service serving
// rank.v1.RankService (the load generator's channels watch it), and the
// same short time slice for its threads (--latency_slice_us). The response
// is recorded at start-up from a running server (--record_from), with the
// workload generator's request of --sequence, so the floor answers the
// same bytes the measured server does.
//
// bench/cpu_budget.py measures it beside rankwire-server in the same run:
// its CPU and context switches per request are the transport's share of
// the server's.
//
//   serve_floor --record_from=127.0.0.1:50051 --codec=rankbin --port=0
//
// Prints "listening port=N response_bytes=B", then serves until SIGTERM.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <signal.h>

#include <condition_variable>
#include <mutex>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/flags.h"
#include "base/thread_sched.h"
#include "rank/v1/rank.grpc.pb.h"
#include "request/log_mode.h"
#include "rpc/transport_args.h"
#include "workload/workload.h"

ABSL_FLAG(int, port, 0, "Port to listen on (0: a free one, printed).");
ABSL_FLAG(std::string, record_from, "", "host:port of a running rankwire-server to record from.");
ABSL_FLAG(std::string, codec, "rankbin", "Codecs the recorded request accepts (comma-separated).");
ABSL_FLAG(std::string, log_mode, "default", "The recorded request's log mode.");
ABSL_FLAG(uint32_t, candidates, 500, "Candidates in the recorded request.");
ABSL_FLAG(uint64_t, seed, 20261129, "Workload seed.");
ABSL_FLAG(uint64_t, sequence, 0, "Which request of the workload to record.");
ABSL_FLAG(std::string, grpc_transport_args, rankwire::rpc::kDefaultTransportArgs,
          "gRPC HTTP/2 and TCP arguments, as rankwire-server's flag of that name (empty: "
          "gRPC's defaults).");
ABSL_FLAG(int, latency_slice_us, 100, "Time slice of every thread, as rankwire-server sets it.");

namespace {

// The raw RankResponse bytes a real server sent for the workload request.
absl::StatusOr<std::string> Record(const std::string& target) {
  rankwire::workload::WorkloadOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.candidates = absl::GetFlag(FLAGS_candidates);
  for (absl::string_view c : absl::StrSplit(absl::GetFlag(FLAGS_codec), ',', absl::SkipEmpty())) {
    options.accept_codecs.emplace_back(c);
  }
  absl::StatusOr<rank::v1::LogMode> mode = rankwire::ParseLogMode(absl::GetFlag(FLAGS_log_mode));
  if (!mode.ok()) return mode.status();
  options.log_mode = *mode;
  const rank::v1::RankRequest request =
      rankwire::workload::WorkloadGenerator(options).Make(absl::GetFlag(FLAGS_sequence));

  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ByteBuffer request_bytes, response_bytes;
  bool own = false;
  if (!grpc::SerializationTraits<rank::v1::RankRequest>::Serialize(request, &request_bytes, &own)
           .ok()) {
    return absl::InternalError("cannot serialize the request");
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status status;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;
  stub.UnaryCall(&context, "/rank.v1.RankService/Rank", grpc::StubOptions(), &request_bytes,
                 &response_bytes, [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = std::move(s);
                   done = true;
                   cv.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("recording from ", target, ": ", status.error_message()));
  }
  std::vector<grpc::Slice> slices;
  if (!response_bytes.Dump(&slices).ok()) return absl::InternalError("cannot read the response");
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

// Answers every Rank call with `response` (which outlives the service).
class FloorService final
    : public rank::v1::RankService::WithRawCallbackMethod_Rank<rank::v1::RankService::Service> {
 public:
  explicit FloorService(const std::string* response) : response_(response) {}

  grpc::ServerUnaryReactor* Rank(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* /*request*/,
                                 grpc::ByteBuffer* response) override {
    // A slice over memory that lives as long as the process: no copy, no
    // release callback, like the server's payload slice.
    grpc::Slice slice(response_->data(), response_->size(), grpc::Slice::STATIC_SLICE);
    *response = grpc::ByteBuffer(&slice, 1);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const std::string* response_;
};

}  // namespace

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv, "A Rank server that answers recorded bytes (see the file).");
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (const int slice = absl::GetFlag(FLAGS_latency_slice_us); slice > 0) {
    (void)rankwire::SetThreadSlice(absl::Microseconds(slice));
  }
  if (absl::GetFlag(FLAGS_record_from).empty()) {
    std::fprintf(stderr, "serve_floor: --record_from is required\n");
    return 2;
  }
  absl::StatusOr<std::string> response = Record(absl::GetFlag(FLAGS_record_from));
  if (!response.ok()) {
    std::fprintf(stderr, "serve_floor: %s\n", response.status().ToString().c_str());
    return 1;
  }
  FloorService service(&*response);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", absl::GetFlag(FLAGS_port)),
                           grpc::InsecureServerCredentials(), &port);
  // rankwire-server's defaults (--max_request_bytes derived, --max_message_bytes).
  builder.SetMaxReceiveMessageSize(1793674);
  builder.SetMaxSendMessageSize(64 << 20);
  absl::StatusOr<rankwire::rpc::TransportArgs> transport =
      rankwire::rpc::ParseTransportArgs(absl::GetFlag(FLAGS_grpc_transport_args));
  if (!transport.ok()) {
    std::fprintf(stderr, "serve_floor: %s\n", transport.status().ToString().c_str());
    return 2;
  }
  rankwire::rpc::ApplyTransportArgs(*transport, &builder);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "serve_floor: cannot listen\n");
    return 1;
  }
  server->GetHealthCheckService()->SetServingStatus(true);
  server->GetHealthCheckService()->SetServingStatus(rank::v1::RankService::service_full_name(),
                                                    true);
  std::printf("listening port=%d response_bytes=%zu\n", port, response->size());
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  server->Shutdown(std::chrono::system_clock::now());
  return 0;
}
