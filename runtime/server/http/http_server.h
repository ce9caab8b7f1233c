// glintd's HTTP port: cpp-httplib serving a RestApi (rest_api.h). The only
// code that includes httplib.h; it moves bytes between sockets and
// RestApi::Handle and decides nothing else.
//
// Threads: one accepts connections; `threads` workers serve them, each a
// connection at a time (keep-alive included) and each running its
// requests to the end (an infer blocks its worker while it runs). Accepted
// connections wait for a worker in a queue of at most
// `max_pending_connections`; when it is full the accepting thread waits
// too, and further clients wait in the kernel's listen backlog. So the
// threads, open sockets and request bodies in memory are all bounded.
#ifndef GLINT_RUNTIME_SERVER_HTTP_HTTP_SERVER_H_
#define GLINT_RUNTIME_SERVER_HTTP_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runtime/server/common/security_options.h"
#include "runtime/server/http/rest_api.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace glint {

struct HttpServerOptions {
  // host:port (a bracketed IPv6 host allowed); port 0 picks a free one.
  std::string listen = "127.0.0.1:8000";
  // Workers: connections served at once.
  int threads = 8;
  // Accepted connections waiting for a worker.
  int max_pending_connections = 64;
  // Largest request body; a larger one is refused with 413 before it is
  // read. JSON tensors take about 10 bytes an element and parse into some
  // 16 bytes an element more, so a body costs a few times its size.
  size_t max_request_bytes = size_t{32} << 20;
  // A client slower than this to send (or to take) a piece of a request
  // (reply) loses its connection, freeing its worker.
  absl::Duration io_timeout = absl::Seconds(30);
  // An idle keep-alive connection holds its worker this long at most, and
  // holds Stop() back as long (httplib waits out its idle wait).
  absl::Duration keep_alive_timeout = absl::Seconds(2);
  // HTTPS with this material (LoadTlsMaterial's, as the gRPC port's): TLS
  // 1.2 or later; with a client CA, clients must present a certificate it
  // signed. nullopt: plain HTTP.
  std::optional<TlsMaterial> tls;
};

// Serves `api` until Stop(). Thread-safe: Stop() may be called from any
// thread, more than once.
class HttpServer {
 public:
  // Binds (INVALID_ARGUMENT for a malformed address or bad options,
  // UNAVAILABLE when the address cannot be bound) and starts serving.
  // `api` is borrowed and must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const HttpServerOptions& options, const RestApi* api);

  ~HttpServer();  // Stop()s.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port.
  int port() const { return port_; }

  // Stops accepting, waits for the requests in progress to be answered and
  // for idle keep-alive connections to end (keep_alive_timeout at most).
  void Stop() ABSL_LOCKS_EXCLUDED(stop_mu_);

 private:
  HttpServer() = default;

  absl::Mutex stop_mu_;  // Serialises Stop()s.
  std::unique_ptr<httplib::Server> server_;
  std::thread listener_ ABSL_GUARDED_BY(stop_mu_);
  int port_ = 0;
};

// Splits "host:port" ("[v6]:port" too). INVALID_ARGUMENT when there is no
// port or it is not a number in 0..65535.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    absl::string_view listen);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_HTTP_HTTP_SERVER_H_
