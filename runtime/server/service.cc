#include "runtime/server/service.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "proto/proto_convert.h"
#include "proto/status_util.h"
#include "runtime/server/grpc_auth.h"

namespace glint {

GlintHandlers::GlintHandlers(HostManager* host_manager)
    : host_manager_(host_manager) {}

grpc::Status GlintHandlers::AddNetwork(const v1::AddNetworkRequest& request,
                                       v1::AddNetworkResponse* response) const {
  absl::StatusOr<AddNetworkOptions> options =
      AddNetworkOptionsFromProto(request.options());
  if (!options.ok()) return ToGrpcStatus(options.status());
  absl::StatusOr<NetworkInfo> info =
      host_manager_->AddNetwork(request.name(), request.model(), *options);
  // HostManager logs the outcome; logging here too would say it twice.
  if (!info.ok()) return ToGrpcStatus(info.status());
  NetworkInfoToProto(*info, response->mutable_network());
  return grpc::Status::OK;
}

grpc::Status GlintHandlers::RemoveNetwork(
    const v1::RemoveNetworkRequest& request,
    v1::RemoveNetworkResponse* /*response*/) const {
  absl::Status status = host_manager_->RemoveNetwork(request.name());
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

absl::StatusOr<GlintHandlers::PreparedRun> GlintHandlers::PrepareRun(
    const v1::RunNetworkRequest& request,
    v1::RunNetworkResponse* response) const {
  absl::StatusOr<std::vector<NamedTensor>> inputs =
      NamedTensorsFromProto(request.inputs());
  if (!inputs.ok()) return inputs.status();
  PreparedRun run;
  run.name = request.name();
  run.inputs = *std::move(inputs);
  RunOptions& options = run.options;
  options.requested_outputs.assign(request.requested_outputs().begin(),
                                   request.requested_outputs().end());
  options.priority = request.priority();
  if (request.trace()) options.trace = std::make_shared<RunTrace>();
  run.respond =
      [response, trace = options.trace](
          absl::StatusOr<std::vector<NamedTensor>> outputs) -> grpc::Status {
    if (!outputs.ok()) return ToGrpcStatus(outputs.status());
    for (const NamedTensor& t : *outputs) {
      absl::Status s = TensorToProto(t, response->add_outputs());
      // An output that cannot travel is the runtime's fault, not the
      // caller's.
      if (!s.ok()) return ToGrpcStatus(absl::InternalError(s.message()));
    }
    if (trace != nullptr) response->set_trace_json(trace->ToChromeJson());
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
                                   const Authorizer* authorizer)
    : host_manager_(host_manager),
      handlers_(host_manager),
      blocking_(blocking),
      authorizer_(authorizer) {}

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
  absl::StatusOr<GlintHandlers::PreparedRun> run =
      handlers_.PrepareRun(*request, response);
  if (!run.ok()) return FinishNow(context, ToGrpcStatus(run.status()));
  return StartRunReactor(context, *host_manager_, std::move(run->name),
                         std::move(run->inputs), std::move(run->options),
                         std::move(run->respond));
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

}  // namespace glint
