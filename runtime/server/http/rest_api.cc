#include "runtime/server/http/rest_api.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/logging.h"
#include "core/text.h"
#include "proto/status_util.h"
#include "runtime/server/http/prometheus_metrics.h"
#include "runtime/server/http/rest_convert.h"

namespace glint {
namespace {

constexpr absl::string_view kJson = "application/json";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One path segment, percent-decoded ('+' is a plus: this is a path).
absl::StatusOr<std::string> DecodeSegment(absl::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out.push_back(segment[i]);
      continue;
    }
    const int hi = i + 2 < segment.size() ? HexValue(segment[i + 1]) : -1;
    const int lo = hi >= 0 ? HexValue(segment[i + 2]) : -1;
    if (lo < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "malformed percent escape in the path segment '", Clip(segment),
          "'"));
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

HttpReply JsonReply(std::string body) {
  HttpReply reply;
  reply.content_type = std::string(kJson);
  reply.body = std::move(body);
  return reply;
}

// The version a model path names must be the one Glint keeps.
absl::Status CheckVersion(const RestRoute& route) {
  if (!route.version.has_value() || *route.version == kOipModelVersion) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat(
      "model '", Clip(route.model), "' has no version '",
      Clip(*route.version), "': Glint keeps one version of each network, \"",
      kOipModelVersion, "\""));
}

}  // namespace

absl::StatusOr<RestRoute> ParseRestTarget(absl::string_view target) {
  const absl::string_view path = target.substr(0, target.find('?'));
  const auto not_found = [&] {
    return absl::NotFoundError(
        absl::StrCat("no endpoint at '", Clip(path), "'"));
  };
  if (path.empty() || path[0] != '/') return not_found();
  std::vector<std::string> segments;
  for (absl::string_view raw : absl::StrSplit(path.substr(1), '/')) {
    absl::StatusOr<std::string> segment = DecodeSegment(raw);
    if (!segment.ok()) return segment.status();
    segments.push_back(*std::move(segment));
  }
  RestRoute route;
  const size_t n = segments.size();
  if (n == 1 && segments[0] == "metrics") {
    route.kind = RestRoute::Kind::kMetrics;
    return route;
  }
  if (segments[0] != "v2") return not_found();
  if (n == 1) {
    route.kind = RestRoute::Kind::kServerMetadata;
    return route;
  }
  if (n == 3 && segments[1] == "health") {
    if (segments[2] == "live") {
      route.kind = RestRoute::Kind::kLive;
      return route;
    }
    if (segments[2] == "ready") {
      route.kind = RestRoute::Kind::kReady;
      return route;
    }
    return not_found();
  }
  // /v2/models/{m}[/versions/{v}][/ready|/infer]
  if (n < 3 || segments[1] != "models" || segments[2].empty()) {
    return not_found();
  }
  route.model = segments[2];
  size_t next = 3;
  if (n >= 5 && segments[3] == "versions") {
    route.version = segments[4];
    next = 5;
  }
  if (next == n) {
    route.kind = RestRoute::Kind::kModelMetadata;
    return route;
  }
  if (next + 1 == n && segments[next] == "ready") {
    route.kind = RestRoute::Kind::kModelReady;
    return route;
  }
  if (next + 1 == n && segments[next] == "infer") {
    route.kind = RestRoute::Kind::kModelInfer;
    return route;
  }
  return not_found();
}

absl::string_view RestMethod(RestRoute::Kind kind) {
  return kind == RestRoute::Kind::kModelInfer ? "POST" : "GET";
}

Scope RestScope(RestRoute::Kind kind) {
  switch (kind) {
    case RestRoute::Kind::kLive:
    case RestRoute::Kind::kReady:
    case RestRoute::Kind::kMetrics:
      return Scope::kOpen;
    case RestRoute::Kind::kServerMetadata:
    case RestRoute::Kind::kModelMetadata:
    case RestRoute::Kind::kModelReady:
    case RestRoute::Kind::kModelInfer:
      return Scope::kInfer;
  }
  return Scope::kAdmin;  // Closed unless decided otherwise.
}

absl::Status CheckRestHeaders(const HttpRequest& request) {
  const std::string encoding = absl::AsciiStrToLower(request.content_encoding);
  if (!encoding.empty() && encoding != "identity") {
    return absl::UnimplementedError(absl::StrCat(
        "compressed request bodies (Content-Encoding: ", Clip(encoding),
        ") are not accepted; send the body uncompressed"));
  }
  if (!request.inference_header_content_length.empty()) {
    return absl::UnimplementedError(
        "Triton's binary tensor data extension "
        "(Inference-Header-Content-Length) is not supported; send the "
        "tensors as JSON");
  }
  return absl::OkStatus();
}

RestApi::RestApi(HostManager* host_manager, RestApiOptions options)
    : host_manager_(host_manager),
      authorizer_(options.authorizer),
      options_(std::move(options)) {}

HttpReply RestApi::ErrorReply(const absl::Status& status) {
  HttpReply reply = JsonReply(ErrorJson(status.message()));
  reply.status = ToHttpStatus(status.code());
  return reply;
}

std::optional<HttpReply> RestApi::Admit(const HttpRequest& request) const {
  if (absl::Status s = CheckRestHeaders(request); !s.ok()) {
    return ErrorReply(s);
  }
  absl::StatusOr<RestRoute> route = ParseRestTarget(request.target);
  // Paths that name nothing answer 404 whoever asks: they reveal nothing.
  if (!route.ok() || authorizer_ == nullptr) return std::nullopt;
  const Scope scope = RestScope(route->kind);
  const absl::Status s =
      authorizer_->Authorize(BearerToken(request.authorization), scope);
  if (s.ok()) return std::nullopt;
  const std::string what = absl::StrCat(
      Clip(request.method, 16), " ", Clip(request.target.substr(
                                          0, request.target.find('?'))));
  // As the gRPC services log: scanners cause UNAUTHENTICATED by the
  // thousand; a known token beyond its scope is worth a warning.
  if (s.code() == absl::StatusCode::kPermissionDenied) {
    GLINT_LOG_WARN("refused {} from {}: {}", what, request.peer,
                   std::string(s.message()));
  } else {
    GLINT_LOG_DEBUG("refused {} from {}: {}", what, request.peer,
                    std::string(s.message()));
  }
  HttpReply reply = ErrorReply(s);
  if (s.code() == absl::StatusCode::kUnauthenticated) {
    reply.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"glintd\"");
  }
  return reply;
}

bool RestApi::AnswersAtOnce(const HttpRequest& request) const {
  absl::StatusOr<RestRoute> route = ParseRestTarget(request.target);
  if (!route.ok()) return true;  // Its 404 or 400 costs nothing either.
  switch (route->kind) {
    case RestRoute::Kind::kLive:
    case RestRoute::Kind::kReady:
    case RestRoute::Kind::kMetrics:
      return true;
    default:
      return false;
  }
}

HttpReply RestApi::Handle(const HttpRequest& request) const {
  if (std::optional<HttpReply> refused = Admit(request)) return *refused;
  absl::StatusOr<RestRoute> route = ParseRestTarget(request.target);
  if (!route.ok()) return ErrorReply(route.status());
  const absl::string_view method = request.method;
  const absl::string_view allowed = RestMethod(route->kind);
  // HEAD is GET without the body, which the HTTP server drops.
  if (method != allowed && !(method == "HEAD" && allowed == "GET")) {
    HttpReply reply = ErrorReply(absl::UnimplementedError(absl::StrCat(
        "method ", Clip(method, 16), " is not allowed here; use ", allowed)));
    reply.status = 405;
    reply.headers.emplace_back("Allow", std::string(allowed));
    return reply;
  }
  switch (route->kind) {
    case RestRoute::Kind::kLive:
      return HttpReply{};
    case RestRoute::Kind::kReady:
      if (options_.ready && !options_.ready()) {
        return ErrorReply(absl::UnavailableError(
            "glintd is not ready: restoring its stored networks, or "
            "shutting down"));
      }
      return HttpReply{};
    case RestRoute::Kind::kServerMetadata:
      return JsonReply(ServerMetadataJson());
    case RestRoute::Kind::kModelMetadata:
      return ModelMetadata(*route);
    case RestRoute::Kind::kModelReady:
      return ModelReady(*route);
    case RestRoute::Kind::kModelInfer:
      return Infer(*route, request.body);
    case RestRoute::Kind::kMetrics:
      return Metrics();
  }
  return ErrorReply(absl::InternalError("unhandled route"));
}

HttpReply RestApi::ModelReady(const RestRoute& route) const {
  if (absl::Status s = CheckVersion(route); !s.ok()) return ErrorReply(s);
  absl::StatusOr<NetworkInfo> network = host_manager_->GetNetwork(route.model);
  if (!network.ok()) return ErrorReply(network.status());
  if (!network->unavailable_reason.empty()) {
    return ErrorReply(absl::UnavailableError(
        absl::StrCat("model '", Clip(route.model),
                     "' is unavailable: ", network->unavailable_reason)));
  }
  return HttpReply{};
}

HttpReply RestApi::ModelMetadata(const RestRoute& route) const {
  if (absl::Status s = CheckVersion(route); !s.ok()) return ErrorReply(s);
  absl::StatusOr<NetworkInfo> network = host_manager_->GetNetwork(route.model);
  if (!network.ok()) return ErrorReply(network.status());
  return JsonReply(ModelMetadataJson(*network));
}

HttpReply RestApi::Infer(const RestRoute& route, absl::string_view body) const {
  if (absl::Status s = CheckVersion(route); !s.ok()) return ErrorReply(s);
  absl::StatusOr<RestInferRequest> request =
      ParseInferRequest(body, absl::Now());
  if (!request.ok()) return ErrorReply(request.status());
  absl::StatusOr<std::vector<NamedTensor>> outputs = host_manager_->RunNetwork(
      route.model, std::move(request->inputs), request->options);
  if (!outputs.ok()) return ErrorReply(outputs.status());
  absl::StatusOr<std::string> reply =
      InferResponseJson(route.model, request->id, *outputs);
  if (!reply.ok()) {
    // The run's own outputs that JSON cannot carry: the server's fault.
    return ErrorReply(absl::InternalError(reply.status().message()));
  }
  return JsonReply(*std::move(reply));
}

HttpReply RestApi::Metrics() const {
  HttpReply reply;
  reply.content_type = std::string(kPrometheusContentType);
  reply.body = PrometheusMetricsText(host_manager_->GetAllStatistics(),
                                     host_manager_->GetDeviceStatistics());
  return reply;
}

}  // namespace glint
