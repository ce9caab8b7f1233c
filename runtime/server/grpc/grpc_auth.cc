#include "runtime/server/grpc/grpc_auth.h"

#include <utility>

#include "core/logging.h"
#include "proto/status_util.h"

namespace glint {

std::string BearerTokenOfCall(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  // gRPC lowercases metadata keys; a call carries at most one header we
  // honour, the first.
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return {};
  return std::string(
      BearerToken(absl::string_view(it->second.data(), it->second.size())));
}

std::string BearerTokenOfCall(const grpc::ServerContextBase& context) {
  return BearerTokenOfCall(context.client_metadata());
}

grpc::Status AuthorizeCall(const Authorizer* authorizer,
                           const grpc::ServerContextBase& context,
                           absl::string_view method_path) {
  if (authorizer == nullptr) return grpc::Status::OK;
  absl::Status status =
      authorizer->AuthorizeMethod(BearerTokenOfCall(context), method_path);
  if (status.ok()) return grpc::Status::OK;
  if (status.code() == absl::StatusCode::kPermissionDenied) {
    GLINT_LOG_WARN("refused {} from {}: {}", std::string(method_path),
                   context.peer(), std::string(status.message()));
  } else {
    GLINT_LOG_DEBUG("refused {} from {}: {}", std::string(method_path),
                    context.peer(), std::string(status.message()));
  }
  return ToGrpcStatus(status);
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const std::optional<TlsMaterial>& material) {
  if (!material.has_value()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      material->client_ca_pem.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = material->client_ca_pem;
  options.pem_key_cert_pairs.push_back(
      {material->private_key_pem, material->cert_chain_pem});
  return grpc::SslServerCredentials(options);
}

}  // namespace glint
