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

// oneDNN's ISA values are bit sets, each including the ISAs below it
// (avx2_vnni is avx2 plus VNNI, not an AVX-512 ISA).
bool IsaIncludes(dnnl_cpu_isa_t part) {
  const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & static_cast<unsigned>(part)) == static_cast<unsigned>(part);
}

}  // namespace

bool CpuComputesBFloat16() {
  static const bool supported = ProbeBFloat16();
  return supported;
}

bool CpuInt8ProductsAreExact() {
  static const bool exact = IsaIncludes(dnnl_cpu_isa_avx512_core_vnni) ||
                            IsaIncludes(dnnl_cpu_isa_avx2_vnni);
  return exact;
}

bool OneDnnSgemmRoundsAlikeAtEveryBatchSize() {
  static const bool alike = IsaIncludes(dnnl_cpu_isa_avx512_core);
  return alike;
}

bool CpuKernelsRoundAlikeAtEveryBatchSize() {
  static const bool alike =
      OneDnnSgemmRoundsAlikeAtEveryBatchSize() ||
      (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  return alike;
}

}  // namespace glint
