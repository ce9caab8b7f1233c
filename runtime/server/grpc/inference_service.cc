#include "runtime/server/grpc/inference_service.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/allocator_policy.h"
#include "core/logging.h"
#include "core/text.h"
#include "proto/oip_convert.h"
#include "proto/status_util.h"
#include "runtime/server/grpc/grpc_auth.h"
#include "runtime/server/grpc/oip_infer.h"
#include "runtime/server/grpc/reactors.h"
#include "serving/model_lifecycle.h"

namespace glint {
namespace {

// A unary call answered at once with `status` (short work only).
grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                 const absl::Status& status) {
  return FinishNow(context, ToGrpcStatus(status));
}

grpc::ServerUnaryReactor* Unimplemented(grpc::CallbackServerContext* context,
                                        absl::string_view rpc,
                                        absl::string_view instead) {
  return Answer(context, absl::UnimplementedError(absl::StrCat(
                             "glintd does not implement ", rpc, "; ",
                             instead)));
}

constexpr absl::string_view kNoCudaSharedMemory =
    "glintd's devices are not CUDA devices; use system shared memory "
    "(SystemSharedMemoryRegister) or send tensors in raw_input_contents";

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
                                           WorkerPool* blocking,
                                           const Authorizer* authorizer,
                                           SharedMemoryRegistry* shared_memory,
                                           RequestBudget* request_budget)
    : host_manager_(host_manager),
      blocking_(blocking),
      authorizer_(authorizer),
      own_shared_memory_(shared_memory == nullptr
                             ? std::make_unique<SharedMemoryRegistry>()
                             : nullptr),
      shared_memory_(shared_memory == nullptr ? own_shared_memory_.get()
                                              : shared_memory),
      request_budget_(request_budget) {}

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
  return FinishNow(context, std::move(s));
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ServerLive(
    grpc::CallbackServerContext* context,
    const inference::ServerLiveRequest* /*request*/,
    inference::ServerLiveResponse* response) {
  if (auto* denied = Deny(context, "ServerLive")) return denied;
  response->set_live(true);
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ServerReady(
    grpc::CallbackServerContext* context,
    const inference::ServerReadyRequest* /*request*/,
    inference::ServerReadyResponse* response) {
  if (auto* denied = Deny(context, "ServerReady")) return denied;
  response->set_ready(ready());
  return Answer(context, absl::OkStatus());
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
  return Answer(context, absl::OkStatus());
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
  // request parameters, ModelStatistics, SystemSharedMemory*.
  for (const char* extension :
       {"model_repository", "model_configuration", "schedule_policy",
        "statistics", "system_shared_memory"}) {
    response->add_extensions(extension);
  }
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelMetadata(
    grpc::CallbackServerContext* context,
    const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  if (auto* denied = Deny(context, "ModelMetadata")) return denied;
  absl::StatusOr<NetworkInfo> info =
      ServingNetwork(*host_manager_, request->name(), request->version());
  if (info.ok()) ModelMetadataToProto(*info, response);
  return Answer(context, info.status());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelInfer(
    grpc::CallbackServerContext* context,
    const inference::ModelInferRequest* request,
    inference::ModelInferResponse* response) {
  if (auto* denied = Deny(context, "ModelInfer")) return denied;
  absl::StatusOr<std::unique_ptr<RequestBudget::Charge>> charge =
      ChargeRequest(request_budget_, request->ByteSizeLong());
  if (!charge.ok()) return Answer(context, charge.status());
  // The run's deadline: the earlier of the `timeout` parameter and the
  // call's, merged by the protocol's parameter parser.
  absl::StatusOr<PreparedOipInfer> prepared =
      PrepareOipInfer(*request, *shared_memory_, absl::Now(),
                      DeadlineFromGrpc(context->deadline()));
  if (!prepared.ok()) return Answer(context, prepared.status());
  // The request and response live until the call is finished: the
  // responder may use them. The responder holds the output windows (and so
  // their regions) until the reply is made.
  auto run = std::make_shared<PreparedOipInfer>(*std::move(prepared));
  std::string model_name = run->model_name;
  std::vector<NamedTensor> inputs = std::move(run->inputs);
  RunOptions options = run->options;
  return StartRunReactor(
      context, *host_manager_, std::move(model_name), std::move(inputs),
      std::move(options),
      [request, response,
       run](absl::StatusOr<std::vector<NamedTensor>> outputs) {
        if (!outputs.ok()) return ToGrpcStatus(outputs.status());
        absl::Status s = FinishOipInfer(*request, *run, *outputs, response);
        if (!s.ok()) response->Clear();
        return ToGrpcStatus(s);
      },
      *std::move(charge));
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
  return Answer(context, info.status());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::ModelStatistics(
    grpc::CallbackServerContext* context,
    const inference::ModelStatisticsRequest* request,
    inference::ModelStatisticsResponse* response) {
  if (auto* denied = Deny(context, "ModelStatistics")) return denied;
  if (request->name().empty()) {
    if (!request->version().empty()) {
      return Answer(context, absl::InvalidArgumentError(
                                    "a version needs a model name"));
    }
    for (const NetworkStatistics& stats : host_manager_->GetAllStatistics()) {
      ModelStatisticsToProto(stats, response->add_model_stats());
    }
    return Answer(context, absl::OkStatus());
  }
  if (absl::Status s =
          CheckOipModelVersion(Clip(request->name()), request->version());
      !s.ok()) {
    return Answer(context, s);
  }
  absl::StatusOr<NetworkStatistics> stats =
      host_manager_->GetStatistics(request->name());
  if (stats.ok()) ModelStatisticsToProto(*stats, response->add_model_stats());
  return Answer(context, stats.status());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::RepositoryIndex(
    grpc::CallbackServerContext* context,
    const inference::RepositoryIndexRequest* request,
    inference::RepositoryIndexResponse* response) {
  if (auto* denied = Deny(context, "RepositoryIndex")) return denied;
  if (!request->repository_name().empty()) {
    return Answer(context, absl::NotFoundError(absl::StrCat(
                               "no repository named '",
                               Clip(request->repository_name()),
                               "': glintd has one, named \"\"")));
  }
  RepositoryIndexToProto(host_manager_->ListNetworks(), request->ready(),
                         response);
  if (repository_ != nullptr) AddRepositoryIndex(request->ready(), response);
  return Answer(context, absl::OkStatus());
}

void InferenceServiceImpl::AddRepositoryIndex(
    bool ready_only, inference::RepositoryIndexResponse* response) const {
  std::map<std::string, RepositoryIndexEntry> index;
  for (RepositoryIndexEntry& e : repository_->Index()) {
    index[e.name] = std::move(e);
  }
  // Networks loaded from the repository say which version serves (the
  // protocol's version stays "1": one version per network) and why a
  // newer one did not load.
  for (auto& m : *response->mutable_models()) {
    auto it = index.find(m.name());
    if (it == index.end()) continue;
    if (it->second.state == "READY") {
      m.set_reason(absl::StrCat("repository version ", it->second.version,
                                it->second.reason.empty() ? "" : "; ",
                                it->second.reason));
    }
    index.erase(it);
  }
  if (ready_only) return;
  // The repository's models that do not serve: failed or not loaded.
  for (const auto& [name, e] : index) {
    if (e.state == "READY") continue;
    inference::RepositoryIndexResponse::ModelIndex* m = response->add_models();
    m->set_name(name);
    m->set_version(absl::StrCat(e.version));
    m->set_state(e.state);
    m->set_reason(e.reason);
  }
}

grpc::ServerUnaryReactor* InferenceServiceImpl::RepositoryModelLoad(
    grpc::CallbackServerContext* context,
    const inference::RepositoryModelLoadRequest* request,
    inference::RepositoryModelLoadResponse* /*response*/) {
  if (auto* denied = Deny(context, "RepositoryModelLoad")) return denied;
  absl::StatusOr<OipModelLoad> load = OipModelLoadFromProto(*request);
  if (!load.ok()) return Answer(context, load.status());
  // Shared, not copied, with the task: models can be hundreds of MB.
  auto shared = std::make_shared<const OipModelLoad>(*std::move(load));
  return FinishOnPool(context, *blocking_, [this, load = std::move(shared)] {
    ReleaseFreeMemory();  // The message's freed slices, before building.
    const absl::Status status =
        LoadRepositoryModel(*host_manager_, repository_, *load);
    ReleaseFreeMemory();  // As glint.v1's AddNetwork does (service.cc).
    if (status.ok()) {
      GLINT_LOG_INFO("loaded model '{}' through RepositoryModelLoad",
                     Clip(load->name));
    }
    return ToGrpcStatus(status);
  });
}

grpc::ServerUnaryReactor* InferenceServiceImpl::RepositoryModelUnload(
    grpc::CallbackServerContext* context,
    const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse* /*response*/) {
  if (auto* denied = Deny(context, "RepositoryModelUnload")) return denied;
  absl::StatusOr<std::string> name = OipModelUnloadFromProto(*request);
  if (!name.ok()) return Answer(context, name.status());
  return FinishOnPool(context, *blocking_, [this, name = *std::move(name)] {
    const absl::Status status =
        UnloadRepositoryModel(*host_manager_, repository_, name);
    ReleaseFreeMemory();
    if (status.ok()) {
      GLINT_LOG_INFO("unloaded model '{}' through RepositoryModelUnload",
                     Clip(name));
    }
    return ToGrpcStatus(status);
  });
}

grpc::ServerUnaryReactor* InferenceServiceImpl::SystemSharedMemoryStatus(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryStatusRequest* request,
    inference::SystemSharedMemoryStatusResponse* response) {
  if (auto* denied = Deny(context, "SystemSharedMemoryStatus")) return denied;
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> regions =
      shared_memory_->Regions(request->name());
  if (regions.ok()) SystemSharedMemoryStatusToProto(*regions, response);
  return Answer(context, regions.status());
}

grpc::ServerUnaryReactor* InferenceServiceImpl::SystemSharedMemoryRegister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryRegisterRequest* request,
    inference::SystemSharedMemoryRegisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "SystemSharedMemoryRegister")) return denied;
  // Opens and maps an object: a few system calls, no waiting.
  absl::Status s = shared_memory_->Register(
      request->name(), request->key(), request->offset(), request->byte_size(),
      kOipSharedMemoryOwner);
  if (s.ok()) {
    GLINT_LOG_DEBUG("registered shared memory '{}' ({}, {} bytes at {})",
                    Clip(request->name()), Clip(request->key()),
                    request->byte_size(), request->offset());
  }
  return Answer(context, s);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::SystemSharedMemoryUnregister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryUnregisterRequest* request,
    inference::SystemSharedMemoryUnregisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "SystemSharedMemoryUnregister")) return denied;
  if (request->name().empty()) {
    // Only this protocol's regions: glint.v1 clients' stay (the registry
    // is glintd's, shared by both services).
    shared_memory_->UnregisterAllOf(kOipSharedMemoryOwner);
    return Answer(context, absl::OkStatus());
  }
  absl::Status s = shared_memory_->Unregister(request->name());
  // Triton answers OK for a name it does not hold: the region is gone
  // either way.
  if (absl::IsNotFound(s)) s = absl::OkStatus();
  return Answer(context, s);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::CudaSharedMemoryStatus(
    grpc::CallbackServerContext* context,
    const inference::CudaSharedMemoryStatusRequest* /*request*/,
    inference::CudaSharedMemoryStatusResponse* /*response*/) {
  if (auto* denied = Deny(context, "CudaSharedMemoryStatus")) return denied;
  return Unimplemented(context, "CUDA shared memory", kNoCudaSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::CudaSharedMemoryRegister(
    grpc::CallbackServerContext* context,
    const inference::CudaSharedMemoryRegisterRequest* /*request*/,
    inference::CudaSharedMemoryRegisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "CudaSharedMemoryRegister")) return denied;
  return Unimplemented(context, "CUDA shared memory", kNoCudaSharedMemory);
}

grpc::ServerUnaryReactor* InferenceServiceImpl::CudaSharedMemoryUnregister(
    grpc::CallbackServerContext* context,
    const inference::CudaSharedMemoryUnregisterRequest* /*request*/,
    inference::CudaSharedMemoryUnregisterResponse* /*response*/) {
  if (auto* denied = Deny(context, "CudaSharedMemoryUnregister")) return denied;
  return Unimplemented(context, "CUDA shared memory", kNoCudaSharedMemory);
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
