// A dead device costs one run: glintd runs on two sims and a drill device
// (`faulty`) that dies at its 4th launch. The run that meets the death fails
// UNAVAILABLE naming the device; `devices` marks it unhealthy; a replicated
// network keeps serving and is re-provisioned onto the healthy devices; a
// network that no longer fits anywhere is listed UNAVAILABLE with why.
#include <atomic>
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
using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

Tensor Input(int64_t width, std::vector<float>* values) {
  values->resize(width);
  for (int64_t i = 0; i < width; ++i) {
    (*values)[i] = 0.125f * static_cast<float>(i % 9) - 0.5f;
  }
  return Tensor::FromVector(DType::kFloat32, Shape({1, width}), *values);
}

bool UsesDevice(const NetworkInfo& info, const std::string& device) {
  for (const PartitionInfo& p : info.partitions) {
    if (p.device_name == device) return true;
    for (const std::string& r : p.replica_devices) {
      if (r == device) return true;
    }
  }
  return false;
}

TEST(DeviceFailureTest, ADeadDeviceCostsOneRun) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(
      {"--devices=sim*2:memory=64MiB,faulty:memory=64MiB:kill_at_launch=4"});
  ASSERT_TRUE(d.ok()) << d.status();
  GlintClient& client = (*d)->client();
  constexpr char kFaulty[] = "faulty:2";

  // 128 MiB of weights (8 layers of 16 MiB; a 64 MiB device holds 3):
  // only all three devices together hold it.
  absl::StatusOr<NetworkInfo> big =
      client.AddNetwork("big", testing::MakeDeepMlpModel(1, 2048, 8));
  ASSERT_TRUE(big.ok()) << big.status();
  ASSERT_TRUE(UsesDevice(*big, kFaulty));
  AddNetworkOptions three;
  three.partition.replicas = 3;
  absl::StatusOr<NetworkInfo> rep =
      client.AddNetwork("rep", testing::MakeMlpModel(1, 32, 8), three);
  ASSERT_TRUE(rep.ok()) << rep.status();
  ASSERT_EQ(rep->replicas, 3);
  ASSERT_TRUE(UsesDevice(*rep, kFaulty));

  // Each run of `big` launches once on the drill device: the 4th dies.
  std::vector<float> x;
  const Tensor big_input = Input(2048, &x);
  for (int i = 1; i <= 4; ++i) {
    absl::StatusOr<std::vector<NamedTensor>> out =
        client.RunNetwork("big", {{"x", big_input}}, {}, absl::Seconds(60));
    if (i < 4) {
      ASSERT_TRUE(out.ok()) << i << ": " << out.status();
    } else {
      ASSERT_FALSE(out.ok());
      EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
      EXPECT_THAT(Message(out.status()), HasSubstr(kFaulty));
    }
  }

  // The replicated network keeps serving, from the first run after the
  // death on: runs avoid the dead replica, then move to the new plan.
  std::vector<float> rx;
  const Tensor rep_input = Input(32, &rx);
  const std::vector<float> want = testing::MlpReference(rx, 1, 32, 8);
  const std::string address = (*d)->address();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      GlintClient c(GlintClient::CreateChannel(address), ClientOptions());
      for (int i = 0; i < 10; ++i) {
        absl::StatusOr<std::vector<NamedTensor>> out =
            c.RunNetwork("rep", {{"x", rep_input}}, {}, absl::Seconds(30));
        if (!out.ok()) continue;
        bool same = true;
        for (int j = 0; j < 8; ++j) {
          same = same &&
                 std::abs((*out)[0].tensor.data<float>()[j] - want[j]) < 1e-4f;
        }
        ok += same;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 30);

  // The device is marked, `rep` moves off it, `big` says why it cannot.
  absl::StatusOr<std::vector<DeviceInfo>> devices = client.GetDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[2].name, kFaulty);
  EXPECT_THAT((*devices)[2].unhealthy_reason, HasSubstr("died"));
  EXPECT_TRUE((*devices)[0].unhealthy_reason.empty());
  // Re-provisioning runs in the background: wait for it, bounded.
  absl::StatusOr<NetworkInfo> moved;
  absl::StatusOr<NetworkInfo> stuck;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  do {
    moved = client.GetNetwork("rep");
    stuck = client.GetNetwork("big");
    ASSERT_TRUE(moved.ok() && stuck.ok());
    if ((!UsesDevice(*moved, kFaulty) && !stuck->unavailable_reason.empty()) ||
        absl::Now() > deadline) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  } while (true);
  EXPECT_FALSE(UsesDevice(*moved, kFaulty));
  EXPECT_EQ(moved->replicas, 2);
  EXPECT_TRUE(moved->unavailable_reason.empty());
  EXPECT_THAT(stuck->unavailable_reason,
              HasSubstr("faulty:2 failed and the network fits no healthy"));
  absl::StatusOr<std::vector<NamedTensor>> refused =
      client.RunNetwork("big", {{"x", big_input}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(refused.status()), HasSubstr("is unavailable"));
  absl::StatusOr<std::vector<NetworkInfo>> listed = client.ListNetworks();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_FALSE((*listed)[0].unavailable_reason.empty());  // big
  // The operator removes what cannot run.
  EXPECT_TRUE(client.RemoveNetwork("big").ok());
  absl::StatusOr<std::vector<NamedTensor>> out =
      client.RunNetwork("rep", {{"x", rep_input}});
  ASSERT_TRUE(out.ok()) << out.status();
}

}  // namespace
}  // namespace glint
