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

#include "absl/strings/str_cat.h"
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

// Waits (bounded) until `runs` runs of `network` are admitted and in
// flight at once, and glintd has seen `received` runs in all (in flight,
// queued or finished), as GetStatistics reports: a condition, polled.
absl::Status AwaitRunsInFlight(GlintClient& client, const std::string& network,
                               int runs, int received = 0) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  int in_flight = -1, queued = -1;
  uint64_t finished = 0;
  while (absl::Now() < deadline) {
    absl::StatusOr<ServingStatistics> stats = client.GetStatistics(network);
    if (stats.ok() && !stats->networks.empty()) {
      const NetworkStatistics& n = stats->networks[0];
      in_flight = n.in_flight;
      queued = n.queue_depth;
      finished = n.success_count + n.failure_count;
      if (in_flight >= runs &&
          static_cast<uint64_t>(in_flight + queued) + finished >=
              static_cast<uint64_t>(received)) {
        return absl::OkStatus();
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "never ", runs, " runs in flight of ", received, " received; last: ",
      in_flight, " in flight, queued ", queued, ", finished ", finished));
}

// Waits until device 0 is computing a launch (DeviceInfo::launches_running):
// a run in flight may still be copying in or queued, and a queued launch is
// skipped on shutdown rather than waited for.
absl::Status AwaitComputing(GlintClient& client) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  int running = -1;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::vector<DeviceInfo>> devices = client.GetDevices();
    if (devices.ok() && !devices->empty()) {
      running = (*devices)[0].launches_running;
      if (running > 0) return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("device 0 never computing; last: ", running, " launches"));
}

// What SIGTERM did to a busy glintd.
struct Stopped {
  absl::Status arrived;      // Whether the runs were in flight first.
  absl::Time signalled;      // When SIGTERM was sent.
  absl::StatusOr<int> code;  // Its exit code.
  absl::Duration took;       // From the signal to its exit.
};

// Sends SIGTERM once `runs` runs of `network` are in flight and `received`
// have reached glintd (or once that wait gives up: the clients must end
// either way), then waits for glintd to exit and for `clients` to end.
Stopped StopWhenInFlight(GlintdProcess& d, const std::string& network, int runs,
                         std::vector<std::thread>& clients, int received = 0,
                         bool computing = false) {
  Stopped stopped;
  stopped.arrived = AwaitRunsInFlight(d.client(), network, runs, received);
  if (stopped.arrived.ok() && computing) {
    stopped.arrived = AwaitComputing(d.client());
  }
  stopped.signalled = absl::Now();
  stopped.code = d.Stop(SIGTERM, absl::Seconds(20));
  stopped.took = absl::Now() - stopped.signalled;
  for (std::thread& t : clients) t.join();
  return stopped;
}

// A run's answer: its status code and when it came.
struct Answer {
  absl::StatusCode code = absl::StatusCode::kOk;
  absl::Time at;
};

// One thread per element of `answers`, each sending one run of `network`
// (input "x" of `width` floats) and keeping its answer there. The strings
// are copied: the caller's may be temporaries.
std::vector<std::thread> SendRuns(const std::string& address,
                                  const std::string& network, int64_t width,
                                  std::vector<Answer>& answers) {
  std::vector<std::thread> clients;
  for (size_t i = 0; i < answers.size(); ++i) {
    clients.emplace_back([address, network, &answers, width, i] {
      GlintClient client(GlintClient::CreateChannel(address), ClientOptions());
      std::vector<float> x(width, 0.5f);
      absl::StatusOr<std::vector<NamedTensor>> out = client.RunNetwork(
          network,
          {{"x",
            Tensor::FromVector<float>(DType::kFloat32, Shape({1, width}), x)}},
          {}, absl::Seconds(120));
      answers[i] = {out.status().code(), absl::Now()};
    });
  }
  return clients;
}

// A slow link (1 MB/s) with 80 runs or more in flight, each with a 1 MiB
// input to copy in (~1 s each, over a minute in all): on SIGTERM their
// queued copies are skipped, not waited out, so glintd exits promptly even
// with a grace of 30 s, in which it would otherwise have waited for them.
TEST(ShutdownWhileBusyTest, QueuedCopiesOnASlowLinkAreSkipped) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(
      {"--devices=sim:link_gbps=0.001", "--max_active_runs=100",
       "--max_concurrent_executions=100", "--shutdown_grace=30s"});
  ASSERT_TRUE(d.ok()) << d.status();
  constexpr int64_t kWidth = 256 * 1024;  // 1 MiB of float32.
  ASSERT_TRUE((*d)->client()
                  .AddNetwork("wide", testing::MakeMlpModel(1, kWidth, 1))
                  .ok());
  const std::string address = (*d)->address();
  std::vector<Answer> answers(100);
  std::vector<std::thread> clients = SendRuns(address, "wide", kWidth, answers);
  // The premise: enough of them in flight that their copies alone would
  // take far longer than the bound below, and all of them received: a call
  // whose request is still arriving when glintd shuts down is cancelled by
  // gRPC before any handler sees it (CANCELLED; under TSan, 17 of 100 were
  // when the signal came at 80 in flight). Not all in flight at once: the
  // first finish one a second.
  const Stopped stopped = StopWhenInFlight(**d, "wide", 80, clients, 100);
  ASSERT_TRUE(stopped.arrived.ok()) << stopped.arrived;
  ASSERT_TRUE(stopped.code.ok()) << stopped.code.status();
  EXPECT_EQ(*stopped.code, 0) << (*d)->Log();
  std::cout << "glintd exited " << absl::FormatDuration(stopped.took)
            << " after SIGTERM with 100 runs copying on a 1 MB/s link\n";
  // Far below both the 80 s and more that the copies would take and the
  // 30 s grace (0.4-0.6 s plain, 2.4-4.2 s under TSan with 100 clients).
  EXPECT_LT(stopped.took, absl::Seconds(15)) << (*d)->Log();
  EXPECT_THAT((*d)->Log(), ::testing::Not(::testing::HasSubstr("overran")));
  int unavailable = 0;
  for (const Answer& a : answers) {
    EXPECT_TRUE(a.code == absl::StatusCode::kOk ||
                a.code == absl::StatusCode::kUnavailable)
        << absl::StatusCodeToString(a.code);
    unavailable += a.code == absl::StatusCode::kUnavailable;
  }
  EXPECT_GT(unavailable, 50);
}

// A launch already computing cannot be cut short (a single ~30 s layer on
// a device of 10 kFLOP/s): glintd still exits within its grace plus 1 s,
// with exit code 1, the run's call cancelled when the grace ends.
TEST(ShutdownWhileBusyTest, ExitsWithinGracePlusOneSecondWhateverTheDevice) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(
      {"--devices=sim:compute_gflops=0.00001", "--shutdown_grace=1s"});
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE((*d)->client()
                  .AddNetwork("stuck", testing::MakeMlpModel(1, 512, 256))
                  .ok());
  const std::string address = (*d)->address();
  std::vector<Answer> answers(1);
  std::vector<std::thread> clients = SendRuns(address, "stuck", 512, answers);
  // Signalled only once the launch computes: before that (copying in, or
  // queued) it would be skipped, and glintd would exit 0 at once (seen
  // under TSan, where the signal came 11 ms after the run was admitted).
  const Stopped stopped = StopWhenInFlight(**d, "stuck", 1, clients,
                                           /*received=*/0, /*computing=*/true);
  ASSERT_TRUE(stopped.arrived.ok()) << stopped.arrived;
  ASSERT_TRUE(stopped.code.ok()) << stopped.code.status();
  EXPECT_EQ(*stopped.code, 1) << (*d)->Log();  // It had to cut it short.
  std::cout << "glintd exited " << absl::FormatDuration(stopped.took)
            << " after SIGTERM with a launch of ~30 s computing\n";
  // The bound is 2 s; the rest is the margin of a loaded machine.
  EXPECT_LT(stopped.took, absl::Seconds(4)) << (*d)->Log();
  EXPECT_GE(stopped.took, absl::Seconds(1));  // The grace was given.
  EXPECT_THAT((*d)->Log(), ::testing::HasSubstr("shutdown overran"));
  // Answered when the grace ended (gRPC's shutdown cancels the call), not
  // only when the process went a second later.
  EXPECT_TRUE(answers[0].code == absl::StatusCode::kCancelled ||
              answers[0].code == absl::StatusCode::kUnavailable)
      << absl::StatusCodeToString(answers[0].code);
  const absl::Duration answered = answers[0].at - stopped.signalled;
  std::cout << "its call was answered " << absl::FormatDuration(answered)
            << " after SIGTERM\n";
  EXPECT_LT(answered, stopped.took - absl::Milliseconds(250));
}

}  // namespace
}  // namespace glint
