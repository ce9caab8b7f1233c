// The HTTP server over real loopback sockets: what libmicrohttpd does
// before and around RestApi (raw targets, body limits in every transfer
// encoding, refused encodings, timeouts, connection limits, concurrency
// beyond its workers, stopping), with cpp-httplib as the client and raw
// sockets where a client must misbehave.
#include "runtime/server/http/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/test_models.h"
#include "runtime/server/http/rest_api.h"

namespace glint {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

TEST(SplitHostPortTest, Forms) {
  EXPECT_EQ(*SplitHostPort("127.0.0.1:8000"),
            std::make_pair(std::string("127.0.0.1"), 8000));
  EXPECT_EQ(*SplitHostPort("[::1]:0"), std::make_pair(std::string("::1"), 0));
  EXPECT_EQ(*SplitHostPort("0.0.0.0:65535"),
            std::make_pair(std::string("0.0.0.0"), 65535));
  for (const char* bad : {"", "127.0.0.1", "host:", "host:port", "h:65536",
                          "h:-1"}) {
    EXPECT_EQ(SplitHostPort(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

// A self-signed P-256 certificate for CN `name`, valid for 127.0.0.1,
// made with libcrypto; PEM texts.
struct KeyAndCert {
  std::string key_pem;
  std::string cert_pem;
};

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

KeyAndCert MakeSelfSigned(const char* name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -86400);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name), -1,
                             -1, 0);
  X509_set_issuer_name(cert, subject);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name,
                                            "IP:127.0.0.1");
  X509_add_ext(cert, san, -1);
  X509_EXTENSION_free(san);
  X509_sign(cert, key, EVP_sha256());
  KeyAndCert out;
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  out.key_pem = BioText(bio);
  BIO_free(bio);
  bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  out.cert_pem = BioText(bio);
  BIO_free(bio);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/", getpid(), "_", name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceConfig device;
    device.memory_bytes = 64 * kMiB;
    absl::StatusOr<std::unique_ptr<HostManager>> hm =
        HostManager::CreateFromConfigs(HostManagerOptions(), {device});
    ASSERT_TRUE(hm.ok()) << hm.status();
    host_manager_ = *std::move(hm);
    for (const char* name : {"mlp", "a/b"}) {
      ASSERT_TRUE(host_manager_
                      ->AddNetwork(name, testing::MakeMlpModel(1, 4, 3),
                                   AddNetworkOptions())
                      .ok());
    }
    api_ = std::make_unique<RestApi>(host_manager_.get(), RestApiOptions());
  }

  // An HTTPS client of the server trusting `ca_pem`, optionally with a
  // client certificate.
  std::unique_ptr<httplib::SSLClient> TlsClient(
      const std::string& ca_pem, const KeyAndCert* client_cert = nullptr) {
    std::unique_ptr<httplib::SSLClient> client;
    if (client_cert != nullptr) {
      client = std::make_unique<httplib::SSLClient>(
          "127.0.0.1", server_->port(),
          WriteTemp("client.crt", client_cert->cert_pem),
          WriteTemp("client.key", client_cert->key_pem));
    } else {
      client = std::make_unique<httplib::SSLClient>("127.0.0.1",
                                                    server_->port());
    }
    client->set_ca_cert_path(WriteTemp("ca.crt", ca_pem).c_str());
    client->enable_server_certificate_verification(true);
    client->set_read_timeout(30, 0);
    return client;
  }

  void StartServer(HttpServerOptions options) {
    options.listen = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(options, api_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
  }

  std::unique_ptr<httplib::Client> Client() {
    auto client = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client->set_read_timeout(30, 0);
    return client;
  }

  static std::string InferBody(float v) {
    return absl::StrCat(
        R"({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [)",
        v, ",", v, ",", v, ",", v, "]}]}");
  }

  static std::string ErrorOf(const httplib::Result& r) {
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    const json doc = json::parse(r->body, nullptr, false);
    EXPECT_TRUE(doc.is_object() && doc.contains("error")) << r->body;
    return doc.is_object() && doc.contains("error") && doc["error"].is_string()
               ? doc["error"].get<std::string>()
               : "";
  }

  // A TCP connection to the server from `source` (any 127.x address).
  int Connect(const char* source) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(server_->port()));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
        connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // A connection that sent an infer request's headers and half its body,
  // then nothing; -1 on failure.
  int ConnectAndStallMidBody() {
    const int fd = Connect("127.0.0.1");
    const std::string half =
        "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
        "Content-Length: 100\r\n\r\n{\"inputs\": ";
    if (fd >= 0 && send(fd, half.data(), half.size(), MSG_NOSIGNAL) !=
                       static_cast<ssize_t>(half.size())) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // Reads from `fd` until `done(got)` holds, the peer closes it, or `limit`
  // passes (a test failure naming `what`).
  template <typename Done>
  static std::string ReadUntil(int fd, absl::Duration limit, Done done,
                               const char* what) {
    std::string got;
    const absl::Time deadline = absl::Now() + limit;
    while (absl::Now() < deadline) {
      if (done(got)) return got;
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return got;
      got.append(buf, static_cast<size_t>(n));
    }
    ADD_FAILURE() << what << " within " << limit;
    return got;
  }

  // What arrives on `fd` until the peer closes it.
  static std::string ReadUntilClosed(int fd, absl::Duration limit) {
    return ReadUntil(
        fd, limit, [](const std::string&) { return false; },
        "the connection was not closed");
  }

  // The first reply on `fd`: its headers and the body they announce.
  static std::string ReadReply(int fd, absl::Duration limit) {
    return ReadUntil(
        fd, limit,
        [](const std::string& got) {
          const size_t end = got.find("\r\n\r\n");
          if (end == std::string::npos) return false;
          const size_t at = got.find("Content-Length: ");
          size_t length = 0;
          if (at != std::string::npos && at < end) {
            length = std::strtoul(got.c_str() + at + 16, nullptr, 10);
          }
          return got.size() >= end + 4 + length;
        },
        "no whole reply");
  }

  // Sends `request` on a fresh connection (as much of it as the server
  // takes) and returns the reply.
  std::string RawExchange(const std::string& request) {
    const int fd = Connect("127.0.0.1");
    if (fd < 0) return "cannot connect";
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n =
          send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // The server answered and closed early.
      sent += static_cast<size_t>(n);
    }
    std::string reply = ReadReply(fd, absl::Seconds(20));
    close(fd);
    return reply;
  }

  std::unique_ptr<HostManager> host_manager_;
  std::unique_ptr<RestApi> api_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesTheApi) {
  StartServer(HttpServerOptions());
  auto client = Client();
  httplib::Result live = client->Get("/v2/health/live");
  ASSERT_TRUE(live) << httplib::to_string(live.error());
  EXPECT_EQ(live->status, 200);
  EXPECT_EQ(client->Head("/v2/health/live")->status, 200);

  httplib::Result infer =
      client->Post("/v2/models/mlp/infer", InferBody(1), "application/json");
  ASSERT_TRUE(infer);
  ASSERT_EQ(infer->status, 200) << infer->body;
  const std::vector<float> expected =
      testing::MlpReference({1, 1, 1, 1}, 1, 4, 3);
  const std::vector<float> got =
      json::parse(infer->body)["outputs"][0]["data"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5);

  // The target reaches RestApi undecoded: %2F stays inside one segment.
  EXPECT_EQ(client->Get("/v2/models/a%2Fb/ready")->status, 200);
  EXPECT_EQ(client->Get("/v2/models/a/b/ready")->status, 404);

  httplib::Result metrics = client->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"),
            "text/plain; version=0.0.4; charset=utf-8");

  httplib::Result put = client->Put("/v2/models/mlp", "", "text/plain");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET");
}

TEST_F(HttpServerTest, ErrorsAreJson) {
  HttpServerOptions options;
  options.max_request_bytes = 1024;
  StartServer(options);
  auto client = Client();

  httplib::Result big = client->Post("/v2/models/mlp/infer",
                                     std::string(4096, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_THAT(ErrorOf(big), HasSubstr("1024 bytes"));

  // A line break in a decoded path still reaches the router (and no route).
  httplib::Result newline = Client()->Get("/v2/models/a%0Ab");
  ASSERT_TRUE(newline);
  EXPECT_EQ(newline->status, 404);
  EXPECT_THAT(ErrorOf(newline), HasSubstr("a\nb"));

  // A long target is routed; one past the 64 KiB of headers is refused by
  // libmicrohttpd itself (414 or 431).
  httplib::Result long_path =
      Client()->Get("/v2/models/" + std::string(8000, 'm'));
  ASSERT_TRUE(long_path);
  EXPECT_EQ(long_path->status, 404);
  const std::string reply =
      RawExchange(absl::StrCat("GET /v2/models/", std::string(70000, 'm'),
                               " HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(reply, ::testing::AnyOf(::testing::StartsWith("HTTP/1.1 414"),
                                      ::testing::StartsWith("HTTP/1.1 431")))
      << reply.substr(0, 200);
}

// Raw requests: a chunked body is held to the limit as it arrives, and a
// Content-Length no body could have is answered at once.
TEST_F(HttpServerTest, BodyLimitsHoldForEveryEncoding) {
  HttpServerOptions options;
  options.max_request_bytes = 1024;
  options.io_timeout = absl::Seconds(30);  // A reply, not a timeout.
  StartServer(options);

  // A chunked body past the limit: 413 at its end.
  const std::string chunked_head =
      "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string chunked = chunked_head;
  for (int i = 0; i < 3; ++i) {
    absl::StrAppend(&chunked, "200\r\n", std::string(512, ' '), "\r\n");
  }
  std::string reply = RawExchange(absl::StrCat(chunked, "0\r\n\r\n"));
  EXPECT_THAT(reply, ::testing::StartsWith("HTTP/1.1 413")) << reply;
  EXPECT_THAT(reply, HasSubstr("1024 bytes"));
  // One that goes on past twice the limit is cut off there, unanswered.
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&chunked, "200\r\n", std::string(512, ' '), "\r\n");
  }
  const int fd = Connect("127.0.0.1");
  ASSERT_GE(fd, 0);
  send(fd, chunked.data(), chunked.size(), MSG_NOSIGNAL);
  EXPECT_EQ(ReadUntilClosed(fd, absl::Seconds(20)), "");
  close(fd);

  // A declared length over the limit: 413 before any body byte.
  reply = RawExchange(
      "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
      "Content-Length: 1000000000000000000\r\n\r\n");
  EXPECT_THAT(reply, ::testing::StartsWith("HTTP/1.1 413")) << reply;
  // Lengths no number holds: refused at once, by libmicrohttpd.
  for (const char* bogus : {"18446744073709551621", "-1"}) {
    reply = RawExchange(
        absl::StrCat("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: ",
                     bogus, "\r\n\r\n"));
    EXPECT_THAT(reply, ::testing::AnyOf(::testing::StartsWith("HTTP/1.1 400"),
                                        ::testing::StartsWith("HTTP/1.1 413")))
        << bogus << ": " << reply;
  }
  // The server still serves.
  EXPECT_EQ(Client()->Get("/v2/health/live")->status, 200);
}

// A client that stops mid-body loses its connection after io_timeout; it
// holds no worker meanwhile.
TEST_F(HttpServerTest, StalledBodyIsClosedAfterTheTimeout) {
  HttpServerOptions options;
  options.io_timeout = absl::Seconds(1);
  options.threads = 1;
  StartServer(options);
  const int fd = ConnectAndStallMidBody();
  ASSERT_GE(fd, 0);
  // Meanwhile the one worker serves others.
  httplib::Result infer =
      Client()->Post("/v2/models/mlp/infer", InferBody(3), "application/json");
  ASSERT_TRUE(infer);
  EXPECT_EQ(infer->status, 200);
  // Closed by the server (end of stream), not answered.
  EXPECT_EQ(ReadUntilClosed(fd, absl::Seconds(30)), "");
  close(fd);
}

// The connection bounds: the excess is closed as it is accepted; another
// peer address is still served.
TEST_F(HttpServerTest, ConnectionLimits) {
  HttpServerOptions options;
  options.max_connections = 6;
  options.max_connections_per_peer = 3;
  options.io_threads = 1;  // The total limit is not split.
  StartServer(options);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(Connect("127.0.0.1"));
    ASSERT_GE(held.back(), 0);
  }
  // A fourth from 127.0.0.1 is closed unanswered.
  const int excess = Connect("127.0.0.1");
  ASSERT_GE(excess, 0);
  const std::string probe = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n";
  send(excess, probe.data(), probe.size(), MSG_NOSIGNAL);
  EXPECT_EQ(ReadUntilClosed(excess, absl::Seconds(30)), "");
  close(excess);
  // Another address is served.
  const int other = Connect("127.0.0.2");
  ASSERT_GE(other, 0);
  ASSERT_EQ(send(other, probe.data(), probe.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(probe.size()));
  EXPECT_THAT(ReadReply(other, absl::Seconds(30)),
              ::testing::StartsWith("HTTP/1.1 200"));
  close(other);
  for (int fd : held) close(fd);
}

// A connected socket handed over (what the fuzz target does) is served.
TEST_F(HttpServerTest, ServesAConnectionHandedOver) {
  HttpServerOptions options;
  options.listen = "";
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(options, api_.get());
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->port(), 0);
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ASSERT_TRUE((*server)->AddConnection(fds[0]).ok());
  const std::string body = InferBody(2);
  const std::string request = absl::StrCat(
      "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ",
      body.size(), "\r\nConnection: close\r\n\r\n", body);
  ASSERT_EQ(send(fds[1], request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  const std::string reply = ReadUntilClosed(fds[1], absl::Seconds(30));
  EXPECT_THAT(reply, ::testing::StartsWith("HTTP/1.1 200")) << reply;
  EXPECT_THAT(reply, HasSubstr("\"outputs\""));
  close(fds[1]);
  (*server)->Stop();
  int more[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, more), 0);
  EXPECT_EQ((*server)->AddConnection(more[0]).code(),
            absl::StatusCode::kFailedPrecondition);
  close(more[1]);
}

TEST_F(HttpServerTest, CompressedBodiesAreRefusedUnread) {
  StartServer(HttpServerOptions());
  httplib::Headers headers = {{"Content-Encoding", "gzip"}};
  httplib::Result r = Client()->Post("/v2/models/mlp/infer", headers,
                                     "\x1f\x8b garbage", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501);
  EXPECT_THAT(ErrorOf(r), HasSubstr("Content-Encoding"));
  headers = {{"Inference-Header-Content-Length", "10"}};
  r = Client()->Post("/v2/models/mlp/infer", headers, InferBody(1),
                     "application/octet-stream");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501);
  EXPECT_THAT(ErrorOf(r), HasSubstr("binary tensor"));
}

// Four times more clients than workers, each keeping its connection
// alive: all are served, each gets its own answer.
TEST_F(HttpServerTest, MoreClientsThanWorkers) {
  HttpServerOptions options;
  options.threads = 2;
  options.max_queued_requests = 8;
  StartServer(options);
  constexpr int kClients = 8, kRequests = 5;
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = Client();
      client->set_keep_alive(c % 2 == 0);
      for (int i = 0; i < kRequests; ++i) {
        const float v = static_cast<float>(c * 10 + i);
        httplib::Result r = client->Post("/v2/models/mlp/infer", InferBody(v),
                                         "application/json");
        if (!r || r->status != 200) continue;
        const std::vector<float> expected =
            testing::MlpReference({v, v, v, v}, 1, 4, 3);
        const std::vector<float> got =
            json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>();
        bool same = got.size() == expected.size();
        for (size_t k = 0; same && k < got.size(); ++k) {
          same = std::abs(got[k] - expected[k]) <= 1e-4f * (1 + std::abs(expected[k]));
        }
        if (same) ++good;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(good.load(), kClients * kRequests);
}

// An idle keep-alive connection does not hold Stop() back (it is no
// request); after Stop() no request is answered, and Stop() again is a
// no-op.
TEST_F(HttpServerTest, StopDoesNotWaitForIdleKeepAlive) {
  HttpServerOptions options;
  options.io_timeout = absl::Seconds(60);
  StartServer(options);
  auto client = Client();
  client->set_keep_alive(true);
  ASSERT_EQ(client->Get("/v2/health/live")->status, 200);
  const absl::Time start = absl::Now();
  server_->Stop();
  // Well below io_timeout, which an idle connection would hold it for.
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  server_->Stop();
  EXPECT_FALSE(client->Get("/v2/health/live"));
}

TEST_F(HttpServerTest, Https) {
  const KeyAndCert server = MakeSelfSigned("server");
  const KeyAndCert other = MakeSelfSigned("other");
  HttpServerOptions options;
  options.tls = TlsMaterial{server.cert_pem, server.key_pem, ""};
  StartServer(options);

  auto client = TlsClient(server.cert_pem);
  httplib::Result live = client->Get("/v2/health/live");
  ASSERT_TRUE(live) << httplib::to_string(live.error());
  EXPECT_EQ(live->status, 200);
  httplib::Result infer =
      client->Post("/v2/models/mlp/infer", InferBody(2), "application/json");
  ASSERT_TRUE(infer) << httplib::to_string(infer.error());
  EXPECT_EQ(infer->status, 200) << infer->body;

  // A client that trusts another certificate refuses the server...
  httplib::Result distrust = TlsClient(other.cert_pem)->Get("/v2/health/live");
  EXPECT_FALSE(distrust);
  EXPECT_EQ(distrust.error(), httplib::Error::SSLServerVerification);
  // ...and plain HTTP gets no answer.
  EXPECT_FALSE(Client()->Get("/v2/health/live"));
  // The server keeps serving.
  EXPECT_EQ(client->Get("/v2/health/ready")->status, 200);
}

TEST_F(HttpServerTest, MutualTlsNeedsTheClientCa) {
  const KeyAndCert server = MakeSelfSigned("server");
  const KeyAndCert client_cert = MakeSelfSigned("client");
  const KeyAndCert rogue = MakeSelfSigned("rogue");
  HttpServerOptions options;
  options.tls =
      TlsMaterial{server.cert_pem, server.key_pem, client_cert.cert_pem};
  StartServer(options);

  httplib::Result with_cert =
      TlsClient(server.cert_pem, &client_cert)->Get("/v2/health/live");
  ASSERT_TRUE(with_cert) << httplib::to_string(with_cert.error());
  EXPECT_EQ(with_cert->status, 200);
  EXPECT_FALSE(TlsClient(server.cert_pem)->Get("/v2/health/live"));
  EXPECT_FALSE(TlsClient(server.cert_pem, &rogue)->Get("/v2/health/live"));
}

TEST_F(HttpServerTest, BadTlsMaterialIsRefused) {
  const KeyAndCert server = MakeSelfSigned("server");
  const KeyAndCert other = MakeSelfSigned("other");
  HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.tls = TlsMaterial{server.cert_pem, other.key_pem, ""};
  absl::StatusOr<std::unique_ptr<HttpServer>> mismatched =
      HttpServer::Start(options, api_.get());
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatched.status().message(), HasSubstr("TLS"));
  options.tls = TlsMaterial{"no certificate", server.key_pem, ""};
  EXPECT_EQ(HttpServer::Start(options, api_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpServerTest, BusyPortIsUnavailable) {
  StartServer(HttpServerOptions());
  HttpServerOptions options;
  options.listen = absl::StrCat("127.0.0.1:", server_->port());
  absl::StatusOr<std::unique_ptr<HttpServer>> second =
      HttpServer::Start(options, api_.get());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(HttpServerTest, BadOptionsAreInvalid) {
  HttpServerOptions options;
  options.listen = "127.0.0.1";
  EXPECT_EQ(HttpServer::Start(options, api_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.listen = "127.0.0.1:0";
  options.threads = 0;
  EXPECT_EQ(HttpServer::Start(options, api_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A client stalled mid-body holds Stop() back until the deadline it is
// given, not for io_timeout.
TEST_F(HttpServerTest, StopCutsAStalledBodyOffAtItsDeadline) {
  HttpServerOptions options;
  options.io_timeout = absl::Seconds(120);
  options.io_threads = 1;  // Connections handled in order (below).
  StartServer(options);
  const int fd = ConnectAndStallMidBody();
  ASSERT_GE(fd, 0);
  // Its headers are in once the server answers on another connection
  // after it (one event loop: in order).
  ASSERT_EQ(Client()->Get("/v2/health/live")->status, 200);
  const absl::Time start = absl::Now();
  server_->Stop(absl::Now() + absl::Seconds(1));
  // Far below io_timeout (120 s): the deadline (1 s) and scheduling.
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_EQ(ReadUntilClosed(fd, absl::Seconds(30)), "");
  close(fd);
}

// A handler whose POSTs block until released: workers that are all busy.
class BlockingHandler : public HttpHandler {
 public:
  std::optional<HttpReply> Admit(const HttpRequest&) const override {
    return std::nullopt;
  }
  HttpReply Handle(const HttpRequest& request) const override {
    HttpReply reply;
    reply.content_type = "application/json";
    reply.body = "{}";
    if (request.method == "POST") {
      entered_.Notify();
      release_.WaitForNotification();
    }
    return reply;
  }
  bool AnswersAtOnce(const HttpRequest& request) const override {
    return request.method == "GET";
  }

  void WaitEntered() const { entered_.WaitForNotification(); }
  void Release() { release_.Notify(); }

 private:
  // Notified by the one POST the test lets run.
  mutable absl::Notification entered_;
  absl::Notification release_;
};

// The one worker stalled and one request queued: health still answers on
// the event loop, one more request is 429 at once, and Stop() answers the
// queued one 503 without running it.
TEST(HttpServerWorkersTest, BusyWorkersQueueThenRefuseAndHealthAnswers) {
  BlockingHandler handler;
  HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.threads = 1;
  options.max_queued_requests = 1;
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(options, &handler);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  auto post = [port] {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60, 0);
    httplib::Result r = client.Post("/x", "{}", "application/json");
    return r ? r->status : -1;
  };
  std::atomic<int> first{0};
  std::thread running([&] { first = post(); });
  handler.WaitEntered();  // The worker is stalled in the first POST.

  // Two more: one waits in the queue, the other is refused at once (which
  // is which depends on their order of arrival).
  std::atomic<int> second{0}, third{0};
  std::thread queued([&] { second = post(); });
  std::thread refused([&] { third = post(); });
  // The refused one ends while the worker is still stalled.
  absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (second.load() == 0 && third.load() == 0 && absl::Now() < deadline) {
    httplib::Client health("127.0.0.1", port);
    httplib::Result live = health.Get("/v2/health/live");
    ASSERT_TRUE(live);
    EXPECT_EQ(live->status, 200);
  }
  const bool second_refused = second.load() != 0;
  EXPECT_EQ(second_refused ? second.load() : third.load(), 429);
  std::thread& waiting = second_refused ? refused : queued;
  (second_refused ? queued : refused).join();

  // Stop(): the queued request is answered 503, never run; the running
  // one ends once released.
  std::thread stopper([&] { (*server)->Stop(); });
  waiting.join();
  EXPECT_EQ(second_refused ? third.load() : second.load(), 503);
  handler.Release();
  running.join();
  stopper.join();
  EXPECT_EQ(first.load(), 200);
}

}  // namespace
}  // namespace glint
