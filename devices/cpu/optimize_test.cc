#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "devices/cpu/cpu_rewrites.h"
#include "devices/cpu/kernel_test_util.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using testing::MakeNode;
using testing::RunKernel;
using testing::RunKernelOptions;

Tensor Random(std::vector<int64_t> dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  Shape shape(std::move(dims));
  std::vector<float> v(shape.NumElements());
  for (float& x : v) x = dist(rng);
  return Tensor::FromVector(DType::kFloat32, shape, v);
}

void AddValue(Graph& g, const std::string& name, Shape shape) {
  g.values[name] = ValueInfo{name, DType::kFloat32, std::move(shape)};
}

void AddInitializer(Graph& g, const std::string& name, Tensor t) {
  g.values[name] = ValueInfo{name, t.dtype(), t.shape()};
  g.initializers[name] = std::move(t);
}

Graph NewGraph(const std::string& input, Shape in_shape,
               const std::string& output, Shape out_shape) {
  Graph g;
  g.name = "g";
  g.opset_version = 17;
  g.inputs = {{input, DType::kFloat32, in_shape}};
  g.outputs = {{output, DType::kFloat32, out_shape}};
  AddValue(g, input, in_shape);
  AddValue(g, output, out_shape);
  return g;
}

// Names the nodes n0, n1, ... in order.
void NameNodes(Graph* g) {
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    g->nodes[i].name = absl::StrCat("n", i);
  }
}

// The op types of `g`'s nodes, in order.
std::vector<std::string> OpTypes(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& node : g.nodes) ops.push_back(node.op_type);
  return ops;
}

// Runs `g` node by node with the CPU kernels: the reference the optimised
// graph must agree with.
std::map<std::string, Tensor> Run(const Graph& g,
                                  const std::map<std::string, Tensor>& feed) {
  std::map<std::string, Tensor> env = feed;
  for (const auto& [name, t] : g.initializers) env[name] = t;
  for (const Node& node : g.nodes) {
    RunKernelOptions options;
    options.opset_version = g.opset_version;
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) {  // An absent optional input.
        inputs.emplace_back();
        continue;
      }
      inputs.push_back(env.at(node.inputs[i]));
      if (g.IsInitializer(node.inputs[i])) {
        options.constant_inputs.push_back(static_cast<int>(i));
      }
    }
    for (const std::string& out : node.outputs) {
      options.output_dtypes.push_back(g.FindValue(out)->dtype);
    }
    absl::StatusOr<std::vector<Tensor>> outs =
        RunKernel(CpuKernelRegistry(), node, inputs, options);
    EXPECT_TRUE(outs.ok()) << node.Describe() << ": " << outs.status();
    if (!outs.ok()) return {};
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      env[node.outputs[i]] = (*outs)[i];
    }
  }
  std::map<std::string, Tensor> result;
  for (const ValueInfo& out : g.outputs) result[out.name] = env.at(out.name);
  return result;
}

// Checks that `other` computes what `g` does on the same random inputs.
void ExpectSameOutputs(const Graph& g, const Graph& other, float tolerance) {
  std::map<std::string, Tensor> feed;
  for (const ValueInfo& in : g.inputs) feed[in.name] = Random(in.shape.dims(), 7);
  const std::map<std::string, Tensor> want = Run(g, feed);
  const std::map<std::string, Tensor> got = Run(other, feed);
  for (const auto& [name, w] : want) {
    const Tensor& t = got.at(name);
    EXPECT_EQ(t.shape(), w.shape()) << name;
    if (t.shape() != w.shape()) continue;
    for (int64_t i = 0; i < w.num_elements(); ++i) {
      const float a = w.data<float>()[i];
      const float b = t.data<float>()[i];
      if (std::fabs(a - b) > tolerance * (1 + std::fabs(a))) {
        ADD_FAILURE() << name << "[" << i << "]: " << a << " vs " << b;
        break;
      }
    }
  }
}

// Optimises a copy of `g` and checks it computes what `g` does on random
// inputs; returns the optimised graph.
Graph OptimizeAndCompare(const Graph& g, float tolerance) {
  Graph opt = g;
  absl::Status s = OptimizeGraphForCpu(&opt, CpuKernelRegistry());
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(opt.inputs.size(), g.inputs.size());
  EXPECT_EQ(opt.outputs.size(), g.outputs.size());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    EXPECT_EQ(opt.outputs[i].name, g.outputs[i].name);
  }
  ExpectSameOutputs(g, opt, tolerance);
  return opt;
}

TEST(OptimizeTest, MatMulAddReluBecomesOneFusedMatMul) {
  Graph g = NewGraph("x", Shape({2, 3, 8}), "y", Shape({2, 3, 5}));
  AddInitializer(g, "w", Random({8, 5}, 1));
  AddInitializer(g, "b", Random({5}, 2));
  AddValue(g, "mm", Shape({2, 3, 5}));
  AddValue(g, "add", Shape({2, 3, 5}));
  g.nodes = {MakeNode("MatMul", {"x", "w"}, {"mm"}),
             MakeNode("Add", {"b", "mm"}, {"add"}),
             MakeNode("Relu", {"add"}, {"y"})};
  g.nodes[0].name = "mm_node";
  g.nodes[1].name = "add_node";
  g.nodes[2].name = "relu_node";
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  ASSERT_EQ(opt.nodes.size(), 1u);
  EXPECT_EQ(opt.nodes[0].op_type, kFusedMatMulOp);
  EXPECT_EQ(opt.nodes[0].inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(opt.nodes[0].outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(opt.nodes[0].GetString("activation", ""), "Relu");
  EXPECT_EQ(opt.FindValue("mm"), nullptr);
}

TEST(OptimizeTest, GemmReluBecomesFusedGemm) {
  Graph g = NewGraph("x", Shape({4, 6}), "y", Shape({4, 3}));
  AddInitializer(g, "w", Random({3, 6}, 3));
  AddInitializer(g, "b", Random({3}, 4));
  AddValue(g, "gemm", Shape({4, 3}));
  g.nodes = {MakeNode("Gemm", {"x", "w", "b"}, {"gemm"}, {{"transB", int64_t{1}}}),
             MakeNode("Relu", {"gemm"}, {"y"})};
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  ASSERT_EQ(opt.nodes.size(), 1u);
  EXPECT_EQ(opt.nodes[0].op_type, kFusedGemmOp);
  EXPECT_EQ(opt.nodes[0].outputs, std::vector<std::string>{"y"});
}

TEST(OptimizeTest, ConvBatchNormReluFoldsIntoFusedConv) {
  Graph g = NewGraph("x", Shape({1, 3, 7, 7}), "y", Shape({1, 4, 7, 7}));
  AddInitializer(g, "w", Random({4, 3, 3, 3}, 5));
  AddInitializer(g, "scale", Random({4}, 6));
  AddInitializer(g, "shift", Random({4}, 7));
  AddInitializer(g, "mean", Random({4}, 8));
  Tensor var = Random({4}, 9);
  for (int i = 0; i < 4; ++i) var.data<float>()[i] = 1 + std::fabs(var.data<float>()[i]);
  AddInitializer(g, "var", var);
  AddValue(g, "conv", Shape({1, 4, 7, 7}));
  AddValue(g, "bn", Shape({1, 4, 7, 7}));
  g.nodes = {MakeNode("Conv", {"x", "w"}, {"conv"},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             MakeNode("BatchNormalization",
                      {"conv", "scale", "shift", "mean", "var"}, {"bn"}),
             MakeNode("Relu", {"bn"}, {"y"})};
  g.nodes[0].name = "conv_node";
  const Graph opt = OptimizeAndCompare(g, 1e-4f);
  // Transposes to and from channels-last surround the one Conv left.
  ASSERT_EQ(opt.nodes.size(), 3u);
  EXPECT_EQ(opt.nodes[1].op_type, kFusedConvOp);
  EXPECT_EQ(opt.nodes[1].GetString("activation", ""), "Relu");
  EXPECT_EQ(opt.nodes[1].inputs.size(), 3u);
  // The BN parameters and the original weights are no longer needed.
  EXPECT_EQ(opt.initializers.size(), 2u);
  EXPECT_EQ(opt.FindInitializer("scale"), nullptr);
}

TEST(OptimizeTest, ConstantSubgraphIsFolded) {
  Graph g = NewGraph("x", Shape({2, 4}), "y", Shape({2, 3}));
  AddInitializer(g, "wt", Random({3, 4}, 10));
  AddInitializer(g, "two", Tensor::FromVector(DType::kFloat32, Shape(),
                                              std::vector<float>{2.0f}));
  AddValue(g, "w", Shape({4, 3}));
  AddValue(g, "w2", Shape({4, 3}));
  g.nodes = {MakeNode("Transpose", {"wt"}, {"w"}),
             MakeNode("Mul", {"w", "two"}, {"w2"}),
             MakeNode("MatMul", {"x", "w2"}, {"y"})};
  const Graph opt = OptimizeAndCompare(g, 1e-6f);
  ASSERT_EQ(opt.nodes.size(), 1u);
  EXPECT_EQ(opt.nodes[0].op_type, "MatMul");
  ASSERT_NE(opt.FindInitializer("w2"), nullptr);
  EXPECT_EQ(opt.FindInitializer("w2")->shape(), Shape({4, 3}));
  EXPECT_EQ(opt.FindInitializer("wt"), nullptr);
}

TEST(OptimizeTest, ValuesVisibleOutsideAreNotFusedAway) {
  // The MatMul result is a graph output too: it must stay.
  Graph g = NewGraph("x", Shape({2, 4}), "y", Shape({2, 3}));
  g.outputs.push_back({"mm", DType::kFloat32, Shape({2, 3})});
  AddInitializer(g, "w", Random({4, 3}, 11));
  AddValue(g, "mm", Shape({2, 3}));
  g.nodes = {MakeNode("MatMul", {"x", "w"}, {"mm"}),
             MakeNode("Relu", {"mm"}, {"y"})};
  const Graph opt = OptimizeAndCompare(g, 0);
  EXPECT_EQ(opt.nodes.size(), 2u);
  EXPECT_EQ(opt.nodes[0].op_type, "MatMul");
}

Tensor Scalar(float v) {
  return Tensor::FromVector(DType::kFloat32, Shape(), std::vector<float>{v});
}

// MatMul(x, w) -> GELU in one of the forms exporters write; `form` picks
// the scaling (0: Div by sqrt(2), 1: Mul by 1/sqrt(2)) and the order of the
// products (0: (h*0.5)*t, 1: (h*t)*0.5, 2: (t*0.5)*h).
Graph MatMulGelu(int scaling, int order) {
  const Shape s({3, 4});
  Graph g = NewGraph("x", Shape({3, 5}), "y", s);
  AddInitializer(g, "w", Random({5, 4}, 12));
  AddInitializer(g, "c", Scalar(scaling == 0 ? 1.4142135f : 0.70710678f));
  AddInitializer(g, "one", Scalar(1.0f));
  AddInitializer(g, "half", Scalar(0.5f));
  for (const char* v : {"h", "u", "e", "t", "p"}) AddValue(g, v, s);
  g.nodes = {MakeNode("MatMul", {"x", "w"}, {"h"}),
             MakeNode(scaling == 0 ? "Div" : "Mul", {"h", "c"}, {"u"}),
             MakeNode("Erf", {"u"}, {"e"}),
             MakeNode("Add", {"one", "e"}, {"t"})};
  if (order == 0) {
    g.nodes.push_back(MakeNode("Mul", {"h", "half"}, {"p"}));
    g.nodes.push_back(MakeNode("Mul", {"p", "t"}, {"y"}));
  } else if (order == 1) {
    g.nodes.push_back(MakeNode("Mul", {"t", "h"}, {"p"}));
    g.nodes.push_back(MakeNode("Mul", {"half", "p"}, {"y"}));
  } else {
    g.nodes.push_back(MakeNode("Mul", {"t", "half"}, {"p"}));
    g.nodes.push_back(MakeNode("Mul", {"p", "h"}, {"y"}));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  return g;
}

TEST(OptimizeTest, DecomposedGeluFusesIntoMatMul) {
  for (int scaling = 0; scaling < 2; ++scaling) {
    for (int order = 0; order < 3; ++order) {
      SCOPED_TRACE(::testing::Message() << "scaling " << scaling << " order "
                                        << order);
      const Graph opt = OptimizeAndCompare(MatMulGelu(scaling, order), 1e-5f);
      ASSERT_EQ(opt.nodes.size(), 1u);
      EXPECT_EQ(opt.nodes[0].op_type, kFusedMatMulOp);
      EXPECT_EQ(opt.nodes[0].GetString("activation", ""), "Gelu");
      EXPECT_EQ(opt.nodes[0].outputs, std::vector<std::string>{"y"});
      for (const char* v : {"h", "u", "e", "t", "p"}) {
        EXPECT_EQ(opt.FindValue(v), nullptr) << v;
      }
    }
  }
}

// GPT-2's Gelu as PyTorch 1.13 exports F.gelu(x, approximate="tanh"):
// 0.5 * x * (1 + tanh(0.79788 * (x + 0.044715 * x^3))), x^3 as x * (x * x)
// (`pow` 0) or Pow(x, 3) (`pow` 1).
Graph MatMulGeluTanh(int pow) {
  const Shape s({3, 4});
  Graph g = NewGraph("x", Shape({3, 5}), "y", s);
  AddInitializer(g, "w", Random({5, 4}, 13));
  AddInitializer(g, "k", Scalar(0.044715f));
  AddInitializer(g, "r", Scalar(0.7978846f));
  AddInitializer(g, "three", Scalar(3.0f));
  AddInitializer(g, "one", Scalar(1.0f));
  AddInitializer(g, "half", Scalar(0.5f));
  for (const char* v : {"h", "sq", "cube", "a", "b", "z", "t", "u", "v"}) {
    AddValue(g, v, s);
  }
  g.nodes = {MakeNode("MatMul", {"x", "w"}, {"h"})};
  if (pow == 0) {
    g.nodes.push_back(MakeNode("Mul", {"h", "h"}, {"sq"}));
    g.nodes.push_back(MakeNode("Mul", {"h", "sq"}, {"cube"}));
  } else {
    g.nodes.push_back(MakeNode("Pow", {"h", "three"}, {"cube"}));
  }
  for (Node n : {MakeNode("Mul", {"k", "cube"}, {"a"}),
                 MakeNode("Add", {"h", "a"}, {"b"}),
                 MakeNode("Mul", {"r", "b"}, {"z"}),
                 MakeNode("Tanh", {"z"}, {"t"}),
                 MakeNode("Add", {"one", "t"}, {"u"}),
                 MakeNode("Mul", {"h", "u"}, {"v"}),
                 MakeNode("Mul", {"v", "half"}, {"y"})}) {
    g.nodes.push_back(std::move(n));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  return g;
}

TEST(OptimizeTest, TanhGeluFusesIntoMatMul) {
  for (int pow = 0; pow < 2; ++pow) {
    SCOPED_TRACE(::testing::Message() << "pow " << pow);
    const Graph opt = OptimizeAndCompare(MatMulGeluTanh(pow), 1e-5f);
    ASSERT_EQ(opt.nodes.size(), 1u);
    EXPECT_EQ(opt.nodes[0].op_type, kFusedMatMulOp);
    EXPECT_EQ(opt.nodes[0].GetString("activation", ""), "GeluTanh");
    EXPECT_EQ(opt.nodes[0].outputs, std::vector<std::string>{"y"});
  }
}

TEST(OptimizeTest, TanhGeluWithAnotherConstantStaysApart) {
  Graph g = MatMulGeluTanh(0);
  g.initializers["k"] = Scalar(0.05f);
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  for (const Node& n : opt.nodes) EXPECT_NE(n.op_type, "Gelu");
  EXPECT_GT(opt.nodes.size(), 1u);
}

TEST(OptimizeTest, GeluLookalikesStayAsTheyAre) {
  auto has_gelu = [](const Graph& opt) {
    for (const Node& node : opt.nodes) {
      if (node.op_type == "Gelu" ||
          node.GetString("activation", "") == "Gelu") {
        return true;
      }
    }
    return false;
  };
  // 0.4 instead of 0.5: not a GELU (the scalar steps may still chain).
  Graph g = MatMulGelu(0, 0);
  g.initializers["half"] = Scalar(0.4f);
  EXPECT_FALSE(has_gelu(OptimizeAndCompare(g, 1e-5f)));
  // erf(x / sqrt 2) is also a graph output: the Erf must stay visible.
  g = MatMulGelu(1, 2);
  g.outputs.push_back({"e", DType::kFloat32, Shape({3, 4})});
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  EXPECT_FALSE(has_gelu(opt));
  EXPECT_NE(opt.FindValue("e"), nullptr);
}

TEST(OptimizeTest, StandaloneGeluWhereNoMatMulPrecedes) {
  // x feeds the pattern directly: one Gelu node remains.
  Graph g = MatMulGelu(0, 1);
  g.nodes.erase(g.nodes.begin());
  g.inputs = {{"h", DType::kFloat32, Shape({3, 4})}};
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  ASSERT_EQ(opt.nodes.size(), 1u);
  EXPECT_EQ(opt.nodes[0].op_type, "Gelu");
  EXPECT_EQ(opt.nodes[0].inputs, std::vector<std::string>{"h"});
}

// A small residual CNN: conv+relu -> maxpool -> conv -> add(skip) -> relu
// -> avgpool -> global average pool; the relu output is also read by an
// Erf (which stays outside the region) and is a graph output.
Graph ResidualCnn(int64_t ceil_mode) {
  Graph g = NewGraph("x", Shape({2, 3, 11, 9}), "y", Shape({2, 5, 1, 1}));
  AddInitializer(g, "w1", Random({5, 3, 3, 3}, 31));
  AddInitializer(g, "b1", Random({5}, 32));
  AddInitializer(g, "w2", Random({5, 5, 3, 3}, 33));
  AddValue(g, "c1", Shape({2, 5, 11, 9}));
  AddValue(g, "r1", Shape({2, 5, 11, 9}));
  const int64_t ph = ceil_mode ? 6 : 5, pw = 5;
  AddValue(g, "p1", Shape({2, 5, ph, pw}));
  AddValue(g, "c2", Shape({2, 5, ph, pw}));
  AddValue(g, "a", Shape({2, 5, ph, pw}));
  AddValue(g, "r2", Shape({2, 5, ph, pw}));
  AddValue(g, "ap", Shape({2, 5, ph, pw}));
  AddValue(g, "s", Shape({2, 5, 11, 9}));
  g.outputs.push_back({"s", DType::kFloat32, Shape({2, 5, 11, 9})});
  g.outputs.push_back({"r1", DType::kFloat32, Shape({2, 5, 11, 9})});
  const std::vector<int64_t> pads = {1, 1, 1, 1};
  g.nodes = {
      MakeNode("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", pads}}),
      MakeNode("Relu", {"c1"}, {"r1"}),
      MakeNode("MaxPool", {"r1"}, {"p1"},
               {{"kernel_shape", std::vector<int64_t>{3, 3}},
                {"strides", std::vector<int64_t>{2, 2}},
                {"pads", pads},
                {"ceil_mode", ceil_mode}}),
      MakeNode("Conv", {"p1", "w2"}, {"c2"}, {{"pads", pads}}),
      MakeNode("Add", {"c2", "p1"}, {"a"}),
      MakeNode("Relu", {"a"}, {"r2"}),
      MakeNode("AveragePool", {"r2"}, {"ap"},
               {{"kernel_shape", std::vector<int64_t>{3, 3}},
                {"pads", pads},
                {"count_include_pad", int64_t{1}}}),
      MakeNode("GlobalAveragePool", {"ap"}, {"y"}),
      MakeNode("Erf", {"r1"}, {"s"})};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  return g;
}

TEST(OptimizeTest, ConvChainsRunChannelsLast) {
  for (int64_t ceil_mode : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "ceil_mode " << ceil_mode);
    const Graph opt = OptimizeAndCompare(ResidualCnn(ceil_mode), 1e-4f);
    std::map<std::string, int> ops;
    for (const Node& node : opt.nodes) ++ops[node.op_type];
    EXPECT_EQ(ops[kFusedConvOp], 2);
    EXPECT_EQ(ops[kChannelsLastMaxPoolOp], 1);
    EXPECT_EQ(ops[kChannelsLastAveragePoolOp], 1);
    EXPECT_EQ(ops[kChannelsLastGlobalAveragePoolOp], 1);
    // In: x. Out: y, and r1 (a graph output that Erf reads too).
    EXPECT_EQ(ops["Transpose"], 3);
    EXPECT_EQ(ops["Erf"], 1);
    // The second Conv took the residual Add (Z = the pooled value) and the
    // Relu after it.
    std::vector<const Node*> convs;
    for (const Node& node : opt.nodes) {
      if (node.op_type == kFusedConvOp) {
        EXPECT_EQ(node.GetInt("channels_last", 0), 1);
        convs.push_back(&node);
      }
    }
    ASSERT_EQ(convs.size(), 2u);
    EXPECT_EQ(convs[1]->inputs,
              (std::vector<std::string>{"p1__nhwc", "w2", "", "p1__nhwc"}));
    EXPECT_EQ(convs[1]->outputs, std::vector<std::string>{"r2__nhwc"});
    EXPECT_EQ(convs[1]->GetString("activation", ""), "Relu");
    EXPECT_EQ(ops["Add"], 0);
    // Inside the region values are NHWC.
    const ValueInfo* p1 = opt.FindValue("p1__nhwc");
    ASSERT_NE(p1, nullptr);
    EXPECT_EQ(p1->shape, Shape({2, ceil_mode ? 6 : 5, 5, 5}));
    for (const char* gone : {"p1", "c2", "c2__nhwc", "a", "a__nhwc"}) {
      EXPECT_EQ(opt.FindValue(gone), nullptr) << gone;
    }
    EXPECT_EQ(opt.FindValue("r1")->shape, Shape({2, 5, 11, 9}));
  }
}

// A DenseNet block (Conv outputs concatenated along the channels, then a
// BatchNormalization that no Conv precedes) and a segmentation head (a
// Resize between Convs, then the final upsampling to a graph output): the
// block and the inner Resize stay channels last; the final Resize reads
// the head's smaller output brought back to NCHW.
Graph DenseBlockAndHead() {
  Graph g = NewGraph("x", Shape({1, 4, 6, 6}), "y", Shape({1, 2, 24, 24}));
  AddInitializer(g, "w1", Random({4, 4, 3, 3}, 51));
  AddInitializer(g, "w2", Random({3, 4, 1, 1}, 52));
  AddInitializer(g, "w3", Random({5, 7, 1, 1}, 53));
  AddInitializer(g, "w4", Random({2, 5, 3, 3}, 54));
  AddInitializer(g, "scale", Random({7}, 55));
  AddInitializer(g, "bias", Random({7}, 56));
  AddInitializer(g, "mean", Random({7}, 57));
  Tensor var = Random({7}, 58);
  for (int i = 0; i < 7; ++i) var.data<float>()[i] = 0.5f + std::fabs(var.data<float>()[i]);
  AddInitializer(g, "var", var);
  AddInitializer(g, "up2",
                 Tensor::FromVector(DType::kFloat32, Shape({4}),
                                    std::vector<float>{1, 1, 2, 2}));
  AddValue(g, "c1", Shape({1, 4, 6, 6}));
  AddValue(g, "c2", Shape({1, 3, 6, 6}));
  for (const char* v : {"cat", "bn", "r"}) AddValue(g, v, Shape({1, 7, 6, 6}));
  AddValue(g, "c3", Shape({1, 5, 6, 6}));
  AddValue(g, "up", Shape({1, 5, 12, 12}));
  AddValue(g, "c4", Shape({1, 2, 12, 12}));
  g.nodes = {
      MakeNode("Conv", {"x", "w1"}, {"c1"},
               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      MakeNode("Conv", {"c1", "w2"}, {"c2"}),
      MakeNode("Concat", {"c1", "c2"}, {"cat"}, {{"axis", int64_t{1}}}),
      MakeNode("BatchNormalization", {"cat", "scale", "bias", "mean", "var"},
               {"bn"}),
      MakeNode("Relu", {"bn"}, {"r"}),
      MakeNode("Conv", {"r", "w3"}, {"c3"}),
      MakeNode("Resize", {"c3", "", "up2"}, {"up"},
               {{"mode", std::string("nearest")}}),
      MakeNode("Conv", {"up", "w4"}, {"c4"},
               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      MakeNode("Resize", {"c4", "", "up2"}, {"y"},
               {{"mode", std::string("linear")}}),
  };
  NameNodes(&g);
  return g;
}

TEST(OptimizeTest, ConcatBatchNormAndInnerResizeStayChannelsLast) {
  const Graph opt = OptimizeAndCompare(DenseBlockAndHead(), 1e-4f);
  const std::vector<std::string> ops = OpTypes(opt);
  // The Concat and the BatchNormalization (with its Relu) are one pass.
  EXPECT_EQ(ops, (std::vector<std::string>{
                     "Transpose", kFusedConvOp, kFusedConvOp,
                     kChannelsLastConcatBatchNormOp, kFusedConvOp, "Resize",
                     kFusedConvOp, "Transpose", "Resize"}));
  const Node& fused = opt.nodes[3];
  EXPECT_EQ(fused.GetString("activation", ""), "Relu");
  EXPECT_EQ(fused.inputs,
            (std::vector<std::string>{"scale", "bias", "mean", "var",
                                      "c1__nhwc", "c2__nhwc"}));
  EXPECT_EQ(opt.FindValue("cat__nhwc"), nullptr);
  // The inner Resize scales H and W of NHWC; the final one keeps NCHW.
  const Node& inner = opt.nodes[5];
  ASSERT_EQ(inner.inputs.size(), 3u);
  EXPECT_EQ(inner.inputs[0], "c3__nhwc");
  const Tensor* scales = opt.FindInitializer(inner.inputs[2]);
  ASSERT_NE(scales, nullptr);
  EXPECT_EQ(std::vector<float>(scales->data<float>(),
                               scales->data<float>() + 4),
            (std::vector<float>{1, 2, 2, 1}));
  const Node& last = opt.nodes[8];
  EXPECT_EQ(last.inputs, (std::vector<std::string>{"c4", "", "up2"}));
  EXPECT_EQ(opt.FindValue("up__nhwc")->shape, Shape({1, 12, 12, 5}));
}

// A concatenation read by more than the BatchNormalization is stored: the
// Concat and the BatchNormalization stay apart.
TEST(OptimizeTest, ConcatReadTwiceIsNotFusedIntoTheBatchNorm) {
  Graph g = DenseBlockAndHead();
  AddInitializer(g, "w5", Random({5, 7, 1, 1}, 59));
  // c3 = Conv(r) + Conv(cat): the Concat has a second reader.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].outputs[0] != "c3") continue;
    g.nodes[i].outputs = {"c3a"};
    AddValue(g, "c3a", Shape({1, 5, 6, 6}));
    AddValue(g, "c3b", Shape({1, 5, 6, 6}));
    g.nodes.insert(g.nodes.begin() + i + 1,
                   {MakeNode("Conv", {"cat", "w5"}, {"c3b"}),
                    MakeNode("Add", {"c3a", "c3b"}, {"c3"})});
    break;
  }
  NameNodes(&g);
  const Graph opt = OptimizeAndCompare(g, 1e-4f);
  const std::vector<std::string> ops = OpTypes(opt);
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Concat"), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), kChannelsLastBatchNormOp),
            ops.end());
  EXPECT_EQ(std::find(ops.begin(), ops.end(), kChannelsLastConcatBatchNormOp),
            ops.end());
}

// DenseNet's transition as PyTorch exports a padded pool: Conv, Pad, then
// AveragePool; the Pad joins the region with its pads permuted to NHWC.
TEST(OptimizeTest, PadBetweenConvAndPoolStaysChannelsLast) {
  Graph g = NewGraph("x", Shape({1, 3, 6, 6}), "y", Shape({1, 2, 4, 4}));
  AddInitializer(g, "w1", Random({4, 3, 1, 1}, 61));
  AddInitializer(g, "w2", Random({2, 4, 1, 1}, 62));
  AddInitializer(g, "pads", Tensor::FromVector(
                                DType::kInt64, Shape({8}),
                                std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1}));
  AddValue(g, "c", Shape({1, 4, 6, 6}));
  AddValue(g, "p", Shape({1, 4, 8, 8}));
  AddValue(g, "a", Shape({1, 4, 4, 4}));
  g.nodes = {MakeNode("Conv", {"x", "w1"}, {"c"}),
             MakeNode("Pad", {"c", "pads"}, {"p"},
                      {{"mode", std::string("reflect")}}),
             MakeNode("AveragePool", {"p"}, {"a"},
                      {{"kernel_shape", std::vector<int64_t>{2, 2}},
                       {"strides", std::vector<int64_t>{2, 2}}}),
             MakeNode("Conv", {"a", "w2"}, {"y"})};
  NameNodes(&g);
  const Graph opt = OptimizeAndCompare(g, 1e-4f);
  const std::vector<std::string> ops = OpTypes(opt);
  EXPECT_EQ(ops, (std::vector<std::string>{
                     "Transpose", kFusedConvOp, "Pad",
                     kChannelsLastAveragePoolOp, kFusedConvOp, "Transpose"}));
  const Tensor* pads = opt.FindInitializer(opt.nodes[2].inputs[1]);
  ASSERT_NE(pads, nullptr);
  EXPECT_EQ(std::vector<int64_t>(pads->data<int64_t>(),
                                 pads->data<int64_t>() + 8),
            (std::vector<int64_t>{0, 1, 1, 0, 0, 1, 1, 0}));
}

// A 1-D int64 initializer's value (shapes, axes, starts).
Tensor Int64s(std::vector<int64_t> v) {
  return Tensor::FromVector(DType::kInt64,
                            Shape({static_cast<int64_t>(v.size())}), v);
}

// ShuffleNet's unit as PyTorch exports it: chunk into two halves along the
// channels (Slices), a branch of Convs on one half, Concat, then the
// channel shuffle (Reshape, Transpose, Reshape): all of it channels last,
// the shuffle one node.
TEST(OptimizeTest, ShuffleUnitStaysChannelsLastWithOneShuffleNode) {
  Graph g = NewGraph("x", Shape({1, 3, 5, 5}), "y", Shape({1, 4, 5, 5}));
  AddInitializer(g, "w0", Random({8, 3, 1, 1}, 71));
  AddInitializer(g, "w1", Random({4, 4, 1, 1}, 72));
  AddInitializer(g, "zero", Int64s({0}));
  AddInitializer(g, "four", Int64s({4}));
  AddInitializer(g, "eight", Int64s({8}));
  AddInitializer(g, "axis1", Int64s({1}));
  AddInitializer(g, "split_shape", Int64s({1, 2, 4, 5, 5}));
  AddInitializer(g, "merge_shape", Int64s({1, 8, 5, 5}));
  AddInitializer(g, "w2", Random({4, 8, 1, 1}, 73));
  AddValue(g, "c0", Shape({1, 8, 5, 5}));
  for (const char* v : {"left", "right", "b"}) AddValue(g, v, Shape({1, 4, 5, 5}));
  AddValue(g, "cat", Shape({1, 8, 5, 5}));
  AddValue(g, "g5", Shape({1, 2, 4, 5, 5}));
  AddValue(g, "t5", Shape({1, 4, 2, 5, 5}));
  AddValue(g, "shuffled", Shape({1, 8, 5, 5}));
  g.nodes = {
      MakeNode("Conv", {"x", "w0"}, {"c0"}),
      MakeNode("Slice", {"c0", "zero", "four", "axis1"}, {"left"}),
      MakeNode("Slice", {"c0", "four", "eight", "axis1"}, {"right"}),
      MakeNode("Conv", {"right", "w1"}, {"b"}),
      MakeNode("Concat", {"left", "b"}, {"cat"}, {{"axis", int64_t{1}}}),
      MakeNode("Reshape", {"cat", "split_shape"}, {"g5"}),
      MakeNode("Transpose", {"g5"}, {"t5"},
               {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}),
      MakeNode("Reshape", {"t5", "merge_shape"}, {"shuffled"}),
      MakeNode("Conv", {"shuffled", "w2"}, {"y"}),
  };
  NameNodes(&g);
  const Graph opt = OptimizeAndCompare(g, 1e-4f);
  const std::vector<std::string> ops = OpTypes(opt);
  // The Concat and the shuffle are one gather of channels.
  EXPECT_EQ(ops, (std::vector<std::string>{
                     "Transpose", kFusedConvOp, "Slice", "Slice", kFusedConvOp,
                     kChannelsLastChannelGatherOp, kFusedConvOp, "Transpose"}));
  for (const Node& node : opt.nodes) {
    if (node.op_type == kChannelsLastChannelGatherOp) {
      EXPECT_EQ(node.inputs,
                (std::vector<std::string>{"left__nhwc", "b__nhwc"}));
      EXPECT_EQ(node.outputs, std::vector<std::string>{"shuffled__nhwc"});
      EXPECT_EQ(node.GetInt("groups", 0), 2);
      EXPECT_EQ(node.GetInts("ranges", {}), (std::vector<int64_t>{0, 8}));
    }
    if (node.op_type == "Slice") {
      const Tensor* axes = opt.FindInitializer(node.inputs[3]);
      ASSERT_NE(axes, nullptr);
      EXPECT_EQ(axes->data<int64_t>()[0], 3);
    }
  }
}

// Two units: the second one's chunk (Slices of the first shuffle, bounds
// written from the end and past it) joins the first unit's Concat and
// shuffle, so one gather writes the two halves straight away.
TEST(OptimizeTest, ShuffleThenChunkIsOneGatherWithTwoOutputs) {
  Graph g = NewGraph("x", Shape({1, 3, 5, 5}), "y", Shape({1, 4, 5, 5}));
  AddInitializer(g, "w0", Random({8, 3, 1, 1}, 81));
  AddInitializer(g, "w1", Random({4, 4, 1, 1}, 82));
  AddInitializer(g, "w3", Random({4, 4, 3, 3}, 83));
  AddInitializer(g, "w2", Random({4, 8, 1, 1}, 84));
  AddInitializer(g, "zero", Int64s({0}));
  AddInitializer(g, "four", Int64s({4}));
  AddInitializer(g, "eight", Int64s({8}));
  AddInitializer(g, "minus4", Int64s({-4}));
  AddInitializer(g, "past", Int64s({std::numeric_limits<int64_t>::max()}));
  AddInitializer(g, "axis1", Int64s({1}));
  AddInitializer(g, "split_shape", Int64s({1, 2, 4, 5, 5}));
  AddInitializer(g, "merge_shape", Int64s({1, 8, 5, 5}));
  AddValue(g, "c0", Shape({1, 8, 5, 5}));
  for (const char* v : {"left", "right", "b", "left2", "right2", "b2"}) {
    AddValue(g, v, Shape({1, 4, 5, 5}));
  }
  for (const char* v : {"cat", "shuffled", "cat2", "shuffled2"}) {
    AddValue(g, v, Shape({1, 8, 5, 5}));
  }
  for (const char* v : {"g5", "g5b"}) AddValue(g, v, Shape({1, 2, 4, 5, 5}));
  for (const char* v : {"t5", "t5b"}) AddValue(g, v, Shape({1, 4, 2, 5, 5}));
  auto shuffle = [](const std::string& in, const std::string& g5,
                    const std::string& t5, const std::string& out) {
    return std::vector<Node>{
        MakeNode("Reshape", {in, "split_shape"}, {g5}),
        MakeNode("Transpose", {g5}, {t5},
                 {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}),
        MakeNode("Reshape", {t5, "merge_shape"}, {out})};
  };
  g.nodes = {
      MakeNode("Conv", {"x", "w0"}, {"c0"}),
      MakeNode("Slice", {"c0", "zero", "four", "axis1"}, {"left"}),
      MakeNode("Slice", {"c0", "four", "eight", "axis1"}, {"right"}),
      MakeNode("Conv", {"right", "w1"}, {"b"}),
      MakeNode("Concat", {"left", "b"}, {"cat"}, {{"axis", int64_t{1}}})};
  for (Node& n : shuffle("cat", "g5", "t5", "shuffled")) g.nodes.push_back(n);
  g.nodes.push_back(
      MakeNode("Slice", {"shuffled", "zero", "four", "axis1"}, {"left2"}));
  g.nodes.push_back(
      MakeNode("Slice", {"shuffled", "minus4", "past", "axis1"}, {"right2"}));
  g.nodes.push_back(MakeNode("Conv", {"right2", "w3"}, {"b2"},
                             {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  g.nodes.push_back(
      MakeNode("Concat", {"left2", "b2"}, {"cat2"}, {{"axis", int64_t{1}}}));
  for (Node& n : shuffle("cat2", "g5b", "t5b", "shuffled2")) {
    g.nodes.push_back(n);
  }
  g.nodes.push_back(MakeNode("Conv", {"shuffled2", "w2"}, {"y"}));
  NameNodes(&g);
  const Graph opt = OptimizeAndCompare(g, 1e-4f);
  EXPECT_EQ(OpTypes(opt),
            (std::vector<std::string>{
                "Transpose", kFusedConvOp, "Slice", "Slice", kFusedConvOp,
                kChannelsLastChannelGatherOp, kFusedConvOp,
                kChannelsLastChannelGatherOp, kFusedConvOp, "Transpose"}));
  const Node& first = opt.nodes[5];
  EXPECT_EQ(first.inputs, (std::vector<std::string>{"left__nhwc", "b__nhwc"}));
  EXPECT_EQ(first.outputs,
            (std::vector<std::string>{"left2__nhwc", "right2__nhwc"}));
  EXPECT_EQ(first.GetInt("groups", 0), 2);
  EXPECT_EQ(first.GetInts("ranges", {}), (std::vector<int64_t>{0, 4, 4, 8}));
  EXPECT_EQ(opt.FindValue("shuffled__nhwc"), nullptr);
  EXPECT_EQ(opt.nodes[7].outputs, std::vector<std::string>{"shuffled2__nhwc"});
}

// The shuffle alone, in NCHW (no Conv near it), against the three ops.
TEST(OptimizeTest, ChannelShuffleOutsideARegionComputesTheSame) {
  Graph g = NewGraph("x", Shape({2, 6, 3, 2}), "y", Shape({2, 6, 3, 2}));
  AddInitializer(g, "split_shape", Int64s({2, 3, 2, 3, 2}));
  AddInitializer(g, "merge_shape", Int64s({2, 6, 3, 2}));
  AddValue(g, "g5", Shape({2, 3, 2, 3, 2}));
  AddValue(g, "t5", Shape({2, 2, 3, 3, 2}));
  g.nodes = {MakeNode("Reshape", {"x", "split_shape"}, {"g5"}),
             MakeNode("Transpose", {"g5"}, {"t5"},
                      {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}}),
             MakeNode("Reshape", {"t5", "merge_shape"}, {"y"})};
  NameNodes(&g);
  const Graph opt = OptimizeAndCompare(g, 0.0f);
  ASSERT_EQ(opt.nodes.size(), 1u);
  EXPECT_EQ(opt.nodes[0].op_type, kChannelShuffleOp);
  EXPECT_EQ(opt.nodes[0].GetInt("groups", 0), 3);
}

// Resizes whose scales come at run time, or that crop (roi), keep NCHW.
TEST(OptimizeTest, ResizeWithRunTimeScalesOrCropStaysNchw) {
  for (bool crop : {false, true}) {
    SCOPED_TRACE(crop ? "crop" : "run-time scales");
    Graph g = DenseBlockAndHead();
    Graph opt;
    if (crop) {
      g.nodes[6].attributes["coordinate_transformation_mode"] =
          std::string("tf_crop_and_resize");
      AddInitializer(g, "roi",
                     Tensor::FromVector(DType::kFloat32, Shape({8}),
                                        std::vector<float>{0, 0, 0, 0, 1, 1,
                                                           1, 1}));
      g.nodes[6].inputs[1] = "roi";
      opt = OptimizeAndCompare(g, 1e-4f);
    } else {
      // A graph input: only the layout is checked, not the outputs.
      g.inputs.push_back({"scales", DType::kFloat32, Shape({4})});
      AddValue(g, "scales", Shape({4}));
      g.nodes[6].inputs[2] = "scales";
      opt = g;
      ASSERT_TRUE(OptimizeGraphForCpu(&opt, CpuKernelRegistry()).ok());
    }
    int nchw_resizes = 0;
    for (const Node& node : opt.nodes) {
      if (node.op_type == "Resize" &&
          !absl::StrContains(node.inputs[0], "__nhwc")) {
        ++nchw_resizes;
      }
    }
    EXPECT_EQ(nchw_resizes, 2);
  }
}

TEST(OptimizeTest, BroadcastingAndIndicesStayOutsideTheRegion) {
  Graph g = NewGraph("x", Shape({1, 2, 6, 6}), "y", Shape({1, 2, 6, 6}));
  AddInitializer(g, "w", Random({2, 2, 1, 1}, 34));
  AddInitializer(g, "per_channel", Random({1, 2, 1, 1}, 35));
  AddValue(g, "c", Shape({1, 2, 6, 6}));
  AddValue(g, "m", Shape({1, 2, 6, 6}));
  g.values["idx"] = ValueInfo{"idx", DType::kInt64, Shape({1, 2, 6, 6})};
  g.outputs.push_back({"idx", DType::kInt64, Shape({1, 2, 6, 6})});
  g.nodes = {MakeNode("Conv", {"x", "w"}, {"c"}),
             MakeNode("Mul", {"c", "per_channel"}, {"m"}),
             MakeNode("MaxPool", {"m"}, {"y", "idx"},
                      {{"kernel_shape", std::vector<int64_t>{1, 1}}})};
  g.nodes[1].name = "mul";
  g.nodes[2].name = "pool";
  Graph opt = g;
  ASSERT_TRUE(OptimizeGraphForCpu(&opt, CpuKernelRegistry()).ok());
  const std::vector<std::string> ops = OpTypes(opt);
  EXPECT_EQ(ops, (std::vector<std::string>{"Transpose", kFusedConvOp,
                                           "Transpose", "Mul", "MaxPool"}));
}

// An EfficientNet block as PyTorch exports it: Conv, SiLU as x *
// Sigmoid(x), then squeeze-excite (GlobalAveragePool, Conv, SiLU, Conv,
// Sigmoid, and a Mul by the [N, C, 1, 1] scale), then a projecting Conv;
// and MobileNetV2's Relu6 as Clip(0, 6).
Graph MobileBlock() {
  Graph g = NewGraph("x", Shape({1, 4, 6, 6}), "y", Shape({1, 3, 6, 6}));
  AddInitializer(g, "w1", Random({4, 4, 3, 3}, 41));
  AddInitializer(g, "w2", Random({2, 4, 1, 1}, 42));
  AddInitializer(g, "w3", Random({4, 2, 1, 1}, 43));
  AddInitializer(g, "w4", Random({3, 4, 1, 1}, 44));
  AddInitializer(g, "lo", Scalar(0.0f));
  AddInitializer(g, "hi", Scalar(6.0f));
  for (const char* v : {"c", "cs", "a", "m"}) {
    AddValue(g, v, Shape({1, 4, 6, 6}));
  }
  for (const char* v : {"p", "e", "es"}) AddValue(g, v, Shape({1, 4, 1, 1}));
  for (const char* v : {"r", "rs", "r6"}) AddValue(g, v, Shape({1, 2, 1, 1}));
  g.nodes = {
      MakeNode("Conv", {"x", "w1"}, {"c"},
               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      MakeNode("Sigmoid", {"c"}, {"cs"}),
      MakeNode("Mul", {"c", "cs"}, {"a"}),
      MakeNode("GlobalAveragePool", {"a"}, {"p"}),
      MakeNode("Conv", {"p", "w2"}, {"r"}),
      MakeNode("Clip", {"r", "lo", "hi"}, {"r6"}),
      MakeNode("Conv", {"r6", "w3"}, {"e"}),
      MakeNode("Sigmoid", {"e"}, {"es"}),
      MakeNode("Mul", {"a", "es"}, {"m"}),
      MakeNode("Conv", {"m", "w4"}, {"y"}),
  };
  NameNodes(&g);
  return g;
}

TEST(OptimizeTest, MobileBlockFusesActivationsAndStaysChannelsLast) {
  const Graph opt = OptimizeAndCompare(MobileBlock(), 1e-4f);
  const std::vector<std::string> ops = OpTypes(opt);
  // One reorder in, one out: the squeeze-excite Mul broadcasts its
  // [N, C, 1, 1] scale inside the channels-last region.
  EXPECT_EQ(ops, (std::vector<std::string>{
                     "Transpose", kFusedConvOp,
                     kChannelsLastGlobalAveragePoolOp, kFusedConvOp,
                     kFusedConvOp, "Mul", kFusedConvOp, "Transpose"}));
  std::vector<std::string> acts;
  for (const Node& node : opt.nodes) {
    if (node.op_type == kFusedConvOp) {
      acts.push_back(node.GetString("activation", ""));
    }
  }
  EXPECT_EQ(acts, (std::vector<std::string>{"Swish", "Clip", "Sigmoid", ""}));
  for (const Node& node : opt.nodes) {
    if (node.GetString("activation", "") == "Clip") {
      EXPECT_EQ(node.GetFloat("activation_alpha", -1), 0.0f);
      EXPECT_EQ(node.GetFloat("activation_beta", -1), 6.0f);
    }
  }
}

TEST(OptimizeTest, SiluWhoseHalvesAreReadElsewhereStaysApart) {
  // The Sigmoid is also a graph output: fusing would lose it.
  Graph g = MobileBlock();
  g.outputs.push_back({"cs", DType::kFloat32, Shape({1, 4, 6, 6})});
  const Graph opt = OptimizeAndCompare(g, 1e-4f);
  int sigmoids = 0;
  for (const Node& node : opt.nodes) {
    sigmoids += node.op_type == "Sigmoid" ? 1 : 0;
    EXPECT_NE(node.GetString("activation", ""), "Swish");
  }
  EXPECT_EQ(sigmoids, 1);
}

TEST(OptimizeTest, ElementwiseChainBecomesOneNode) {
  // y = LeakyRelu(1 - Sigmoid(x * 2), 0.2) / 3, then Exp; the Exp's input
  // is also a graph output, so the chain ends before it.
  const Shape s({4, 33, 70});
  Graph g = NewGraph("x", s, "y", s);
  AddInitializer(g, "two", Scalar(2.0f));
  AddInitializer(g, "one", Scalar(1.0f));
  AddInitializer(g, "three", Scalar(3.0f));
  for (const char* v : {"m", "sg", "sub", "lr", "d"}) AddValue(g, v, s);
  g.outputs.push_back({"d", DType::kFloat32, s});
  g.nodes = {MakeNode("Mul", {"x", "two"}, {"m"}),
             MakeNode("Sigmoid", {"m"}, {"sg"}),
             MakeNode("Sub", {"one", "sg"}, {"sub"}),
             MakeNode("LeakyRelu", {"sub"}, {"lr"}, {{"alpha", 0.2f}}),
             MakeNode("Div", {"lr", "three"}, {"d"}),
             MakeNode("Exp", {"d"}, {"y"})};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  const Graph opt = OptimizeAndCompare(g, 1e-6f);
  ASSERT_EQ(opt.nodes.size(), 2u);
  const Node& chain = opt.nodes[0];
  EXPECT_EQ(chain.op_type, kElementwiseChainOp);
  EXPECT_EQ(chain.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(chain.outputs, std::vector<std::string>{"d"});
  EXPECT_EQ(chain.GetStrings("ops"),
            (std::vector<std::string>{"Mul", "Sigmoid", "Sub", "LeakyRelu",
                                      "Div"}));
  EXPECT_EQ(chain.GetInts("scalar_first"),
            (std::vector<int64_t>{0, 0, 1, 0, 0}));
  EXPECT_FLOAT_EQ(chain.GetFloat("3:alpha", 0), 0.2f);
  EXPECT_EQ(opt.nodes[1].op_type, "Exp");
  for (const char* v : {"m", "sg", "sub", "lr"}) {
    EXPECT_EQ(opt.FindValue(v), nullptr) << v;
  }
}

TEST(OptimizeTest, ChainRefusesMalformedAttributes) {
  Node node = MakeNode(kElementwiseChainOp, {"x"}, {"y"},
                       {{"ops", std::vector<std::string>{"Relu", "Nope"}},
                        {"scalars", std::vector<float>{0, 0}},
                        {"scalar_first", std::vector<int64_t>{0, 0}}});
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), node, {Random({3}, 1)})
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
  node.attributes["scalars"] = std::vector<float>{0};
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), node, {Random({3}, 1)})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OptimizeTest, ResidualAddBecomesMatMulAddend) {
  // A transformer's residual: y = x + (x·w1 + b), then Relu. The second
  // residual's other operand, a Sigmoid, is computed after its MatMul, so
  // the fused node must move to the Add's place. The third Add follows a
  // MatMul + Gelu (the addend would come after the activation) and the
  // fourth broadcasts: both stay Adds.
  const Shape s({2, 3, 8});
  Graph g = NewGraph("x", s, "y", s);
  AddInitializer(g, "w1", Random({8, 8}, 41));
  AddInitializer(g, "b1", Random({8}, 42));
  AddInitializer(g, "w2", Random({8, 8}, 43));
  AddInitializer(g, "w3", Random({8, 8}, 44));
  AddInitializer(g, "w4", Random({8, 8}, 45));
  for (const char* v : {"m1", "o1", "r1", "h", "m2", "sg", "r2", "m3", "ge",
                        "r3", "m4"}) {
    AddValue(g, v, s);
  }
  AddValue(g, "row", Shape({1, 1, 8}));
  g.nodes = {MakeNode("MatMul", {"x", "w1"}, {"m1"}),
             MakeNode("Add", {"m1", "b1"}, {"o1"}),
             MakeNode("Add", {"x", "o1"}, {"r1"}),
             MakeNode("Relu", {"r1"}, {"h"}),
             MakeNode("MatMul", {"h", "w2"}, {"m2"}),
             MakeNode("Sigmoid", {"h"}, {"sg"}),
             MakeNode("Add", {"m2", "sg"}, {"r2"}),
             MakeNode("MatMul", {"r2", "w3"}, {"m3"}),
             MakeNode("Gelu", {"m3"}, {"ge"}),
             MakeNode("Add", {"ge", "r2"}, {"r3"}),
             MakeNode("ReduceMean", {"r3"}, {"row"},
                      {{"axes", std::vector<int64_t>{0, 1}}}),
             MakeNode("MatMul", {"r3", "w4"}, {"m4"}),
             MakeNode("Add", {"m4", "row"}, {"y"})};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  const std::vector<std::string> ops = OpTypes(opt);
  EXPECT_EQ(ops, (std::vector<std::string>{
                     kFusedMatMulOp, "Sigmoid", kFusedMatMulOp,
                     kFusedMatMulOp, "Add", "ReduceMean", "MatMul", "Add"}));
  ASSERT_EQ(ops.size(), opt.nodes.size());
  EXPECT_EQ(opt.nodes[0].inputs,
            (std::vector<std::string>{"x", "w1", "b1", "x"}));
  EXPECT_EQ(opt.nodes[0].outputs, std::vector<std::string>{"h"});
  EXPECT_EQ(opt.nodes[0].GetString("activation", ""), "Relu");
  EXPECT_EQ(opt.nodes[2].inputs,
            (std::vector<std::string>{"h", "w2", "", "sg"}));
  EXPECT_EQ(opt.nodes[2].outputs, std::vector<std::string>{"r2"});
  EXPECT_EQ(opt.nodes[3].inputs, (std::vector<std::string>{"r2", "w3"}));
  EXPECT_EQ(opt.nodes[3].GetString("activation", ""), "Gelu");
}

// Self-attention as PyTorch exports it: B 2, S 5, 3 heads of 4. K^T is two
// Transposes (FuseTransposes merges them), the scale a Div after the
// scores' MatMul. `mask` adds a constant before the Softmax; `axis` is the
// Softmax's.
Graph AttentionGraph(bool mask, int64_t axis) {
  const Shape s({2, 5, 12});
  Graph g = NewGraph("x", s, "y", s);
  for (const char* w : {"wq", "wk", "wv"}) {
    AddInitializer(g, w, Random({12, 12}, 50 + w[1]));
  }
  AddInitializer(g, "split",
                 testing::MakeTensor<int64_t>({4}, {2, 5, 3, 4}));
  AddInitializer(g, "merge", testing::MakeTensor<int64_t>({3}, {2, 5, 12}));
  AddInitializer(g, "root_d", Scalar(2.0f));
  AddInitializer(g, "mask", Random({1, 1, 5, 5}, 60));
  for (const char* v : {"q", "k", "v"}) AddValue(g, v, s);
  for (const char* v : {"qs", "ks", "vs"}) AddValue(g, v, Shape({2, 5, 3, 4}));
  for (const char* v : {"qh", "kh", "vh", "o"}) {
    AddValue(g, v, Shape({2, 3, 5, 4}));
  }
  AddValue(g, "kt", Shape({2, 3, 4, 5}));
  for (const char* v : {"sc", "scd", "masked", "p"}) {
    AddValue(g, v, Shape({2, 3, 5, 5}));
  }
  AddValue(g, "ot", Shape({2, 5, 3, 4}));
  const std::vector<int64_t> heads = {0, 2, 1, 3};
  g.nodes = {MakeNode("MatMul", {"x", "wq"}, {"q"}),
             MakeNode("MatMul", {"x", "wk"}, {"k"}),
             MakeNode("MatMul", {"x", "wv"}, {"v"}),
             MakeNode("Reshape", {"q", "split"}, {"qs"}),
             MakeNode("Transpose", {"qs"}, {"qh"}, {{"perm", heads}}),
             MakeNode("Reshape", {"k", "split"}, {"ks"}),
             MakeNode("Transpose", {"ks"}, {"kh"}, {{"perm", heads}}),
             MakeNode("Transpose", {"kh"}, {"kt"},
                      {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}),
             MakeNode("Reshape", {"v", "split"}, {"vs"}),
             MakeNode("Transpose", {"vs"}, {"vh"}, {{"perm", heads}}),
             MakeNode("MatMul", {"qh", "kt"}, {"sc"}),
             MakeNode("Div", {"sc", "root_d"}, {"scd"}),
             MakeNode("Add", {"scd", "mask"}, {"masked"}),
             MakeNode("Softmax", {mask ? "masked" : "scd"}, {"p"},
                      {{"axis", axis}}),
             MakeNode("MatMul", {"p", "vh"}, {"o"}),
             MakeNode("Transpose", {"o"}, {"ot"}, {{"perm", heads}}),
             MakeNode("Reshape", {"ot", "merge"}, {"y"})};
  if (!mask) g.nodes.erase(g.nodes.begin() + 12);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  return g;
}

TEST(OptimizeTest, AttentionBecomesOneNode) {
  for (int64_t axis : {-1, 3}) {
    const Graph opt = OptimizeAndCompare(AttentionGraph(false, axis), 1e-5f);
    std::vector<std::string> ops;
    for (const Node& node : opt.nodes) ops.push_back(node.op_type);
    // The three projections became one MatMul with the weights side by
    // side, whose output the attention reads packed.
    ASSERT_EQ(ops, (std::vector<std::string>{kFusedMatMulOp, kAttentionOp}));
    const Node& qkv = opt.nodes[0];
    ASSERT_EQ(qkv.inputs.size(), 2u);  // No biases.
    EXPECT_EQ(opt.FindInitializer(qkv.inputs[1])->shape(), Shape({12, 36}));
    EXPECT_EQ(opt.FindValue(qkv.outputs[0])->shape, Shape({2, 5, 36}));
    const Node& attention = opt.nodes[1];
    EXPECT_EQ(attention.inputs, qkv.outputs);
    EXPECT_EQ(attention.outputs, std::vector<std::string>{"y"});
    EXPECT_EQ(attention.GetInt("num_heads", 0), 3);
    EXPECT_FLOAT_EQ(attention.GetFloat("scale", 0), 0.5f);
    for (const char* gone : {"q", "k", "v", "qs", "qh", "kh", "kt", "sc", "p",
                             "ot"}) {
      EXPECT_EQ(opt.FindValue(gone), nullptr) << gone;
    }
    // The Reshapes' shapes went with them.
    EXPECT_FALSE(opt.IsInitializer("split"));
  }
}

TEST(OptimizeTest, AttentionProjectionsPackWithTheirBiases) {
  // Q and V have biases, K none (zeros in the packed bias).
  Graph g = AttentionGraph(false, -1);
  AddInitializer(g, "bq", Random({12}, 70));
  AddInitializer(g, "bv", Random({12}, 71));
  for (const char* v : {"q0", "v0"}) AddValue(g, v, Shape({2, 5, 12}));
  g.nodes[0].outputs = {"q0"};
  g.nodes[2].outputs = {"v0"};
  g.nodes.insert(g.nodes.begin() + 3,
                 {MakeNode("Add", {"q0", "bq"}, {"q"}),
                  MakeNode("Add", {"bv", "v0"}, {"v"})});
  g.nodes[3].name = "add_q";
  g.nodes[4].name = "add_v";
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  ASSERT_EQ(opt.nodes.size(), 2u);
  ASSERT_EQ(opt.nodes[0].inputs.size(), 3u);
  const Tensor* b = opt.FindInitializer(opt.nodes[0].inputs[2]);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->shape(), Shape({36}));
  EXPECT_EQ(b->data<float>()[12], 0.0f);  // K's part.
  EXPECT_EQ(b->data<float>()[0], g.initializers.at("bq").data<float>()[0]);
  EXPECT_EQ(b->data<float>()[24], g.initializers.at("bv").data<float>()[0]);

  // K's projection is also a graph output: the three stay apart.
  Graph shared = AttentionGraph(false, -1);
  shared.outputs.push_back({"k", DType::kFloat32, Shape({2, 5, 12})});
  const Graph opt2 = OptimizeAndCompare(shared, 1e-5f);
  std::vector<std::string> ops;
  for (const Node& node : opt2.nodes) ops.push_back(node.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "MatMul", "MatMul",
                                           kAttentionOp}));
}

TEST(OptimizeTest, MaskedOrOtherAxisAttentionStaysAsItIs) {
  for (bool mask : {true, false}) {
    const Graph opt =
        OptimizeAndCompare(AttentionGraph(mask, mask ? -1 : 2), 1e-5f);
    for (const Node& node : opt.nodes) {
      EXPECT_NE(node.op_type, kAttentionOp) << "mask " << mask;
    }
  }
  // Before opset 13 a Softmax without "axis" flattens from axis 1: not the
  // attention's row softmax. With axis -1 it is.
  for (bool with_axis : {false, true}) {
    Graph g = AttentionGraph(false, -1);
    g.opset_version = 11;
    for (Node& node : g.nodes) {
      if (node.op_type == "Softmax" && !with_axis) {
        node.attributes.erase("axis");
      }
    }
    const Graph opt = OptimizeAndCompare(g, 1e-5f);
    int attention = 0;
    for (const Node& node : opt.nodes) attention += node.op_type == kAttentionOp;
    EXPECT_EQ(attention, with_axis ? 1 : 0) << "with_axis " << with_axis;
  }
}

TEST(OptimizeTest, ConsecutiveTransposesBecomeOne) {
  Graph g = NewGraph("x", Shape({2, 3, 4}), "y", Shape({4, 2, 3}));
  AddValue(g, "t", Shape({3, 4, 2}));
  g.nodes = {
      MakeNode("Transpose", {"x"}, {"t"},
               {{"perm", std::vector<int64_t>{1, 2, 0}}}),
      MakeNode("Transpose", {"t"}, {"y"},
               {{"perm", std::vector<int64_t>{1, 2, 0}}})};
  g.nodes[0].name = "t0";
  g.nodes[1].name = "t1";
  const Graph opt = OptimizeAndCompare(g, 0.0f);
  ASSERT_EQ(opt.nodes.size(), 1u);
  EXPECT_EQ(opt.nodes[0].GetInts("perm", {}),
            (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(opt.nodes[0].outputs, std::vector<std::string>{"y"});
}

// A ConvNeXt block's start: a depthwise Conv (channels last), then the
// model's own permute to NHWC for a LayerNorm over the channels. The
// region's reorder out of NHWC and that permute cancel: no Transpose is
// left between the Conv and the LayerNorm, only the one back to NCHW.
TEST(OptimizeTest, ReorderOutOfNhwcAndAModelsPermuteToNhwcCancel) {
  Graph g = NewGraph("x", Shape({1, 8, 5, 5}), "y", Shape({1, 8, 5, 5}));
  AddInitializer(g, "w", Random({8, 1, 3, 3}, 91));
  AddInitializer(g, "scale", Random({8}, 92));
  AddInitializer(g, "bias", Random({8}, 93));
  AddValue(g, "c", Shape({1, 8, 5, 5}));
  AddValue(g, "p", Shape({1, 5, 5, 8}));
  AddValue(g, "n", Shape({1, 5, 5, 8}));
  g.nodes = {
      MakeNode(
          "Conv", {"x", "w"}, {"c"},
          {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{8}}}),
      MakeNode("Transpose", {"c"}, {"p"},
               {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}),
      MakeNode("LayerNormalization", {"p", "scale", "bias"}, {"n"},
               {{"axis", int64_t{-1}}}),
      MakeNode("Transpose", {"n"}, {"y"},
               {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}),
  };
  NameNodes(&g);
  const Graph opt = OptimizeAndCompare(g, 1e-5f);
  std::vector<std::string> want = {"Transpose", kFusedConvOp,
                                   "LayerNormalization", "Transpose"};
  EXPECT_EQ(OpTypes(opt), want);
  // The LayerNorm reads the Conv's NHWC output itself.
  EXPECT_EQ(opt.nodes[2].inputs[0], opt.nodes[1].outputs[0]);
  EXPECT_EQ(opt.FindValue("p"), nullptr);
}

// A reorder out of NHWC merged into a model's own Transpose that does not
// cancel it (here H and W swapped) is one Transpose, named and counted as
// the model's.
TEST(OptimizeTest, AReorderMergedIntoAModelsTransposeIsTheModels) {
  Graph g = NewGraph("x", Shape({1, 4, 5, 6}), "y", Shape({1, 4, 6, 5}));
  AddInitializer(g, "w", Random({4, 4, 3, 3}, 98));
  AddValue(g, "c", Shape({1, 4, 5, 6}));
  g.nodes = {
      MakeNode("Conv", {"x", "w"}, {"c"},
               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      MakeNode("Transpose", {"c"}, {"y"},
               {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}),
  };
  NameNodes(&g);
  const Graph opt = OptimizeAndCompare(g, 1e-4f);
  std::vector<std::string> want = {"Transpose", kFusedConvOp, "Transpose"};
  ASSERT_EQ(OpTypes(opt), want);
  EXPECT_TRUE(IsLayoutReorder(opt.nodes[0]));
  EXPECT_FALSE(IsLayoutReorder(opt.nodes[2]));
  EXPECT_EQ(opt.nodes[2].name, "n1");
  // NHWC [1, 5, 6, 4] to the model's [1, 4, 6, 5] in one pass.
  EXPECT_EQ(opt.nodes[2].GetInts("perm"), (std::vector<int64_t>{0, 3, 2, 1}));
}

// Taps of a dilated Conv that read only padding at every output position
// go: DeepLabV3's ASPP (a 3x3 kernel dilated past the map: only the centre
// tap reads it) becomes a 1x1 Conv; a 5x5 kernel dilated 3 over a 4-high,
// 12-wide map keeps taps 1..3 along the height and all 5 along the width.
// The results are checked against the untrimmed graph.
TEST(OptimizeTest, DeadTapsOfDilatedConvsAreTrimmed) {
  Graph g = NewGraph("x", Shape({1, 4, 4, 12}), "y", Shape({1, 3, 4, 12}));
  AddInitializer(g, "w1", Random({4, 4, 3, 3}, 94));
  AddInitializer(g, "b1", Random({4}, 95));
  AddInitializer(g, "w2", Random({3, 4, 5, 5}, 96));
  AddValue(g, "a", Shape({1, 4, 4, 12}));
  AddValue(g, "r", Shape({1, 4, 4, 12}));
  g.nodes = {
      MakeNode("Conv", {"x", "w1", "b1"}, {"a"},
               {{"pads", std::vector<int64_t>{12, 12, 12, 12}},
                {"dilations", std::vector<int64_t>{12, 12}},
                {"kernel_shape", std::vector<int64_t>{3, 3}}}),
      MakeNode("Relu", {"a"}, {"r"}),
      MakeNode("Conv", {"r", "w2"}, {"y"},
               {{"pads", std::vector<int64_t>{6, 6, 6, 6}},
                {"dilations", std::vector<int64_t>{3, 3}}}),
  };
  NameNodes(&g);
  Graph trimmed = g;
  ASSERT_TRUE(TrimDeadConvTaps(&trimmed).ok());
  EXPECT_EQ(trimmed.nodes[0].GetInts("pads"),
            (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(trimmed.nodes[0].GetInts("kernel_shape"),
            (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(trimmed.FindInitializer(trimmed.nodes[0].inputs[1])->shape(),
            Shape({4, 4, 1, 1}));
  EXPECT_EQ(trimmed.nodes[2].GetInts("pads"),
            (std::vector<int64_t>{3, 6, 3, 6}));
  EXPECT_EQ(trimmed.FindInitializer(trimmed.nodes[2].inputs[1])->shape(),
            Shape({3, 4, 3, 5}));
  ExpectSameOutputs(g, trimmed, 1e-5f);
  // And through every pass.
  OptimizeAndCompare(g, 1e-4f);
}

TEST(OptimizeTest, AttentionScaleBecomesMatMulAlpha) {
  for (const char* op : {"Mul", "Div"}) {
    SCOPED_TRACE(op);
    Graph g = NewGraph("q", Shape({2, 4, 6, 8}), "y", Shape({2, 4, 6, 6}));
    g.inputs.push_back({"k", DType::kFloat32, Shape({2, 4, 8, 6})});
    AddValue(g, "k", Shape({2, 4, 8, 6}));
    AddValue(g, "s", Shape({2, 4, 6, 6}));
    AddInitializer(g, "c", Scalar(std::string(op) == "Mul" ? 0.125f : 8.0f));
    g.nodes = {MakeNode("MatMul", {"q", "k"}, {"s"}),
               MakeNode(op, {"s", "c"}, {"y"})};
    const Graph opt = OptimizeAndCompare(g, 1e-6f);
    ASSERT_EQ(opt.nodes.size(), 1u);
    EXPECT_EQ(opt.nodes[0].op_type, kFusedMatMulOp);
    EXPECT_FLOAT_EQ(opt.nodes[0].GetFloat("alpha", 1), 0.125f);
  }
  // c / x is no scaling of x.
  Graph g = NewGraph("a", Shape({3, 5}), "y", Shape({3, 4}));
  AddInitializer(g, "w", Random({5, 4}, 40));
  AddInitializer(g, "c", Scalar(2.0f));
  AddValue(g, "s", Shape({3, 4}));
  g.nodes = {MakeNode("MatMul", {"a", "w"}, {"s"}),
             MakeNode("Div", {"c", "s"}, {"y"})};
  EXPECT_EQ(OptimizeAndCompare(g, 1e-6f).nodes.size(), 2u);
}

TEST(OptimizeTest, FusedMatMulRefusesUnknownActivation) {
  Node node = MakeNode(kFusedMatMulOp, {"a", "b"}, {"y"},
                       {{"activation", std::string("Nope")}});
  absl::StatusOr<std::vector<Tensor>> out =
      RunKernel(CpuKernelRegistry(), node,
                {Random({2, 2}, 1), Random({2, 2}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

void AddTyped(Graph& g, const std::string& name, DType dtype, Shape shape) {
  g.values[name] = ValueInfo{name, dtype, std::move(shape)};
}

// Runs `g` and its optimised copy on a random input and checks that the
// outputs differ by at most `step` (one quantization step where rounding
// order differs); returns the optimised graph and the share of elements
// that are identical.
Graph CompareQuantized(const Graph& g, float step, double* identical) {
  Graph opt = g;
  absl::Status s = OptimizeGraphForCpu(&opt, CpuKernelRegistry());
  EXPECT_TRUE(s.ok()) << s;
  std::map<std::string, Tensor> feed;
  for (const ValueInfo& in : g.inputs) {
    feed[in.name] = Random(in.shape.dims(), 11);
  }
  const std::map<std::string, Tensor> want = Run(g, feed);
  const std::map<std::string, Tensor> got = Run(opt, feed);
  int64_t same = 0, total = 0;
  for (const auto& [name, w] : want) {
    const Tensor& t = got.at(name);
    EXPECT_EQ(t.shape(), w.shape()) << name;
    if (t.shape() != w.shape()) continue;
    for (int64_t i = 0; i < w.num_elements(); ++i, ++total) {
      const float a = w.data<float>()[i];
      const float b = t.data<float>()[i];
      same += a == b;
      if (std::fabs(a - b) > step) {
        ADD_FAILURE() << name << "[" << i << "]: " << a << " vs " << b;
        break;
      }
    }
  }
  *identical = total > 0 ? static_cast<double>(same) / total : 0;
  return opt;
}

Tensor Int8Weights(std::vector<int64_t> dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-127, 127);
  Shape shape(std::move(dims));
  std::vector<int8_t> v(shape.NumElements());
  for (int8_t& x : v) x = static_cast<int8_t>(dist(rng));
  return Tensor::FromVector(DType::kInt8, shape, v);
}

// x -> Q -> DQ -> Conv(DQ(w_q, per channel), DQ(b_i32)) -> Relu -> Q -> DQ
// -> MaxPool -> Q -> DQ -> y, as quantization tools write it.
TEST(OptimizeTest, QdqConvReluQuantizeBecomesOneInt8Conv) {
  const int64_t c = 8, m = 16;
  Graph g = NewGraph("x", Shape({1, c, 10, 10}), "y", Shape({1, m, 5, 5}));
  g.opset_version = 13;
  const float sx = 0.02f, sy = 0.03f;
  std::vector<float> sw(m);
  std::vector<int32_t> bias(m);
  std::vector<float> sb(m);
  for (int64_t i = 0; i < m; ++i) {
    sw[i] = 0.002f * (1 + i % 3);
    sb[i] = sx * sw[i];
    bias[i] = static_cast<int32_t>((i - 8) * 500);
  }
  AddInitializer(
      g, "sx",
      Tensor::FromVector(DType::kFloat32, Shape({}), std::vector<float>{sx}));
  AddInitializer(
      g, "zx",
      Tensor::FromVector(DType::kUInt8, Shape({}), std::vector<uint8_t>{128}));
  AddInitializer(g, "wq", Int8Weights({m, c, 3, 3}, 5));
  AddInitializer(g, "sw", Tensor::FromVector(DType::kFloat32, Shape({m}), sw));
  AddInitializer(g, "bq", Tensor::FromVector(DType::kInt32, Shape({m}), bias));
  AddInitializer(g, "sb", Tensor::FromVector(DType::kFloat32, Shape({m}), sb));
  AddInitializer(
      g, "sy",
      Tensor::FromVector(DType::kFloat32, Shape({}), std::vector<float>{sy}));
  AddInitializer(
      g, "zy",
      Tensor::FromVector(DType::kUInt8, Shape({}), std::vector<uint8_t>{0}));
  AddTyped(g, "xq", DType::kUInt8, Shape({1, c, 10, 10}));
  AddValue(g, "xd", Shape({1, c, 10, 10}));
  AddValue(g, "wd", Shape({m, c, 3, 3}));
  AddValue(g, "bd", Shape({m}));
  AddValue(g, "conv", Shape({1, m, 10, 10}));
  AddValue(g, "relu", Shape({1, m, 10, 10}));
  AddTyped(g, "yq", DType::kUInt8, Shape({1, m, 10, 10}));
  AddValue(g, "yd", Shape({1, m, 10, 10}));
  AddValue(g, "pool", Shape({1, m, 5, 5}));
  AddTyped(g, "pq", DType::kUInt8, Shape({1, m, 5, 5}));
  g.nodes = {MakeNode("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}),
             MakeNode("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}),
             MakeNode("DequantizeLinear", {"wq", "sw"}, {"wd"},
                      {{"axis", int64_t{0}}}),
             MakeNode("DequantizeLinear", {"bq", "sb"}, {"bd"},
                      {{"axis", int64_t{0}}}),
             MakeNode("Conv", {"xd", "wd", "bd"}, {"conv"},
                      {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             MakeNode("Relu", {"conv"}, {"relu"}),
             MakeNode("QuantizeLinear", {"relu", "sy", "zy"}, {"yq"}),
             MakeNode("DequantizeLinear", {"yq", "sy", "zy"}, {"yd"}),
             MakeNode("MaxPool", {"yd"}, {"pool"},
                      {{"kernel_shape", std::vector<int64_t>{2, 2}},
                       {"strides", std::vector<int64_t>{2, 2}}}),
             MakeNode("QuantizeLinear", {"pool", "sy", "zy"}, {"pq"}),
             MakeNode("DequantizeLinear", {"pq", "sy", "zy"}, {"y"})};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  double identical = 0;
  const Graph opt = CompareQuantized(g, sy * 1.001f, &identical);
  // Integer accumulation is exact where the float Conv rounds: the two
  // agree except where a value falls on the other side of a rounding
  // boundary.
  EXPECT_GT(identical, 0.97);
  std::vector<std::string> ops;
  for (const Node& n : opt.nodes) ops.push_back(n.op_type);
  // The uint8 region runs channels last, as float convs do: one Transpose
  // in (of uint8), one out (of the float result).
  EXPECT_EQ(ops, (std::vector<std::string>{
                     "QuantizeLinear", "Transpose", kQLinearFusedConvOp,
                     kChannelsLastMaxPoolOp, "DequantizeLinear", "Transpose"}));
  EXPECT_EQ(opt.nodes[2].GetString("activation", ""), "Relu");
  EXPECT_EQ(opt.nodes[2].GetInt("channels_last", 0), 1);
  EXPECT_EQ(opt.nodes[1].inputs[0], "xq");
}

// Float output (no QuantizeLinear after): Gemm with transB and a float
// bias, and MatMul on a 3-D input with per-column weight scales.
TEST(OptimizeTest, QdqGemmAndMatMulWithFloatOutput) {
  Graph g = NewGraph("x", Shape({2, 3, 32}), "y", Shape({6, 8}));
  g.opset_version = 13;
  AddInitializer(g, "sx",
                 Tensor::FromVector(DType::kFloat32, Shape({}),
                                    std::vector<float>{0.03f}));
  AddInitializer(
      g, "zx",
      Tensor::FromVector(DType::kInt8, Shape({}), std::vector<int8_t>{-3}));
  AddInitializer(g, "w1", Int8Weights({32, 16}, 6));
  std::vector<float> s1(16);
  for (int i = 0; i < 16; ++i) s1[i] = 0.004f + 0.001f * (i % 4);
  AddInitializer(g, "s1", Tensor::FromVector(DType::kFloat32, Shape({16}), s1));
  AddInitializer(g, "w2", Int8Weights({8, 16}, 7));  // [N, K]: transB.
  AddInitializer(g, "s2",
                 Tensor::FromVector(DType::kFloat32, Shape({}),
                                    std::vector<float>{0.005f}));
  AddInitializer(g, "b2", Random({8}, 8));
  AddInitializer(g, "shape",
                 Tensor::FromVector(DType::kInt64, Shape({2}),
                                    std::vector<int64_t>{6, 16}));
  AddTyped(g, "xq", DType::kInt8, Shape({2, 3, 32}));
  AddValue(g, "xd", Shape({2, 3, 32}));
  AddValue(g, "w1d", Shape({32, 16}));
  AddValue(g, "mm", Shape({2, 3, 16}));
  AddValue(g, "flat", Shape({6, 16}));
  AddTyped(g, "hq", DType::kInt8, Shape({6, 16}));
  AddValue(g, "hd", Shape({6, 16}));
  AddValue(g, "w2d", Shape({8, 16}));
  AddValue(g, "gemm", Shape({6, 8}));
  g.nodes = {
      MakeNode("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}),
      MakeNode("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}),
      MakeNode("DequantizeLinear", {"w1", "s1"}, {"w1d"}),  // axis 1.
      MakeNode("MatMul", {"xd", "w1d"}, {"mm"}),
      MakeNode("Reshape", {"mm", "shape"}, {"flat"}),
      MakeNode("QuantizeLinear", {"flat", "sx", "zx"}, {"hq"}),
      MakeNode("DequantizeLinear", {"hq", "sx", "zx"}, {"hd"}),
      MakeNode("DequantizeLinear", {"w2", "s2"}, {"w2d"}),
      MakeNode("Gemm", {"hd", "w2d", "b2"}, {"gemm"}, {{"transB", int64_t{1}}}),
      MakeNode("Relu", {"gemm"}, {"y"})};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  // The int8 products are exact where the float reference rounds its sums,
  // so the quantized hidden value `hq` may land one step (sx) apart; through
  // the Gemm that step weighs at most sx * 127 * s2 = 0.019 per element
  // (two such flips in a row are allowed for).
  double identical = 0;
  const Graph opt = CompareQuantized(g, 0.04f, &identical);
  std::vector<std::string> ops;
  for (const Node& n : opt.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{
                     "QuantizeLinear", kQLinearFusedMatMulOp, "Reshape",
                     "QuantizeLinear", kQLinearFusedMatMulOp}));
  EXPECT_EQ(opt.nodes[4].GetInt("transB", 0), 1);
  EXPECT_EQ(opt.nodes[4].GetString("activation", ""), "Relu");
}

// x -> Q -> DQ -> MaxPool -> Q -> DQ -> y with one scale `sx` throughout:
// the pool runs on uint8 only when the scale is positive (max commutes
// with an increasing dequantization; a negative scale makes it the min).
Graph QdqMaxPool(float sx) {
  Graph g = NewGraph("x", Shape({1, 2, 4, 4}), "y", Shape({1, 2, 2, 2}));
  g.opset_version = 13;
  AddInitializer(
      g, "sx",
      Tensor::FromVector(DType::kFloat32, Shape({}), std::vector<float>{sx}));
  AddInitializer(
      g, "zx",
      Tensor::FromVector(DType::kUInt8, Shape({}), std::vector<uint8_t>{128}));
  AddTyped(g, "xq", DType::kUInt8, Shape({1, 2, 4, 4}));
  AddValue(g, "xd", Shape({1, 2, 4, 4}));
  AddValue(g, "pool", Shape({1, 2, 2, 2}));
  AddTyped(g, "pq", DType::kUInt8, Shape({1, 2, 2, 2}));
  g.nodes = {MakeNode("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}),
             MakeNode("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}),
             MakeNode("MaxPool", {"xd"}, {"pool"},
                      {{"kernel_shape", std::vector<int64_t>{2, 2}},
                       {"strides", std::vector<int64_t>{2, 2}}}),
             MakeNode("QuantizeLinear", {"pool", "sx", "zx"}, {"pq"}),
             MakeNode("DequantizeLinear", {"pq", "sx", "zx"}, {"y"})};
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    g.nodes[i].name = "n" + std::to_string(i);
  }
  return g;
}

// Whether the optimised graph still dequantizes before its pool.
bool PoolsFloats(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.op_type.find("MaxPool") == std::string::npos) continue;
    const ValueInfo* in = g.FindValue(n.inputs[0]);
    return in != nullptr && in->dtype == DType::kFloat32;
  }
  ADD_FAILURE() << "no MaxPool left";
  return false;
}

TEST(OptimizeTest, QdqMaxPoolFoldsOnlyWithAPositiveScale) {
  double identical = 0;
  const Graph folded = CompareQuantized(QdqMaxPool(0.05f), 0.0f, &identical);
  EXPECT_FALSE(PoolsFloats(folded));
  for (float sx : {-0.05f, 0.0f, std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(sx);
    Graph opt = QdqMaxPool(sx);
    ASSERT_TRUE(OptimizeGraphForCpu(&opt, CpuKernelRegistry()).ok());
    EXPECT_TRUE(PoolsFloats(opt));
  }
  // With a negative scale the result is still the float graph's.
  CompareQuantized(QdqMaxPool(-0.05f), 0.0f, &identical);
}

}  // namespace
}  // namespace glint::cpu
