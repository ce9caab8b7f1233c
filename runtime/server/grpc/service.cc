#include "runtime/server/grpc/service.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/allocator_policy.h"
#include "core/logging.h"
#include "core/model_bytes.h"
#include "core/text.h"
#include "proto/limits.h"
#include "proto/proto_convert.h"
#include "proto/status_util.h"
#include "runtime/server/grpc/grpc_auth.h"
#include "runtime/server/grpc/run_request.h"

namespace glint {

GlintHandlers::GlintHandlers(HostManager* host_manager,
                             SharedMemoryRegistry* shared_memory)
    : host_manager_(host_manager), shared_memory_(shared_memory) {}

grpc::Status GlintHandlers::AddNetwork(const v1::AddNetworkRequest& request,
                                       v1::AddNetworkResponse* response) const {
  // The message arrived in many small slices, freed once parsed but kept
  // by the allocator: a model's worth of heap that the build would
  // otherwise hold on top of everything it makes (AddNetwork's peak). Only
  // for a large model: the trim walks the heap under its lock, which
  // concurrent runs' allocations would wait for.
  constexpr size_t kTrimBeforeBuildBytes = size_t{16} << 20;
  if (request.model().size() >= kTrimBeforeBuildBytes) ReleaseFreeMemory();
  return Add(request.name(), request.model(), request.options(), response);
}

grpc::Status GlintHandlers::TakeUploadChunk(
    ModelUpload& upload, const v1::AddNetworkChunk& chunk) const {
  const bool first = upload.name().empty();
  if (absl::Status s = upload.Take(chunk); !s.ok()) return ToGrpcStatus(s);
  if (first) {
    absl::StatusOr<AddNetworkOptions> options =
        AddNetworkOptionsFromProto(upload.options());
    if (!options.ok()) return ToGrpcStatus(options.status());
  }
  return grpc::Status::OK;
}

grpc::Status GlintHandlers::AddUploadedNetwork(
    ModelUpload& upload, v1::AddNetworkResponse* response) const {
  absl::StatusOr<ModelBytes> model = upload.Finish();
  if (!model.ok()) return ToGrpcStatus(model.status());
  GLINT_LOG_INFO("network '{}' uploaded: {} bytes", Clip(upload.name()),
                 model->size());
  return Add(upload.name(), *model, upload.options(), response);
}

grpc::Status GlintHandlers::Add(absl::string_view name, const ModelBytes& model,
                                const v1::AddNetworkOptions& proto_options,
                                v1::AddNetworkResponse* response) const {
  absl::StatusOr<AddNetworkOptions> options =
      AddNetworkOptionsFromProto(proto_options);
  if (!options.ok()) return ToGrpcStatus(options.status());
  absl::StatusOr<NetworkInfo> info =
      host_manager_->AddNetwork(name, model, *options);
  // The import's and compiler's transient copies are freed by now.
  ReleaseFreeMemory();
  // HostManager logs the outcome; logging here too would say it twice.
  if (!info.ok()) return ToGrpcStatus(info.status());
  NetworkInfoToProto(*info, response->mutable_network());
  return grpc::Status::OK;
}

grpc::Status GlintHandlers::RemoveNetwork(
    const v1::RemoveNetworkRequest& request,
    v1::RemoveNetworkResponse* /*response*/) const {
  absl::Status status = host_manager_->RemoveNetwork(request.name());
  // The network's heap blocks go back to the OS, not only its device
  // memory (which the sim devices unmap themselves).
  ReleaseFreeMemory();
  if (status.ok()) GLINT_LOG_INFO("removed network '{}'", request.name());
  return ToGrpcStatus(status);
}

grpc::Status GlintHandlers::ListNetworks(
    const v1::ListNetworksRequest& /*request*/,
    v1::ListNetworksResponse* response) const {
  for (const NetworkInfo& info : host_manager_->ListNetworks()) {
    NetworkInfoToProto(info, response->add_networks());
  }
  return grpc::Status::OK;
}

grpc::Status GlintHandlers::GetNetwork(const v1::GetNetworkRequest& request,
                                       v1::GetNetworkResponse* response) const {
  absl::StatusOr<NetworkInfo> info = host_manager_->GetNetwork(request.name());
  if (!info.ok()) return ToGrpcStatus(info.status());
  NetworkInfoToProto(*info, response->mutable_network(),
                     request.include_dot());
  return grpc::Status::OK;
}

grpc::Status GlintHandlers::GetDevices(const v1::GetDevicesRequest& /*request*/,
                                       v1::GetDevicesResponse* response) const {
  for (const DeviceInfo& info : host_manager_->GetDevices()) {
    DeviceInfoToProto(info, response->add_devices());
  }
  return grpc::Status::OK;
}

grpc::Status GlintHandlers::GetStatistics(
    const v1::GetStatisticsRequest& request,
    v1::GetStatisticsResponse* response) const {
  if (request.name().empty()) {
    for (const NetworkStatistics& stats : host_manager_->GetAllStatistics()) {
      NetworkStatisticsToProto(stats, response->add_networks());
    }
  } else {
    absl::StatusOr<NetworkStatistics> stats =
        host_manager_->GetStatistics(request.name());
    if (!stats.ok()) return ToGrpcStatus(stats.status());
    NetworkStatisticsToProto(*stats, response->add_networks());
  }
  for (const DeviceStatistics& stats : host_manager_->GetDeviceStatistics()) {
    DeviceStatisticsToProto(stats, response->add_devices());
  }
  return grpc::Status::OK;
}

grpc::Status GlintHandlers::RegisterSharedMemory(
    const v1::RegisterSharedMemoryRequest& request,
    v1::RegisterSharedMemoryResponse* /*response*/) const {
  absl::Status s = shared_memory_->Register(
      request.name(), request.key(), request.offset(), request.byte_size(),
      kGlintSharedMemoryOwner);
  if (s.ok()) {
    GLINT_LOG_DEBUG("registered shared memory '{}' ({}, {} bytes at {})",
                    request.name(), request.key(), request.byte_size(),
                    request.offset());
  }
  return ToGrpcStatus(s);
}

grpc::Status GlintHandlers::UnregisterSharedMemory(
    const v1::UnregisterSharedMemoryRequest& request,
    v1::UnregisterSharedMemoryResponse* /*response*/) const {
  return ToGrpcStatus(shared_memory_->Unregister(request.name()));
}

grpc::Status GlintHandlers::SharedMemoryStatus(
    const v1::SharedMemoryStatusRequest& request,
    v1::SharedMemoryStatusResponse* response) const {
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> regions =
      shared_memory_->Regions(request.name());
  if (!regions.ok()) return ToGrpcStatus(regions.status());
  for (const SharedMemoryRegionInfo& info : *regions) {
    SharedMemoryRegionToProto(info, response->add_regions());
  }
  return grpc::Status::OK;
}

absl::StatusOr<GlintHandlers::PreparedRun> GlintHandlers::PrepareRun(
    const v1::RunNetworkRequest& request,
    v1::RunNetworkResponse* response) const {
  absl::StatusOr<DecodedRunRequest> decoded =
      DecodeRunRequest(request, *shared_memory_);
  if (!decoded.ok()) return decoded.status();
  PreparedRun run;
  run.name = request.name();
  run.inputs = std::move(decoded->inputs);
  run.options = decoded->options;
  run.options.priority = request.priority();
  // The responder keeps the output windows (and so their regions) until
  // the reply is made.
  auto windows = std::make_shared<const DecodedRunRequest>(*std::move(decoded));
  run.respond =
      [response, windows](
          absl::StatusOr<std::vector<NamedTensor>> outputs) -> grpc::Status {
    if (!outputs.ok()) return ToGrpcStatus(outputs.status());
    if (absl::Status s = EncodeRunResponse(*windows, *outputs, response);
        !s.ok()) {
      response->Clear();
      return ToGrpcStatus(s);
    }
    if (windows->options.trace != nullptr) {
      response->set_trace_json(windows->options.trace->ToChromeJson());
    }
    return grpc::Status::OK;
  };
  return run;
}

void GlintHandlers::RunNetwork(const v1::RunNetworkRequest& request,
                               v1::RunNetworkResponse* response,
                               absl::Time deadline,
                               std::shared_ptr<const CancellationToken> cancel,
                               FinishCallback finish) const {
  absl::StatusOr<PreparedRun> run = PrepareRun(request, response);
  if (!run.ok()) {
    finish(ToGrpcStatus(run.status()));
    return;
  }
  run->options.deadline = deadline;
  RunForCall(*host_manager_, run->name, std::move(run->inputs),
             std::move(run->options), std::move(cancel),
             std::move(run->respond), std::move(finish));
}

GlintServiceImpl::GlintServiceImpl(HostManager* host_manager,
                                   WorkerPool* blocking,
                                   const Authorizer* authorizer,
                                   SharedMemoryRegistry* shared_memory,
                                   RequestBudget* request_budget,
                                   UploadOptions uploads)
    : host_manager_(host_manager),
      own_shared_memory_(shared_memory == nullptr
                             ? std::make_unique<SharedMemoryRegistry>()
                             : nullptr),
      handlers_(host_manager, shared_memory == nullptr
                                  ? own_shared_memory_.get()
                                  : shared_memory),
      blocking_(blocking),
      authorizer_(authorizer),
      request_budget_(request_budget),
      uploads_(std::move(uploads)),
      idle_uploads_(uploads_.idle_timeout == absl::InfiniteDuration()
                        ? nullptr
                        : std::make_unique<IdleCallWatch>([&] {
                            IdleCallWatchOptions watch;
                            watch.idle_timeout = uploads_.idle_timeout;
                            watch.check_interval = std::min(
                                absl::Seconds(1), uploads_.idle_timeout / 4);
                            return watch;
                          }())) {}

grpc::Status GlintServiceImpl::Authorize(
    const grpc::CallbackServerContext& context,
    absl::string_view method) const {
  if (authorizer_ == nullptr) return grpc::Status::OK;
  return AuthorizeCall(authorizer_, context,
                       absl::StrCat("/glint.v1.HostManager/", method));
}

grpc::ServerUnaryReactor* GlintServiceImpl::AddNetwork(
    grpc::CallbackServerContext* context, const v1::AddNetworkRequest* request,
    v1::AddNetworkResponse* response) {
  if (grpc::Status s = Authorize(*context, "AddNetwork"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishOnPool(context, *blocking_, [this, request, response] {
    return handlers_.AddNetwork(*request, response);
  });
}

namespace {

// AddNetworkStream's reactor: each message is written to the model's file
// on `pool` (disk writes are not a callback's short work), and the next
// read starts once it is, so at most one message is held; at the stream's
// end the add runs on `pool` too. Counted in `uploading` (when given) until
// it ends; deletes itself when gRPC is done with the call. With a `watch`,
// a call that waits too long for its client's next message is cancelled
// (IdleCallWatch).
class AddNetworkStreamReactor
    : public grpc::ServerReadReactor<v1::AddNetworkChunk> {
 public:
  // Answers `refused` at once when it is not OK.
  AddNetworkStreamReactor(grpc::CallbackServerContext* context,
                          const GlintHandlers& handlers, WorkerPool& pool,
                          std::string dir, v1::AddNetworkResponse* response,
                          std::atomic<int>* uploading, IdleCallWatch* watch,
                          grpc::Status refused)
      : context_(context),
        handlers_(handlers),
        pool_(pool),
        response_(response),
        uploading_(uploading),
        upload_(std::move(dir), kMaxModelBytes) {
    if (!refused.ok()) {
      Finish(std::move(refused));
      return;
    }
    // TryCancel is safe from any thread and causes no reaction inline.
    if (watch != nullptr) {
      watched_ = watch->Watch([context] { context->TryCancel(); });
    }
    Read();
  }

  void OnReadDone(bool ok) override {
    if (watched_ != nullptr) watched_->Working();
    if (!ok) {
      // The stream ended: the client's last write, or a broken call.
      if (watched_ != nullptr && watched_->cancelled()) {
        GLINT_LOG_WARN(
            "AddNetworkStream from {}: no message for a while ({} "
            "bytes of '{}' received); the upload was cancelled",
            context_->peer(), upload_.received(), upload_.name());
        // The client has seen CANCELLED already (a server-side cancel
        // sends it); the call still needs its Finish.
        Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                            "AddNetworkStream sent nothing within the "
                            "server's idle timeout"));
        return;
      }
      if (context_->IsCancelled()) {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                            "AddNetworkStream was cancelled"));
        return;
      }
      OnPool(
          [this] { Finish(handlers_.AddUploadedNetwork(upload_, response_)); });
      return;
    }
    OnPool([this] {
      grpc::Status taken = handlers_.TakeUploadChunk(upload_, chunk_);
      if (!taken.ok()) {
        Finish(std::move(taken));
        return;
      }
      chunk_.Clear();
      Read();
    });
  }

  void OnDone() override {
    if (watched_ != nullptr) watched_->Done();
    if (uploading_ != nullptr) uploading_->fetch_sub(1);
    delete this;
  }

 private:
  void Read() {
    if (watched_ != nullptr) watched_->Waiting();
    StartRead(&chunk_);
  }

  void OnPool(std::function<void()> task) {
    absl::Status scheduled = pool_.Schedule(std::move(task));
    if (!scheduled.ok()) Finish(ToGrpcStatus(scheduled));
  }

  grpc::CallbackServerContext* const context_;
  const GlintHandlers& handlers_;
  WorkerPool& pool_;
  v1::AddNetworkResponse* const response_;
  std::atomic<int>* const uploading_;
  ModelUpload upload_;
  v1::AddNetworkChunk chunk_;
  std::shared_ptr<IdleCallWatch::Call> watched_;  // Null without a watch.
};

std::string DefaultUploadDir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

}  // namespace

grpc::ServerReadReactor<v1::AddNetworkChunk>*
GlintServiceImpl::AddNetworkStream(grpc::CallbackServerContext* context,
                                   v1::AddNetworkResponse* response) {
  grpc::Status refused = Authorize(*context, "AddNetworkStream");
  // Only authorized calls take an upload's place: anonymous ones cannot
  // keep an administrator's out.
  std::atomic<int>* counted = nullptr;
  if (refused.ok()) {
    if (uploading_.fetch_add(1) >= uploads_.max_concurrent) {
      uploading_.fetch_sub(1);
      refused = grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("glintd takes at most ", uploads_.max_concurrent,
                       " AddNetworkStream uploads at once; retry later"));
    } else {
      counted = &uploading_;
    }
  }
  return new AddNetworkStreamReactor(
      context, handlers_, *blocking_,
      uploads_.dir.empty() ? DefaultUploadDir() : uploads_.dir, response,
      counted, idle_uploads_.get(), std::move(refused));
}

grpc::ServerUnaryReactor* GlintServiceImpl::RemoveNetwork(
    grpc::CallbackServerContext* context,
    const v1::RemoveNetworkRequest* request,
    v1::RemoveNetworkResponse* response) {
  if (grpc::Status s = Authorize(*context, "RemoveNetwork"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishOnPool(context, *blocking_, [this, request, response] {
    return handlers_.RemoveNetwork(*request, response);
  });
}

grpc::ServerUnaryReactor* GlintServiceImpl::ListNetworks(
    grpc::CallbackServerContext* context,
    const v1::ListNetworksRequest* request,
    v1::ListNetworksResponse* response) {
  if (grpc::Status s = Authorize(*context, "ListNetworks"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishNow(context, handlers_.ListNetworks(*request, response));
}

grpc::ServerUnaryReactor* GlintServiceImpl::GetNetwork(
    grpc::CallbackServerContext* context, const v1::GetNetworkRequest* request,
    v1::GetNetworkResponse* response) {
  if (grpc::Status s = Authorize(*context, "GetNetwork"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishNow(context, handlers_.GetNetwork(*request, response));
}

grpc::ServerUnaryReactor* GlintServiceImpl::RunNetwork(
    grpc::CallbackServerContext* context, const v1::RunNetworkRequest* request,
    v1::RunNetworkResponse* response) {
  if (grpc::Status s = Authorize(*context, "RunNetwork"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  absl::StatusOr<std::unique_ptr<RequestBudget::Charge>> charge =
      ChargeRequest(request_budget_, request->ByteSizeLong());
  if (!charge.ok()) return FinishNow(context, ToGrpcStatus(charge.status()));
  absl::StatusOr<GlintHandlers::PreparedRun> run =
      handlers_.PrepareRun(*request, response);
  if (!run.ok()) return FinishNow(context, ToGrpcStatus(run.status()));
  // glint.v1 has no timeout parameter: the call's deadline is the run's.
  run->options.deadline = DeadlineFromGrpc(context->deadline());
  return StartRunReactor(context, *host_manager_, std::move(run->name),
                         std::move(run->inputs), std::move(run->options),
                         std::move(run->respond), *std::move(charge));
}

grpc::ServerUnaryReactor* GlintServiceImpl::GetDevices(
    grpc::CallbackServerContext* context, const v1::GetDevicesRequest* request,
    v1::GetDevicesResponse* response) {
  if (grpc::Status s = Authorize(*context, "GetDevices"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishNow(context, handlers_.GetDevices(*request, response));
}

grpc::ServerUnaryReactor* GlintServiceImpl::GetStatistics(
    grpc::CallbackServerContext* context,
    const v1::GetStatisticsRequest* request,
    v1::GetStatisticsResponse* response) {
  if (grpc::Status s = Authorize(*context, "GetStatistics"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishNow(context, handlers_.GetStatistics(*request, response));
}

grpc::ServerUnaryReactor* GlintServiceImpl::RegisterSharedMemory(
    grpc::CallbackServerContext* context,
    const v1::RegisterSharedMemoryRequest* request,
    v1::RegisterSharedMemoryResponse* response) {
  if (grpc::Status s = Authorize(*context, "RegisterSharedMemory"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  // Opens and maps an object: a few system calls, no waiting.
  return FinishNow(context, handlers_.RegisterSharedMemory(*request, response));
}

grpc::ServerUnaryReactor* GlintServiceImpl::UnregisterSharedMemory(
    grpc::CallbackServerContext* context,
    const v1::UnregisterSharedMemoryRequest* request,
    v1::UnregisterSharedMemoryResponse* response) {
  if (grpc::Status s = Authorize(*context, "UnregisterSharedMemory");
      !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishNow(context,
                   handlers_.UnregisterSharedMemory(*request, response));
}

grpc::ServerUnaryReactor* GlintServiceImpl::SharedMemoryStatus(
    grpc::CallbackServerContext* context,
    const v1::SharedMemoryStatusRequest* request,
    v1::SharedMemoryStatusResponse* response) {
  if (grpc::Status s = Authorize(*context, "SharedMemoryStatus"); !s.ok()) {
    return FinishNow(context, std::move(s));
  }
  return FinishNow(context, handlers_.SharedMemoryStatus(*request, response));
}

}  // namespace glint
