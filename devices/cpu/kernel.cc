#include "devices/cpu/kernel.h"

#include <exception>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/late_kernel.h"
#include "devices/cpu/register.h"

namespace glint::cpu {

#if defined(_OPENMP) && defined(GLINT_SANITIZER)
namespace {

// Sanitizer builds build and run every kernel with one OpenMP thread.
// libgomp and oneDNN are not instrumented: TSan sees the memsets and frees
// that oneDNN's OpenMP workers make on our buffers but not the barriers
// that order them, and reports races that are not there. ParallelFor is
// already serial there (kernel_util.cc); oneDNN sizes its parallel regions
// by omp_get_max_threads() of the calling thread, both when a primitive is
// created (it keeps that work split) and when it runs, and with one thread
// it runs them inline. The setting is per thread (OpenMP's nthreads-var) and
// a device may have raised it (SetKernelThreads), so it is set around every
// build and every Compute, on whichever thread calls them, and restored
// (ScopedKernelThreads).
class OneThreadKernel final : public Kernel {
 public:
  explicit OneThreadKernel(std::unique_ptr<Kernel> kernel)
      : kernel_(std::move(kernel)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ScopedKernelThreads one(1);
    return kernel_->Compute(ctx);
  }
  // Forwarded, so that sanitizer builds hold packed weights as the others
  // do.
  std::vector<PackedConstant> PackedConstants() const override {
    return kernel_->PackedConstants();
  }
  void UsePackedConstant(int input) override {
    kernel_->UsePackedConstant(input);
  }
  void ReleasePackedConstants() override { kernel_->ReleasePackedConstants(); }
  std::string Describe(const Node& node) const override {
    return kernel_->Describe(node);
  }

 private:
  const std::unique_ptr<Kernel> kernel_;
};

KernelFactory OneThreadFactory(KernelFactory factory) {
  return [factory = std::move(factory)](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    ScopedKernelThreads one(1);
    absl::StatusOr<std::unique_ptr<Kernel>> kernel = factory(spec);
    if (!kernel.ok()) return kernel.status();
    return std::unique_ptr<Kernel>(new OneThreadKernel(*std::move(kernel)));
  };
}

}  // namespace
#endif

absl::Status ComputeNoThrow(const Kernel& kernel, KernelContext& ctx,
                            absl::string_view node) {
  try {
    return kernel.Compute(ctx);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(node, ": out of host memory"));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat(node, ": unexpected exception: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(node, ": unexpected exception"));
  }
}

absl::StatusOr<std::unique_ptr<Kernel>> BuildNoThrow(
    const KernelFactory& factory, const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  try {
    if (NeedsRunTimeShapes(spec)) return MakeLateBoundKernel(factory, spec);
    return factory(spec);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(node, ": out of host memory"));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat(node, ": unexpected exception: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(node, ": unexpected exception"));
  }
}

void KernelRegistry::Register(std::string op_type, KernelFactory factory) {
#if defined(_OPENMP) && defined(GLINT_SANITIZER)
  factory = OneThreadFactory(std::move(factory));
#endif
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
  RegisterDetectionKernels(registry);
  RegisterImageKernels(registry);
  RegisterMiscKernels(registry);
  RegisterRecurrentKernels(registry);
  RegisterControlFlowKernels(registry);
  RegisterSignalKernels(registry);
  RegisterEinsumKernels(registry);
  RegisterQuantKernels(registry);
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
