// glintd's /metrics read by the real tools: `promtool check metrics` on the
// page of a daemon that has served runs, and a real Prometheus server
// (Debian's `prometheus`, on loopback, scraping every second, its storage
// in the test's temp folder, killed at the end) whose query API must give
// back exactly the counts of the runs made.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::ChildProcess;
using testing::GlintdProcess;

// Spacing of the bounded polls below (never a synchronization by itself).
constexpr absl::Duration kPoll = absl::Milliseconds(100);

// What promtool may say of glintd's page: only its remarks on Triton's
// names (prometheus_metrics.h).
bool IsAcceptedLint(absl::string_view line) {
  return absl::StartsWith(line, "nv_inference_") &&
         (absl::EndsWith(line, "should have \"_total\" suffix") ||
          absl::EndsWith(line, "should not contain abbreviated units") ||
          absl::EndsWith(line, "should not have \"_count\" suffix"));
}

// A free loopback port for Prometheus (which cannot report one it picked).
// Another process could take it before Prometheus binds; its start then
// fails loudly and the test says so.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

class PrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(
        {"--devices=sim:memory=256MiB,sim:memory=512MiB"});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
    ASSERT_GT(daemon_->http_port(), 0);
    ASSERT_TRUE(daemon_->client()
                    .AddNetwork("mlp", glint::testing::MakeMlpModel(1, 4, 3))
                    .ok());
  }

  // `successes` good runs and `failures` runs with a wrongly shaped input.
  void Run(int successes, int failures) {
    const NamedTensor good = {
        "x", Tensor::FromVector<float>(DType::kFloat32, Shape({1, 4}),
                                       std::vector<float>{1, 2, 3, 4})};
    const NamedTensor bad = {
        "x", Tensor::FromVector<float>(DType::kFloat32, Shape({4, 1}),
                                       std::vector<float>{1, 2, 3, 4})};
    for (int i = 0; i < successes; ++i) {
      ASSERT_TRUE(daemon_->client()
                      .RunNetwork("mlp", {good}, {}, absl::Seconds(30))
                      .ok());
    }
    for (int i = 0; i < failures; ++i) {
      EXPECT_EQ(daemon_->client()
                    .RunNetwork("mlp", {bad}, {}, absl::Seconds(30))
                    .status()
                    .code(),
                absl::StatusCode::kInvalidArgument);
    }
  }

  std::string Metrics() {
    httplib::Client client("127.0.0.1", daemon_->http_port());
    httplib::Result r = client.Get("/metrics");
    EXPECT_TRUE(r) << "GET /metrics: " << httplib::to_string(r.error());
    if (!r) return "";
    EXPECT_EQ(r->status, 200);
    return r->body;
  }

  std::unique_ptr<GlintdProcess> daemon_;
};

TEST_F(PrometheusTest, PromtoolChecksThePageAfterRuns) {
  Run(4, 2);
  const std::string page = Metrics();
  EXPECT_THAT(page, HasSubstr("nv_inference_request_success{model=\"mlp\","
                              "version=\"1\"} 4\n"));
  EXPECT_THAT(page, HasSubstr("nv_inference_request_failure{model=\"mlp\","
                              "version=\"1\"} 2\n"));
  EXPECT_THAT(page, HasSubstr("glint_device_memory_total_bytes{device="
                              "\"sim:1\"} 536870912\n"));
  const std::string dir = testing::NewTempDir("promtool");
  const std::string path = dir + "/metrics.txt";
  std::ofstream(path) << page;
  // promtool reads the page on stdin; a shell does the redirection.
  absl::StatusOr<testing::CommandResult> r = testing::RunCommand(
      {"/bin/sh", "-c", absl::StrCat("/usr/bin/promtool check metrics < '",
                                     path, "'")},
      absl::Seconds(60));
  ASSERT_TRUE(r.ok()) << r.status();
  // 0: clean; 3: lint remarks only; 1: the page does not parse.
  EXPECT_TRUE(r->exit_code == 0 || r->exit_code == 3)
      << r->exit_code << "\n" << r->stdout_text << r->stderr_text;
  for (absl::string_view line :
       absl::StrSplit(r->stdout_text + r->stderr_text, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(IsAcceptedLint(line)) << line;
  }
}

TEST_F(PrometheusTest, PrometheusScrapesAndAnswersQueries) {
  const std::string dir = testing::NewTempDir("prometheus");
  const std::string config = dir + "/prometheus.yml";
  std::ofstream(config) << "global:\n"
                           "  scrape_interval: 1s\n"
                           "  scrape_timeout: 1s\n"
                           "  evaluation_interval: 1s\n"
                           "scrape_configs:\n"
                           "  - job_name: glintd\n"
                           "    static_configs:\n"
                           "      - targets: ['127.0.0.1:"
                        << daemon_->http_port() << "']\n";
  // Started on a port found free; should another process take it first,
  // Prometheus exits saying so and is started again on another.
  std::unique_ptr<ChildProcess> prometheus;
  int port = 0;
  for (int attempt = 0; prometheus == nullptr; ++attempt) {
    ASSERT_LT(attempt, 3) << "Prometheus could not bind a port";
    port = FreePort();
    ASSERT_GT(port, 0);
    absl::StatusOr<std::unique_ptr<ChildProcess>> started =
        ChildProcess::Start(
            {"/usr/bin/prometheus", "--config.file=" + config,
             "--storage.tsdb.path=" + dir + "/data",
             absl::StrCat("--web.listen-address=127.0.0.1:", port),
             "--storage.tsdb.retention.time=1h", "--log.level=warn"},
            absl::StrCat(dir, "/prometheus.", attempt, ".log"));
    ASSERT_TRUE(started.ok()) << started.status();
    // Ready within a bound.
    httplib::Client probe("127.0.0.1", port);
    const absl::Time ready_by = absl::Now() + absl::Seconds(60);
    for (;;) {
      if ((*started)->Exited()) {
        const std::string log = (*started)->Log();
        ASSERT_THAT(log, HasSubstr("address already in use")) << log;
        break;  // The port was taken: another attempt.
      }
      httplib::Result r = probe.Get("/-/ready");
      if (r && r->status == 200) {
        prometheus = *std::move(started);
        break;
      }
      ASSERT_LT(absl::Now(), ready_by) << "Prometheus not ready; log:\n"
                                       << (*started)->Log();
      absl::SleepFor(kPoll);
    }
  }
  httplib::Client api("127.0.0.1", port);
  api.set_read_timeout(10, 0);

  constexpr int kSuccesses = 7, kFailures = 3;
  Run(kSuccesses, kFailures);

  // One instant query's value for the series of `query`; nullopt while
  // Prometheus has none yet.
  auto query = [&](const std::string& promql) -> std::optional<double> {
    httplib::Result r =
        api.Get("/api/v1/query", httplib::Params{{"query", promql}},
                httplib::Headers{});
    if (!r || r->status != 200) return std::nullopt;
    const json doc = json::parse(r->body, nullptr, false);
    if (!doc.is_object() || doc.value("status", "") != "success") {
      return std::nullopt;
    }
    const json& result = doc["data"]["result"];
    if (!result.is_array() || result.size() != 1) return std::nullopt;
    double value = 0;
    if (!absl::SimpleAtod(result[0]["value"][1].get<std::string>(), &value)) {
      return std::nullopt;
    }
    return value;
  };
  // Polls until the series equals `expected`: a value past it fails at
  // once (counters only grow), none in time fails at the deadline.
  auto expect_series = [&](const std::string& promql, double expected) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    std::optional<double> last;
    for (;;) {
      last = query(promql);
      if (last.has_value() && *last == expected) return;
      ASSERT_FALSE(last.has_value() && *last > expected)
          << promql << " = " << *last << ", more than " << expected;
      ASSERT_FALSE(prometheus->Exited()) << prometheus->Log();
      ASSERT_LT(absl::Now(), deadline)
          << promql << ": " << (last ? absl::StrCat(*last) : "no value")
          << " instead of " << expected << "; Prometheus log:\n"
          << prometheus->Log();
      absl::SleepFor(kPoll);
    }
  };
  expect_series(R"(nv_inference_request_success{model="mlp",version="1"})",
                kSuccesses);
  expect_series(R"(nv_inference_request_failure{model="mlp",version="1"})",
                kFailures);
  expect_series(R"(nv_inference_exec_count{model="mlp"})", kSuccesses);
  expect_series(R"(glint_device_memory_total_bytes{device="sim:0"})",
                256.0 * 1024 * 1024);
  expect_series(R"(sum(glint_device_loaded_partitions))", 1);
  // The scrape itself is healthy (Prometheus's own series).
  expect_series(R"(up{job="glintd"})", 1);

  EXPECT_EQ(prometheus->Stop(SIGTERM, absl::Seconds(30)), 0)
      << prometheus->Log();
  const absl::StatusOr<int> code = daemon_->Stop(SIGTERM, absl::Seconds(20));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << daemon_->Log();
}

}  // namespace
}  // namespace glint
