// Bearer tokens with scopes: who may call what on glintd, decided without
// any transport type, so the gRPC services (grpc_auth.h) and the HTTP port
// share one token file, one method table and one decision.
//
// Token file (--auth_tokens=FILE), one token per line:
//
//   # comment lines start with '#'; blank lines are skipped
//   TOKEN  SCOPE[,SCOPE...]   [# trailing comment]
//
//   3f9c0e6b2a7d41c8a5e2b9d07c61f4aa  infer
//   9b1d7e25c4f80a36e1d2c7b59f0a8e43  infer,admin
//
// TOKEN: at least kMinTokenLength characters of RFC 6750's b64token
// alphabet (A-Z a-z 0-9 - . _ ~ + /, then optional trailing '='), the form
// an `authorization: Bearer TOKEN` header carries; `openssl rand -hex 16`
// makes one. SCOPE: `infer` or `admin`. A malformed line, an unknown scope
// or a token listed twice rejects the whole file, naming the line; so does
// a file without tokens (it would lock every caller out).
//
// Scopes are independent, as Triton's restricted protocol groups are: an
// `admin` token may add and remove networks but not run them or list them
// unless its line also says `infer`. This keeps a deploy credential (admin
// only) from reading inference data, and a client credential (infer only)
// from changing what is served; an operator's token lists both.
//
// Tokens are kept only as SHA-256 digests and a presented token is hashed
// and compared with every digest in constant time (CRYPTO_memcmp, no early
// exit), so timing reveals neither a matching prefix nor a length.
#ifndef GLINT_RUNTIME_SERVER_COMMON_AUTH_H_
#define GLINT_RUNTIME_SERVER_COMMON_AUTH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace glint {

// What a call needs. kOpen needs no token (health checks, reflection).
enum class Scope : uint8_t { kOpen, kInfer, kAdmin };

// "open", "infer", "admin".
absl::string_view ScopeName(Scope scope);

inline constexpr size_t kMinTokenLength = 16;

// The scope a gRPC method needs, by its full path "/package.Service/Method"
// (grpc::GenericServerContext::method(), the HTTP/2 :path):
//
//   glint.v1.HostManager: RunNetwork, ListNetworks, GetNetwork, GetDevices,
//       GetStatistics, SharedMemoryStatus -> infer; AddNetwork,
//       RemoveNetwork, RegisterSharedMemory, UnregisterSharedMemory ->
//       admin.
//   inference.GRPCInferenceService (Triton/KServe v2): ServerLive,
//       ServerReady, ModelReady, ServerMetadata, ModelMetadata, ModelConfig,
//       ModelStatistics, ModelInfer, ModelStreamInfer, the two shared-memory
//       Status calls -> infer; RepositoryIndex, RepositoryModelLoad,
//       RepositoryModelUnload, the shared-memory Register/Unregister calls,
//       TraceSetting, LogSettings -> admin.
//   grpc.health.v1.Health, grpc.reflection.v1alpha.ServerReflection -> open.
//
// A method missing from the table needs admin: a new RPC is closed until
// someone decides otherwise.
Scope ScopeOfMethod(absl::string_view method_path);

// Every method the table names, for tests and documentation.
std::vector<std::string> MethodsWithScopes();

// The token of an `authorization` header value "Bearer TOKEN" (the scheme
// is case-insensitive, surrounding blanks are dropped); empty when the
// value is empty or uses another scheme. Shared by gRPC and HTTP.
absl::string_view BearerToken(absl::string_view authorization);

// Decides calls against a parsed token file. Immutable after creation, so
// thread-safe.
class Authorizer {
 public:
  // Parses the token file format above; `source` names the file in errors
  // ("FILE:LINE: ..."). INVALID_ARGUMENT for any malformed content.
  static absl::StatusOr<std::unique_ptr<Authorizer>> Parse(
      absl::string_view text, absl::string_view source = "token file");

  // Reads and parses `path`: NOT_FOUND / PERMISSION_DENIED when it cannot
  // be read, INVALID_ARGUMENT when malformed. Logs a warning when the file
  // is readable by every user (tokens are secrets: chmod 600 it).
  static absl::StatusOr<std::unique_ptr<Authorizer>> FromFile(
      const std::string& path);

  // OK when `scope` is kOpen or `token` holds `scope`. UNAUTHENTICATED when
  // the token is empty or unknown (the caller has not proven who it is);
  // PERMISSION_DENIED when the token is known but lacks `scope`. Messages
  // never repeat the token.
  absl::Status Authorize(absl::string_view token, Scope scope) const;

  // Authorize(token, ScopeOfMethod(method_path)), with the method named in
  // the messages.
  absl::Status AuthorizeMethod(absl::string_view token,
                               absl::string_view method_path) const;

  size_t num_tokens() const { return entries_.size(); }

 private:
  struct Entry {
    std::string digest;  // SHA-256 of the token.
    bool infer = false;
    bool admin = false;
  };

  explicit Authorizer(std::vector<Entry> entries)
      : entries_(std::move(entries)) {}

  // The entry whose digest equals the token's, or null; examines every
  // entry whatever matches.
  const Entry* Find(absl::string_view token) const;

  const std::vector<Entry> entries_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_COMMON_AUTH_H_
