#include "provisioner/provisioner.h"

#include "devices/fault/fault_injecting_device.h"
#include "devices/sim/sim_device.h"
#include "gtest/gtest.h"
#include "onnx/onnx_importer.h"
#include "onnx/test_models.h"
#include "partitioner/partitioner.h"

namespace glint {
namespace {

class ProvisionerTest : public ::testing::Test {
 protected:
  // `n` sim devices of `memory` bytes, each behind a fault injector.
  void MakeDevices(int n, uint64_t memory) {
    for (int i = 0; i < n; ++i) {
      DeviceConfig c;
      c.memory_bytes = memory;
      faulty_.push_back(std::make_unique<FaultInjectingDevice>(
          *SimDevice::Create(i, c)));
      devices_.push_back(faulty_.back().get());
    }
  }

  std::vector<DeviceInfo> Infos() const {
    std::vector<DeviceInfo> infos;
    for (DeviceManager* d : devices_) infos.push_back(d->GetDeviceInfo());
    return infos;
  }

  std::vector<uint64_t> Available() const {
    std::vector<uint64_t> free;
    for (DeviceManager* d : devices_) free.push_back(d->AvailableMemory());
    return free;
  }

  absl::StatusOr<Dag> Plan(const std::string& model,
                           PartitionOptions options = {}) {
    absl::StatusOr<Graph> graph = ImportOnnxModel(model);
    if (!graph.ok()) return graph.status();
    graph_ = *std::move(graph);
    return Partition(graph_, Infos(), options);
  }

  Graph graph_;
  std::vector<std::unique_ptr<FaultInjectingDevice>> faulty_;
  std::vector<DeviceManager*> devices_;
};

TEST_F(ProvisionerTest, LoadsEachPartitionOnItsOwnDevice) {
  MakeDevices(3, 3 * kMiB);
  absl::StatusOr<Dag> dag = Plan(testing::MakeDeepMlpModel(1, 512, 6));
  ASSERT_TRUE(dag.ok()) << dag.status();
  ASSERT_EQ(dag->nodes.size(), 3u);
  auto network = Provisioner(devices_).Provision(*dag);
  ASSERT_TRUE(network.ok()) << network.status();
  ASSERT_EQ((*network)->replicas.size(), 1u);
  const auto& parts = (*network)->replicas[0]->partitions;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_NE(parts[0].device, parts[1].device);
  EXPECT_NE(parts[1].device, parts[2].device);
  EXPECT_NE(parts[0].device, parts[2].device);
  for (DeviceManager* d : devices_) {
    EXPECT_LE(d->AvailableMemory(), 3 * kMiB - 2 * kMiB);  // Two layers each.
  }
}

TEST_F(ProvisionerTest, OutOfMemoryOnTheThirdDeviceEvictsEverything) {
  MakeDevices(3, 3 * kMiB);
  absl::StatusOr<Dag> dag = Plan(testing::MakeDeepMlpModel(1, 512, 6));
  ASSERT_TRUE(dag.ok()) << dag.status();
  const std::vector<uint64_t> before = Available();
  faulty_[2]->SetAllocationLimit(1024);
  absl::Status s = Provisioner(devices_).Provision(*dag).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("p2"), absl::string_view::npos) << s;
  EXPECT_EQ(Available(), before);
  // The same plan provisions once the fault is gone.
  faulty_[2]->SetAllocationLimit(std::nullopt);
  EXPECT_TRUE(Provisioner(devices_).Provision(*dag).ok());
}

TEST_F(ProvisionerTest, CompileErrorEvictsWhatWasLoaded) {
  MakeDevices(2, 64 * kMiB);
  // Partition 1 holds a Dropout in training mode with a constant non-zero
  // ratio (random masks), which the CPU backend refuses when it compiles.
  testing::OnnxModelBuilder m(15);
  m.Input("x", onnx::TensorProto::FLOAT, {1, 2, 2, 2})
      .Output("y", onnx::TensorProto::FLOAT, {1, 2, 2, 2})
      .FloatInitializer("w", {1, 2, 2, 2}, std::vector<float>(8, 1.0f))
      .FloatInitializer("ratio", {}, {0.5f});
  onnx::TensorProto* training = m.mutable_proto().mutable_graph()->add_initializer();
  training->set_name("training");
  training->set_data_type(onnx::TensorProto::BOOL);
  training->add_int32_data(1);
  m.Node("Add", {"x", "w"}, {"t"}, "add");
  m.Node("Dropout", {"t", "ratio", "training"}, {"y"}, "dropout");
  PartitionOptions options;
  options.strategy = PartitionStrategy::kUser;
  options.user_plan = {{"add", 0}, {"dropout", 1}};
  absl::StatusOr<Dag> dag = Plan(m.Serialize(), options);
  ASSERT_TRUE(dag.ok()) << dag.status();
  const std::vector<uint64_t> before = Available();
  absl::Status s = Provisioner(devices_).Provision(*dag).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_EQ(Available(), before);
}

TEST_F(ProvisionerTest, ReplicasGetDistinctDevices) {
  MakeDevices(4, 64 * kMiB);
  PartitionOptions options;
  options.plan_devices = 2;
  options.replicas = 2;
  absl::StatusOr<Dag> dag = Plan(testing::MakeDeepMlpModel(1, 64, 4), options);
  ASSERT_TRUE(dag.ok()) << dag.status();
  auto network = Provisioner(devices_).Provision(*dag);
  ASSERT_TRUE(network.ok()) << network.status();
  ASSERT_EQ((*network)->replicas.size(), 2u);
  std::set<DeviceManager*> used;
  for (const auto& replica : (*network)->replicas) {
    for (const ProvisionedPartition& p : replica->partitions) {
      used.insert(p.device);
    }
  }
  EXPECT_EQ(used.size(), 4u);
}

// ProvisionReleasingConstants empties each partition's initializers once
// compiled (the compiled functions hold the weights), replicas included, and
// also when it fails; the partitions' nodes stay to describe the network.
TEST_F(ProvisionerTest, ProvisionFromADagLetsGoOfItsConstants) {
  MakeDevices(4, 64 * kMiB);
  PartitionOptions options;
  options.plan_devices = 2;
  options.replicas = 2;
  for (bool fail : {false, true}) {
    absl::StatusOr<Dag> dag =
        Plan(testing::MakeDeepMlpModel(1, 64, 4), options);
    ASSERT_TRUE(dag.ok()) << dag.status();
    graph_ = Graph();  // The dag alone holds the constants.
    ASSERT_EQ(dag->nodes.size(), 2u);
    for (const DagNode& node : dag->nodes) {
      ASSERT_FALSE(node.function.initializers.empty());
    }
    const std::vector<uint64_t> before = Available();
    if (fail) faulty_[3]->SetAllocationLimit(1024);
    auto network = Provisioner(devices_).ProvisionReleasingConstants(&*dag);
    if (fail) {
      EXPECT_EQ(network.status().code(), absl::StatusCode::kResourceExhausted)
          << network.status();
      EXPECT_EQ(Available(), before);
      faulty_[3]->SetAllocationLimit(std::nullopt);
    } else {
      ASSERT_TRUE(network.ok()) << network.status();
      EXPECT_EQ((*network)->replicas.size(), 2u);
    }
    for (const DagNode& node : dag->nodes) {
      EXPECT_TRUE(node.function.initializers.empty()) << node.name;
      EXPECT_FALSE(node.function.nodes.empty()) << node.name;
    }
  }
}

TEST_F(ProvisionerTest, TooFewDevicesSaysHowManyAreNeeded) {
  MakeDevices(4, 64 * kMiB);
  PartitionOptions options;
  options.plan_devices = 2;
  options.replicas = 2;
  absl::StatusOr<Dag> dag = Plan(testing::MakeDeepMlpModel(1, 64, 4), options);
  ASSERT_TRUE(dag.ok()) << dag.status();
  devices_.pop_back();  // The plan was made for four.
  absl::Status s = Provisioner(devices_).Provision(*dag).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("needs 4 devices"), absl::string_view::npos) << s;
}

TEST_F(ProvisionerTest, DeadDeviceIsNotUsable) {
  MakeDevices(2, 64 * kMiB);
  absl::StatusOr<Dag> dag = Plan(testing::MakeDeepMlpModel(1, 64, 2));
  ASSERT_TRUE(dag.ok()) << dag.status();
  faulty_[0]->Kill();
  faulty_[1]->Kill();
  absl::Status s = Provisioner(devices_).Provision(*dag).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}


// Each replica's execution states are reserved up front: per device, the
// values one run holds there (its partitions' inputs and results), as
// many executions as the cap allows and the half of what is left beyond
// the first admits; the routing's slot sizes sum to what is reserved.
TEST_F(ProvisionerTest, ExecutionsAreReservedAsTheDevicesAllow) {
  // One layer of 64×64 floats (16 KiB) on a batch of 256 rows: the input
  // and output are 64 KiB each, 128 KiB an execution.
  const std::string model = testing::MakeDeepMlpModel(256, 64, 1);
  constexpr uint64_t kExecution = 2 * 256 * 64 * 4;
  struct Case {
    uint64_t memory;
    int max_executions;
    size_t want;
  };
  for (const Case& c : {Case{64 * kMiB, 8, 8}, Case{64 * kMiB, 3, 3},
                        Case{1 * kMiB, 8, 0}}) {
    faulty_.clear();
    devices_.clear();
    MakeDevices(1, c.memory);
    absl::StatusOr<Dag> dag = Plan(model);
    ASSERT_TRUE(dag.ok()) << dag.status();
    const uint64_t before = devices_[0]->AvailableMemory();
    auto network =
        Provisioner(devices_).Provision(*dag, CompileOptions(),
                                        c.max_executions);
    ASSERT_TRUE(network.ok()) << network.status();
    const Replica& replica = *(*network)->replicas[0];
    EXPECT_EQ(replica.partitions[0].execution_bytes, kExecution);
    size_t want = c.want;
    if (want == 0) {  // As many as half of what is left allows.
      const uint64_t left =
          devices_[0]->AvailableMemory() + replica.executions(0) * kExecution;
      want = 1 + (left - kExecution) / 2 / kExecution;
      EXPECT_GT(want, 1u);
      EXPECT_LT(want, 8u);
    }
    EXPECT_EQ(replica.executions(0), want) << c.memory;
    EXPECT_EQ((*network)->executions, static_cast<int>(want));
    const uint64_t weights = replica.partitions[0].weight_bytes;
    EXPECT_LE(weights + want * kExecution,
              before - devices_[0]->AvailableMemory());
    network->reset();
    EXPECT_EQ(devices_[0]->AvailableMemory(), before);
  }
}

// One execution's memory cannot be had beside the weights: RESOURCE_EXHAUSTED,
// and everything loaded is evicted again.
TEST_F(ProvisionerTest, NoRoomForOneExecutionEvictsEverything) {
  MakeDevices(1, 64 * kMiB);
  absl::StatusOr<Dag> dag = Plan(testing::MakeDeepMlpModel(256, 64, 1));
  ASSERT_TRUE(dag.ok()) << dag.status();
  const uint64_t before = devices_[0]->AvailableMemory();
  constexpr uint64_t kExecution = 2 * 256 * 64 * 4;
  uint64_t loaded = 0;  // Weights and arena.
  {
    auto network = Provisioner(devices_).Provision(*dag, CompileOptions(), 1);
    ASSERT_TRUE(network.ok()) << network.status();
    loaded = before - devices_[0]->AvailableMemory() - kExecution;
  }
  // The weights and arena fit; the 128 KiB of one execution do not.
  faulty_[0]->SetAllocationLimit(loaded + kExecution / 2);
  auto network = Provisioner(devices_).Provision(*dag);
  ASSERT_FALSE(network.ok());
  EXPECT_EQ(network.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(network.status().message().find("reserving execution 0"),
            std::string::npos)
      << network.status();
  faulty_[0]->SetAllocationLimit(std::nullopt);
  EXPECT_EQ(devices_[0]->AvailableMemory(), before);
}

}  // namespace
}  // namespace glint
