#include "runtime/reprovision.h"

#include <memory>
#include <string>
#include <vector>

#include "devices/fault/fault_injecting_device.h"
#include "devices/sim/sim_device.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "onnx/test_models.h"

namespace glint {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// y = relu(x), x: float[N, 8]: batches at any size.
std::string BatchableModel() {
  testing::OnnxModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {-1, 8});
  b.Output("y", onnx::TensorProto::FLOAT, {-1, 8});
  b.Node("Relu", {"x"}, {"y"});
  return b.Serialize();
}

// A journal that keeps only models, some of which it cannot read back.
class ModelJournal : public NetworkJournal {
 public:
  absl::Status Record(absl::string_view, const ModelBytes&,
                      const AddNetworkOptions&) override {
    return absl::OkStatus();
  }
  absl::Status Erase(absl::string_view) override { return absl::OkStatus(); }
  bool KeepsModels() const override { return true; }
  absl::StatusOr<std::string> LoadModel(absl::string_view name) override {
    if (name == "lost") return absl::DataLossError("checksum mismatch");
    return testing::MakeMlpModel(2, 8, 4);
  }
};

class ReprovisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int id = 0; id < 3; ++id) {
      DeviceConfig config;
      config.memory_bytes = 64 * kMiB;
      config.name = "sim:" + std::to_string(id);
      auto sim = SimDevice::Create(id, config);
      ASSERT_TRUE(sim.ok()) << sim.status();
      devices_.push_back(std::make_unique<FaultInjectingDevice>(
          std::unique_ptr<DeviceManager>(*std::move(sim))));
      borrowed_.push_back(devices_.back().get());
    }
    builder_ = std::make_unique<NetworkBuilder>(borrowed_, InferenceRunner());
  }

  // An entry as HostManager keeps it after an add with `replicas`.
  std::unique_ptr<NetworkEntry> Entry(const std::string& name, int replicas,
                                      bool keep_model = true) {
    auto entry = std::make_unique<NetworkEntry>();
    entry->info.name = name;
    if (keep_model) entry->model = testing::MakeMlpModel(2, 8, 4);
    entry->options.partition.replicas = replicas;
    return entry;
  }

  std::vector<std::unique_ptr<FaultInjectingDevice>> devices_;
  std::vector<DeviceManager*> borrowed_;
  std::unique_ptr<NetworkBuilder> builder_;
};

TEST_F(ReprovisionTest, FewerReplicasOnTheHealthyDevicesWhenAllDoNotFit) {
  devices_[1]->Kill();
  devices_[2]->Kill();
  absl::StatusOr<RebuiltNetwork> rebuilt =
      RebuildOnHealthyDevices(*Entry("mlp", 3), *builder_, nullptr);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->info.replicas, 1);
  ASSERT_EQ(rebuilt->executable->replicas.size(), 1u);
  for (const ProvisionedPartition& p :
       rebuilt->executable->replicas[0]->partitions) {
    EXPECT_EQ(p.device, devices_[0].get());
  }
  EXPECT_TRUE(rebuilt->info.unavailable_reason.empty());
  EXPECT_TRUE(rebuilt->smaller.empty());  // Not a batching network.
}

TEST_F(ReprovisionTest, KeepsTheReplicasThatStillFit) {
  devices_[2]->Kill();
  absl::StatusOr<RebuiltNetwork> rebuilt =
      RebuildOnHealthyDevices(*Entry("mlp", 2), *builder_, nullptr);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->info.replicas, 2);
}

TEST_F(ReprovisionTest, NoHealthyDeviceLeftIsUnavailable) {
  for (auto& d : devices_) d->Kill();
  absl::StatusOr<RebuiltNetwork> rebuilt =
      RebuildOnHealthyDevices(*Entry("mlp", 1), *builder_, nullptr);
  EXPECT_EQ(rebuilt.status().code(), absl::StatusCode::kUnavailable)
      << rebuilt.status();
}

TEST_F(ReprovisionTest, TheModelIsReadBackFromAJournalThatKeepsIt) {
  ModelJournal journal;
  absl::StatusOr<RebuiltNetwork> rebuilt = RebuildOnHealthyDevices(
      *Entry("mlp", 1, /*keep_model=*/false), *builder_, &journal);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->info.inputs.size(), 1u);

  rebuilt = RebuildOnHealthyDevices(*Entry("lost", 1, /*keep_model=*/false),
                                    *builder_, &journal);
  EXPECT_EQ(rebuilt.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(rebuilt.status().message().find(
                "its model cannot be read back: checksum mismatch"),
            absl::string_view::npos)
      << rebuilt.status();
}

TEST_F(ReprovisionTest, ABatchingNetworkGetsItsSmallerSizesToo) {
  std::unique_ptr<NetworkEntry> entry = Entry("batched", 1, false);
  entry->model = BatchableModel();
  entry->options.batching.max_batch_size = 4;
  entry->options.batching.preferred_batch_sizes = {1, 2};
  devices_[0]->Kill();
  absl::StatusOr<RebuiltNetwork> rebuilt =
      RebuildOnHealthyDevices(*entry, *builder_, nullptr);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  ASSERT_EQ(rebuilt->smaller.size(), 2u);
  EXPECT_TRUE(rebuilt->smaller.count(1) && rebuilt->smaller.count(2));
  EXPECT_EQ(rebuilt->info.inputs[0].shape.dim(0), 4);
}

}  // namespace
}  // namespace glint
