#include "partitioner/partitioner.h"

#include "gtest/gtest.h"

namespace glint {
namespace {

Graph SmallGraph(size_t weight_floats) {
  Graph g;
  g.inputs = {{"x", DType::kFloat32, Shape({2})}};
  g.outputs = {{"y", DType::kFloat32, Shape({2})}};
  g.initializers["w"] = *Tensor::Create(
      DType::kFloat32, Shape({static_cast<int64_t>(weight_floats)}));
  g.nodes = {Node{"n", "Add", "", {"x", "w"}, {"y"}, {}}};
  g.values["x"] = g.inputs[0];
  g.values["y"] = g.outputs[0];
  g.values["w"] = {"w", DType::kFloat32,
                   Shape({static_cast<int64_t>(weight_floats)})};
  return g;
}

DeviceInfo Device(int id, uint64_t free_bytes) {
  DeviceInfo d;
  d.id = id;
  d.name = "sim:" + std::to_string(id);
  d.memory_bytes = free_bytes;
  d.available_memory_bytes = free_bytes;
  return d;
}

TEST(PartitionerTest, WholeNetworkOnOneDevice) {
  absl::StatusOr<Dag> dag =
      Partition(SmallGraph(2), {Device(0, 1000), Device(1, 2000)});
  ASSERT_TRUE(dag.ok()) << dag.status();
  ASSERT_EQ(dag->nodes.size(), 1u);
  EXPECT_EQ(dag->num_logical_devices, 1);
  EXPECT_EQ(dag->nodes[0].function.nodes.size(), 1u);
  EXPECT_EQ(dag->nodes[0].weight_bytes, 8u);
  EXPECT_TRUE(ValidateDag(*dag).ok());
}

TEST(PartitionerTest, WeightsLargerThanEveryDevice) {
  absl::Status s =
      Partition(SmallGraph(1000), {Device(0, 3000), Device(1, 3999)}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("4000 bytes"), absl::string_view::npos) << s;
}

TEST(PartitionerTest, NoCapableDeviceIsUnimplemented) {
  DeviceInfo d = Device(0, 1 << 20);
  d.unsupported_ops = {"Add"};
  absl::Status s = Partition(SmallGraph(2), {d}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("'Add'"), absl::string_view::npos) << s;
}

TEST(PartitionerTest, NoDevices) {
  EXPECT_EQ(Partition(SmallGraph(2), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ValidateDagTest, RejectsBackwardEdgesAndUnproducedInputs) {
  Graph g = SmallGraph(2);
  Dag dag;
  dag.inputs = g.inputs;
  dag.outputs = g.outputs;
  dag.num_logical_devices = 1;
  DagNode consumer;
  consumer.name = "p0";
  consumer.function.inputs = {{"t", DType::kFloat32, Shape({2})}};
  dag.nodes.push_back(consumer);
  EXPECT_EQ(ValidateDag(dag).code(), absl::StatusCode::kInvalidArgument);
  dag.nodes[0].parents = {0};  // Self edge.
  EXPECT_EQ(ValidateDag(dag).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint
