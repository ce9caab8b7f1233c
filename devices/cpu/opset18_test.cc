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

// ---------------------------------------------------------- Pad-18/19

// The input indices one axis of a padded output reads (-1: the constant),
// built the way numpy.pad reads them: negative pads first crop the axis
// (as onnxruntime slices before padding), then the kept indices K are
// extended by repeating K (wrap), its mirror image without the edges
// (reflect), its end elements (edge) or -1 (constant).
Ints PadAxisIndices(int64_t len, int64_t before, int64_t after,
                    const std::string& mode) {
  Ints kept;
  for (int64_t i = std::max<int64_t>(0, -before);
       i < len - std::max<int64_t>(0, -after); ++i) {
    kept.push_back(i);
  }
  const int64_t left = std::max<int64_t>(0, before);
  const int64_t right = std::max<int64_t>(0, after);
  const int64_t n = static_cast<int64_t>(kept.size());
  Ints period;  // One period of the infinite sequence, starting at K[0].
  if (mode == "wrap") {
    period = kept;
  } else if (mode == "reflect") {
    period = kept;
    for (int64_t i = n - 2; i >= 1; --i) period.push_back(kept[i]);
  }
  Ints out;
  for (int64_t t = -left; t < n + right; ++t) {
    if (t >= 0 && t < n) {
      out.push_back(kept[t]);
    } else if (mode == "constant") {
      out.push_back(-1);
    } else if (mode == "edge") {
      out.push_back(t < 0 ? kept.front() : kept.back());
    } else {
      const int64_t p = static_cast<int64_t>(period.size());
      out.push_back(period[((t % p) + p) % p]);
    }
  }
  return out;
}

// numpy-style padding of a row-major float tensor.
Floats ReferencePad(const Ints& dims, const Floats& x, const Ints& pads,
                    const std::string& mode, float value, Ints* out_dims) {
  const int rank = static_cast<int>(dims.size());
  std::vector<Ints> index(rank);
  out_dims->clear();
  for (int d = 0; d < rank; ++d) {
    index[d] = PadAxisIndices(dims[d], pads[d], pads[d + rank], mode);
    out_dims->push_back(static_cast<int64_t>(index[d].size()));
  }
  int64_t total = 1;
  for (int64_t d : *out_dims) total *= d;
  Floats y(total);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, src = 0, stride = 1;
    bool inside = true;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t j = index[d][rest % (*out_dims)[d]];
      rest /= (*out_dims)[d];
      if (j < 0) inside = false;
      src += j * stride;
      stride *= dims[d];
    }
    y[i] = inside ? x[src] : value;
  }
  return y;
}

TEST(Opset18Test, PadWrapRepeatsTheInput) {
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Pad", {"x", "p"}, {"y"}, {{"mode", std::string("wrap")}}),
      {MakeTensor<float>({3}, {1, 2, 3}), MakeTensor<int64_t>({2}, {2, 4})},
      Opset(19));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]),
              ElementsAre(2, 3, 1, 2, 3, 1, 2, 3, 1));
  // A negative pad crops first; wrap then repeats what is left.
  auto crop = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Pad", {"x", "p"}, {"y"}, {{"mode", std::string("wrap")}}),
      {MakeTensor<float>({5}, {0, 1, 2, 3, 4}),
       MakeTensor<int64_t>({2}, {-1, 2})},
      Opset(19));
  ASSERT_TRUE(crop.ok()) << crop.status();
  EXPECT_THAT(ToVector<float>((*crop)[0]), ElementsAre(1, 2, 3, 4, 1, 2));
}

TEST(Opset18Test, PadAxesInputPadsOnlyThoseAxes) {
  // [2, 3] padded on axis -1 only: 1 before, 2 after, value 9.
  auto out = RunKernel(
      CpuKernelRegistry(), MakeNode("Pad", {"x", "p", "v", "a"}, {"y"}),
      {MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
       MakeTensor<int64_t>({2}, {1, 2}), MakeTensor<float>({}, {9}),
       MakeTensor<int64_t>({1}, {-1})},
      Opset(18));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 6}));
  EXPECT_THAT(ToVector<float>((*out)[0]),
              ElementsAre(9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9));
}

TEST(Opset18Test, PadEveryModeMatchesNumpyOnRandomData) {
  const Ints dims = {3, 4, 5};
  const Tensor x = RandomTensor(dims, 7);
  const Floats xs = ToVector<float>(x);
  // Per axis (before, after), some negative (cropping), some longer than
  // the axis (several periods of wrap/reflect).
  const std::vector<Ints> cases = {{1, 2, 3, 2, 1, 0},
                                   {-1, 0, 7, 2, -2, 9},
                                   {0, -1, -2, 5, 2, -1},
                                   {4, 6, 0, 0, 11, 1}};
  for (const std::string mode : {"constant", "edge", "reflect", "wrap"}) {
    for (const Ints& pads : cases) {
      Ints want_dims;
      const Floats want = ReferencePad(dims, xs, pads, mode, 0.5f, &want_dims);
      auto out = RunKernel(
          CpuKernelRegistry(),
          MakeNode("Pad", {"x", "p", "v"}, {"y"}, {{"mode", mode}}),
          {x, MakeTensor<int64_t>({6}, pads), MakeTensor<float>({}, {0.5f})},
          Opset(19));
      ASSERT_TRUE(out.ok()) << mode << ": " << out.status();
      EXPECT_EQ((*out)[0].shape(), Shape(want_dims)) << mode;
      EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAreArray(want))
          << mode << " pads " << ::testing::PrintToString(pads);
    }
    // The same through the axes input (negative axes, any order).
    Ints want_dims;
    const Floats want = ReferencePad(dims, xs, {0, -1, 3, 0, 2, 4}, mode,
                                     0.0f, &want_dims);
    auto axes = RunKernel(
        CpuKernelRegistry(),
        MakeNode("Pad", {"x", "p", "", "a"}, {"y"}, {{"mode", mode}}),
        {x, MakeTensor<int64_t>({4}, {3, -1, 4, 2}), Tensor(),
         MakeTensor<int64_t>({2}, {-1, 1})},
        Opset(19));
    ASSERT_TRUE(axes.ok()) << mode << ": " << axes.status();
    EXPECT_EQ((*axes)[0].shape(), Shape(want_dims));
    EXPECT_THAT(ToVector<float>((*axes)[0]), ElementsAreArray(want)) << mode;
  }
}

TEST(Opset18Test, PadRefusals) {
  const Tensor x = MakeTensor<float>({2, 3}, Ramp(6));
  // An axis named twice.
  auto repeated = RunKernel(
      CpuKernelRegistry(), MakeNode("Pad", {"x", "p", "", "a"}, {"y"}),
      {x, MakeTensor<int64_t>({4}, {1, 1, 1, 1}), Tensor(),
       MakeTensor<int64_t>({2}, {1, -1})},
      Opset(18));
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  // pads not 2 per named axis.
  auto count = RunKernel(
      CpuKernelRegistry(), MakeNode("Pad", {"x", "p", "", "a"}, {"y"}),
      {x, MakeTensor<int64_t>({4}, {1, 1, 1, 1}), Tensor(),
       MakeTensor<int64_t>({1}, {0})},
      Opset(18));
  EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument);
  // wrap is Pad-19's.
  auto wrap18 = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Pad", {"x", "p"}, {"y"}, {{"mode", std::string("wrap")}}),
      {x, MakeTensor<int64_t>({4}, {0, 1, 0, 1})}, Opset(18));
  EXPECT_EQ(wrap18.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(wrap18.status().message(), HasSubstr("wrap"));
  // wrap of an axis cropped to nothing.
  auto empty = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Pad", {"x", "p"}, {"y"}, {{"mode", std::string("wrap")}}),
      {x, MakeTensor<int64_t>({4}, {0, -3, 0, 4})}, Opset(19));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
