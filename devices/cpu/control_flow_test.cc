#include "devices/cpu/control_flow.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "devices/cpu/isa.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::glint::cpu::testing::MakeNode;
using ::glint::cpu::testing::MakeTensor;
using ::glint::cpu::testing::MaxRelativeError;
using ::glint::cpu::testing::RandomTensor;
using ::glint::cpu::testing::RoundToBFloat16;
using ::glint::cpu::testing::RunKernel;
using ::glint::cpu::testing::RunKernelOptions;
using ::glint::cpu::testing::ToVector;

ValueInfo F32(std::string name, Shape shape) {
  return ValueInfo{std::move(name), DType::kFloat32, std::move(shape)};
}

// A subgraph: `inputs`, then `nodes` whose outputs have the types in
// `typed`, giving `outputs` (names of inputs or typed values).
GraphAttribute Body(std::vector<ValueInfo> inputs, std::vector<Node> nodes,
                    std::vector<ValueInfo> typed,
                    std::vector<std::string> outputs,
                    std::map<std::string, Tensor> initializers = {}) {
  auto g = std::make_shared<Graph>();
  g->name = "body";
  g->opset_version = 17;
  g->inputs = inputs;
  for (const ValueInfo& v : inputs) g->values[v.name] = v;
  for (const ValueInfo& v : typed) g->values[v.name] = v;
  for (const auto& [name, t] : initializers) {
    g->values[name] = ValueInfo{name, t.dtype(), t.shape()};
  }
  g->initializers = std::move(initializers);
  g->nodes = std::move(nodes);
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    g->nodes[i].name = absl::StrCat(g->nodes[i].op_type, "_", i);
  }
  for (const std::string& out : outputs) g->outputs.push_back(g->values[out]);
  EXPECT_TRUE(g->Validate().ok()) << g->Validate().message();
  return g;
}

Tensor Bool(bool v) {
  absl::StatusOr<Tensor> t = Tensor::Create(DType::kBool, Shape());
  *t->data<bool>() = v;
  return *t;
}

Tensor I64(int64_t v) { return MakeTensor<int64_t>({}, {v}); }

// If(c) with one capture x: then gives x + 1 ([2]), else a constant [3]:
// the branches' shapes differ.
Node IfNode() {
  Node c = MakeNode("Constant", {}, {"k"},
                    {{"value", MakeTensor<float>({3}, {7, 8, 9})}});
  Node add = MakeNode("Add", {"x_in", "one"}, {"y"});
  GraphAttribute then_branch =
      Body({F32("x_in", {2})}, {add}, {F32("y", {2})}, {"y"},
           {{"one", MakeTensor<float>({}, {1})}});
  GraphAttribute else_branch =
      Body({F32("x_in", {2})}, {c}, {F32("k", {3})}, {"k"});
  Node node =
      MakeNode("If", {"c", "x"}, {"out"},
               {{"then_branch", then_branch}, {"else_branch", else_branch}});
  node.num_implicit_inputs = 1;
  return node;
}

TEST(IfTest, RunsTheBranchTheConditionChooses) {
  const Node node = IfNode();
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32};
  options.output_shapes = {Shape({Shape::kUnknownDim})};
  const Tensor x = MakeTensor<float>({2}, {10, 20});
  auto then_out =
      RunKernel(CpuKernelRegistry(), node, {Bool(true), x}, options);
  ASSERT_TRUE(then_out.ok()) << then_out.status();
  EXPECT_EQ(ToVector<float>((*then_out)[0]), (std::vector<float>{11, 21}));
  auto else_out =
      RunKernel(CpuKernelRegistry(), node, {Bool(false), x}, options);
  ASSERT_TRUE(else_out.ok()) << else_out.status();
  EXPECT_EQ(ToVector<float>((*else_out)[0]), (std::vector<float>{7, 8, 9}));
}

TEST(IfTest, RefusesMalformedNodes) {
  Node node = IfNode();
  node.attributes.erase("else_branch");
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), node,
                      {Bool(true), MakeTensor<float>({2}, {1, 2})})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A float condition.
  EXPECT_EQ(
      RunKernel(CpuKernelRegistry(), IfNode(),
                {MakeTensor<float>({}, {1}), MakeTensor<float>({2}, {1, 2})})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  // The capture's run-time shape contradicts what the branch declares.
  auto bad = RunKernel(CpuKernelRegistry(), IfNode(),
                       {Bool(true), MakeTensor<float>({3}, {1, 2, 3})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("then_branch"), std::string::npos)
      << bad.status();
}

// Loop(M, cond, y) with capture d: y += d each iteration, scan output y;
// the body stops when `stop_after` iterations ran (cond_out = i + 1 <
// stop_after).
Node LoopNode(int64_t stop_after) {
  std::vector<Node> nodes = {
      MakeNode("Add", {"y_in", "d_in"}, {"y_out"}),
      MakeNode("Identity", {"y_out"}, {"scan"}),
      MakeNode("Add", {"i", "one"}, {"next"}),
      MakeNode("Less", {"next", "stop"}, {"cond_out"}),
  };
  GraphAttribute body = Body({ValueInfo{"i", DType::kInt64, Shape()},
                              ValueInfo{"cond_in", DType::kBool, Shape()},
                              F32("y_in", {1}), F32("d_in", {1})},
                             nodes,
                             {F32("y_out", {1}), F32("scan", {1}),
                              ValueInfo{"next", DType::kInt64, Shape()},
                              ValueInfo{"cond_out", DType::kBool, Shape()}},
                             {"cond_out", "y_out", "scan"},
                             {{"one", MakeTensor<int64_t>({}, {1})},
                              {"stop", MakeTensor<int64_t>({}, {stop_after})}});
  Node node = MakeNode("Loop", {"m", "c", "y", "d"}, {"y_final", "ys"},
                       {{"body", body}});
  node.num_implicit_inputs = 1;
  return node;
}

RunKernelOptions LoopOptions() {
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32, DType::kFloat32};
  return options;
}

TEST(LoopTest, RunsTripCountIterationsAndStacksScanOutputs) {
  auto out = RunKernel(CpuKernelRegistry(), LoopNode(100),
                       {I64(4), Bool(true), MakeTensor<float>({1}, {1}),
                        MakeTensor<float>({1}, {0.5f})},
                       LoopOptions());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{3}));
  EXPECT_EQ((*out)[1].shape(), Shape({4, 1}));
  EXPECT_EQ(ToVector<float>((*out)[1]), (std::vector<float>{1.5f, 2, 2.5f, 3}));
}

TEST(LoopTest, ConcurrentRunsOfOneKernelAgree) {
  // One kernel, its compiled body shared, run from four threads at once:
  // RunKernel checks every run gives the same bytes.
  RunKernelOptions options = LoopOptions();
  options.runs = 16;
  options.threads = 4;
  auto out = RunKernel(CpuKernelRegistry(), LoopNode(100),
                       {I64(50), Bool(true), MakeTensor<float>({1}, {0}),
                        MakeTensor<float>({1}, {1})},
                       options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{50}));
  EXPECT_EQ((*out)[1].shape(), Shape({50, 1}));
}

TEST(LoopTest, StopsWhenTheBodyConditionTurnsFalse) {
  // No trip count: the condition alone ends the loop after 3 iterations.
  auto out = RunKernel(CpuKernelRegistry(), LoopNode(3),
                       {Tensor(), Bool(true), MakeTensor<float>({1}, {0}),
                        MakeTensor<float>({1}, {2})},
                       LoopOptions());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{6}));
  EXPECT_EQ(ToVector<float>((*out)[1]), (std::vector<float>{2, 4, 6}));
}

TEST(LoopTest, ZeroIterationsGiveTheInitialValues) {
  for (const auto& [m, c] : {std::pair<int64_t, bool>{0, true}, {5, false}}) {
    auto out = RunKernel(CpuKernelRegistry(), LoopNode(100),
                         {I64(m), Bool(c), MakeTensor<float>({1}, {42}),
                          MakeTensor<float>({1}, {1})},
                         LoopOptions());
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{42}));
    EXPECT_EQ((*out)[1].shape(), Shape({0, 1}));
  }
}

TEST(LoopTest, RefusesTripCountsOverTheLimit) {
  auto out =
      RunKernel(CpuKernelRegistry(), LoopNode(100),
                {I64(kMaxLoopIterations + 1), Tensor(),
                 MakeTensor<float>({1}, {0}), MakeTensor<float>({1}, {1})},
                LoopOptions());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("limit"), std::string::npos)
      << out.status();
  // At the limit it runs (the body stops it early here).
  EXPECT_TRUE(
      RunKernel(CpuKernelRegistry(), LoopNode(2),
                {I64(kMaxLoopIterations), Bool(true),
                 MakeTensor<float>({1}, {0}), MakeTensor<float>({1}, {1})},
                LoopOptions())
          .ok());
}

// Loop(M_outer) whose body runs LoopNode(M_inner): nested loops share one
// budget of subgraph runs, so a nest cannot multiply its way past the limit
// each loop respects alone.
TEST(LoopTest, NestedLoopsShareOneRunBudget) {
  Node inner = LoopNode(1000);
  inner.inputs = {"m_inner", "", "y_in", "d_in"};
  inner.outputs = {"y_out", "ys"};
  GraphAttribute body =
      Body({ValueInfo{"i", DType::kInt64, Shape()},
            ValueInfo{"cond_in", DType::kBool, Shape()}, F32("y_in", {1}),
            F32("d_in", {1})},
           {inner},
           {F32("y_out", {1}), F32("ys", {-1, 1})}, {"cond_in", "y_out"},
           {{"m_inner", MakeTensor<int64_t>({}, {10})}});
  Node outer = MakeNode("Loop", {"m", "c", "y", "d"}, {"y_final"},
                        {{"body", body}});
  outer.num_implicit_inputs = 1;
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32};
  const auto run = [&](int64_t m) {
    return RunKernel(CpuKernelRegistry(), outer,
                     {I64(m), Bool(true), MakeTensor<float>({1}, {0}),
                      MakeTensor<float>({1}, {1})},
                     options);
  };
  ScopedSubgraphRunLimitForTesting limit(100);
  // 9 outer + 90 inner runs fit in 100: y counts the inner iterations.
  auto fits = run(9);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(ToVector<float>((*fits)[0]), (std::vector<float>{90}));
  // 10 + 100 do not, though each loop alone stays far below its own limit.
  auto over = run(10);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("nested loops included"),
            std::string::npos)
      << over.status();
  // The budget is per outermost run: the next run starts afresh.
  EXPECT_TRUE(run(9).ok());
}

TEST(LoopTest, RefusesAMalformedBody) {
  Node node = LoopNode(3);
  // The body takes one carried value; the node now passes two.
  node.inputs.insert(node.inputs.begin() + 3, "y2");
  auto out =
      RunKernel(CpuKernelRegistry(), node,
                {I64(1), Bool(true), MakeTensor<float>({1}, {0}),
                 MakeTensor<float>({1}, {0}), MakeTensor<float>({1}, {1})},
                LoopOptions());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// Scan (opset 9+): a running sum over the scan axis of x.
Node ScanNode(std::vector<int64_t> in_axes, std::vector<int64_t> in_dirs,
              std::vector<int64_t> out_axes, std::vector<int64_t> out_dirs) {
  GraphAttribute body = Body({F32("sum_in", {2}), F32("next", {2})},
                             {MakeNode("Add", {"sum_in", "next"}, {"sum_out"}),
                              MakeNode("Identity", {"sum_out"}, {"scan_out"})},
                             {F32("sum_out", {2}), F32("scan_out", {2})},
                             {"sum_out", "scan_out"});
  return MakeNode("Scan", {"init", "x"}, {"y", "z"},
                  {{"body", body},
                   {"num_scan_inputs", int64_t{1}},
                   {"scan_input_axes", in_axes},
                   {"scan_input_directions", in_dirs},
                   {"scan_output_axes", out_axes},
                   {"scan_output_directions", out_dirs}});
}

TEST(ScanTest, SumsAlongAxesAndDirections) {
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32, DType::kFloat32};
  const Tensor init = MakeTensor<float>({2}, {0, 0});
  // x is [2, 3] scanned along axis 1: slices {1, 4}, {2, 5}, {3, 6}.
  const Tensor x = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto fwd = RunKernel(CpuKernelRegistry(), ScanNode({1}, {0}, {0}, {0}),
                       {init, x}, options);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  EXPECT_EQ(ToVector<float>((*fwd)[0]), (std::vector<float>{6, 15}));
  EXPECT_EQ((*fwd)[1].shape(), Shape({3, 2}));
  EXPECT_EQ(ToVector<float>((*fwd)[1]),
            (std::vector<float>{1, 4, 3, 9, 6, 15}));
  // Reversed input, output stacked along axis 1 and reversed.
  auto rev = RunKernel(CpuKernelRegistry(), ScanNode({-1}, {1}, {1}, {1}),
                       {init, x}, options);
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ((*rev)[1].shape(), Shape({2, 3}));
  // Iterations see slices 3, 2, 1: sums 3, 5, 6 (and 6, 11, 15), placed
  // last to first.
  EXPECT_EQ(ToVector<float>((*rev)[1]),
            (std::vector<float>{6, 5, 3, 15, 11, 6}));
}

TEST(ScanTest, Opset8ScansEachBatchEntry) {
  Node node = ScanNode({0}, {0}, {0}, {0});
  node.inputs.insert(node.inputs.begin(), "");  // No sequence_lens.
  node.attributes.erase("scan_input_axes");
  node.attributes.erase("scan_input_directions");
  node.attributes.erase("scan_output_axes");
  node.attributes.erase("scan_output_directions");
  RunKernelOptions options;
  options.opset_version = 8;
  options.output_dtypes = {DType::kFloat32, DType::kFloat32};
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {Tensor(), MakeTensor<float>({2, 2}, {0, 0, 100, 100}),
                        MakeTensor<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
                       options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{4, 6, 112, 114}));
  EXPECT_EQ((*out)[1].shape(), Shape({2, 2, 2}));
  EXPECT_EQ(ToVector<float>((*out)[1]),
            (std::vector<float>{1, 2, 4, 6, 105, 106, 112, 114}));
}

TEST(ScanTest, RefusesScanOutputsAsTheyGrowPastTheLimit) {
  // 20 iterations of 2 elements against a limit of 5: the third iteration
  // crosses it. The run limit of 10 is reached only if the scan goes on
  // holding outputs past the limit (it used to check only when stacking).
  ScopedScanOutputLimitForTesting elements(5);
  ScopedSubgraphRunLimitForTesting runs(10);
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32, DType::kFloat32};
  auto out = RunKernel(CpuKernelRegistry(), ScanNode({0}, {0}, {0}, {0}),
                       {MakeTensor<float>({2}, {0, 0}),
                        MakeTensor<float>({20, 2}, std::vector<float>(40, 1))},
                       options);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::HasSubstr("scan output 0 grows past the limit of 5"));
}

TEST(ScanTest, Opset8BatchEntriesShareOneRunBudget) {
  Node node = ScanNode({0}, {0}, {0}, {0});
  node.inputs.insert(node.inputs.begin(), "");  // No sequence_lens.
  for (const char* a : {"scan_input_axes", "scan_input_directions",
                        "scan_output_axes", "scan_output_directions"}) {
    node.attributes.erase(a);
  }
  RunKernelOptions options;
  options.opset_version = 8;
  options.output_dtypes = {DType::kFloat32, DType::kFloat32};
  // 3 batch entries of 4 iterations: 12 runs in all.
  const std::vector<Tensor> inputs = {
      Tensor(), MakeTensor<float>({3, 2}, std::vector<float>(6, 0)),
      MakeTensor<float>({3, 4, 2}, std::vector<float>(24, 1))};
  {
    ScopedSubgraphRunLimitForTesting runs(12);
    auto out = RunKernel(CpuKernelRegistry(), node, inputs, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(ToVector<float>((*out)[0]), std::vector<float>(6, 4));
  }
  {
    // Each entry alone (4 runs) is under 10; the node as a whole is not.
    ScopedSubgraphRunLimitForTesting runs(10);
    auto out = RunKernel(CpuKernelRegistry(), node, inputs, options);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << out.status();
  }
  {
    // Scan output elements add up across entries too: 3 x 4 x 2 = 24.
    ScopedScanOutputLimitForTesting elements(20);
    auto out = RunKernel(CpuKernelRegistry(), node, inputs, options);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << out.status();
  }
}

// Loop(1) whose body multiplies captures a [8, 64] and b [64, 16]: the
// body's MatMul follows the node's precision.
TEST(LoopTest, BodyKernelsFollowTheNodesPrecision) {
  GraphAttribute body = Body(
      {ValueInfo{"i", DType::kInt64, Shape()},
       ValueInfo{"cond_in", DType::kBool, Shape()}, F32("a_in", {8, 64}),
       F32("b_in", {64, 16})},
      {MakeNode("MatMul", {"a_in", "b_in"}, {"prod"}),
       MakeNode("Identity", {"cond_in"}, {"cond_out"})},
      {F32("prod", {8, 16}), ValueInfo{"cond_out", DType::kBool, Shape()}},
      {"cond_out", "prod"});
  Node node = MakeNode("Loop", {"m", "c", "a", "b"}, {"ys"}, {{"body", body}});
  node.num_implicit_inputs = 2;
  const Tensor a = RandomTensor({8, 64}, 41);
  const Tensor b = RandomTensor({64, 16}, 42);
  RunKernelOptions f32;
  f32.output_dtypes = {DType::kFloat32};
  RunKernelOptions bf16 = f32;
  bf16.precision = Precision::kBFloat16;
  auto got = RunKernel(CpuKernelRegistry(), node, {I64(1), Bool(true), a, b},
                       bf16);
  ASSERT_TRUE(got.ok()) << got.status();
  auto exact = RunKernel(CpuKernelRegistry(), node,
                         {I64(1), Bool(true), a, b}, f32);
  ASSERT_TRUE(exact.ok()) << exact.status();
  ASSERT_EQ((*got)[0].shape(), Shape({1, 8, 16}));
  if (!CpuComputesBFloat16()) {
    // No bfloat16 kernels on this CPU (AVX2): the body computes float32's
    // bits at bf16 precision (devices/cpu/isa.h).
    EXPECT_EQ(std::memcmp((*got)[0].raw_data(), (*exact)[0].raw_data(),
                          (*got)[0].num_bytes()),
              0);
    return;
  }
  // The product of the bfloat16-rounded operands, accumulated in double.
  const Tensor ra = RoundToBFloat16(a);
  const Tensor rb = RoundToBFloat16(b);
  Tensor want = *Tensor::Create(DType::kFloat32, Shape({1, 8, 16}));
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 16; ++j) {
      double s = 0;
      for (int k = 0; k < 64; ++k) {
        s += double{ra.data<float>()[i * 64 + k]} * rb.data<float>()[k * 16 + j];
      }
      want.data<float>()[i * 16 + j] = static_cast<float>(s);
    }
  }
  EXPECT_LT(MaxRelativeError((*got)[0], want), 1e-4);
  EXPECT_NE(std::memcmp((*got)[0].raw_data(), (*exact)[0].raw_data(),
                        (*got)[0].num_bytes()),
            0)
      << "bit-identical to float32: the body ignored bf16 precision";
}

TEST(ScanTest, RefusesBadAttributesAndLengths) {
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32, DType::kFloat32};
  Node node = ScanNode({0}, {0}, {0}, {0});
  node.attributes["num_scan_inputs"] = int64_t{3};
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), node,
                      {MakeTensor<float>({2}, {0, 0}),
                       MakeTensor<float>({1, 2}, {1, 2})},
                      options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Scan axis out of range for the input's rank.
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), ScanNode({2}, {0}, {0}, {0}),
                      {MakeTensor<float>({2}, {0, 0}),
                       MakeTensor<float>({1, 2}, {1, 2})},
                      options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
