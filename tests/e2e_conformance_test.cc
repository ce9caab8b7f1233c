// The whole ONNX conformance list through a real glintd: every case that
// tests/onnx_conformance_expected.txt lists PASS is added over gRPC, run
// with each of its test_data_sets, judged as //tests:onnx_conformance_test
// judges it in process (tests/onnx_case.h), and removed. One daemon serves
// them all; the test fails naming each case that does not pass. Cases the
// file lists otherwise are not run (the in-process test watches them), so
// the test keeps holding as the file grows. Two client threads share the
// list (the cases are independent networks), which halves the wall time on
// the 2-core CI machine since each add waits on glintd's import helper.
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/glint_client.h"
#include "gtest/gtest.h"
#include "tests/onnx_case.h"
#include "tests/process_util.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using testing::CaseResult;
using testing::GlintdProcess;
using testing::Outcome;

// glint.v1 over the daemon's channel.
class GrpcBackend final : public testing::CaseBackend {
 public:
  // `failures` collects RemoveNetwork errors (gtest assertions stay on the
  // main thread).
  GrpcBackend(GlintClient& client, std::vector<std::string>* failures,
              absl::Mutex* mu)
      : client_(client), failures_(failures), mu_(mu) {}
  absl::StatusOr<NetworkInfo> Add(const std::string& name,
                                  const std::string& model,
                                  const AddNetworkOptions& options) override {
    return client_.AddNetwork(name, model, options);
  }
  absl::StatusOr<std::vector<NamedTensor>> Run(
      const std::string& name,
      const std::vector<NamedTensor>& inputs) override {
    return client_.RunNetwork(name, inputs, {}, absl::Seconds(30));
  }
  void Remove(const std::string& name) override {
    const absl::Status s = client_.RemoveNetwork(name);
    if (!s.ok()) {
      absl::MutexLock lock(mu_);
      failures_->push_back(
          absl::StrCat("RemoveNetwork '", name, "': ", s.ToString()));
    }
  }

 private:
  GlintClient& client_;
  std::vector<std::string>* failures_;
  absl::Mutex* mu_;
};

constexpr int kClientThreads = 2;

TEST(E2eConformanceTest, EveryPassingCasePassesThroughGlintd) {
  if (!fs::exists(testing::kOnnxNodeDir)) {
    GTEST_SKIP() << testing::kOnnxNodeDir
                 << " missing: is libonnx-testdata installed?";
  }
  const auto expected =
      testing::ReadExpectedOutcomes(testing::kConformanceExpectedFile);
  std::vector<std::string> cases;
  for (const auto& [name, outcome] : expected) {
    if (outcome == Outcome::kPass) cases.push_back(name);
  }
  ASSERT_FALSE(cases.empty()) << "no PASS case in "
                              << testing::kConformanceExpectedFile;

  // The same device as the in-process test; nothing kept on disk (the
  // journal is not what this test is about, and it would fsync each add).
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon =
      GlintdProcess::Start({"--devices=sim:memory=8GiB", "--store_dir="});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  absl::Mutex mu;
  std::vector<std::string> failures;  // Guarded by mu.
  std::atomic<size_t> next{0};
  std::atomic<int> passed{0};
  const absl::Time start = absl::Now();
  auto work = [&] {
    GrpcBackend backend((*daemon)->client(), &failures, &mu);
    for (size_t i = next++; i < cases.size(); i = next++) {
      const std::string& name = cases[i];
      const fs::path dir = fs::path(testing::kOnnxNodeDir) / name;
      std::string failure;
      if (!fs::exists(dir)) {
        failure = absl::StrCat(name, ": listed PASS but ", dir.string(),
                               " is missing");
      } else {
        const CaseResult r = testing::RunOnnxCase(backend, dir.string(), name);
        if (r.outcome == Outcome::kPass) {
          ++passed;
          continue;
        }
        failure = absl::StrCat(name, " is ", testing::OutcomeName(r.outcome),
                               " through glintd: ", r.detail);
      }
      absl::MutexLock lock(&mu);
      failures.push_back(std::move(failure));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kClientThreads; ++t) threads.emplace_back(work);
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) ADD_FAILURE() << f;
  std::cout << "through glintd: " << passed.load() << " of " << cases.size()
            << " PASS cases passed ("
            << absl::FormatDuration(absl::Now() - start) << ")\n";

  absl::StatusOr<int> code = (*daemon)->Stop(SIGTERM, absl::Seconds(20));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0) << (*daemon)->Log();
}

}  // namespace
}  // namespace glint
