// A float32 GEMM whose every row is computed the same way whatever the
// other rows: the kernel behind MatMul and Gemm on CPUs where oneDNN's own
// sgemm is not (AVX2 without AVX-512; devices/cpu/isa.h).
//
// Why: dynamic batching (runtime/batcher.h) merges requests into one run
// and promises each caller the bits an unbatched run would have given.
// That holds only if a row's result does not depend on how many rows are
// computed with it. oneDNN 2.6's AVX2 sgemm picks kernels, unrolling and
// thread splits by M (measured: rows of an M = 2, 3, 7 or 8 product differ
// from the M = 1 product by 1-2 ULP, even on one thread); its AVX-512
// kernels, and its convolutions on both, do not.
//
// How: every element of C is one chain of fused multiply-adds, starting
// from 0 and taking k = 0, 1, ..., K-1 in order, then the epilogue. Rows
// are vectorised across N (16 columns per register pair), never across K,
// and K is never split between threads or blocks, so neither M, nor a
// row's position in its tile, nor the thread count changes a single
// rounding. B is packed into panels of 16 columns (once for constant
// weights); A is read in place with any strides (Gemm's transA).
//
// Thread-safety: the functions are thread-safe; they run on the OpenMP
// threads of the caller (ParallelFor).
#ifndef GLINT_DEVICES_CPU_ROW_GEMM_H_
#define GLINT_DEVICES_CPU_ROW_GEMM_H_

#include <cstdint>
#include <vector>

namespace glint::cpu {

// Whether RowGemm can run on this CPU (AVX2 and FMA).
bool RowGemmAvailable();

// Columns per packed panel of B.
inline constexpr int64_t kRowGemmPanel = 16;

// Floats a packed B of K x N takes: N rounded up to whole panels, times K.
int64_t RowGemmPackedFloats(int64_t k, int64_t n);

// Packs B (element (k, n) at b[k * stride_k + n * stride_n]) into
// `packed` (RowGemmPackedFloats(k, n) floats): panel p holds columns
// 16p .. 16p + 15 for k = 0 .. K-1, 16 floats per k, zero past N.
void RowGemmPackB(const float* b, int64_t k, int64_t n, int64_t stride_k,
                  int64_t stride_n, float* packed);

// What happens to each sum before it is stored, in this order.
struct RowGemmEpilogue {
  enum class Activation {
    kNone,
    kRelu,
    kLogistic,
    kTanh,
    kGeluErf,
    kGeluTanh,  // Gelu's tanh approximation (GPT-2's).
  };

  float alpha = 1.0f;            // Scales the sum.
  const float* bias = nullptr;   // [N], added to every row.
  float sum_beta = 0.0f;         // Adds sum_beta * C's value before the call.
  // Then the item's addend, if any (RowGemmItem).
  Activation activation = Activation::kNone;
  float relu_alpha = 0.0f;       // kRelu: the slope below 0 (LeakyRelu).
};

// One product C = epilogue(A x B) of a batch: A is M x K with element
// (m, k) at a[m * a_stride_m + k * a_stride_k]; B packed by RowGemmPackB;
// C row-major with leading dimension ldc; the epilogue's addend, if any,
// laid out as C.
struct RowGemmItem {
  const float* a = nullptr;
  const float* packed_b = nullptr;
  float* c = nullptr;
  const float* addend = nullptr;
};

// Shapes and strides shared by every item of a batch.
struct RowGemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_stride_m = 0, a_stride_k = 1;
  int64_t ldc = 0;
};

// Computes every item, in parallel over items, panels of N and blocks of
// rows. Requires RowGemmAvailable().
void RowGemm(const RowGemmShape& shape, const std::vector<RowGemmItem>& items,
             const RowGemmEpilogue& epilogue);

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_ROW_GEMM_H_
