// glintd's HTTP endpoints without the HTTP server: KServe v2 / Open
// Inference Protocol REST and Prometheus's /metrics, as a function from
// (method, target, body) to (status, content type, body). The server
// (http_server.h) only moves bytes; everything here is tested in-process.
//
//                                                   scope (auth.h)
//   GET  /v2/health/live     200 while glintd answers        open
//   GET  /v2/health/ready    200 once ready, else 503        open
//   GET  /v2                 server metadata                 infer
//   GET  /v2/models/{m}[/versions/1]         model metadata  infer
//   GET  /v2/models/{m}[/versions/1]/ready   200, 404        infer
//                            unknown, 503 unavailable
//   POST /v2/models/{m}[/versions/1]/infer   JSON tensors    infer
//   GET  /metrics            prometheus_metrics.h            open
//
// With an Authorizer (glintd --auth_tokens), a call to an `infer` endpoint
// needs `Authorization: Bearer TOKEN` with the infer scope: 401 (with
// WWW-Authenticate: Bearer) without a known token, 403 with a token that
// lacks the scope, as the gRPC services decide. Health and /metrics stay
// open, for probes and scrapers (/metrics names the networks).
//
// Path segments are percent-decoded one by one, so a model name may hold
// any character ("a%2Fb" is the model "a/b"). Failures reply
// {"error": "..."} with the HTTP status of their absl::Status
// (proto/status_util.h, ToHttpStatus); a path that names nothing is 404,
// a known path with another method 405 with an Allow header.
#ifndef GLINT_RUNTIME_SERVER_HTTP_REST_API_H_
#define GLINT_RUNTIME_SERVER_HTTP_REST_API_H_

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/types.h"
#include "runtime/host_manager.h"
#include "runtime/server/common/auth.h"
#include "runtime/server/http/http_handler.h"

namespace glint {

// What a request path names.
struct RestRoute {
  enum class Kind {
    kLive,
    kReady,
    kServerMetadata,
    kModelMetadata,
    kModelReady,
    kModelInfer,
    kMetrics,
  };
  Kind kind = Kind::kLive;
  std::string model;                  // Decoded; for the kModel* kinds.
  std::optional<std::string> version;  // When the path names one.
};

// The route of a request target (path, optionally "?query", which is
// ignored). NOT_FOUND when it names no endpoint; INVALID_ARGUMENT for a
// malformed percent escape.
absl::StatusOr<RestRoute> ParseRestTarget(absl::string_view target);

// The HTTP method each kind answers: "GET", or "POST" for kModelInfer.
absl::string_view RestMethod(RestRoute::Kind kind);

// The token scope each kind needs (see the table above).
Scope RestScope(RestRoute::Kind kind);

// Refuses a request whose headers ask for what glintd does not do: a
// compressed body (Content-Encoding other than identity: UNIMPLEMENTED,
// since a small compressed body may inflate past any limit) and Triton's
// binary tensor extension (Inference-Header-Content-Length:
// UNIMPLEMENTED).
absl::Status CheckRestHeaders(const HttpRequest& request);

struct RestApiOptions {
  // Whether glintd is ready for inference: its stored networks are
  // restored and it is not shutting down. Unset: always.
  std::function<bool()> ready;
  // Decides tokens; borrowed, must outlive the RestApi. Null: every
  // endpoint is open.
  const Authorizer* authorizer = nullptr;
};

// The endpoints over one HostManager. Thread-safe: Handle may be called
// from any number of threads at once (HostManager is thread-safe, and the
// options' functions must be).
class RestApi : public HttpHandler {
 public:
  // `host_manager` is borrowed and must outlive this object.
  RestApi(HostManager* host_manager, RestApiOptions options);

  // What is checked before a request's body is read (the server calls it
  // first, so that a refused request costs no body): the headers
  // (CheckRestHeaders) and the token against the route's scope. nullopt
  // when the request may proceed, else the reply refusing it.
  std::optional<HttpReply> Admit(const HttpRequest& request) const override;

  // Answers one request (Admit included).
  HttpReply Handle(const HttpRequest& request) const override;

  // Health (/v2/health/*), /metrics and paths that name nothing: answered
  // on the server's event loops.
  bool AnswersAtOnce(const HttpRequest& request) const override;

  // The reply of a failed request: ToHttpStatus(status.code()) and
  // {"error": message}.
  static HttpReply ErrorReply(const absl::Status& status);

 private:
  HttpReply ModelReady(const RestRoute& route) const;
  HttpReply ModelMetadata(const RestRoute& route) const;
  HttpReply Infer(const RestRoute& route, absl::string_view body) const;
  HttpReply Metrics() const;

  HostManager* const host_manager_;
  const Authorizer* const authorizer_;
  const RestApiOptions options_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_HTTP_REST_API_H_
