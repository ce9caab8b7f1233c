#include "devices/cpu/row_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "devices/cpu/kernel_util.h"

namespace glint::cpu {
namespace {

// Rows per micro-tile: 6 rows x 16 columns is 12 accumulators, which with
// the two B vectors and the broadcast A value fill AVX2's 16 registers.
constexpr int kTileRows = 6;
// Rows per task: a packed panel of B is reused across this many rows while
// it is in cache.
constexpr int64_t kBlockRows = 8 * kTileRows;

// The sums of rows [0, MR) of A (rows a_stride_m apart) times one packed
// panel, into tile[r][0..15]: each lane one chain of fused multiply-adds
// over k in order, whatever MR.
template <int MR>
__attribute__((target("avx2,fma"))) void MicroKernel(
    int64_t k, const float* a, int64_t a_stride_m, int64_t a_stride_k,
    const float* panel, float (*tile)[kRowGemmPanel]) {
  __m256 lo[MR], hi[MR];
  const float* row[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    lo[r] = _mm256_setzero_ps();
    hi[r] = _mm256_setzero_ps();
    row[r] = a + r * a_stride_m;
  }
  for (int64_t i = 0; i < k; ++i) {
    const __m256 b0 = _mm256_loadu_ps(panel + i * kRowGemmPanel);
    const __m256 b1 = _mm256_loadu_ps(panel + i * kRowGemmPanel + 8);
    const int64_t offset = i * a_stride_k;
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 x = _mm256_broadcast_ss(row[r] + offset);
      lo[r] = _mm256_fmadd_ps(x, b0, lo[r]);
      hi[r] = _mm256_fmadd_ps(x, b1, hi[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(tile[r], lo[r]);
    _mm256_storeu_ps(tile[r] + 8, hi[r]);
  }
}

using MicroKernelFn = void (*)(int64_t, const float*, int64_t, int64_t,
                               const float*, float (*)[kRowGemmPanel]);
constexpr MicroKernelFn kMicroKernels[kTileRows + 1] = {
    nullptr,        MicroKernel<1>, MicroKernel<2>, MicroKernel<3>,
    MicroKernel<4>, MicroKernel<5>, MicroKernel<6>};

#define GLINT_AVX2 __attribute__((target("avx2,fma")))

// Vector forms of the activations, 8 lanes at a time. Each lane's result
// depends on that lane's input only, so where an element sits in a tile
// (or how many rows a call has) never changes its bits.

// e^x for x clamped to [-87, 88] (inside float's normal range; below, the
// result is about 1.6e-38 instead of smaller): Cephes' expf, x = n ln2 + r
// with |r| <= ln2 / 2, a degree-5 polynomial for e^r (about 1 ulp) and n
// put into the exponent.
GLINT_AVX2 inline __m256 Exp(__m256 x) {
  // The bound first: min and max return their second operand when either
  // is NaN, so a NaN passes through (its exponent bits below make 1.0, and
  // the polynomial keeps the NaN).
  x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);
  x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 in two parts, so that n * ln2 is subtracted without rounding.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  const __m256i two_n = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}

// 1 / x for x >= 1 to about 1 ulp: the 12-bit estimate and one Newton
// step, cheaper than vdivps (ConvNeXt-T's Gelu-fused MatMuls: 1.50 ->
// 1.33 ms a call). x is bounded by FLT_MAX first: the estimate of +inf is
// 0, and the Newton step would make inf * 0 a NaN. Estimates differ
// between CPU vendors in their last bits; on one CPU a lane's result
// depends on its own input only.
GLINT_AVX2 inline __m256 Reciprocal(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(std::numeric_limits<float>::max()), x);
  const __m256 r = _mm256_rcp_ps(x);
  // r (2 - x r), as r + r (1 - x r) to keep the last bits.
  const __m256 e = _mm256_fnmadd_ps(x, r, _mm256_set1_ps(1.0f));
  return _mm256_fmadd_ps(r, e, r);
}

// 1 / (1 + e^-x).
GLINT_AVX2 inline __m256 Logistic(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(
      one, _mm256_add_ps(one, Exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// Cephes' tanhf: an odd polynomial below |x| = 0.625 (where the form with
// e^2x would lose the small result's digits), 1 - 2 / (e^2|x| + 1) with
// x's sign above.
GLINT_AVX2 inline __m256 Tanh(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 big = Exp(_mm256_add_ps(ax, ax));
  big = _mm256_sub_ps(
      one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(big, one)));
  big = _mm256_or_ps(big, sign);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  const __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm256_blendv_ps(big, small, is_small);
}

// x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))). With y = |x| / sqrt(2), q =
// erfc(y) by Numerical Recipes' erfcc (relative error below 1.2e-7
// everywhere, so small results keep their digits), 1 + erf(x / sqrt(2)) is
// q below 0 and 2 - q above.
GLINT_AVX2 inline __m256 GeluErf(__m256 x) {
  const __m256 y = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x),
                                 _mm256_set1_ps(static_cast<float>(M_SQRT1_2)));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t =
      Reciprocal(_mm256_fmadd_ps(_mm256_set1_ps(0.5f), y, one));
  __m256 p = _mm256_set1_ps(0.17087277f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
  const __m256 q = _mm256_mul_ps(t, Exp(_mm256_fnmadd_ps(y, y, p)));
  const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 one_plus_erf =
      _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), q), q, negative);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), one_plus_erf);
}

// 0.5 x (1 + tanh(u)) = x / (1 + e^-2u), u = sqrt(2 / pi) (x + 0.044715
// x^3): the same value without tanh's cancellation below 0.
GLINT_AVX2 inline __m256 GeluTanh(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 u =
      _mm256_mul_ps(_mm256_set1_ps(0.7978845608f),
                    _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
  const __m256 e = Exp(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u));
  return _mm256_mul_ps(x, Reciprocal(_mm256_add_ps(_mm256_set1_ps(1.0f), e)));
}

GLINT_AVX2 inline __m256 Activate(const RowGemmEpilogue& e, __m256 v) {
  using Activation = RowGemmEpilogue::Activation;
  switch (e.activation) {
    case Activation::kNone:
      return v;
    case Activation::kRelu: {
      const __m256 positive = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ);
      return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(e.relu_alpha)), v,
                              positive);
    }
    case Activation::kLogistic:
      return Logistic(v);
    case Activation::kTanh:
      return Tanh(v);
    case Activation::kGeluErf:
      return GeluErf(v);
    case Activation::kGeluTanh:
      return GeluTanh(v);
  }
  return v;
}

// The epilogue of 8 sums: `c` holds C's prior values (read only with
// sum_beta), `bias` and `addend` their columns' and elements' (or null).
GLINT_AVX2 inline __m256 Epilogue8(const RowGemmEpilogue& e, __m256 v,
                                   const float* bias, const float* prior,
                                   const float* addend) {
  if (e.alpha != 1.0f) v = _mm256_mul_ps(v, _mm256_set1_ps(e.alpha));
  if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias));
  if (e.sum_beta != 0.0f) {
    v = _mm256_add_ps(
        v, _mm256_mul_ps(_mm256_set1_ps(e.sum_beta), _mm256_loadu_ps(prior)));
  }
  if (addend != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(addend));
  return Activate(e, v);
}

// Stores `rows` x `cols` of tile at C's (row0, col0), through the epilogue,
// 8 columns at a time. A partial panel (cols < 16) goes through the same
// vector code on a padded copy, so an element's result never depends on
// its panel being whole.
GLINT_AVX2 void StoreTile(const RowGemmShape& s, const RowGemmItem& item,
                          const RowGemmEpilogue& e, int64_t row0, int64_t col0,
                          int rows, int cols,
                          const float (*tile)[kRowGemmPanel]) {
  const bool plain = e.alpha == 1.0f && e.bias == nullptr &&
                     e.sum_beta == 0.0f && item.addend == nullptr &&
                     e.activation == RowGemmEpilogue::Activation::kNone;
  const bool whole = cols == kRowGemmPanel;
  alignas(32) float bias[kRowGemmPanel] = {};
  if (e.bias != nullptr && !whole) std::copy_n(e.bias + col0, cols, bias);
  const float* bias_row =
      e.bias == nullptr ? nullptr : (whole ? e.bias + col0 : bias);
  for (int r = 0; r < rows; ++r) {
    float* c = item.c + (row0 + r) * s.ldc + col0;
    if (plain) {
      std::copy_n(tile[r], cols, c);
      continue;
    }
    const float* addend =
        item.addend != nullptr ? item.addend + (row0 + r) * s.ldc + col0
                               : nullptr;
    if (whole) {
      for (int j = 0; j < kRowGemmPanel; j += 8) {
        const __m256 v =
            Epilogue8(e, _mm256_loadu_ps(tile[r] + j),
                      bias_row == nullptr ? nullptr : bias_row + j, c + j,
                      addend == nullptr ? nullptr : addend + j);
        _mm256_storeu_ps(c + j, v);
      }
      continue;
    }
    alignas(32) float prior[kRowGemmPanel] = {};
    alignas(32) float add[kRowGemmPanel] = {};
    alignas(32) float out[kRowGemmPanel];
    if (e.sum_beta != 0.0f) std::copy_n(c, cols, prior);
    if (addend != nullptr) std::copy_n(addend, cols, add);
    for (int j = 0; j < kRowGemmPanel; j += 8) {
      _mm256_store_ps(
          out + j, Epilogue8(e, _mm256_loadu_ps(tile[r] + j),
                             bias_row == nullptr ? nullptr : bias_row + j,
                             prior + j, addend == nullptr ? nullptr : add + j));
    }
    std::copy_n(out, cols, c);
  }
}

}  // namespace

bool RowGemmAvailable() {
#if defined(__x86_64__)
  static const bool available =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return available;
#else
  return false;
#endif
}

int64_t RowGemmPackedFloats(int64_t k, int64_t n) {
  const int64_t panels = (n + kRowGemmPanel - 1) / kRowGemmPanel;
  return panels * kRowGemmPanel * k;
}

void RowGemmPackB(const float* b, int64_t k, int64_t n, int64_t stride_k,
                  int64_t stride_n, float* packed) {
  const int64_t panels = (n + kRowGemmPanel - 1) / kRowGemmPanel;
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t col0 = p * kRowGemmPanel;
    const int64_t cols = std::min(kRowGemmPanel, n - col0);
    float* out = packed + p * k * kRowGemmPanel;
    for (int64_t i = 0; i < k; ++i) {
      const float* in = b + i * stride_k + col0 * stride_n;
      float* to = out + i * kRowGemmPanel;
      if (stride_n == 1) {
        std::copy_n(in, cols, to);
      } else {
        for (int64_t j = 0; j < cols; ++j) to[j] = in[j * stride_n];
      }
      std::fill(to + cols, to + kRowGemmPanel, 0.0f);
    }
  }
}

void RowGemm(const RowGemmShape& s, const std::vector<RowGemmItem>& items,
             const RowGemmEpilogue& e) {
  if (s.m <= 0 || s.n <= 0 || items.empty()) return;
  const int64_t panels = (s.n + kRowGemmPanel - 1) / kRowGemmPanel;
  const int64_t blocks = (s.m + kBlockRows - 1) / kBlockRows;
  const int64_t per_item = panels * blocks;
  const int64_t tasks = static_cast<int64_t>(items.size()) * per_item;
  // Threads only for tasks worth a wake-up: about 2^16 multiply-adds each
  // at least. The split never changes a result (see the header).
  const int64_t task_work =
      std::min(s.m, kBlockRows) * kRowGemmPanel * std::max<int64_t>(s.k, 1);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / task_work);
  ParallelFor(tasks, grain, [&](int64_t begin, int64_t end) {
    alignas(32) float tile[kTileRows][kRowGemmPanel];
    for (int64_t t = begin; t < end; ++t) {
      const RowGemmItem& item = items[t / per_item];
      const int64_t block = (t % per_item) / panels;
      const int64_t panel = t % panels;
      const int64_t col0 = panel * kRowGemmPanel;
      const int cols = static_cast<int>(std::min(kRowGemmPanel, s.n - col0));
      const float* packed = item.packed_b + panel * s.k * kRowGemmPanel;
      const int64_t row_end = std::min(s.m, (block + 1) * kBlockRows);
      for (int64_t row0 = block * kBlockRows; row0 < row_end;
           row0 += kTileRows) {
        const int rows =
            static_cast<int>(std::min<int64_t>(kTileRows, row_end - row0));
        kMicroKernels[rows](s.k, item.a + row0 * s.a_stride_m, s.a_stride_m,
                            s.a_stride_k, packed, tile);
        StoreTile(s, item, e, row0, col0, rows, cols, tile);
      }
    }
  });
}

}  // namespace glint::cpu
