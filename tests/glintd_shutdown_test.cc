// glintd's life cycle as an operator sees it: it starts on a free port,
// reports SERVING, serves a run, and on SIGTERM or SIGINT exits 0 within a
// bounded time.
#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

using testing::GlintdProcess;

// Generous for a loaded CI machine; a clean shutdown takes milliseconds.
constexpr absl::Duration kExitBound = absl::Seconds(15);

void AddAndRun(GlintClient& client) {
  ASSERT_TRUE(client.AddNetwork("add", testing::AddModel()).ok());
  std::vector<float> ones(6, 1.0f);
  absl::StatusOr<std::vector<NamedTensor>> out = client.RunNetwork(
      "add",
      {{"x", Tensor::FromVector<float>(DType::kFloat32, Shape({2, 3}), ones)},
       {"y", Tensor::FromVector<float>(DType::kFloat32, Shape({2, 3}), ones)}});
  ASSERT_TRUE(out.ok()) << out.status();
}

class ShutdownTest : public ::testing::TestWithParam<int> {};

TEST_P(ShutdownTest, ExitsZeroWithinBound) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start({});
  ASSERT_TRUE(d.ok()) << d.status();
  AddAndRun((*d)->client());
  absl::StatusOr<int> code = (*d)->Stop(GetParam(), kExitBound);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*d)->Log();
  EXPECT_THAT((*d)->Log(), ::testing::HasSubstr("glintd stopped"));
}

INSTANTIATE_TEST_SUITE_P(Signals, ShutdownTest,
                         ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGTERM ? "SIGTERM"
                                                                    : "SIGINT");
                         });

// Runs in flight while the signal arrives finish or fail cleanly; either
// way the daemon exits 0 and no client sees a crash (a broken connection
// would surface as UNAVAILABLE, which is also a clean failure).
TEST(ShutdownWhileBusyTest, InFlightRunsFinishOrFailCleanly) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start({});
  ASSERT_TRUE(d.ok()) << d.status();
  AddAndRun((*d)->client());
  const std::string address = (*d)->address();
  std::vector<std::thread> clients;
  std::vector<absl::StatusCode> codes(4, absl::StatusCode::kOk);
  for (size_t i = 0; i < codes.size(); ++i) {
    clients.emplace_back([&, i] {
      GlintClient client(GlintClient::CreateChannel(address), ClientOptions());
      std::vector<float> ones(6, 1.0f);
      for (int k = 0; k < 200; ++k) {
        absl::StatusOr<std::vector<NamedTensor>> out = client.RunNetwork(
            "add",
            {{"x", Tensor::FromVector<float>(DType::kFloat32, Shape({2, 3}),
                                             ones)},
             {"y", Tensor::FromVector<float>(DType::kFloat32, Shape({2, 3}),
                                             ones)}},
            {}, absl::Seconds(10));
        if (!out.ok()) {
          codes[i] = out.status().code();
          return;
        }
      }
    });
  }
  absl::StatusOr<int> code = (*d)->Stop(SIGTERM, kExitBound);
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*d)->Log();
  for (absl::StatusCode c : codes) {
    EXPECT_TRUE(c == absl::StatusCode::kOk ||
                c == absl::StatusCode::kUnavailable ||
                c == absl::StatusCode::kCancelled)
        << absl::StatusCodeToString(c);
  }
}

}  // namespace
}  // namespace glint

namespace glint {
namespace {

// SIGTERM with slow runs in flight and more queued: glintd stops admitting,
// fails the queued runs, skips what in-flight runs have not started, and
// exits well within its 5 s grace period instead of computing them all.
TEST(ShutdownWhileBusyTest, ExitsPromptlyWithSlowRunsInFlight) {
  // ~0.13 s per 256x256 layer at 1 MFLOP/s; 8 layers, 2 devices, load
  // balanced into 2 stages: each run is ~1 s of work, 24 clients queue ~12 s.
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
      GlintdProcess::Start({"--devices=sim*2:compute_gflops=0.001"});
  ASSERT_TRUE(d.ok()) << d.status();
  AddNetworkOptions options;
  options.partition.strategy = PartitionStrategy::kLoadBalanced;
  options.partition.plan_devices = 2;
  ASSERT_TRUE(
      (*d)->client()
          .AddNetwork("slow", testing::MakeDeepMlpModel(1, 256, 8), options)
          .ok());
  const std::string address = (*d)->address();
  std::atomic<int> started{0};
  std::vector<std::thread> clients;
  std::vector<absl::StatusCode> codes(24, absl::StatusCode::kOk);
  for (size_t i = 0; i < codes.size(); ++i) {
    clients.emplace_back([&, i] {
      GlintClient client(GlintClient::CreateChannel(address), ClientOptions());
      std::vector<float> x(256, 0.5f);
      ++started;
      absl::StatusOr<std::vector<NamedTensor>> out = client.RunNetwork(
          "slow",
          {{"x",
            Tensor::FromVector<float>(DType::kFloat32, Shape({1, 256}), x)}},
          {}, absl::Seconds(60));
      codes[i] = out.status().code();
    });
  }
  while (started.load() < static_cast<int>(codes.size())) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(300));  // Let the runs reach the daemon.
  const absl::Time signalled = absl::Now();
  absl::StatusOr<int> code = (*d)->Stop(SIGTERM, kExitBound);
  const absl::Duration took = absl::Now() - signalled;
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*d)->Log();
  std::cout << "glintd exited " << absl::FormatDuration(took)
            << " after SIGTERM with " << codes.size() << " slow runs\n";
  EXPECT_LT(took, absl::Seconds(5)) << (*d)->Log();
  int unavailable = 0;
  for (absl::StatusCode c : codes) {
    EXPECT_TRUE(c == absl::StatusCode::kOk ||
                c == absl::StatusCode::kUnavailable ||
                c == absl::StatusCode::kCancelled)
        << absl::StatusCodeToString(c);
    unavailable += c == absl::StatusCode::kUnavailable;
  }
  EXPECT_GT(unavailable, 0);
}

}  // namespace
}  // namespace glint
