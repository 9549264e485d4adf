#include "server/model_service.h"

#include "absl/strings/str_cat.h"
#include "rpc/status.h"

namespace rankwire {

grpc::ServerUnaryReactor* ModelServiceImpl::GetModels(grpc::CallbackServerContext* context,
                                                      const rank::v1::GetModelsRequest*,
                                                      rank::v1::GetModelsResponse* response) {
  *response = reloader_->Describe();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ModelServiceImpl::ReloadModels(grpc::CallbackServerContext* context,
                                                         const rank::v1::ReloadModelsRequest*,
                                                         rank::v1::GetModelsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!allow_reload_) {
    reactor->Finish(ToGrpcStatus(absl::PermissionDeniedError(refusal_)));
    return reactor;
  }
  absl::StatusOr<bool> reloaded = reloader_->Reload("rpc");
  if (!reloaded.ok()) {
    // The new models were refused; the old ones serve on. The reason as
    // counted in rankwire_model_reload_failures_total{reason}.
    reactor->Finish(ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
        "reason ", RefusalReason(reloaded.status()), ": ", reloaded.status().message()))));
    return reactor;
  }
  *response = reloader_->Describe();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace rankwire
