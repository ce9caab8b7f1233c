// The ops opsets 18-23 added: Mish, BitwiseAnd/Or/Xor/Not,
// GroupNormalization (18 and 21), RMSNormalization (23), Col2Im,
// CenterCropPad. Expected values are references computed here (loops
// written from the ONNX operator specs, or closed forms), not the kernels'
// own code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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

Floats Ramp(int64_t n, float start = 0.0f, float step = 1.0f) {
  Floats v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

void ExpectNear(const Tensor& got, const std::vector<double>& want,
                double tol = 1e-5) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double g = 0;
    if (got.dtype() == DType::kFloat32) {
      g = got.data<float>()[i];
    } else if (got.dtype() == DType::kFloat64) {
      g = got.data<double>()[i];
    } else if (got.dtype() == DType::kFloat16) {
      g = Float16ToFloat(got.data<uint16_t>()[i]);
    } else {
      FAIL() << "unexpected dtype";
    }
    ASSERT_NEAR(g, want[i], tol * std::max(1.0, std::fabs(want[i])))
        << "element " << i;
  }
}

// A bool tensor (std::vector<bool> has no data()).
Tensor BoolTensor(Ints dims, const std::vector<int>& values) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  return Tensor::FromVector(DType::kBool, Shape(std::move(dims)), bytes);
}

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    v.push_back(t.dtype() == DType::kFloat64 ? t.data<double>()[i]
                                             : t.data<float>()[i]);
  }
  return v;
}

// ------------------------------------------------------ Mish, Bitwise*

TEST(NewOpsTest, MishIsXTanhSoftplus) {
  const Floats x = {-100, -20, -3, -1, -0.25f, 0, 0.5f, 1, 2.5f, 20, 100};
  std::vector<double> want;
  for (float v : x) {
    // Closed form; softplus of large |x| written so double cannot overflow.
    const double sp = v > 0 ? v + std::log1p(std::exp(-double{v}))
                            : std::log1p(std::exp(double{v}));
    want.push_back(v * std::tanh(sp));
  }
  const int64_t n = static_cast<int64_t>(x.size());
  auto f32 = RunKernel(CpuKernelRegistry(), MakeNode("Mish", {"x"}, {"y"}),
                       {MakeTensor<float>({n}, x)}, Opset(18));
  ASSERT_TRUE(f32.ok()) << f32.status();
  ExpectNear((*f32)[0], want, 1e-6);
  std::vector<double> xd(x.begin(), x.end());
  auto f64 = RunKernel(CpuKernelRegistry(), MakeNode("Mish", {"x"}, {"y"}),
                       {MakeTensor<double>({n}, xd)}, Opset(18));
  ASSERT_TRUE(f64.ok()) << f64.status();
  ExpectNear((*f64)[0], want, 1e-12);
  auto ints = RunKernel(CpuKernelRegistry(), MakeNode("Mish", {"x"}, {"y"}),
                        {MakeTensor<int32_t>({1}, {1})}, Opset(18));
  EXPECT_EQ(ints.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(NewOpsTest, BitwiseOpsOnIntegers) {
  const Tensor a = MakeTensor<int32_t>({2, 3}, {0, 1, 2, -1, 0x0f0f, -8});
  const Tensor b = MakeTensor<int32_t>({3}, {3, 5, 0x00ff});
  const std::vector<int32_t> av = ToVector<int32_t>(a);
  const std::vector<int32_t> bv = ToVector<int32_t>(b);
  for (const std::string op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    std::vector<int32_t> want;
    for (int i = 0; i < 6; ++i) {
      const int32_t x = av[i], y = bv[i % 3];
      want.push_back(op == "BitwiseAnd"  ? (x & y)
                     : op == "BitwiseOr" ? (x | y)
                                         : (x ^ y));
    }
    auto out = RunKernel(CpuKernelRegistry(), MakeNode(op, {"a", "b"}, {"y"}),
                         {a, b}, Opset(18));
    ASSERT_TRUE(out.ok()) << op << ": " << out.status();
    EXPECT_EQ((*out)[0].shape(), Shape({2, 3}));
    EXPECT_THAT(ToVector<int32_t>((*out)[0]), ElementsAreArray(want)) << op;
  }
  auto u8 = RunKernel(CpuKernelRegistry(),
                      MakeNode("BitwiseXor", {"a", "b"}, {"y"}),
                      {MakeTensor<uint8_t>({2}, {0xf0, 0xaa}),
                       MakeTensor<uint8_t>({2}, {0xff, 0x0f})},
                      Opset(18));
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_THAT(ToVector<uint8_t>((*u8)[0]), ElementsAre(0x0f, 0xa5));
  auto not8 = RunKernel(CpuKernelRegistry(), MakeNode("BitwiseNot", {"x"}, {"y"}),
                        {MakeTensor<int8_t>({3}, {0, -1, 5})}, Opset(18));
  ASSERT_TRUE(not8.ok()) << not8.status();
  EXPECT_THAT(ToVector<int8_t>((*not8)[0]), ElementsAre(-1, 0, -6));
  auto not64 = RunKernel(CpuKernelRegistry(),
                         MakeNode("BitwiseNot", {"x"}, {"y"}),
                         {MakeTensor<uint64_t>({1}, {1})}, Opset(18));
  ASSERT_TRUE(not64.ok()) << not64.status();
  EXPECT_THAT(ToVector<uint64_t>((*not64)[0]),
              ElementsAre(~uint64_t{1}));
  // Integers only.
  auto f = RunKernel(CpuKernelRegistry(),
                     MakeNode("BitwiseAnd", {"a", "b"}, {"y"}),
                     {MakeTensor<float>({1}, {1}), MakeTensor<float>({1}, {1})},
                     Opset(18));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kUnimplemented);
  auto b8 = RunKernel(CpuKernelRegistry(), MakeNode("BitwiseNot", {"x"}, {"y"}),
                      {BoolTensor({1}, {1})}, Opset(18));
  EXPECT_EQ(b8.status().code(), absl::StatusCode::kUnimplemented);
}

// ------------------------------- GroupNormalization, RMSNormalization

// GroupNormalization from its spec: each sample's C channels in G groups
// of C/G; mean and biased variance over a group's channels and spatial
// elements; scale/bias per group (opset 18) or per channel (21).
std::vector<double> ReferenceGroupNorm(const Ints& dims,
                                       const std::vector<double>& x,
                                       const std::vector<double>& scale,
                                       const std::vector<double>& bias,
                                       int64_t groups, double epsilon,
                                       bool per_channel) {
  const int64_t n = dims[0], c = dims[1];
  int64_t spatial = 1;
  for (size_t d = 2; d < dims.size(); ++d) spatial *= dims[d];
  const int64_t cg = c / groups;
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      double mean = 0, var = 0;
      const int64_t count = cg * spatial;
      for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch) {
        for (int64_t i = 0; i < spatial; ++i) {
          mean += x[(b * c + ch) * spatial + i];
        }
      }
      mean /= count;
      for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch) {
        for (int64_t i = 0; i < spatial; ++i) {
          const double d = x[(b * c + ch) * spatial + i] - mean;
          var += d * d;
        }
      }
      var /= count;
      for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch) {
        const int64_t p = per_channel ? ch : g;
        for (int64_t i = 0; i < spatial; ++i) {
          const int64_t at = (b * c + ch) * spatial + i;
          y[at] = (x[at] - mean) / std::sqrt(var + epsilon) * scale[p] +
                  bias[p];
        }
      }
    }
  }
  return y;
}

TEST(NewOpsTest, GroupNormalizationOpsets18And21) {
  const Ints dims = {2, 6, 3, 5};
  const Tensor x = RandomTensor(dims, 31, -3, 5);
  for (int64_t opset : {18, 21, 0}) {
    const bool per_channel = opset != 18;
    const int64_t params = per_channel ? 6 : 3;
    const Tensor scale = RandomTensor({params}, 32, 0.5f, 2);
    const Tensor bias = RandomTensor({params}, 33);
    const std::vector<double> want = ReferenceGroupNorm(
        dims, AsDoubles(x), AsDoubles(scale), AsDoubles(bias), 3, 1e-3,
        per_channel);
    auto out = RunKernel(CpuKernelRegistry(),
                         MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"},
                                  {{"num_groups", int64_t{3}},
                                   {"epsilon", 1e-3f}}),
                         {x, scale, bias}, Opset(opset));
    ASSERT_TRUE(out.ok()) << opset << ": " << out.status();
    SCOPED_TRACE(opset);
    ExpectNear((*out)[0], want, 1e-5);
  }
  // float64, 2-D [N, C] (one element per channel), per-channel form.
  const Tensor x2 = MakeTensor<double>({2, 4}, {1, 2, 3, 4, -1, 5, 0, 2});
  const Tensor s2 = MakeTensor<double>({4}, {1, 2, 3, 4});
  const Tensor b2 = MakeTensor<double>({4}, {0, 1, 0, -1});
  auto f64 = RunKernel(CpuKernelRegistry(),
                       MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"},
                                {{"num_groups", int64_t{2}}}),
                       {x2, s2, b2}, Opset(21));
  ASSERT_TRUE(f64.ok()) << f64.status();
  ExpectNear((*f64)[0],
             ReferenceGroupNorm({2, 4}, ToVector<double>(x2),
                                ToVector<double>(s2), ToVector<double>(b2), 2,
                                1e-5, true),
             1e-12);
}

TEST(NewOpsTest, GroupNormalizationRefusals) {
  const Tensor x = RandomTensor({1, 6, 4}, 34);
  auto run = [&](int64_t groups, int64_t params, int64_t opset,
                 std::map<std::string, Attribute> extra = {}) {
    extra["num_groups"] = groups;
    return RunKernel(CpuKernelRegistry(),
                     MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"},
                              extra),
                     {x, RandomTensor({params}, 35), RandomTensor({params}, 36)},
                     Opset(opset));
  };
  EXPECT_EQ(run(4, 4, 18).status().code(), absl::StatusCode::kInvalidArgument);
  // Opset 21 scales per channel, 18 per group.
  EXPECT_EQ(run(3, 3, 21).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run(3, 6, 18).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(run(3, 6, 21).ok());
  auto stash = run(3, 6, 21, {{"stash_type", int64_t{10}}});
  EXPECT_EQ(stash.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(stash.status().message(), HasSubstr("stash_type=10"));
}

TEST(NewOpsTest, RmsNormalizationOverTrailingAxes) {
  const Ints dims = {2, 3, 8};
  const Tensor x = RandomTensor(dims, 41, -2, 2);
  const std::vector<double> xv = AsDoubles(x);
  for (int64_t axis : {-1, 1}) {
    const int64_t inner = axis == -1 ? 8 : 24;
    // A scale over every normalised element, then one broadcast from [8].
    for (const Ints& sdims : {axis == -1 ? Ints{8} : Ints{3, 8}, Ints{8}}) {
      int64_t scount = 1;
      for (int64_t d : sdims) scount *= d;
      const Tensor scale = RandomTensor(sdims, 42, 0.5f, 1.5f);
      const std::vector<double> sv = AsDoubles(scale);
      std::vector<double> want(xv.size());
      for (int64_t o = 0; o < 48 / inner; ++o) {
        double sq = 0;
        for (int64_t i = 0; i < inner; ++i) {
          sq += xv[o * inner + i] * xv[o * inner + i];
        }
        const double rms = std::sqrt(sq / inner + 1e-5);
        for (int64_t i = 0; i < inner; ++i) {
          want[o * inner + i] = xv[o * inner + i] / rms * sv[i % scount];
        }
      }
      auto out = RunKernel(CpuKernelRegistry(),
                           MakeNode("RMSNormalization", {"x", "s"}, {"y"},
                                    {{"axis", axis}}),
                           {x, scale}, Opset(23));
      ASSERT_TRUE(out.ok()) << out.status();
      SCOPED_TRACE(axis);
      ExpectNear((*out)[0], want, 1e-5);
    }
  }
}

TEST(NewOpsTest, RmsNormalizationMixedTypesAndRefusals) {
  // float16 X, float32 scale: Y has the scale's type.
  std::vector<Float16> xh;
  const Floats xf = {1, -2, 3, 0.5f};
  for (float v : xf) xh.push_back(Float16{FloatToFloat16(v)});
  RunKernelOptions options = Opset(23);
  options.output_dtypes = {DType::kFloat32};
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("RMSNormalization", {"x", "s"}, {"y"},
                                {{"epsilon", 0.0f}}),
                       {Tensor::FromVector(DType::kFloat16, Shape({4}), xh),
                        MakeTensor<float>({4}, {1, 1, 2, 2})},
                       options);
  ASSERT_TRUE(out.ok()) << out.status();
  const double rms = std::sqrt((1 + 4 + 9 + 0.25) / 4);
  ExpectNear((*out)[0], {1 / rms, -2 / rms, 6 / rms, 1 / rms}, 1e-6);
  auto bad_scale = RunKernel(CpuKernelRegistry(),
                             MakeNode("RMSNormalization", {"x", "s"}, {"y"}),
                             {MakeTensor<float>({2, 4}, Ramp(8)),
                              MakeTensor<float>({3}, {1, 1, 1})},
                             Opset(23));
  EXPECT_EQ(bad_scale.status().code(), absl::StatusCode::kInvalidArgument);
  auto stash = RunKernel(CpuKernelRegistry(),
                         MakeNode("RMSNormalization", {"x", "s"}, {"y"},
                                  {{"stash_type", int64_t{16}}}),
                         {MakeTensor<float>({4}, Ramp(4)),
                          MakeTensor<float>({4}, Ramp(4))},
                         Opset(23));
  EXPECT_EQ(stash.status().code(), absl::StatusCode::kUnimplemented);
}

// ------------------------------------------------ Col2Im, CenterCropPad

// Col2Im as a gather: output pixel p of channel c sums input[n, c * K + k,
// l] over the block offsets k for which (p + pad_begin - k * dilation) is
// a multiple of the stride, giving an in-range grid position l.
std::vector<double> ReferenceCol2Im(const Ints& in_dims,
                                    const std::vector<double>& x,
                                    const Ints& image, const Ints& block,
                                    const Ints& strides, const Ints& dilations,
                                    const Ints& pads) {
  const int sd = static_cast<int>(image.size());
  int64_t k_total = 1, plane = 1;
  Ints grid(sd);
  for (int d = 0; d < sd; ++d) {
    k_total *= block[d];
    plane *= image[d];
    grid[d] = (image[d] + pads[d] + pads[d + sd] -
               (dilations[d] * (block[d] - 1) + 1)) / strides[d] + 1;
  }
  const int64_t nc = in_dims[0] * (in_dims[1] / k_total);
  std::vector<double> y(nc * plane, 0.0);
  for (int64_t c = 0; c < nc; ++c) {
    for (int64_t p = 0; p < plane; ++p) {
      for (int64_t kk = 0; kk < k_total; ++kk) {
        int64_t prest = p, krest = kk, l = 0, lstride = 1;
        bool ok = true;
        for (int d = sd - 1; d >= 0; --d) {
          const int64_t pd = prest % image[d], kd = krest % block[d];
          prest /= image[d];
          krest /= block[d];
          const int64_t t = pd + pads[d] - kd * dilations[d];
          if (t < 0 || t % strides[d] != 0 || t / strides[d] >= grid[d]) {
            ok = false;
            break;
          }
          l += t / strides[d] * lstride;
          lstride *= grid[d];
        }
        if (ok) y[c * plane + p] += x[(c * k_total + kk) * in_dims[2] + l];
      }
    }
  }
  return y;
}

TEST(NewOpsTest, Col2ImOnnxExample) {
  // ONNX's col2im example: one channel, block 1x5 over a 5x5 image.
  Floats x(25);
  for (int r = 0; r < 5; ++r) {
    for (int l = 0; l < 5; ++l) x[r * 5 + l] = 1 + r + 5 * l;
  }
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Col2Im", {"x", "i", "b"}, {"y"}),
                       {MakeTensor<float>({1, 5, 5}, x),
                        MakeTensor<int64_t>({2}, {5, 5}),
                        MakeTensor<int64_t>({2}, {1, 5})},
                       Opset(18));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 1, 5, 5}));
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAreArray(Ramp(25, 1)));
}

TEST(NewOpsTest, Col2ImMatchesGatherReference) {
  struct Case {
    Ints image, block, strides, dilations, pads;
    int64_t n, c;
  };
  const std::vector<Case> cases = {
      {{5, 6}, {2, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 2, 3},
      {{7, 6}, {3, 2}, {2, 1}, {1, 2}, {1, 0, 2, 1}, 1, 2},
      {{9}, {3}, {2}, {3}, {2, 1}, 2, 1},
      {{4, 5, 3}, {2, 2, 2}, {1, 2, 1}, {2, 1, 1}, {1, 0, 0, 0, 1, 1}, 1, 2},
  };
  for (const Case& c : cases) {
    const int sd = static_cast<int>(c.image.size());
    int64_t k = 1, l = 1;
    for (int d = 0; d < sd; ++d) {
      k *= c.block[d];
      l *= (c.image[d] + c.pads[d] + c.pads[d + sd] -
            (c.dilations[d] * (c.block[d] - 1) + 1)) / c.strides[d] + 1;
    }
    const Ints in_dims = {c.n, c.c * k, l};
    const Tensor x = RandomTensor(in_dims, 51);
    auto out = RunKernel(CpuKernelRegistry(),
                         MakeNode("Col2Im", {"x", "i", "b"}, {"y"},
                                  {{"strides", c.strides},
                                   {"dilations", c.dilations},
                                   {"pads", c.pads}}),
                         {x, MakeTensor<int64_t>({sd}, c.image),
                          MakeTensor<int64_t>({sd}, c.block)},
                         Opset(18));
    ASSERT_TRUE(out.ok()) << out.status();
    Ints want_dims = {c.n, c.c};
    want_dims.insert(want_dims.end(), c.image.begin(), c.image.end());
    EXPECT_EQ((*out)[0].shape(), Shape(want_dims));
    ExpectNear((*out)[0],
               ReferenceCol2Im(in_dims, AsDoubles(x), c.image, c.block,
                               c.strides, c.dilations, c.pads),
               1e-5);
  }
}

TEST(NewOpsTest, Col2ImRefusals) {
  auto run = [](Ints in_dims, Ints image, Ints block) {
    int64_t n = 1;
    for (int64_t d : in_dims) n *= d;
    return RunKernel(
        CpuKernelRegistry(), MakeNode("Col2Im", {"x", "i", "b"}, {"y"}),
        {MakeTensor<float>(in_dims, Floats(n, 1.0f)),
         MakeTensor<int64_t>({static_cast<int64_t>(image.size())}, image),
         MakeTensor<int64_t>({static_cast<int64_t>(block.size())}, block)},
        Opset(18));
  };
  // 4 blocks of 2x2 fit a 3x3 image; 5 columns do not.
  EXPECT_TRUE(run({1, 4, 4}, {3, 3}, {2, 2}).ok());
  EXPECT_EQ(run({1, 4, 5}, {3, 3}, {2, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Rows not a multiple of prod(block_shape).
  EXPECT_EQ(run({1, 6, 4}, {3, 3}, {2, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A block larger than the image, a zero block, mismatched lengths.
  EXPECT_EQ(run({1, 4, 1}, {1, 3}, {2, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({1, 4, 4}, {3, 3}, {0, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({1, 4, 4}, {3, 3}, {4}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // image_shape is a run-time value: a huge image is refused, not
  // allocated.
  EXPECT_EQ(run({1, 1, 1}, {int64_t{1} << 20, int64_t{1} << 20}, {1, 1})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({1, 1, 1}, {INT64_MAX, 1}, {INT64_MAX, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// CenterCropPad as ONNX's reference does it: per axis, a longer input is
// sliced from floor(diff / 2), a shorter one zero-padded with floor(diff /
// 2) before and the rest after.
Floats ReferenceCenterCropPad(const Ints& dims, const Floats& x,
                              const Ints& out) {
  const int rank = static_cast<int>(dims.size());
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  Floats y(total, 0.0f);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, src = 0, stride = 1;
    bool inside = true;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t o = rest % out[d];
      rest /= out[d];
      int64_t j = o;
      if (dims[d] > out[d]) j = o + (dims[d] - out[d]) / 2;
      if (dims[d] < out[d]) j = o - (out[d] - dims[d]) / 2;
      if (j < 0 || j >= dims[d]) inside = false;
      src += j * stride;
      stride *= dims[d];
    }
    if (inside) y[i] = x[src];
  }
  return y;
}

TEST(NewOpsTest, CenterCropPadCropsAndPads) {
  const Ints dims = {3, 5, 4};
  const Tensor x = RandomTensor(dims, 61);
  const Floats xs = ToVector<float>(x);
  for (const Ints& out : {Ints{1, 2, 4}, Ints{6, 7, 4}, Ints{2, 9, 1},
                          Ints{3, 5, 4}, Ints{0, 5, 4}}) {
    auto got = RunKernel(CpuKernelRegistry(),
                         MakeNode("CenterCropPad", {"x", "s"}, {"y"}),
                         {x, MakeTensor<int64_t>({3}, out)}, Opset(18));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].shape(), Shape(out));
    EXPECT_THAT(ToVector<float>((*got)[0]),
                ElementsAreArray(ReferenceCenterCropPad(dims, xs, out)));
  }
  // Named axes (negative, any order), an int32 shape, an integer tensor.
  const Tensor xi = MakeTensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto axes = RunKernel(CpuKernelRegistry(),
                        MakeNode("CenterCropPad", {"x", "s"}, {"y"},
                                 {{"axes", Ints{-1, 0}}}),
                        {xi, MakeTensor<int32_t>({2}, {2, 4})}, Opset(18));
  ASSERT_TRUE(axes.ok()) << axes.status();
  EXPECT_EQ((*axes)[0].shape(), Shape({4, 2}));
  EXPECT_THAT(ToVector<int64_t>((*axes)[0]),
              ElementsAre(0, 0, 1, 2, 4, 5, 0, 0));
}

TEST(NewOpsTest, CenterCropPadRefusals) {
  const Tensor x = MakeTensor<float>({2, 3}, Ramp(6));
  auto run = [&](Ints shape, Ints axes) {
    std::map<std::string, Attribute> attrs;
    if (!axes.empty()) attrs["axes"] = axes;
    return RunKernel(
        CpuKernelRegistry(), MakeNode("CenterCropPad", {"x", "s"}, {"y"}, attrs),
        {x, MakeTensor<int64_t>({static_cast<int64_t>(shape.size())}, shape)},
        Opset(18));
  };
  EXPECT_EQ(run({2}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({2, -1}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({2, 2}, {1, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // shape is a run-time value: a huge target is refused, not allocated.
  EXPECT_EQ(run({int64_t{1} << 20, int64_t{1} << 20}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
