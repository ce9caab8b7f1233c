// Several glintd behind gRPC's client-side balancing, sharing one model
// repository (docs/SCALING_OUT.md): three daemons on loopback, one client
// with an ipv4: target of all three, round_robin spreading the runs and the
// retry policy carrying them over a daemon killed with SIGKILL mid-stream;
// the daemon restarted on its port rejoins. Also poll mode: a new version
// dropped into the shared repository replaces the old one in a daemon.
//
// Prints its figures (runs, shares, kill, rejoin time) for the docs.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using testing::GlintdProcess;

constexpr int kDaemons = 3;
constexpr int kRuns = 300;
constexpr int kThreads = 4;
// The MLP every daemon serves: x[1, 16] -> y[1, 8].
constexpr int64_t kIn = 16;
constexpr int64_t kOut = 8;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

// Slow enough (about 3 ms a run on the simulated devices' timing model)
// that a SIGKILL lands while runs are in flight on the victim.
std::vector<std::string> DaemonArgs(const std::string& repo) {
  return {"--model_repository=" + repo, "--devices=sim*2:compute_gflops=0.0001",
          "--log_level=warn"};
}

// Input k and the answer it must get.
Tensor InputOf(int k, std::vector<float>* x) {
  x->resize(kIn);
  for (int64_t i = 0; i < kIn; ++i) {
    (*x)[i] = 0.125f * static_cast<float>((i + k) % 9) - 0.5f;
  }
  return Tensor::FromVector(DType::kFloat32, Shape({1, kIn}), *x);
}

// Empty when run k's reply is the MLP's answer, else what differs.
std::string CheckRun(int k,
                     const absl::StatusOr<std::vector<NamedTensor>>& out,
                     const std::vector<float>& x) {
  if (!out.ok()) return absl::StrCat("run ", k, ": ", out.status().ToString());
  if (out->size() != 1 || (*out)[0].tensor.num_elements() != kOut) {
    return absl::StrCat("run ", k, ": wrong outputs");
  }
  const std::vector<float> want = testing::MlpReference(x, 1, kIn, kOut);
  for (int64_t j = 0; j < kOut; ++j) {
    const float got = (*out)[0].tensor.data<float>()[j];
    if (std::abs(got - want[j]) > 1e-4f * (1 + std::abs(want[j]))) {
      return absl::StrCat("run ", k, ": y[", j, "] = ", got, ", want ",
                          want[j]);
    }
  }
  return "";
}

// Successful runs of "mlp" a daemon has answered since it loaded it.
uint64_t Served(GlintdProcess& daemon) {
  absl::StatusOr<ServingStatistics> stats =
      daemon.client().GetStatistics("mlp");
  EXPECT_TRUE(stats.ok()) << stats.status();
  if (!stats.ok() || stats->networks.empty()) return 0;
  return stats->networks[0].success_count;
}

// `runs` runs through `client` on kThreads threads, each reply checked.
// `progress(done)` is called (on the test's thread) as runs complete, so
// the test can act mid-stream.
class RunStream {
 public:
  RunStream(GlintClient* client, int runs) : client_(client), runs_(runs) {
    for (int t = 0; t < kThreads; ++t) {
      threads_.emplace_back([this] { Work(); });
    }
  }
  ~RunStream() { Join(); }

  // Blocks until `n` runs have completed (or all of them).
  void AwaitDone(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return done_ >= std::min(n, runs_);
    };
    mu_.Await(absl::Condition(&reached));
  }
  void Join() {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  int done() {
    absl::MutexLock lock(&mu_);
    return done_;
  }
  std::vector<std::string> errors() {
    absl::MutexLock lock(&mu_);
    return errors_;
  }

 private:
  void Work() {
    for (;;) {
      const int k = next_.fetch_add(1);
      if (k >= runs_) return;
      std::vector<float> x;
      const Tensor input = InputOf(k, &x);
      absl::StatusOr<std::vector<NamedTensor>> out = client_->RunNetwork(
          "mlp", {{"x", input}}, {}, absl::Seconds(30));
      const std::string error = CheckRun(k, out, x);
      absl::MutexLock lock(&mu_);
      ++done_;
      if (!error.empty()) errors_.push_back(error);
    }
  }

  GlintClient* const client_;
  const int runs_;
  std::atomic<int> next_{0};
  absl::Mutex mu_;
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

TEST(ScaleOutTest, ThreeDaemonsOneRepositoryBalancedRetriedAndRejoined) {
  const absl::Time test_start = absl::Now();
  const std::string repo = testing::NewTempDir("repository");
  WriteFile(repo + "/mlp/1/model.onnx", testing::MakeMlpModel(1, kIn, kOut));

  std::vector<std::unique_ptr<GlintdProcess>> daemons;
  std::vector<std::string> addresses;
  for (int i = 0; i < kDaemons; ++i) {
    // Start() returns once health says SERVING: the repository is loaded.
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start(DaemonArgs(repo));
    ASSERT_TRUE(d.ok()) << d.status();
    absl::StatusOr<NetworkInfo> info = (*d)->client().GetNetwork("mlp");
    ASSERT_TRUE(info.ok()) << "daemon " << i << ": " << info.status();
    addresses.push_back(absl::StrCat("127.0.0.1:", (*d)->port()));
    daemons.push_back(*std::move(d));
  }
  const std::string target = "ipv4:" + absl::StrJoin(addresses, ",");
  ClientOptions options;
  options.connect_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<GlintClient>> client =
      GlintClient::Connect(target, options);
  ASSERT_TRUE(client.ok()) << client.status();

  // 1. 300 runs, every daemon up: each serves its share.
  absl::Time start = absl::Now();
  {
    RunStream stream(client->get(), kRuns);
    stream.Join();
    EXPECT_EQ(stream.errors(), std::vector<std::string>());
    EXPECT_EQ(stream.done(), kRuns);
  }
  const absl::Duration balanced_time = absl::Now() - start;
  std::vector<uint64_t> served(kDaemons);
  uint64_t total = 0;
  for (int i = 0; i < kDaemons; ++i) {
    served[i] = Served(*daemons[i]);
    total += served[i];
  }
  EXPECT_EQ(total, static_cast<uint64_t>(kRuns));
  std::string shares;
  for (int i = 0; i < kDaemons; ++i) {
    const double share = static_cast<double>(served[i]) / kRuns;
    EXPECT_GE(share, 0.20) << "daemon " << i << " served " << served[i];
    absl::StrAppend(&shares, i == 0 ? "" : ", ", served[i], " (",
                    static_cast<int>(share * 100 + 0.5), "%)");
  }
  std::printf("scale-out: %d runs over %d daemons in %s; per daemon: %s\n",
              kRuns, kDaemons, absl::FormatDuration(balanced_time).c_str(),
              shares.c_str());

  // 2. 300 more; daemon 1 is killed after 100 and restarted on its port
  // after 200. Every run must still succeed: those in flight on it, or
  // sent to it before the channel saw it die, are retried elsewhere.
  const int victim = 1;
  const int victim_port = daemons[victim]->port();
  const uint64_t others_before = Served(*daemons[0]) + Served(*daemons[2]);
  start = absl::Now();
  int in_flight_at_kill = 0;
  absl::Duration restart_time;
  {
    RunStream stream(client->get(), kRuns);
    stream.AwaitDone(kRuns / 3);
    absl::StatusOr<ServingStatistics> before =
        daemons[victim]->client().GetStatistics("mlp");
    if (before.ok() && !before->networks.empty()) {
      in_flight_at_kill =
          before->networks[0].in_flight + before->networks[0].queue_depth;
    }
    ASSERT_TRUE(daemons[victim]->Stop(SIGKILL, absl::Seconds(10)).ok());
    daemons[victim].reset();
    stream.AwaitDone(2 * kRuns / 3);
    const absl::Time restart = absl::Now();
    std::vector<std::string> args = DaemonArgs(repo);
    args.push_back(absl::StrCat("--listen=127.0.0.1:", victim_port));
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start(args);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ((*d)->port(), victim_port);
    daemons[victim] = *std::move(d);
    restart_time = absl::Now() - restart;
    stream.Join();
    EXPECT_EQ(stream.errors(), std::vector<std::string>());
    EXPECT_EQ(stream.done(), kRuns);
  }
  const absl::Duration kill_time = absl::Now() - start;
  const uint64_t others_after = Served(*daemons[0]) + Served(*daemons[2]);
  const uint64_t restarted_served = Served(*daemons[victim]);

  // 3. The restarted daemon rejoins: the same client's runs reach it
  // again, and its statistics grow (bounded: 300 runs or 30 s).
  start = absl::Now();
  int extra = 0;
  while (Served(*daemons[victim]) <= restarted_served) {
    ASSERT_LT(extra, kRuns) << "the restarted daemon got no run";
    ASSERT_LT(absl::Now() - start, absl::Seconds(30));
    std::vector<float> x;
    const Tensor input = InputOf(extra, &x);
    EXPECT_EQ(CheckRun(extra, (*client)->RunNetwork("mlp", {{"x", input}}),
                       x),
              "");
    ++extra;
  }
  const absl::Duration rejoin_time = absl::Now() - start;
  std::printf(
      "scale-out: %d runs with daemon %d SIGKILLed after %d (runs in flight "
      "or queued on it just before: %d) and restarted after %d: all "
      "succeeded in %s; the other two served %llu of them; restart to "
      "SERVING %s; the restarted daemon served %llu of the stream's last "
      "runs, and grew again after %d more (%s); test time %s\n",
      kRuns, victim, kRuns / 3, in_flight_at_kill, 2 * kRuns / 3,
      absl::FormatDuration(kill_time).c_str(),
      static_cast<unsigned long long>(others_after - others_before),
      absl::FormatDuration(restart_time).c_str(),
      static_cast<unsigned long long>(restarted_served), extra,
      absl::FormatDuration(rejoin_time).c_str(),
      absl::FormatDuration(absl::Now() - test_start).c_str());
}

// Poll mode over a real daemon: a new version folder replaces the serving
// one, a broken newer version leaves it serving, and the repository's
// networks are not journaled (a restart loads them from the repository).
TEST(ScaleOutTest, PollModeServesTheNewestVersion) {
  const std::string repo = testing::NewTempDir("poll_repository");
  WriteFile(repo + "/mlp/1/model.onnx", testing::MakeMlpModel(1, kIn, kOut));
  const std::string store = testing::NewTempDir("poll_store");
  const std::vector<std::string> args = {
      "--model_repository=" + repo, "--model_control_mode=poll",
      "--repository_poll_secs=1", "--store_dir=" + store};
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(args);
  ASSERT_TRUE(d.ok()) << d.status();
  GlintClient& client = (*d)->client();
  absl::StatusOr<NetworkInfo> info = client.GetNetwork("mlp");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->outputs[0].shape, Shape({1, kOut}));

  // Version 2 answers 3 values; wait (bounded) until it serves.
  WriteFile(repo + "/mlp/2/model.onnx", testing::MakeMlpModel(1, kIn, 3));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (;;) {
    info = client.GetNetwork("mlp");
    ASSERT_TRUE(info.ok()) << info.status();
    if (info->outputs[0].shape == Shape({1, 3})) break;
    ASSERT_LT(absl::Now(), deadline) << "version 2 never served";
    absl::SleepFor(absl::Milliseconds(50));
  }
  std::vector<float> x;
  const Tensor input = InputOf(0, &x);
  absl::StatusOr<std::vector<NamedTensor>> out =
      client.RunNetwork("mlp", {{"x", input}});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> want = testing::MlpReference(x, 1, kIn, 3);
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR((*out)[0].tensor.data<float>()[j], want[j], 1e-4);
  }

  // Version 3 is not a model: logged, and version 2 keeps serving.
  WriteFile(repo + "/mlp/3/model.onnx", "not an ONNX model");
  const absl::Time log_deadline = absl::Now() + absl::Seconds(30);
  while ((*d)->Log().find("version 3 failed to load") == std::string::npos) {
    ASSERT_LT(absl::Now(), log_deadline) << (*d)->Log();
    absl::SleepFor(absl::Milliseconds(50));
  }
  out = client.RunNetwork("mlp", {{"x", input}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].tensor.num_elements(), 3);

  // Not in the store: a restart without the repository has no network.
  ASSERT_TRUE((*d)->Stop(SIGTERM, absl::Seconds(20)).ok());
  d->reset();
  absl::StatusOr<std::unique_ptr<GlintdProcess>> bare =
      GlintdProcess::Start({"--store_dir=" + store});
  ASSERT_TRUE(bare.ok()) << bare.status();
  absl::StatusOr<std::vector<NetworkInfo>> networks =
      (*bare)->client().ListNetworks();
  ASSERT_TRUE(networks.ok()) << networks.status();
  EXPECT_TRUE(networks->empty());
}

}  // namespace
}  // namespace glint
