// The passes against a fake backend: what they ask of it and what they do
// with its answers. Their numerics against the CPU kernels are
// devices/cpu/optimize_test.cc.
#include "optimizer/optimize.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

void AddValue(Graph& g, const std::string& name, Shape shape) {
  g.values[name] = ValueInfo{name, DType::kFloat32, std::move(shape)};
}

void AddInitializer(Graph& g, const std::string& name, float value) {
  Tensor t = Tensor::FromVector(DType::kFloat32, Shape({2}),
                                std::vector<float>{value, value});
  g.values[name] = ValueInfo{name, t.dtype(), t.shape()};
  g.initializers[name] = std::move(t);
}

Node MakeNode(const std::string& op, std::vector<std::string> inputs,
              std::vector<std::string> outputs) {
  Node node;
  node.name = op + "_" + outputs[0];
  node.op_type = op;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  return node;
}

// y = x * (a + b), with a and b constants of 2 elements.
Graph ConstantSumGraph() {
  Graph g;
  g.name = "g";
  g.opset_version = 17;
  g.inputs = {{"x", DType::kFloat32, Shape({2})}};
  g.outputs = {{"y", DType::kFloat32, Shape({2})}};
  AddValue(g, "x", Shape({2}));
  AddValue(g, "t", Shape({2}));
  AddValue(g, "y", Shape({2}));
  AddInitializer(g, "a", 1.0f);
  AddInitializer(g, "b", 2.0f);
  g.nodes = {MakeNode("Add", {"a", "b"}, {"t"}),
             MakeNode("Mul", {"x", "t"}, {"y"})};
  return g;
}

TEST(FoldConstantsTest, TheBackendsValuesBecomeInitializers) {
  Graph g = ConstantSumGraph();
  std::vector<std::string> asked;
  RewriteBackend backend;
  backend.evaluate = [&asked](const Graph&, const Node& node)
      -> std::optional<std::vector<Tensor>> {
    asked.push_back(node.op_type);
    std::vector<Tensor> out;
    out.push_back(Tensor::FromVector(DType::kFloat32, Shape({2}),
                                     std::vector<float>{42, 43}));
    return out;
  };
  ASSERT_TRUE(FoldConstants(&g, backend).ok());
  // Only the node whose inputs are all constants is asked for.
  EXPECT_EQ(asked, std::vector<std::string>{"Add"});
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Mul");
  ASSERT_TRUE(g.IsInitializer("t"));
  EXPECT_EQ(g.FindInitializer("t")->data<float>()[1], 43.0f);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
}

TEST(FoldConstantsTest, ANodeTheBackendDeclinesStays) {
  for (bool has_evaluator : {false, true}) {
    Graph g = ConstantSumGraph();
    RewriteBackend backend;
    if (has_evaluator) {
      backend.evaluate = [](const Graph&, const Node&)
          -> std::optional<std::vector<Tensor>> { return std::nullopt; };
    }
    ASSERT_TRUE(FoldConstants(&g, backend).ok());
    EXPECT_EQ(g.nodes.size(), 2u) << has_evaluator;
    EXPECT_FALSE(g.IsInitializer("t"));
  }
}

TEST(FoldConstantsTest, AWrongNumberOfValuesIsDeclinedToo) {
  Graph g = ConstantSumGraph();
  RewriteBackend backend;
  backend.evaluate = [](const Graph&, const Node&)
      -> std::optional<std::vector<Tensor>> {
    return std::vector<Tensor>{};  // One output wanted.
  };
  ASSERT_TRUE(FoldConstants(&g, backend).ok());
  EXPECT_EQ(g.nodes.size(), 2u);
}

// y = Neg(Relu(Neg(x))): three float unary ops in a row.
Graph UnaryChainGraph() {
  Graph g;
  g.name = "g";
  g.opset_version = 17;
  g.inputs = {{"x", DType::kFloat32, Shape({4})}};
  g.outputs = {{"y", DType::kFloat32, Shape({4})}};
  for (const char* v : {"x", "a", "b", "y"}) AddValue(g, v, Shape({4}));
  g.nodes = {MakeNode("Neg", {"x"}, {"a"}), MakeNode("Relu", {"a"}, {"b"}),
             MakeNode("Neg", {"b"}, {"y"})};
  return g;
}

TEST(FuseElementwiseChainsTest, ChainsWhatTheBackendChains) {
  Graph g = UnaryChainGraph();
  RewriteBackend backend;
  backend.chainable_unary = [](absl::string_view op) { return op == "Neg"; };
  ASSERT_TRUE(FuseElementwiseChains(&g, backend).ok());
  // Relu breaks the chain: each Neg is alone, and a chain needs two.
  EXPECT_EQ(g.nodes.size(), 3u);

  backend.chainable_unary = [](absl::string_view op) {
    return op == "Neg" || op == "Relu";
  };
  ASSERT_TRUE(FuseElementwiseChains(&g, backend).ok());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, kElementwiseChainOp);
  EXPECT_EQ(g.nodes[0].inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(g.nodes[0].outputs, std::vector<std::string>{"y"});
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
}

TEST(OptimizeGraphTest, AnEmptyBackendStillGetsTheGraphOnlyPasses) {
  // Transpose(Transpose(x, [1, 0]), [1, 0]) becomes one Transpose.
  Graph g;
  g.name = "g";
  g.opset_version = 17;
  g.inputs = {{"x", DType::kFloat32, Shape({2, 3})}};
  g.outputs = {{"y", DType::kFloat32, Shape({2, 3})}};
  AddValue(g, "x", Shape({2, 3}));
  AddValue(g, "t", Shape({3, 2}));
  AddValue(g, "y", Shape({2, 3}));
  g.nodes = {MakeNode("Transpose", {"x"}, {"t"}),
             MakeNode("Transpose", {"t"}, {"y"})};
  for (Node& n : g.nodes) n.attributes["perm"] = std::vector<int64_t>{1, 0};
  ASSERT_TRUE(OptimizeGraph(&g, RewriteBackend{}).ok());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Transpose");
  EXPECT_EQ(g.nodes[0].inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(g.nodes[0].outputs, std::vector<std::string>{"y"});
}

}  // namespace
}  // namespace glint
