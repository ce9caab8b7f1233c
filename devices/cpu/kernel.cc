#include "devices/cpu/kernel.h"

#include <utility>

#include "devices/cpu/register.h"

namespace glint::cpu {

void KernelRegistry::Register(std::string op_type, KernelFactory factory) {
  factories_[std::move(op_type)] = std::move(factory);
}

const KernelFactory* KernelRegistry::Find(absl::string_view op_type) const {
  // std::less<> lookup would need std::string_view; absl's is distinct here.
  auto it = factories_.find(std::string(op_type));
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::OpTypes() const {
  std::vector<std::string> types;
  types.reserve(factories_.size());
  for (const auto& [type, factory] : factories_) types.push_back(type);
  return types;  // std::map keeps them sorted.
}

void RegisterCpuKernels(KernelRegistry* registry) {
  RegisterElementwiseKernels(registry);
  RegisterMatMulGemmKernels(registry);
  RegisterConvKernels(registry);
  RegisterPoolKernels(registry);
  RegisterNormalizationKernels(registry);
  RegisterShapeKernels(registry);
  RegisterReduceKernels(registry);
  RegisterLayoutKernels(registry);
  RegisterIndexingKernels(registry);
  RegisterLossKernels(registry);
  RegisterResampleKernels(registry);
  RegisterAttentionKernels(registry);
}

const KernelRegistry& CpuKernelRegistry() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry;
    RegisterCpuKernels(r);
    return r;
  }();
  return *registry;
}

}  // namespace glint::cpu
