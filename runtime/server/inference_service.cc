#include "runtime/server/inference_service.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cancellation.h"
#include "core/logging.h"
#include "core/text.h"
#include "proto/oip_convert.h"
#include "proto/status_util.h"
#include "runtime/server/grpc_auth.h"
#include "runtime/server/service.h"

namespace glint {
namespace {

// A unary call finished at once with `status`.
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* Unimplemented(grpc::CallbackServerContext* context,
                                        absl::string_view rpc,
                                        absl::string_view instead) {
  return FinishNow(context,
                   absl::UnimplementedError(absl::StrCat(
                       "glintd does not implement ", rpc, "; ", instead)));
}

constexpr absl::string_view kNoSharedMemory =
    "send tensors in raw_input_contents or contents";

// ModelInfer's reactor: owns the run's cancellation token, which OnCancel
// sets when the client cancels or goes away. Deletes itself once done.
class InferReactor final : public grpc::ServerUnaryReactor {
 public:
  const std::shared_ptr<CancellationToken>& cancel() const { return cancel_; }

  void OnCancel() override { cancel_->Cancel(); }
  void OnDone() override { delete this; }

 private:
  const std::shared_ptr<CancellationToken> cancel_ =
      std::make_shared<CancellationToken>();
};

// ModelStreamInfer's: refuses the stream at once.
class UnimplementedStreamReactor final
    : public grpc::ServerBidiReactor<inference::ModelInferRequest,
                                     inference::ModelStreamInferResponse> {
 public:
  // `authorized`: the caller's token allows the method; else its status
  // is the answer.
  explicit UnimplementedStreamReactor(const grpc::Status& authorized) {
    Finish(!authorized.ok()
               ? authorized
               : ToGrpcStatus(absl::UnimplementedError(
                     "glintd does not implement ModelStreamInfer (streaming "
                     "inference); call ModelInfer for each request")));
  }
  void OnDone() override { delete this; }
};

// The network `name` if it serves; NOT_FOUND or UNAVAILABLE (with why)
// otherwise.
absl::StatusOr<NetworkInfo> ServingNetwork(const HostManager& host_manager,
                                           absl::string_view name,
                                           absl::string_view version) {
  if (absl::Status s = CheckOipModelVersion(Clip(name), version); !s.ok()) {
    return s;
  }
  absl::StatusOr<NetworkInfo> info = host_manager.GetNetwork(name);
  if (!info.ok()) return info.status();
  if (!info->unavailable_reason.empty()) {
    return absl::UnavailableError(absl::StrCat("model '", Clip(name),
                                               "' is unavailable: ",
                                               info->unavailable_reason));
  }
  return info;
}

}  // namespace

InferenceServiceImpl::InferenceServiceImpl(HostManager* host_manager,
                                           const Authorizer* authorizer)
    : host_manager_(host_manager), authorizer_(authorizer) {}

grpc::Status InferenceServiceImpl::Authorize(
    const grpc::CallbackServerContext& context,
    absl::string_view method) const {
  return AuthorizeCall(
      authorizer_, context,
      absl::StrCat("/inference.GRPCInferenceService/", method));
}

grpc::ServerUnaryReactor* InferenceServiceImpl::Deny(
    grpc::CallbackServerContext* context, absl::string_view method) const {
  grpc::Status s = Authorize(*context, method);
  if (s.ok()) return nullptr;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(s);
  return reactor;
}

InferenceServiceImpl::~InferenceServiceImpl() {
  std::list<std::thread> workers;
  {
    absl::MutexLock lock(&workers_mu_);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
}

void InferenceServiceImpl::RunOffCallbackThread(std::function<void()> work) {
  absl::MutexLock lock(&workers_mu_);
  // Threads that said they are done are joined here (at once: they only
  // have to return).
  for (auto it = workers_.begin(); it != workers_.end();) {
    auto done = std::find(finished_.begin(), finished_.end(), it->get_id());
    if (done == finished_.end()) {
      ++it;
      continue;
    }
    finished_.erase(done);
    it->join();
    it = workers_.erase(it);
  }
  workers_.emplace_back([this, work = std::move(work)] {
    work();
    absl::MutexLock lock(&workers_mu_);
    finished_.push_back(std::this_thread::get_id());
  });
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ServerLive(
    grpc::CallbackServerContext* context,
    const inference::ServerLiveRequest* /*request*/,
    inference::ServerLiveResponse* response) {
  if (auto* denied = Deny(context, "ServerLive")) return denied;
  response->set_live(true);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ServerReady(
    grpc::CallbackServerContext* context,
    const inference::ServerReadyRequest* /*request*/,
    inference::ServerReadyResponse* response) {
  if (auto* denied = Deny(context, "ServerReady")) return denied;
  response->set_ready(ready());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelReady(
    grpc::CallbackServerContext* context,
    const inference::ModelReadyRequest* request,
    inference::ModelReadyResponse* response) {
  if (auto* denied = Deny(context, "ModelReady")) return denied;
  response->set_ready(
      ready() &&
      ServingNetwork(*host_manager_, request->name(), request->version())
          .ok());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ServerMetadata(
    grpc::CallbackServerContext* context,
    const inference::ServerMetadataRequest* /*request*/,
    inference::ServerMetadataResponse* response) {
  if (auto* denied = Deny(context, "ServerMetadata")) return denied;
  response->set_name("glint");
  response->set_version(std::string(kGlintVersion));
  // Triton's extension names, for what this service implements:
  // RepositoryIndex/Load/Unload, ModelConfig, the `priority` and `timeout`
  // request parameters, ModelStatistics.
  for (const char* extension : {"model_repository", "model_configuration",
                                "schedule_policy", "statistics"}) {
    response->add_extensions(extension);
  }
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelMetadata(
    grpc::CallbackServerContext* context,
    const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  if (auto* denied = Deny(context, "ModelMetadata")) return denied;
  absl::StatusOr<NetworkInfo> info =
      ServingNetwork(*host_manager_, request->name(), request->version());
  if (info.ok()) ModelMetadataToProto(*info, response);
  return FinishNow(context, info.status());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelInfer(
    grpc::CallbackServerContext* context,
    const inference::ModelInferRequest* request,
    inference::ModelInferResponse* response) {
  if (auto* denied = Deny(context, "ModelInfer")) return denied;
  auto* reactor = new InferReactor();
  absl::StatusOr<OipInferCall> call = OipInferCallFromProto(
      *request, absl::Now(), DeadlineFromGrpc(context->deadline()));
  if (!call.ok()) {
    reactor->Finish(ToGrpcStatus(call.status()));
    return reactor;
  }
  call->options.cancel = reactor->cancel();
  // The request and response live until the reactor is done, which is
  // after Finish: the callback may use them.
  host_manager_->RunNetworkAsync(
      call->model_name, std::move(call->inputs), call->options,
      [reactor, request,
       response](absl::StatusOr<std::vector<NamedTensor>> outputs) {
        absl::Status status = outputs.status();
        if (status.ok()) {
          status = OipInferResponseToProto(*request, *outputs, response);
        }
        reactor->Finish(ToGrpcStatus(status));
      });
  return reactor;
}

grpc::ServerBidiReactor<inference::ModelInferRequest,
                        inference::ModelStreamInferResponse>*
InferenceServiceImpl::ModelStreamInfer(
    grpc::CallbackServerContext* context) {
  return new UnimplementedStreamReactor(Authorize(*context, "ModelStreamInfer"));
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelConfig(
    grpc::CallbackServerContext* context,
    const inference::ModelConfigRequest* request,
    inference::ModelConfigResponse* response) {
  if (auto* denied = Deny(context, "ModelConfig")) return denied;
  absl::StatusOr<NetworkInfo> info =
      ServingNetwork(*host_manager_, request->name(), request->version());
  if (info.ok()) {
    ModelConfigToProto(*info, host_manager_->GetDevices(),
                       response->mutable_config());
  }
  return FinishNow(context, info.status());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelStatistics(
    grpc::CallbackServerContext* context,
    const inference::ModelStatisticsRequest* request,
    inference::ModelStatisticsResponse* response) {
  if (auto* denied = Deny(context, "ModelStatistics")) return denied;
  if (request->name().empty()) {
    if (!request->version().empty()) {
      return FinishNow(context, absl::InvalidArgumentError(
                                    "a version needs a model name"));
    }
    for (const NetworkStatistics& stats : host_manager_->GetAllStatistics()) {
      ModelStatisticsToProto(stats, response->add_model_stats());
    }
    return FinishNow(context, absl::OkStatus());
  }
  if (absl::Status s =
          CheckOipModelVersion(Clip(request->name()), request->version());
      !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<NetworkStatistics> stats =
      host_manager_->GetStatistics(request->name());
  if (stats.ok()) ModelStatisticsToProto(*stats, response->add_model_stats());
  return FinishNow(context, stats.status());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::RepositoryIndex(
    grpc::CallbackServerContext* context,
    const inference::RepositoryIndexRequest* request,
    inference::RepositoryIndexResponse* response) {
  if (auto* denied = Deny(context, "RepositoryIndex")) return denied;
  if (!request->repository_name().empty()) {
    return FinishNow(context,
                     absl::NotFoundError(absl::StrCat(
                         "no repository named '",
                         Clip(request->repository_name()),
                         "': glintd has one, named \"\"")));
  }
  RepositoryIndexToProto(host_manager_->ListNetworks(), request->ready(),
                         response);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::RepositoryModelLoad(
    grpc::CallbackServerContext* context,
    const inference::RepositoryModelLoadRequest* request,
    inference::RepositoryModelLoadResponse* /*response*/) {
  if (auto* denied = Deny(context, "RepositoryModelLoad")) return denied;
  absl::StatusOr<OipModelLoad> load = OipModelLoadFromProto(*request);
  if (!load.ok()) return FinishNow(context, load.status());
  const bool has_config = request->parameters().contains("config");
  if (!load->has_file) {
    absl::StatusOr<NetworkInfo> info = host_manager_->GetNetwork(load->name);
    if (!info.ok()) {
      return FinishNow(context, absl::NotFoundError(absl::StrCat(
                                    "no model '", Clip(load->name),
                                    "': glintd has no model repository on "
                                    "disk; send the ONNX model in parameter "
                                    "\"file:1/model.onnx\"")));
    }
    if (has_config) {
      return FinishNow(context, absl::AlreadyExistsError(absl::StrCat(
                                    "model '", Clip(load->name),
                                    "' is loaded; glintd does not reload a "
                                    "model in place: unload it, then load it "
                                    "with its file and config")));
    }
    return FinishNow(context, absl::OkStatus());  // Loaded already.
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  RunOffCallbackThread([this, reactor, load = *std::move(load)] {
    absl::StatusOr<NetworkInfo> info = host_manager_->AddNetwork(
        load.name, load.onnx_model, load.config.options);
    absl::Status status = info.status();
    if (status.ok()) {
      status = CheckNetworkAgainstConfig(load.config, *info);
      // The config described another model: it must not stay loaded.
      if (!status.ok()) (void)host_manager_->RemoveNetwork(load.name);
    }
    if (status.ok()) {
      GLINT_LOG_INFO("loaded model '{}' through RepositoryModelLoad",
                     Clip(load.name));
    }
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* InferenceServiceImpl::RepositoryModelUnload(
    grpc::CallbackServerContext* context,
    const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse* /*response*/) {
  if (auto* denied = Deny(context, "RepositoryModelUnload")) return denied;
  absl::StatusOr<std::string> name = OipModelUnloadFromProto(*request);
  if (!name.ok()) return FinishNow(context, name.status());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  RunOffCallbackThread([this, reactor, name = *std::move(name)] {
    absl::Status status = host_manager_->RemoveNetwork(name);
    if (status.ok()) {
      GLINT_LOG_INFO("unloaded model '{}' through RepositoryModelUnload",
                     Clip(name));
    }
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* InferenceServiceImpl::SystemSharedMemoryStatus(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryStatusRequest* /*request*/,
    inference::SystemSharedMemoryStatusResponse* /*response*/) {
  if (auto* denied = Deny(context, "SystemSharedMemoryStatus")) return denied;
  return Unimplemented(context, "system shared memory", kNoSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::SystemSharedMemoryRegister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryRegisterRequest* /*request*/,
    inference::SystemSharedMemoryRegisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "SystemSharedMemoryRegister")) return denied;
  return Unimplemented(context, "system shared memory", kNoSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::SystemSharedMemoryUnregister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryUnregisterRequest* /*request*/,
    inference::SystemSharedMemoryUnregisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "SystemSharedMemoryUnregister")) return denied;
  return Unimplemented(context, "system shared memory", kNoSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::CudaSharedMemoryStatus(
    grpc::CallbackServerContext* context,
    const inference::CudaSharedMemoryStatusRequest* /*request*/,
    inference::CudaSharedMemoryStatusResponse* /*response*/) {
  if (auto* denied = Deny(context, "CudaSharedMemoryStatus")) return denied;
  return Unimplemented(context, "CUDA shared memory", kNoSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::CudaSharedMemoryRegister(
    grpc::CallbackServerContext* context,
    const inference::CudaSharedMemoryRegisterRequest* /*request*/,
    inference::CudaSharedMemoryRegisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "CudaSharedMemoryRegister")) return denied;
  return Unimplemented(context, "CUDA shared memory", kNoSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::CudaSharedMemoryUnregister(
    grpc::CallbackServerContext* context,
    const inference::CudaSharedMemoryUnregisterRequest* /*request*/,
    inference::CudaSharedMemoryUnregisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "CudaSharedMemoryUnregister")) return denied;
  return Unimplemented(context, "CUDA shared memory", kNoSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::TraceSetting(
    grpc::CallbackServerContext* context,
    const inference::TraceSettingRequest* /*request*/,
    inference::TraceSettingResponse* /*response*/) {
  if (auto* denied = Deny(context, "TraceSetting")) return denied;
  return Unimplemented(context, "TraceSetting",
                       "glint.v1 RunNetwork with trace=true records a run's "
                       "Chrome trace");
}

grpc::ServerUnaryReactor* InferenceServiceImpl::LogSettings(
    grpc::CallbackServerContext* context,
    const inference::LogSettingsRequest* /*request*/,
    inference::LogSettingsResponse* /*response*/) {
  if (auto* denied = Deny(context, "LogSettings")) return denied;
  return Unimplemented(context, "LogSettings",
                       "glintd's log level is its --log_level flag");
}

}  // namespace glint
