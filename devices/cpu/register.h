// Per-family registration functions; RegisterCpuKernels calls them all.
// Internal to //devices/cpu:kernels.
#ifndef GLINT_DEVICES_CPU_REGISTER_H_
#define GLINT_DEVICES_CPU_REGISTER_H_

#include "devices/cpu/kernel.h"

namespace glint::cpu {

void RegisterElementwiseKernels(KernelRegistry* registry);  // elementwise.cc
void RegisterMatMulGemmKernels(KernelRegistry* registry);   // matmul_gemm.cc
void RegisterConvKernels(KernelRegistry* registry);         // conv.cc
void RegisterPoolKernels(KernelRegistry* registry);         // pool.cc
void RegisterNormalizationKernels(KernelRegistry* registry);  // normalization.cc
void RegisterShapeKernels(KernelRegistry* registry);        // shape_ops.cc
void RegisterReduceKernels(KernelRegistry* registry);       // reduce.cc
void RegisterLayoutKernels(KernelRegistry* registry);       // layout_ops.cc
void RegisterIndexingKernels(KernelRegistry* registry);     // indexing.cc
void RegisterMoreNormalizationKernels(KernelRegistry* registry);  // norm_ops.cc
void RegisterLossKernels(KernelRegistry* registry);         // loss.cc
void RegisterResampleKernels(KernelRegistry* registry);     // resample.cc
void RegisterAttentionKernels(KernelRegistry* registry);    // attention.cc
void RegisterDetectionKernels(KernelRegistry* registry);    // detection.cc
void RegisterImageKernels(KernelRegistry* registry);        // image_ops.cc
void RegisterMiscKernels(KernelRegistry* registry);         // misc_ops.cc
void RegisterRecurrentKernels(KernelRegistry* registry);    // rnn.cc
void RegisterControlFlowKernels(KernelRegistry* registry);  // control_flow.cc
void RegisterSignalKernels(KernelRegistry* registry);       // signal.cc
void RegisterEinsumKernels(KernelRegistry* registry);       // einsum.cc
void RegisterQuantKernels(KernelRegistry* registry);        // quant.cc

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_REGISTER_H_
