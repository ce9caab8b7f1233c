// The quantized kernels against hand-computed values (rounding, saturation,
// per-axis parameters) and against naive int32 loops on random data, for
// both oneDNN's path and the plain loops (uint8 weights whose shifted
// values leave int8, batched weights).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/cpu_rewrites.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using testing::MakeNode;
using testing::MakeTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

template <typename T>
Tensor RandomInts(std::vector<int64_t> dims, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  Shape shape(std::move(dims));
  std::vector<T> v(shape.NumElements());
  for (T& x : v) x = static_cast<T>(dist(rng));
  return Tensor::FromVector(DTypeOf<T>(), shape, v);
}

// The output dtype an importer infers for the quantized ops.
DType QuantOutputDType(const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op_type;
  auto dtype_of = [&](size_t i, DType fallback) {
    return i < in.size() && in[i].valid() ? in[i].dtype() : fallback;
  };
  if (op == "QuantizeLinear") return dtype_of(2, DType::kUInt8);
  if (op == "DequantizeLinear") return DType::kFloat32;
  if (op == "MatMulInteger" || op == "ConvInteger") return DType::kInt32;
  if (op == "QLinearConv" || op == "QLinearMatMul") {
    return dtype_of(7, DType::kUInt8);
  }
  // The fused ops: quantized out when y_scale is given.
  if (!(in.size() > 6 && in[6].valid())) return DType::kFloat32;
  return dtype_of(7, DType::kUInt8);
}

// RunKernel with the quantized ops' output dtype filled in.
absl::StatusOr<std::vector<Tensor>> RunQ(const Node& node,
                                         const std::vector<Tensor>& inputs,
                                         RunKernelOptions opts = {}) {
  if (opts.output_dtypes.empty()) {
    opts.output_dtypes = {QuantOutputDType(node, inputs)};
  }
  return RunKernel(CpuKernelRegistry(), node, inputs, opts);
}

int32_t At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kUInt8:
      return t.data<uint8_t>()[i];
    case DType::kInt8:
      return t.data<int8_t>()[i];
    default:
      return t.data<int32_t>()[i];
  }
}

TEST(QuantTest, QuantizeRoundsHalfToEvenAndSaturates) {
  const Tensor x = MakeTensor<float>(
      {8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.0f, -300.0f, 3.0f});
  Node node = MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"});
  auto u8 = RunQ(
      node, {x, MakeTensor<float>({}, {1.0f}), MakeTensor<uint8_t>({}, {0})});
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_EQ(ToVector<uint8_t>((*u8)[0]),
            (std::vector<uint8_t>{0, 2, 2, 0, 0, 255, 0, 3}));
  // Scale 2, zero point 1: round(x / 2) + 1.
  auto s8 = RunQ(
      node, {x, MakeTensor<float>({}, {2.0f}), MakeTensor<int8_t>({}, {1})});
  ASSERT_TRUE(s8.ok()) << s8.status();
  EXPECT_EQ(ToVector<int8_t>((*s8)[0]),
            (std::vector<int8_t>{1, 2, 2, 1, 0, 127, -128, 3}));
  // No zero point: uint8, zero point 0.
  auto def = RunQ(MakeNode("QuantizeLinear", {"x", "s"}, {"y"}),
                  {x, MakeTensor<float>({}, {1.0f})});
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ((*def)[0].dtype(), DType::kUInt8);
}

TEST(QuantTest, QuantizeAndDequantizePerAxis) {
  // x [2, 3, 2], per-channel along axis 1.
  std::vector<float> xv(12);
  for (int i = 0; i < 12; ++i) xv[i] = static_cast<float>(i) - 4.0f;
  const Tensor x = MakeTensor<float>({2, 3, 2}, xv);
  const Tensor s = MakeTensor<float>({3}, {1.0f, 2.0f, 4.0f});
  const Tensor z = MakeTensor<int8_t>({3}, {0, 10, -10});
  RunKernelOptions opts;
  opts.opset_version = 13;
  auto q =
      RunQ(MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"}), {x, s, z}, opts);
  ASSERT_TRUE(q.ok()) << q.status();
  std::vector<int8_t> want;
  for (int i = 0; i < 12; ++i) {
    const int c = (i / 2) % 3;
    const float sc[] = {1, 2, 4};
    const int zp[] = {0, 10, -10};
    want.push_back(static_cast<int8_t>(std::nearbyint(xv[i] / sc[c]) + zp[c]));
  }
  EXPECT_EQ(ToVector<int8_t>((*q)[0]), want);
  auto dq = RunQ(MakeNode("DequantizeLinear", {"q", "s", "z"}, {"y"}),
                 {(*q)[0], s, z}, opts);
  ASSERT_TRUE(dq.ok()) << dq.status();
  const std::vector<float> back = ToVector<float>((*dq)[0]);
  for (int i = 0; i < 12; ++i) {
    const int c = (i / 2) % 3;
    const float sc[] = {1, 2, 4};
    EXPECT_NEAR(back[i], xv[i], sc[c] / 2) << i;
  }
  // A scale that matches no axis is INVALID_ARGUMENT.
  auto bad = RunQ(MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"},
                           {{"axis", int64_t{2}}}),
                  {x, s, z}, opts);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(QuantTest, DequantizeInt32AndUint8) {
  auto i32 = RunQ(MakeNode("DequantizeLinear", {"x", "s"}, {"y"}),
                  {MakeTensor<int32_t>({3}, {-100000, 0, 7}),
                   MakeTensor<float>({}, {0.5f})});
  ASSERT_TRUE(i32.ok()) << i32.status();
  EXPECT_EQ(ToVector<float>((*i32)[0]),
            (std::vector<float>{-50000.0f, 0.0f, 3.5f}));
  auto u8 =
      RunQ(MakeNode("DequantizeLinear", {"x", "s", "z"}, {"y"}),
           {MakeTensor<uint8_t>({3}, {0, 128, 255}),
            MakeTensor<float>({}, {2.0f}), MakeTensor<uint8_t>({}, {128})});
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_EQ(ToVector<float>((*u8)[0]),
            (std::vector<float>{-256.0f, 0.0f, 254.0f}));
}

TEST(QuantTest, DynamicQuantizeLinear) {
  // ONNX's documented example.
  auto out =
      RunQ(MakeNode("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}),
           {MakeTensor<float>({6}, {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f})},
           {.output_dtypes = {DType::kUInt8, DType::kFloat32, DType::kUInt8}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToVector<uint8_t>((*out)[0]),
            (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ((*out)[1].data<float>()[0], 5.0f / 255.0f);
  EXPECT_EQ((*out)[2].data<uint8_t>()[0], 153);
  // All zeros: scale 0, everything 0.
  auto zeros =
      RunQ(MakeNode("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}),
           {MakeTensor<float>({2}, {0.0f, 0.0f})},
           {.output_dtypes = {DType::kUInt8, DType::kFloat32, DType::kUInt8}});
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_EQ(ToVector<uint8_t>((*zeros)[0]), (std::vector<uint8_t>{0, 0}));
}

// Naive MatMul of [m, k] x [k, n] with zero points (per row / per column).
std::vector<int32_t> NaiveMatMul(const Tensor& a, const Tensor& b, int64_t m,
                                 int64_t k, int64_t n,
                                 const std::vector<int32_t>& za,
                                 const std::vector<int32_t>& zb) {
  std::vector<int32_t> y(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int32_t s = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        s += (At(a, i * k + kk) - za[za.size() == 1 ? 0 : i]) *
             (At(b, kk * n + j) - zb[zb.size() == 1 ? 0 : j]);
      }
      y[i * n + j] = s;
    }
  }
  return y;
}

TEST(QuantTest, MatMulIntegerMatchesNaiveOnEveryPath) {
  const int64_t m = 5, k = 37, n = 19;
  const Tensor a = RandomInts<uint8_t>({m, k}, 1, 0, 255);
  const Tensor b_s8 = RandomInts<int8_t>({k, n}, 2, -128, 127);
  const Tensor b_u8 = RandomInts<uint8_t>({k, n}, 3, 0, 255);
  Node node = MakeNode("MatMulInteger", {"a", "b", "za", "zb"}, {"y"});
  for (bool constant : {false, true}) {
    RunKernelOptions opts;
    if (constant) opts.constant_inputs = {1, 3};
    // s8 weights, zero point 0 (oneDNN, exact); per-row A zero points.
    std::vector<uint8_t> zrow = {0, 3, 250, 17, 128};
    auto y = RunQ(
        node,
        {a, b_s8, MakeTensor<uint8_t>({m}, zrow), MakeTensor<int8_t>({}, {0})},
        opts);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(ToVector<int32_t>((*y)[0]),
              NaiveMatMul(a, b_s8, m, k, n, {0, 3, 250, 17, 128}, {0}));
    // u8 weights, zero point 100: W' leaves int8 for some values (plain
    // loops) — same answer.
    auto y2 = RunQ(
        node,
        {a, b_u8, MakeTensor<uint8_t>({}, {7}), MakeTensor<uint8_t>({}, {100})},
        opts);
    ASSERT_TRUE(y2.ok()) << y2.status();
    EXPECT_EQ(ToVector<int32_t>((*y2)[0]),
              NaiveMatMul(a, b_u8, m, k, n, {7}, {100}));
    // u8 weights near their zero point: W' fits int8 (oneDNN).
    const Tensor b_mid = RandomInts<uint8_t>({k, n}, 4, 60, 180);
    auto y3 = RunQ(node,
                   {a, b_mid, MakeTensor<uint8_t>({}, {7}),
                    MakeTensor<uint8_t>({}, {120})},
                   opts);
    ASSERT_TRUE(y3.ok()) << y3.status();
    EXPECT_EQ(ToVector<int32_t>((*y3)[0]),
              NaiveMatMul(a, b_mid, m, k, n, {7}, {120}));
  }
}

TEST(QuantTest, MatMulIntegerBatchedWeights) {
  // [2, 3, 4] x [2, 4, 5]: batched weights take the plain loops.
  const Tensor a = RandomInts<int8_t>({2, 3, 4}, 5, -128, 127);
  const Tensor b = RandomInts<int8_t>({2, 4, 5}, 6, -128, 127);
  auto y = RunQ(MakeNode("MatMulInteger", {"a", "b"}, {"y"}), {a, b});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].shape(), Shape({2, 3, 5}));
  const std::vector<int32_t> got = ToVector<int32_t>((*y)[0]);
  for (int bi = 0; bi < 2; ++bi) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 5; ++j) {
        int32_t s = 0;
        for (int kk = 0; kk < 4; ++kk) {
          s += At(a, (bi * 3 + i) * 4 + kk) * At(b, (bi * 4 + kk) * 5 + j);
        }
        EXPECT_EQ(got[(bi * 3 + i) * 5 + j], s);
      }
    }
  }
}

// round(acc * mult) + zero, saturated: ONNX's QLinear output.
template <typename T>
std::vector<T> Requantize(const std::vector<int32_t>& acc, int64_t channels,
                          int64_t inner, const std::vector<float>& mult,
                          int32_t zero, int lo, int hi) {
  std::vector<T> y;
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % channels;
    float v = std::nearbyint(static_cast<float>(acc[i]) *
                             mult[mult.size() == 1 ? 0 : c]) +
              static_cast<float>(zero);
    v = std::min<float>(std::max<float>(v, lo), hi);
    y.push_back(static_cast<T>(v));
  }
  return y;
}

TEST(QuantTest, QLinearMatMulPerColumnScales) {
  const int64_t m = 6, k = 64, n = 33;
  const Tensor a = RandomInts<uint8_t>({m, k}, 7, 0, 255);
  const Tensor b = RandomInts<int8_t>({k, n}, 8, -127, 127);
  std::vector<float> bs(n);
  for (int64_t j = 0; j < n; ++j) bs[j] = 0.001f * (1 + j % 5);
  const float as = 0.02f, ys = 0.5f;
  for (bool constant : {false, true}) {
    RunKernelOptions opts;
    if (constant) opts.constant_inputs = {3, 4, 5};
    auto y =
        RunQ(MakeNode("QLinearMatMul",
                      {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}),
             {a, MakeTensor<float>({}, {as}), MakeTensor<uint8_t>({}, {130}), b,
              MakeTensor<float>({n}, bs),
              MakeTensor<int8_t>({n}, std::vector<int8_t>(n, 0)),
              MakeTensor<float>({}, {ys}), MakeTensor<uint8_t>({}, {100})},
             opts);
    ASSERT_TRUE(y.ok()) << y.status();
    std::vector<float> mult;
    for (float s : bs) mult.push_back(as * s / ys);
    EXPECT_EQ(ToVector<uint8_t>((*y)[0]),
              Requantize<uint8_t>(NaiveMatMul(a, b, m, k, n, {130}, {0}), n, 1,
                                  mult, 100, 0, 255));
  }
}

// Naive 2-D grouped convolution, zero-point padding.
std::vector<int32_t> NaiveConv(const Tensor& x, const Tensor& w, int64_t group,
                               int64_t stride, int64_t pad, int32_t zx,
                               const std::vector<int32_t>& zw, Shape* out) {
  const int64_t n = x.shape().dim(0), c = x.shape().dim(1),
                h = x.shape().dim(2), wd = x.shape().dim(3);
  const int64_t m = w.shape().dim(0), cg = w.shape().dim(1),
                kh = w.shape().dim(2), kw = w.shape().dim(3);
  const int64_t oh = (h + 2 * pad - kh) / stride + 1;
  const int64_t ow = (wd + 2 * pad - kw) / stride + 1;
  *out = Shape({n, m, oh, ow});
  std::vector<int32_t> y;
  const int64_t mg = m / group;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t o = 0; o < m; ++o) {
      const int32_t z = zw[zw.size() == 1 ? 0 : o];
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          int32_t s = 0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t ch = (o / mg) * cg + ci;
            for (int64_t u = 0; u < kh; ++u) {
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t yy = i * stride - pad + u;
                const int64_t xx = j * stride - pad + v;
                if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
                s += (At(x, ((b * c + ch) * h + yy) * wd + xx) - zx) *
                     (At(w, ((o * cg + ci) * kh + u) * kw + v) - z);
              }
            }
          }
          y.push_back(s);
        }
      }
    }
  }
  (void)c;
  return y;
}

TEST(QuantTest, ConvIntegerMatchesNaive) {
  const Tensor x = RandomInts<uint8_t>({2, 8, 9, 9}, 9, 0, 255);
  const Tensor w = RandomInts<int8_t>({16, 4, 3, 3}, 10, -128, 127);
  const Tensor w_u8 = RandomInts<uint8_t>({16, 4, 3, 3}, 11, 0, 255);
  Node node = MakeNode("ConvInteger", {"x", "w", "zx", "zw"}, {"y"},
                       {{"group", int64_t{2}},
                        {"strides", std::vector<int64_t>{2, 2}},
                        {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  for (bool constant : {false, true}) {
    RunKernelOptions opts;
    if (constant) opts.constant_inputs = {1, 3};
    opts.runs = 2;
    Shape shape;
    auto y =
        RunQ(node,
             {x, w, MakeTensor<uint8_t>({}, {37}), MakeTensor<int8_t>({}, {0})},
             opts);
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<int32_t> want = NaiveConv(x, w, 2, 2, 1, 37, {0}, &shape);
    EXPECT_EQ((*y)[0].shape(), shape);
    EXPECT_EQ(ToVector<int32_t>((*y)[0]), want);
    // uint8 weights with a zero point far from their values: plain loops.
    auto y2 = RunQ(
        node,
        {x, w_u8, MakeTensor<uint8_t>({}, {37}), MakeTensor<uint8_t>({}, {3})},
        opts);
    ASSERT_TRUE(y2.ok()) << y2.status();
    EXPECT_EQ(ToVector<int32_t>((*y2)[0]),
              NaiveConv(x, w_u8, 2, 2, 1, 37, {3}, &shape));
  }
}

TEST(QuantTest, QLinearConvPerChannelWithBias) {
  const Tensor x = RandomInts<uint8_t>({1, 16, 10, 10}, 12, 0, 255);
  const Tensor w = RandomInts<int8_t>({32, 16, 3, 3}, 13, -127, 127);
  std::vector<float> ws(32);
  std::vector<int32_t> bias(32);
  for (int i = 0; i < 32; ++i) {
    ws[i] = 0.0005f * (1 + i % 7);
    bias[i] = (i - 16) * 1000;
  }
  const float xs = 0.03f, ys = 0.25f;
  for (bool constant : {false, true}) {
    RunKernelOptions opts;
    if (constant) opts.constant_inputs = {3, 4, 5, 8};
    auto y =
        RunQ(MakeNode("QLinearConv",
                      {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"},
                      {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
             {x, MakeTensor<float>({}, {xs}), MakeTensor<uint8_t>({}, {128}), w,
              MakeTensor<float>({32}, ws),
              MakeTensor<int8_t>({32}, std::vector<int8_t>(32, 0)),
              MakeTensor<float>({}, {ys}), MakeTensor<int8_t>({}, {-5}),
              MakeTensor<int32_t>({32}, bias)},
             opts);
    ASSERT_TRUE(y.ok()) << y.status();
    Shape shape;
    std::vector<int32_t> acc = NaiveConv(x, w, 1, 1, 1, 128, {0}, &shape);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += bias[(i / 100) % 32];
    std::vector<float> mult;
    for (float s : ws) mult.push_back(xs * s / ys);
    EXPECT_EQ(ToVector<int8_t>((*y)[0]),
              Requantize<int8_t>(acc, 32, 100, mult, -5, -128, 127));
  }
}

TEST(QuantTest, FusedConvWithReluMatchesTheFormulaWithinOneStep) {
  // glint.QLinearFusedConv: quantized output with oneDNN attributes (zero
  // point added before rounding: ties may differ by one step), and float
  // output.
  const Tensor x = RandomInts<uint8_t>({2, 8, 7, 7}, 14, 0, 255);
  const Tensor w = RandomInts<int8_t>({8, 8, 3, 3}, 15, -127, 127);
  std::vector<float> ws(8), bias(8);
  for (int i = 0; i < 8; ++i) {
    ws[i] = 0.001f * (1 + i);
    bias[i] = 0.1f * (i - 4);
  }
  const float xs = 0.02f, ys = 0.05f;
  Shape shape;
  std::vector<int32_t> acc = NaiveConv(x, w, 1, 1, 1, 120, {0}, &shape);
  for (bool quantized_out : {true, false}) {
    std::vector<std::string> in = {"x", "xs", "xz", "w", "ws", "wz"};
    std::vector<Tensor> values = {
        x,
        MakeTensor<float>({}, {xs}),
        MakeTensor<uint8_t>({}, {120}),
        w,
        MakeTensor<float>({8}, ws),
        MakeTensor<int8_t>({8}, std::vector<int8_t>(8, 0))};
    if (quantized_out) {
      in.insert(in.end(), {"ys", "yz"});
      values.push_back(MakeTensor<float>({}, {ys}));
      values.push_back(MakeTensor<uint8_t>({}, {3}));
    } else {
      in.insert(in.end(), {"", ""});
      values.emplace_back();
      values.emplace_back();
    }
    in.push_back("b");
    values.push_back(MakeTensor<float>({8}, bias));
    RunKernelOptions opts;
    opts.constant_inputs = {3, 4, 5, 8};
    auto y = RunQ(MakeNode(kQLinearFusedConvOp, in, {"y"},
                           {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                            {"activation", std::string("Relu")}}),
                  values, opts);
    ASSERT_TRUE(y.ok()) << y.status();
    const int64_t plane = 49;
    for (size_t i = 0; i < acc.size(); ++i) {
      const int c = (i / plane) % 8;
      const float real =
          std::max(0.0f, static_cast<float>(acc[i]) * xs * ws[c] + bias[c]);
      if (quantized_out) {
        const float want = std::min(255.0f, std::nearbyint(real / ys) + 3);
        ASSERT_LE(std::fabs(want - (*y)[0].data<uint8_t>()[i]), 1.0f) << i;
      } else {
        ASSERT_NEAR((*y)[0].data<float>()[i], real, 1e-4f * (1 + real)) << i;
      }
    }
  }
}

TEST(QuantTest, FusedConvChannelsLastMatchesNchw) {
  // [N, C, H, W] and its [N, H, W, C] transpose through the same fused conv:
  // s8 weights (oneDNN) and uint8 weights far from their zero point (the
  // plain loops), each in both layouts.
  const int64_t n = 2, c = 4, h = 6, w = 5, m = 6;
  const Tensor x = RandomInts<uint8_t>({n, c, h, w}, 20, 0, 255);
  std::vector<uint8_t> xt(x.num_elements());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < h * w; ++i)
        xt[(b * h * w + i) * c + ch] =
            x.data<uint8_t>()[(b * c + ch) * h * w + i];
  const Tensor x_nhwc = MakeTensor<uint8_t>({n, h, w, c}, xt);
  for (bool u8_weights : {false, true}) {
    const Tensor wt = u8_weights
                          ? RandomInts<uint8_t>({m, c, 3, 3}, 21, 0, 255)
                          : RandomInts<int8_t>({m, c, 3, 3}, 21, -127, 127);
    const Tensor wz =
        u8_weights ? MakeTensor<uint8_t>({}, {9}) : MakeTensor<int8_t>({}, {0});
    std::vector<Tensor> outs;
    for (int64_t cl : {0, 1}) {
      RunKernelOptions opts;
      opts.constant_inputs = {3, 4, 5};
      auto y = RunQ(
          MakeNode(kQLinearFusedConvOp,
                   {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"},
                   {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                    {"channels_last", cl}}),
          {cl ? x_nhwc : x, MakeTensor<float>({}, {0.02f}),
           MakeTensor<uint8_t>({}, {100}), wt, MakeTensor<float>({}, {0.01f}),
           wz, MakeTensor<float>({}, {0.5f}), MakeTensor<uint8_t>({}, {128})},
          opts);
      ASSERT_TRUE(y.ok()) << y.status();
      outs.push_back((*y)[0]);
    }
    ASSERT_EQ(outs[1].shape(), Shape({n, h, w, m}));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < m; ++o)
        for (int64_t i = 0; i < h * w; ++i) {
          const int a = outs[0].data<uint8_t>()[(b * m + o) * h * w + i];
          const int t = outs[1].data<uint8_t>()[(b * h * w + i) * m + o];
          // Both layouts of one path round alike; the two paths may differ
          // by one step at exact ties (zero point added before rounding).
          ASSERT_LE(std::abs(a - t), 1) << b << " " << o << " " << i;
        }
  }
}

TEST(QuantTest, FusedMatMulTransposedWeightsAndBias) {
  const int64_t m = 4, k = 48, n = 20;
  const Tensor a = RandomInts<uint8_t>({m, k}, 16, 0, 255);
  const Tensor wt = RandomInts<int8_t>({n, k}, 17, -127, 127);  // [N, K]
  std::vector<float> bias(n);
  for (int j = 0; j < n; ++j) bias[j] = 0.05f * (j - 10);
  RunKernelOptions opts;
  opts.constant_inputs = {3, 4, 5, 8};
  auto y =
      RunQ(MakeNode(kQLinearFusedMatMulOp,
                    {"a", "as", "az", "w", "ws", "wz", "", "", "b"}, {"y"},
                    {{"transB", int64_t{1}}}),
           {a, MakeTensor<float>({}, {0.01f}), MakeTensor<uint8_t>({}, {100}),
            wt, MakeTensor<float>({}, {0.002f}), MakeTensor<int8_t>({}, {0}),
            Tensor(), Tensor(), MakeTensor<float>({n}, bias)},
           opts);
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int32_t s = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        s += (At(a, i * k + kk) - 100) * At(wt, j * k + kk);
      }
      const float want = s * 0.01f * 0.002f + bias[j];
      EXPECT_NEAR((*y)[0].data<float>()[i * n + j], want,
                  1e-4f * (1 + std::fabs(want)));
    }
  }
}

TEST(QuantTest, Refusals) {
  // float16 input to QuantizeLinear: UNIMPLEMENTED.
  Node q = MakeNode("QuantizeLinear", {"x", "s"}, {"y"});
  Tensor half =
      Tensor::FromVector(DType::kFloat16, Shape({1}), std::vector<uint16_t>{0});
  auto r = RunQ(q, {half, MakeTensor<float>({}, {1.0f})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  // A zero point of another dtype than X: INVALID_ARGUMENT at build time.
  auto dq = RunQ(MakeNode("DequantizeLinear", {"x", "s", "z"}, {"y"}),
                 {MakeTensor<uint8_t>({1}, {1}), MakeTensor<float>({}, {1.0f}),
                  MakeTensor<int8_t>({}, {0})});
  EXPECT_FALSE(dq.ok());
  // Mismatched inner dimensions.
  auto mm = RunQ(MakeNode("MatMulInteger", {"a", "b"}, {"y"}),
                 {RandomInts<uint8_t>({2, 3}, 1, 0, 9),
                  RandomInts<int8_t>({4, 2}, 2, 0, 9)});
  EXPECT_EQ(mm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mm.status().message().find("MatMulInteger"), std::string::npos);
  // A w scale of the wrong length.
  auto conv = RunQ(
      MakeNode("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"},
               {"y"}),
      {RandomInts<uint8_t>({1, 2, 3, 3}, 3, 0, 9), MakeTensor<float>({}, {1}),
       MakeTensor<uint8_t>({}, {0}), RandomInts<int8_t>({4, 2, 1, 1}, 4, 0, 9),
       MakeTensor<float>({3}, {1, 1, 1}), MakeTensor<int8_t>({}, {0}),
       MakeTensor<float>({}, {1}), MakeTensor<uint8_t>({}, {0})});
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
