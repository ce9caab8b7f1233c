// NonMaxSuppression, RoiAlign, NonZero and Unique against hand-computed
// values (and, for RoiAlign, an image whose bilinear samples are exact),
// including their data-dependent output shapes and their refusals.
#include <cmath>
#include <cstdint>
#include <limits>
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
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

RunKernelOptions Int64Outputs(int n) {
  RunKernelOptions options;
  options.output_dtypes.assign(n, DType::kInt64);
  return options;
}

Tensor BoolTensor(std::vector<int64_t> dims, std::vector<uint8_t> v) {
  return Tensor::FromVector(DType::kBool, Shape(std::move(dims)), v);
}

// ------------------------------------------------------ NonMaxSuppression

// Six boxes as [y1, x1, y2, x2]: 0-2 overlap heavily, 3-4 overlap
// heavily, 5 is alone (the ONNX example).
Tensor SixBoxes() {
  return MakeTensor<float>(
      {1, 6, 4}, {0, 0,  1, 1,  0, 0.1f,  1, 1.1f,  0, -0.1f, 1, 0.9f,
                  0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100,   1, 101});
}
Tensor SixScores() {
  return MakeTensor<float>({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f});
}
Node Nms(std::map<std::string, Attribute> attrs = {}) {
  return MakeNode("NonMaxSuppression", {"b", "s", "m", "iou", "st"}, {"y"},
                  std::move(attrs));
}

TEST(NonMaxSuppressionTest, KeepsBestPerClusterInScoreOrder) {
  auto out = RunKernel(CpuKernelRegistry(), Nms(),
                       {SixBoxes(), SixScores(), MakeTensor<int64_t>({1}, {3}),
                        MakeTensor<float>({1}, {0.5f}), Tensor()},
                       Int64Outputs(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3, 3}));
  // Box 3 (0.95), then 0 (0.9; 1 and 2 overlap it), then 5.
  EXPECT_THAT(ToVector<int64_t>((*out)[0]),
              ElementsAre(0, 0, 3, 0, 0, 0, 0, 0, 5));
}

TEST(NonMaxSuppressionTest, ScoreThresholdAndLimit) {
  // Scores must be strictly above 0.5 (drops boxes 4 and 5); at most 2 per
  // class.
  auto out = RunKernel(
      CpuKernelRegistry(), Nms(),
      {SixBoxes(), SixScores(), MakeTensor<int64_t>({1}, {2}),
       MakeTensor<float>({1}, {0.5f}), MakeTensor<float>({1}, {0.5f})},
      Int64Outputs(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(0, 0, 3, 0, 0, 0));
  auto strict = RunKernel(
      CpuKernelRegistry(), Nms(),
      {SixBoxes(), SixScores(), MakeTensor<int64_t>({1}, {10}),
       MakeTensor<float>({1}, {0.5f}), MakeTensor<float>({1}, {0.9f})},
      Int64Outputs(1));
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_THAT(ToVector<int64_t>((*strict)[0]), ElementsAre(0, 0, 3));
}

TEST(NonMaxSuppressionTest, CenterPointBoxesAndFlippedCorners) {
  // Box 0 centred at (0.5, 0.5), 1x1; box 1 the same square shifted by 0.1
  // (IoU 0.818); box 2 far away.
  const Tensor centers = MakeTensor<float>(
      {1, 3, 4}, {0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1, 5.5f, 5.5f, 1, 1});
  const Tensor scores = MakeTensor<float>({1, 1, 3}, {0.7f, 0.8f, 0.1f});
  auto out =
      RunKernel(CpuKernelRegistry(), Nms({{"center_point_box", int64_t{1}}}),
                {centers, scores, MakeTensor<int64_t>({1}, {3}),
                 MakeTensor<float>({1}, {0.8f}), Tensor()},
                Int64Outputs(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(0, 0, 1, 0, 0, 2));
  // The same boxes as corners given in the other diagonal order.
  const Tensor flipped =
      MakeTensor<float>({1, 3, 4}, {1, 1, 0, 0, 1, 1.1f, 0, 0.1f, 6, 6, 5, 5});
  auto f = RunKernel(CpuKernelRegistry(), Nms(),
                     {flipped, scores, MakeTensor<int64_t>({1}, {3}),
                      MakeTensor<float>({1}, {0.8f}), Tensor()},
                     Int64Outputs(1));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(ToVector<int64_t>((*f)[0]), ElementsAre(0, 0, 1, 0, 0, 2));
}

TEST(NonMaxSuppressionTest, EqualScoresKeepLowestIndexFirst) {
  const Tensor boxes =
      MakeTensor<float>({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1});
  const Tensor scores = MakeTensor<float>({1, 1, 3}, {0.5f, 0.5f, 0.5f});
  auto out = RunKernel(CpuKernelRegistry(), Nms(),
                       {boxes, scores, MakeTensor<int64_t>({1}, {3}),
                        MakeTensor<float>({1}, {0.5f}), Tensor()},
                       Int64Outputs(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(0, 0, 0));
}

TEST(NonMaxSuppressionTest, BatchesAndClassesInOrder) {
  const Tensor boxes = MakeTensor<float>(
      {2, 2, 4}, {0, 0, 1, 1, 5, 5, 6, 6, 0, 0, 1, 1, 0, 0, 1, 1});
  const Tensor scores = MakeTensor<float>(
      {2, 2, 2}, {0.1f, 0.9f, 0.8f, 0.2f, 0.3f, 0.4f, 0.6f, 0.5f});
  auto out = RunKernel(CpuKernelRegistry(), Nms(),
                       {boxes, scores, MakeTensor<int64_t>({1}, {5}),
                        MakeTensor<float>({1}, {0.5f}), Tensor()},
                       Int64Outputs(1));
  ASSERT_TRUE(out.ok()) << out.status();
  // Batch 1's boxes coincide: one survivor per class.
  EXPECT_THAT(
      ToVector<int64_t>((*out)[0]),
      ElementsAre(0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0));
}

TEST(NonMaxSuppressionTest, NoMaxOutputSelectsNothing) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("NonMaxSuppression", {"b", "s"}, {"y"}),
                       {SixBoxes(), SixScores()}, Int64Outputs(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, 3}));
}

TEST(NonMaxSuppressionTest, RefusesBadValues) {
  auto iou = RunKernel(CpuKernelRegistry(), Nms(),
                       {SixBoxes(), SixScores(), MakeTensor<int64_t>({1}, {3}),
                        MakeTensor<float>({1}, {1.5f}), Tensor()},
                       Int64Outputs(1));
  EXPECT_EQ(iou.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(iou.status().message(), HasSubstr("iou_threshold"));
  auto shapes =
      RunKernel(CpuKernelRegistry(), Nms(),
                {SixBoxes(), MakeTensor<float>({1, 1, 5}, {1, 2, 3, 4, 5}),
                 MakeTensor<int64_t>({1}, {3}), Tensor(), Tensor()},
                Int64Outputs(1));
  EXPECT_EQ(shapes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shapes.status().message(), HasSubstr("NonMaxSuppression"));
  auto attr = RunKernel(
      CpuKernelRegistry(), Nms({{"center_point_box", int64_t{2}}}),
      {SixBoxes(), SixScores(), Tensor(), Tensor(), Tensor()}, Int64Outputs(1));
  EXPECT_EQ(attr.status().code(), absl::StatusCode::kInvalidArgument);
  auto dtype = RunKernel(
      CpuKernelRegistry(), Nms(),
      {MakeTensor<int32_t>({1, 1, 4}, {0, 0, 1, 1}),
       MakeTensor<int32_t>({1, 1, 1}, {1}), Tensor(), Tensor(), Tensor()},
      Int64Outputs(1));
  EXPECT_EQ(dtype.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(NonMaxSuppressionTest, NoBatchesOfHugeBoxCountsAllocateNothing) {
  // Boxes [0, 2^40, 4]: num_boxes is a dim of an empty input and must not
  // size any scratch.
  const int64_t boxes = int64_t{1} << 40;
  RunKernelOptions options = Int64Outputs(1);
  options.hide_input_shapes = true;
  auto out = RunKernel(
      CpuKernelRegistry(), Nms(),
      {MakeTensor<float>({0, boxes, 4}, {}),
       MakeTensor<float>({0, 3, boxes}, {}), MakeTensor<int64_t>({1}, {5})},
      options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, 3}));
}

// --------------------------------------------------------------- RoiAlign

// A 1x2x6x8 image whose channel c is f(y, x) = c * 100 + 10 y + x: linear,
// so a bilinear sample inside the image is f at the sample, and a bin's
// average is f at the mean of its samples.
Tensor LinearImage() {
  std::vector<float> v;
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x) v.push_back(c * 100 + 10 * y + x);
  return MakeTensor<float>({1, 2, 6, 8}, v);
}

TEST(RoiAlignTest, AverageOfLinearImageIsValueAtBinCentre) {
  for (const char* mode : {"half_pixel", "output_half_pixel"}) {
    SCOPED_TRACE(mode);
    const double offset = std::string(mode) == "half_pixel" ? 0.5 : 0.0;
    // roi (x1, y1, x2, y2) = (1, 1, 5, 4) scaled by 1: 2x2 bins.
    Node node =
        MakeNode("RoiAlign", {"x", "rois", "idx"}, {"y"},
                 {{"output_height", int64_t{2}},
                  {"output_width", int64_t{2}},
                  {"sampling_ratio", int64_t{2}},
                  {"coordinate_transformation_mode", std::string(mode)}});
    auto out =
        RunKernel(CpuKernelRegistry(), node,
                  {LinearImage(), MakeTensor<float>({1, 4}, {1, 1, 5, 4}),
                   MakeTensor<int64_t>({1}, {0})});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), Shape({1, 2, 2, 2}));
    const std::vector<float> y = ToVector<float>((*out)[0]);
    for (int c = 0; c < 2; ++c)
      for (int ph = 0; ph < 2; ++ph)
        for (int pw = 0; pw < 2; ++pw) {
          const double cy = 1 - offset + 1.5 * (ph + 0.5);
          const double cx = 1 - offset + 2.0 * (pw + 0.5);
          EXPECT_NEAR(y[(c * 2 + ph) * 2 + pw], c * 100 + 10 * cy + cx, 1e-4);
        }
  }
}

TEST(RoiAlignTest, AdaptiveGridScaleAndBatchIndex) {
  // Two images; the roi picks the second (values + 1000) at scale 0.5.
  std::vector<float> v;
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x) v.push_back(n * 1000 + 10 * y + x);
  // roi (2, 2, 10, 8) * 0.5 - 0.5 = (0.5, 0.5) to (4.5, 3.5): one bin,
  // adaptive grid ceil(3) x ceil(4); centre (2, 2.5).
  Node node = MakeNode("RoiAlign", {"x", "rois", "idx"}, {"y"},
                       {{"spatial_scale", 0.5f}});
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {MakeTensor<float>({2, 1, 6, 8}, v),
                        MakeTensor<float>({1, 4}, {2, 2, 10, 8}),
                        MakeTensor<int64_t>({1}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(ToVector<float>((*out)[0])[0], 1000 + 10 * 2.0 + 2.5, 1e-4);
}

TEST(RoiAlignTest, MaxModeTakesLargestWeightedCorner) {
  // Constant image 8: a sample on a pixel centre has a weight of 1, one
  // between four pixels weights of 0.25.
  Node node = MakeNode(
      "RoiAlign", {"x", "rois", "idx"}, {"y"},
      {{"mode", std::string("max")},
       {"sampling_ratio", int64_t{1}},
       {"coordinate_transformation_mode", std::string("output_half_pixel")}});
  auto out =
      RunKernel(CpuKernelRegistry(), node,
                {MakeTensor<float>({1, 1, 4, 4}, std::vector<float>(16, 8.0f)),
                 MakeTensor<float>({2, 4}, {0, 0, 2, 2, 0, 0, 1, 1}),
                 MakeTensor<int64_t>({2}, {0, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Samples at (1, 1) and (0.5, 0.5).
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(8.0f, 2.0f));
}

TEST(RoiAlignTest, OpsetTenHasNoHalfPixelOffset) {
  RunKernelOptions opset10;
  opset10.opset_version = 10;
  Node node = MakeNode("RoiAlign", {"x", "rois", "idx"}, {"y"},
                       {{"sampling_ratio", int64_t{1}}});
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {LinearImage(), MakeTensor<float>({1, 4}, {1, 1, 3, 3}),
                        MakeTensor<int64_t>({1}, {0})},
                       opset10);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(ToVector<float>((*out)[0])[0], 10 * 2.0 + 2.0, 1e-4);
}

TEST(RoiAlignTest, RefusesBadValues) {
  Node node = MakeNode("RoiAlign", {"x", "rois", "idx"}, {"y"});
  auto batch =
      RunKernel(CpuKernelRegistry(), node,
                {LinearImage(), MakeTensor<float>({1, 4}, {0, 0, 1, 1}),
                 MakeTensor<int64_t>({1}, {1})});
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(batch.status().message(), HasSubstr("batch index 1"));
  // An adaptive grid from a huge roi is refused, not sampled.
  auto huge =
      RunKernel(CpuKernelRegistry(), node,
                {LinearImage(), MakeTensor<float>({1, 4}, {0, 0, 1e30f, 1e30f}),
                 MakeTensor<int64_t>({1}, {0})});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  auto nan = RunKernel(
      CpuKernelRegistry(), node,
      {LinearImage(), MakeTensor<float>({1, 4}, {0, 0, std::nanf(""), 1}),
       MakeTensor<int64_t>({1}, {0})});
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  // 65536 x 65536 bins for 2 channels: 2^33 output elements.
  auto bins = RunKernel(CpuKernelRegistry(),
                        MakeNode("RoiAlign", {"x", "rois", "idx"}, {"y"},
                                 {{"output_height", int64_t{65536}},
                                  {"output_width", int64_t{65536}}}),
                        {LinearImage(), MakeTensor<float>({1, 4}, {0, 0, 1, 1}),
                         MakeTensor<int64_t>({1}, {0})});
  EXPECT_EQ(bins.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bins.status().message(), HasSubstr("2^31"));
  auto mode = RunKernel(CpuKernelRegistry(),
                        MakeNode("RoiAlign", {"x", "rois", "idx"}, {"y"},
                                 {{"mode", std::string("median")}}),
                        {LinearImage(), MakeTensor<float>({1, 4}, {0, 0, 1, 1}),
                         MakeTensor<int64_t>({1}, {0})});
  EXPECT_EQ(mode.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(RoiAlignTest, NoRoisOverHugeEmptyChannelsAllocateNothing) {
  // X [0, 2^40, 1, 1] with no rois: the output is empty, and nothing may
  // be sized by the channel dim (it was: 8 TiB of doubles).
  const int64_t channels = int64_t{1} << 40;
  RunKernelOptions options;
  options.hide_input_shapes = true;
  auto out = RunKernel(
      CpuKernelRegistry(), MakeNode("RoiAlign", {"x", "rois", "idx"}, {"y"}),
      {MakeTensor<float>({0, channels, 1, 1}, {}),
       MakeTensor<float>({0, 4}, {}), MakeTensor<int64_t>({0}, {})},
      options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, channels, 1, 1}));
}

// ---------------------------------------------------------------- NonZero

TEST(NonZeroTest, IndicesPerAxisInRowMajorOrder) {
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("NonZero", {"x"}, {"y"}),
                       {MakeTensor<float>({2, 3}, {0, 1.5f, 0, -2, 0, 3})},
                       Int64Outputs(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(0, 1, 1, 1, 0, 2));
  auto b = RunKernel(CpuKernelRegistry(), MakeNode("NonZero", {"x"}, {"y"}),
                     {BoolTensor({4}, {0, 0, 0, 0})}, Int64Outputs(1));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].shape(), Shape({1, 0}));
}

// ----------------------------------------------------------------- Unique

Node UniqueNode(std::map<std::string, Attribute> attrs) {
  return MakeNode("Unique", {"x"}, {"y", "indices", "inverse", "counts"},
                  std::move(attrs));
}
RunKernelOptions UniqueOutputs(DType y) {
  RunKernelOptions options = Int64Outputs(4);
  options.output_dtypes[0] = y;
  return options;
}

TEST(UniqueTest, SortedAndUnsortedWithoutAxis) {
  const Tensor x = MakeTensor<float>({6}, {2, 1, 1, 3, 4, 3});
  auto s = RunKernel(CpuKernelRegistry(), UniqueNode({}), {x},
                     UniqueOutputs(DType::kFloat32));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(ToVector<float>((*s)[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(ToVector<int64_t>((*s)[1]), ElementsAre(1, 0, 3, 4));
  EXPECT_THAT(ToVector<int64_t>((*s)[2]), ElementsAre(1, 0, 0, 2, 3, 2));
  EXPECT_THAT(ToVector<int64_t>((*s)[3]), ElementsAre(2, 1, 2, 1));
  auto u = RunKernel(CpuKernelRegistry(), UniqueNode({{"sorted", int64_t{0}}}),
                     {x}, UniqueOutputs(DType::kFloat32));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_THAT(ToVector<float>((*u)[0]), ElementsAre(2, 1, 3, 4));
  EXPECT_THAT(ToVector<int64_t>((*u)[1]), ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(ToVector<int64_t>((*u)[2]), ElementsAre(0, 1, 1, 2, 3, 2));
  EXPECT_THAT(ToVector<int64_t>((*u)[3]), ElementsAre(1, 2, 2, 1));
}

TEST(UniqueTest, SlicesAlongAxisCompareLexicographically) {
  // Columns of [[1, 0, 1, 0], [5, 2, 5, 9]] along axis -1: (1,5) (0,2)
  // (1,5) (0,9).
  const Tensor x = MakeTensor<int32_t>({2, 4}, {1, 0, 1, 0, 5, 2, 5, 9});
  auto s = RunKernel(CpuKernelRegistry(), UniqueNode({{"axis", int64_t{-1}}}),
                     {x}, UniqueOutputs(DType::kInt32));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(ToVector<int32_t>((*s)[0]), ElementsAre(0, 0, 1, 2, 9, 5));
  EXPECT_THAT(ToVector<int64_t>((*s)[1]), ElementsAre(1, 3, 0));
  EXPECT_THAT(ToVector<int64_t>((*s)[2]), ElementsAre(2, 0, 2, 1));
  EXPECT_THAT(ToVector<int64_t>((*s)[3]), ElementsAre(1, 1, 2));
  auto u = RunKernel(CpuKernelRegistry(),
                     UniqueNode({{"axis", int64_t{1}}, {"sorted", int64_t{0}}}),
                     {x}, UniqueOutputs(DType::kInt32));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_THAT(ToVector<int32_t>((*u)[0]), ElementsAre(1, 0, 0, 5, 2, 9));
  EXPECT_THAT(ToVector<int64_t>((*u)[2]), ElementsAre(0, 1, 0, 2));
}

TEST(UniqueTest, NaNsSortLastAndCollapse) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto s = RunKernel(CpuKernelRegistry(), UniqueNode({}),
                     {MakeTensor<float>({5}, {nan, 2, nan, -1, 2})},
                     UniqueOutputs(DType::kFloat32));
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<float> y = ToVector<float>((*s)[0]);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], -1);
  EXPECT_EQ(y[1], 2);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_THAT(ToVector<int64_t>((*s)[1]), ElementsAre(3, 1, 0));
  EXPECT_THAT(ToVector<int64_t>((*s)[3]), ElementsAre(1, 2, 2));
}

TEST(UniqueTest, UnusedOutputsAreNotAllocatedAndBadAxisRefused) {
  auto y = RunKernel(
      CpuKernelRegistry(), MakeNode("Unique", {"x"}, {"y", "", "", "counts"}),
      {MakeTensor<int64_t>({3}, {7, 7, 7})}, UniqueOutputs(DType::kInt64));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(ToVector<int64_t>((*y)[0]), ElementsAre(7));
  EXPECT_EQ((*y)[1].raw_data(), nullptr);  // Never allocated.
  EXPECT_THAT(ToVector<int64_t>((*y)[3]), ElementsAre(3));
  auto axis = RunKernel(CpuKernelRegistry(), UniqueNode({{"axis", int64_t{2}}}),
                        {MakeTensor<float>({2, 2}, {1, 2, 3, 4})},
                        UniqueOutputs(DType::kFloat32));
  EXPECT_EQ(axis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(axis.status().message(), HasSubstr("Unique"));
}

TEST(UniqueTest, EmptyTensorAlongAnAxisHasOneEmptySlice) {
  // Three empty slices, all equal: one unique slice seen three times.
  RunKernelOptions options = UniqueOutputs(DType::kFloat32);
  auto small =
      RunKernel(CpuKernelRegistry(), UniqueNode({{"axis", int64_t{1}}}),
                {MakeTensor<float>({0, 3}, {})}, options);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ((*small)[0].shape(), Shape({0, 1}));
  EXPECT_THAT(ToVector<int64_t>((*small)[1]), ElementsAre(0));
  EXPECT_THAT(ToVector<int64_t>((*small)[2]), ElementsAre(0, 0, 0));
  EXPECT_THAT(ToVector<int64_t>((*small)[3]), ElementsAre(3));
}

TEST(UniqueTest, EmptyTensorWithAHugeAxisSizesNothingByIt) {
  // X [0, 2^40] along axis 1: 2^40 empty slices. Nothing may be sized by
  // that dim; only inverse_indices must hold one value per slice, so it is
  // refused when asked for and the other outputs are given otherwise.
  const int64_t n = int64_t{1} << 40;
  RunKernelOptions options = UniqueOutputs(DType::kFloat32);
  options.hide_input_shapes = true;
  const Tensor x = MakeTensor<float>({0, n}, {});
  auto some =
      RunKernel(CpuKernelRegistry(),
                MakeNode("Unique", {"x"}, {"y", "indices", "", "counts"},
                         {{"axis", int64_t{1}}}),
                {x}, options);
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ((*some)[0].shape(), Shape({0, 1}));
  EXPECT_THAT(ToVector<int64_t>((*some)[1]), ElementsAre(0));
  EXPECT_THAT(ToVector<int64_t>((*some)[3]), ElementsAre(n));
  auto all = RunKernel(CpuKernelRegistry(), UniqueNode({{"axis", int64_t{1}}}),
                       {x}, options);
  EXPECT_EQ(all.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(all.status().message(), HasSubstr("2^31"));
}

}  // namespace
}  // namespace glint::cpu
