// RowGemm: every row gets the same bits whatever M, its position, the
// other rows, the batch and the thread count; sums match a double-precision
// reference; the epilogue applies alpha, bias, sum, addend and activation.
#include "devices/cpu/row_gemm.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "devices/cpu/kernel_util.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<float> Pack(const std::vector<float>& b, int64_t k, int64_t n) {
  std::vector<float> packed(RowGemmPackedFloats(k, n));
  RowGemmPackB(b.data(), k, n, n, 1, packed.data());
  return packed;
}

// C = A x B for A of m rows starting at `a` (row-major, lda = k).
std::vector<float> Product(const float* a, int64_t m, int64_t k, int64_t n,
                           const std::vector<float>& packed,
                           const RowGemmEpilogue& e = {}) {
  std::vector<float> c(m * n);
  RowGemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.a_stride_m = k;
  s.a_stride_k = 1;
  s.ldc = n;
  RowGemm(s, {{a, packed.data(), c.data(), nullptr}}, e);
  return c;
}

class RowGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RowGemmAvailable()) GTEST_SKIP() << "no AVX2 and FMA on this CPU";
  }
};

TEST_F(RowGemmTest, EveryRowIsTheSingleRowProductBitForBit) {
  int checked = 0;
  for (int64_t k : {1, 7, 64, 301}) {
    for (int64_t n : {1, 5, 16, 33, 100}) {
      const std::vector<float> b = Random(k * n, 7 * k + n);
      const std::vector<float> packed = Pack(b, k, n);
      const std::vector<float> a = Random(97 * k, 11 * k + n);
      // M across tile (6) and block (48) boundaries.
      for (int64_t m : {1, 2, 3, 5, 6, 7, 8, 13, 48, 49, 97}) {
        const std::vector<float> c = Product(a.data(), m, k, n, packed);
        for (int64_t r = 0; r < m; ++r) {
          const std::vector<float> one =
              Product(a.data() + r * k, 1, k, n, packed);
          ASSERT_EQ(std::memcmp(one.data(), c.data() + r * n, n * 4), 0)
              << "k " << k << " n " << n << " m " << m << " row " << r;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST_F(RowGemmTest, SumsMatchADoubleReference) {
  const int64_t m = 29, k = 257, n = 45;
  const std::vector<float> a = Random(m * k, 1), b = Random(k * n, 2);
  const std::vector<float> c = Product(a.data(), m, k, n, Pack(b, k, n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, scale = 0;
      for (int64_t q = 0; q < k; ++q) {
        want += double{a[i * k + q]} * b[q * n + j];
        scale += std::abs(double{a[i * k + q]} * b[q * n + j]);
      }
      ASSERT_NEAR(c[i * n + j], want, 1e-6 * scale + 1e-30) << i << "," << j;
    }
  }
}

TEST_F(RowGemmTest, TransposedOperandsAndBatchesGiveTheSameRows) {
  const int64_t m = 11, k = 40, n = 23;
  const std::vector<float> a = Random(m * k, 3), b = Random(k * n, 4);
  const std::vector<float> c = Product(a.data(), m, k, n, Pack(b, k, n));
  // A stored transposed ([K, M]) and B transposed ([N, K]).
  std::vector<float> at(k * m), bt(n * k);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q) at[q * m + i] = a[i * k + q];
  for (int64_t q = 0; q < k; ++q)
    for (int64_t j = 0; j < n; ++j) bt[j * k + q] = b[q * n + j];
  std::vector<float> packed_t(RowGemmPackedFloats(k, n));
  RowGemmPackB(bt.data(), k, n, 1, k, packed_t.data());
  RowGemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.a_stride_m = 1;
  s.a_stride_k = m;
  s.ldc = n;
  // A batch of three: the transposed product twice and a zero A.
  std::vector<float> c1(m * n), c2(m * n), c3(m * n, 5.0f), zero(m * k, 0);
  RowGemm(s,
          {{at.data(), packed_t.data(), c1.data(), nullptr},
           {at.data(), packed_t.data(), c2.data(), nullptr},
           {zero.data(), packed_t.data(), c3.data(), nullptr}},
          {});
  EXPECT_EQ(std::memcmp(c1.data(), c.data(), c.size() * 4), 0);
  EXPECT_EQ(std::memcmp(c2.data(), c.data(), c.size() * 4), 0);
  EXPECT_EQ(c3, std::vector<float>(m * n, 0.0f));
}

TEST_F(RowGemmTest, OneThreadAndTwoGiveTheSameBits) {
  const int64_t m = 64, k = 512, n = 512;
  const std::vector<float> a = Random(m * k, 5), b = Random(k * n, 6);
  const std::vector<float> packed = Pack(b, k, n);
  SetKernelThreads(1);
  const std::vector<float> one = Product(a.data(), m, k, n, packed);
  SetKernelThreads(2);
  const std::vector<float> two = Product(a.data(), m, k, n, packed);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0);
}

using Activation = RowGemmEpilogue::Activation;
constexpr Activation kActivations[] = {
    Activation::kNone, Activation::kRelu,    Activation::kLogistic,
    Activation::kTanh, Activation::kGeluErf, Activation::kGeluTanh};

// What `act` makes of v, in double precision.
double Reference(Activation act, double v, double relu_alpha) {
  switch (act) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return v > 0 ? v : relu_alpha * v;
    case Activation::kLogistic:
      return 1 / (1 + std::exp(-v));
    case Activation::kTanh:
      return std::tanh(v);
    case Activation::kGeluErf:
      return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * v *
             (1 +
              std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  return v;
}

TEST_F(RowGemmTest, EpilogueAppliesAlphaBiasSumAddendAndActivation) {
  const int64_t m = 7, k = 9, n = 19;
  const std::vector<float> a = Random(m * k, 8), b = Random(k * n, 9);
  const std::vector<float> packed = Pack(b, k, n);
  const std::vector<float> plain = Product(a.data(), m, k, n, packed);
  const std::vector<float> bias = Random(n, 10), addend = Random(m * n, 11),
                           prior = Random(m * n, 12);
  for (Activation act : kActivations) {
    RowGemmEpilogue e;
    e.alpha = 0.5f;
    e.bias = bias.data();
    e.sum_beta = 2.0f;
    e.activation = act;
    e.relu_alpha = 0.25f;
    std::vector<float> c = prior;
    RowGemmShape s{m, n, k, k, 1, n};
    RowGemm(s, {{a.data(), packed.data(), c.data(), addend.data()}}, e);
    for (int64_t i = 0; i < m * n; ++i) {
      const float v =
          plain[i] * 0.5f + bias[i % n] + 2.0f * prior[i] + addend[i];
      const double want = Reference(act, v, 0.25);
      ASSERT_NEAR(c[i], want, 1e-6 * (1 + std::abs(want)))
          << "activation " << static_cast<int>(act) << " element " << i;
    }
  }
}

// The activations are computed 8 lanes at a time with polynomial forms of
// exp, tanh and erf: swept here against double precision, through whole
// (16) and partial (19 = 16 + 3) panels, out to where exp saturates.
TEST_F(RowGemmTest, ActivationsMatchDoublePrecisionOverTheirRange) {
  std::vector<float> x;
  for (int i = -12 * 64; i <= 12 * 64; ++i) x.push_back(i / 64.0f);
  for (float v : {-100.0f, -50.0f, -20.0f, 20.0f, 50.0f, 100.0f, 1e-6f, -1e-6f,
                  0.6249f, -0.6251f}) {
    x.push_back(v);
  }
  for (int64_t n : {16, 19}) {
    // C = A x B with K = 1 and B all ones: every column of row m is x[m].
    const int64_t m = static_cast<int64_t>(x.size()), k = 1;
    const std::vector<float> packed = Pack(std::vector<float>(n, 1.0f), k, n);
    for (Activation act : {Activation::kLogistic, Activation::kTanh,
                           Activation::kGeluErf, Activation::kGeluTanh}) {
      RowGemmEpilogue e;
      e.activation = act;
      std::vector<float> c(m * n);
      RowGemm({m, n, k, k, 1, n}, {{x.data(), packed.data(), c.data()}}, e);
      for (int64_t i = 0; i < m * n; ++i) {
        const double want = Reference(act, x[i / n], 0.0);
        // Relative to the value where it is not tiny: a few float ulps.
        ASSERT_NEAR(c[i], want, 1e-6 * std::abs(want) + 1e-7)
            << "activation " << static_cast<int>(act) << " at x = " << x[i / n]
            << " column " << i % n;
      }
    }
  }
}

// Each row of a product through the whole epilogue (alpha, bias, beta * C,
// addend, each activation) has the bits of that row computed alone: the
// batching promise, through the vector epilogue and a partial panel.
TEST_F(RowGemmTest, EachRowThroughTheEpilogueHasTheBitsOfItsRowAlone) {
  const int64_t m = 13, k = 37, n = 21;
  const std::vector<float> a = Random(m * k, 21), b = Random(k * n, 22);
  const std::vector<float> packed = Pack(b, k, n);
  const std::vector<float> bias = Random(n, 23), addend = Random(m * n, 24),
                           prior = Random(m * n, 25);
  for (Activation act : kActivations) {
    RowGemmEpilogue e;
    e.alpha = 0.75f;
    e.bias = bias.data();
    e.sum_beta = 0.5f;
    e.activation = act;
    e.relu_alpha = 0.1f;
    std::vector<float> all = prior;
    RowGemm({m, n, k, k, 1, n},
            {{a.data(), packed.data(), all.data(), addend.data()}}, e);
    for (int64_t r = 0; r < m; ++r) {
      std::vector<float> one(prior.begin() + r * n,
                             prior.begin() + (r + 1) * n);
      RowGemm({1, n, k, k, 1, n},
              {{a.data() + r * k, packed.data(), one.data(),
                addend.data() + r * n}},
              e);
      EXPECT_EQ(std::memcmp(one.data(), all.data() + r * n, n * 4), 0)
          << "activation " << static_cast<int>(act) << " row " << r;
    }
  }
}

// NaN stays NaN through every activation (as std::exp and std::tanh keep
// it), and the infinities give their limits.
TEST_F(RowGemmTest, ActivationsKeepNanAndTakeTheLimitsOfInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {std::nanf(""), inf, -inf};
  const int64_t m = 3, k = 1, n = 16;
  const std::vector<float> packed = Pack(std::vector<float>(n, 1.0f), k, n);
  auto run = [&](Activation act) {
    RowGemmEpilogue e;
    e.activation = act;
    std::vector<float> c(m * n);
    RowGemm({m, n, k, k, 1, n}, {{x.data(), packed.data(), c.data()}}, e);
    return c;
  };
  for (Activation act :
       {Activation::kRelu, Activation::kLogistic, Activation::kTanh,
        Activation::kGeluErf, Activation::kGeluTanh}) {
    EXPECT_TRUE(std::isnan(run(act)[0])) << static_cast<int>(act);
  }
  EXPECT_EQ(run(Activation::kLogistic)[n], 1.0f);
  // e^-x is bounded at e^88, so 1 / (1 + e^88): a denormal, not 0.
  EXPECT_GE(run(Activation::kLogistic)[2 * n], 0.0f);
  EXPECT_LT(run(Activation::kLogistic)[2 * n], 1e-37f);
  EXPECT_EQ(run(Activation::kTanh)[n], 1.0f);
  EXPECT_EQ(run(Activation::kTanh)[2 * n], -1.0f);
  EXPECT_EQ(run(Activation::kGeluErf)[n], inf);
  EXPECT_EQ(run(Activation::kGeluTanh)[n], inf);
}

}  // namespace
}  // namespace glint::cpu
