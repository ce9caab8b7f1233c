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

using testing::Opset;

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

// ------------------------------------------------------- Resize-18/19

// ONNX's Resize reference, written from the operator spec: every output
// element is a nested 1-D interpolation (outer axis last), each at
// x_ori = the coordinate transform of the output index, from the n input
// elements nearest x_ori (edge-padded, ties to the lower index), weighted
// by the mode's coefficients for ratio = x_ori - floor(x_ori) in (0, 1].
struct ResizeRef {
  std::string mode = "linear";
  std::string coord = "half_pixel";
  bool antialias = false;
  bool exclude_outside = false;
  double cubic_a = -0.75;

  std::vector<double> Coeffs(double ratio, double scale) const {
    std::vector<double> c;
    auto cubic = [&](double x) {
      const double a = cubic_a;
      x = std::fabs(x);
      if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
      if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
      return 0.0;
    };
    if (mode == "nearest") {  // round_prefer_floor
      return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    }
    if (!antialias) {
      if (mode == "linear") return {1 - ratio, ratio};
      return {cubic(ratio + 1), cubic(ratio), cubic(1 - ratio),
              cubic(2 - ratio)};
    }
    const double s = std::min(scale, 1.0);
    const double support = mode == "linear" ? 1 : 2;
    const int start = static_cast<int>(std::floor(-support / s)) + 1;
    double sum = 0;
    for (int i = start; i < 2 - start; ++i) {
      const double arg = s * (i - ratio);
      c.push_back(mode == "linear" ? std::clamp(1 - std::fabs(arg), 0.0, 1.0)
                                   : cubic(arg));
      sum += c.back();
    }
    for (double& v : c) v /= sum;
    return c;
  }

  double Interp1D(const std::vector<double>& data, double scale, int64_t out,
                  double x) const {
    const int64_t len = static_cast<int64_t>(data.size());
    const double out_len = scale * len;
    double xo;
    if (coord == "align_corners") {
      xo = out_len == 1 ? 0 : x * (len - 1) / (out_len - 1);
    } else if (coord == "asymmetric") {
      xo = x / scale;
    } else if (coord == "half_pixel_symmetric") {
      const double adjustment = out / out_len;
      const double offset = len / 2.0 * (1 - adjustment);
      xo = offset + (x + 0.5) / scale - 0.5;
    } else {
      xo = (x + 0.5) / scale - 0.5;
    }
    const double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
    std::vector<double> c = Coeffs(ratio, scale);
    const int64_t n = static_cast<int64_t>(c.size());
    const int64_t pad = (n + 1) / 2;
    // The n indices of the padded axis nearest xo + pad.
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < len + 2 * pad; ++i) idx.push_back(i);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return std::fabs(xo + pad - a) < std::fabs(xo + pad - b);
    });
    idx.resize(n);
    std::sort(idx.begin(), idx.end());
    double sum = 0, wsum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = idx[k] - pad;
      if (exclude_outside && (i < 0 || i >= len)) c[k] = 0;
      wsum += c[k];
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = std::clamp<int64_t>(idx[k] - pad, 0, len - 1);
      sum += c[k] * data[i];
    }
    return exclude_outside ? sum / wsum : sum;
  }

  // `x` of `dims` resized to `out` with per-axis `scales`.
  Floats Run(const Ints& dims, const Floats& x, const Ints& out,
             const std::vector<double>& scales) const {
    const int rank = static_cast<int>(dims.size());
    int64_t total = 1;
    for (int64_t d : out) total *= d;
    Floats y(total);
    for (int64_t i = 0; i < total; ++i) {
      Ints at(rank);
      int64_t rest = i;
      for (int d = rank - 1; d >= 0; --d) {
        at[d] = rest % out[d];
        rest /= out[d];
      }
      // Interpolate the innermost axis first, over every combination of
      // the outer axes' input indices, then fold outwards.
      std::function<double(int, int64_t)> eval = [&](int d,
                                                      int64_t offset) {
        std::vector<double> line(dims[d]);
        int64_t stride = 1;
        for (int e = d + 1; e < rank; ++e) stride *= dims[e];
        for (int64_t j = 0; j < dims[d]; ++j) {
          line[j] = d == rank - 1 ? x[offset + j]
                                  : eval(d + 1, offset + j * stride);
        }
        return Interp1D(line, scales[d], out[d], static_cast<double>(at[d]));
      };
      y[i] = static_cast<float>(eval(0, 0));
    }
    return y;
  }
};

absl::StatusOr<std::vector<Tensor>> RunResize(
    const Tensor& x, std::map<std::string, Attribute> attrs,
    const Floats& scales, const Ints& sizes, int64_t opset = 19) {
  std::vector<Tensor> in = {x, Tensor(), Tensor(), Tensor()};
  if (!scales.empty()) {
    in[2] = MakeTensor<float>({static_cast<int64_t>(scales.size())}, scales);
  }
  if (!sizes.empty()) {
    in[3] = MakeTensor<int64_t>({static_cast<int64_t>(sizes.size())}, sizes);
  }
  return RunKernel(CpuKernelRegistry(),
                   MakeNode("Resize", {"x", "", scales.empty() ? "" : "s",
                                       sizes.empty() ? "" : "z"},
                            {"y"}, std::move(attrs)),
                   in, Opset(opset));
}

TEST(Opset18Test, ResizeAntialiasMatchesOnnxDocs) {
  // ONNX's resize_downsample_scales_{linear,cubic}_antialias cases.
  const Tensor x = MakeTensor<float>({1, 1, 4, 4}, Ramp(16, 1));
  auto linear = RunResize(x, {{"mode", std::string("linear")},
                              {"antialias", int64_t{1}}},
                          {1, 1, 0.6f, 0.6f}, {});
  ASSERT_TRUE(linear.ok()) << linear.status();
  EXPECT_EQ((*linear)[0].shape(), Shape({1, 1, 2, 2}));
  ExpectNear((*linear)[0], {2.875f, 4.5f, 9.375f, 11.0f});
  auto cubic = RunResize(x, {{"mode", std::string("cubic")},
                             {"antialias", int64_t{1}}},
                         {1, 1, 0.6f, 0.6f}, {});
  ASSERT_TRUE(cubic.ok()) << cubic.status();
  ExpectNear((*cubic)[0], {2.5180721f, 4.2858863f, 9.589329f, 11.357142f});
}

TEST(Opset18Test, ResizeHalfPixelSymmetricMatchesOnnxDocs) {
  // resize_downsample_scales_linear_half_pixel_symmetric: width 4 at
  // scale 0.6 is 2.4, rounded down to 2; the rounding is centred.
  auto down = RunResize(MakeTensor<float>({1, 1, 1, 4}, {1, 2, 3, 4}),
                        {{"mode", std::string("linear")},
                         {"coordinate_transformation_mode",
                          std::string("half_pixel_symmetric")}},
                        {1, 1, 1, 0.6f}, {});
  ASSERT_TRUE(down.ok()) << down.status();
  ExpectNear((*down)[0], {1.6666666f, 3.3333333f});
  // half_pixel_symmetric is Resize-19's.
  auto v18 = RunResize(MakeTensor<float>({1, 1, 1, 4}, {1, 2, 3, 4}),
                       {{"mode", std::string("linear")},
                        {"coordinate_transformation_mode",
                         std::string("half_pixel_symmetric")}},
                       {1, 1, 1, 0.6f}, {}, 18);
  EXPECT_EQ(v18.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(Opset18Test, ResizeMatchesReferenceOnRandomData) {
  const Ints dims = {2, 3, 7, 6};
  const Tensor x = RandomTensor(dims, 11);
  const Floats xs = ToVector<float>(x);
  struct Case {
    std::string mode, coord;
    bool antialias, exclude;
    Floats scales;
  };
  const std::vector<Case> cases = {
      {"linear", "half_pixel", true, false, {0.45f, 0.7f}},
      {"linear", "half_pixel", true, false, {1.6f, 0.34f}},
      {"cubic", "half_pixel", true, false, {0.5f, 0.3f}},
      {"cubic", "half_pixel", true, true, {0.61f, 0.8f}},
      {"cubic", "asymmetric", true, false, {0.4f, 2.5f}},
      {"linear", "align_corners", true, false, {0.3f, 0.5f}},
      {"linear", "half_pixel_symmetric", false, false, {1.7f, 0.55f}},
      {"cubic", "half_pixel_symmetric", false, true, {2.3f, 0.7f}},
      {"linear", "half_pixel_symmetric", true, false, {0.45f, 0.75f}},
  };
  for (const Case& c : cases) {
    ResizeRef ref;
    ref.mode = c.mode;
    ref.coord = c.coord;
    ref.antialias = c.antialias;
    ref.exclude_outside = c.exclude;
    Ints out = dims;
    std::vector<double> scales = {1, 1, c.scales[0], c.scales[1]};
    for (int a = 2; a < 4; ++a) {
      out[a] = static_cast<int64_t>(std::floor(dims[a] * scales[a]));
    }
    const Floats want = ref.Run(dims, xs, out, scales);
    // Scales for axes 2 and 3 only, named through `axes`.
    auto got = RunResize(x, {{"mode", c.mode},
                             {"coordinate_transformation_mode", c.coord},
                             {"antialias", int64_t{c.antialias}},
                             {"exclude_outside", int64_t{c.exclude}},
                             {"axes", Ints{-2, 3}}},
                         c.scales, {});
    ASSERT_TRUE(got.ok()) << c.mode << " " << c.coord << ": " << got.status();
    ASSERT_EQ((*got)[0].shape(), Shape(out)) << c.mode << " " << c.coord;
    SCOPED_TRACE(c.mode + " " + c.coord + (c.antialias ? " antialias" : ""));
    ExpectNear((*got)[0], want, 1e-4);
  }
}

// The float32 image path (two adjacent resized axes, blended row by row)
// against the reference wherever the resized axes sit: H and W of NHWC
// (channels inner, as the channels-last region runs it), one axis alone,
// the last axis alone, and three axes (the general path).
TEST(Opset18Test, ResizeOfAnyAxesMatchesReference) {
  const Ints dims = {2, 5, 4, 3};
  const Tensor x = RandomTensor(dims, 12);
  const Floats xs = ToVector<float>(x);
  struct Case {
    std::string mode;
    std::vector<double> scales;
  };
  const std::vector<Case> cases = {
      // Scales exact in float, so that the output sizes agree.
      {"linear", {1, 2.0, 1.5, 1}},     {"cubic", {1, 0.625, 2.5, 1}},
      {"nearest", {1, 1.75, 0.5, 1}},   {"linear", {1, 1, 2.0, 1}},
      {"linear", {1, 1, 1, 2.25}},      {"linear", {1, 1.375, 1, 1.625}},
      {"linear", {1, 0.75, 1.5, 2.0}},  {"linear", {1.5, 1, 1, 1}},
  };
  for (const Case& c : cases) {
    ResizeRef ref;
    ref.mode = c.mode;
    ref.coord = "half_pixel";
    Ints out = dims;
    Floats scales;
    for (int a = 0; a < 4; ++a) {
      out[a] = static_cast<int64_t>(std::floor(dims[a] * c.scales[a]));
      scales.push_back(static_cast<float>(c.scales[a]));
    }
    const Floats want = ref.Run(dims, xs, out, c.scales);
    auto got = RunResize(x, {{"mode", c.mode}}, scales, {});
    SCOPED_TRACE(c.mode + " " + ::testing::PrintToString(c.scales));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].shape(), Shape(out));
    ExpectNear((*got)[0], want, 1e-4);
  }
}

TEST(Opset18Test, ResizeKeepAspectRatioPolicies) {
  // resize_downsample_sizes_*_not_larger / not_smaller: X 1x1x2x4 to
  // sizes (1, 3) on axes 2 and 3; the scales are 1/2 and 3/4.
  const Tensor x = MakeTensor<float>({1, 1, 2, 4}, Ramp(8, 1));
  const Floats xs = ToVector<float>(x);
  struct Case {
    std::string policy;
    Ints out;
    double scale;
  };
  for (const Case& c : {Case{"not_larger", {1, 1, 1, 2}, 0.5},
                        Case{"not_smaller", {1, 1, 2, 3}, 0.75},
                        Case{"stretch", {1, 1, 1, 3}, 0}}) {
    for (const std::string mode : {"nearest", "linear"}) {
      auto got = RunResize(x, {{"mode", mode},
                               {"keep_aspect_ratio_policy", c.policy},
                               {"axes", Ints{2, 3}}},
                           {}, {1, 3}, 18);
      ASSERT_TRUE(got.ok()) << c.policy << ": " << got.status();
      ASSERT_EQ((*got)[0].shape(), Shape(c.out)) << c.policy;
      ResizeRef ref;
      ref.mode = mode;
      // The coordinate transform uses the one kept scale, not out / in.
      const std::vector<double> scales =
          c.policy == "stretch" ? std::vector<double>{1, 1, 0.5, 0.75}
                                : std::vector<double>{1, 1, c.scale, c.scale};
      SCOPED_TRACE(c.policy + " " + mode);
      ExpectNear((*got)[0], ref.Run({1, 1, 2, 4}, xs, c.out, scales));
    }
  }
}

TEST(Opset18Test, ResizeRefusals) {
  const Tensor x = MakeTensor<float>({1, 1, 4, 4}, Ramp(16));
  auto nearest = RunResize(x, {{"antialias", int64_t{1}}},
                           {1, 1, 0.5f, 0.5f}, {}, 18);
  EXPECT_EQ(nearest.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(nearest.status().message(), HasSubstr("antialias=1"));
  auto policy = RunResize(x, {{"keep_aspect_ratio_policy",
                               std::string("squash")}},
                          {}, {1, 1, 2, 2}, 18);
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  // scales for the named axes only.
  auto count = RunResize(x, {{"axes", Ints{2, 3}}}, {1, 1, 2, 2}, {}, 18);
  EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument);
  auto repeated = RunResize(x, {{"axes", Ints{3, -1}}}, {2, 2}, {}, 18);
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  // Sizes are run-time values: outputs past 2^31 elements are refused.
  auto huge = RunResize(x, {}, {}, {1, 1, int64_t{1} << 20, int64_t{1} << 20},
                        18);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  // An empty axis cannot be resized to a non-empty one.
  auto empty = RunResize(MakeTensor<float>({1, 0}, {}), {}, {}, {1, 3}, 18);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
}

// ------------------------------------------ AveragePool-19, LpPool-18

// A 2-D pool over [N, C, H, W] written from the specs: for each output
// position the dilated taps (start + k * dilation) inside the input;
// average divides by those (or, with count_include_pad, by the taps inside
// input + padding, as onnxruntime counts them); Lp takes
// (sum |x|^p)^(1/p). Output sizes: floor or ceil of
// (in + pads - dilation * (kernel - 1) - 1) / stride + 1, a window that
// would start in the end padding dropped.
Floats ReferencePool2D(const std::string& kind, const Ints& dims,
                       const Floats& x, const Ints& kernel, const Ints& strides,
                       const Ints& dilations, const Ints& pads, bool ceil_mode,
                       bool count_include_pad, int p, Ints* out_dims) {
  Ints out(2);
  for (int a = 0; a < 2; ++a) {
    const int64_t span = dilations[a] * (kernel[a] - 1) + 1;
    const int64_t room = dims[2 + a] + pads[a] + pads[a + 2] - span;
    out[a] = (ceil_mode ? (room + strides[a] - 1) / strides[a]
                        : room / strides[a]) + 1;
    if (ceil_mode && (out[a] - 1) * strides[a] >= dims[2 + a] + pads[a]) {
      --out[a];
    }
  }
  *out_dims = {dims[0], dims[1], out[0], out[1]};
  Floats y;
  for (int64_t plane = 0; plane < dims[0] * dims[1]; ++plane) {
    for (int64_t oh = 0; oh < out[0]; ++oh) {
      for (int64_t ow = 0; ow < out[1]; ++ow) {
        double sum = 0;
        int64_t count = 0, padded = 0;
        for (int64_t kh = 0; kh < kernel[0]; ++kh) {
          for (int64_t kw = 0; kw < kernel[1]; ++kw) {
            const int64_t ih = oh * strides[0] - pads[0] + kh * dilations[0];
            const int64_t iw = ow * strides[1] - pads[1] + kw * dilations[1];
            if (ih < dims[2] + pads[2] && iw < dims[3] + pads[3]) ++padded;
            if (ih < 0 || ih >= dims[2] || iw < 0 || iw >= dims[3]) continue;
            const double v = x[(plane * dims[2] + ih) * dims[3] + iw];
            sum += kind == "lp" ? std::pow(std::fabs(v), p) : v;
            ++count;
          }
        }
        y.push_back(static_cast<float>(
            kind == "lp" ? std::pow(sum, 1.0 / p)
                         : sum / (count_include_pad ? padded : count)));
      }
    }
  }
  return y;
}

TEST(Opset18Test, AveragePoolDilationsMatchReference) {
  const Ints dims = {2, 3, 9, 8};
  const Tensor x = RandomTensor(dims, 21);
  struct Case {
    Ints kernel, strides, dilations, pads;
    bool ceil_mode, count_include_pad;
  };
  for (const Case& c : {Case{{2, 2}, {1, 1}, {2, 2}, {0, 0, 0, 0}, false, false},
                        Case{{3, 2}, {2, 1}, {2, 3}, {1, 2, 2, 1}, false, true},
                        Case{{2, 3}, {2, 2}, {3, 2}, {1, 1, 1, 1}, true, false},
                        Case{{3, 3}, {3, 2}, {2, 2}, {2, 1, 2, 2}, true, true}}) {
    Ints want_dims;
    const Floats want = ReferencePool2D(
        "avg", dims, ToVector<float>(x), c.kernel, c.strides, c.dilations,
        c.pads, c.ceil_mode, c.count_include_pad, 1, &want_dims);
    auto got = RunKernel(
        CpuKernelRegistry(),
        MakeNode("AveragePool", {"x"}, {"y"},
                 {{"kernel_shape", c.kernel},
                  {"strides", c.strides},
                  {"dilations", c.dilations},
                  {"pads", c.pads},
                  {"ceil_mode", int64_t{c.ceil_mode}},
                  {"count_include_pad", int64_t{c.count_include_pad}}}),
        {x}, Opset(19));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].shape(), Shape(want_dims));
    ExpectNear((*got)[0], want);
  }
  // Dilations are AveragePool-19's.
  auto v11 = RunKernel(CpuKernelRegistry(),
                       MakeNode("AveragePool", {"x"}, {"y"},
                                {{"kernel_shape", Ints{2, 2}},
                                 {"dilations", Ints{2, 2}}}),
                       {x}, Opset(11));
  EXPECT_EQ(v11.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(v11.status().message(), HasSubstr("dilations"));
}

TEST(Opset18Test, LpPoolMatchesReference) {
  const Ints dims = {1, 2, 7, 6};
  const Tensor x = RandomTensor(dims, 22, -2, 2);
  struct Case {
    int p;
    Ints kernel, strides, dilations, pads;
    bool ceil_mode;
    int64_t opset;
  };
  for (const Case& c :
       {Case{2, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, 11},
        Case{1, {3, 2}, {2, 2}, {1, 1}, {1, 0, 1, 1}, false, 18},
        Case{3, {2, 2}, {2, 2}, {2, 1}, {0, 1, 1, 0}, true, 18},
        Case{2, {3, 3}, {2, 3}, {1, 2}, {1, 1, 1, 1}, true, 0}}) {
    Ints want_dims;
    const Floats want = ReferencePool2D(
        "lp", dims, ToVector<float>(x), c.kernel, c.strides, c.dilations,
        c.pads, c.ceil_mode, false, c.p, &want_dims);
    auto got = RunKernel(CpuKernelRegistry(),
                         MakeNode("LpPool", {"x"}, {"y"},
                                  {{"kernel_shape", c.kernel},
                                   {"strides", c.strides},
                                   {"dilations", c.dilations},
                                   {"pads", c.pads},
                                   {"ceil_mode", int64_t{c.ceil_mode}},
                                   {"p", int64_t{c.p}}}),
                         {x}, Opset(c.opset));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].shape(), Shape(want_dims));
    ExpectNear((*got)[0], want);
  }
  // ceil_mode is LpPool-18's; p must be positive.
  auto v11 = RunKernel(CpuKernelRegistry(),
                       MakeNode("LpPool", {"x"}, {"y"},
                                {{"kernel_shape", Ints{2, 2}},
                                 {"ceil_mode", int64_t{1}}}),
                       {x}, Opset(11));
  EXPECT_EQ(v11.status().code(), absl::StatusCode::kUnimplemented);
  auto p0 = RunKernel(CpuKernelRegistry(),
                      MakeNode("LpPool", {"x"}, {"y"},
                               {{"kernel_shape", Ints{2, 2}},
                                {"p", int64_t{0}}}),
                      {x}, Opset(18));
  EXPECT_EQ(p0.status().code(), absl::StatusCode::kInvalidArgument);
}

// -------------------------------------------------- Cast-19, CastLike-19

TEST(Opset18Test, CastSaturateChangesNothingOutsideFloat8) {
  const Tensor x = MakeTensor<float>({4}, {1.5f, -2.5f, 70000.0f, 3e9f});
  for (int64_t saturate : {0, 1}) {
    RunKernelOptions options = Opset(19);
    options.output_dtypes = {DType::kFloat16};
    auto f16 = RunKernel(CpuKernelRegistry(),
                         MakeNode("Cast", {"x"}, {"y"},
                                  {{"to", int64_t{10}},
                                   {"saturate", saturate}}),
                         {x}, options);
    ASSERT_TRUE(f16.ok()) << f16.status();
    ASSERT_EQ((*f16)[0].dtype(), DType::kFloat16);
    // 70000 and 3e9 overflow float16 to +inf whatever saturate says.
    EXPECT_THAT(ToVector<uint16_t>((*f16)[0]),
                ElementsAre(0x3e00, 0xc100, 0x7c00, 0x7c00));
    options.output_dtypes = {DType::kInt32};
    auto i32 = RunKernel(CpuKernelRegistry(),
                         MakeNode("Cast", {"x"}, {"y"},
                                  {{"to", int64_t{6}},
                                   {"saturate", saturate}}),
                         {x}, options);
    ASSERT_TRUE(i32.ok()) << i32.status();
    EXPECT_THAT(ToVector<int32_t>((*i32)[0]),
                ElementsAre(1, -2, 70000, std::numeric_limits<int32_t>::max()));
    options.output_dtypes = {DType::kFloat64};
    auto like = RunKernel(CpuKernelRegistry(),
                          MakeNode("CastLike", {"x", "t"}, {"y"},
                                   {{"saturate", saturate}}),
                          {x, MakeTensor<double>({1}, {0})}, options);
    ASSERT_TRUE(like.ok()) << like.status();
    EXPECT_THAT(ToVector<double>((*like)[0]),
                ElementsAre(1.5, -2.5, 70000.0, 3e9));
  }
}

TEST(Opset18Test, CastToNarrowTypesIsRefused) {
  const Tensor x = MakeTensor<float>({1}, {1});
  const std::vector<std::pair<int64_t, std::string>> types = {
      {17, "FLOAT8E4M3FN"}, {18, "FLOAT8E4M3FNUZ"}, {19, "FLOAT8E5M2"},
      {20, "FLOAT8E5M2FNUZ"}, {21, "UINT4"}, {22, "INT4"}, {23, "FLOAT4E2M1"}};
  for (const auto& [to, name] : types) {
    auto out = RunKernel(CpuKernelRegistry(),
                         MakeNode("Cast", {"x"}, {"y"},
                                  {{"to", to}, {"saturate", int64_t{1}}}),
                         {x}, Opset(23));
    EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented) << to;
    EXPECT_THAT(out.status().message(), HasSubstr(name));
    EXPECT_THAT(out.status().message(), HasSubstr("Cast-23"));
  }
  auto bad = RunKernel(CpuKernelRegistry(),
                       MakeNode("Cast", {"x"}, {"y"},
                                {{"to", int64_t{1}}, {"saturate", int64_t{2}}}),
                       {x}, Opset(19));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

// ------------------------------------- ScatterElements/ScatterND-18

TEST(Opset18Test, ScatterMaxMinReductions) {
  // Index 1 is hit twice: max/min fold both updates into the data.
  const Tensor data = MakeTensor<float>({4}, {5, 5, 5, 5});
  const Tensor idx = MakeTensor<int64_t>({4}, {1, 3, 1, 0});
  const Tensor upd = MakeTensor<float>({4}, {7, 2, 9, 4});
  auto run = [&](const std::string& op, const std::string& r, int64_t opset) {
    const bool nd = op == "ScatterND";
    return RunKernel(CpuKernelRegistry(),
                     MakeNode(op, {"d", "i", "u"}, {"y"}, {{"reduction", r}}),
                     {data, nd ? MakeTensor<int64_t>({4, 1}, {1, 3, 1, 0}) : idx,
                      upd},
                     Opset(opset));
  };
  for (const std::string op : {"ScatterElements", "ScatterND"}) {
    auto max = run(op, "max", 18);
    ASSERT_TRUE(max.ok()) << op << ": " << max.status();
    EXPECT_THAT(ToVector<float>((*max)[0]), ElementsAre(5, 9, 5, 5)) << op;
    auto min = run(op, "min", 18);
    ASSERT_TRUE(min.ok()) << op << ": " << min.status();
    EXPECT_THAT(ToVector<float>((*min)[0]), ElementsAre(4, 5, 5, 2)) << op;
    auto add = run(op, "add", 16);
    ASSERT_TRUE(add.ok()) << op << ": " << add.status();
    EXPECT_THAT(ToVector<float>((*add)[0]), ElementsAre(9, 21, 5, 7)) << op;
    // max and min are opset 18's; add and mul 16's.
    EXPECT_EQ(run(op, "max", 16).status().code(),
              absl::StatusCode::kInvalidArgument) << op;
    EXPECT_EQ(run(op, "mul", 13).status().code(),
              absl::StatusCode::kInvalidArgument) << op;
    EXPECT_EQ(run(op, "median", 18).status().code(),
              absl::StatusCode::kUnimplemented) << op;
  }
  // Integers, along axis 1 of a 2-D ScatterElements.
  auto ints = RunKernel(
      CpuKernelRegistry(),
      MakeNode("ScatterElements", {"d", "i", "u"}, {"y"},
               {{"axis", int64_t{1}}, {"reduction", std::string("max")}}),
      {MakeTensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}),
       MakeTensor<int64_t>({2, 2}, {0, 0, 2, 1}),
       MakeTensor<int32_t>({2, 2}, {-1, 8, 3, 9})},
      Opset(18));
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_THAT(ToVector<int32_t>((*ints)[0]), ElementsAre(8, 2, 3, 4, 9, 6));
}

// ---------------------------------------------------------------- DFT-20

TEST(Opset18Test, DftAxisIsAnInputFromOpset20) {
  // A real signal [2, 5, 3, 1]: transform axis 1 (length 5) or axis 2.
  const Ints dims = {2, 5, 3, 1};
  const Tensor x = RandomTensor(dims, 71);
  const Floats xs = ToVector<float>(x);
  for (int64_t axis : {1, 2, -3, -2}) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    const int64_t n = dims[a];
    // The naive DFT along axis a.
    Floats want;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t i = 0; i < dims[1]; ++i) {
        for (int64_t j = 0; j < dims[2]; ++j) {
          double re = 0, im = 0;
          const int64_t k = a == 1 ? i : j;
          for (int64_t t = 0; t < n; ++t) {
            const double v = xs[(b * dims[1] + (a == 1 ? t : i)) * dims[2] +
                                (a == 2 ? t : j)];
            re += v * std::cos(-2 * M_PI * k * t / n);
            im += v * std::sin(-2 * M_PI * k * t / n);
          }
          want.push_back(static_cast<float>(re));
          want.push_back(static_cast<float>(im));
        }
      }
    }
    auto v20 = RunKernel(CpuKernelRegistry(),
                         MakeNode("DFT", {"x", "", "a"}, {"y"}),
                         {x, Tensor(), MakeTensor<int64_t>({}, {axis})},
                         Opset(20));
    ASSERT_TRUE(v20.ok()) << axis << ": " << v20.status();
    EXPECT_EQ((*v20)[0].shape(), Shape({2, 5, 3, 2}));
    ExpectNear((*v20)[0], want, 1e-4);
    if (axis > 0) {
      // Opset 17's attribute gives the same.
      auto v17 = RunKernel(CpuKernelRegistry(),
                           MakeNode("DFT", {"x"}, {"y"}, {{"axis", axis}}),
                           {x}, Opset(17));
      ASSERT_TRUE(v17.ok()) << v17.status();
      ExpectNear((*v17)[0], want, 1e-4);
    }
  }
  // No axis input: -2, the last signal axis; with dft_length 4 (zero
  // padded past the signal's 3 samples... here the signal is cut to 4 of
  // 5 along axis 1 instead, when axis 1 is given).
  auto dflt = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x"}, {"y"}),
                        {x}, Opset(20));
  ASSERT_TRUE(dflt.ok()) << dflt.status();
  auto last = RunKernel(CpuKernelRegistry(),
                        MakeNode("DFT", {"x", "", "a"}, {"y"}),
                        {x, Tensor(), MakeTensor<int64_t>({}, {2})}, Opset(20));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(ToVector<float>((*dflt)[0]), ToVector<float>((*last)[0]));
  auto cut = RunKernel(CpuKernelRegistry(),
                       MakeNode("DFT", {"x", "n", "a"}, {"y"}),
                       {x, MakeTensor<int64_t>({}, {4}),
                        MakeTensor<int64_t>({}, {1})},
                       Opset(20));
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ((*cut)[0].shape(), Shape({2, 4, 3, 2}));
  // The complex axis is not a signal axis.
  auto bad = RunKernel(CpuKernelRegistry(),
                       MakeNode("DFT", {"x", "", "a"}, {"y"}),
                       {x, Tensor(), MakeTensor<int64_t>({}, {-1})}, Opset(20));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

// --------------------------------------------------------- GridSample-20

// GridSample on [N, C, D, H, W] from the spec: the grid's (x, y, z) map
// [-1, 1] to the volume's W, H, D extents (corner voxel centres with
// align_corners, else their outer edges); linear weights the 8 voxels
// around the point, nearest rounds half to even; out-of-range voxels read
// 0 (zeros) or the clamped edge (border). Grid points stay inside
// [-1, 1] here, where onnxruntime's extra clamping of the point itself
// does not apply.
Floats ReferenceGridSample3D(const Ints& xd, const Floats& x, const Ints& gd,
                             const Floats& grid, const std::string& mode,
                             const std::string& padding, bool align) {
  const int64_t n = xd[0], c = xd[1];
  const int64_t size[3] = {xd[4], xd[3], xd[2]};
  const int64_t points = gd[1] * gd[2] * gd[3];
  Floats y(n * c * points);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* vol = x.data() + (b * c + ch) * size[0] * size[1] * size[2];
      auto at = [&](int64_t i, int64_t j, int64_t k) -> double {
        const int64_t v[3] = {i, j, k};
        int64_t w[3];
        for (int a = 0; a < 3; ++a) {
          if (padding == "zeros" && (v[a] < 0 || v[a] >= size[a])) return 0;
          w[a] = std::clamp<int64_t>(v[a], 0, size[a] - 1);
        }
        return vol[(w[2] * size[1] + w[1]) * size[0] + w[0]];
      };
      for (int64_t p = 0; p < points; ++p) {
        double coord[3];
        for (int a = 0; a < 3; ++a) {
          const double g = grid[(b * points + p) * 3 + a];
          coord[a] = align ? (g + 1) / 2 * (size[a] - 1)
                           : ((g + 1) * size[a] - 1) / 2;
        }
        double v = 0;
        if (mode == "nearest") {
          v = at(std::nearbyint(coord[0]), std::nearbyint(coord[1]),
                 std::nearbyint(coord[2]));
        } else {
          const int64_t i0 = std::floor(coord[0]), j0 = std::floor(coord[1]),
                        k0 = std::floor(coord[2]);
          const double fx = coord[0] - i0, fy = coord[1] - j0,
                       fz = coord[2] - k0;
          for (int dz = 0; dz < 2; ++dz) {
            for (int dy = 0; dy < 2; ++dy) {
              for (int dx = 0; dx < 2; ++dx) {
                v += (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy) *
                     (dz ? fz : 1 - fz) * at(i0 + dx, j0 + dy, k0 + dz);
              }
            }
          }
        }
        y[(b * c + ch) * points + p] = static_cast<float>(v);
      }
    }
  }
  return y;
}

TEST(Opset18Test, GridSample5DLinearAndNearest) {
  const Ints xd = {2, 3, 4, 5, 6};
  const Ints gd = {2, 3, 2, 4, 3};
  const Tensor x = RandomTensor(xd, 81);
  const Tensor grid = RandomTensor(gd, 82, -1, 1);
  for (const std::string mode : {"linear", "nearest"}) {
    for (const std::string padding : {"zeros", "border"}) {
      for (int64_t align : {0, 1}) {
        auto out = RunKernel(CpuKernelRegistry(),
                             MakeNode("GridSample", {"x", "g"}, {"y"},
                                      {{"mode", mode},
                                       {"padding_mode", padding},
                                       {"align_corners", align}}),
                             {x, grid}, Opset(20));
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ((*out)[0].shape(), Shape({2, 3, 3, 2, 4}));
        SCOPED_TRACE(mode + " " + padding + (align ? " align" : ""));
        ExpectNear((*out)[0],
                   ReferenceGridSample3D(xd, ToVector<float>(x), gd,
                                         ToVector<float>(grid), mode, padding,
                                         align),
                   1e-5);
      }
    }
  }
  // Reflection folds points back inside: a grid far outside still samples.
  auto reflect = RunKernel(
      CpuKernelRegistry(),
      MakeNode("GridSample", {"x", "g"}, {"y"},
               {{"mode", std::string("linear")},
                {"padding_mode", std::string("reflection")}}),
      {x, RandomTensor(gd, 83, -3, 3)}, Opset(20));
  ASSERT_TRUE(reflect.ok()) << reflect.status();
  // cubic is defined for 4-D only; 5-D is GridSample-20's.
  auto cubic = RunKernel(CpuKernelRegistry(),
                         MakeNode("GridSample", {"x", "g"}, {"y"},
                                  {{"mode", std::string("cubic")}}),
                         {x, grid}, Opset(20));
  EXPECT_EQ(cubic.status().code(), absl::StatusCode::kInvalidArgument);
  auto v16 = RunKernel(CpuKernelRegistry(),
                       MakeNode("GridSample", {"x", "g"}, {"y"}), {x, grid},
                       Opset(16));
  EXPECT_EQ(v16.status().code(), absl::StatusCode::kUnimplemented);
  // The 4-D path takes opset 20's mode names.
  auto linear4 = RunKernel(CpuKernelRegistry(),
                           MakeNode("GridSample", {"x", "g"}, {"y"},
                                    {{"mode", std::string("linear")}}),
                           {RandomTensor({1, 1, 3, 3}, 84),
                            RandomTensor({1, 2, 2, 2}, 85)},
                           Opset(20));
  EXPECT_TRUE(linear4.ok()) << linear4.status();
}

// --------------------------------------- Reduce*-18 axes input, -20 bool

TEST(Opset18Test, ReductionsTakeAxesInputAtOpset18) {
  const Ints dims = {2, 3, 4};
  const Tensor x = RandomTensor(dims, 91, 0.5f, 2);
  const Floats xs = ToVector<float>(x);
  const std::vector<std::string> ops = {
      "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
      "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
      "ReduceSumSquare"};
  // The reduction of a list of values, from each op's definition.
  auto fold = [](const std::string& op, const std::vector<double>& v) {
    double acc = op == "ReduceProd" ? 1 : 0;
    double max = -INFINITY, min = INFINITY;
    for (double e : v) {
      max = std::max(max, e);
      min = std::min(min, e);
      if (op == "ReduceProd") {
        acc *= e;
      } else if (op == "ReduceL1") {
        acc += std::fabs(e);
      } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
        acc += e * e;
      } else if (op == "ReduceLogSumExp") {
        acc += std::exp(e);
      } else {
        acc += e;
      }
    }
    if (op == "ReduceMax") return max;
    if (op == "ReduceMin") return min;
    if (op == "ReduceMean") return acc / v.size();
    if (op == "ReduceL2") return std::sqrt(acc);
    if (op == "ReduceLogSum" || op == "ReduceLogSumExp") return std::log(acc);
    return acc;
  };
  for (const std::string& op : ops) {
    SCOPED_TRACE(op);
    for (int64_t keepdims : {0, 1}) {
      // Axes {0, -1} as an input: reduce axes 0 and 2, keep axis 1.
      Floats want;
      for (int64_t j = 0; j < 3; ++j) {
        std::vector<double> v;
        for (int64_t i = 0; i < 2; ++i) {
          for (int64_t k = 0; k < 4; ++k) v.push_back(xs[(i * 3 + j) * 4 + k]);
        }
        want.push_back(static_cast<float>(fold(op, v)));
      }
      auto out = RunKernel(CpuKernelRegistry(),
                           MakeNode(op, {"x", "a"}, {"y"},
                                    {{"keepdims", keepdims}}),
                           {x, MakeTensor<int64_t>({2}, {0, -1})}, Opset(18));
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ((*out)[0].shape(), keepdims ? Shape({1, 3, 1}) : Shape({3}));
      ExpectNear((*out)[0], want, 1e-5);
    }
    // No axes: everything, unless noop_with_empty_axes (then X itself).
    std::vector<double> all(xs.begin(), xs.end());
    auto every = RunKernel(CpuKernelRegistry(),
                           MakeNode(op, {"x"}, {"y"}, {{"keepdims", int64_t{0}}}),
                           {x}, Opset(18));
    ASSERT_TRUE(every.ok()) << every.status();
    EXPECT_EQ((*every)[0].shape(), Shape({}));
    ExpectNear((*every)[0], {static_cast<float>(fold(op, all))}, 1e-5);
    auto noop = RunKernel(CpuKernelRegistry(),
                          MakeNode(op, {"x", "a"}, {"y"},
                                   {{"noop_with_empty_axes", int64_t{1}}}),
                          {x, MakeTensor<int64_t>({0}, {})}, Opset(18));
    ASSERT_TRUE(noop.ok()) << noop.status();
    EXPECT_EQ((*noop)[0].shape(), Shape(dims));
    if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" ||
        op == "ReduceMin" || op == "ReduceProd") {
      EXPECT_EQ(ToVector<float>((*noop)[0]), xs);
    }
    // Before opset 18 (13 here) axes is an attribute.
    auto v13 = RunKernel(CpuKernelRegistry(),
                         MakeNode(op, {"x"}, {"y"}, {{"axes", Ints{1}}}),
                         {x}, Opset(13));
    ASSERT_TRUE(v13.ok()) << v13.status();
    EXPECT_EQ((*v13)[0].shape(), Shape({2, 1, 4}));
  }
}

TEST(Opset18Test, ReduceMaxMinOnBoolFromOpset20) {
  std::vector<uint8_t> bits = {1, 0, 0, 0, 1, 1};
  const Tensor x = Tensor::FromVector(DType::kBool, Shape({2, 3}), bits);
  auto max = RunKernel(CpuKernelRegistry(), MakeNode("ReduceMax", {"x", "a"}, {"y"}),
                       {x, MakeTensor<int64_t>({1}, {1})}, Opset(20));
  ASSERT_TRUE(max.ok()) << max.status();
  ASSERT_EQ((*max)[0].dtype(), DType::kBool);
  EXPECT_THAT(ToVector<bool>((*max)[0]), ElementsAre(true, true));
  auto min = RunKernel(CpuKernelRegistry(), MakeNode("ReduceMin", {"x", "a"}, {"y"},
                                                     {{"keepdims", int64_t{0}}}),
                       {x, MakeTensor<int64_t>({1}, {0})}, Opset(20));
  ASSERT_TRUE(min.ok()) << min.status();
  EXPECT_THAT(ToVector<bool>((*min)[0]), ElementsAre(false, false, false));
  auto all = RunKernel(CpuKernelRegistry(), MakeNode("ReduceMin", {"x"}, {"y"}),
                       {x}, Opset(0));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(ToVector<bool>((*all)[0]), ElementsAre(false));
  // Empty reductions give the identities: any() false, all() true.
  const Tensor empty = Tensor::FromVector(DType::kBool, Shape({0, 2}),
                                          std::vector<uint8_t>{});
  auto emax = RunKernel(CpuKernelRegistry(), MakeNode("ReduceMax", {"x", "a"}, {"y"}),
                        {empty, MakeTensor<int64_t>({1}, {0})}, Opset(20));
  ASSERT_TRUE(emax.ok()) << emax.status();
  EXPECT_THAT(ToVector<bool>((*emax)[0]), ElementsAre(false, false));
  // bool is opset 20's, and ReduceSum's never.
  auto v18 = RunKernel(CpuKernelRegistry(), MakeNode("ReduceMax", {"x"}, {"y"}),
                       {x}, Opset(18));
  EXPECT_EQ(v18.status().code(), absl::StatusCode::kUnimplemented);
  auto sum = RunKernel(CpuKernelRegistry(), MakeNode("ReduceSum", {"x"}, {"y"}),
                       {x}, Opset(20));
  EXPECT_EQ(sum.status().code(), absl::StatusCode::kUnimplemented);
}

// ---------------------------------------------------------------- Gelu-20

TEST(Opset18Test, GeluBothForms) {
  const Floats x = {-6, -2.5f, -1, -0.3f, 0, 0.3f, 1, 2.5f, 6};
  Floats exact, tanh_form;
  for (float v : x) {
    const double d = v;
    exact.push_back(static_cast<float>(0.5 * d * (1 + std::erf(d / std::sqrt(2.0)))));
    tanh_form.push_back(static_cast<float>(
        0.5 * d *
        (1 + std::tanh(std::sqrt(2 / M_PI) * (d + 0.044715 * d * d * d)))));
  }
  const Tensor xt = MakeTensor<float>({9}, x);
  for (const std::string approximate : {"", "none", "tanh"}) {
    std::map<std::string, Attribute> attrs;
    if (!approximate.empty()) attrs["approximate"] = approximate;
    auto out = RunKernel(CpuKernelRegistry(),
                         MakeNode("Gelu", {"x"}, {"y"}, attrs), {xt},
                         Opset(20));
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], approximate == "tanh" ? tanh_form : exact, 1e-6);
  }
  // The registry's Gelu is the default domain's (opset 20).
  EXPECT_NE(CpuKernelRegistry().Find("Gelu"), nullptr);
}

}  // namespace
}  // namespace glint::cpu
