// Statistics through a real glintd: a network run N times (and some runs
// that fail) shows exactly those counts through GetStatistics, per network
// and per device, also with runs arriving concurrently.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

using testing::GlintdProcess;

Tensor Floats(Shape shape, float value) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()), value);
  return Tensor::FromVector<float>(DType::kFloat32, std::move(shape), v);
}

TEST(StatisticsE2eTest, CountsMatchTheRunsMade) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon =
      GlintdProcess::Start({"--devices=sim*2:memory=256MiB"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  GlintClient& client = (*daemon)->client();
  ASSERT_TRUE(client.AddNetwork("add", testing::AddModel()).ok());
  ASSERT_TRUE(client.AddNetwork("idle", testing::AddModel()).ok());

  absl::StatusOr<ServingStatistics> stats = client.GetStatistics("add");
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->networks.size(), 1u);
  EXPECT_EQ(stats->networks[0].inference_count, 0u);
  EXPECT_EQ(stats->networks[0].last_inference, absl::UnixEpoch());

  // N sequential runs, then 2 that fail (a wrong shape, a missing input),
  // then 4 threads of 8 runs each at once.
  constexpr int kSequential = 10;
  const absl::Time before = absl::Now();
  for (int i = 0; i < kSequential; ++i) {
    absl::StatusOr<std::vector<NamedTensor>> out = client.RunNetwork(
        "add", {{"x", Floats({2, 3}, i)}, {"y", Floats({2, 3}, 1)}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].tensor.data<float>()[0], i + 1.0f);
  }
  EXPECT_EQ(client
                .RunNetwork("add", {{"x", Floats({3, 2}, 1)},
                                    {"y", Floats({2, 3}, 1)}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.RunNetwork("add", {{"x", Floats({2, 3}, 1)}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Not a request of any network.
  EXPECT_EQ(client.RunNetwork("absent", {{"x", Floats({2, 3}, 1)}})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  constexpr int kThreads = 4;
  constexpr int kEach = 8;
  std::vector<std::thread> threads;
  std::vector<int> failed(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!client
                 .RunNetwork("add", {{"x", Floats({2, 3}, t)},
                                     {"y", Floats({2, 3}, i)}})
                 .ok()) {
          ++failed[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failed[t], 0);

  constexpr uint64_t kOk = kSequential + kThreads * kEach;
  stats = client.GetStatistics("add");
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->networks.size(), 1u);
  const NetworkStatistics& add = stats->networks[0];
  EXPECT_EQ(add.name, "add");
  EXPECT_EQ(add.success_count, kOk);
  EXPECT_EQ(add.failure_count, 2u);
  EXPECT_EQ(add.inference_count, kOk + 2);
  EXPECT_EQ(add.execution_count, kOk);
  EXPECT_GE(add.last_inference, before);
  EXPECT_EQ(add.request.count, kOk);
  EXPECT_EQ(add.failed.count, 2u);
  EXPECT_EQ(add.queue.count, kOk);
  EXPECT_EQ(add.compute_input.count, kOk);
  EXPECT_EQ(add.compute_infer.count, kOk);
  EXPECT_EQ(add.compute_output.count, kOk);
  EXPECT_GT(add.compute_infer.total_ns, 0u);
  EXPECT_GT(add.request.p50_us, 0);
  EXPECT_GE(add.request.p99_us, add.request.p50_us);
  EXPECT_EQ(add.queue_depth, 0);
  EXPECT_EQ(add.in_flight, 0);
  ASSERT_EQ(add.partitions.size(), 1u);
  EXPECT_EQ(add.partitions[0].compute.count, kOk);

  // The devices: two, one of which ran every launch of "add" (the other
  // may hold "idle"), and memory in use where the networks are.
  ASSERT_EQ(stats->devices.size(), 2u);
  uint64_t launches = 0;
  for (const DeviceStatistics& d : stats->devices) {
    launches += d.compute.count;
    EXPECT_EQ(d.device.memory_bytes, 256 * kMiB);
    if (d.device.name == add.partitions[0].device_name) {
      EXPECT_EQ(d.compute.count, kOk);
      EXPECT_LT(d.device.available_memory_bytes, d.device.memory_bytes);
    }
  }
  EXPECT_EQ(launches, kOk);

  // Every network, by name; unknown ones are NOT_FOUND.
  stats = client.GetStatistics();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->networks.size(), 2u);
  EXPECT_EQ(stats->networks[0].name, "add");
  EXPECT_EQ(stats->networks[1].name, "idle");
  EXPECT_EQ(stats->networks[1].inference_count, 0u);
  EXPECT_EQ(client.GetStatistics("absent").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace glint
