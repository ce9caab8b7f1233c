#include <cmath>
#include <string>
#include <vector>

#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::FloatNear;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::MaxRelativeError;
using ::testing::Pointwise;
using testing::RandomTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ScopedOmpThreads;
using testing::ToVector;

TEST(BatchNormTest, HandComputed) {
  // Channel 0: (x - 1) / sqrt(4) * 2 + 1 = x; channel 1: (x - 0) / 1 * 3 - 1.
  const Node node = MakeNode("BatchNormalization",
                             {"x", "scale", "b", "mean", "var"}, {"y"},
                             {{"epsilon", 0.0f}});
  const std::vector<Tensor> inputs = {
      MakeTensor<float>({1, 2, 2}, {1, 3, 0, 2}),
      MakeTensor<float>({2}, {2, 3}), MakeTensor<float>({2}, {1, -1}),
      MakeTensor<float>({2}, {1, 0}), MakeTensor<float>({2}, {4, 1})};
  const std::vector<float> want = {1, 3, -1, 5};
  RunKernelOptions constant;
  constant.constant_inputs = {1, 2, 3, 4};
  for (const RunKernelOptions& options : {RunKernelOptions(), constant}) {
    auto out = RunKernel(CpuKernelRegistry(), node, inputs, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(ToVector<float>((*out)[0]), Pointwise(FloatNear(1e-6), want));
  }
}

TEST(BatchNormTest, RandomMatchesFormulaWithEpsilon) {
  const Tensor x = RandomTensor({2, 3, 4, 5}, 1);
  const Tensor scale = RandomTensor({3}, 2), bias = RandomTensor({3}, 3),
               mean = RandomTensor({3}, 4), var = RandomTensor({3}, 5, 0, 2);
  const float eps = 1e-3f;
  Tensor want = x.Clone();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t c = (i / 20) % 3;
    want.data<float>()[i] =
        (x.data<float>()[i] - mean.data<float>()[c]) /
            std::sqrt(var.data<float>()[c] + eps) * scale.data<float>()[c] +
        bias.data<float>()[c];
  }
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("BatchNormalization",
                                {"x", "s", "b", "m", "v"}, {"y"},
                                {{"epsilon", eps}}),
                       {x, scale, bias, mean, var});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(MaxRelativeError((*out)[0], want), 1e-5);
}

TEST(BatchNormTest, Refusals) {
  const std::vector<Tensor> inputs = {
      RandomTensor({1, 2, 2}, 1), RandomTensor({2}, 2), RandomTensor({2}, 3),
      RandomTensor({2}, 4), RandomTensor({2}, 5, 0, 1)};
  // training_mode exists from opset 14 on.
  RunKernelOptions opset13;
  opset13.opset_version = 13;
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"},
                                {"y"}, {{"training_mode", int64_t{1}}}),
                       inputs, opset13);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("batchnormalization_node"));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"},
                           {"y", "running_mean"}),
                  inputs);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  // Parameters of the wrong length.
  std::vector<Tensor> bad = inputs;
  bad[3] = RandomTensor({3}, 4);
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"},
                           {"y"}),
                  bad);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BatchNormTest, TrainingModeUsesBatchStatistics) {
  // One channel over N = 2, plane 2: x = {1, 3, 5, 7}, mean 4, biased var
  // 5; y = (x - 4) / sqrt(5) * 2 + 1. Running: m * 0.8 + 4 * 0.2,
  // v * 0.8 + 5 * 0.2.
  const Node node = MakeNode(
      "BatchNormalization", {"x", "s", "b", "m", "v"},
      {"y", "running_mean", "running_var"},
      {{"training_mode", int64_t{1}}, {"epsilon", 0.0f}, {"momentum", 0.8f}});
  const std::vector<Tensor> inputs = {
      MakeTensor<float>({2, 1, 2}, {1, 3, 5, 7}), MakeTensor<float>({1}, {2}),
      MakeTensor<float>({1}, {1}), MakeTensor<float>({1}, {10}),
      MakeTensor<float>({1}, {20})};
  const float k = 2 / std::sqrt(5.0f);
  RunKernelOptions constant;
  constant.constant_inputs = {1, 2, 3, 4};
  for (const RunKernelOptions& options : {RunKernelOptions(), constant}) {
    auto out = RunKernel(CpuKernelRegistry(), node, inputs, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(ToVector<float>((*out)[0]),
                Pointwise(FloatNear(1e-5),
                          {1 - 3 * k, 1 - k, 1 + k, 1 + 3 * k}));
    EXPECT_THAT(ToVector<float>((*out)[1]), Pointwise(FloatNear(1e-5), {8.8f}));
    EXPECT_THAT(ToVector<float>((*out)[2]), Pointwise(FloatNear(1e-5), {17.0f}));
  }
  // Random data against numpy's formula; running outputs left out.
  const Tensor x = RandomTensor({3, 4, 5}, 7);
  const Tensor scale = RandomTensor({4}, 8), bias = RandomTensor({4}, 9),
               mean = RandomTensor({4}, 10), var = RandomTensor({4}, 11, 0, 2);
  Tensor want = x.Clone();
  for (int64_t c = 0; c < 4; ++c) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) sum += x.data<float>()[(i * 4 + c) * 5 + j];
    const double m = sum / 15;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        const double d = x.data<float>()[(i * 4 + c) * 5 + j] - m;
        sq += d * d;
      }
    const double v = sq / 15;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        float& y = want.data<float>()[(i * 4 + c) * 5 + j];
        y = static_cast<float>((y - m) / std::sqrt(v + 1e-5) *
                                   scale.data<float>()[c] +
                               bias.data<float>()[c]);
      }
  }
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"},
                                {"y", "", ""}, {{"training_mode", int64_t{1}}}),
                       {x, scale, bias, mean, var});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(MaxRelativeError((*out)[0], want), 1e-5);
  EXPECT_FALSE((*out)[1].valid());
}

// glint.ConcatBatchNormChannelsLast against Concat then
// glint.BatchNormChannelsLast [then Relu], with and without the Relu, on
// 1 to 3 kernel threads; and its refusals.
TEST(ConcatBatchNormTest, MatchesConcatThenBatchNorm) {
  const std::vector<int64_t> channels = {5, 32, 1, 19};
  std::vector<Tensor> xs;
  std::vector<std::string> names;
  int64_t c = 0;
  for (size_t i = 0; i < channels.size(); ++i) {
    xs.push_back(
        RandomTensor({2, 9, 11, channels[i]}, 70 + static_cast<uint32_t>(i)));
    names.push_back("x" + std::to_string(i));
    c += channels[i];
  }
  std::vector<Tensor> params = {RandomTensor({c}, 80), RandomTensor({c}, 81),
                                RandomTensor({c}, 82), RandomTensor({c}, 83)};
  for (int64_t k = 0; k < c; ++k) {
    params[3].data<float>()[k] = 0.5f + std::fabs(params[3].data<float>()[k]);
  }
  RunKernelOptions constant;
  constant.constant_inputs = {0, 1, 2, 3};
  RunKernelOptions bn_constant;
  bn_constant.constant_inputs = {1, 2, 3, 4};
  for (const char* activation : {"", "Relu"}) {
    auto cat = RunKernel(
        CpuKernelRegistry(),
        MakeNode("Concat", names, {"cat"}, {{"axis", int64_t{3}}}), xs);
    ASSERT_TRUE(cat.ok()) << cat.status();
    std::vector<Tensor> bn_inputs = {(*cat)[0]};
    bn_inputs.insert(bn_inputs.end(), params.begin(), params.end());
    auto want = RunKernel(
        CpuKernelRegistry(),
        MakeNode("glint.BatchNormChannelsLast",
                 {"cat", "scale", "b", "mean", "var"}, {"y"},
                 {{"epsilon", 1e-3f}, {"activation", std::string(activation)}}),
        bn_inputs, bn_constant);
    ASSERT_TRUE(want.ok()) << want.status();
    std::vector<std::string> fused_names = {"scale", "b", "mean", "var"};
    fused_names.insert(fused_names.end(), names.begin(), names.end());
    std::vector<Tensor> fused_inputs = params;
    fused_inputs.insert(fused_inputs.end(), xs.begin(), xs.end());
    const Node fused =
        MakeNode("glint.ConcatBatchNormChannelsLast", fused_names, {"y"},
                 {{"epsilon", 1e-3f}, {"activation", std::string(activation)}});
    for (int threads : {1, 2, 3}) {
      ScopedOmpThreads scoped(threads);
      auto got = RunKernel(CpuKernelRegistry(), fused, fused_inputs, constant);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ((*got)[0].shape(), Shape({2, 9, 11, c}));
      EXPECT_THAT(ToVector<float>((*got)[0]),
                  Pointwise(FloatNear(1e-5), ToVector<float>((*want)[0])))
          << "activation '" << activation << "', " << threads << " threads";
    }
  }
  // Parameters that are not constants, of the wrong channel count, and
  // inputs that differ off the channel axis.
  std::vector<Tensor> inputs = params;
  inputs.insert(inputs.end(), xs.begin(), xs.end());
  std::vector<std::string> all = {"scale", "b", "mean", "var"};
  all.insert(all.end(), names.begin(), names.end());
  const Node fused = MakeNode("glint.ConcatBatchNormChannelsLast", all, {"y"});
  auto out = RunKernel(CpuKernelRegistry(), fused, inputs);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("constant"));
  std::vector<Tensor> fewer = inputs;
  fewer.pop_back();
  out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("glint.ConcatBatchNormChannelsLast",
               std::vector<std::string>(all.begin(), all.end() - 1), {"y"}),
      fewer, constant);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("channels"));
  std::vector<Tensor> mismatched = inputs;
  mismatched.back() = RandomTensor({2, 9, 10, channels.back()}, 90);
  out = RunKernel(CpuKernelRegistry(), fused, mismatched, constant);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("differ off the channel axis"));
}

TEST(DropoutTest, TrainingModeOnlyWithRatioZero) {
  const Tensor x = RandomTensor({3, 4}, 1);
  const Node node = MakeNode("Dropout", {"x", "r", "t"}, {"y", "mask"});
  const Tensor yes = Tensor::FromVector(DType::kBool, Shape({}),
                                        std::vector<uint8_t>{1});
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32, DType::kBool};
  // Ratio 0: the output is the input, every element kept; from run-time
  // inputs and from constants alike.
  for (std::vector<int> constants : {std::vector<int>{}, {1, 2}}) {
    options.constant_inputs = constants;
    auto out = RunKernel(CpuKernelRegistry(), node,
                         {x, MakeTensor<float>({}, {0.0f}), yes}, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(ToVector<float>((*out)[0]), ToVector<float>(x));
    EXPECT_EQ(ToVector<uint8_t>((*out)[1]), std::vector<uint8_t>(12, 1));
  }
  // Any other ratio would be random: refused at build time when constant,
  // at run time otherwise, naming the node.
  for (std::vector<int> constants : {std::vector<int>{}, {1, 2}}) {
    options.constant_inputs = constants;
    auto out = RunKernel(CpuKernelRegistry(), node,
                         {x, MakeTensor<float>({}, {0.25f}), yes}, options);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(out.status().message()),
                HasSubstr("dropout_node"));
  }
  // No ratio: ONNX's default 0.5.
  options.constant_inputs = {};
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Dropout", {"x", "", "t"}, {"y"}),
                       {x, Tensor(), yes}, options);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("0.5"));
}

// numpy-style reference: softmax of `x` viewed as [outer, n, inner] along n.
std::vector<float> NaiveSoftmax(const Tensor& x, int64_t outer, int64_t n,
                                int64_t inner) {
  std::vector<float> y(x.num_elements());
  const float* p = x.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(p[(o * n + k) * inner + i]);
      for (int64_t k = 0; k < n; ++k) {
        y[(o * n + k) * inner + i] =
            static_cast<float>(std::exp(p[(o * n + k) * inner + i]) / sum);
      }
    }
  return y;
}

TEST(SoftmaxTest, OpsetSemantics) {
  const Tensor x = RandomTensor({2, 3, 4}, 7, -3, 3);
  const Node axis1 = MakeNode("Softmax", {"x"}, {"y"}, {{"axis", int64_t{1}}});
  const Node no_axis = MakeNode("Softmax", {"x"}, {"y"});
  RunKernelOptions v11;
  v11.opset_version = 11;
  RunKernelOptions v13;
  v13.opset_version = 13;
  struct Case {
    const Node* node;
    RunKernelOptions options;
    int64_t outer, n, inner;
  };
  const Case cases[] = {
      {&axis1, v11, 2, 12, 1},   // Coerced to [2, 12].
      {&axis1, v13, 2, 3, 4},    // Along axis 1 only.
      {&no_axis, v11, 2, 12, 1}, // Default axis 1.
      {&no_axis, v13, 6, 4, 1},  // Default axis -1.
  };
  for (const Case& c : cases) {
    auto out = RunKernel(CpuKernelRegistry(), *c.node, {x}, c.options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(ToVector<float>((*out)[0]),
                Pointwise(FloatNear(1e-6), NaiveSoftmax(x, c.outer, c.n, c.inner)))
        << "opset " << c.options.opset_version;
  }
}

TEST(SoftmaxTest, LargeValuesAndNegativeAxis) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Softmax", {"x"}, {"y"}, {{"axis", int64_t{-2}}}),
                       {MakeTensor<float>({2, 2}, {1000, 0, 1000, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]),
              Pointwise(FloatNear(1e-6), std::vector<float>{0.5, 0.5, 0.5, 0.5}));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Softmax", {"x"}, {"y"}, {{"axis", int64_t{2}}}),
                  {MakeTensor<float>({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("softmax_node"));
}

// float32 takes fast paths (oneDNN's softmax, a row-parallel LayerNorm);
// float64 takes the reference loops. Both must agree.
Tensor AsDouble(const Tensor& f) {
  std::vector<double> v(f.data<float>(), f.data<float>() + f.num_elements());
  return Tensor::FromVector(DType::kFloat64, f.shape(), v);
}

void ExpectFloatPathMatchesDouble(const Node& node,
                                  const std::vector<Tensor>& inputs,
                                  int64_t opset, double tolerance) {
  RunKernelOptions options;
  options.opset_version = opset;
  options.runs = 4;
  options.threads = 2;
  std::vector<Tensor> doubles;
  for (const Tensor& t : inputs) doubles.push_back(AsDouble(t));
  auto f = RunKernel(CpuKernelRegistry(), node, inputs, options);
  auto d = RunKernel(CpuKernelRegistry(), node, doubles, options);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(d.ok()) << d.status();
  const Tensor& a = (*f)[0];
  const Tensor& b = (*d)[0];
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double want = b.data<double>()[i];
    ASSERT_NEAR(a.data<float>()[i], want, tolerance * (1 + std::fabs(want)))
        << node.op_type << " element " << i;
  }
}

TEST(SoftmaxTest, Float32MatchesReferenceOnEveryAxisForm) {
  const Tensor x = RandomTensor({3, 37, 41}, 21, -8, 8);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t axis : {0, 1, -1}) {
      SCOPED_TRACE(::testing::Message() << op << " axis " << axis);
      const Node node = MakeNode(op, {"x"}, {"y"}, {{"axis", axis}});
      ExpectFloatPathMatchesDouble(node, {x}, 13, 1e-5);  // One axis.
      ExpectFloatPathMatchesDouble(node, {x}, 11, 1e-5);  // Coerced to 2-D.
    }
  }
}

TEST(LayerNormTest, Float32FastPathMatchesReference) {
  const Tensor x = RandomTensor({2, 64, 300}, 22, -3, 5);
  const Tensor scale = RandomTensor({300}, 23);
  const Tensor bias = RandomTensor({300}, 24);
  const Node with_bias = MakeNode("LayerNormalization", {"x", "s", "b"}, {"y"},
                                  {{"axis", int64_t{-1}}});
  ExpectFloatPathMatchesDouble(with_bias, {x, scale, bias}, 17, 1e-5);
  const Node no_bias = MakeNode("LayerNormalization", {"x", "s"}, {"y"},
                                {{"axis", int64_t{2}}, {"epsilon", 0.1f}});
  ExpectFloatPathMatchesDouble(no_bias, {x, scale}, 17, 1e-5);
  // Normalising the last two axes: scale spans 64 x 300.
  const Node two_axes = MakeNode("LayerNormalization", {"x", "s"}, {"y"},
                                 {{"axis", int64_t{1}}});
  ExpectFloatPathMatchesDouble(two_axes, {x, RandomTensor({64, 300}, 25)},
                               17, 1e-5);
}

}  // namespace
}  // namespace glint::cpu
