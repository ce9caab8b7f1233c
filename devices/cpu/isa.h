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

// Whether MatMul/Gemm/Conv give every row the same bits whatever the
// number of rows computed with it (the batch size): true where oneDNN
// runs its AVX-512 brgemm kernels, whose reduction order does not depend
// on the batch (measured bit-identical, issue 15); false on AVX2-only
// CPUs, where oneDNN's sgemm and convolutions pick kernels and thread
// splits by size and a row's result can differ in the last bits (up to a
// few ULP) between batch sizes. Dynamic batching is exact to the bit only
// where this holds. Thread-safe.
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
