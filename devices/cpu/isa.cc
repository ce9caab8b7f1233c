#include "devices/cpu/isa.h"

#include <dnnl.hpp>

namespace glint {
namespace {

bool ProbeBFloat16() {
  using dnnl::memory;
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const memory::dims a = {4, 16}, b = {16, 16}, c = {4, 16};
    auto desc = [](const memory::dims& dims, memory::data_type type) {
      return memory::desc(dims, type, memory::format_tag::ab);
    };
    dnnl::matmul::desc op(desc(a, memory::data_type::bf16),
                          desc(b, memory::data_type::bf16),
                          desc(c, memory::data_type::f32));
    dnnl::matmul::primitive_desc pd(op, engine);
    (void)pd;
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

bool CpuComputesBFloat16() {
  static const bool supported = ProbeBFloat16();
  return supported;
}

bool CpuKernelsRoundAlikeAtEveryBatchSize() {
  static const bool alike =
      dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  return alike;
}

}  // namespace glint
