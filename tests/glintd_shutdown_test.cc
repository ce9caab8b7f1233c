// glintd's life cycle as an operator sees it: it starts on a free port,
// reports SERVING, serves a run, and on SIGTERM or SIGINT exits 0 within a
// bounded time.
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
