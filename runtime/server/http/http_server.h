// glintd's HTTP port: libmicrohttpd serving an HttpHandler (http_handler.h;
// glintd's is RestApi, rest_api.h). The only code that includes
// microhttpd.h; it moves bytes between sockets and the handler and decides
// nothing else.
//
// Threads: `io_threads` event loops (libmicrohttpd's, epoll) read and
// write every connection; a connection costs its buffers, not a thread, so
// idle, slow or stalled clients hold no worker. Health (/v2/health/*) and
// /metrics are answered on the event loops as soon as their request is in,
// so they answer while every worker is busy. Every other request, once its
// body is in, runs on one of `threads` workers while its connection is
// suspended; at most `max_queued_requests` wait for a worker, and one more
// is answered 429 at once.
//
// Bounds, each applied before the bytes are buffered:
// - at most `max_connections` open (split evenly over the event loops),
//   `max_connections_per_peer` from one address: an excess connection is
//   closed as it is accepted;
// - request bodies in memory (being read, queued or running) take at most
//   `max_buffered_bytes` in all: a body that would pass it has its
//   connection cut off;
// - a body over `max_request_bytes` is 413 whatever its transfer encoding,
//   and is never buffered past the limit: a declared Content-Length over it
//   is answered before any body byte is read; a chunked body that passes
//   it is read on and dropped, and answered at its end (libmicrohttpd
//   takes a reply only before a body or after it), or cut off unanswered
//   once the dropped part reaches the limit (so is a body sent after a
//   reply that refused its request);
// - a connection that sends nothing for `io_timeout` (in its headers, its
//   body or between keep-alive requests) is closed;
// - headers, request line included, take at most 64 KiB of a connection's
//   buffer (libmicrohttpd answers 431 or 414 past it).
#ifndef GLINT_RUNTIME_SERVER_HTTP_HTTP_SERVER_H_
#define GLINT_RUNTIME_SERVER_HTTP_HTTP_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runtime/server/common/security_options.h"
#include "runtime/server/http/http_handler.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace glint {

struct HttpServerOptions {
  // host:port (a bracketed IPv6 host allowed); port 0 picks a free one.
  // Empty: no listening socket; connections come only from
  // AddConnection (tests and the fuzz target).
  std::string listen = "127.0.0.1:8000";
  // Workers: requests other than health and /metrics run at once.
  int threads = 8;
  // Requests (bodies read) waiting for a worker; one more is 429. A
  // connection has one request at a time, so the count never passes
  // max_connections.
  int max_queued_requests = 2048;
  // Request bodies held in memory at once, in all.
  size_t max_buffered_bytes = size_t{1} << 30;
  // Event-loop threads reading and writing the connections.
  int io_threads = 2;
  // Open connections in all (libmicrohttpd splits it evenly over the
  // io_threads event loops: at least io_threads), and from one peer
  // address. A proxy or load balancer in front is one peer: raise the
  // second to the first there.
  int max_connections = 2048;
  int max_connections_per_peer = 512;
  // Largest request body; a larger one is refused with 413 (see above).
  // JSON tensors take about 10 bytes an element and parse into some 16
  // bytes an element more, so a body costs a few times its size.
  size_t max_request_bytes = size_t{32} << 20;
  // A connection silent this long is closed (whole seconds, at least 1).
  absl::Duration io_timeout = absl::Seconds(5);
  // HTTPS with this material (LoadTlsMaterial's, as the gRPC port's): TLS
  // 1.2 or later; with a client CA, a request is served only over a
  // connection whose client presented a certificate the CA signed (others
  // are closed unanswered). nullopt: plain HTTP.
  std::optional<TlsMaterial> tls;
};

// Serves `api` until Stop(). Thread-safe: AddConnection and Stop() may be
// called from any thread, Stop() more than once.
class HttpServer {
 public:
  // Binds (INVALID_ARGUMENT for a malformed address, bad options or TLS
  // material; UNAVAILABLE when the address cannot be bound) and starts
  // serving. `api` is borrowed and must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const HttpServerOptions& options, const HttpHandler* api);

  ~HttpServer();  // Stop()s.
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port; 0 without a listening socket.
  int port() const { return port_; }

  // Serves the connected socket `fd` as if accepted (takes it, also on
  // failure). FAILED_PRECONDITION once stopped; RESOURCE_EXHAUSTED when
  // the connection limits refuse it.
  absl::Status AddConnection(int fd) ABSL_LOCKS_EXCLUDED(stop_mu_);

  // Stops accepting; running requests end, queued ones are answered 503,
  // and every reply from here on closes its connection; waits for the
  // requests in progress until `deadline` (one whose client stalls:
  // io_timeout at most), then closes every connection.
  void Stop(absl::Time deadline = absl::InfiniteFuture())
      ABSL_LOCKS_EXCLUDED(stop_mu_);

 private:
  class Workers;
  struct Exchange;
  friend struct HttpServerCallbacks;

  HttpServer(const HttpServerOptions& options, const HttpHandler* api);

  // libmicrohttpd's access handler, on an event-loop thread.
  int OnRequest(MHD_Connection* connection, const char* url, const char* method,
                const char* upload_data, size_t* upload_data_size,
                void** context);
  // A request is done (answered or its connection closed).
  void OnCompleted(std::shared_ptr<Exchange>* held) ABSL_LOCKS_EXCLUDED(mu_);
  // Charges `bytes` more of `exchange`'s body to buffered_bytes_; false
  // when that would pass max_buffered_bytes.
  bool Charge(Exchange* exchange, size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Gives back what `exchange` was charged.
  void Release(Exchange* exchange) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the connection's client presented a certificate the client CA
  // signed (true without a client CA).
  bool ClientVerified(MHD_Connection* connection) const;

  const HttpServerOptions options_;
  const HttpHandler* const api_;
  std::unique_ptr<Workers> workers_;
  int port_ = 0;

  absl::Mutex stop_mu_;  // Serialises Stop()s and AddConnection.
  MHD_Daemon* daemon_ ABSL_GUARDED_BY(stop_mu_) = nullptr;

  mutable absl::Mutex mu_;
  // Requests whose headers are in and that are not done.
  int64_t open_requests_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Request bodies in memory (Charge, Release).
  size_t buffered_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Splits "host:port" ("[v6]:port" too). INVALID_ARGUMENT when there is no
// port or it is not a number in 0..65535.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    absl::string_view listen);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_HTTP_HTTP_SERVER_H_
