#include "client/glint_client.h"

#include <grpcpp/generic/generic_stub.h>

#include <filesystem>
#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/file_util.h"
#include "proto/limits.h"
#include "proto/proto_convert.h"
#include "proto/status_util.h"

namespace glint {

namespace {

// See ChannelArgs() in the header.
constexpr char kClientServiceConfig[] = R"json({
  "loadBalancingConfig": [{"round_robin": {}}],
  "healthCheckConfig": {"serviceName": ""},
  "methodConfig": [{
    "name": [{"service": "glint.v1.HostManager", "method": "RunNetwork"},
             {"service": "inference.GRPCInferenceService",
              "method": "ModelInfer"}],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "0.05s",
      "maxBackoff": "0.5s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json";

}  // namespace

grpc::ChannelArguments GlintClient::ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  args.SetServiceConfigJSON(kClientServiceConfig);
  // A request is kept for a retry only up to this size; a larger one is
  // sent once (gRPC commits the call), so big tensors are not held twice.
  args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, 32 << 20);
  // A daemon that restarts is reconnected within about a second, not after
  // gRPC's default backoff (1 s growing to 120 s).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return args;
}

std::shared_ptr<grpc::Channel> GlintClient::CreateChannel(
    const std::string& target) {
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   ChannelArgs());
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  const std::string token(absl::StripAsciiWhitespace(
      absl::string_view(*text).substr(0, text->find('\n'))));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token file '", path, "' has no token on its first line"));
  }
  return token;
}

namespace {

bool TlsOn(const ClientOptions& options) {
  return options.tls || !options.tls_ca_file.empty() ||
         !options.tls_cert_file.empty();
}

absl::StatusOr<std::string> ReadPem(absl::string_view what,
                                    const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", text.status().message()));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> GlintClient::OpenChannel(
    const std::string& target, const ClientOptions& options) {
  if (!TlsOn(options)) return CreateChannel(target);
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "a TLS client certificate needs its key and a key its certificate "
        "(--tls_cert and --tls_key)");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("--tls_ca", options.tls_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!options.tls_cert_file.empty()) {
    absl::StatusOr<std::string> cert =
        ReadPem("--tls_cert", options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key =
        ReadPem("--tls_key", options.tls_key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  grpc::ChannelArguments args = ChannelArgs();
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

absl::StatusOr<std::unique_ptr<GlintClient>> GlintClient::Connect(
    const std::string& target, ClientOptions options) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      OpenChannel(target, options);
  if (!channel.ok()) return channel.status();
  const auto deadline =
      std::chrono::system_clock::now() +
      absl::ToChronoMilliseconds(options.connect_timeout);
  if (!(*channel)->WaitForConnected(deadline)) {
    return absl::UnavailableError(absl::StrCat(
        "cannot connect to glintd at ", target, " within ",
        absl::FormatDuration(options.connect_timeout),
        TlsOn(options)
            ? " (is it running? does it serve TLS with a certificate "
              "--tls_ca trusts for this name? with --tls_client_ca, pass "
              "--tls_cert and --tls_key)"
            : " (is it running? see --server; if it serves TLS, pass "
              "--tls_ca)"));
  }
  return std::make_unique<GlintClient>(*std::move(channel), options);
}

GlintClient::GlintClient(std::shared_ptr<grpc::Channel> channel,
                         ClientOptions options)
    : options_(options),
      channel_(std::move(channel)),
      stub_(v1::HostManager::NewStub(channel_)) {}

void GlintClient::Authenticate(grpc::ClientContext* context) const {
  if (options_.token.empty()) return;
  context->AddMetadata("authorization", absl::StrCat("Bearer ", options_.token));
}

void GlintClient::Prepare(grpc::ClientContext* context,
                          absl::Duration timeout) const {
  Authenticate(context);
  if (timeout == absl::InfiniteDuration()) return;
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(timeout));
}

absl::StatusOr<NetworkInfo> GlintClient::AddNetwork(
    absl::string_view name, absl::string_view onnx_model,
    const AddNetworkOptions& options) {
  size_t offset = 0;
  return AddStreamed(name, options, onnx_model.size(),
                     [&](size_t max_bytes, std::string* piece) {
                       const absl::string_view next =
                           onnx_model.substr(offset, max_bytes);
                       piece->assign(next.data(), next.size());
                       offset += piece->size();
                       return absl::OkStatus();
                     });
}

absl::StatusOr<NetworkInfo> GlintClient::AddNetworkFromFile(
    absl::string_view name, const std::string& path,
    const AddNetworkOptions& options) {
  absl::StatusOr<FileReader> reader = FileReader::Open(path);
  if (absl::IsInvalidArgument(reader.status()) &&
      !std::filesystem::is_directory(path)) {
    // A pipe or a device: its size is known only once read.
    absl::StatusOr<std::string> model = ReadFileToString(path);
    if (!model.ok()) return model.status();
    return AddNetwork(name, *model, options);
  }
  if (!reader.ok()) return reader.status();
  return AddStreamed(name, options, reader->size(),
                     [&](size_t max_bytes, std::string* piece) {
                       return reader->Next(max_bytes, piece);
                     });
}

absl::StatusOr<NetworkInfo> GlintClient::AddStreamed(
    absl::string_view name, const AddNetworkOptions& options, uint64_t size,
    const std::function<absl::Status(size_t max_bytes, std::string* piece)>&
        next) {
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
  v1::AddNetworkResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::AddNetworkChunk>> writer =
      stub_->AddNetworkStream(&context, &response);
  v1::AddNetworkChunk chunk;
  chunk.set_name(std::string(name));
  AddNetworkOptionsToProto(options, chunk.mutable_options());
  chunk.set_model_size(size);
  absl::Status read;
  for (uint64_t sent = 0;;) {
    read = next(kModelChunkBytes, chunk.mutable_model());
    if (!read.ok()) {
      context.TryCancel();
      break;
    }
    sent += chunk.model().size();
    // A failed write means the call has ended: Finish tells why (the
    // server refused the name, the options, the size...).
    if (!writer->Write(chunk)) break;
    if (sent >= size) break;
    chunk.Clear();
  }
  writer->WritesDone();
  const grpc::Status s = writer->Finish();
  if (!read.ok()) return read;
  if (!s.ok()) return FromGrpcStatus(s);
  return NetworkInfoFromProto(response.network());
}

absl::Status GlintClient::RemoveNetwork(absl::string_view name) {
  v1::RemoveNetworkRequest request;
  request.set_name(std::string(name));
  v1::RemoveNetworkResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
  return FromGrpcStatus(stub_->RemoveNetwork(&context, request, &response));
}

absl::StatusOr<std::vector<NetworkInfo>> GlintClient::ListNetworks() {
  v1::ListNetworksResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
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
  Prepare(&context, options_.rpc_timeout);
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
  Prepare(&context, timeout);
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

absl::StatusOr<v1::RunNetworkRequest> GlintClient::MakeRunRequest(
    absl::string_view name, const RunNetworkCall& call) {
  v1::RunNetworkRequest request;
  request.set_name(std::string(name));
  request.set_trace(call.trace);
  request.set_profile(call.profile);
  for (const NamedTensor& t : call.inputs) {
    absl::Status s = TensorToProto(t, request.add_inputs());
    if (!s.ok()) return s;
  }
  for (const SharedMemoryTensor& t : call.shared_memory_inputs) {
    SharedMemoryTensorToProto(t, request.add_inputs());
  }
  for (const std::string& o : call.requested_outputs) {
    request.add_requested_outputs(o);
  }
  for (const auto& [output, ref] : call.output_shared_memory) {
    SharedMemoryRefToProto(ref,
                           &(*request.mutable_output_shared_memory())[output]);
  }
  return request;
}

absl::StatusOr<RunNetworkReply> GlintClient::ParseRunReply(
    v1::RunNetworkResponse& response) {
  RunNetworkReply reply;
  reply.trace_json = std::move(*response.mutable_trace_json());
  for (const v1::Tensor& t : response.outputs()) {
    absl::Status s;
    if (t.has_shared_memory()) {
      absl::StatusOr<SharedMemoryTensor> header =
          SharedMemoryTensorFromProto(t);
      s = header.status();
      if (s.ok()) reply.shared_memory_outputs.push_back(*std::move(header));
    } else {
      absl::StatusOr<NamedTensor> tensor = NamedTensorFromProto(t);
      s = tensor.status();
      if (s.ok()) reply.outputs.push_back(*std::move(tensor));
    }
    if (!s.ok()) {
      // The server sent something malformed: not the caller's argument.
      return absl::InternalError(
          absl::StrCat("malformed reply from glintd: ", s.message()));
    }
  }
  return reply;
}

absl::StatusOr<RunNetworkReply> GlintClient::Run(absl::string_view name,
                                                 const RunNetworkCall& call) {
  absl::StatusOr<v1::RunNetworkRequest> request = MakeRunRequest(name, call);
  if (!request.ok()) return request.status();
  v1::RunNetworkResponse response;
  grpc::ClientContext context;
  Prepare(&context, call.timeout);
  grpc::Status s = stub_->RunNetwork(&context, *request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return ParseRunReply(response);
}

absl::Status GlintClient::RegisterSharedMemory(absl::string_view name,
                                               absl::string_view key,
                                               uint64_t offset,
                                               uint64_t byte_size) {
  v1::RegisterSharedMemoryRequest request;
  request.set_name(std::string(name));
  request.set_key(std::string(key));
  request.set_offset(offset);
  request.set_byte_size(byte_size);
  v1::RegisterSharedMemoryResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
  return FromGrpcStatus(
      stub_->RegisterSharedMemory(&context, request, &response));
}

absl::Status GlintClient::UnregisterSharedMemory(absl::string_view name) {
  v1::UnregisterSharedMemoryRequest request;
  request.set_name(std::string(name));
  v1::UnregisterSharedMemoryResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
  return FromGrpcStatus(
      stub_->UnregisterSharedMemory(&context, request, &response));
}

absl::StatusOr<std::vector<SharedMemoryRegionInfo>>
GlintClient::SharedMemoryStatus(absl::string_view name) {
  v1::SharedMemoryStatusRequest request;
  request.set_name(std::string(name));
  v1::SharedMemoryStatusResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
  grpc::Status s = stub_->SharedMemoryStatus(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  std::vector<SharedMemoryRegionInfo> regions;
  for (const v1::SharedMemoryRegion& r : response.regions()) {
    regions.push_back(SharedMemoryRegionFromProto(r));
  }
  return regions;
}

absl::StatusOr<std::vector<DeviceInfo>> GlintClient::GetDevices() {
  v1::GetDevicesResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
  grpc::Status s =
      stub_->GetDevices(&context, v1::GetDevicesRequest(), &response);
  if (!s.ok()) return FromGrpcStatus(s);
  std::vector<DeviceInfo> devices;
  for (const v1::DeviceInfo& d : response.devices()) {
    devices.push_back(DeviceInfoFromProto(d));
  }
  return devices;
}

absl::StatusOr<std::string> GlintClient::CheckHealth(
    absl::string_view service) {
  // A generic call keeps the client free of generated health stubs:
  // HealthCheckRequest is field 1 (service, a string), HealthCheckResponse
  // field 1 (status, an enum).
  if (service.size() > 127) {
    return absl::InvalidArgumentError(
        "a health service name is at most 127 bytes");
  }
  std::string request_bytes;
  if (!service.empty()) {
    request_bytes.push_back('\x0a');
    request_bytes.push_back(static_cast<char>(service.size()));
    request_bytes.append(service.data(), service.size());
  }
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::GenericStub stub(channel_);
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                 &request, &response, [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  if (!status.ok()) return FromGrpcStatus(status);
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) {
    return absl::InternalError("unreadable health response");
  }
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  int value = 0;  // UNKNOWN, proto3's default, travels as nothing.
  if (bytes.size() == 2 && bytes[0] == '\x08' &&
      static_cast<unsigned char>(bytes[1]) < 0x80) {
    value = bytes[1];
  } else if (!bytes.empty()) {
    return absl::InternalError("malformed health response");
  }
  static constexpr const char* kNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING",
                                           "SERVICE_UNKNOWN"};
  if (value > 3) return absl::StrCat("status ", value);
  return std::string(kNames[value]);
}

absl::StatusOr<ServingStatistics> GlintClient::GetStatistics(
    absl::string_view name) {
  v1::GetStatisticsRequest request;
  request.set_name(std::string(name));
  v1::GetStatisticsResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout);
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
