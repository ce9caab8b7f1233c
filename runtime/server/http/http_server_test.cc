// The HTTP server over real loopback sockets: what cpp-httplib does before
// and around RestApi (raw targets, body limits, refused encodings, errors
// it answers itself, concurrency beyond its workers, stopping).
#include "runtime/server/http/http_server.h"

#include <httplib.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
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
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/test_models.h"

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

TEST_F(HttpServerTest, ErrorsHttplibAnswersAreJsonToo) {
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

  // A target near httplib's 8 KiB limit, and one past it.
  httplib::Result long_path =
      Client()->Get("/v2/models/" + std::string(8000, 'm'));
  ASSERT_TRUE(long_path);
  EXPECT_EQ(long_path->status, 404);
  httplib::Result too_long =
      Client()->Get("/v2/models/" + std::string(9000, 'm'));
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->status, 414);
  EXPECT_THAT(ErrorOf(too_long), HasSubstr("too long"));
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
  options.max_pending_connections = 1;
  options.keep_alive_timeout = absl::Seconds(1);
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

// An idle keep-alive connection holds Stop() back for the keep-alive
// timeout at most (httplib 0.11 waits out its idle wait); after Stop() no
// request is answered, and Stop() again is a no-op.
TEST_F(HttpServerTest, StopWaitsForIdleKeepAliveAtMostItsTimeout) {
  HttpServerOptions options;
  options.keep_alive_timeout = absl::Seconds(1);
  StartServer(options);
  auto client = Client();
  client->set_keep_alive(true);
  ASSERT_EQ(client->Get("/v2/health/live")->status, 200);
  const absl::Time start = absl::Now();
  server_->Stop();
  // Generous: the bound is 1 s plus scheduling on a loaded machine.
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

}  // namespace
}  // namespace glint
