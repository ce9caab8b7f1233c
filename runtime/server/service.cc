#include "runtime/server/service.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "core/logging.h"
#include "proto/proto_convert.h"
#include "proto/status_util.h"
#include "runtime/server/grpc_auth.h"
#include "runtime/server/run_request.h"

namespace glint {

absl::Time DeadlineFromGrpc(std::chrono::system_clock::time_point deadline) {
  // gRPC reports "no deadline" as time_point::max(), or as a date centuries
  // away on some paths; anything beyond a year is as good as never and
  // must not overflow the conversion.
  const auto now = std::chrono::system_clock::now();
  if (deadline >= now + std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

namespace {

// How soon a run notices that its gRPC client cancelled.
constexpr absl::Duration kCancellationPoll = absl::Milliseconds(5);

}  // namespace

absl::StatusOr<std::vector<NamedTensor>> RunUntilDoneOrCancelled(
    HostManager& host_manager, absl::string_view name,
    std::vector<NamedTensor> inputs, RunOptions options,
    const std::function<bool()>& client_gone) {
  auto cancel = std::make_shared<CancellationToken>();
  options.cancel = cancel;
  absl::Notification finished;
  absl::StatusOr<std::vector<NamedTensor>> outputs;
  host_manager.RunNetworkAsync(
      name, std::move(inputs), options,
      [&](absl::StatusOr<std::vector<NamedTensor>> result) {
        outputs = std::move(result);
        finished.Notify();
      });
  // The sync API has no cancellation callback: look at the client while
  // waiting, and let the run skip what it has not started once it is gone.
  while (!finished.WaitForNotificationWithTimeout(kCancellationPoll)) {
    if (client_gone()) cancel->Cancel();
  }
  return outputs;
}

GlintServiceImpl::GlintServiceImpl(HostManager* host_manager,
                                   const Authorizer* authorizer,
                                   SharedMemoryRegistry* shared_memory)
    : host_manager_(host_manager),
      authorizer_(authorizer),
      own_shared_memory_(shared_memory == nullptr
                             ? std::make_unique<SharedMemoryRegistry>()
                             : nullptr),
      shared_memory_(shared_memory == nullptr ? own_shared_memory_.get()
                                              : shared_memory) {}

grpc::Status GlintServiceImpl::AddNetwork(grpc::ServerContext* context,
                                          const v1::AddNetworkRequest* request,
                                          v1::AddNetworkResponse* response) {
  if (grpc::Status s = AuthorizeCall(authorizer_, *context,
                                     "/glint.v1.HostManager/AddNetwork");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<AddNetworkOptions> options =
      AddNetworkOptionsFromProto(request->options());
  if (!options.ok()) return ToGrpcStatus(options.status());
  absl::StatusOr<NetworkInfo> info =
      host_manager_->AddNetwork(request->name(), request->model(), *options);
  // HostManager logs the outcome; logging here too would say it twice.
  if (!info.ok()) return ToGrpcStatus(info.status());
  NetworkInfoToProto(*info, response->mutable_network());
  return grpc::Status::OK;
}

grpc::Status GlintServiceImpl::RemoveNetwork(
    grpc::ServerContext* context, const v1::RemoveNetworkRequest* request,
    v1::RemoveNetworkResponse* /*response*/) {
  if (grpc::Status s = AuthorizeCall(authorizer_, *context,
                                     "/glint.v1.HostManager/RemoveNetwork");
      !s.ok()) {
    return s;
  }
  absl::Status status = host_manager_->RemoveNetwork(request->name());
  if (status.ok()) GLINT_LOG_INFO("removed network '{}'", request->name());
  return ToGrpcStatus(status);
}

grpc::Status GlintServiceImpl::ListNetworks(
    grpc::ServerContext* context,
    const v1::ListNetworksRequest* /*request*/,
    v1::ListNetworksResponse* response) {
  if (grpc::Status s = AuthorizeCall(authorizer_, *context,
                                     "/glint.v1.HostManager/ListNetworks");
      !s.ok()) {
    return s;
  }
  for (const NetworkInfo& info : host_manager_->ListNetworks()) {
    NetworkInfoToProto(info, response->add_networks());
  }
  return grpc::Status::OK;
}

grpc::Status GlintServiceImpl::GetNetwork(grpc::ServerContext* context,
                                          const v1::GetNetworkRequest* request,
                                          v1::GetNetworkResponse* response) {
  if (grpc::Status s = AuthorizeCall(authorizer_, *context,
                                     "/glint.v1.HostManager/GetNetwork");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<NetworkInfo> info = host_manager_->GetNetwork(request->name());
  if (!info.ok()) return ToGrpcStatus(info.status());
  NetworkInfoToProto(*info, response->mutable_network(),
                     request->include_dot());
  return grpc::Status::OK;
}

grpc::Status GlintServiceImpl::RunNetwork(grpc::ServerContext* context,
                                          const v1::RunNetworkRequest* request,
                                          v1::RunNetworkResponse* response) {
  if (grpc::Status s = AuthorizeCall(authorizer_, *context,
                                     "/glint.v1.HostManager/RunNetwork");
      !s.ok()) {
    return s;
  }
  // Shared-memory inputs are borrowed: `run` keeps their regions (and the
  // output windows) mapped until the reply is made.
  absl::StatusOr<PreparedRun> run = PrepareRun(*request, *shared_memory_);
  if (!run.ok()) return ToGrpcStatus(run.status());
  RunOptions options = run->options;
  options.deadline = DeadlineFromGrpc(context->deadline());
  absl::StatusOr<std::vector<NamedTensor>> outputs = RunUntilDoneOrCancelled(
      *host_manager_, request->name(), std::move(run->inputs), options,
      [context] { return context->IsCancelled(); });
  if (!outputs.ok()) return ToGrpcStatus(outputs.status());
  if (absl::Status s = MakeRunResponse(*run, *outputs, response); !s.ok()) {
    response->Clear();
    return ToGrpcStatus(s);
  }
  if (options.trace != nullptr) {
    response->set_trace_json(options.trace->ToChromeJson());
  }
  return grpc::Status::OK;
}

grpc::Status GlintServiceImpl::GetDevices(
    grpc::ServerContext* context, const v1::GetDevicesRequest* /*request*/,
    v1::GetDevicesResponse* response) {
  if (grpc::Status s = AuthorizeCall(authorizer_, *context,
                                     "/glint.v1.HostManager/GetDevices");
      !s.ok()) {
    return s;
  }
  for (const DeviceInfo& info : host_manager_->GetDevices()) {
    DeviceInfoToProto(info, response->add_devices());
  }
  return grpc::Status::OK;
}

grpc::Status GlintServiceImpl::RegisterSharedMemory(
    grpc::ServerContext* context,
    const v1::RegisterSharedMemoryRequest* request,
    v1::RegisterSharedMemoryResponse* /*response*/) {
  if (grpc::Status s = AuthorizeCall(
          authorizer_, *context, "/glint.v1.HostManager/RegisterSharedMemory");
      !s.ok()) {
    return s;
  }
  absl::Status s = shared_memory_->Register(
      request->name(), request->key(), request->offset(), request->byte_size());
  if (s.ok()) {
    GLINT_LOG_DEBUG("registered shared memory '{}' ({}, {} bytes at {})",
                    request->name(), request->key(), request->byte_size(),
                    request->offset());
  }
  return ToGrpcStatus(s);
}

grpc::Status GlintServiceImpl::UnregisterSharedMemory(
    grpc::ServerContext* context,
    const v1::UnregisterSharedMemoryRequest* request,
    v1::UnregisterSharedMemoryResponse* /*response*/) {
  if (grpc::Status s =
          AuthorizeCall(authorizer_, *context,
                        "/glint.v1.HostManager/UnregisterSharedMemory");
      !s.ok()) {
    return s;
  }
  return ToGrpcStatus(shared_memory_->Unregister(request->name()));
}

grpc::Status GlintServiceImpl::SharedMemoryStatus(
    grpc::ServerContext* context,
    const v1::SharedMemoryStatusRequest* request,
    v1::SharedMemoryStatusResponse* response) {
  if (grpc::Status s = AuthorizeCall(
          authorizer_, *context, "/glint.v1.HostManager/SharedMemoryStatus");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> regions =
      shared_memory_->Regions(request->name());
  if (!regions.ok()) return ToGrpcStatus(regions.status());
  for (const SharedMemoryRegionInfo& info : *regions) {
    SharedMemoryRegionToProto(info, response->add_regions());
  }
  return grpc::Status::OK;
}

}  // namespace glint
