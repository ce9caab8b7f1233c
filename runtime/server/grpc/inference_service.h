// InferenceServiceImpl: the inference protocol Triton and KServe clients
// speak (proto/inference.proto: the Open Inference Protocol plus Triton's
// model repository, configuration and statistics extensions), served by
// glintd on the same port as glint.v1 over the same HostManager, so a
// network added through either API is visible and runnable through the
// other.
//
// On gRPC's callback API with the reactors every glintd service shares
// (reactors.h). No handler blocks a gRPC thread on a run: ModelInfer
// starts HostManager::RunNetworkAsync and finishes the call in the run's
// callback; a client that cancels (or goes away) cancels the run. Loads
// and unloads, which import and compile or wait for runs, go to glintd's
// blocking WorkerPool. Each handler converts (proto/oip_convert.h), calls
// HostManager and maps the status (proto/status_util.h). See
// runtime/server/README.md for every RPC.
//
// Triton's system shared memory extension is served on a
// SharedMemoryRegistry shared with glint.v1: the regions are the server's,
// so one registered through either service is used, listed and
// unregistered through both (runtime/server/README.md).
//
// Thread-safe: gRPC calls the handlers concurrently; HostManager, the
// registry and the pool are thread-safe and the service's own state is an
// atomic.
#ifndef GLINT_RUNTIME_SERVER_GRPC_INFERENCE_SERVICE_H_
#define GLINT_RUNTIME_SERVER_GRPC_INFERENCE_SERVICE_H_

#include <atomic>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/strings/string_view.h"
#include "proto/inference.grpc.pb.h"
#include "proto/oip_types.h"
#include "runtime/host_manager.h"
#include "runtime/server/common/auth.h"
#include "runtime/server/grpc/request_budget.h"
#include "runtime/server/grpc/worker_pool.h"
#include "serving/model_repository.h"
#include "serving/shared_memory.h"

namespace glint {

class InferenceServiceImpl final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  // None is owned; all must outlive the gRPC server. `blocking` runs
  // RepositoryModelLoad and RepositoryModelUnload (a full pool answers
  // RESOURCE_EXHAUSTED). Not ready until SetReady(). Every call is
  // authorized by
  // `authorizer` against auth.h's table of inference methods (infer:
  // health, metadata, config, statistics, ModelInfer; admin: the
  // repository calls, shared memory registration, trace and log settings);
  // null leaves every call open (glintd without --auth_tokens). Borrowed;
  // must outlive the service. Without a shared-memory registry the
  // service keeps one of its own (glintd passes the one its services
  // share).
  // A ModelInfer request is first charged against `request_budget` (null:
  // none), RESOURCE_EXHAUSTED beyond it.
  InferenceServiceImpl(HostManager* host_manager, WorkerPool* blocking,
                       const Authorizer* authorizer = nullptr,
                       SharedMemoryRegistry* shared_memory = nullptr,
                       RequestBudget* request_budget = nullptr);

  InferenceServiceImpl(const InferenceServiceImpl&) = delete;
  InferenceServiceImpl& operator=(const InferenceServiceImpl&) = delete;

  // ServerReady's answer (and part of ModelReady's), alongside
  // grpc.health.v1's status: glintd calls SetReady() once the networks of
  // its store are restored, and Shutdown() when a signal stops it; after
  // Shutdown() the service stays not ready.
  void SetReady() {
    int starting = kStarting;
    state_.compare_exchange_strong(starting, kReady);
  }
  void Shutdown() { state_.store(kStopping); }

  // glintd's --model_repository, borrowed (must outlive the service); set
  // before the server starts. RepositoryIndex then also lists the
  // repository's models that do not serve (UNAVAILABLE with why, or
  // UNLOADED) and names the serving repository version in `reason`; in
  // explicit mode RepositoryModelLoad without a file loads (or reloads)
  // the model from the repository; RepositoryModelUnload of a model loaded
  // from it unloads it there. Loads with the model's bytes keep working.
  void SetModelRepository(ModelRepository* repository) {
    repository_ = repository;
  }

  // Health: live while the process answers; ready per SetReady.
  grpc::ServerUnaryReactor* ServerLive(
      grpc::CallbackServerContext* context,
      const inference::ServerLiveRequest* request,
      inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(
      grpc::CallbackServerContext* context,
      const inference::ServerReadyRequest* request,
      inference::ServerReadyResponse* response) override;
  // True when the server is ready and the network exists and serves;
  // false (not an error) for unknown models and versions, as Triton.
  grpc::ServerUnaryReactor* ModelReady(
      grpc::CallbackServerContext* context,
      const inference::ModelReadyRequest* request,
      inference::ModelReadyResponse* response) override;

  // Name "glint", kGlintVersion, and the extensions implemented.
  grpc::ServerUnaryReactor* ServerMetadata(
      grpc::CallbackServerContext* context,
      const inference::ServerMetadataRequest* request,
      inference::ServerMetadataResponse* response) override;
  // NOT_FOUND (unknown model or version), UNAVAILABLE (the network does not
  // serve: why).
  grpc::ServerUnaryReactor* ModelMetadata(
      grpc::CallbackServerContext* context,
      const inference::ModelMetadataRequest* request,
      inference::ModelMetadataResponse* response) override;

  // Runs the network; the earlier of the gRPC deadline and the `timeout`
  // parameter is the run's deadline. Inputs and requested outputs with
  // Triton's shared-memory parameters are read from / written into their
  // registered windows (oip_infer.h; bounds errors INVALID_ARGUMENT).
  grpc::ServerUnaryReactor* ModelInfer(
      grpc::CallbackServerContext* context,
      const inference::ModelInferRequest* request,
      inference::ModelInferResponse* response) override;
  // UNIMPLEMENTED.
  grpc::ServerBidiReactor<inference::ModelInferRequest,
                          inference::ModelStreamInferResponse>*
  ModelStreamInfer(grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* ModelConfig(
      grpc::CallbackServerContext* context,
      const inference::ModelConfigRequest* request,
      inference::ModelConfigResponse* response) override;
  grpc::ServerUnaryReactor* ModelStatistics(
      grpc::CallbackServerContext* context,
      const inference::ModelStatisticsRequest* request,
      inference::ModelStatisticsResponse* response) override;

  grpc::ServerUnaryReactor* RepositoryIndex(
      grpc::CallbackServerContext* context,
      const inference::RepositoryIndexRequest* request,
      inference::RepositoryIndexResponse* response) override;
  // Adds the network from parameter "file:1/model.onnx" with the options of
  // parameter "config". A name already taken is ALREADY_EXISTS: Glint
  // does not replace a serving network in place (unload it first). Without
  // a file: OK if the network exists and no config is given (nothing to
  // reload from), NOT_FOUND if it does not exist.
  grpc::ServerUnaryReactor* RepositoryModelLoad(
      grpc::CallbackServerContext* context,
      const inference::RepositoryModelLoadRequest* request,
      inference::RepositoryModelLoadResponse* response) override;
  // Removes the network once its runs are done; NOT_FOUND if unknown.
  grpc::ServerUnaryReactor* RepositoryModelUnload(
      grpc::CallbackServerContext* context,
      const inference::RepositoryModelUnloadRequest* request,
      inference::RepositoryModelUnloadResponse* response) override;

  // Triton's system shared memory: Status lists the region `name`, or
  // every region when it is empty (NOT_FOUND for an unknown name);
  // Register maps (key, offset, byte_size) under `name` (the registry's
  // codes: INVALID_ARGUMENT, ALREADY_EXISTS, NOT_FOUND for no such object,
  // RESOURCE_EXHAUSTED); Unregister takes the name away (every region when
  // it is empty; an unknown name is OK, as in Triton). Runs using a region
  // keep it until they end.
  grpc::ServerUnaryReactor* SystemSharedMemoryStatus(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryStatusRequest* request,
      inference::SystemSharedMemoryStatusResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryRegister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryRegisterRequest* request,
      inference::SystemSharedMemoryRegisterResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryUnregister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryUnregisterRequest* request,
      inference::SystemSharedMemoryUnregisterResponse* response) override;
  // UNIMPLEMENTED, saying what to use instead.
  grpc::ServerUnaryReactor* CudaSharedMemoryStatus(
      grpc::CallbackServerContext* context,
      const inference::CudaSharedMemoryStatusRequest* request,
      inference::CudaSharedMemoryStatusResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryRegister(
      grpc::CallbackServerContext* context,
      const inference::CudaSharedMemoryRegisterRequest* request,
      inference::CudaSharedMemoryRegisterResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryUnregister(
      grpc::CallbackServerContext* context,
      const inference::CudaSharedMemoryUnregisterRequest* request,
      inference::CudaSharedMemoryUnregisterResponse* response) override;
  grpc::ServerUnaryReactor* TraceSetting(
      grpc::CallbackServerContext* context,
      const inference::TraceSettingRequest* request,
      inference::TraceSettingResponse* response) override;
  grpc::ServerUnaryReactor* LogSettings(
      grpc::CallbackServerContext* context,
      const inference::LogSettingsRequest* request,
      inference::LogSettingsResponse* response) override;

 private:
  bool ready() const { return state_.load() == kReady; }

  // The repository's side of RepositoryIndex.
  void AddRepositoryIndex(bool ready_only,
                          inference::RepositoryIndexResponse* response) const;

  // OK when the call's token may call `method` (of this service).
  grpc::Status Authorize(const grpc::CallbackServerContext& context,
                         absl::string_view method) const;
  // Null when the call is authorized; else a reactor finished with the
  // refusal, for the handler to return.
  grpc::ServerUnaryReactor* Deny(grpc::CallbackServerContext* context,
                                 absl::string_view method) const;

  static constexpr int kStarting = 0;
  static constexpr int kReady = 1;
  static constexpr int kStopping = 2;

  HostManager* const host_manager_;
  WorkerPool* const blocking_;
  const Authorizer* const authorizer_;
  const std::unique_ptr<SharedMemoryRegistry> own_shared_memory_;
  SharedMemoryRegistry* const shared_memory_;
  RequestBudget* const request_budget_;
  std::atomic<int> state_{kStarting};
  ModelRepository* repository_ = nullptr;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_INFERENCE_SERVICE_H_
