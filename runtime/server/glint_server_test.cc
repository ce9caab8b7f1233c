// GlintServer in-process: both ports serve, readiness follows the restore,
// networks survive a restart through the store, a shutdown refuses new
// calls, and bad options fail naming their flag with nothing left running.
#include "runtime/server/glint_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "proto/glint.grpc.pb.h"

namespace glint {
namespace {

GlintServerOptions LoopbackOptions(const std::string& store_dir = "") {
  GlintServerOptions options;
  options.listen = "127.0.0.1:0";
  options.http_listen = "127.0.0.1:0";
  options.core.devices = "sim*2:memory=256MiB";
  options.core.store_dir = store_dir;
  options.shutdown_grace = absl::Seconds(1);
  return options;
}

std::string TempDir() {
  std::string pattern = absl::StrCat(
      std::getenv("TEST_TMPDIR") != nullptr ? std::getenv("TEST_TMPDIR")
                                            : "/tmp",
      "/glint_server_test.XXXXXX");
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

// The first line of the answer to `GET path` on the HTTP port.
std::string HttpStatusLine(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) !=
      0) {
    close(fd);
    return "connect failed";
  }
  const std::string request = absl::StrCat(
      "GET ", path, " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(write(fd, request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  std::string reply;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return reply.substr(0, reply.find("\r\n"));
}

std::unique_ptr<v1::HostManager::Stub> StubOf(const GlintServer& server) {
  return v1::HostManager::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.port()),
                          grpc::InsecureChannelCredentials()));
}

TEST(GlintServerTest, BothPortsServeTheSameNetworksUntilShutdown) {
  absl::StatusOr<std::unique_ptr<GlintServer>> server =
      GlintServer::BuildAndStart(LoopbackOptions());
  ASSERT_TRUE(server.ok()) << server.status();
  GlintServer& s = **server;
  EXPECT_GT(s.port(), 0);
  EXPECT_GT(s.http_port(), 0);
  EXPECT_EQ(s.listen(), absl::StrCat("127.0.0.1:", s.port()));
  s.WaitUntilReady();
  EXPECT_TRUE(s.ready());
  EXPECT_EQ(HttpStatusLine(s.http_port(), "/v2/health/ready"),
            "HTTP/1.1 200 OK");

  ASSERT_TRUE(s.host_manager()
                  .AddNetwork("mlp", testing::MakeMlpModel(2, 4, 3), {})
                  .ok());
  std::unique_ptr<v1::HostManager::Stub> stub = StubOf(s);
  {
    grpc::ClientContext context;
    v1::ListNetworksResponse list;
    ASSERT_TRUE(stub->ListNetworks(&context, {}, &list).ok());
    ASSERT_EQ(list.networks_size(), 1);
    EXPECT_EQ(list.networks(0).name(), "mlp");
  }

  s.Shutdown();
  EXPECT_FALSE(s.ready());
  s.Shutdown();  // Idempotent.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  v1::ListNetworksResponse list;
  const grpc::Status after = stub->ListNetworks(&context, {}, &list);
  EXPECT_FALSE(after.ok());
  EXPECT_EQ(HttpStatusLine(s.http_port(), "/v2/health/ready"),
            "connect failed");
}

TEST(GlintServerTest, NetworksComeBackFromTheStoreBeforeItIsReady) {
  const std::string store = TempDir();
  {
    absl::StatusOr<std::unique_ptr<GlintServer>> first =
        GlintServer::BuildAndStart(LoopbackOptions(store));
    ASSERT_TRUE(first.ok()) << first.status();
    (*first)->WaitUntilReady();
    ASSERT_TRUE((*first)
                    ->host_manager()
                    .AddNetwork("kept", testing::MakeMlpModel(1, 4, 3), {})
                    .ok());
  }
  absl::StatusOr<std::unique_ptr<GlintServer>> second =
      GlintServer::BuildAndStart(LoopbackOptions(store));
  ASSERT_TRUE(second.ok()) << second.status();
  (*second)->WaitUntilReady();
  ASSERT_TRUE((*second)->host_manager().GetNetwork("kept").ok());
  const std::vector<float> x = {1, -2, 3, 0.5};
  absl::StatusOr<std::vector<NamedTensor>> y =
      (*second)->host_manager().RunNetwork(
          "kept", {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 4}),
                                            x)}});
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<float> want = testing::MlpReference(x, 1, 4, 3);
  ASSERT_EQ((*y)[0].tensor.num_elements(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ((*y)[0].tensor.data<float>()[i], want[i]);
  }
}

TEST(GlintServerTest, BadOptionsNameTheirFlag) {
  struct Case {
    std::string flag;
    void (*set)(GlintServerOptions*);
  };
  const Case cases[] = {
      {"--devices", [](GlintServerOptions* o) { o->core.devices = "sim*0"; }},
      {"--import_time_limit",
       [](GlintServerOptions* o) { o->core.import_time_limit = absl::ZeroDuration(); }},
      {"--max_request_bytes_in_flight",
       [](GlintServerOptions* o) {
         o->max_request_bytes_in_flight = o->grpc_memory_limit_bytes + 1;
       }},
      {"--model_control_mode",
       [](GlintServerOptions* o) {
         o->core.model_control_mode = ModelControlMode::kPoll;
       }},
      {"--model_repository",
       [](GlintServerOptions* o) { o->core.model_repository = "/nonexistent"; }},
      {"--auth_tokens",
       [](GlintServerOptions* o) {
         o->security.auth_tokens_file = "/nonexistent";
       }},
      {"--http_listen",
       [](GlintServerOptions* o) { o->http_listen = "256.0.0.1:1"; }},
  };
  for (const Case& c : cases) {
    GlintServerOptions options = LoopbackOptions();
    c.set(&options);
    absl::StatusOr<std::unique_ptr<GlintServer>> server =
        GlintServer::BuildAndStart(options);
    ASSERT_FALSE(server.ok()) << c.flag;
    EXPECT_TRUE(absl::StrContains(server.status().message(), c.flag))
        << c.flag << ": " << server.status();
  }
}

TEST(GlintServerTest, APortInUseIsUnavailable) {
  absl::StatusOr<std::unique_ptr<GlintServer>> first =
      GlintServer::BuildAndStart(LoopbackOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  GlintServerOptions options = LoopbackOptions();
  options.listen = (*first)->listen();
  absl::StatusOr<std::unique_ptr<GlintServer>> second =
      GlintServer::BuildAndStart(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable)
      << second.status();
  // The first one is untouched.
  (*first)->WaitUntilReady();
  EXPECT_EQ(HttpStatusLine((*first)->http_port(), "/v2/health/ready"),
            "HTTP/1.1 200 OK");
}

}  // namespace
}  // namespace glint
