// ModelServiceImpl serves rank.v1.ModelService: GetModels (what each
// bucket's model is, its features and load time, and the last refused
// reload) and, when `allow_reload`, ReloadModels. The server registers one
// that may reload on the plaintext health port (with --model_admin_rpc) and
// one that may not on the main port.
//
// Thread safety: the reloader's; ReloadModels runs the reload on the
// calling gRPC thread (reloads are serialized by the reloader).
#ifndef RANKWIRE_SERVER_MODEL_SERVICE_H_
#define RANKWIRE_SERVER_MODEL_SERVICE_H_

#include "rank/v1/rank.grpc.pb.h"
#include "server/model_reloader.h"

namespace rankwire {

class ModelServiceImpl final : public rank::v1::ModelService::CallbackService {
 public:
  // `refusal` is the PERMISSION_DENIED message when !allow_reload.
  ModelServiceImpl(ModelReloader* reloader, bool allow_reload, std::string refusal)
      : reloader_(reloader), allow_reload_(allow_reload), refusal_(std::move(refusal)) {}

  grpc::ServerUnaryReactor* GetModels(grpc::CallbackServerContext* context,
                                      const rank::v1::GetModelsRequest* request,
                                      rank::v1::GetModelsResponse* response) override;
  grpc::ServerUnaryReactor* ReloadModels(grpc::CallbackServerContext* context,
                                         const rank::v1::ReloadModelsRequest* request,
                                         rank::v1::GetModelsResponse* response) override;

 private:
  ModelReloader* reloader_;
  bool allow_reload_;
  std::string refusal_;
};

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_MODEL_SERVICE_H_
