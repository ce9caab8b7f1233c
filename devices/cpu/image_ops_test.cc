// GridSample and MaxUnpool against hand-computed values: images on which
// bilinear sampling is exact (linear in x and y), bicubic taps at pixel
// centres, each padding mode at and beyond the border, and MaxUnpool
// undoing MaxPool; plus their refusals.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

Node GridSample(std::string mode, std::string padding, int64_t align) {
  return MakeNode(
      "GridSample", {"x", "grid"}, {"y"},
      {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align}});
}

// f(y, x) = 10 y + x on a 1x1x3x4 image.
Tensor LinearImage() {
  std::vector<float> v;
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) v.push_back(10.0f * y + x);
  return MakeTensor<float>({1, 1, 3, 4}, v);
}

TEST(GridSampleTest, BilinearIsExactOnALinearImage) {
  // Normalised (x, y) points inside the image.
  const std::vector<float> g = {-1,   -1,     1,     1,    0,    0,
                                0.5f, -0.25f, -0.8f, 0.6f, 0.1f, 0.9f};
  const Tensor grid = MakeTensor<float>({1, 2, 3, 2}, g);
  for (int64_t align : {0, 1}) {
    SCOPED_TRACE(align);
    auto out =
        RunKernel(CpuKernelRegistry(), GridSample("bilinear", "border", align),
                  {LinearImage(), grid});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), Shape({1, 1, 2, 3}));
    const std::vector<float> y = ToVector<float>((*out)[0]);
    for (int i = 0; i < 6; ++i) {
      auto denorm = [&](double v, int len) {
        return align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
      };
      // Border padding clamps points past the pixel centres.
      const double px = std::clamp(denorm(g[2 * i], 4), 0.0, 3.0);
      const double py = std::clamp(denorm(g[2 * i + 1], 3), 0.0, 2.0);
      EXPECT_NEAR(y[i], 10 * py + px, 1e-5) << "point " << i;
    }
  }
}

TEST(GridSampleTest, PaddingModesAtAndBeyondTheBorder) {
  // Image [4, 8] (1x2); points x = -0.5 (the left edge) and x = 3.5 (two
  // widths right of the left edge).
  const Tensor x = MakeTensor<float>({1, 1, 1, 2}, {4, 8});
  const Tensor grid = MakeTensor<float>({1, 1, 2, 2}, {-1, 0, 3, 0});
  auto zeros = RunKernel(CpuKernelRegistry(),
                         GridSample("bilinear", "zeros", 0), {x, grid});
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_THAT(ToVector<float>((*zeros)[0]), ElementsAre(2, 0));
  auto border = RunKernel(CpuKernelRegistry(),
                          GridSample("bilinear", "border", 0), {x, grid});
  ASSERT_TRUE(border.ok()) << border.status();
  EXPECT_THAT(ToVector<float>((*border)[0]), ElementsAre(4, 8));
  // 3.5 reflects off 1.5 and -0.5 back to -0.5.
  auto reflection = RunKernel(
      CpuKernelRegistry(), GridSample("bilinear", "reflection", 0), {x, grid});
  ASSERT_TRUE(reflection.ok()) << reflection.status();
  EXPECT_THAT(ToVector<float>((*reflection)[0]), ElementsAre(4, 4));
}

TEST(GridSampleTest, NearestRoundsHalfToEven) {
  const Tensor x = MakeTensor<float>({1, 1, 1, 3}, {4, 8, 16});
  // align_corners: x = (nx + 1) / 2 * 2 = 0.5, 0.6, 1.5, 2.
  const Tensor grid =
      MakeTensor<float>({1, 1, 4, 2}, {-0.5f, 0, -0.4f, 0, 0.5f, 0, 1, 0});
  auto out = RunKernel(CpuKernelRegistry(), GridSample("nearest", "zeros", 1),
                       {x, grid});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(4, 8, 16, 16));
}

TEST(GridSampleTest, BicubicAtPixelCentresIsThePixel) {
  const Tensor x = RandomTensor({2, 3, 4, 5}, 7);
  // align_corners: nx = -1 + 2 k / 4 lands on column k; ny on row j.
  std::vector<float> g;
  std::vector<std::pair<int, int>> at = {{0, 0}, {1, 2}, {3, 4}, {2, 1}};
  for (int n = 0; n < 2; ++n) {
    for (auto [r, c] : at) {
      g.push_back(-1 + 2.0f * c / 4);
      g.push_back(-1 + 2.0f * r / 3);
    }
  }
  auto out = RunKernel(CpuKernelRegistry(), GridSample("bicubic", "border", 1),
                       {x, MakeTensor<float>({2, 1, 4, 2}, g)});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), Shape({2, 3, 1, 4}));
  const float* px = x.data<float>();
  const std::vector<float> y = ToVector<float>((*out)[0]);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k) {
        EXPECT_NEAR(y[(n * 3 + c) * 4 + k],
                    px[((n * 3 + c) * 4 + at[k].first) * 5 + at[k].second],
                    1e-5);
      }
}

TEST(GridSampleTest, RefusesBadNodesAndValues) {
  auto shape =
      RunKernel(CpuKernelRegistry(), GridSample("bilinear", "zeros", 0),
                {LinearImage(), MakeTensor<float>({1, 1, 1, 3}, {0, 0, 0})});
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shape.status().message(), HasSubstr("GridSample"));
  auto nan = RunKernel(
      CpuKernelRegistry(), GridSample("bilinear", "border", 0),
      {LinearImage(),
       MakeTensor<float>({1, 1, 1, 2},
                         {std::numeric_limits<float>::quiet_NaN(), 0})});
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  // Huge finite coordinates are sampled (padding), not converted blindly.
  auto huge = RunKernel(
      CpuKernelRegistry(), GridSample("bicubic", "reflection", 0),
      {LinearImage(), MakeTensor<float>({1, 1, 1, 2}, {3e38f, -3e38f})});
  EXPECT_TRUE(huge.ok()) << huge.status();
  // 2^16 channels sampled at 2^16 points: 2^32 output elements.
  auto big = RunKernel(
      CpuKernelRegistry(), GridSample("bilinear", "zeros", 0),
      {MakeTensor<float>({1, 1 << 16, 1, 1}, std::vector<float>(1 << 16)),
       MakeTensor<float>({1, 256, 256, 2}, std::vector<float>(1 << 17))});
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("2^31"));
  auto mode =
      RunKernel(CpuKernelRegistry(), GridSample("area", "zeros", 0),
                {LinearImage(), MakeTensor<float>({1, 1, 1, 2}, {0, 0})});
  EXPECT_EQ(mode.status().code(), absl::StatusCode::kUnimplemented);
  auto rank = RunKernel(CpuKernelRegistry(), GridSample("bilinear", "zeros", 0),
                        {MakeTensor<float>({1, 1, 1, 1, 1}, {1}),
                         MakeTensor<float>({1, 1, 1, 1, 3}, {0, 0, 0})});
  EXPECT_EQ(rank.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(GridSampleTest, FiniteGridValuesNearDoubleMaxStayInTheImage) {
  // Denormalizing a double grid value near DBL_MAX overflows to inf; the
  // sampling point must still become a finite pixel in range (reflection
  // of inf was NaN, whose integer conversion read out of bounds).
  const Tensor x = MakeTensor<double>({1, 1, 2, 2}, {1, 2, 3, 4});
  const double max = std::numeric_limits<double>::max();
  const std::vector<std::pair<double, double>> points = {
      {1e308, 0}, {-1e308, 0.5}, {max, -max}, {-max, max}, {1e300, -3e299}};
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        for (auto [gx, gy] : points) {
          SCOPED_TRACE(::testing::Message()
                       << mode << " " << padding << " align " << align
                       << " grid (" << gx << ", " << gy << ")");
          auto out =
              RunKernel(CpuKernelRegistry(), GridSample(mode, padding, align),
                        {x, MakeTensor<double>({1, 1, 1, 2}, {gx, gy})});
          ASSERT_TRUE(out.ok()) << out.status();
          const double v = ToVector<double>((*out)[0])[0];
          ASSERT_TRUE(std::isfinite(v)) << v;
          if (std::string(mode) != "bicubic") {
            // A convex combination of pixels (and zeros' padding).
            EXPECT_GE(v, std::string(padding) == "zeros" ? 0.0 : 1.0);
            EXPECT_LE(v, 4.0);
          }
        }
      }
    }
  }
}

// -------------------------------------------------------------- MaxUnpool

Node Unpool(std::map<std::string, Attribute> attrs) {
  attrs["kernel_shape"] = std::vector<int64_t>{2, 2};
  attrs["strides"] = std::vector<int64_t>{2, 2};
  return MakeNode("MaxUnpool", {"x", "i", "shape"}, {"y"}, std::move(attrs));
}

TEST(MaxUnpoolTest, UndoesMaxPool) {
  const Tensor x = RandomTensor({1, 2, 4, 6}, 3);
  RunKernelOptions two_outputs;
  two_outputs.output_dtypes = {DType::kFloat32, DType::kInt64};
  auto pooled =
      RunKernel(CpuKernelRegistry(),
                MakeNode("MaxPool", {"x"}, {"p", "i"},
                         {{"kernel_shape", std::vector<int64_t>{2, 2}},
                          {"strides", std::vector<int64_t>{2, 2}}}),
                {x}, two_outputs);
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  auto out = RunKernel(CpuKernelRegistry(), Unpool({}),
                       {(*pooled)[0], (*pooled)[1], Tensor()});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), x.shape());
  // Every window's maximum where it was, zeros elsewhere.
  std::vector<float> want(x.num_elements(), 0.0f);
  const std::vector<int64_t> idx = ToVector<int64_t>((*pooled)[1]);
  for (int64_t i : idx) want[i] = x.data<float>()[i];
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAreArray(want));
}

TEST(MaxUnpoolTest, OutputShapeAndPadsKeepCoordinates) {
  const Tensor x = MakeTensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor i = MakeTensor<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  auto bigger = RunKernel(CpuKernelRegistry(), Unpool({}),
                          {x, i, MakeTensor<int64_t>({4}, {1, 1, 5, 5})});
  ASSERT_TRUE(bigger.ok()) << bigger.status();
  std::vector<float> want(25, 0.0f);
  want[1 * 5 + 1] = 1;
  want[1 * 5 + 3] = 2;
  want[3 * 5 + 1] = 3;
  want[3 * 5 + 3] = 4;
  EXPECT_THAT(ToVector<float>((*bigger)[0]), ElementsAreArray(want));
  // pads [0, 0, 1, 1]: the source is 3x3, so index 4 is (1, 1).
  auto padded = RunKernel(
      CpuKernelRegistry(), Unpool({{"pads", std::vector<int64_t>{0, 0, 1, 1}}}),
      {x, MakeTensor<int64_t>({1, 1, 2, 2}, {0, 2, 4, 8}), Tensor()});
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_EQ((*padded)[0].shape(), Shape({1, 1, 3, 3}));
  EXPECT_THAT(ToVector<float>((*padded)[0]),
              ElementsAre(1, 0, 2, 0, 3, 0, 0, 0, 4));
}

TEST(MaxUnpoolTest, RefusesBadIndicesAndShapes) {
  const Tensor x = MakeTensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto range = RunKernel(
      CpuKernelRegistry(), Unpool({}),
      {x, MakeTensor<int64_t>({1, 1, 2, 2}, {0, 1, 2, 16}), Tensor()});
  EXPECT_EQ(range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(range.status().message(), HasSubstr("index 16"));
  auto small = RunKernel(CpuKernelRegistry(), Unpool({}),
                         {x, MakeTensor<int64_t>({1, 1, 2, 2}, {0, 1, 2, 15}),
                          MakeTensor<int64_t>({4}, {1, 1, 3, 3})});
  EXPECT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument);
  auto huge = RunKernel(
      CpuKernelRegistry(), Unpool({}),
      {x, MakeTensor<int64_t>({1, 1, 2, 2}, {0, 1, 2, 3}),
       MakeTensor<int64_t>({4}, {1, 1, int64_t{1} << 20, int64_t{1} << 20})});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.status().message(), HasSubstr("2^31"));
  auto no_kernel =
      RunKernel(CpuKernelRegistry(), MakeNode("MaxUnpool", {"x", "i"}, {"y"}),
                {x, MakeTensor<int64_t>({1, 1, 2, 2}, {0, 1, 2, 3})});
  EXPECT_EQ(no_kernel.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
