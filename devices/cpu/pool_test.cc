#include <cmath>
#include <limits>
#include <vector>

#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/cpu_rewrites.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::MaxRelativeError;
using testing::RandomTensor;
using testing::RunKernel;
using testing::ToVector;

using Ints = std::vector<int64_t>;

// 2-D pooling by definition over an explicitly padded input (padding cells
// are NaN and skipped unless count_include_pad), with output sizes given.
Tensor NaivePool2D(const Tensor& x, bool max, Ints k, Ints s, Ints d,
                   Ints pads, Ints out, bool count_include_pad) {
  const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
  const int64_t h = x.shape().dim(2), w = x.shape().dim(3);
  Tensor y = *Tensor::Create(DType::kFloat32, Shape({n, c, out[0], out[1]}));
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t oh = 0; oh < out[0]; ++oh)
      for (int64_t ow = 0; ow < out[1]; ++ow) {
        double acc = max ? -INFINITY : 0;
        int64_t count = 0;
        for (int64_t kh = 0; kh < k[0]; ++kh)
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            const int64_t ih = oh * s[0] - pads[0] + kh * d[0];
            const int64_t iw = ow * s[1] - pads[1] + kw * d[1];
            const bool inside = ih >= 0 && ih < h && iw >= 0 && iw < w;
            const bool in_padded = ih >= -pads[0] && ih < h + pads[2] &&
                                   iw >= -pads[1] && iw < w + pads[3];
            if (inside) {
              const float v = x.data<float>()[(p * h + ih) * w + iw];
              acc = max ? std::max<double>(acc, v) : acc + v;
            }
            if (inside || (count_include_pad && in_padded)) ++count;
          }
        y.data<float>()[(p * out[0] + oh) * out[1] + ow] =
            static_cast<float>(max ? acc : acc / count);
      }
  return y;
}

struct PoolCase {
  std::string name;
  Ints x, k, s, d, pads;
  bool ceil;
  bool count_include_pad;
  Ints out;  // Expected spatial output.
};

class PoolTest : public ::testing::TestWithParam<PoolCase> {};

// MaxPool takes dilations, AveragePool count_include_pad.
std::map<std::string, Attribute> PoolAttributes(const PoolCase& p, bool max) {
  std::map<std::string, Attribute> attrs = {{"kernel_shape", p.k},
                                            {"strides", p.s},
                                            {"pads", p.pads},
                                            {"ceil_mode", int64_t{p.ceil}}};
  if (max) {
    attrs["dilations"] = p.d;
  } else {
    attrs["count_include_pad"] = int64_t{p.count_include_pad};
  }
  return attrs;
}

TEST_P(PoolTest, MaxAndAverageMatchNaiveReference) {
  const PoolCase& p = GetParam();
  const Tensor x = RandomTensor(p.x, 31);
  for (bool max : {true, false}) {
    if (!max && p.d != Ints{1, 1}) continue;
    const std::map<std::string, Attribute> attrs = PoolAttributes(p, max);
    const Node node =
        MakeNode(max ? "MaxPool" : "AveragePool", {"x"}, {"y"}, attrs);
    auto out = RunKernel(CpuKernelRegistry(), node, {x});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor want = NaivePool2D(x, max, p.k, p.s, p.d, p.pads, p.out,
                                    p.count_include_pad);
    EXPECT_EQ((*out)[0].shape().ToString(), want.shape().ToString())
        << node.op_type;
    EXPECT_LT(MaxRelativeError((*out)[0], want), 1e-5) << node.op_type;
  }
}

// [N, C, H, W] -> [N, H, W, C].
Tensor ToChannelsLast(const Tensor& x) {
  const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
  const int64_t hw = x.shape().dim(2) * x.shape().dim(3);
  Tensor y = *Tensor::Create(
      DType::kFloat32,
      Shape({n, x.shape().dim(2), x.shape().dim(3), c}));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < hw; ++i) {
        y.data<float>()[(b * hw + i) * c + ch] =
            x.data<float>()[(b * c + ch) * hw + i];
      }
  return y;
}

// The channels-last forms the optimiser writes (float32 MaxPool runs on
// oneDNN's pooling where it can, the rest on loops) give the same values.
TEST_P(PoolTest, ChannelsLastFormsMatchNaiveReference) {
  const PoolCase& p = GetParam();
  const Tensor x = RandomTensor(p.x, 37);
  for (bool max : {true, false}) {
    if (!max && p.d != Ints{1, 1}) continue;
    const std::map<std::string, Attribute> attrs = PoolAttributes(p, max);
    const Node node = MakeNode(
        max ? kChannelsLastMaxPoolOp : kChannelsLastAveragePoolOp, {"x"},
        {"y"}, attrs);
    auto out = RunKernel(CpuKernelRegistry(), node, {ToChannelsLast(x)});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor want = ToChannelsLast(NaivePool2D(
        x, max, p.k, p.s, p.d, p.pads, p.out, p.count_include_pad));
    EXPECT_EQ((*out)[0].shape().ToString(), want.shape().ToString())
        << node.op_type;
    EXPECT_LT(MaxRelativeError((*out)[0], want), 1e-5) << node.op_type;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometry, PoolTest,
    ::testing::Values(
        PoolCase{"Plain", {1, 2, 6, 6}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0},
                 false, false, {3, 3}},
        PoolCase{"Padded", {2, 3, 5, 7}, {3, 3}, {1, 2}, {1, 1},
                 {1, 1, 1, 1}, false, false, {5, 4}},
        PoolCase{"PaddedIncludePad", {2, 3, 5, 7}, {3, 3}, {1, 2}, {1, 1},
                 {1, 1, 1, 1}, false, true, {5, 4}},
        PoolCase{"AsymmetricPads", {1, 1, 6, 5}, {3, 2}, {2, 2}, {1, 1},
                 {2, 0, 1, 1}, false, true, {4, 3}},
        PoolCase{"Ceil", {1, 2, 6, 6}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0},
                 true, false, {3, 3}},
        // The window that would start in the end padding is dropped:
        // (5 + 2 - 3) / 3 rounded up + 1 = 3, but window 2 starts at 6 >= 5.
        PoolCase{"CeilDropsLastWindow", {1, 3, 5, 5}, {3, 3}, {3, 3}, {1, 1},
                 {0, 0, 2, 2}, true, false, {2, 2}},
        PoolCase{"Dilated", {1, 2, 8, 9}, {2, 3}, {1, 2}, {2, 2},
                 {1, 0, 1, 2}, false, false, {8, 4}},
        // ResNet's stem pool: many channels, rows split across threads.
        PoolCase{"ResNetStem", {2, 64, 28, 27}, {3, 3}, {2, 2}, {1, 1},
                 {1, 1, 1, 1}, false, false, {14, 14}},
        // ceil_mode adds a window: floor gives 13.
        PoolCase{"ResNetStemCeil", {1, 48, 28, 28}, {3, 3}, {2, 2}, {1, 1},
                 {0, 0, 0, 0}, true, false, {14, 14}}),
    [](const ::testing::TestParamInfo<PoolCase>& info) {
      return info.param.name;
    });

std::vector<float> Ramp(int n, float start = 1) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

// ONNX's test_maxpool_2d_ceil and test_averagepool_2d_ceil.
TEST(PoolTest, OnnxCeilCases) {
  const Tensor x = MakeTensor<float>({1, 1, 4, 4}, Ramp(16));
  std::map<std::string, Attribute> attrs = {{"kernel_shape", Ints{3, 3}},
                                            {"strides", Ints{2, 2}},
                                            {"ceil_mode", int64_t{1}}};
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("MaxPool", {"x"}, {"y"}, attrs), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(11, 12, 15, 16));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("AveragePool", {"x"}, {"y"}, attrs), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(6, 7.5, 12, 13.5));
}

// ONNX's test_averagepool_2d_pads_count_include_pad corner: 3x3 window
// over a 2-padded input counts the padding.
TEST(PoolTest, CountIncludePadDivisor) {
  const Tensor x = MakeTensor<float>({1, 1, 2, 2}, {4, 4, 4, 4});
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("AveragePool", {"x"}, {"y"},
               {{"kernel_shape", Ints{2, 2}},
                {"pads", Ints{1, 1, 1, 1}},
                {"count_include_pad", int64_t{1}}}),
      {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]),
              ElementsAre(1, 2, 1, 2, 4, 2, 1, 2, 1));
}

TEST(PoolTest, AutoPadSameAndValid) {
  const Tensor x = MakeTensor<float>({1, 1, 3, 3}, Ramp(9));
  // SAME_UPPER, k=2 s=1: pad 0 before, 1 after.
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("MaxPool", {"x"}, {"y"},
                                {{"kernel_shape", Ints{2, 2}},
                                 {"auto_pad", std::string("SAME_UPPER")}}),
                       {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]),
              ElementsAre(5, 6, 6, 8, 9, 9, 8, 9, 9));
  // SAME_LOWER: pad 1 before.
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("MaxPool", {"x"}, {"y"},
                           {{"kernel_shape", Ints{2, 2}},
                            {"auto_pad", std::string("SAME_LOWER")}}),
                  {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]),
              ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("AveragePool", {"x"}, {"y"},
                           {{"kernel_shape", Ints{2, 2}},
                            {"auto_pad", std::string("VALID")}}),
                  {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(3, 4, 6, 7));
}

TEST(PoolTest, OneAndThreeDimensional) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("MaxPool", {"x"}, {"y"},
                                {{"kernel_shape", Ints{2}}}),
                       {MakeTensor<float>({1, 1, 4}, {1, 3, 2, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(3, 3, 2));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("AveragePool", {"x"}, {"y"},
                           {{"kernel_shape", Ints{2, 2, 2}}}),
                  {MakeTensor<float>({1, 1, 2, 2, 2}, Ramp(8))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 1, 1, 1, 1}));
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(4.5));
}

TEST(PoolTest, MaxPoolIntegersAndIndices) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("MaxPool", {"x"}, {"y"},
                                {{"kernel_shape", Ints{2, 2}}}),
                       {MakeTensor<uint8_t>({1, 1, 2, 3}, {1, 200, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<uint8_t>((*out)[0]), ElementsAre(200, 200));
  // Indices over the whole tensor (row-major), second plane offset by 6.
  const Tensor x = MakeTensor<float>({1, 2, 2, 3},
                                     {1, 9, 3, 4, 5, 6, 0, 0, 7, 0, 8, 0});
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("MaxPool", {"x"}, {"y", "i"},
                           {{"kernel_shape", Ints{2, 2}}}),
                  {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(9, 9, 8, 8));
  EXPECT_THAT(ToVector<int64_t>((*out)[1]), ElementsAre(1, 1, 10, 10));
  // Column-major storage order within each plane.
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("MaxPool", {"x"}, {"y", "i"},
                           {{"kernel_shape", Ints{2, 2}},
                            {"storage_order", int64_t{1}}}),
                  {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int64_t>((*out)[1]), ElementsAre(2, 2, 9, 9));
}

TEST(PoolTest, GlobalAveragePool) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("GlobalAveragePool", {"x"}, {"y"}),
                       {MakeTensor<float>({1, 2, 2, 2}, Ramp(8))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 2, 1, 1}));
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(2.5, 6.5));
}

TEST(PoolTest, Errors) {
  const Tensor x = RandomTensor({1, 1, 3, 3}, 1);
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("MaxPool", {"x"}, {"y"}), {x});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("maxpool_node"));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("MaxPool", {"x"}, {"y"},
                           {{"kernel_shape", Ints{4, 4}}}),
                  {x});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("MaxPool", {"x"}, {"y"},
                           {{"kernel_shape", Ints{2, 2, 2}}}),
                  {x});  // Rank disagrees with kernel_shape.
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("AveragePool", {"x"}, {"y"},
                           {{"kernel_shape", Ints{2, 2}}}),
                  {MakeTensor<int32_t>({1, 1, 2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("GlobalAveragePool", {"x"}, {"y"}),
                  {MakeTensor<float>({4}, Ramp(4))});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
