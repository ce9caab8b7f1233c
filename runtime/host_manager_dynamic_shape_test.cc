// Data-dependent shapes crossing partitions: a network whose middle value
// has a shape known only at run time (NonZero's indices, NonMaxSuppression's
// selected boxes) is cut by a user plan so that the value leaves one device
// and enters another, and each run's outputs have exactly the values and
// shape the data gives, including an empty selection.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "onnx/test_models.h"
#include "runtime/host_manager.h"

namespace glint {
namespace {

using ::glint::testing::OnnxModelBuilder;
using ::glint::testing::SetAttribute;
using ::testing::Contains;
using ::testing::ElementsAreArray;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

std::unique_ptr<HostManager> MakeHost(int devices) {
  std::vector<DeviceConfig> configs(devices);
  for (DeviceConfig& c : configs) c.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, configs);
  EXPECT_TRUE(host.ok()) << host.status();
  return *std::move(host);
}

void Int64Initializer(OnnxModelBuilder& b, const std::string& name,
                      const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& values) {
  onnx::TensorProto* t = b.mutable_proto().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(kInt64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

AddNetworkOptions UserPlan(std::vector<UserPlacement> plan) {
  AddNetworkOptions options;
  options.partition.strategy = PartitionStrategy::kUser;
  options.partition.user_plan = std::move(plan);
  return options;
}

// The partition that reads `value` from another partition, or null.
const PartitionInfo* Reader(const NetworkInfo& info, const std::string& value) {
  for (const PartitionInfo& p : info.partitions) {
    for (const std::string& in : p.inputs) {
      if (in == value) return &p;
    }
  }
  return nullptr;
}

// y = 2 * x[nonzero(x)] with NonZero on device 0, the gather on device 1
// and the doubling back on device 0: the [2, N] indices and the [N]
// gathered values each cross a device boundary.
TEST(HostManagerDynamicShapeTest, NonZeroIndicesCrossTwoBoundaries) {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {2, 3}).Output("y", kFloat);
  b.FloatInitializer("two", {}, {2.0f});
  b.Node("NonZero", {"x"}, {"nz"}, "nz");
  b.Node("Transpose", {"nz"}, {"nzt"}, "tr");
  b.Node("GatherND", {"x", "nzt"}, {"picked"}, "gather");
  b.Node("Mul", {"picked", "two"}, {"y"}, "mul");
  auto host = MakeHost(2);
  absl::StatusOr<NetworkInfo> info = host->AddNetwork(
      "nz", b.Serialize(),
      UserPlan({{"nz", 0}, {"tr", 1}, {"gather", 1}, {"mul", 0}}));
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 3u);
  const PartitionInfo* gather = Reader(*info, "nz");
  const PartitionInfo* mul = Reader(*info, "picked");
  ASSERT_NE(gather, nullptr);
  ASSERT_NE(mul, nullptr);
  EXPECT_NE(gather->device_id, info->partitions[0].device_id);
  EXPECT_NE(mul->device_id, gather->device_id);
  ASSERT_EQ(info->outputs.size(), 1u);
  EXPECT_FALSE(info->outputs[0].shape.IsStatic());

  struct Case {
    std::vector<float> x;
    std::vector<float> y;
  };
  // Different counts run after run on the same compiled partitions,
  // including none at all.
  const std::vector<Case> cases = {
      {{0, 1.5f, 0, -2, 0, 3}, {3, -4, 6}},
      {{1, 2, 3, 4, 5, 6}, {2, 4, 6, 8, 10, 12}},
      {{0, 0, 0, 0, 0, 0}, {}},
      {{0, 0, 0, 0, 7, 0}, {14}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<NamedTensor>> out = host->RunNetwork(
        "nz",
        {{"x", Tensor::FromVector(DType::kFloat32, Shape({2, 3}), c.x)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    const Tensor& y = (*out)[0].tensor;
    EXPECT_EQ(y.dtype(), DType::kFloat32);
    EXPECT_EQ(y.shape(), Shape({static_cast<int64_t>(c.y.size())}));
    EXPECT_THAT(std::vector<float>(y.data<float>(),
                                   y.data<float>() + y.num_elements()),
                ElementsAreArray(c.y));
  }
}

// NonMaxSuppression on device 0; its [N, 3] selection crosses to device 1,
// which gathers the selected boxes. Both the selection and the boxes are
// outputs of the network.
TEST(HostManagerDynamicShapeTest, NmsSelectionGatheredOnAnotherDevice) {
  OnnxModelBuilder b(11);
  b.Input("boxes", kFloat, {1, 6, 4})
      .Input("scores", kFloat, {1, 1, 6})
      .Output("selected", kInt64)
      .Output("picked", kFloat);
  Int64Initializer(b, "max_out", {1}, {3});
  Int64Initializer(b, "col", {}, {2});
  b.FloatInitializer("iou", {1}, {0.5f});
  b.Node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou"},
         {"selected"}, "nms");
  SetAttribute(b.Node("Gather", {"selected", "col"}, {"box_index"}, "column"),
               "axis", int64_t{1});
  SetAttribute(b.Node("Gather", {"boxes", "box_index"}, {"picked"}, "pick"),
               "axis", int64_t{1});
  auto host = MakeHost(2);
  absl::StatusOr<NetworkInfo> info = host->AddNetwork(
      "nms", b.Serialize(), UserPlan({{"nms", 0}, {"*", 1}}));
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 2u);
  EXPECT_NE(info->partitions[0].device_id, info->partitions[1].device_id);
  EXPECT_THAT(info->partitions[1].inputs, Contains("selected"));

  const std::vector<float> boxes = {0, 0,    1, 1,    0, 0.1f,  1, 1.1f,
                                    0, -0.1f, 1, 0.9f, 0, 10,    1, 11,
                                    0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
  struct Case {
    std::vector<float> scores;
    std::vector<int64_t> boxes;  // Selected, in order.
  };
  const std::vector<Case> cases = {
      {{0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {3, 0, 5}},
      {{0.1f, 0.2f, 0.9f, 0.1f, 0.1f, 0.1f}, {2, 3, 5}},
      {{0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.9f}, {5, 0, 3}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<NamedTensor>> out = host->RunNetwork(
        "nms",
        {{"boxes", Tensor::FromVector(DType::kFloat32, Shape({1, 6, 4}),
                                      boxes)},
         {"scores",
          Tensor::FromVector(DType::kFloat32, Shape({1, 1, 6}), c.scores)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 2u);
    const int64_t n = static_cast<int64_t>(c.boxes.size());
    const Tensor& selected = (*out)[0].tensor;
    ASSERT_EQ(selected.shape(), Shape({n, 3}));
    std::vector<int64_t> want_selected;
    std::vector<float> want_picked;
    for (int64_t box : c.boxes) {
      want_selected.insert(want_selected.end(), {0, 0, box});
      want_picked.insert(want_picked.end(), boxes.begin() + box * 4,
                         boxes.begin() + box * 4 + 4);
    }
    EXPECT_THAT(std::vector<int64_t>(selected.data<int64_t>(),
                                     selected.data<int64_t>() + 3 * n),
                ElementsAreArray(want_selected));
    const Tensor& picked = (*out)[1].tensor;
    ASSERT_EQ(picked.shape(), Shape({1, n, 4}));
    EXPECT_THAT(std::vector<float>(picked.data<float>(),
                                   picked.data<float>() + 4 * n),
                ElementsAreArray(want_picked));
  }
}

}  // namespace
}  // namespace glint
