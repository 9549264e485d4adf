// refusal_floor: a gRPC server that refuses every Rank call with
// RESOURCE_EXHAUSTED after reading the request in whole (as rankwire's
// admission control does) and does nothing else: the least CPU and latency
// a refusal can cost with this gRPC, for each of two ways of serving calls.
//   --api=callback  the callback API (what rankwire-server uses)
//   --api=async     the completion-queue API, one thread polling and
//                   answering inline (no hand-off between threads)
// Other methods (the client's health check) get UNIMPLEMENTED, which
// clients take as "no health service". Prints "port N", then serves until
// killed. bench/refusal_floor.py runs both against the load generator.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "base/flags.h"

ABSL_FLAG(std::string, api, "callback", "callback or async");

namespace {

constexpr char kRank[] = "/rank.v1.RankService/Rank";

grpc::Status Busy() { return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "busy"); }
grpc::Status NoSuchMethod() { return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no"); }

class RefusingReactor final : public grpc::ServerGenericBidiReactor {
 public:
  explicit RefusingReactor(bool rank) {
    if (rank) {
      StartRead(&request_);
    } else {
      Finish(NoSuchMethod());
    }
  }
  void OnReadDone(bool /*ok*/) override { Finish(Busy()); }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer request_;
};

class RefusingService final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new RefusingReactor(ctx->method() == kRank);
  }
};

// One call on the completion queue: requested, reading, finishing.
struct AsyncCall {
  enum class State { kRequested, kReading, kFinishing } state = State::kRequested;
  grpc::GenericServerContext ctx;
  grpc::GenericServerAsyncReaderWriter stream{&ctx};
  grpc::ByteBuffer request;
};

void ServeAsync(grpc::AsyncGenericService* service, grpc::ServerCompletionQueue* cq) {
  for (int i = 0; i < 16; ++i) {
    auto* call = new AsyncCall;
    service->RequestCall(&call->ctx, &call->stream, cq, cq, call);
  }
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
    auto* call = static_cast<AsyncCall*>(tag);
    switch (call->state) {
      case AsyncCall::State::kRequested: {
        auto* next = new AsyncCall;
        service->RequestCall(&next->ctx, &next->stream, cq, cq, next);
        if (!ok) {
          delete call;
        } else if (call->ctx.method() != kRank) {
          call->state = AsyncCall::State::kFinishing;
          call->stream.Finish(NoSuchMethod(), call);
        } else {
          call->state = AsyncCall::State::kReading;
          call->stream.Read(&call->request, call);
        }
        break;
      }
      case AsyncCall::State::kReading:
        call->state = AsyncCall::State::kFinishing;
        call->stream.Finish(Busy(), call);
        break;
      case AsyncCall::State::kFinishing:
        delete call;
        break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv, "A server that refuses every Rank call (see the file).");
  const std::string api = absl::GetFlag(FLAGS_api);
  if (api != "callback" && api != "async") {
    std::fprintf(stderr, "--api: expected callback or async\n");
    return 2;
  }
  RefusingService callback_service;
  grpc::AsyncGenericService async_service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(4 << 20);
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  if (api == "callback") {
    builder.RegisterCallbackGenericService(&callback_service);
  } else {
    builder.RegisterAsyncGenericService(&async_service);
    cq = builder.AddCompletionQueue();
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  std::printf("port %d\n", port);
  std::fflush(stdout);
  if (cq) {
    ServeAsync(&async_service, cq.get());
  } else {
    server->Wait();
  }
  return 0;
}
