#include <cmath>
#include <cstring>
#include <vector>

#include "devices/cpu/kernel.h"
#include "devices/cpu/isa.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::ExpectBf16Result;
using testing::MaxRelativeError;
using testing::RandomTensor;
using testing::RoundToBFloat16;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

constexpr double kTolerance = 1e-4;

// numpy.matmul on float32, by definition, for operands of rank >= 1.
Tensor NaiveMatMul(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> ad = a.shape().dims(), bd = b.shape().dims();
  const bool a1 = ad.size() == 1, b1 = bd.size() == 1;
  if (a1) ad.insert(ad.begin(), 1);
  if (b1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  const size_t r = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), r - ad.size(), 1);
  bd.insert(bd.begin(), r - bd.size(), 1);
  std::vector<int64_t> batch(r - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max(ad[i], bd[i]);
  std::vector<int64_t> out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(n);
  Tensor y = *Tensor::Create(DType::kFloat32, Shape(out));
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  for (int64_t bi = 0; bi < count; ++bi) {
    // Offsets of this batch index in A and B, honouring broadcast.
    int64_t rem = bi, oa = 0, ob = 0, sa = 1, sb = 1;
    for (int i = static_cast<int>(batch.size()) - 1; i >= 0; --i) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      oa += (ad[i] == 1 ? 0 : idx) * sa;
      ob += (bd[i] == 1 ? 0 : idx) * sb;
      sa *= ad[i];
      sb *= bd[i];
    }
    const float* pa = a.data<float>() + oa * m * k;
    const float* pb = b.data<float>() + ob * k * n;
    float* py = y.data<float>() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) s += pa[i * k + l] * pb[l * n + j];
        py[i * n + j] = static_cast<float>(s);
      }
  }
  return y;
}

struct MatMulCase {
  std::vector<int64_t> a, b;
};

class MatMulTest : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(MatMulTest, MatchesNaiveReference) {
  const Tensor a = RandomTensor(GetParam().a, 1);
  const Tensor b = RandomTensor(GetParam().b, 2);
  const Tensor want = NaiveMatMul(a, b);
  const Node node = MakeNode("MatMul", {"a", "b"}, {"y"});
  // Plain; constant B (packed weights); shapes unknown at build time.
  std::vector<RunKernelOptions> variants(3);
  variants[1].constant_inputs = {1};
  variants[2].hide_input_shapes = true;
  variants[2].constant_inputs = {1};
  for (const RunKernelOptions& options : variants) {
    auto out = RunKernel(CpuKernelRegistry(), node, {a, b}, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), want.shape());
    EXPECT_LT(MaxRelativeError((*out)[0], want), kTolerance);
  }

  // glint.FusedMatMul with an addend Z of the result's shape (a residual
  // connection), then Relu: Relu(A·B + Z).
  const Tensor z = RandomTensor(want.shape().dims(), 3);
  Tensor want_fused = want;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const float v = want.data<float>()[i] + z.data<float>()[i];
    want_fused.data<float>()[i] = v > 0 ? v : 0;
  }
  const Node fused = MakeNode("glint.FusedMatMul", {"a", "b", "", "z"},
                              {"y"}, {{"activation", std::string("Relu")}});
  for (const RunKernelOptions& options : variants) {
    auto out = RunKernel(CpuKernelRegistry(), fused, {a, b, Tensor(), z},
                         options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LT(MaxRelativeError((*out)[0], want_fused), kTolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatMulTest,
    ::testing::Values(MatMulCase{{3, 4}, {4, 5}},        // 2-D
                      MatMulCase{{4}, {4, 5}},           // 1-D A
                      MatMulCase{{3, 4}, {4}},           // 1-D B
                      MatMulCase{{4}, {4}},              // dot → scalar
                      MatMulCase{{2, 3, 4}, {4, 5}},     // batch folded
                      MatMulCase{{2, 3, 4}, {2, 4, 5}},  // equal batch
                      MatMulCase{{2, 1, 3, 4}, {3, 4, 5}},  // broadcast both
                      MatMulCase{{3, 4}, {2, 4, 5}},     // A broadcast
                      MatMulCase{{1, 3, 4}, {4, 5}},
                      MatMulCase{{2, 3, 4}, {4}},
                      MatMulCase{{64, 128}, {128, 96}}));

// Packed B held outside the kernel (as the device's constant block holds
// it): the kernel lists what it packed, reads it from B's input once told
// to, frees its own copy, and still computes A·B; another shape is refused
// instead of read through the packed bytes.
TEST(MatMulTest, PackedWeightsReadFromTheInputAfterRelease) {
  for (const char* op : {"MatMul", "Gemm"}) {
    const Tensor a = RandomTensor({8, 64}, 1);
    const Tensor b = RandomTensor({64, 32}, 2);
    const Tensor want = NaiveMatMul(a, b);
    const Node node = MakeNode(op, {"a", "b"}, {"y"});
    RunKernelOptions options;
    options.constant_inputs = {1};
    const std::vector<Tensor> inputs = {a, b};  // Borrowed by the spec.
    const KernelSpec spec = testing::MakeSpec(node, inputs, options);
    auto kernel = (*CpuKernelRegistry().Find(op))(spec);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    std::vector<PackedConstant> packed = (*kernel)->PackedConstants();
    ASSERT_EQ(packed.size(), 1u) << op;
    EXPECT_EQ(packed[0].input, 1);
    ASSERT_GE(packed[0].bytes, b.num_bytes());
    // The copy a device would hold, made before the kernel lets go of its.
    Tensor held = *Tensor::Create(DType::kUInt8,
                                  Shape({static_cast<int64_t>(packed[0].bytes)}));
    std::memcpy(held.raw_data(), packed[0].data, packed[0].bytes);
    (*kernel)->UsePackedConstant(1);
    (*kernel)->ReleasePackedConstants();
    EXPECT_TRUE((*kernel)->PackedConstants().empty());

    // B's view as a compiled function gives it: the plain dtype and shape
    // over the packed bytes (the context owns its views; it is pointed at
    // the held copy here).
    testing::TestKernelContext ctx({a, b}, {DType::kFloat32});
    const_cast<TensorView*>(ctx.input(1))->data = held.raw_data();
    ASSERT_TRUE((*kernel)->Compute(ctx).ok()) << op;
    EXPECT_LT(MaxRelativeError(ctx.output(0), want), kTolerance) << op;

    const Tensor other = RandomTensor({4, 64}, 3);
    testing::TestKernelContext bad({other, b}, {DType::kFloat32});
    EXPECT_EQ((*kernel)->Compute(bad).code(), absl::StatusCode::kInternal)
        << op;
  }
}

TEST(MatMulTest, HandComputed) {
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("MatMul", {"a", "b"}, {"y"}),
                       {MakeTensor<float>({2, 2}, {1, 2, 3, 4}),
                        MakeTensor<float>({2, 1}, {5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(17, 39));
}

TEST(MatMulTest, EmptyInnerDimensionGivesZeros) {
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("MatMul", {"a", "b"}, {"y"}),
                       {MakeTensor<float>({2, 0}, {}),
                        MakeTensor<float>({0, 3}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(MatMulTest, Errors) {
  const Node node = MakeNode("MatMul", {"a", "b"}, {"y"});
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {RandomTensor({3, 4}, 1), RandomTensor({5, 2}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("node 'matmul_node' (MatMul)"));
  out = RunKernel(CpuKernelRegistry(), node,
                  {RandomTensor({2, 3, 4}, 1), RandomTensor({3, 4, 2}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunKernel(CpuKernelRegistry(), node,
                  {MakeTensor<double>({1, 1}, {1}),
                   MakeTensor<double>({1, 1}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("float64"));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("matmul_node"));
  // An addend that is not the result's shape (no broadcasting).
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("glint.FusedMatMul", {"a", "b", "", "z"}, {"y"}),
                  {RandomTensor({3, 4}, 1), RandomTensor({4, 2}, 2), Tensor(),
                   RandomTensor({1, 2}, 3)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("addend of shape [1, 2]"));
}

TEST(MatMulTest, ConcurrentComputeAndShapeChanges) {
  RunKernelOptions options;
  options.threads = 4;
  options.runs = 3;
  options.constant_inputs = {1};
  const Tensor a = RandomTensor({8, 32}, 5);
  const Tensor b = RandomTensor({32, 16}, 6);
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("MatMul", {"a", "b"}, {"y"}), {a, b}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(MaxRelativeError((*out)[0], NaiveMatMul(a, b)), kTolerance);
}

// ------------------------------------------------------------------ Gemm

Tensor NaiveGemm(const Tensor& a, const Tensor& b, const Tensor* c,
                 bool ta, bool tb, float alpha, float beta) {
  const int64_t m = ta ? a.shape().dim(1) : a.shape().dim(0);
  const int64_t k = ta ? a.shape().dim(0) : a.shape().dim(1);
  const int64_t n = tb ? b.shape().dim(0) : b.shape().dim(1);
  Tensor y = *Tensor::Create(DType::kFloat32, Shape({m, n}));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) {
        const float av = ta ? a.data<float>()[l * m + i]
                            : a.data<float>()[i * k + l];
        const float bv = tb ? b.data<float>()[j * k + l]
                            : b.data<float>()[l * n + j];
        s += av * bv;
      }
      double cv = 0;
      if (c != nullptr) {
        const Shape& cs = c->shape();
        const int64_t ci = cs.rank() == 2 && cs.dim(0) != 1 ? i : 0;
        const int64_t cj = cs.rank() >= 1 && cs.dim(cs.rank() - 1) != 1 ? j : 0;
        const int64_t cols = cs.rank() >= 1 ? cs.dim(cs.rank() - 1) : 1;
        cv = c->data<float>()[ci * cols + cj];
      }
      y.data<float>()[i * n + j] = static_cast<float>(alpha * s + beta * cv);
    }
  return y;
}

struct GemmCase {
  bool ta, tb;
  float alpha, beta;
  std::vector<int64_t> c;  // Empty: no C. {-1}: scalar C.
};

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesNaiveReference) {
  const GemmCase& p = GetParam();
  const int64_t m = 5, k = 7, n = 6;
  const Tensor a = RandomTensor(p.ta ? std::vector<int64_t>{k, m}
                                     : std::vector<int64_t>{m, k}, 11);
  const Tensor b = RandomTensor(p.tb ? std::vector<int64_t>{n, k}
                                     : std::vector<int64_t>{k, n}, 12);
  Tensor c;
  std::vector<std::string> names = {"a", "b"};
  std::vector<Tensor> inputs = {a, b};
  if (!p.c.empty()) {
    c = p.c[0] == -1 ? RandomTensor({}, 13) : RandomTensor(p.c, 13);
    names.push_back("c");
    inputs.push_back(c);
  }
  const Tensor want = NaiveGemm(a, b, p.c.empty() ? nullptr : &c, p.ta, p.tb,
                                p.alpha, p.beta);
  const Node node = MakeNode("Gemm", names, {"y"},
                             {{"transA", int64_t{p.ta}},
                              {"transB", int64_t{p.tb}},
                              {"alpha", p.alpha},
                              {"beta", p.beta}});
  std::vector<RunKernelOptions> variants(3);
  variants[1].constant_inputs = {1, 2};
  variants[2].hide_input_shapes = true;
  for (const RunKernelOptions& options : variants) {
    auto out = RunKernel(CpuKernelRegistry(), node, inputs, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), Shape({m, n}));
    EXPECT_LT(MaxRelativeError((*out)[0], want), kTolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Attributes, GemmTest,
    ::testing::Values(GemmCase{false, false, 1, 1, {}},
                      GemmCase{true, false, 1, 1, {}},
                      GemmCase{false, true, 1, 1, {6}},     // bias path
                      GemmCase{true, true, 1, 1, {1, 6}},   // bias path
                      GemmCase{false, false, 0.5f, 2, {6}},
                      GemmCase{false, true, 1, 1, {5, 1}},
                      GemmCase{true, false, 2, -1, {5, 6}},
                      GemmCase{false, false, 1, 3, {-1}},   // scalar C
                      GemmCase{false, false, 1, 1, {1}},
                      GemmCase{false, false, 0.25f, 0, {5, 6}}));

TEST(GemmTest, HandComputed) {
  // [[1, 2], [3, 4]] x [[1, 0], [0, 1]] * 2 + 10 * [1, -1].
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Gemm", {"a", "b", "c"}, {"y"}, {{"alpha", 2.0f}, {"beta", 10.0f}}),
      {MakeTensor<float>({2, 2}, {1, 2, 3, 4}),
       MakeTensor<float>({2, 2}, {1, 0, 0, 1}),
       MakeTensor<float>({2}, {1, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(12, -6, 16, -2));
}

TEST(GemmTest, Errors) {
  const Node node = MakeNode("Gemm", {"a", "b", "c"}, {"y"});
  // C [3] does not broadcast to [2, 2].
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {RandomTensor({2, 3}, 1), RandomTensor({3, 2}, 2),
                        RandomTensor({3}, 3)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("gemm_node"));
  // Inner dimensions differ.
  out = RunKernel(CpuKernelRegistry(), MakeNode("Gemm", {"a", "b"}, {"y"}),
                  {RandomTensor({2, 3}, 1), RandomTensor({2, 2}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Not 2-D.
  out = RunKernel(CpuKernelRegistry(), MakeNode("Gemm", {"a", "b"}, {"y"}),
                  {RandomTensor({2, 3, 1}, 1), RandomTensor({3, 2}, 2)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunKernel(CpuKernelRegistry(), MakeNode("Gemm", {"a", "b"}, {"y"}),
                  {MakeTensor<int32_t>({1, 1}, {1}),
                   MakeTensor<int32_t>({1, 1}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(GemmTest, ConcurrentCompute) {
  RunKernelOptions options;
  options.threads = 4;
  options.runs = 3;
  options.constant_inputs = {1, 2};
  const Tensor a = RandomTensor({16, 24}, 5);
  const Tensor b = RandomTensor({24, 8}, 6);
  const Tensor c = RandomTensor({8}, 7);
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Gemm", {"a", "b", "c"}, {"y"}), {a, b, c},
                       options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(MaxRelativeError((*out)[0],
                             NaiveGemm(a, b, &c, false, false, 1, 1)),
            kTolerance);
}

// --- bf16 precision ---------------------------------------------------------

Tensor Abs(const Tensor& t) {
  Tensor r = *Tensor::Create(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    r.data<float>()[i] = std::fabs(t.data<float>()[i]);
  }
  return r;
}

TEST(MatMulTest, Bf16PrecisionRoundsOperandsAndAccumulatesInFloat32) {
  struct Case {
    std::vector<int64_t> a, b;
    RunKernelOptions options;
  };
  std::vector<Case> cases(5);
  cases[0] = {{32, 256}, {256, 64}, {}};  // B converted on each call.
  cases[1] = {{32, 256}, {256, 64}, {}};  // B packed as bfloat16.
  cases[1].options.constant_inputs = {1};
  cases[2] = cases[1];  // Primitive made at run time.
  cases[2].options.hide_input_shapes = true;
  cases[3] = {{2, 16, 128}, {2, 128, 32}, {}};  // Batched, not folded.
  cases[4] = {{4, 8, 128}, {128, 48}, {}};      // Folded, concurrent.
  cases[4].options.constant_inputs = {1};
  cases[4].options.threads = 3;
  cases[4].options.runs = 2;
  const Node node = MakeNode("MatMul", {"a", "b"}, {"y"});
  for (const Case& c : cases) {
    SCOPED_TRACE(Shape(c.a).ToString() + " x " + Shape(c.b).ToString());
    const Tensor a = RandomTensor(c.a, 31);
    const Tensor b = RandomTensor(c.b, 32);
    RunKernelOptions bf16 = c.options;
    bf16.precision = Precision::kBFloat16;
    auto got = RunKernel(CpuKernelRegistry(), node, {a, b}, bf16);
    ASSERT_TRUE(got.ok()) << got.status();
    auto f32 = RunKernel(CpuKernelRegistry(), node, {a, b}, c.options);
    ASSERT_TRUE(f32.ok()) << f32.status();
    ExpectBf16Result((*got)[0],
                     NaiveMatMul(RoundToBFloat16(a), RoundToBFloat16(b)),
                     NaiveMatMul(a, b), NaiveMatMul(Abs(a), Abs(b)),
                     (*f32)[0]);
  }

  // glint.FusedMatMul: Relu(A·B + bias + Z); bias and Z stay float32.
  const Tensor a = RandomTensor({24, 192}, 33);
  const Tensor b = RandomTensor({192, 40}, 34);
  const Tensor bias = RandomTensor({40}, 35);
  const Tensor z = RandomTensor({24, 40}, 36);
  auto fuse = [&](Tensor y) {
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      const float v = y.data<float>()[i] + bias.data<float>()[i % 40] +
                      z.data<float>()[i];
      y.data<float>()[i] = v > 0 ? v : 0;
    }
    return y;
  };
  const Node fused = MakeNode("glint.FusedMatMul", {"a", "b", "bias", "z"},
                              {"y"}, {{"activation", std::string("Relu")}});
  RunKernelOptions options;
  options.constant_inputs = {1, 2};
  RunKernelOptions bf16 = options;
  bf16.precision = Precision::kBFloat16;
  auto got = RunKernel(CpuKernelRegistry(), fused, {a, b, bias, z}, bf16);
  ASSERT_TRUE(got.ok()) << got.status();
  auto f32 = RunKernel(CpuKernelRegistry(), fused, {a, b, bias, z}, options);
  ASSERT_TRUE(f32.ok()) << f32.status();
  ExpectBf16Result((*got)[0],
                   fuse(NaiveMatMul(RoundToBFloat16(a), RoundToBFloat16(b))),
                   fuse(NaiveMatMul(a, b)), NaiveMatMul(Abs(a), Abs(b)),
                   (*f32)[0]);
}

TEST(GemmTest, Bf16PrecisionRoundsOperandsAndAccumulatesInFloat32) {
  const int64_t m = 24, k = 160, n = 48;
  struct Case {
    bool ta, tb;
    float alpha, beta;
    bool constant_b;
  };
  for (const Case& p : {Case{false, false, 1, 1, true},
                        Case{true, true, 1, 1, true},  // Strided A and B.
                        Case{false, true, 0.5f, 2, false}}) {
    SCOPED_TRACE(::testing::Message() << "transA " << p.ta << " transB "
                                      << p.tb << " constant B "
                                      << p.constant_b);
    const Tensor a = RandomTensor(p.ta ? std::vector<int64_t>{k, m}
                                       : std::vector<int64_t>{m, k}, 41);
    const Tensor b = RandomTensor(p.tb ? std::vector<int64_t>{n, k}
                                       : std::vector<int64_t>{k, n}, 42);
    const Tensor c = RandomTensor({n}, 43);
    const Node node = MakeNode("Gemm", {"a", "b", "c"}, {"y"},
                               {{"transA", int64_t{p.ta}},
                                {"transB", int64_t{p.tb}},
                                {"alpha", p.alpha},
                                {"beta", p.beta}});
    RunKernelOptions options;
    if (p.constant_b) options.constant_inputs = {1, 2};
    RunKernelOptions bf16 = options;
    bf16.precision = Precision::kBFloat16;
    auto got = RunKernel(CpuKernelRegistry(), node, {a, b, c}, bf16);
    ASSERT_TRUE(got.ok()) << got.status();
    auto f32 = RunKernel(CpuKernelRegistry(), node, {a, b, c}, options);
    ASSERT_TRUE(f32.ok()) << f32.status();
    ExpectBf16Result(
        (*got)[0],
        NaiveGemm(RoundToBFloat16(a), RoundToBFloat16(b), &c, p.ta, p.tb,
                  p.alpha, p.beta),
        NaiveGemm(a, b, &c, p.ta, p.tb, p.alpha, p.beta),
        NaiveGemm(Abs(a), Abs(b), nullptr, p.ta, p.tb, std::fabs(p.alpha), 0),
        (*f32)[0]);
  }
}

}  // namespace
}  // namespace glint::cpu
