// Runs admitted by the device memory their executions need (issue 33): a
// network split by memory onto devices it nearly fills serves any number
// of runs in flight, each correct, none failed for device memory.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "devices/fault/fault_injecting_device.h"
#include "devices/sim/sim_device.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "runtime/host_manager.h"

namespace glint {
namespace {

constexpr uint64_t kKiB = 1024;

// The network: 6 layers of 256×256 floats (256 KiB each, 1.5 MiB in all)
// on a batch of 64 rows, so that each value a run holds is 64 KiB.
constexpr int64_t kBatch = 64;
constexpr int64_t kWidth = 256;
constexpr int kLayers = 6;

// Devices of `memory` bytes each, wrapped so that a test can kill one.
struct Devices {
  std::vector<FaultInjectingDevice*> faulty;
  std::vector<std::unique_ptr<DeviceManager>> owned;
};

Devices MakeDevices(int count, uint64_t memory) {
  Devices d;
  for (int id = 0; id < count; ++id) {
    DeviceConfig config;
    config.memory_bytes = memory;
    config.name = "sim:" + std::to_string(id);
    auto sim = SimDevice::Create(id, config);
    EXPECT_TRUE(sim.ok()) << sim.status();
    auto device = std::make_unique<FaultInjectingDevice>(
        std::unique_ptr<DeviceManager>(*std::move(sim)));
    d.faulty.push_back(device.get());
    d.owned.push_back(std::move(device));
  }
  return d;
}

Tensor Input(int seed) {
  std::vector<float> values(kBatch * kWidth);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>((i * 7 + seed * 13) % 17) / 8.0f - 1.0f;
  }
  return Tensor::FromVector(DType::kFloat32, Shape({kBatch, kWidth}), values);
}

AddNetworkOptions SplitByMemory() {
  AddNetworkOptions add;
  add.partition.strategy = PartitionStrategy::kMemory;
  return add;
}

class MemoryAdmissionTest : public ::testing::Test {
 protected:
  // `memory` per device: each holds two of the six layers and room for
  // one or two executions' values beside them.
  void Start(int devices = 3, uint64_t memory = 800 * kKiB,
             int max_queue_size = 1024) {
    Devices d = MakeDevices(devices, memory);
    faulty_ = d.faulty;
    HostManagerOptions options;
    options.max_queue_size = max_queue_size;
    auto host = HostManager::Create(options, std::move(d.owned));
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
  }

  // Adds `name` split by memory and checks the premise: at least two
  // partitions, each on a device with room for one to `most` executions.
  void Add(const std::string& name, int most = 2) {
    absl::StatusOr<NetworkInfo> info = host_->AddNetwork(
        name, testing::MakeDeepMlpModel(kBatch, kWidth, kLayers),
        SplitByMemory());
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_GE(info->partitions.size(), 2u);
    for (const PartitionInfo& p : info->partitions) {
      EXPECT_GE(p.executions, 1) << p.name;
      EXPECT_LE(p.executions, most) << p.name;
      EXPECT_GT(p.execution_bytes, 0u) << p.name;
    }
  }

  // Each input's output, from runs one at a time.
  std::vector<Tensor> References(const std::string& name, int inputs) {
    std::vector<Tensor> want;
    for (int i = 0; i < inputs; ++i) {
      absl::StatusOr<std::vector<NamedTensor>> out =
          host_->RunNetwork(name, {{"x", Input(i)}});
      EXPECT_TRUE(out.ok()) << out.status();
      if (!out.ok()) return {};
      want.push_back(std::move((*out)[0].tensor));
    }
    return want;
  }

  // Starts `runs` runs of each of `names` at once (input r % 8), and waits
  // for every answer. Each answer is compared with `want` of its network;
  // returns the number of failures by code.
  struct Outcome {
    int ok = 0;
    int resource_exhausted = 0;
    int unavailable = 0;
    int other = 0;
    int wrong = 0;
  };
  Outcome RunAtOnce(const std::vector<std::string>& names, int runs,
                    const std::vector<std::vector<Tensor>>& want,
                    absl::FunctionRef<void(int started)> meanwhile) {
    // A count under the mutex, not an absl::BlockingCounter: TSan sees
    // absl::Mutex order memory (third_party/tsan/absl_annotations.cc), not
    // the counter's atomics, so it would report the test's own `want` as
    // freed while callbacks read it.
    absl::Mutex mu;
    Outcome outcome;
    int unanswered = runs * static_cast<int>(names.size());
    int started = 0;
    for (int r = 0; r < runs; ++r) {
      for (size_t n = 0; n < names.size(); ++n) {
        const Tensor* expected = &want[n][r % 8];
        host_->RunNetworkAsync(
            names[n], {{"x", Input(r % 8)}}, RunOptions(),
            [&, expected](absl::StatusOr<std::vector<NamedTensor>> out) {
              absl::MutexLock lock(&mu);
              {
                if (out.ok()) {
                  ++outcome.ok;
                  const Tensor& got = (*out)[0].tensor;
                  bool same = got.num_elements() == expected->num_elements();
                  for (int64_t i = 0; same && i < got.num_elements(); ++i) {
                    same = std::abs(got.data<float>()[i] -
                                    expected->data<float>()[i]) <= 1e-5f;
                  }
                  if (!same) ++outcome.wrong;
                } else if (absl::IsResourceExhausted(out.status())) {
                  ++outcome.resource_exhausted;
                  ADD_FAILURE() << out.status();
                } else if (absl::IsUnavailable(out.status())) {
                  ++outcome.unavailable;
                } else {
                  ++outcome.other;
                  ADD_FAILURE() << out.status();
                }
              }
              --unanswered;
            });
      }
      meanwhile(++started);
    }
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &unanswered));
    return outcome;
  }

  std::vector<FaultInjectingDevice*> faulty_;
  std::unique_ptr<HostManager> host_;
};

void Nothing(int) {}

// 64 and then 1,024 runs at once: all correct, most of them having waited
// for an execution slot, as the statistics say.
TEST_F(MemoryAdmissionTest, SixtyFourAndAThousandInFlightAreAllCorrect) {
  Start();
  Add("mlp");
  const std::vector<Tensor> want = References("mlp", 8);
  ASSERT_EQ(want.size(), 8u);
  uint64_t waits = 0;
  for (int runs : {64, 1024}) {
    // The devices are held while the runs are submitted, so that all of
    // them are in flight at once: more than the executions reserved.
    for (FaultInjectingDevice* d : faulty_) d->Hold(true);
    const Outcome o = RunAtOnce({"mlp"}, runs, {want}, [&](int started) {
      if (started == runs) {
        for (FaultInjectingDevice* d : faulty_) d->Hold(false);
      }
    });
    EXPECT_EQ(o.ok, runs);
    EXPECT_EQ(o.wrong, 0);
    absl::StatusOr<NetworkStatistics> stats = host_->GetStatistics("mlp");
    ASSERT_TRUE(stats.ok());
    EXPECT_GT(stats->slot_wait.count, waits) << runs;
    EXPECT_LE(stats->slot_wait.count, waits + runs) << runs;
    EXPECT_GT(stats->slot_wait.total_ns, 0u);
    waits = stats->slot_wait.count;
  }
}

// Two networks on the same devices: each has its own reserved executions,
// and runs of one waiting for its slots hold up no run of the other.
TEST_F(MemoryAdmissionTest, TwoNetworksOnTheSameDevices) {
  Start(/*devices=*/3, /*memory=*/1600 * kKiB, /*max_queue_size=*/2048);
  // Each device reserves what it has room for: a stage with fewer
  // weights on its device gets more executions.
  Add("a", /*most=*/8);
  Add("b", /*most=*/8);
  const std::vector<Tensor> want_a = References("a", 8);
  const std::vector<Tensor> want_b = References("b", 8);
  ASSERT_EQ(want_a.size(), 8u);
  ASSERT_EQ(want_b.size(), 8u);
  for (int runs : {64, 1024}) {
    const Outcome o = RunAtOnce({"a", "b"}, runs, {want_a, want_b}, Nothing);
    EXPECT_EQ(o.ok, 2 * runs);
    EXPECT_EQ(o.wrong, 0);
  }
}

// A device dies with runs in flight: runs fail UNAVAILABLE or succeed
// (correctly), never RESOURCE_EXHAUSTED; the network is re-provisioned on
// spare devices (the old plan holds its devices until its runs end), with
// executions reserved again, and serves again.
TEST_F(MemoryAdmissionTest, ADeviceDiesInTheMiddle) {
  Start(/*devices=*/6);
  Add("mlp");
  const std::vector<Tensor> want = References("mlp", 8);
  ASSERT_EQ(want.size(), 8u);
  const std::vector<DeviceInfo> devices = host_->GetDevices();
  absl::StatusOr<NetworkInfo> before = host_->GetNetwork("mlp");
  ASSERT_TRUE(before.ok());
  const int victim = before->partitions.front().device_id;
  const Outcome o = RunAtOnce({"mlp"}, 256, {want}, [&](int started) {
    if (started == 128) faulty_[victim]->Kill();
  });
  EXPECT_EQ(o.ok + o.unavailable, 256);
  EXPECT_EQ(o.wrong, 0);
  // Afterwards every run succeeds, on the plan re-provisioned without the
  // dead device.
  const Outcome after = RunAtOnce({"mlp"}, 64, {want}, Nothing);
  EXPECT_EQ(after.ok, 64);
  EXPECT_EQ(after.wrong, 0);
  absl::StatusOr<NetworkInfo> now = host_->GetNetwork("mlp");
  ASSERT_TRUE(now.ok());
  for (const PartitionInfo& p : now->partitions) {
    EXPECT_NE(p.device_id, victim) << p.name;
    EXPECT_GE(p.executions, 1) << p.name;
  }
}

// A pipeline whose devices each fit one execution keeps a run on every
// stage: a run holds the execution state of the partition it is on, not of
// the whole network. With the last stage held busy, later runs still go
// through the earlier stages, as many as there are stages; once it goes,
// every run finishes, correct.
TEST_F(MemoryAdmissionTest, APipelineKeepsARunOnEveryStage) {
  Devices d = MakeDevices(3, 800 * kKiB);
  faulty_ = d.faulty;
  HostManagerOptions options;
  options.max_concurrent_executions = 1;
  auto host = HostManager::Create(options, std::move(d.owned));
  ASSERT_TRUE(host.ok()) << host.status();
  host_ = *std::move(host);
  Add("mlp");
  absl::StatusOr<NetworkInfo> info = host_->GetNetwork("mlp");
  ASSERT_TRUE(info.ok());
  const int stages = static_cast<int>(info->partitions.size());
  std::vector<int> devices;
  for (const PartitionInfo& p : info->partitions) {
    EXPECT_EQ(p.executions, 1) << p.name;
    devices.push_back(p.device_id);
  }
  std::sort(devices.begin(), devices.end());
  ASSERT_EQ(std::unique(devices.begin(), devices.end()), devices.end())
      << "one stage per device";
  const std::vector<Tensor> want = References("mlp", 8);
  ASSERT_EQ(want.size(), 8u);

  FaultInjectingDevice* first = faulty_[info->partitions.front().device_id];
  FaultInjectingDevice* last = faulty_[info->partitions.back().device_id];
  const int64_t through_first = first->finished_launches();
  last->Hold(true);
  absl::Mutex mu;
  int ok = 0;
  int unanswered = 2 * stages;
  for (int r = 0; r < 2 * stages; ++r) {
    const Tensor* expected = &want[r % 8];
    host_->RunNetworkAsync(
        "mlp", {{"x", Input(r % 8)}}, RunOptions(),
        [&, expected](absl::StatusOr<std::vector<NamedTensor>> out) {
          absl::MutexLock lock(&mu);
          EXPECT_TRUE(out.ok()) << out.status();
          if (out.ok()) {
            const Tensor& got = (*out)[0].tensor;
            bool same = got.num_elements() == expected->num_elements();
            for (int64_t i = 0; same && i < got.num_elements(); ++i) {
              same = std::abs(got.data<float>()[i] -
                              expected->data<float>()[i]) <= 1e-5f;
            }
            EXPECT_TRUE(same);
            ok += same ? 1 : 0;
          }
          --unanswered;
        });
  }
  // The first run waits on the last stage; one run is on each stage
  // before it, each having passed the first: `stages` runs through the
  // first stage while the last is held (one alone if a run held every
  // stage's state until it ended).
  EXPECT_TRUE(
      first->AwaitFinishedLaunches(through_first + stages, absl::Seconds(60)));
  EXPECT_EQ(first->finished_launches(), through_first + stages);
  last->Hold(false);
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(
      +[](int* n) { return *n == 0; }, &unanswered));
  EXPECT_EQ(ok, 2 * stages);
}

// The limit is an option: with 1, one run at a time per replica, the rest
// wait, all correct.
TEST_F(MemoryAdmissionTest, MaxConcurrentExecutionsCapsTheReservation) {
  Devices d = MakeDevices(1, 64 * 1024 * kKiB);
  HostManagerOptions options;
  options.max_concurrent_executions = 1;
  auto host = HostManager::Create(options, std::move(d.owned));
  ASSERT_TRUE(host.ok()) << host.status();
  host_ = *std::move(host);
  absl::StatusOr<NetworkInfo> info = host_->AddNetwork(
      "mlp", testing::MakeDeepMlpModel(kBatch, kWidth, kLayers), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 1u);
  EXPECT_EQ(info->partitions[0].executions, 1);
  const std::vector<Tensor> want = References("mlp", 8);
  const Outcome o = RunAtOnce({"mlp"}, 64, {want}, Nothing);
  EXPECT_EQ(o.ok, 64);
  EXPECT_EQ(o.wrong, 0);

  HostManagerOptions zero;
  zero.max_concurrent_executions = 0;
  EXPECT_EQ(HostManager::Create(zero, std::move(MakeDevices(1, kKiB).owned))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// Not even one execution fits beside the weights: the add is refused with
// RESOURCE_EXHAUSTED and leaves the device as it found it.
TEST_F(MemoryAdmissionTest, AddIsRefusedWhenNoExecutionFits) {
  // One layer of 256 KiB: the weights fit, with the arena, but not the
  // input and output a run holds (64 KiB each).
  Start(/*devices=*/1, /*memory=*/300 * kKiB);
  const uint64_t before = host_->GetDevices()[0].available_memory_bytes;
  absl::StatusOr<NetworkInfo> info = host_->AddNetwork(
      "mlp", testing::MakeDeepMlpModel(kBatch, kWidth, 1), {});
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kResourceExhausted)
      << info.status();
  EXPECT_EQ(host_->GetDevices()[0].available_memory_bytes, before);
}

}  // namespace
}  // namespace glint
