#include "core/op_cost.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace glint {
namespace {

ValueInfo F32(const std::string& name, Shape shape) {
  return {name, DType::kFloat32, std::move(shape)};
}

TEST(OpCostTest, ConvAgainstHandComputedFigures) {
  // x [1, 4, 8, 8], w [6, 2, 3, 3] (group 2), bias [6], y [1, 6, 6, 6].
  Graph g;
  g.values["x"] = F32("x", Shape({1, 4, 8, 8}));
  g.values["w"] = F32("w", Shape({6, 2, 3, 3}));
  g.values["b"] = F32("b", Shape({6}));
  g.values["y"] = F32("y", Shape({1, 6, 6, 6}));
  g.initializers["w"] = *Tensor::Create(DType::kFloat32, Shape({6, 2, 3, 3}));
  g.initializers["b"] = *Tensor::Create(DType::kFloat32, Shape({6}));
  Node conv{"conv", "Conv", "", {"x", "w", "b"}, {"y"}, {}};
  conv.attributes["group"] = int64_t{2};
  const OpCost c = EstimateOpCost(conv, g);
  // 216 outputs · (2 channels · 9 taps) · 2 + 216 bias adds.
  EXPECT_DOUBLE_EQ(c.flops, 216.0 * 18 * 2 + 216);
  EXPECT_EQ(c.weight_bytes, (108u + 6u) * 4);
  EXPECT_EQ(c.bytes_read, (256u + 108u + 6u) * 4);
  EXPECT_EQ(c.bytes_written, 216u * 4);
}

TEST(OpCostTest, ControlFlowCostsItsSubgraphs) {
  // A body MatMul [4, 8] x [8, 16] (1024 flops) with an [8, 16] constant.
  auto body = std::make_shared<Graph>();
  body->values["a"] = F32("a", Shape({4, 8}));
  body->values["w"] = F32("w", Shape({8, 16}));
  body->values["p"] = F32("p", Shape({4, 16}));
  body->initializers["w"] = *Tensor::Create(DType::kFloat32, Shape({8, 16}));
  body->nodes = {Node{"mm", "MatMul", "", {"a", "w"}, {"p"}, {}}};
  Graph g;
  g.values["m"] = ValueInfo{"m", DType::kInt64, Shape()};
  g.values["y"] = F32("y", Shape({4, 16}));
  g.values["y0"] = F32("y0", Shape({4, 16}));
  g.initializers["m"] = Tensor::FromVector(DType::kInt64, Shape(),
                                           std::vector<int64_t>{5});
  Node loop{"loop", "Loop", "", {"m", "", "y0"}, {"y"}, {}};
  loop.attributes["body"] = GraphAttribute(body);
  OpCost c = EstimateOpCost(loop, g);
  EXPECT_DOUBLE_EQ(c.flops, 5 * 2.0 * 4 * 16 * 8);  // Five iterations.
  EXPECT_EQ(c.weight_bytes, 8u + 8u * 16 * 4);      // m, and w inside.
  // A run-time trip count: one iteration, a lower bound.
  g.initializers.clear();
  c = EstimateOpCost(loop, g);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 4 * 16 * 8);
}

TEST(OpCostTest, GemmAgainstHandComputedFigures) {
  // a [8, 16] transposed → M=16, K=8; b [8, 32] → N=32; c [32].
  Graph g;
  g.values["a"] = F32("a", Shape({8, 16}));
  g.values["b"] = F32("b", Shape({8, 32}));
  g.values["c"] = F32("c", Shape({32}));
  g.values["y"] = F32("y", Shape({16, 32}));
  g.initializers["b"] = *Tensor::Create(DType::kFloat32, Shape({8, 32}));
  Node gemm{"gemm", "Gemm", "", {"a", "b", "c"}, {"y"}, {}};
  gemm.attributes["transA"] = int64_t{1};
  const OpCost c = EstimateOpCost(gemm, g);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 16 * 8 * 32 + 16 * 32);
  EXPECT_EQ(c.weight_bytes, 8u * 32 * 4);
  EXPECT_EQ(c.bytes_written, 16u * 32 * 4);
}

TEST(OpCostTest, RecurrentAgainstHandComputedFigures) {
  // x [T=5, N=2, K=3], w [D=2, 4·H=16, 3], H = 4: 2 · 10 · 32 · (3 + 4).
  Graph g;
  g.values["x"] = F32("x", Shape({5, 2, 3}));
  g.values["w"] = F32("w", Shape({2, 16, 3}));
  g.values["r"] = F32("r", Shape({2, 16, 4}));
  g.values["y"] = F32("y", Shape({5, 2, 2, 4}));
  Node lstm{"lstm", "LSTM", "", {"x", "w", "r"}, {"y"}, {}};
  lstm.attributes["hidden_size"] = int64_t{4};
  lstm.attributes["direction"] = std::string("bidirectional");
  EXPECT_DOUBLE_EQ(EstimateOpCost(lstm, g).flops, 2.0 * 10 * 32 * 7);
}

TEST(OpCostTest, FusedOpsCostWhatTheyAreBuiltOn) {
  Graph g;
  g.values["a"] = F32("a", Shape({4, 8}));
  g.values["b"] = F32("b", Shape({8, 16}));
  g.values["y"] = F32("y", Shape({4, 16}));
  Node fused{"f", "glint.FusedMatMul", "", {"a", "b"}, {"y"}, {}};
  Node plain{"m", "MatMul", "", {"a", "b"}, {"y"}, {}};
  EXPECT_DOUBLE_EQ(EstimateOpCost(fused, g).flops, 2.0 * 4 * 8 * 16);
  EXPECT_DOUBLE_EQ(EstimateOpCost(fused, g).flops,
                   EstimateOpCost(plain, g).flops);
}

TEST(OpCostTest, IntegerOpsCostTheirProducts) {
  Graph g;
  g.values["a"] = {"a", DType::kUInt8, Shape({4, 8})};
  g.values["b"] = {"b", DType::kInt8, Shape({8, 16})};
  g.values["y"] = {"y", DType::kInt32, Shape({4, 16})};
  g.values["x"] = {"x", DType::kUInt8, Shape({1, 2, 5, 5})};
  g.values["w"] = {"w", DType::kInt8, Shape({3, 2, 3, 3})};
  g.values["s"] = F32("s", Shape({}));
  g.values["q"] = {"q", DType::kUInt8, Shape({1, 3, 3, 3})};
  Node mm{"m", "MatMulInteger", "", {"a", "b"}, {"y"}, {}};
  EXPECT_DOUBLE_EQ(EstimateOpCost(mm, g).flops, 2.0 * 4 * 8 * 16);
  // QLinearConv's W is input 3: 27 outputs · (2 · 9) · 2.
  Node conv{"c", "QLinearConv", "", {"x", "s", "", "w", "s", "", "s", ""},
            {"q"}, {}};
  EXPECT_DOUBLE_EQ(EstimateOpCost(conv, g).flops, 27.0 * 18 * 2);
}

TEST(OpCostTest, ElementwiseAndUnknownSizes) {
  Graph g;
  g.values["x"] = F32("x", Shape({3, Shape::kUnknownDim}));
  g.values["y"] = F32("y", Shape({3, Shape::kUnknownDim}));
  g.values["p"] = F32("p", Shape({2, 5}));
  g.values["q"] = F32("q", Shape({2, 5}));
  g.values["u"] = F32("u", Shape::UnknownRank());
  g.values["v"] = F32("v", Shape::UnknownRank());
  // An unknown dim counts as 1: [3, ?] weighs as [3, 1].
  Node relu{"relu", "Relu", "", {"x"}, {"y"}, {}};
  EXPECT_EQ(EstimateOpCost(relu, g).flops, 3);
  EXPECT_EQ(EstimateOpCost(relu, g).bytes_read, 12u);
  Node sig{"sig", "Sigmoid", "", {"p"}, {"q"}, {}};
  EXPECT_EQ(EstimateOpCost(sig, g).flops, 10);
  // An unknown rank counts as empty.
  Node tanh{"tanh", "Tanh", "", {"u"}, {"v"}, {}};
  EXPECT_EQ(EstimateOpCost(tanh, g).flops, 0);
  EXPECT_EQ(EstimateOpCost(tanh, g).bytes_read, 0u);
}

// A MatMul of a dynamic [?, ?, 256] by a [256, 64] weight costs what one
// row does: 2 · 64 · 256.
TEST(OpCostTest, DynamicDimsCountAsOne) {
  Graph g;
  g.values["a"] = F32("a", Shape({Shape::kUnknownDim, Shape::kUnknownDim, 256}));
  g.values["w"] = F32("w", Shape({256, 64}));
  g.values["y"] = F32("y", Shape({Shape::kUnknownDim, Shape::kUnknownDim, 64}));
  Node mm{"mm", "MatMul", "", {"a", "w"}, {"y"}, {}};
  EXPECT_DOUBLE_EQ(EstimateOpCost(mm, g).flops, 2.0 * 64 * 256);
  EXPECT_EQ(ValueBytes(g.values["a"]), 256u * 4);
}

}  // namespace
}  // namespace glint
