// libFuzzer target for glintd's HTTP server itself: the input's bytes are
// what a client sends on one connection (request lines, headers, chunked or
// sized bodies, pipelined requests, garbage), handed to an HttpServer
// through a socket pair (AddConnection). The handler parses infer bodies
// with ParseInferRequest, as RestApi does, and answers GETs at once on the
// event loop, so both of the server's paths run.
//
// After each input the server must still answer a health request on a
// fresh connection (and never crash, leak or hang: a hang shows as
// libFuzzer's timeout).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/server/http/http_handler.h"
#include "runtime/server/http/http_server.h"
#include "runtime/server/http/rest_convert.h"

namespace {

class FuzzHandler : public glint::HttpHandler {
 public:
  std::optional<glint::HttpReply> Admit(
      const glint::HttpRequest& request) const override {
    if (request.content_encoding.empty()) return std::nullopt;
    glint::HttpReply reply;
    reply.status = 501;
    reply.content_type = "application/json";
    reply.body = glint::ErrorJson("compressed bodies are not served");
    return reply;
  }

  glint::HttpReply Handle(const glint::HttpRequest& request) const override {
    glint::HttpReply reply;
    reply.content_type = "application/json";
    if (request.method != "POST") {
      reply.body = "{}";
      return reply;
    }
    auto parsed = glint::ParseInferRequest(request.body, absl::UnixEpoch());
    if (!parsed.ok()) {
      reply.status = 400;
      reply.body = glint::ErrorJson(parsed.status().message());
    } else {
      reply.body = absl::StrCat("{\"inputs\": ", parsed->inputs.size(), "}");
    }
    return reply;
  }

  bool AnswersAtOnce(const glint::HttpRequest& request) const override {
    return request.method == "GET";
  }
};

glint::HttpServer& Server() {
  static FuzzHandler* handler = new FuzzHandler();
  static glint::HttpServer* server = [] {
    glint::HttpServerOptions options;
    options.listen = "";
    options.threads = 2;
    options.max_request_bytes = 2048;
    options.io_timeout = absl::Seconds(1);
    // Connections the fuzzer left wait out io_timeout; all come from one
    // "peer" (socket pairs).
    options.max_connections = 4096;
    options.max_connections_per_peer = 4096;
    auto started = glint::HttpServer::Start(options, handler);
    if (!started.ok()) {
      std::fprintf(stderr, "cannot start the HTTP server: %s\n",
                   started.status().ToString().c_str());
      std::abort();
    }
    return started->release();
  }();
  return *server;
}

// Sends what the server takes of `bytes`, then reads until it closes,
// `limit` passes, or (with `quiet`) nothing came for `quiet` after the
// input was all sent; returns what was read. libmicrohttpd keeps a
// connection whose client half-closed mid-request until io_timeout, so
// waiting for the close would make each such input cost a second: the
// fuzzer closes its end after a quiet spell instead, and the server drops
// the connection on its timeout.
std::string Exchange(const std::string& bytes, bool end_input,
                     absl::Duration limit, absl::Duration quiet) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    std::abort();
  }
  if (absl::Status added = Server().AddConnection(fds[0]); !added.ok()) {
    std::fprintf(stderr, "AddConnection: %s\n", added.ToString().c_str());
    std::abort();
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  const absl::Time deadline = absl::Now() + limit;
  absl::Time last_news = absl::Now();
  size_t sent = 0;
  std::string got;
  bool open = true;
  while (open && absl::Now() < deadline) {
    if (quiet > absl::ZeroDuration() && sent == bytes.size() &&
        absl::Now() - last_news > quiet) {
      break;
    }
    if (sent == bytes.size() && end_input) {
      shutdown(fds[1], SHUT_WR);
      end_input = false;
    }
    pollfd p{fds[1],
             static_cast<short>(POLLIN | (sent < bytes.size() ? POLLOUT : 0)),
             0};
    if (poll(&p, 1, 5) <= 0) continue;
    last_news = absl::Now();
    if ((p.revents & POLLOUT) != 0) {
      const ssize_t n =
          send(fds[1], bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN) sent = bytes.size();  // The server closed.
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char chunk[4096];
      const ssize_t n = recv(fds[1], chunk, sizeof(chunk), 0);
      if (n > 0) {
        got.append(chunk, static_cast<size_t>(n));
      } else if (n == 0 || errno != EAGAIN) {
        open = false;
      }
    }
  }
  close(fds[1]);
  return got;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Exchange(std::string(reinterpret_cast<const char*>(data), size),
           /*end_input=*/true, absl::Seconds(3), absl::Milliseconds(20));
  const std::string health = Exchange(
      "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      /*end_input=*/false, absl::Seconds(10), absl::ZeroDuration());
  if (!absl::StartsWith(health, "HTTP/1.1 200")) {
    std::fprintf(stderr, "the server stopped answering: '%s'\n",
                 health.c_str());
    std::abort();
  }
  return 0;
}
