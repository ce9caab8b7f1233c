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

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_REGISTER_H_
