// glintd's HTTP endpoints without the HTTP server: KServe v2 / Open
// Inference Protocol REST and Prometheus's /metrics, as a function from
// (method, target, body) to (status, content type, body). The server
// (http_server.h) only moves bytes; everything here is tested in-process.
//
//   GET  /v2/health/live                          200 while glintd answers
//   GET  /v2/health/ready                         200 once ready, else 503
//   GET  /v2                                      server metadata
//   GET  /v2/models/{m}[/versions/1]              model metadata
//   GET  /v2/models/{m}[/versions/1]/ready        200, 404 unknown, 503
//                                                 unavailable
//   POST /v2/models/{m}[/versions/1]/infer        JSON tensors in and out
//   GET  /metrics                                 prometheus_metrics.h
//
// Path segments are percent-decoded one by one, so a model name may hold
// any character ("a%2Fb" is the model "a/b"). Failures reply
// {"error": "..."} with the HTTP status of their absl::Status
// (proto/status_util.h, ToHttpStatus); a path that names nothing is 404,
// a known path with another method 405 with an Allow header.
#ifndef GLINT_RUNTIME_SERVER_REST_API_H_
#define GLINT_RUNTIME_SERVER_REST_API_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/types.h"
#include "runtime/host_manager.h"

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

struct HttpReply {
  int status = 200;
  std::string content_type;  // Empty with an empty body.
  std::string body;
  std::string allow;  // The Allow header of a 405 reply.
};

// Refuses, before its body is read, a request whose headers ask for what
// glintd does not do: a compressed body (Content-Encoding other than
// identity: UNIMPLEMENTED, since a small compressed body may inflate past
// any limit) and Triton's binary tensor extension
// (Inference-Header-Content-Length: UNIMPLEMENTED). `header` returns a
// header's value, "" when absent.
absl::Status CheckRestHeaders(
    const std::function<std::string(absl::string_view name)>& header);

struct RestApiOptions {
  // Whether glintd is ready for inference: its stored networks are
  // restored and it is not shutting down. Unset: always.
  std::function<bool()> ready;
};

// The endpoints over one HostManager. Thread-safe: Handle may be called
// from any number of threads at once (HostManager is thread-safe, and the
// options' functions must be).
class RestApi {
 public:
  // `host_manager` is borrowed and must outlive this object.
  RestApi(HostManager* host_manager, RestApiOptions options);

  // Answers one request. `target` is the raw request target (path and
  // optional query, percent-encoded as sent).
  HttpReply Handle(absl::string_view method, absl::string_view target,
                   absl::string_view body) const;

  // The reply of a failed request: ToHttpStatus(status.code()) and
  // {"error": message}.
  static HttpReply ErrorReply(const absl::Status& status);

 private:
  HttpReply ModelReady(const RestRoute& route) const;
  HttpReply ModelMetadata(const RestRoute& route) const;
  HttpReply Infer(const RestRoute& route, absl::string_view body) const;
  HttpReply Metrics() const;

  HostManager* const host_manager_;
  const RestApiOptions options_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_REST_API_H_
