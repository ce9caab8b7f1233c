// Per-node slices of a profiled launch (LaunchOptions::profile), through a
// sim device: the kernels the CPU backend compiled, one slice each.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/trace.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/cpu_rewrites.h"
#include "devices/sim/sim_device.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

// x [1, 3, 8, 8] -> Conv (4 filters 3x3, pad 1, bias) -> Relu -> Flatten
// -> MatMul by [256, 10] -> y [1, 10]. The CPU optimiser fuses Conv+Relu
// into a channels-last glint.FusedConv with a Transpose on either side.
Graph ConvReluMatMul() {
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"x", DType::kFloat32, Shape({1, 3, 8, 8})}};
  g.outputs = {{"y", DType::kFloat32, Shape({1, 10})}};
  std::vector<float> w(4 * 3 * 3 * 3), b(4), w2(256 * 10);
  for (size_t i = 0; i < w.size(); ++i) w[i] = (i % 5) * 0.1f - 0.2f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.05f * i;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = (i % 7) * 0.01f - 0.03f;
  g.initializers["w"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4, 3, 3, 3}), w);
  g.initializers["b"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), b);
  g.initializers["w2"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({256, 10}), w2);
  Node conv{"conv", "Conv", "", {"x", "w", "b"}, {"c"}, {}};
  conv.attributes["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  conv.attributes["kernel_shape"] = std::vector<int64_t>{3, 3};
  g.nodes = {conv, Node{"relu", "Relu", "", {"c"}, {"r"}, {}},
             Node{"flatten", "Flatten", "", {"r"}, {"f"}, {}},
             Node{"matmul", "MatMul", "", {"f", "w2"}, {"y"}, {}}};
  for (const ValueInfo& v :
       {g.inputs[0], g.outputs[0],
        ValueInfo{"w", DType::kFloat32, Shape({4, 3, 3, 3})},
        ValueInfo{"b", DType::kFloat32, Shape({4})},
        ValueInfo{"w2", DType::kFloat32, Shape({256, 10})},
        ValueInfo{"c", DType::kFloat32, Shape({1, 4, 8, 8})},
        ValueInfo{"r", DType::kFloat32, Shape({1, 4, 8, 8})},
        ValueInfo{"f", DType::kFloat32, Shape({1, 256})}}) {
    g.values[v.name] = v;
  }
  return g;
}

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceConfig config;
    config.memory_bytes = 16 << 20;
    auto device = SimDevice::Create(0, config);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *std::move(device);
    auto compiled = device_->backend().Compile(ConvReluMatMul());
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    auto loaded = device_->Load(*compiled);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    loaded_ = *std::move(loaded);
  }
  void TearDown() override {
    loaded_.reset();
    device_.reset();
  }

  // One launch on x = 0.5 everywhere, profiled into `track` when given.
  void Launch(const TraceTrack* track) {
    const Tensor x = Tensor::FromVector<float>(
        DType::kFloat32, Shape({1, 3, 8, 8}), std::vector<float>(192, 0.5f));
    DeviceTensor dx, dy;
    Tensor y;
    Stream* s = *device_->AcquireStream();
    device_->CopyToDevice(*s, &x, &dx);
    LaunchOptions options;
    options.profile = track;
    device_->Launch(*s, *loaded_, {&dx}, {&dy}, options);
    device_->CopyToHost(*s, &dy, &y);
    ASSERT_TRUE(s->Synchronize().ok());
    device_->ReleaseStream(s);
    EXPECT_EQ(y.shape(), Shape({1, 10}));
  }

  std::unique_ptr<SimDevice> device_;
  std::unique_ptr<LoadedFunction> loaded_;
};

std::string Arg(const TraceSlice& s, const std::string& key) {
  for (const auto& [k, v] : s.args) {
    if (k == key) return v;
  }
  return "<none>";
}

TEST_F(ProfileTest, OneSlicePerExecutedNodeWithItsShapes) {
  // What the backend executes: the partition as the optimiser leaves it.
  Graph optimized = ConvReluMatMul();
  ASSERT_TRUE(
      cpu::OptimizeGraphForCpu(&optimized, cpu::CpuKernelRegistry()).ok());

  RunTrace trace;
  TraceTrack track;
  track.trace = &trace;
  track.process = 7;
  track.process_name = "sim:6";
  track.thread = 2;
  track.thread_name = "stream 2";
  Launch(&track);
  const std::vector<TraceSlice> slices = trace.Slices();

  ASSERT_EQ(slices.size(), optimized.nodes.size());
  int reorders = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const TraceSlice& s = slices[i];
    const Node& node = optimized.nodes[i];
    EXPECT_EQ(s.name, node.name);
    EXPECT_EQ(Arg(s, NodeSliceArgs::kOpType), node.op_type);
    EXPECT_EQ(s.category, IsLayoutReorder(node) ? "reorder" : "op");
    if (s.category == "reorder") ++reorders;
    EXPECT_EQ(s.process, 7);
    EXPECT_EQ(s.process_name, "sim:6");
    EXPECT_EQ(s.thread, 2);
    EXPECT_EQ(s.thread_name, "stream 2");
    EXPECT_LE(s.begin, s.end);
    if (i > 0) {
      EXPECT_LE(slices[i - 1].end, s.begin);  // In step order.
    }
  }
  // The conv is fused and runs channels last, between two reorders.
  EXPECT_EQ(reorders, 2);
  const TraceSlice* conv = nullptr;
  const TraceSlice* matmul = nullptr;
  for (const TraceSlice& s : slices) {
    if (Arg(s, NodeSliceArgs::kOpType) == kFusedConvOp) conv = &s;
    if (Arg(s, NodeSliceArgs::kOpType) == "MatMul") matmul = &s;
  }
  ASSERT_NE(conv, nullptr);
  const std::string kernel = Arg(*conv, NodeSliceArgs::kKernel);
  EXPECT_TRUE(absl::StartsWith(
      kernel, "glint.FusedConv[Relu, channels_last, bias] oneDNN "))
      << kernel;
  EXPECT_EQ(Arg(*conv, NodeSliceArgs::kInputs),
            "float32[1,8,8,3], float32[4,3,3,3], float32[4]");
  EXPECT_EQ(Arg(*conv, NodeSliceArgs::kOutputs), "float32[1,8,8,4]");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(Arg(*matmul, NodeSliceArgs::kInputs),
            "float32[1,256], float32[256,10]");
  EXPECT_EQ(Arg(*matmul, NodeSliceArgs::kOutputs), "float32[1,10]");
  const std::string mm_kernel = Arg(*matmul, NodeSliceArgs::kKernel);
  EXPECT_TRUE(mm_kernel == "MatMul RowGemm" ||
              absl::StartsWith(mm_kernel, "MatMul oneDNN "))
      << mm_kernel;
}

TEST_F(ProfileTest, UnprofiledLaunchRecordsNothing) {
  RunTrace trace;
  Launch(nullptr);
  EXPECT_TRUE(trace.Slices().empty());
  // A profiled launch after it still does.
  TraceTrack track;
  track.trace = &trace;
  Launch(&track);
  EXPECT_FALSE(trace.Slices().empty());
}

// A kernel that says nothing of itself is described by its op type.
TEST(KernelDescribeTest, DefaultIsTheOpType) {
  const cpu::KernelFactory* relu = cpu::CpuKernelRegistry().Find("Relu");
  ASSERT_NE(relu, nullptr);
  Node node{"r", "Relu", "", {"x"}, {"y"}, {}};
  cpu::KernelSpec spec;
  spec.node = &node;
  spec.opset_version = 13;
  spec.inputs = {{"x", DType::kFloat32, Shape({2})}};
  spec.outputs = {{"y", DType::kFloat32, Shape({2})}};
  spec.constant_inputs = {nullptr};
  auto kernel = (*relu)(spec);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ((*kernel)->Describe(node), "Relu");
}

}  // namespace
}  // namespace glint
