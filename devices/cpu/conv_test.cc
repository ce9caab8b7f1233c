#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/kernel.h"
#include "devices/cpu/isa.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::ExpectBf16Result;
using testing::MaxRelativeError;
using testing::RandomTensor;
using testing::RoundToBFloat16;
using testing::RunKernel;
using testing::RunKernelOptions;

constexpr double kTolerance = 1e-4;

// Direct convolution by definition for 1 to 3 spatial axes, with explicit
// begin/end padding; shorter ranks are handled as 3-D with leading 1s.
Tensor NaiveConv(const Tensor& x, const Tensor& w, const Tensor* b,
                 int64_t group, std::vector<int64_t> strides,
                 std::vector<int64_t> dilations, std::vector<int64_t> pads) {
  const int sd = x.shape().rank() - 2;
  const int lead = 3 - sd;
  std::vector<int64_t> in(3, 1), k(3, 1), s(3, 1), d(3, 1), pb(3, 0), out(3, 1);
  for (int i = 0; i < sd; ++i) {
    in[lead + i] = x.shape().dim(2 + i);
    k[lead + i] = w.shape().dim(2 + i);
    s[lead + i] = strides[i];
    d[lead + i] = dilations[i];
    pb[lead + i] = pads[i];
    const int64_t ek = (k[lead + i] - 1) * d[lead + i] + 1;
    out[lead + i] = (in[lead + i] + pads[i] + pads[sd + i] - ek) / s[lead + i] + 1;
  }
  const int64_t n = x.shape().dim(0), c = x.shape().dim(1), m = w.shape().dim(0);
  const int64_t cg = c / group, mg = m / group;
  std::vector<int64_t> out_dims = {n, m};
  for (int i = 0; i < sd; ++i) out_dims.push_back(out[lead + i]);
  Tensor y = *Tensor::Create(DType::kFloat32, Shape(out_dims));
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  float* py = y.data<float>();
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t mi = 0; mi < m; ++mi) {
      const int64_t g = mi / mg;
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = b != nullptr ? b->data<float>()[mi] : 0.0;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                    const int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                    const int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] ||
                        i2 < 0 || i2 >= in[2])
                      continue;
                    const int64_t xc = g * cg + ci;
                    acc += px[(((ni * c + xc) * in[0] + i0) * in[1] + i1) *
                                  in[2] + i2] *
                           pw[(((mi * cg + ci) * k[0] + k0) * k[1] + k1) *
                                  k[2] + k2];
                  }
            py[(((ni * m + mi) * out[0] + o0) * out[1] + o1) * out[2] + o2] =
                static_cast<float>(acc);
          }
    }
  return y;
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;
  int64_t group;
  std::vector<int64_t> strides, dilations, pads;
  bool bias;
  std::string auto_pad;        // Empty: NOTSET with `pads`.
  std::vector<int64_t> expected_pads;  // What auto_pad must resolve to.
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesNaiveReference) {
  const ConvCase& p = GetParam();
  const Tensor x = RandomTensor(p.x, 21);
  const Tensor w = RandomTensor(p.w, 22);
  const Tensor b = RandomTensor({p.w[0]}, 23);
  std::map<std::string, Attribute> attrs = {{"group", p.group},
                                            {"strides", p.strides},
                                            {"dilations", p.dilations}};
  if (p.auto_pad.empty()) {
    attrs["pads"] = p.pads;
  } else {
    attrs["auto_pad"] = p.auto_pad;
  }
  std::vector<std::string> names = {"x", "w"};
  std::vector<Tensor> inputs = {x, w};
  if (p.bias) {
    names.push_back("b");
    inputs.push_back(b);
  }
  const Node node = MakeNode("Conv", names, {"y"}, attrs);
  const Tensor want =
      NaiveConv(x, w, p.bias ? &b : nullptr, p.group, p.strides, p.dilations,
                p.auto_pad.empty() ? p.pads : p.expected_pads);
  std::vector<RunKernelOptions> variants(4);
  variants[1].constant_inputs = {1, 2};  // Packed weights.
  variants[2].hide_input_shapes = true;  // Primitive made at run time.
  variants[3].constant_inputs = {1};
  variants[3].threads = 3;
  variants[3].runs = 2;
  for (const RunKernelOptions& options : variants) {
    auto out = RunKernel(CpuKernelRegistry(), node, inputs, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), want.shape());
    EXPECT_LT(MaxRelativeError((*out)[0], want), kTolerance);
  }

  // glint.FusedConv with an addend (a residual input, laid out as Y) and
  // Relu after it: Relu(conv + Z), the primitive's dst layout whatever
  // oneDNN picks.
  Node fused = node;
  fused.op_type = "glint.FusedConv";
  fused.attributes["activation"] = std::string("Relu");
  fused.inputs.resize(3);
  fused.inputs.push_back("z");
  inputs.resize(3);
  inputs.push_back(RandomTensor(want.shape().dims(), 24));
  Tensor want_fused = want;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const float v = want.data<float>()[i] + inputs[3].data<float>()[i];
    want_fused.data<float>()[i] = v > 0 ? v : 0;
  }
  for (RunKernelOptions options : variants) {
    if (!p.bias) {
      options.constant_inputs.erase(
          std::remove(options.constant_inputs.begin(),
                      options.constant_inputs.end(), 2),
          options.constant_inputs.end());
    }
    auto out = RunKernel(CpuKernelRegistry(), fused, inputs, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LT(MaxRelativeError((*out)[0], want_fused), kTolerance);
  }
  // Z must have Y's shape.
  inputs[3] = RandomTensor({1}, 25);
  auto out = RunKernel(CpuKernelRegistry(), fused, inputs, variants[0]);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("addend of shape"));
}

INSTANTIATE_TEST_SUITE_P(
    Geometry, ConvTest,
    ::testing::Values(
        ConvCase{"Plain", {1, 3, 7, 7}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1},
                 {0, 0, 0, 0}, false},
        ConvCase{"BiasPadded", {2, 3, 6, 5}, {5, 3, 3, 3}, 1, {1, 1}, {1, 1},
                 {1, 1, 1, 1}, true},
        ConvCase{"StridedAsymmetricPads", {1, 2, 9, 8}, {3, 2, 3, 2}, 1,
                 {2, 3}, {1, 1}, {1, 0, 2, 1}, true},
        ConvCase{"Dilated", {1, 2, 10, 10}, {2, 2, 3, 3}, 1, {1, 1}, {2, 3},
                 {2, 1, 0, 3}, true},
        ConvCase{"Grouped", {2, 6, 7, 6}, {4, 3, 3, 3}, 2, {1, 2}, {1, 1},
                 {1, 1, 1, 1}, true},
        ConvCase{"Depthwise", {1, 8, 9, 9}, {8, 1, 3, 3}, 8, {2, 2}, {1, 1},
                 {1, 1, 1, 1}, true},
        ConvCase{"ManyChannels", {1, 32, 10, 10}, {48, 32, 3, 3}, 1, {1, 1},
                 {1, 1}, {1, 1, 1, 1}, true},
        ConvCase{"Pointwise", {2, 16, 5, 5}, {24, 16, 1, 1}, 1, {1, 1},
                 {1, 1}, {0, 0, 0, 0}, true},
        ConvCase{"SameUpper", {1, 2, 7, 8}, {3, 2, 4, 3}, 1, {2, 3}, {1, 1},
                 {}, true, "SAME_UPPER", {1, 0, 2, 1}},
        ConvCase{"SameLower", {1, 2, 7, 8}, {3, 2, 4, 3}, 1, {2, 3}, {1, 1},
                 {}, true, "SAME_LOWER", {2, 1, 1, 0}},
        ConvCase{"Valid", {1, 2, 7, 8}, {3, 2, 4, 3}, 1, {2, 3}, {1, 1}, {},
                 false, "VALID", {0, 0, 0, 0}},
        ConvCase{"OneD", {2, 3, 11}, {4, 3, 3}, 1, {2}, {2}, {1, 2}, true},
        ConvCase{"ThreeD", {1, 2, 5, 6, 4}, {3, 2, 2, 3, 2}, 1, {1, 2, 1},
                 {1, 1, 2}, {1, 0, 1, 0, 1, 1}, true},
        ConvCase{"GroupedThreeD", {1, 4, 4, 4, 4}, {4, 2, 3, 3, 3}, 2,
                 {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, false}),
    [](const ::testing::TestParamInfo<ConvCase>& info) {
      return info.param.name;
    });

// ONNX's test_basic_conv_with_padding: 5x5 ramp, 3x3 ones, pads 1.
TEST(ConvTest, OnnxBasicConvWithPadding) {
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[i] = static_cast<float>(i);
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Conv", {"x", "w"}, {"y"},
               {{"kernel_shape", std::vector<int64_t>{3, 3}},
                {"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
      {MakeTensor<float>({1, 1, 5, 5}, x),
       MakeTensor<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(testing::ToVector<float>((*out)[0]),
              ElementsAreArray({12.f,  21.f,  27.f,  33.f,  24.f,  33.f,  54.f,
                                63.f,  72.f,  51.f,  63.f,  99.f,  108.f, 117.f,
                                81.f,  93.f,  144.f, 153.f, 162.f, 111.f, 72.f,
                                111.f, 117.f, 123.f, 84.f}));
}

TEST(ConvTest, Errors) {
  const Node node = MakeNode("Conv", {"x", "w"}, {"y"});
  // Channels disagree.
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {RandomTensor({1, 3, 5, 5}, 1),
                        RandomTensor({2, 2, 3, 3}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("node 'conv_node' (Conv)"));
  // Kernel larger than the padded input.
  out = RunKernel(CpuKernelRegistry(), node,
                  {RandomTensor({1, 1, 2, 2}, 1), RandomTensor({1, 1, 3, 3}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Bias of the wrong size.
  out = RunKernel(CpuKernelRegistry(), MakeNode("Conv", {"x", "w", "b"}, {"y"}),
                  {RandomTensor({1, 1, 4, 4}, 1), RandomTensor({2, 1, 3, 3}, 2),
                   RandomTensor({3}, 3)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Bad attribute values are refused at build time.
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Conv", {"x", "w"}, {"y"},
                           {{"strides", std::vector<int64_t>{1}}}),
                  {RandomTensor({1, 1, 4, 4}, 1), RandomTensor({1, 1, 3, 3}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Conv", {"x", "w"}, {"y"},
                           {{"auto_pad", std::string("SAME")}}),
                  {RandomTensor({1, 1, 4, 4}, 1), RandomTensor({1, 1, 3, 3}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // float64 is not supported.
  out = RunKernel(CpuKernelRegistry(), node,
                  {MakeTensor<double>({1, 1, 1, 1}, {1}),
                   MakeTensor<double>({1, 1, 1, 1}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("float64"));
  // Four spatial axes: beyond oneDNN.
  out = RunKernel(CpuKernelRegistry(), node,
                  {RandomTensor({1, 1, 2, 2, 2, 2}, 1),
                   RandomTensor({1, 1, 1, 1, 1, 1}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ConvTest, RuntimeShapeChangeBuildsNewPrimitive) {
  // Declared [1, 2, 6, 6] at build; run with a batch of 3.
  const Node node = MakeNode("Conv", {"x", "w"}, {"y"},
                             {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  const Tensor w = RandomTensor({3, 2, 3, 3}, 2);
  const Tensor x1 = RandomTensor({1, 2, 6, 6}, 1);
  const Tensor x3 = RandomTensor({3, 2, 6, 6}, 3);
  KernelSpec spec = testing::MakeSpec(node, {x1, w}, {});
  spec.constant_inputs[1] = &w;
  auto kernel = (*CpuKernelRegistry().Find("Conv"))(spec);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  for (const Tensor& x : {x1, x3, x1}) {
    testing::TestKernelContext ctx({x, w}, {DType::kFloat32});
    ASSERT_TRUE((*kernel)->Compute(ctx).ok());
    EXPECT_LT(MaxRelativeError(ctx.output(0),
                               NaiveConv(x, w, nullptr, 1, {1, 1}, {1, 1},
                                         {1, 1, 1, 1})),
              kTolerance);
  }
}

// --- bf16 precision ---------------------------------------------------------

Tensor Abs(const Tensor& t) {
  Tensor r = *Tensor::Create(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    r.data<float>()[i] = std::fabs(t.data<float>()[i]);
  }
  return r;
}

// [N, C, H, W] -> [N, H, W, C].
Tensor ToNhwc(const Tensor& t) {
  const int64_t n = t.shape().dim(0), c = t.shape().dim(1),
                h = t.shape().dim(2), w = t.shape().dim(3);
  Tensor r = *Tensor::Create(DType::kFloat32, Shape({n, h, w, c}));
  for (int64_t a = 0; a < n; ++a)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          r.data<float>()[((a * h + y) * w + x) * c + ci] =
              t.data<float>()[((a * c + ci) * h + y) * w + x];
        }
  return r;
}

TEST(ConvTest, Bf16PrecisionRoundsOperandsAndAccumulatesInFloat32) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t group;
    bool constant_w;
  };
  for (const Case& p : {Case{{2, 16, 10, 10}, {32, 16, 3, 3}, 1, true},
                        Case{{2, 16, 10, 10}, {32, 16, 3, 3}, 1, false},
                        Case{{1, 32, 9, 9}, {32, 8, 3, 3}, 4, true},
                        Case{{1, 8, 12}, {16, 8, 5}, 1, true}}) {  // 1-D
    SCOPED_TRACE(Shape(p.x).ToString() + " * " + Shape(p.w).ToString());
    const Tensor x = RandomTensor(p.x, 51);
    const Tensor w = RandomTensor(p.w, 52);
    const Tensor b = RandomTensor({p.w[0]}, 53);
    const int sd = static_cast<int>(p.x.size()) - 2;
    const std::vector<int64_t> ones(sd, 1), pads(2 * sd, 1);
    const Node node = MakeNode("Conv", {"x", "w", "b"}, {"y"},
                               {{"group", p.group},
                                {"strides", ones},
                                {"dilations", ones},
                                {"pads", pads}});
    RunKernelOptions options;
    if (p.constant_w) options.constant_inputs = {1, 2};
    RunKernelOptions bf16 = options;
    bf16.precision = Precision::kBFloat16;
    auto got = RunKernel(CpuKernelRegistry(), node, {x, w, b}, bf16);
    ASSERT_TRUE(got.ok()) << got.status();
    auto f32 = RunKernel(CpuKernelRegistry(), node, {x, w, b}, options);
    ASSERT_TRUE(f32.ok()) << f32.status();
    ExpectBf16Result(
        (*got)[0],
        NaiveConv(RoundToBFloat16(x), RoundToBFloat16(w), &b, p.group, ones,
                  ones, pads),
        NaiveConv(x, w, &b, p.group, ones, ones, pads),
        NaiveConv(Abs(x), Abs(w), nullptr, p.group, ones, ones, pads),
        (*f32)[0]);
  }

  // glint.FusedConv channels last: Relu(conv + bias + Z), X, Z and Y NHWC.
  const Tensor x = RandomTensor({2, 24, 8, 8}, 54);
  const Tensor w = RandomTensor({16, 24, 3, 3}, 55);
  const Tensor b = RandomTensor({16}, 56);
  const Tensor z = RandomTensor({2, 8, 8, 16}, 57);
  const std::vector<int64_t> ones = {1, 1}, pads = {1, 1, 1, 1};
  auto fuse = [&](const Tensor& nchw) {
    Tensor y = ToNhwc(nchw);
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      const float v = y.data<float>()[i] + z.data<float>()[i];
      y.data<float>()[i] = v > 0 ? v : 0;
    }
    return y;
  };
  const Node fused = MakeNode("glint.FusedConv", {"x", "w", "b", "z"}, {"y"},
                              {{"strides", ones},
                               {"dilations", ones},
                               {"pads", pads},
                               {"channels_last", int64_t{1}},
                               {"activation", std::string("Relu")}});
  RunKernelOptions options;
  options.constant_inputs = {1, 2};
  RunKernelOptions bf16 = options;
  bf16.precision = Precision::kBFloat16;
  const std::vector<Tensor> inputs = {ToNhwc(x), w, b, z};
  auto got = RunKernel(CpuKernelRegistry(), fused, inputs, bf16);
  ASSERT_TRUE(got.ok()) << got.status();
  auto f32 = RunKernel(CpuKernelRegistry(), fused, inputs, options);
  ASSERT_TRUE(f32.ok()) << f32.status();
  ExpectBf16Result(
      (*got)[0],
      fuse(NaiveConv(RoundToBFloat16(x), RoundToBFloat16(w), &b, 1, ones,
                     ones, pads)),
      fuse(NaiveConv(x, w, &b, 1, ones, ones, pads)),
      ToNhwc(NaiveConv(Abs(x), Abs(w), nullptr, 1, ones, ones, pads)),
      (*f32)[0]);
}

}  // namespace
}  // namespace glint::cpu
