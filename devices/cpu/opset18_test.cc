// The opset 18-23 forms of ops the CPU kernels already had (Split's
// num_outputs, Pad's axes and wrap, Resize's axes / aspect policies /
// half_pixel_symmetric / antialias, dilated AveragePool, LpPool, Cast's
// saturate, Scatter's max/min, DFT's axis input, GridSample's 5-D form,
// the reductions' axes input and bool inputs). Expected values are
// references computed here (loops written from the ONNX operator specs, or
// closed forms), not the kernels' own code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

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

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

RunKernelOptions Opset(int64_t v) {
  RunKernelOptions o;
  o.opset_version = v;
  return o;
}

Floats Ramp(int64_t n, float start = 0.0f) {
  Floats v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

// |got - want| <= tol * max(1, |want|) elementwise, with the first
// mismatch's index in the message.
void ExpectNear(const Tensor& got, const Floats& want, double tol = 1e-5) {
  ASSERT_EQ(got.dtype(), DType::kFloat32);
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  const float* g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], tol * std::max(1.0, std::fabs(double{want[i]})))
        << "element " << i;
  }
}

// ------------------------------------------------------------- Split-18

TEST(Opset18Test, SplitNumOutputsMakesCeilChunksLastSmaller) {
  // 7 along axis 1 into 3: chunks of ceil(7/3) = 3, 3, then 1.
  const Tensor x = MakeTensor<float>({2, 7}, Ramp(14));
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Split", {"x"}, {"a", "b", "c"},
                                {{"axis", int64_t{-1}},
                                 {"num_outputs", int64_t{3}}}),
                       {x}, Opset(18));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].shape(), Shape({2, 3}));
  EXPECT_EQ((*out)[1].shape(), Shape({2, 3}));
  EXPECT_EQ((*out)[2].shape(), Shape({2, 1}));
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(0, 1, 2, 7, 8, 9));
  EXPECT_THAT(ToVector<float>((*out)[1]), ElementsAre(3, 4, 5, 10, 11, 12));
  EXPECT_THAT(ToVector<float>((*out)[2]), ElementsAre(6, 13));
}

TEST(Opset18Test, SplitNumOutputsEvenAndLatestOpset) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Split", {"x"}, {"a", "b"},
                                {{"num_outputs", int64_t{2}}}),
                       {MakeTensor<int64_t>({4}, {1, 2, 3, 4})}, Opset(0));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(1, 2));
  EXPECT_THAT(ToVector<int64_t>((*out)[1]), ElementsAre(3, 4));
}

TEST(Opset18Test, SplitNumOutputsRefusals) {
  const Tensor x = MakeTensor<float>({5}, Ramp(5));
  // ceil(5/4) = 2 leaves nothing for the last of 4 chunks (2+2+2 > 5).
  auto uneven = RunKernel(CpuKernelRegistry(),
                          MakeNode("Split", {"x"}, {"a", "b", "c", "d"},
                                   {{"num_outputs", int64_t{4}}}),
                          {x}, Opset(18));
  EXPECT_EQ(uneven.status().code(), absl::StatusCode::kInvalidArgument);
  // More outputs than elements.
  auto many = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Split", {"x"}, {"a", "b"}, {{"num_outputs", int64_t{2}}}),
      {MakeTensor<float>({1}, {1})}, Opset(18));
  EXPECT_EQ(many.status().code(), absl::StatusCode::kInvalidArgument);
  // num_outputs must match the node's outputs.
  auto mismatch = RunKernel(CpuKernelRegistry(),
                            MakeNode("Split", {"x"}, {"a", "b"},
                                     {{"num_outputs", int64_t{3}}}),
                            {x}, Opset(18));
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.status().message(), HasSubstr("num_outputs"));
  // Not both num_outputs and the split input.
  auto both = RunKernel(CpuKernelRegistry(),
                        MakeNode("Split", {"x", "s"}, {"a", "b"},
                                 {{"num_outputs", int64_t{2}}}),
                        {x, MakeTensor<int64_t>({2}, {2, 3})}, Opset(18));
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
