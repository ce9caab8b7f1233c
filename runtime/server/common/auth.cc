#include "runtime/server/common/auth.h"

#include <openssl/crypto.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/digest.h"
#include "core/logging.h"

namespace glint {
namespace {

struct MethodScope {
  const char* path;
  Scope scope;
};

// The one table; ScopeOfMethod's comment in auth.h says it in words.
constexpr MethodScope kMethodScopes[] = {
    {"/glint.v1.HostManager/RunNetwork", Scope::kInfer},
    {"/glint.v1.HostManager/ListNetworks", Scope::kInfer},
    {"/glint.v1.HostManager/GetNetwork", Scope::kInfer},
    {"/glint.v1.HostManager/GetDevices", Scope::kInfer},
    {"/glint.v1.HostManager/GetStatistics", Scope::kInfer},
    {"/glint.v1.HostManager/SharedMemoryStatus", Scope::kInfer},
    {"/glint.v1.HostManager/AddNetwork", Scope::kAdmin},
    {"/glint.v1.HostManager/AddNetworkStream", Scope::kAdmin},
    {"/glint.v1.HostManager/RemoveNetwork", Scope::kAdmin},
    // As Triton's: registering shared memory lets glintd map a host object.
    {"/glint.v1.HostManager/RegisterSharedMemory", Scope::kAdmin},
    {"/glint.v1.HostManager/UnregisterSharedMemory", Scope::kAdmin},

    {"/inference.GRPCInferenceService/ServerLive", Scope::kInfer},
    {"/inference.GRPCInferenceService/ServerReady", Scope::kInfer},
    {"/inference.GRPCInferenceService/ModelReady", Scope::kInfer},
    {"/inference.GRPCInferenceService/ServerMetadata", Scope::kInfer},
    {"/inference.GRPCInferenceService/ModelMetadata", Scope::kInfer},
    {"/inference.GRPCInferenceService/ModelConfig", Scope::kInfer},
    {"/inference.GRPCInferenceService/ModelStatistics", Scope::kInfer},
    {"/inference.GRPCInferenceService/ModelInfer", Scope::kInfer},
    {"/inference.GRPCInferenceService/ModelStreamInfer", Scope::kInfer},
    {"/inference.GRPCInferenceService/SystemSharedMemoryStatus", Scope::kInfer},
    {"/inference.GRPCInferenceService/CudaSharedMemoryStatus", Scope::kInfer},
    {"/inference.GRPCInferenceService/RepositoryIndex", Scope::kAdmin},
    {"/inference.GRPCInferenceService/RepositoryModelLoad", Scope::kAdmin},
    {"/inference.GRPCInferenceService/RepositoryModelUnload", Scope::kAdmin},
    {"/inference.GRPCInferenceService/SystemSharedMemoryRegister",
     Scope::kAdmin},
    {"/inference.GRPCInferenceService/SystemSharedMemoryUnregister",
     Scope::kAdmin},
    {"/inference.GRPCInferenceService/CudaSharedMemoryRegister", Scope::kAdmin},
    {"/inference.GRPCInferenceService/CudaSharedMemoryUnregister",
     Scope::kAdmin},
    {"/inference.GRPCInferenceService/TraceSetting", Scope::kAdmin},
    {"/inference.GRPCInferenceService/LogSettings", Scope::kAdmin},

    {"/grpc.health.v1.Health/Check", Scope::kOpen},
    {"/grpc.health.v1.Health/Watch", Scope::kOpen},
    {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
     Scope::kOpen},
};

const absl::flat_hash_map<absl::string_view, Scope>& MethodScopeMap() {
  static const auto* map = [] {
    auto* m = new absl::flat_hash_map<absl::string_view, Scope>();
    for (const MethodScope& entry : kMethodScopes) {
      m->emplace(entry.path, entry.scope);
    }
    return m;
  }();
  return *map;
}

// RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
// *"=".
bool IsB64Token(absl::string_view token) {
  size_t i = 0;
  for (; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (!(absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' ||
          c == '~' || c == '+' || c == '/')) {
      break;
    }
  }
  if (i == 0) return false;
  for (; i < token.size(); ++i) {
    if (token[i] != '=') return false;
  }
  return true;
}

// The method's last path element, for messages ("AddNetwork").
absl::string_view MethodName(absl::string_view method_path) {
  const size_t slash = method_path.rfind('/');
  return slash == absl::string_view::npos ? method_path
                                          : method_path.substr(slash + 1);
}

}  // namespace

absl::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kOpen:
      return "open";
    case Scope::kInfer:
      return "infer";
    case Scope::kAdmin:
      return "admin";
  }
  return "unknown";
}

Scope ScopeOfMethod(absl::string_view method_path) {
  const auto& map = MethodScopeMap();
  auto it = map.find(method_path);
  return it == map.end() ? Scope::kAdmin : it->second;
}

std::vector<std::string> MethodsWithScopes() {
  std::vector<std::string> methods;
  for (const MethodScope& entry : kMethodScopes) {
    methods.emplace_back(entry.path);
  }
  return methods;
}

absl::string_view BearerToken(absl::string_view authorization) {
  absl::string_view value = absl::StripAsciiWhitespace(authorization);
  constexpr absl::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme) ||
      !absl::ascii_isblank(static_cast<unsigned char>(value[kScheme.size()]))) {
    return {};
  }
  return absl::StripAsciiWhitespace(value.substr(kScheme.size()));
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::Parse(
    absl::string_view text, absl::string_view source) {
  std::vector<Entry> entries;
  absl::flat_hash_set<std::string> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_number, ": ", what));
    };
    // A '#' starts a comment anywhere: it is not in the token alphabet.
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) {
      return error(absl::StrCat("expected 'TOKEN SCOPE[,SCOPE]', found ",
                                fields.size(), " fields"));
    }
    const absl::string_view token = fields[0];
    if (!IsB64Token(token)) {
      return error(
          "the token has characters an 'authorization: Bearer' header "
          "cannot carry (allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)");
    }
    if (token.size() < kMinTokenLength) {
      return error(absl::StrCat("the token is ", token.size(),
                                " characters; at least ", kMinTokenLength,
                                " are needed (e.g. openssl rand -hex 16)"));
    }
    Entry entry;
    entry.digest = Sha256(token);
    for (absl::string_view scope : absl::StrSplit(fields[1], ',')) {
      if (scope == "infer") {
        entry.infer = true;
      } else if (scope == "admin") {
        entry.admin = true;
      } else {
        return error(absl::StrCat("unknown scope '", scope,
                                  "' (scopes: infer, admin)"));
      }
    }
    if (!seen.insert(entry.digest).second) {
      return error("this token is listed on an earlier line too");
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": no tokens (every call but health checks would be refused)"));
  }
  return std::unique_ptr<Authorizer>(new Authorizer(std::move(entries)));
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::FromFile(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    const std::string message =
        absl::StrCat("cannot read the token file '", path,
                     "': ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message)
                           : absl::PermissionDeniedError(message);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read the token file '", path, "'"));
  }
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & S_IROTH) != 0) {
    GLINT_LOG_WARN(
        "the token file '{}' is readable by every user of this machine; "
        "tokens are secrets: chmod 600 it",
        path);
  }
  return Parse(text.str(), path);
}

const Authorizer::Entry* Authorizer::Find(absl::string_view token) const {
  const std::string digest = Sha256(token);
  const Entry* found = nullptr;
  for (const Entry& entry : entries_) {
    // Every digest is compared in full, whatever matched before.
    const bool equal =
        CRYPTO_memcmp(entry.digest.data(), digest.data(), kSha256Size) == 0;
    if (equal) found = &entry;
  }
  return found;
}

absl::Status Authorizer::Authorize(absl::string_view token,
                                   Scope scope) const {
  if (scope == Scope::kOpen) return absl::OkStatus();
  if (token.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "this call needs a token with scope '", ScopeName(scope),
        "': send the header 'authorization: Bearer TOKEN'"));
  }
  const Entry* entry = Find(token);
  if (entry == nullptr) {
    return absl::UnauthenticatedError("the bearer token is not known");
  }
  const bool allowed = scope == Scope::kInfer ? entry->infer : entry->admin;
  if (!allowed) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the bearer token lacks scope '", ScopeName(scope), "'"));
  }
  return absl::OkStatus();
}

absl::Status Authorizer::AuthorizeMethod(absl::string_view token,
                                         absl::string_view method_path) const {
  const Scope scope = ScopeOfMethod(method_path);
  absl::Status status = Authorize(token, scope);
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(MethodName(method_path), ": ",
                                   status.message()));
}

}  // namespace glint
