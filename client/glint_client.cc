#include "client/glint_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/limits.h"
#include "proto/proto_convert.h"
#include "proto/status_util.h"

namespace glint {

std::shared_ptr<grpc::Channel> GlintClient::CreateChannel(
    const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

absl::StatusOr<std::unique_ptr<GlintClient>> GlintClient::Connect(
    const std::string& target, ClientOptions options) {
  std::shared_ptr<grpc::Channel> channel = CreateChannel(target);
  const auto deadline =
      std::chrono::system_clock::now() +
      absl::ToChronoMilliseconds(options.connect_timeout);
  if (!channel->WaitForConnected(deadline)) {
    return absl::UnavailableError(absl::StrCat(
        "cannot connect to glintd at ", target, " within ",
        absl::FormatDuration(options.connect_timeout),
        " (is it running? see --server)"));
  }
  return std::make_unique<GlintClient>(std::move(channel), options);
}

GlintClient::GlintClient(std::shared_ptr<grpc::Channel> channel,
                         ClientOptions options)
    : options_(options),
      channel_(std::move(channel)),
      stub_(v1::HostManager::NewStub(channel_)) {}

void GlintClient::SetDeadline(grpc::ClientContext* context,
                              absl::Duration timeout) const {
  if (timeout == absl::InfiniteDuration()) return;
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(timeout));
}

absl::StatusOr<NetworkInfo> GlintClient::AddNetwork(
    absl::string_view name, std::string onnx_model,
    const AddNetworkOptions& options) {
  v1::AddNetworkRequest request;
  request.set_name(std::string(name));
  request.set_model(std::move(onnx_model));
  AddNetworkOptionsToProto(options, request.mutable_options());
  v1::AddNetworkResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, options_.rpc_timeout);
  grpc::Status s = stub_->AddNetwork(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return NetworkInfoFromProto(response.network());
}

absl::Status GlintClient::RemoveNetwork(absl::string_view name) {
  v1::RemoveNetworkRequest request;
  request.set_name(std::string(name));
  v1::RemoveNetworkResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, options_.rpc_timeout);
  return FromGrpcStatus(stub_->RemoveNetwork(&context, request, &response));
}

absl::StatusOr<std::vector<NetworkInfo>> GlintClient::ListNetworks() {
  v1::ListNetworksResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, options_.rpc_timeout);
  grpc::Status s =
      stub_->ListNetworks(&context, v1::ListNetworksRequest(), &response);
  if (!s.ok()) return FromGrpcStatus(s);
  std::vector<NetworkInfo> networks;
  for (const v1::NetworkInfo& n : response.networks()) {
    networks.push_back(NetworkInfoFromProto(n));
  }
  return networks;
}

absl::StatusOr<NetworkInfo> GlintClient::GetNetwork(absl::string_view name,
                                                    bool include_dot) {
  v1::GetNetworkRequest request;
  request.set_name(std::string(name));
  request.set_include_dot(include_dot);
  v1::GetNetworkResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, options_.rpc_timeout);
  grpc::Status s = stub_->GetNetwork(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return NetworkInfoFromProto(response.network());
}

absl::StatusOr<std::vector<NamedTensor>> GlintClient::RunNetwork(
    absl::string_view name, const std::vector<NamedTensor>& inputs,
    const std::vector<std::string>& requested_outputs,
    absl::Duration timeout, std::string* trace_json) {
  v1::RunNetworkRequest request;
  request.set_name(std::string(name));
  request.set_trace(trace_json != nullptr);
  for (const NamedTensor& t : inputs) {
    absl::Status s = TensorToProto(t, request.add_inputs());
    if (!s.ok()) return s;
  }
  for (const std::string& o : requested_outputs) {
    request.add_requested_outputs(o);
  }
  v1::RunNetworkResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  grpc::Status s = stub_->RunNetwork(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  if (trace_json != nullptr) *trace_json = response.trace_json();
  absl::StatusOr<std::vector<NamedTensor>> outputs =
      NamedTensorsFromProto(response.outputs());
  if (!outputs.ok()) {
    // The server sent something malformed: not the caller's argument.
    return absl::InternalError(absl::StrCat("malformed reply from glintd: ",
                                            outputs.status().message()));
  }
  return outputs;
}

absl::StatusOr<std::vector<DeviceInfo>> GlintClient::GetDevices() {
  v1::GetDevicesResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, options_.rpc_timeout);
  grpc::Status s =
      stub_->GetDevices(&context, v1::GetDevicesRequest(), &response);
  if (!s.ok()) return FromGrpcStatus(s);
  std::vector<DeviceInfo> devices;
  for (const v1::DeviceInfo& d : response.devices()) {
    devices.push_back(DeviceInfoFromProto(d));
  }
  return devices;
}

absl::StatusOr<ServingStatistics> GlintClient::GetStatistics(
    absl::string_view name) {
  v1::GetStatisticsRequest request;
  request.set_name(std::string(name));
  v1::GetStatisticsResponse response;
  grpc::ClientContext context;
  SetDeadline(&context, options_.rpc_timeout);
  grpc::Status s = stub_->GetStatistics(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  ServingStatistics stats;
  for (const v1::NetworkStatistics& n : response.networks()) {
    stats.networks.push_back(NetworkStatisticsFromProto(n));
  }
  for (const v1::DeviceStatistics& d : response.devices()) {
    stats.devices.push_back(DeviceStatisticsFromProto(d));
  }
  return stats;
}

}  // namespace glint
