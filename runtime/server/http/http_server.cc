#include "runtime/server/http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/thread_name.h"
#include "runtime/server/http/rest_convert.h"

namespace glint {

// The workers that run requests off the event loops: a fixed set of
// threads and a bounded queue. Thread-safe.
class HttpServer::Workers {
 public:
  // A task is called with true to run, or with false when the workers shut
  // down before it ran (it must then answer at once).
  using Task = std::function<void(bool run)>;

  Workers(int threads, int max_queued) : max_queued_(max_queued) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        SetCurrentThreadName("glint-http");
        Work();
      });
    }
  }
  ~Workers() { Shutdown(); }

  // Queues `task`; false when shut down or the queue is full.
  bool TrySubmit(Task task) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (stopping_ || static_cast<int>(queue_.size()) >= max_queued_) {
      return false;
    }
    queue_.push_back(std::move(task));
    return true;
  }

  // Tasks still queued are called with false; the running ones end; the
  // threads are joined. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_) {
    std::deque<Task> left;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      left.swap(queue_);
    }
    for (Task& task : left) task(false);
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  }

  void Work() ABSL_LOCKS_EXCLUDED(mu_) {
    for (;;) {
      Task task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &Workers::HasWorkOrStopping));
        if (queue_.empty()) return;  // Stopping, and nothing left.
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task(true);
    }
  }

  const int max_queued_;
  absl::Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// One request, from its headers to its completion. Shared by the event
// loop (from the headers until libmicrohttpd is done with the request) and
// a worker (while it runs the request), whichever lets go last frees it.
// Only the event loop touches the fields above `mu`.
struct HttpServer::Exchange {
  HttpRequest request;
  std::string body;
  // Body bytes charged to the server's buffered_bytes_.
  size_t charged = 0;
  // A reply was queued before the body (a refusal, a declared length over
  // the limit) or the body passed the limit: the rest of the body is
  // dropped, unbuffered, and counted here; past max_request_bytes the
  // connection is cut off.
  bool dropping = false;
  bool too_large = false;  // Answered 413 at the end of the body.
  size_t dropped = 0;
  // Handed to a worker; its reply comes back in `reply`.
  bool submitted = false;

  absl::Mutex mu;
  std::optional<HttpReply> reply ABSL_GUARDED_BY(mu);
};

namespace {

// libmicrohttpd wants a response object; this makes one of `reply`.
MHD_Response* ResponseOf(const HttpReply& reply) {
  MHD_Response* response = MHD_create_response_from_buffer(
      reply.body.size(), const_cast<char*>(reply.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return nullptr;
  if (!reply.content_type.empty()) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            reply.content_type.c_str());
  }
  for (const auto& [name, value] : reply.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  return response;
}

// Queues `reply` on `connection` (from the access handler); with
// `close`, the connection is closed after it.
MHD_Result Queue(MHD_Connection* connection, const HttpReply& reply,
                 bool close = false) {
  MHD_Response* response = ResponseOf(reply);
  if (response == nullptr) return MHD_NO;
  if (close) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
  }
  const MHD_Result queued = MHD_queue_response(
      connection, static_cast<unsigned>(reply.status), response);
  MHD_destroy_response(response);
  return queued;
}

HttpReply ErrorReplyOf(int status, absl::string_view message) {
  HttpReply reply;
  reply.status = status;
  reply.content_type = "application/json";
  reply.body = ErrorJson(message);
  return reply;
}

HttpReply TooLarge(size_t max_request_bytes) {
  return ErrorReplyOf(413,
                      absl::StrCat("the request body is over the limit of ",
                                   max_request_bytes, " bytes"));
}

std::string HeaderOf(MHD_Connection* connection, const char* name) {
  const char* value =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
  return value == nullptr ? "" : value;
}

// "ADDRESS:PORT" of `addr`.
std::string AddressString(const sockaddr* addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr != nullptr && addr->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
    port = ntohs(v4->sin_port);
  } else if (addr != nullptr && addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
    port = ntohs(v6->sin6_port);
  }
  return absl::StrCat(host, ":", port);
}

// libmicrohttpd decodes %-escapes in the path by default; RestApi decodes
// each segment itself (so "a%2Fb" is one segment), so the path stays as
// sent.
size_t KeepEscapes(void*, MHD_Connection*, char* s) { return std::strlen(s); }

void LogFromMhd(void*, const char* format, va_list args) {
  char line[512];
  std::vsnprintf(line, sizeof(line), format, args);
  std::string text(line);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  GLINT_LOG_DEBUG("HTTP: {}", text);
}

// TLS material as GnuTLS reads it, checked before the daemon starts (which
// would only say that it failed).
absl::Status CheckTlsMaterial(const TlsMaterial& tls) {
  gnutls_certificate_credentials_t credentials = nullptr;
  if (gnutls_certificate_allocate_credentials(&credentials) < 0) {
    return absl::ResourceExhaustedError("cannot allocate TLS credentials");
  }
  const gnutls_datum_t cert = {
      reinterpret_cast<unsigned char*>(
          const_cast<char*>(tls.cert_chain_pem.data())),
      static_cast<unsigned>(tls.cert_chain_pem.size())};
  const gnutls_datum_t key = {
      reinterpret_cast<unsigned char*>(
          const_cast<char*>(tls.private_key_pem.data())),
      static_cast<unsigned>(tls.private_key_pem.size())};
  int rc = gnutls_certificate_set_x509_key_mem2(
      credentials, &cert, &key, GNUTLS_X509_FMT_PEM, nullptr, 0);
  std::string what = "the certificate chain and its key";
  if (rc >= 0 && !tls.client_ca_pem.empty()) {
    const gnutls_datum_t ca = {reinterpret_cast<unsigned char*>(
                                   const_cast<char*>(tls.client_ca_pem.data())),
                               static_cast<unsigned>(tls.client_ca_pem.size())};
    rc = gnutls_certificate_set_x509_trust_mem(credentials, &ca,
                                               GNUTLS_X509_FMT_PEM);
    if (rc == 0) rc = GNUTLS_E_NO_CERTIFICATE_FOUND;
    what = "the client CA";
  }
  gnutls_certificate_free_credentials(credentials);
  if (rc < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot set up TLS for HTTP: ", what, ": ", gnutls_strerror(rc)));
  }
  return absl::OkStatus();
}

// A listening socket on host:port (SO_REUSEADDR: a restart binds past
// TIME_WAIT sockets; not SO_REUSEPORT, with which a second glintd would
// bind the same port too).
absl::StatusOr<int> Listen(const std::string& host, int port,
                           const std::string& listen) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                             service.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resolve the HTTP address '", listen, "': ", gai_strerror(rc)));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return absl::UnavailableError(
      absl::StrCat("cannot listen for HTTP on ", listen, ": ", why));
}

}  // namespace

// libmicrohttpd's callbacks, forwarding to the server they were given.
struct HttpServerCallbacks {
  static MHD_Result Access(void* cls, MHD_Connection* connection,
                           const char* url, const char* method,
                           const char* /*version*/, const char* upload_data,
                           size_t* upload_data_size, void** context) {
    return static_cast<HttpServer*>(cls)->OnRequest(
               connection, url, method, upload_data, upload_data_size,
               context) != 0
               ? MHD_YES
               : MHD_NO;
  }
  static void Completed(void* cls, MHD_Connection*, void** context,
                        MHD_RequestTerminationCode) {
    if (*context == nullptr) return;
    static_cast<HttpServer*>(cls)->OnCompleted(
        static_cast<std::shared_ptr<HttpServer::Exchange>*>(*context));
    *context = nullptr;
  }
};

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    absl::string_view listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", listen, "' is not host:port with a port in 0..65535"));
  }
  absl::string_view host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(std::string(host), port);
}

HttpServer::HttpServer(const HttpServerOptions& options, const HttpHandler* api)
    : options_(options), api_(api) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpServerOptions& options, const HttpHandler* api) {
  if (options.threads < 1 || options.max_queued_requests < 1 ||
      options.max_buffered_bytes < 1 || options.io_threads < 1 ||
      options.max_connections < 1 || options.max_connections_per_peer < 1 ||
      options.max_request_bytes < 1 ||
      options.io_timeout <= absl::ZeroDuration() ||
      options.max_connections < options.io_threads) {
    return absl::InvalidArgumentError(
        "HTTP server options: threads, max_queued_requests, "
        "max_buffered_bytes, io_threads, the connection limits, "
        "max_request_bytes and io_timeout must be positive, and "
        "max_connections at least io_threads");
  }
  if (options.tls.has_value()) {
    if (absl::Status tls = CheckTlsMaterial(*options.tls); !tls.ok()) {
      return tls;
    }
  }
  int listen_fd = -1;
  int port = 0;
  if (!options.listen.empty()) {
    absl::StatusOr<std::pair<std::string, int>> address =
        SplitHostPort(options.listen);
    if (!address.ok()) return address.status();
    absl::StatusOr<int> fd =
        Listen(address->first, address->second, options.listen);
    if (!fd.ok()) return fd.status();
    listen_fd = *fd;
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
    port = ntohs(bound.ss_family == AF_INET6
                     ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }

  std::unique_ptr<HttpServer> server(new HttpServer(options, api));
  server->port_ = port;
  server->workers_ =
      std::make_unique<Workers>(options.threads, options.max_queued_requests);
  const HttpServerOptions& o = server->options_;  // Outlives the daemon.

  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD |
                       MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (listen_fd < 0) flags |= MHD_USE_NO_LISTEN_SOCKET;
  if (o.tls.has_value()) flags |= MHD_USE_TLS;
  const unsigned int timeout_s = static_cast<unsigned int>(std::max<int64_t>(
      1, absl::ToInt64Seconds(absl::Ceil(o.io_timeout, absl::Seconds(1)))));
  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(o.max_connections),
       nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT,
       static_cast<intptr_t>(o.max_connections_per_peer), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(timeout_s),
       nullptr},
      // Request line and headers, and the read buffer (bodies are copied
      // out of it as they arrive).
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, intptr_t{64} << 10, nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED,
       reinterpret_cast<intptr_t>(&HttpServerCallbacks::Completed),
       server.get()},
      {MHD_OPTION_UNESCAPE_CALLBACK, reinterpret_cast<intptr_t>(&KeepEscapes),
       nullptr},
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&LogFromMhd),
       nullptr},
  };
  // A thread pool needs a listening socket (libmicrohttpd ignores it
  // otherwise).
  if (listen_fd >= 0) {
    items.push_back({MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr});
    if (o.io_threads > 1) {
      items.push_back({MHD_OPTION_THREAD_POOL_SIZE,
                       static_cast<intptr_t>(o.io_threads), nullptr});
    }
  }
  if (o.tls.has_value()) {
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0,
                     const_cast<char*>(o.tls->cert_chain_pem.c_str())});
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0,
                     const_cast<char*>(o.tls->private_key_pem.c_str())});
    items.push_back(
        {MHD_OPTION_HTTPS_PRIORITIES, 0,
         const_cast<char*>("NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2")});
    if (!o.tls->client_ca_pem.empty()) {
      items.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0,
                       const_cast<char*>(o.tls->client_ca_pem.c_str())});
    }
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});

  MHD_Daemon* daemon = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &HttpServerCallbacks::Access, server.get(),
      MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  if (daemon == nullptr) {
    if (listen_fd >= 0) close(listen_fd);
    return absl::UnavailableError(absl::StrCat(
        "cannot start the HTTP server on '", options.listen,
        "' (libmicrohttpd refused its options or ran out of resources)"));
  }
  HttpServer* const raw = server.get();  // Plain names for lock analysis.
  absl::MutexLock lock(&raw->stop_mu_);
  raw->daemon_ = daemon;
  return server;  // `lock` (declared after `server`) unlocks first.
}

HttpServer::~HttpServer() { Stop(); }

bool HttpServer::ClientVerified(MHD_Connection* connection) const {
  if (!options_.tls.has_value() || options_.tls->client_ca_pem.empty()) {
    return true;
  }
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return false;
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned int chain_size = 0;
  if (gnutls_certificate_get_peers(session, &chain_size) == nullptr ||
      chain_size == 0) {
    return false;
  }
  unsigned int verdict = 0;
  return gnutls_certificate_verify_peers2(session, &verdict) == 0 &&
         verdict == 0;
}

int HttpServer::OnRequest(MHD_Connection* connection, const char* url,
                          const char* method, const char* upload_data,
                          size_t* upload_data_size, void** context) {
  auto* held = static_cast<std::shared_ptr<Exchange>*>(*context);
  if (held == nullptr) {
    // The headers are in; no body byte is read yet.
    if (!ClientVerified(connection)) {
      GLINT_LOG_WARN(
          "HTTP: closed a connection without a client "
          "certificate the client CA signed");
      return 0;
    }
    held = new std::shared_ptr<Exchange>(std::make_shared<Exchange>());
    *context = held;
    Exchange* const exchange = held->get();
    {
      absl::MutexLock lock(&mu_);
      ++open_requests_;
    }
    HttpRequest& request = exchange->request;
    // HEAD is GET without the body (libmicrohttpd drops it).
    request.method =
        std::strcmp(method, MHD_HTTP_METHOD_HEAD) == 0 ? "GET" : method;
    request.target = url;
    request.authorization = HeaderOf(connection, "Authorization");
    request.content_encoding = HeaderOf(connection, "Content-Encoding");
    request.inference_header_content_length =
        HeaderOf(connection, "Inference-Header-Content-Length");
    const MHD_ConnectionInfo* peer =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    request.peer = AddressString(peer == nullptr ? nullptr : peer->client_addr);
    if (std::optional<HttpReply> refused = api_->Admit(request);
        refused.has_value()) {
      exchange->dropping = true;
      return Queue(connection, *refused);
    }
    uint64_t declared = 0;
    const std::string length = HeaderOf(connection, "Content-Length");
    if (!length.empty() && absl::SimpleAtoi(length, &declared) &&
        declared > options_.max_request_bytes) {
      exchange->dropping = true;
      return Queue(connection, TooLarge(options_.max_request_bytes));
    }
    return 1;
  }
  Exchange* const exchange = held->get();
  if (*upload_data_size > 0) {
    // A piece of the body, however it is encoded.
    const size_t size = *upload_data_size;
    *upload_data_size = 0;
    if (!exchange->dropping &&
        exchange->body.size() + size > options_.max_request_bytes) {
      // libmicrohttpd takes a reply only before the body or after it: the
      // rest is read and dropped, and answered 413 at its end.
      exchange->dropping = exchange->too_large = true;
      Release(exchange);
      exchange->body = std::string();
    }
    if (exchange->dropping) {
      exchange->dropped += size;
      // A client that sends as much again is cut off unanswered.
      return exchange->dropped > options_.max_request_bytes ? 0 : 1;
    }
    if (!Charge(exchange, size)) {
      GLINT_LOG_WARN(
          "HTTP: cut off {}: request bodies in memory are at the "
          "limit of {} bytes",
          exchange->request.peer, options_.max_buffered_bytes);
      return 0;
    }
    // Grown by doubling but never past the limit: a body's buffer is at
    // most max_request_bytes (std::string's own growth could reach twice).
    std::string& body = exchange->body;
    if (body.size() + size > body.capacity()) {
      body.reserve(
          std::min(options_.max_request_bytes,
                   std::max(body.size() + size, 2 * body.capacity() + 4096)));
    }
    body.append(upload_data, size);
    return 1;
  }
  // The body is in (or a worker woke the connection). Once stopping, a
  // reply closes its connection.
  bool stopping;
  {
    absl::MutexLock lock(&mu_);
    stopping = stopping_;
  }
  if (exchange->submitted) {
    std::optional<HttpReply> reply;
    {
      absl::MutexLock lock(&exchange->mu);
      reply.swap(exchange->reply);
    }
    if (!reply.has_value()) return 0;  // Woken without a reply: a bug.
    exchange->submitted = false;
    return Queue(connection, *reply, stopping);
  }
  if (exchange->too_large) {
    exchange->too_large = false;
    return Queue(connection, TooLarge(options_.max_request_bytes), stopping);
  }
  if (exchange->dropping) return 1;  // Answered before the body.
  exchange->dropping = true;  // Whatever comes next is no body of this one.
  exchange->request.body = exchange->body;
  if (api_->AnswersAtOnce(exchange->request)) {
    return Queue(connection, api_->Handle(exchange->request), stopping);
  }
  // The connection sleeps while a worker runs the request; the worker
  // leaves the reply in the exchange and wakes it, and libmicrohttpd calls
  // this handler again to queue it (above). Suspended before the worker
  // can wake it.
  exchange->submitted = true;
  MHD_suspend_connection(connection);
  const bool queued =
      workers_->TrySubmit([this, connection, shared = *held](bool run) {
        HttpReply reply = run ? api_->Handle(shared->request)
                              : ErrorReplyOf(503, "glintd is stopping");
        {
          absl::MutexLock lock(&shared->mu);
          shared->reply = std::move(reply);
        }
        MHD_resume_connection(connection);
      });
  if (!queued) {
    {
      absl::MutexLock lock(&exchange->mu);
      exchange->reply =
          stopping
              ? ErrorReplyOf(503, "glintd is stopping")
              : ErrorReplyOf(429, absl::StrCat("all ", options_.threads,
                                               " HTTP workers are busy and ",
                                               options_.max_queued_requests,
                                               " requests wait for them; try "
                                               "again"));
    }
    MHD_resume_connection(connection);
  }
  return 1;
}

bool HttpServer::Charge(Exchange* exchange, size_t bytes) {
  absl::MutexLock lock(&mu_);
  if (buffered_bytes_ + bytes > options_.max_buffered_bytes) return false;
  buffered_bytes_ += bytes;
  exchange->charged += bytes;
  return true;
}

void HttpServer::Release(Exchange* exchange) {
  absl::MutexLock lock(&mu_);
  buffered_bytes_ -= exchange->charged;
  exchange->charged = 0;
}

void HttpServer::OnCompleted(std::shared_ptr<Exchange>* held) {
  Release(held->get());
  delete held;
  absl::MutexLock lock(&mu_);
  --open_requests_;
}

absl::Status HttpServer::AddConnection(int fd) {
  absl::MutexLock lock(&stop_mu_);
  if (daemon_ == nullptr) {
    close(fd);
    return absl::FailedPreconditionError("the HTTP server is stopped");
  }
  sockaddr_storage peer{};
  socklen_t len = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
      (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)) {
    // A socket pair: the IPv4 loopback, so that the per-peer bound counts
    // it (libmicrohttpd bounds IP peers only).
    peer = sockaddr_storage{};
    auto* v4 = reinterpret_cast<sockaddr_in*>(&peer);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(sockaddr_in);
  }
  if (MHD_add_connection(daemon_, fd, reinterpret_cast<sockaddr*>(&peer),
                         len) != MHD_YES) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the HTTP server refused the connection: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void HttpServer::Stop(absl::Time deadline) {
  absl::MutexLock stop_lock(&stop_mu_);
  if (daemon_ == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  // No new connections. The listening socket is ours to close, once the
  // event loops are gone (they may still be taking it out of their epoll
  // sets); until then new clients wait in its backlog, unserved.
  const MHD_socket listen_fd = MHD_quiesce_daemon(daemon_);
  // Running requests end; queued ones and any still coming in are
  // answered 503, and every reply from here on closes its connection.
  workers_->Shutdown();
  // Replies in flight go out; a client that stalls mid-request is waited
  // for until `deadline`, io_timeout at most (libmicrohttpd closes it
  // then), and then cut off.
  {
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return open_requests_ == 0;
    };
    mu_.AwaitWithDeadline(absl::Condition(&idle),
                          std::min(deadline, absl::Now() + options_.io_timeout +
                                                 absl::Seconds(1)));
  }
  MHD_stop_daemon(daemon_);
  daemon_ = nullptr;
  if (listen_fd != MHD_INVALID_SOCKET) close(listen_fd);
}

}  // namespace glint
