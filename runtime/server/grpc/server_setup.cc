#include "runtime/server/grpc/server_setup.h"

#include <grpcpp/resource_quota.h>

#include "absl/strings/str_cat.h"

namespace glint {
namespace {

// Below this gRPC could not hold one connection's buffers.
constexpr uint64_t kMinMemoryQuotaBytes = uint64_t{1} << 20;

}  // namespace

absl::Status ValidateGrpcServerOptions(const GrpcServerOptions& options) {
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError("the message size limit must be positive");
  }
  if (options.memory_quota_bytes < kMinMemoryQuotaBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the gRPC memory quota must be at least 1 MiB (got ",
        options.memory_quota_bytes, " bytes)"));
  }
  if (options.max_threads < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("the gRPC thread quota must be at least 2 (got ",
                     options.max_threads, ")"));
  }
  return absl::OkStatus();
}

void ConfigureServerBuilder(const GrpcServerOptions& options,
                            grpc::ServerBuilder* builder, int* port) {
  builder->AddListeningPort(options.listen,
                            options.credentials != nullptr
                                ? options.credentials
                                : grpc::InsecureServerCredentials(),
                            port);
  // gRPC sets SO_REUSEPORT by default: a second glintd on the same port
  // would then bind too and the kernel would spread connections over both.
  // Off, the second one fails to start (as the HTTP port does).
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder->SetMaxReceiveMessageSize(options.max_message_bytes);
  builder->SetMaxSendMessageSize(options.max_message_bytes);
  // The builder copies the quota's reference; this object may go.
  grpc::ResourceQuota quota("glintd");
  quota.Resize(static_cast<size_t>(options.memory_quota_bytes));
  quota.SetMaxThreads(options.max_threads);
  builder->SetResourceQuota(quota);
}

}  // namespace glint
