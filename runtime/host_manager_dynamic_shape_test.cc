// Data-dependent shapes crossing partitions: a network whose middle value
// has a shape known only at run time (NonZero's indices, NonMaxSuppression's
// selected boxes) is cut by a user plan, or by the memory strategy, so that
// the value leaves one device and enters another, and each run's outputs
// have exactly the values and shape the data gives, including an empty
// selection.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devices/sim/sim_device.h"
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

// y = 2 * x[nonzero(x)]: x float[2, 3].
std::string NonZeroModel() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {2, 3}).Output("y", kFloat);
  b.FloatInitializer("two", {}, {2.0f});
  b.Node("NonZero", {"x"}, {"nz"}, "nz");
  b.Node("Transpose", {"nz"}, {"nzt"}, "tr");
  b.Node("GatherND", {"x", "nzt"}, {"picked"}, "gather");
  b.Node("Mul", {"picked", "two"}, {"y"}, "mul");
  return b.Serialize();
}

// Runs NonZeroModel's network `name` with inputs giving different counts
// run after run on the same compiled partitions, none at all included.
void ExpectNonZeroRuns(HostManager& host, const std::string& name) {
  struct Case {
    std::vector<float> x;
    std::vector<float> y;
  };
  const std::vector<Case> cases = {
      {{0, 1.5f, 0, -2, 0, 3}, {3, -4, 6}},
      {{1, 2, 3, 4, 5, 6}, {2, 4, 6, 8, 10, 12}},
      {{0, 0, 0, 0, 0, 0}, {}},
      {{0, 0, 0, 0, 7, 0}, {14}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<NamedTensor>> out = host.RunNetwork(
        name, {{"x", Tensor::FromVector(DType::kFloat32, Shape({2, 3}), c.x)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    const Tensor& y = (*out)[0].tensor;
    EXPECT_EQ(y.dtype(), DType::kFloat32);
    EXPECT_EQ(y.shape(), Shape({static_cast<int64_t>(c.y.size())}));
    EXPECT_THAT(
        std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements()),
        ElementsAreArray(c.y));
  }
}

// NonZero on device 0, the gather on device 1 and the doubling back on
// device 0: the [2, N] indices and the [N] gathered values each cross a
// device boundary.
TEST(HostManagerDynamicShapeTest, NonZeroIndicesCrossTwoBoundaries) {
  auto host = MakeHost(2);
  absl::StatusOr<NetworkInfo> info = host->AddNetwork(
      "nz", NonZeroModel(),
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
  ExpectNonZeroRuns(*host, "nz");
}

// Runs MakeUnknownRankModel's network `name`: the If picks a rank per run,
// alternating so that each late-built kernel meets both shapes twice.
void ExpectUnknownRankRuns(HostManager& host, const std::string& name) {
  const std::vector<float> x = {-3, -2, -1, 0, 1, 2};
  for (int i = 0; i < 4; ++i) {
    const bool matrix = i % 2 == 0;
    std::vector<NamedTensor> inputs = {
        {"c", Tensor::FromVector(DType::kBool, Shape({}),
                                 std::vector<uint8_t>{static_cast<uint8_t>(matrix)})},
        {"x", Tensor::FromVector(DType::kFloat32, Shape({6}), x)}};
    absl::StatusOr<std::vector<NamedTensor>> out =
        host.RunNetwork(name, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 3u);
    const Tensor& gram = (*out)[0].tensor;
    const Tensor& y2 = (*out)[1].tensor;
    const Tensor& shape = (*out)[2].tensor;
    // relu(x) = [0, 0, 0, 0, 1, 2]: as [[0, 0, 0], [0, 1, 2]] its Gram
    // matrix is [[0, 0], [0, 5]]; as a vector, the dot product 5.
    const Shape want = matrix ? Shape({2, 3}) : Shape({6});
    EXPECT_EQ(gram.shape(), matrix ? Shape({2, 2}) : Shape({}));
    EXPECT_THAT(std::vector<float>(gram.data<float>(),
                                   gram.data<float>() + gram.num_elements()),
                ElementsAreArray(matrix ? std::vector<float>{0, 0, 0, 5}
                                        : std::vector<float>{5}));
    EXPECT_EQ(y2.shape(), want);
    EXPECT_THAT(std::vector<float>(y2.data<float>(),
                                   y2.data<float>() + y2.num_elements()),
                ElementsAreArray({0, 0, 0, 0, 2, 4}));
    EXPECT_THAT(std::vector<int64_t>(shape.data<int64_t>(),
                                     shape.data<int64_t>() +
                                         shape.num_elements()),
                ElementsAreArray(want.dims()));
  }
}

// Values whose rank only the run decides (issue 27: they were typed as
// scalars and every run failed "computed shape [2, 3] ... but its inferred
// shape is []"): typed as of unknown rank, their kernels built for each
// run's shapes, on one device and with the value crossing devices.
TEST(HostManagerDynamicShapeTest, ValuesOfUnknownRankRunWithEachRunsShapes) {
  auto host = MakeHost(2);
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("whole", testing::MakeUnknownRankModel(), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->outputs.size(), 3u);
  EXPECT_FALSE(info->outputs[0].shape.has_rank());  // gram
  EXPECT_EQ(info->outputs[0].shape.ToString(), "[...]");
  EXPECT_FALSE(info->outputs[1].shape.has_rank());  // y2
  EXPECT_EQ(info->outputs[2].shape, Shape({Shape::kUnknownDim}));
  ExpectUnknownRankRuns(*host, "whole");

  info = host->AddNetwork(
      "split", testing::MakeUnknownRankModel(),
      UserPlan({{"branch", 0}, {"relu", 0}, {"tr", 1}, {"gram", 1},
                {"double", 0}, {"shape", 1}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_GE(info->partitions.size(), 2u);
  EXPECT_NE(Reader(*info, "y1"), nullptr);  // y1 crosses to device 1.
  ExpectUnknownRankRuns(*host, "split");
}

// The cost-driven strategies see the data-dependent values as empty
// (their size is unknown at planning): whatever plan they make over two
// devices, and with a replica per device, the runs are exact.
TEST(HostManagerDynamicShapeTest, StrategiesAndReplicasKeepExactShapes) {
  auto host = MakeHost(2);
  AddNetworkOptions balanced;
  balanced.partition.strategy = PartitionStrategy::kLoadBalanced;
  balanced.partition.plan_devices = 2;
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("balanced", NonZeroModel(), balanced);
  ASSERT_TRUE(info.ok()) << info.status();
  ExpectNonZeroRuns(*host, "balanced");
  AddNetworkOptions replicas;
  replicas.partition.replicas = 2;
  info = host->AddNetwork("replicas", NonZeroModel(), replicas);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->replicas, 2);
  for (int i = 0; i < 3; ++i) ExpectNonZeroRuns(*host, "replicas");
}

// rows = W2[nonzero(relu(x · W1))[1]]: x float[1, 256], W1 and W2 256 KiB
// each, on devices of 400 KiB: the memory strategy must cut between the
// two weights, where only data-dependent values flow.
TEST(HostManagerDynamicShapeTest, MemoryStrategyCutsAtADataDependentValue) {
  constexpr int64_t kWidth = 256;
  constexpr int64_t kCols = 64;
  std::vector<float> w1(kWidth * kWidth), w2(kWidth * kCols);
  for (int64_t i = 0; i < kWidth * kWidth; ++i) {
    w1[i] = (i / kWidth == i % kWidth) ? 1.0f : 0.0f;  // Identity.
  }
  for (int64_t i = 0; i < kWidth * kCols; ++i) w2[i] = static_cast<float>(i);
  OnnxModelBuilder b;
  b.Input("x", kFloat, {1, kWidth}).Output("rows", kFloat);
  b.FloatInitializer("w1", {kWidth, kWidth}, w1);
  b.FloatInitializer("w2", {kWidth, kCols}, w2);
  Int64Initializer(b, "one", {}, {1});
  b.Node("MatMul", {"x", "w1"}, {"h"}, "mm");
  b.Node("Relu", {"h"}, {"r"}, "relu");
  b.Node("NonZero", {"r"}, {"nz"}, "nz");
  b.Node("Gather", {"nz", "one"}, {"cols"}, "cols");  // axis 0: row 1.
  b.Node("Gather", {"w2", "cols"}, {"rows"}, "rows");
  // Both weights (320 KiB) do not fit one device; w2 and the rows it gives
  // at their bound (at most one per element of x: 256 x 64 floats) do.
  std::vector<DeviceConfig> configs(2);
  for (DeviceConfig& c : configs) c.memory_bytes = 300 * 1024;
  auto host = HostManager::CreateFromConfigs({}, configs);
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<NetworkInfo> info =
      (*host)->AddNetwork("rows", b.Serialize(), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 2u);
  EXPECT_NE(info->partitions[0].device_id, info->partitions[1].device_id);
  ASSERT_EQ(info->partitions[1].inputs.size(), 1u);
  const std::string crossing = info->partitions[1].inputs[0];
  EXPECT_TRUE(crossing == "nz" || crossing == "cols") << crossing;

  for (const std::vector<int64_t>& positive :
       std::vector<std::vector<int64_t>>{{3, 200}, {}, {0, 1, 255}}) {
    std::vector<float> x(kWidth, -1.0f);
    for (int64_t p : positive) x[p] = 2.0f;
    absl::StatusOr<std::vector<NamedTensor>> out = (*host)->RunNetwork(
        "rows",
        {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, kWidth}), x)}});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& rows = (*out)[0].tensor;
    const int64_t n = static_cast<int64_t>(positive.size());
    ASSERT_EQ(rows.shape(), Shape({n, kCols}));
    std::vector<float> want;
    for (int64_t p : positive) {
      want.insert(want.end(), w2.begin() + p * kCols,
                  w2.begin() + (p + 1) * kCols);
    }
    EXPECT_THAT(
        std::vector<float>(rows.data<float>(), rows.data<float>() + n * kCols),
        ElementsAreArray(want));
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
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("nms", b.Serialize(), UserPlan({{"nms", 0}, {"*", 1}}));
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 2u);
  EXPECT_NE(info->partitions[0].device_id, info->partitions[1].device_id);
  EXPECT_THAT(info->partitions[1].inputs, Contains("selected"));

  const std::vector<float> boxes = {0, 0,     1, 1,     0, 0.1f, 1, 1.1f,
                                    0, -0.1f, 1, 0.9f,  0, 10,   1, 11,
                                    0, 10.1f, 1, 11.1f, 0, 100,  1, 101};
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
        "nms", {{"boxes",
                 Tensor::FromVector(DType::kFloat32, Shape({1, 6, 4}), boxes)},
                {"scores", Tensor::FromVector(DType::kFloat32, Shape({1, 1, 6}),
                                              c.scores)}});
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
    EXPECT_THAT(
        std::vector<float>(picked.data<float>(), picked.data<float>() + 4 * n),
        ElementsAreArray(want_picked));
  }
}

// x [N, kWidth] -> Softmax -> Softmax -> y: the middle value is one a
// launch allocates as it runs (its shape is the run's), and x and y live in
// the execution state. Two Softmaxes, so that no fusion removes it.
constexpr int64_t kWidth = 4096;

std::string TwoSoftmaxModel() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {-1, kWidth}).Output("y", kFloat, {-1, kWidth});
  b.Node("Softmax", {"x"}, {"h"}, "first");
  b.Node("Softmax", {"h"}, {"y"}, "second");
  return b.Serialize();
}

// Runs TwoSoftmaxModel's network `name` on `rows` rows (row r: 0 but a 1
// at column r) and checks the answer: softmax of a softmax of one-hot rows.
absl::Status RunTwoSoftmax(HostManager& host, const std::string& name,
                           int64_t rows) {
  std::vector<float> x(rows * kWidth, 0.0f);
  for (int64_t r = 0; r < rows; ++r) x[r * kWidth + r % kWidth] = 1.0f;
  absl::StatusOr<std::vector<NamedTensor>> out = host.RunNetwork(
      name,
      {{"x", Tensor::FromVector(DType::kFloat32, Shape({rows, kWidth}), x)}});
  if (!out.ok()) return out.status();
  EXPECT_EQ((*out)[0].tensor.shape(), Shape({rows, kWidth}));
  // First softmax: e/(e + W-1) at the hot column, 1/(e + W-1) elsewhere.
  const double e = std::exp(1.0);
  const double hot = e / (e + kWidth - 1), cold = 1 / (e + kWidth - 1);
  const double z = std::exp(hot) + (kWidth - 1) * std::exp(cold);
  for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 7)) {
    const float* y = (*out)[0].tensor.data<float>() + r * kWidth;
    EXPECT_NEAR(y[r % kWidth], std::exp(hot) / z, 1e-9) << "row " << r;
    EXPECT_NEAR(y[(r + 1) % kWidth], std::exp(cold) / z, 1e-9) << "row " << r;
  }
  return absl::OkStatus();
}

// Memory is reserved for the bounds when a network is added: each
// execution state holds x and y at N = max_dims['N'], and the device sets
// aside the middle value's peak for launches. Once other allocations have
// taken every other byte of the device, runs at any N within the bound
// still succeed, and allocate nothing more; one beyond it is refused
// before it runs, naming the dim and its bound.
TEST(HostManagerDynamicShapeTest, RunsWithinTheBoundsNeverRunOutOfMemory) {
  DeviceConfig config;
  config.memory_bytes = 64 * kMiB;
  absl::StatusOr<std::unique_ptr<SimDevice>> device =
      SimDevice::Create(0, config);
  ASSERT_TRUE(device.ok()) << device.status();
  SimDevice* sim = device->get();
  std::vector<std::unique_ptr<DeviceManager>> devices;
  devices.push_back(*std::move(device));
  HostManagerOptions host_options;
  host_options.max_concurrent_executions = 1;
  auto host = HostManager::Create(host_options, std::move(devices));
  ASSERT_TRUE(host.ok()) << host.status();
  constexpr int64_t kBound = 256;  // 4 MiB a value at the bound.
  AddNetworkOptions options;
  options.max_dims["N"] = kBound;
  const uint64_t before = sim->AvailableMemory();
  absl::StatusOr<NetworkInfo> info =
      (*host)->AddNetwork("softmax", TwoSoftmaxModel(), options);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->dynamic_dims.size(), 1u);
  EXPECT_EQ(info->dynamic_dims[0].max, kBound);
  constexpr uint64_t kValue = kBound * kWidth * 4;
  EXPECT_EQ(sim->GetDeviceInfo().launch_reserved_bytes, kValue);
  EXPECT_GE(before - sim->AvailableMemory(), 3 * kValue);  // x, h, y.
  {
    // Everything else the device has goes elsewhere.
    absl::StatusOr<std::unique_ptr<DeviceBuffer>> rest =
        sim->Allocate(sim->AvailableMemory());
    ASSERT_TRUE(rest.ok()) << rest.status();
    ASSERT_EQ(sim->AvailableMemory(), 0u);
    for (int64_t rows : {kBound, int64_t{1}, int64_t{0}, int64_t{77}, kBound}) {
      EXPECT_TRUE(RunTwoSoftmax(**host, "softmax", rows).ok()) << rows;
      EXPECT_EQ(sim->AvailableMemory(), 0u);
    }
    const absl::Status over = RunTwoSoftmax(**host, "softmax", kBound + 1);
    EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(over.message()),
                ::testing::HasSubstr("over its bound 256"));
  }
  // Removing the network gives its reservations back.
  ASSERT_TRUE((*host)->RemoveNetwork("softmax").ok());
  EXPECT_EQ(sim->AvailableMemory(), before);
  EXPECT_EQ(sim->GetDeviceInfo().launch_reserved_bytes, 0u);
}

// A dim no option bounds gets kDefaultMaxDim, lowered (halved) until one
// run at it takes at most an eighth of the device's memory (and half of
// what it has free): on 64 MiB, x, h and y at N rows of 16 KiB take
// 48 KiB * N, so N = 128 (6 MiB of 8). The network
// reports it, runs up to it and refuses beyond. Bounds given explicitly are
// not lowered: a run at them that cannot fit is refused at add, naming
// them.
TEST(HostManagerDynamicShapeTest, DefaultBoundsAreLoweredToFitTheDevices) {
  auto host = MakeHost(1);
  const uint64_t before = host->GetDevices()[0].available_memory_bytes;
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("softmax", TwoSoftmaxModel(), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->dynamic_dims.size(), 1u);
  EXPECT_EQ(info->dynamic_dims[0].max, 128);
  absl::StatusOr<NetworkInfo> got = host->GetNetwork("softmax");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->dynamic_dims[0].max, 128);
  EXPECT_TRUE(RunTwoSoftmax(*host, "softmax", 128).ok());
  EXPECT_TRUE(RunTwoSoftmax(*host, "softmax", 3).ok());
  EXPECT_EQ(RunTwoSoftmax(*host, "softmax", 129).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(host->RemoveNetwork("softmax").ok());
  EXPECT_EQ(host->GetDevices()[0].available_memory_bytes, before);

  AddNetworkOptions options;
  options.max_dims["N"] = 2048;  // 96 MiB a run.
  absl::StatusOr<NetworkInfo> too_big =
      host->AddNetwork("softmax", TwoSoftmaxModel(), options);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(too_big.status().message()),
              ::testing::HasSubstr("N=2048"));
  EXPECT_EQ(host->GetDevices()[0].available_memory_bytes, before);
}

// A dynamic dim the model does not name has no bound memory is reserved
// for (ValueInfo::BytesWithin), so runs allocate its values: one request
// may be far larger than the next. The buffers a large request grew in the
// execution state are freed when a small one follows, so the device's
// memory comes back instead of staying pinned by the largest request ever
// seen; the runs are exact throughout.
TEST(HostManagerDynamicShapeTest, ALargeRequestDoesNotPinDeviceMemory) {
  auto host = MakeHost(1);
  OnnxModelBuilder b;
  b.Input("x", kFloat, {-1, 1024}).Output("y", kFloat, {-1, 1024});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  onnx::GraphProto* graph = b.mutable_proto().mutable_graph();
  for (onnx::ValueInfoProto* v :
       {graph->mutable_input(0), graph->mutable_output(0)}) {
    v->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(0)
        ->clear_dim_param();
  }
  ASSERT_TRUE(host->AddNetwork("relu", b.Serialize(), {}).ok());
  auto available = [&] { return host->GetDevices()[0].available_memory_bytes; };
  auto run = [&](int64_t rows) {
    std::vector<float> x(rows * 1024);
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 == 0 ? -1.0f : 1.0f;
    absl::StatusOr<std::vector<NamedTensor>> out = host->RunNetwork(
        "relu", {{"x", Tensor::FromVector(DType::kFloat32,
                                          Shape({rows, 1024}), x)}});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& y = (*out)[0].tensor;
    ASSERT_EQ(y.shape(), Shape({rows, 1024}));
    EXPECT_EQ(y.data<float>()[0], 0.0f);
    EXPECT_EQ(y.data<float>()[rows * 1024 - 1], 1.0f);
  };
  run(1);
  const uint64_t small = available();
  run(4096);  // 16 MiB in, 16 MiB out.
  EXPECT_LE(available(), small - 16 * kMiB);  // Kept for the next run...
  run(1);
  EXPECT_GE(available(), small - kMiB);  // ...until a small one needs less.
}

// x [N, 1, 6, 6] -> Conv 3x3 -> y [N, 2, 4, 4]: a convolution, whose
// oneDNN primitive depends on N, on every CPU.
std::string DynamicBatchConvModel() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {-1, 1, 6, 6}).Output("y", kFloat, {-1, 2, 4, 4});
  b.FloatInitializer("w", {2, 1, 3, 3}, std::vector<float>(18, 0.5f));
  b.Node("Conv", {"x", "w"}, {"y"}, "conv");
  return b.Serialize();
}

// Statistics count the kernel builds that runs pay for shapes first met at
// run time: a new N builds, a warm one does not, and a network of static
// shapes never counts any.
TEST(HostManagerDynamicShapeTest, StatisticsCountBuildsForNewShapes) {
  std::unique_ptr<HostManager> host = MakeHost(2);
  const std::string model = DynamicBatchConvModel();
  ASSERT_TRUE(host->AddNetwork("dyn", model, AddNetworkOptions()).ok());
  AddNetworkOptions fixed;
  fixed.input_shapes["x"] = Shape({2, 1, 6, 6});
  ASSERT_TRUE(host->AddNetwork("static", model, fixed).ok());
  auto run = [&](const std::string& name, int64_t rows) {
    absl::StatusOr<std::vector<NamedTensor>> out = host->RunNetwork(
        name,
        {{"x", Tensor::FromVector(DType::kFloat32, Shape({rows, 1, 6, 6}),
                                  std::vector<float>(rows * 36, 1.0f))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].tensor.shape(), Shape({rows, 2, 4, 4}));
    EXPECT_EQ((*out)[0].tensor.data<float>()[0], 4.5f);
  };
  auto builds = [&](const std::string& name) {
    absl::StatusOr<NetworkStatistics> stats = host->GetStatistics(name);
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? *stats : NetworkStatistics();
  };
  EXPECT_EQ(builds("dyn").shape_builds, 0u);  // Nothing ran yet.
  run("dyn", 2);
  const NetworkStatistics first = builds("dyn");
  EXPECT_GE(first.shape_builds, 1u);
  EXPECT_GT(first.shape_build_time, absl::ZeroDuration());
  run("dyn", 2);
  run("dyn", 2);
  EXPECT_EQ(builds("dyn").shape_builds, first.shape_builds);  // Warm.
  run("dyn", 7);
  EXPECT_EQ(builds("dyn").shape_builds, 2 * first.shape_builds);
  for (int i = 0; i < 3; ++i) run("static", 2);
  EXPECT_EQ(builds("static").shape_builds, 0u);
  EXPECT_EQ(builds("static").shape_build_time, absl::ZeroDuration());
}

// Kernels keep the shapes they met last (ShapeKeyedCache, least recently
// used out): a service that has met more shapes than a kernel keeps builds
// for the new ones, not for every run of a shape it meets again. Each
// answer is the MLP's own (on AVX2, every shape computing from the weights
// RowGemm packed once).
TEST(HostManagerDynamicShapeTest, KernelsKeepTheShapesMetLast) {
  std::unique_ptr<HostManager> host = MakeHost(1);
  constexpr int64_t kIn = 8, kOut = 4;
  ASSERT_TRUE(host->AddNetwork("mlp", testing::MakeMlpModel(-1, kIn, kOut),
                               AddNetworkOptions())
                  .ok());
  auto run = [&](int64_t rows) {
    std::vector<float> x(rows * kIn);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>((i * 7 + rows) % 11) / 4 - 1;
    }
    absl::StatusOr<std::vector<NamedTensor>> out = host->RunNetwork(
        "mlp",
        {{"x", Tensor::FromVector(DType::kFloat32, Shape({rows, kIn}), x)}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].tensor.shape(), Shape({rows, kOut}));
    const std::vector<float> want = testing::MlpReference(x, rows, kIn, kOut);
    for (int64_t i = 0; i < rows * kOut; ++i) {
      EXPECT_NEAR((*out)[0].tensor.data<float>()[i], want[i], 1e-5)
          << rows << " rows, element " << i;
    }
  };
  auto builds = [&] {
    absl::StatusOr<NetworkStatistics> stats = host->GetStatistics("mlp");
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? stats->shape_builds : 0;
  };
  // One more shape than a kernel keeps (32): the first, 1 row, goes.
  for (int64_t rows = 1; rows <= 33; ++rows) run(rows);
  const uint64_t met = builds();
  EXPECT_GE(met, 33u);
  run(33);  // The last met: kept.
  run(2);   // Met, and not the oldest: kept.
  EXPECT_EQ(builds(), met);
  run(1);  // The least recently used when 33 came: built again.
  EXPECT_GT(builds(), met);
  const uint64_t again = builds();
  run(33);
  run(1);
  EXPECT_EQ(builds(), again);
}

}  // namespace
}  // namespace glint
