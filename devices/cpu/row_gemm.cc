#include "devices/cpu/row_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

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

float Activate(const RowGemmEpilogue& e, float v) {
  using Activation = RowGemmEpilogue::Activation;
  switch (e.activation) {
    case Activation::kNone:
      return v;
    case Activation::kRelu:
      return v > 0 ? v : v * e.relu_alpha;
    case Activation::kLogistic:
      return 1.0f / (1.0f + std::exp(-v));
    case Activation::kTanh:
      return std::tanh(v);
    case Activation::kGeluErf:
      return 0.5f * v * (1.0f + std::erf(v * static_cast<float>(M_SQRT1_2)));
    case Activation::kGeluTanh:
      return 0.5f * v *
             (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
  return v;
}

// Stores `rows` x `cols` of tile at C's (row0, col0), through the epilogue.
// Plain element-wise code: each element's result depends only on its sum,
// its column and its own addend and prior values.
void StoreTile(const RowGemmShape& s, const RowGemmItem& item,
               const RowGemmEpilogue& e, int64_t row0, int64_t col0,
               int rows, int cols, const float (*tile)[kRowGemmPanel]) {
  const bool plain = e.alpha == 1.0f && e.bias == nullptr &&
                     e.sum_beta == 0.0f && item.addend == nullptr &&
                     e.activation == RowGemmEpilogue::Activation::kNone;
  for (int r = 0; r < rows; ++r) {
    float* c = item.c + (row0 + r) * s.ldc + col0;
    if (plain) {
      std::copy_n(tile[r], cols, c);
      continue;
    }
    const float* addend =
        item.addend != nullptr ? item.addend + (row0 + r) * s.ldc + col0
                               : nullptr;
    for (int j = 0; j < cols; ++j) {
      float v = tile[r][j];
      if (e.alpha != 1.0f) v *= e.alpha;
      if (e.bias != nullptr) v += e.bias[col0 + j];
      if (e.sum_beta != 0.0f) v += e.sum_beta * c[j];
      if (addend != nullptr) v += addend[j];
      c[j] = Activate(e, v);
    }
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
