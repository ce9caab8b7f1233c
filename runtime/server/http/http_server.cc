#include "runtime/server/http/http_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/logging.h"
#include "core/thread_name.h"
#include "runtime/server/http/rest_convert.h"

namespace glint {
namespace {

// httplib's own ThreadPool (0.11) bounds the threads but queues accepted
// connections without limit; this one makes the accepting thread wait
// instead, so a flood of connections backs up into the kernel's listen
// backlog rather than into open sockets here.
//
// Thread-safe.
class BoundedThreadPool : public httplib::TaskQueue {
 public:
  BoundedThreadPool(int threads, int max_pending) : max_pending_(max_pending) {
    for (int i = 0; i < threads; ++i) {
      workers_.emplace_back([this] {
        SetCurrentThreadName("glint-http");
        Work();
      });
    }
  }
  ~BoundedThreadPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BoundedThreadPool::HasRoom));
    pending_.push_back(std::move(fn));
  }

  // Every queued connection is still served (each holds a socket that
  // only its task closes), then the workers end.
  void shutdown() override ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  bool HasRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(pending_.size()) < max_pending_;
  }
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !pending_.empty() || stopping_;
  }

  void Work() ABSL_LOCKS_EXCLUDED(mu_) {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &BoundedThreadPool::HasWorkOrStopping));
        if (pending_.empty()) return;  // Stopping, and nothing left.
        task = std::move(pending_.front());
        pending_.pop_front();
      }
      task();
    }
  }

  const int max_pending_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

HttpRequest RequestOf(const httplib::Request& req) {
  HttpRequest request;
  request.method = req.method;
  request.target = req.target;
  request.body = req.body;
  request.authorization = req.get_header_value("Authorization");
  request.content_encoding = req.get_header_value("Content-Encoding");
  request.inference_header_content_length =
      req.get_header_value("Inference-Header-Content-Length");
  request.peer = absl::StrCat(req.remote_addr, ":", req.remote_port);
  return request;
}

void WriteReply(const HttpReply& reply, httplib::Response& res) {
  res.status = reply.status;
  for (const auto& [name, value] : reply.headers) res.set_header(name, value);
  if (!reply.body.empty() || !reply.content_type.empty()) {
    res.set_content(reply.body, reply.content_type.c_str());
  }
}

// The message of an error httplib answers by itself (before any handler).
std::string HttpErrorMessage(int status, size_t max_request_bytes) {
  switch (status) {
    case 400: return "malformed HTTP request";
    case 404: return "no endpoint at this path";
    case 413:
      return absl::StrCat("the request body is over the limit of ",
                          max_request_bytes, " bytes");
    case 414: return "the request target is too long";
    default: return absl::StrCat("HTTP error ", status);
  }
}

// OpenSSL's error queue as text (and emptied).
std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&out, out.empty() ? "" : "; ", buf);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// Every certificate of a PEM text, in order.
std::vector<X509*> ReadCertificates(const std::string& pem) {
  std::vector<X509*> certs;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return certs;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    certs.push_back(cert);
  }
  ERR_clear_error();  // The end of the text reads as an error.
  BIO_free(bio);
  return certs;
}

// The server side of TLS from the material glintd checked at start
// (security_options.h), the same the gRPC port uses: TLS 1.2 or later, the
// certificate chain, the key, and with a client CA, client certificates
// required and verified against it.
bool SetUpTls(SSL_CTX& ctx, const TlsMaterial& tls, std::string* error) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  std::vector<X509*> chain = ReadCertificates(tls.cert_chain_pem);
  bool ok = !chain.empty() && SSL_CTX_use_certificate(&ctx, chain[0]) == 1;
  for (size_t i = 0; i < chain.size(); ++i) {
    // add0 takes ownership of the intermediates; the leaf was copied.
    if (i > 0 && ok && SSL_CTX_add0_chain_cert(&ctx, chain[i]) == 1) continue;
    X509_free(chain[i]);
  }
  BIO* bio = BIO_new_mem_buf(tls.private_key_pem.data(),
                             static_cast<int>(tls.private_key_pem.size()));
  EVP_PKEY* key =
      bio != nullptr ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr)
                     : nullptr;
  BIO_free(bio);
  ok = ok && key != nullptr && SSL_CTX_use_PrivateKey(&ctx, key) == 1 &&
       SSL_CTX_check_private_key(&ctx) == 1;
  EVP_PKEY_free(key);
  if (ok && !tls.client_ca_pem.empty()) {
    std::vector<X509*> cas = ReadCertificates(tls.client_ca_pem);
    ok = !cas.empty();
    X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    for (X509* ca : cas) {
      ok = ok && X509_STORE_add_cert(store, ca) == 1 &&
           sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca))) >
               0;
      X509_free(ca);
    }
    SSL_CTX_set_client_CA_list(&ctx, names);  // Takes `names`.
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       nullptr);
  }
  if (!ok) *error = OpenSslErrors();
  return ok;
}

// httplib takes seconds and microseconds.
std::pair<time_t, time_t> SecondsAndMicros(absl::Duration d) {
  const int64_t us = absl::ToInt64Microseconds(d);
  return {static_cast<time_t>(us / 1000000), static_cast<time_t>(us % 1000000)};
}

}  // namespace

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

namespace {

// httplib's server for `options` (validated): TLS or plain, its bounded
// pool, socket options, size limit and timeouts.
absl::StatusOr<std::unique_ptr<httplib::Server>> MakeHttplibServer(
    const HttpServerOptions& options) {
  std::unique_ptr<httplib::Server> server;
  if (options.tls.has_value()) {
    std::string tls_error;
    const TlsMaterial& tls = *options.tls;
    auto ssl = std::make_unique<httplib::SSLServer>(
        [&tls, &tls_error](SSL_CTX& ctx) {
          return SetUpTls(ctx, tls, &tls_error);
        });
    if (!ssl->is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot set up TLS for HTTP: ",
          tls_error.empty() ? OpenSslErrors() : tls_error));
    }
    server = std::move(ssl);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *server;
  const int threads = options.threads;
  const int max_pending = options.max_pending_connections;
  s.new_task_queue = [threads, max_pending]() -> httplib::TaskQueue* {
    return new BoundedThreadPool(threads, max_pending);
  };
  // httplib's default sets SO_REUSEPORT, with which a second glintd on the
  // same port would bind too and the kernel would spread connections over
  // both. SO_REUSEADDR alone lets a restart bind past TIME_WAIT sockets.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  s.set_payload_max_length(options.max_request_bytes);
  const auto [io_s, io_us] = SecondsAndMicros(options.io_timeout);
  s.set_read_timeout(io_s, io_us);
  s.set_write_timeout(io_s, io_us);
  s.set_keep_alive_timeout(
      std::max<time_t>(1, SecondsAndMicros(options.keep_alive_timeout).first));
  s.set_keep_alive_max_count(100);
  return server;
}

// Every request of `s` goes to `api`: admission before the body is read,
// then its handler; exceptions and httplib's own errors become the
// protocol's JSON errors.
void RouteToRestApi(httplib::Server& s, const RestApi* api,
                    size_t max_request_bytes) {
  // Runs before the body is read: a request refused by its headers or its
  // token costs no body.
  s.set_pre_routing_handler([api](const httplib::Request& req,
                                  httplib::Response& res) {
    std::optional<HttpReply> refused = api->Admit(RequestOf(req));
    if (!refused.has_value()) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    WriteReply(*refused, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  const httplib::Server::Handler handle =
      [api](const httplib::Request& req, httplib::Response& res) {
        WriteReply(api->Handle(RequestOf(req)), res);
      };
  // Every path goes to RestApi, which routes; the pattern matches any
  // character, line breaks included.
  const std::string any = R"([\s\S]*)";
  s.Get(any, handle);
  s.Post(any, handle);
  s.Put(any, handle);
  s.Patch(any, handle);
  s.Delete(any, handle);
  s.Options(any, handle);
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                             std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    GLINT_LOG_ERROR("HTTP handler failed: {}", what);
    WriteReply(RestApi::ErrorReply(absl::InternalError(
                   absl::StrCat("internal error: ", what))),
               res);
  });
  s.set_error_handler(httplib::Server::HandlerWithResponse(
      [max_request_bytes](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    res.set_content(
        ErrorJson(HttpErrorMessage(res.status, max_request_bytes)),
        "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpServerOptions& options, const RestApi* api) {
  if (options.threads < 1 || options.max_pending_connections < 1 ||
      options.max_request_bytes < 1 ||
      options.io_timeout <= absl::ZeroDuration() ||
      options.keep_alive_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "HTTP server options: threads, max_pending_connections, "
        "max_request_bytes and the timeouts must be positive");
  }
  absl::StatusOr<std::pair<std::string, int>> address =
      SplitHostPort(options.listen);
  if (!address.ok()) return address.status();
  const auto& [host, port] = *address;

  std::unique_ptr<HttpServer> server(new HttpServer());
  absl::StatusOr<std::unique_ptr<httplib::Server>> made =
      MakeHttplibServer(options);
  if (!made.ok()) return made.status();
  server->server_ = *std::move(made);
  httplib::Server& s = *server->server_;
  RouteToRestApi(s, api, options.max_request_bytes);

  const int bound =
      port == 0 ? s.bind_to_any_port(host) : (s.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", options.listen));
  }
  server->port_ = bound;
  auto listener_done = std::make_shared<std::atomic<bool>>(false);
  HttpServer* const raw = server.get();  // Plain names for lock analysis.
  absl::MutexLock lock(&raw->stop_mu_);
  raw->listener_ = std::thread([&s, listener_done] {
    SetCurrentThreadName("glint-http-lis");
    s.listen_after_bind();
    listener_done->store(true);
  });
  // httplib's stop() does nothing before the listener has marked itself
  // running (its first statement), so a Stop() right after Start() could
  // be lost: wait for that mark, a few instructions away.
  while (!s.is_running() && !listener_done->load()) std::this_thread::yield();
  if (listener_done->load()) {
    raw->listener_.join();
    return absl::UnavailableError(
        absl::StrCat("the HTTP listener on ", options.listen, " failed"));
  }
  return server;  // `lock` (declared after `server`) unlocks first.
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  absl::MutexLock lock(&stop_mu_);
  if (server_ != nullptr) server_->stop();
  if (listener_.joinable()) listener_.join();
}

}  // namespace glint
