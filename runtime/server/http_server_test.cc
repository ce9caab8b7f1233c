// The HTTP server over real loopback sockets: what cpp-httplib does before
// and around RestApi (raw targets, body limits, refused encodings, errors
// it answers itself, concurrency beyond its workers, stopping).
#include "runtime/server/http_server.h"

#include <httplib.h>

#include <atomic>
#include <cmath>
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

TEST(IsLoopbackHostTest, Hosts) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost(""));
  EXPECT_FALSE(IsLoopbackHost("::"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
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
