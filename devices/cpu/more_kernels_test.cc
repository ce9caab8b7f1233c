// Hand-computed checks of the kernel families added for ONNX coverage
// (elementwise extensions, reductions, layout and indexing ops, float16).
// The ONNX node cases (//tests:onnx_conformance_test) are the main judge;
// these pin down the rules that are easy to get subtly wrong.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

TEST(MoreKernelsTest, ModFollowsDivisorSignUnlessFmod) {
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("Mod", {"a", "b"}, {"y"}),
                       {MakeTensor<int32_t>({4}, {-7, 7, -7, 7}),
                        MakeTensor<int32_t>({4}, {3, -3, -3, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int32_t>((*out)[0]), ElementsAre(2, -2, -1, 1));
  auto f = RunKernel(CpuKernelRegistry(),
                     MakeNode("Mod", {"a", "b"}, {"y"}, {{"fmod", int64_t{1}}}),
                     {MakeTensor<int32_t>({2}, {-7, 7}),
                      MakeTensor<int32_t>({2}, {3, -3})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(ToVector<int32_t>((*f)[0]), ElementsAre(-1, 1));
}

TEST(MoreKernelsTest, ComparisonsGiveBool) {
  RunKernelOptions options;
  options.output_dtypes = {DType::kBool};
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Less", {"a", "b"}, {"y"}),
                       {MakeTensor<float>({3}, {1, 2, 3}),
                        MakeTensor<float>({}, {2})},
                       options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<bool>((*out)[0]), ElementsAre(true, false, false));
}

TEST(MoreKernelsTest, ReduceKeepsOrDropsAxes) {
  const Tensor x = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  RunKernelOptions opset13;
  opset13.opset_version = 13;
  auto sum = RunKernel(
      CpuKernelRegistry(), MakeNode("ReduceMean", {"x"}, {"y"},
                                    {{"axes", std::vector<int64_t>{1}},
                                     {"keepdims", int64_t{0}}}),
      {x}, opset13);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].shape(), Shape({2}));
  EXPECT_THAT(ToVector<float>((*sum)[0]), ElementsAre(2, 5));
  // ReduceSum 13: axes as an input; none given reduces everything.
  auto all = RunKernel(CpuKernelRegistry(),
                       MakeNode("ReduceSum", {"x"}, {"y"}), {x});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)[0].shape(), Shape({1, 1}));
  EXPECT_THAT(ToVector<float>((*all)[0]), ElementsAre(21));
}

TEST(MoreKernelsTest, SliceWithNegativeStep) {
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Slice", {"x", "s", "e", "a", "st"}, {"y"}),
      {MakeTensor<int64_t>({5}, {0, 1, 2, 3, 4}), MakeTensor<int64_t>({1}, {-1}),
       MakeTensor<int64_t>({1}, {-1000}), MakeTensor<int64_t>({1}, {0}),
       MakeTensor<int64_t>({1}, {-2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(4, 2, 0));
}

TEST(MoreKernelsTest, PadReflectAndEdge) {
  const Tensor x = MakeTensor<float>({3}, {1, 2, 3});
  const Tensor pads = MakeTensor<int64_t>({2}, {2, 2});
  auto reflect = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Pad", {"x", "p"}, {"y"}, {{"mode", std::string("reflect")}}),
      {x, pads});
  ASSERT_TRUE(reflect.ok()) << reflect.status();
  EXPECT_THAT(ToVector<float>((*reflect)[0]), ElementsAre(3, 2, 1, 2, 3, 2, 1));
  auto edge = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Pad", {"x", "p"}, {"y"}, {{"mode", std::string("edge")}}),
      {x, pads});
  ASSERT_TRUE(edge.ok()) << edge.status();
  EXPECT_THAT(ToVector<float>((*edge)[0]), ElementsAre(1, 1, 1, 2, 3, 3, 3));
}

TEST(MoreKernelsTest, GatherOutOfRangeIsInvalidArgument) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Gather", {"x", "i"}, {"y"}),
                       {MakeTensor<float>({2}, {1, 2}),
                        MakeTensor<int64_t>({1}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  auto neg = RunKernel(CpuKernelRegistry(),
                       MakeNode("Gather", {"x", "i"}, {"y"}),
                       {MakeTensor<float>({2}, {1, 2}),
                        MakeTensor<int64_t>({1}, {-1})});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_THAT(ToVector<float>((*neg)[0]), ElementsAre(2));
}

TEST(MoreKernelsTest, Float16RoundsToNearestEven) {
  EXPECT_EQ(FloatToFloat16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToFloat16(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToFloat16(1e6f), 0x7c00);            // Overflow: inf.
  EXPECT_EQ(FloatToFloat16(5.9604645e-8f), 0x0001);   // Smallest subnormal.
  EXPECT_EQ(FloatToFloat16(1.0f + 1.0f / 2048), 0x3c00);  // Tie to even.
  for (uint16_t h : {0x3c00, 0x0001, 0x8400, 0x7bff, 0x3555}) {
    EXPECT_EQ(FloatToFloat16(Float16ToFloat(h)), h);
  }
}

// ONNX 1.12's test data truncates float32 to bfloat16; Cast rounds to
// nearest even (ONNX's helper float32_to_bfloat16 and ONNX Runtime do).
TEST(MoreKernelsTest, CastToBFloat16RoundsToNearestEven) {
  RunKernelOptions options;
  options.output_dtypes = {DType::kBFloat16};
  const std::vector<uint32_t> bits = {
      0x3ef5eeb0u,  // Above the half step: rounds up (truncation: 0x3ef5).
      0x3ef535b8u,  // Below: rounds down.
      0x3f808000u,  // Tie, even below: stays 0x3f80.
      0x3f818000u,  // Tie, odd below: rounds up to 0x3f82.
      0x7f7fffffu,  // Largest float: rounds to inf.
      0x7fc00001u,  // NaN stays NaN.
  };
  std::vector<float> x;
  for (uint32_t b : bits) {
    float f;
    std::memcpy(&f, &b, 4);
    x.push_back(f);
  }
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Cast", {"x"}, {"y"}, {{"to", int64_t{16}}}),
      {MakeTensor<float>({6}, x)}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].dtype(), DType::kBFloat16);
  const uint16_t* y = (*out)[0].data<uint16_t>();
  EXPECT_THAT(std::vector<uint16_t>(y, y + 5),
              ElementsAre(0x3ef6, 0x3ef5, 0x3f80, 0x3f82, 0x7f80));
  EXPECT_EQ(y[5] & 0x7f80, 0x7f80);
  EXPECT_NE(y[5] & 0x007f, 0);
}

TEST(MoreKernelsTest, RangeRefusesHugeOutputs) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Range", {"a", "b", "c"}, {"y"}),
                       {MakeTensor<int64_t>({}, {0}),
                        MakeTensor<int64_t>({}, {int64_t{1} << 40}),
                        MakeTensor<int64_t>({}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// ScatterElements and GatherElements along axis 1 of [3, 4, 5] data with
// [2, 3, 5] indices: the dims after the axis are whole, the walk's fast
// path, checked against the definition element by element (negative
// indices included); an index out of range is INVALID_ARGUMENT there too.
TEST(MoreKernelsTest, ScatterAndGatherElementsWithWholeInnerRows) {
  std::vector<float> data(3 * 4 * 5), upd(2 * 3 * 5);
  std::vector<int64_t> idx(2 * 3 * 5);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  for (size_t i = 0; i < idx.size(); ++i) {
    idx[i] = static_cast<int64_t>((i * 7) % 8) - 4;  // -4 .. 3
    upd[i] = 1000.0f + static_cast<float>(i);
  }
  auto pos = [&](int64_t i) {
    const int64_t a = i / 15, j = i % 5;
    const int64_t k = idx[i] < 0 ? idx[i] + 4 : idx[i];
    return (a * 4 + k) * 5 + j;
  };
  std::vector<float> scattered = data, gathered(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    scattered[pos(i)] = upd[i];
    gathered[i] = data[pos(i)];
  }
  const Tensor d = MakeTensor<float>({3, 4, 5}, data);
  const Tensor x = MakeTensor<int64_t>({2, 3, 5}, idx);
  const Tensor u = MakeTensor<float>({2, 3, 5}, upd);
  auto scatter = RunKernel(CpuKernelRegistry(),
                           MakeNode("ScatterElements", {"d", "i", "u"}, {"y"},
                                    {{"axis", int64_t{1}}}),
                           {d, x, u});
  ASSERT_TRUE(scatter.ok()) << scatter.status();
  EXPECT_EQ(ToVector<float>((*scatter)[0]), scattered);
  auto gather = RunKernel(
      CpuKernelRegistry(),
      MakeNode("GatherElements", {"d", "i"}, {"y"}, {{"axis", int64_t{1}}}),
      {d, x});
  ASSERT_TRUE(gather.ok()) << gather.status();
  EXPECT_EQ(ToVector<float>((*gather)[0]), gathered);
  idx[17] = 4;
  auto bad = RunKernel(
      CpuKernelRegistry(),
      MakeNode("GatherElements", {"d", "i"}, {"y"}, {{"axis", int64_t{1}}}),
      {d, MakeTensor<int64_t>({2, 3, 5}, idx)});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("index 4 is out of range"));
}

}  // namespace
}  // namespace glint::cpu
