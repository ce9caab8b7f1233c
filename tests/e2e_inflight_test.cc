// glintd with 1,024 RunNetwork calls in flight at once (issue 15, point 2,
// as a whole-system property, not a timing): every call completes with the
// output its own input should give, on a plain network and on one with
// dynamic batching at the same time, and glintd's thread count does not
// grow with the calls (the sync service held a thread per call: 1,090
// threads at 1,024 in flight).
#include <sys/types.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "proto/glint.grpc.pb.h"
#include "proto/proto_convert.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using testing::GlintdProcess;

constexpr int64_t kIn = 64;
constexpr int64_t kOut = 32;
constexpr int kDevices = 2;

// "Threads:" of /proc/PID/status; -1 if unreadable.
int ThreadCount(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int n = 0;
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "Threads:") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &n)) {
      return n;
    }
  }
  return -1;
}

// Call i's input: one row of kIn values of its own.
std::vector<float> InputOf(int i) {
  std::vector<float> x(kIn);
  for (int64_t k = 0; k < kIn; ++k) {
    x[k] = static_cast<float>((i * 37 + k * 11) % 29) / 8.0f - 1.5f;
  }
  return x;
}

// 1,024 calls at once, alternating between a plain network and one with
// dynamic batching (max_batch_size 8), each with its own input: all succeed
// with MlpReference of their input, and while they are out glintd's
// threads stay within a constant of its thread count at rest.
// Variable `key` of process `pid`'s environment (/proc/PID/environ);
// "<unset>" when it has none.
std::string EnvironmentOf(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    if (absl::StartsWith(entry, key + "=")) return entry.substr(key.size() + 1);
  }
  return "<unset>";
}

// How long the kernels' idle OpenMP threads spin (--omp_spin_count,
// runtime/server/common/kernel_threads.h) reaches glintd's environment, where
// libgomp reads it when glintd (re-executed) loads it; an operator's own
// GOMP_SPINCOUNT wins; -1 leaves libgomp's default. Each glintd serves.
TEST(InflightTest, KernelThreadsSpinAsConfigured) {
  ASSERT_EQ(std::getenv("GOMP_SPINCOUNT"), nullptr);
  ASSERT_EQ(std::getenv("OMP_WAIT_POLICY"), nullptr);
  struct Case {
    std::vector<std::string> args;
    const char* environment;  // GOMP_SPINCOUNT set by the operator.
    std::string want;
  };
  // The operator's own setting first: the environment is changed before
  // this process has any gRPC thread that could read it.
  const std::vector<Case> cases = {
      {{"--omp_spin_count=250"}, "77", "77"},
      {{}, nullptr, "10000"},
      {{"--omp_spin_count=250"}, nullptr, "250"},
      {{"--omp_spin_count=0"}, nullptr, "0"},
      {{"--omp_spin_count=-1"}, nullptr, "<unset>"},
  };
  for (const Case& c : cases) {
    if (c.environment != nullptr) setenv("GOMP_SPINCOUNT", c.environment, 1);
    std::vector<std::string> args = c.args;
    args.push_back("--devices=sim");
    absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd =
        GlintdProcess::Start(args);
    unsetenv("GOMP_SPINCOUNT");
    ASSERT_TRUE(glintd.ok()) << glintd.status();
    EXPECT_EQ(EnvironmentOf((*glintd)->pid(), "GOMP_SPINCOUNT"), c.want)
        << absl::StrJoin(c.args, " ");
    testing::OnnxModelBuilder b;
    b.Input("x", 1, {4}).Output("y", 1, {4});
    b.Node("Relu", {"x"}, {"y"});
    ASSERT_TRUE((*glintd)->client().AddNetwork("relu", b.Serialize()).ok());
    Tensor x = *Tensor::Create(DType::kFloat32, Shape({4}));
    for (int i = 0; i < 4; ++i) x.data<float>()[i] = static_cast<float>(i) - 2;
    absl::StatusOr<std::vector<NamedTensor>> y =
        (*glintd)->client().RunNetwork("relu", {{"x", x}});
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->size(), 1u);
    EXPECT_EQ((*y)[0].tensor.data<float>()[0], 0.0f);
    EXPECT_EQ((*y)[0].tensor.data<float>()[3], 1.0f);
  }
}

TEST(InflightTest, ThousandCallsAtOnceCompleteCorrectlyOnFlatThreads) {
  constexpr int kCalls = 1024;
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon = GlintdProcess::Start(
      {absl::StrCat("--devices=sim*", kDevices, ":memory=256MiB"),
       "--log_level=warning"},
      absl::Seconds(60));
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  GlintClient& client = (*daemon)->client();
  AddNetworkOptions plain;
  plain.partition.replicas = kDevices;
  ASSERT_TRUE(client
                  .AddNetwork("plain", glint::testing::MakeMlpModel(1, kIn, kOut),
                              plain)
                  .ok());
  AddNetworkOptions batched = plain;
  batched.batching.max_batch_size = 8;
  ASSERT_TRUE(
      client
          .AddNetwork("batched", glint::testing::MakeMlpModel(8, kIn, kOut),
                      batched)
          .ok());
  std::vector<v1::RunNetworkRequest> requests(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    requests[i].set_name(i % 2 == 0 ? "plain" : "batched");
    ASSERT_TRUE(TensorToProto({"x", Tensor::FromVector<float>(
                                        DType::kFloat32, Shape({1, kIn}),
                                        InputOf(i))},
                              requests[i].add_inputs())
                    .ok());
  }
  // Runs on both networks first, so that the devices' streams and engines
  // exist before glintd's threads at rest are counted.
  for (int i = 0; i < 8; ++i) {
    for (const char* name : {"plain", "batched"}) {
      ASSERT_TRUE(client
                      .RunNetwork(name, {{"x", Tensor::FromVector<float>(
                                                   DType::kFloat32,
                                                   Shape({1, kIn}), InputOf(i))}})
                      .ok());
    }
  }
  const pid_t pid = (*daemon)->pid();
  const int at_rest = ThreadCount(pid);
  ASSERT_GT(at_rest, 0);

  auto stub =
      v1::HostManager::NewStub(GlintClient::CreateChannel((*daemon)->address()));
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts(kCalls);
  std::vector<v1::RunNetworkResponse> responses(kCalls);
  std::vector<grpc::Status> statuses(kCalls);
  absl::Mutex mu;
  int answered = 0;
  for (int i = 0; i < kCalls; ++i) {
    contexts[i] = std::make_unique<grpc::ClientContext>();
    contexts[i]->set_deadline(
        absl::ToChronoTime(absl::Now() + absl::Seconds(240)));
    stub->async()->RunNetwork(contexts[i].get(), &requests[i], &responses[i],
                              [&, i](grpc::Status s) {
                                absl::MutexLock lock(&mu);
                                statuses[i] = std::move(s);
                                ++answered;
                              });
  }
  // glintd's threads, sampled until every call is answered (the wait is
  // for the answers; the timeout only paces the sampling).
  int peak = 0;
  for (;;) {
    peak = std::max(peak, ThreadCount(pid));
    absl::MutexLock lock(&mu);
    auto all = [&] { return answered == kCalls; };
    if (mu.AwaitWithTimeout(absl::Condition(&all), absl::Milliseconds(2))) {
      break;
    }
  }

  absl::MutexLock lock(&mu);
  int ok = 0;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(statuses[i].ok())
        << "call " << i << ": " << statuses[i].error_code() << " "
        << statuses[i].error_message();
    ASSERT_EQ(responses[i].outputs_size(), 1) << "call " << i;
    absl::StatusOr<Tensor> y = TensorFromProto(responses[i].outputs(0));
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->shape(), Shape({1, kOut})) << "call " << i;
    const std::vector<float> want =
        glint::testing::MlpReference(InputOf(i), 1, kIn, kOut);
    for (int64_t j = 0; j < kOut; ++j) {
      ASSERT_NEAR(y->data<float>()[j], want[j], 1e-3 * std::max(1.0f, std::fabs(want[j])))
          << "call " << i << " (" << requests[i].name() << "), output " << j;
    }
    ++ok;
  }
  EXPECT_EQ(ok, kCalls);
  // At rest every device's threads exist already; under load gRPC's
  // executor grows, up to twice the cores, not with the calls. A thread
  // per call (or per active run) would add hundreds.
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  std::cerr << "glintd threads: " << at_rest << " at rest, " << peak
            << " at most with " << kCalls << " calls out (" << cores
            << " cores)\n";
  EXPECT_LE(peak, at_rest + 2 * cores + kDevices + 8)
      << "at rest " << at_rest << ", " << cores << " cores";
  // glintd still answers, with the same results.
  absl::StatusOr<std::vector<NamedTensor>> after = client.RunNetwork(
      "batched", {{"x", Tensor::FromVector<float>(DType::kFloat32,
                                                  Shape({1, kIn}), InputOf(5))}});
  ASSERT_TRUE(after.ok()) << after.status();
}

}  // namespace
}  // namespace glint
