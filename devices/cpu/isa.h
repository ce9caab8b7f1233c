// What this machine's CPU computes through oneDNN, for the code and the
// tests that depend on it. Debian's oneDNN dispatches by the CPU at run
// time: on AVX-512 machines with bf16 (or AMX) MatMul/Gemm/Conv run in
// bfloat16 at Precision::kBFloat16; on an AVX2-only machine oneDNN 2.6 has
// no bfloat16 kernels and those ops compute in float32 instead
// (CreateAtPrecision in dnnl_util.h), bit for bit as at kFloat32.
#ifndef GLINT_DEVICES_CPU_ISA_H_
#define GLINT_DEVICES_CPU_ISA_H_

namespace glint {

// Whether oneDNN has a bfloat16 matmul kernel on this CPU (probed once by
// creating one; cached). Thread-safe.
bool CpuComputesBFloat16();

// Whether oneDNN's float32 matmul gives every row the same bits whatever
// the number of rows computed with it: true where it runs its AVX-512
// brgemm kernels, whose reduction order does not depend on M (measured
// bit-identical, issue 15); false on AVX2-only CPUs, where its sgemm picks
// kernels, unrolling and thread splits by M and a row can differ by 1-2
// ULP between M = 1 and M = 2, 3, 7, 8 (even on one thread). oneDNN's
// convolutions keep a sample's bits at every batch size on both.
// Thread-safe.
bool OneDnnSgemmRoundsAlikeAtEveryBatchSize();

// Whether MatMul/Gemm/Conv give every row the same bits whatever the batch
// size, which dynamic batching's exactness rests on: where oneDNN's matmul
// does not, float32 MatMul/Gemm run on RowGemm (row_gemm.h), which does,
// on any CPU with AVX2 and FMA. False only on CPUs with neither AVX-512
// nor AVX2 + FMA. Thread-safe.
bool CpuKernelsRoundAlikeAtEveryBatchSize();

// Whether oneDNN's int8 products are exact on this CPU: true with VNNI
// (AVX-512 VNNI, AMX), where u8 x s8 products accumulate straight into
// int32. Without it (plain AVX2 or AVX-512) oneDNN sums pairs of products
// in int16 with saturation (vpmaddubsw), and int8 MatMul/Conv results can
// be wrong by thousands; the quantized kernels then use their exact int32
// loops instead (quant.cc). Thread-safe.
bool CpuInt8ProductsAreExact();

}  // namespace glint

#endif  // GLINT_DEVICES_CPU_ISA_H_
