// What glintd's HTTP server (http_server.h) serves, without the server: a
// request's parts, its reply, and the handler that answers. RestApi
// (rest_api.h) is glintd's; tests and the fuzz target have their own.
#ifndef GLINT_RUNTIME_SERVER_HTTP_HTTP_HANDLER_H_
#define GLINT_RUNTIME_SERVER_HTTP_HTTP_HANDLER_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace glint {

// A request as RestApi sees it: the parts and headers it reads.
struct HttpRequest {
  std::string method;
  std::string target;      // Path and optional query, percent-encoded as sent.
  absl::string_view body;  // Borrowed from the server's request.
  // Header values; "" when absent.
  std::string authorization;
  std::string content_encoding;
  std::string inference_header_content_length;
  std::string peer;  // "ADDRESS:PORT", for logs.
};

struct HttpReply {
  int status = 200;
  std::string content_type;  // Empty with an empty body.
  std::string body;
  // Extra headers: Allow on a 405, WWW-Authenticate on a 401.
  std::vector<std::pair<std::string, std::string>> headers;
};

// Answers requests. Implementations must be thread-safe: the server calls
// them from its event loops and workers at once.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;

  // Called once a request's headers are in, before its body is read, so
  // that a refused request costs no body: nullopt lets it proceed, a reply
  // refuses it.
  virtual std::optional<HttpReply> Admit(const HttpRequest& request) const = 0;

  // Answers a request whose body is in (Admit may be checked again).
  virtual HttpReply Handle(const HttpRequest& request) const = 0;

  // Whether Handle answers `request` (body not yet read) quickly and without
  // blocking: the server then calls it on an event loop rather than a
  // worker, so that it answers while every worker is busy.
  virtual bool AnswersAtOnce(const HttpRequest& request) const = 0;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_HTTP_HTTP_HANDLER_H_
