#include "runtime/server/server_setup.h"

#include <grpcpp/resource_quota.h>

#include "absl/strings/str_cat.h"

namespace glint {

absl::Status ValidateGrpcServerOptions(const GrpcServerOptions& options) {
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError("the message size limit must be positive");
  }
  if (options.memory_quota_bytes <
      static_cast<uint64_t>(options.max_message_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the gRPC memory quota (", options.memory_quota_bytes,
        " bytes) must hold at least one message of the largest size (",
        options.max_message_bytes, " bytes)"));
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
  builder->AddListeningPort(options.listen, grpc::InsecureServerCredentials(),
                            port);
  builder->SetMaxReceiveMessageSize(options.max_message_bytes);
  builder->SetMaxSendMessageSize(options.max_message_bytes);
  // The builder copies the quota's reference; this object may go.
  grpc::ResourceQuota quota("glintd");
  quota.Resize(static_cast<size_t>(options.memory_quota_bytes));
  quota.SetMaxThreads(options.max_threads);
  builder->SetResourceQuota(quota);
}

}  // namespace glint
