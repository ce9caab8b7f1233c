// The gRPC side of auth.h and security_options.h: the bearer token of a
// call, the one-line check at the top of each handler, and server
// credentials from the TLS material.
//
// A handler, sync or callback API alike (both contexts derive from
// grpc::ServerContextBase):
//
//   if (grpc::Status s = AuthorizeCall(authorizer_, *context,
//                                      "/glint.v1.HostManager/AddNetwork");
//       !s.ok()) {
//     return s;  // A callback handler: reactor->Finish(s); return reactor;
//   }
//
// Thread-safe: no state of its own.
#ifndef GLINT_RUNTIME_SERVER_GRPC_GRPC_AUTH_H_
#define GLINT_RUNTIME_SERVER_GRPC_GRPC_AUTH_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "runtime/server/common/auth.h"
#include "runtime/server/common/security_options.h"

namespace glint {

// The token of the call's `authorization: Bearer TOKEN` metadata (what
// Triton's and Glint's clients send); empty when there is none.
std::string BearerTokenOfCall(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);
std::string BearerTokenOfCall(const grpc::ServerContextBase& context);

// OK when `authorizer` is null (glintd without --auth_tokens) or allows
// the call's token for `method_path` (auth.h's table); else
// UNAUTHENTICATED or PERMISSION_DENIED as Authorizer::AuthorizeMethod says,
// and a log line naming the peer (debug for UNAUTHENTICATED, which
// scanners cause by the thousand; warn for PERMISSION_DENIED, a known
// token reaching beyond its scope).
grpc::Status AuthorizeCall(const Authorizer* authorizer,
                           const grpc::ServerContextBase& context,
                           absl::string_view method_path);

// SslServerCredentials from `material` (mutual TLS when it has a client
// CA: clients must present a certificate it signed); insecure credentials
// when there is none.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const std::optional<TlsMaterial>& material);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_GRPC_AUTH_H_
