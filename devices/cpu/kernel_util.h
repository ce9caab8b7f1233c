// Helpers shared by the CPU kernel implementations (not by their users):
// error messages that name the node, dtype dispatch, checked access to the
// context's inputs and outputs, axis normalisation.
#ifndef GLINT_DEVICES_CPU_KERNEL_UTIL_H_
#define GLINT_DEVICES_CPU_KERNEL_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "devices/cpu/kernel.h"

namespace glint::cpu {

// Messages are "<node description>: <details>" so that an error from deep
// inside a compiled function still says which node failed.
template <typename... Args>
absl::Status InvalidArgument(absl::string_view node, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(node, ": ", args...));
}
template <typename... Args>
absl::Status Unimplemented(absl::string_view node, const Args&... args) {
  return absl::UnimplementedError(absl::StrCat(node, ": ", args...));
}
template <typename... Args>
absl::Status Internal(absl::string_view node, const Args&... args) {
  return absl::InternalError(absl::StrCat(node, ": ", args...));
}

// Carries a C++ element type through a generic lambda.
template <typename T>
struct TypeTag {
  using type = T;
};

// The DType of a C++ element type.
template <typename T>
constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType DTypeOf<double>() { return DType::kFloat64; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kInt8; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType DTypeOf<int16_t>() { return DType::kInt16; }
template <> constexpr DType DTypeOf<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType DTypeOf<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }
template <> constexpr DType DTypeOf<uint64_t>() { return DType::kUInt64; }

// Element-type sets the kernels accept.
inline constexpr std::initializer_list<DType> kFloatDTypes = {
    DType::kFloat32, DType::kFloat64};
inline constexpr std::initializer_list<DType> kNumericDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kUInt8,
    DType::kInt16,   DType::kUInt16,  DType::kInt32,  DType::kUInt32,
    DType::kInt64,   DType::kUInt64};
inline constexpr std::initializer_list<DType> kSignedDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kInt8,
    DType::kInt16,   DType::kInt32,   DType::kInt64};

bool DTypeIn(DType dtype, std::initializer_list<DType> set);
// "float32, float64".
std::string DTypeList(std::initializer_list<DType> set);

// Calls `f(TypeTag<T>{})` for the C++ type of a numeric dtype (the ones in
// kNumericDTypes) and returns its status; UNIMPLEMENTED for other dtypes.
// Kernels check the dtype at build time, so that branch is a safety net.
template <typename F>
absl::Status VisitNumeric(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kUInt16: return f(TypeTag<uint16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kUInt32: return f(TypeTag<uint32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kUInt64: return f(TypeTag<uint64_t>{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("no numeric kernel for dtype ", DTypeName(dtype)));
  }
}

// State every kernel keeps: its node's description for messages. Kernels
// copy what they need from the node at build time and never keep a pointer
// to it, since the graph may not outlive the compiled function.
class KernelBase : public Kernel {
 protected:
  explicit KernelBase(const KernelSpec& spec)
      : node_(spec.node->Describe()) {}
  const std::string& node() const { return node_; }

 private:
  std::string node_;
};

// Kernel::Describe as the kernels that choose how to run a node spell it:
// "OP[trait, ...] ENGINE". The traits are what the CPU optimiser fused
// into the node (optimize.h): its activation ("Relu", "LeakyRelu"...),
// "alpha=A" when not 1, "channels_last", "bias" (a fused MatMul/Conv's
// input 2) and "residual" (its input 3, the addend); no brackets without
// any. ENGINE is what computes it ("oneDNN brg:avx512_core", "RowGemm",
// with " bf16" at that precision); left out when empty.
std::string DescribeKernel(const Node& node, absl::string_view engine);

// Build-time checks.
//
// The dtype of input `i` as declared by the spec; INVALID_ARGUMENT if the
// input is required but absent, UNIMPLEMENTED if not in `allowed`.
absl::StatusOr<DType> SpecInputDType(const KernelSpec& spec, int i,
                                     std::initializer_list<DType> allowed);
// The dtype output `i` has: the spec's when defined (INVALID_ARGUMENT if it
// differs from `derived`), else `derived`.
absl::StatusOr<DType> SpecOutputDType(const KernelSpec& spec, int i,
                                      DType derived);
// INVALID_ARGUMENT unless the node has between `min` and `max` inputs
// (counting absent optional ones in the middle) and at least one output.
absl::Status CheckArity(const KernelSpec& spec, int min_inputs,
                        int max_inputs);
// The checks of a kernel that moves the elements of input 0 (data) into
// output 0 as input 1 directs (indices, a shape, repeats, a condition):
// exactly `num_inputs` inputs, data of any fixed-size dtype, input 1 of
// one of `index_dtypes`, output 0 of the data's dtype, which is returned.
absl::StatusOr<DType> SpecDataAndIndex(
    const KernelSpec& spec, int num_inputs,
    std::initializer_list<DType> index_dtypes);

// Run-time access.
//
// Input `i`, checked to be present, of dtype `dtype` (any when kUndefined),
// with a static shape and a buffer.
absl::StatusOr<const TensorView*> GetInput(const KernelContext& ctx, int i,
                                           DType dtype,
                                           absl::string_view node);
// Input `i` or null when absent; checked like GetInput when present.
absl::StatusOr<const TensorView*> GetOptionalInput(const KernelContext& ctx,
                                                   int i, DType dtype,
                                                   absl::string_view node);
// Inputs `first`.. (at least one) as the float32 values a Concat along
// their last axis takes: rank 2 or more, equal but for the last axis (the
// fused channels-last ops). INVALID_ARGUMENT naming `node` otherwise.
absl::StatusOr<std::vector<const TensorView*>> GetChannelsLastConcatInputs(
    const KernelContext& ctx, int first, absl::string_view node);
// Allocates output `i` and checks that the context gave it `dtype`.
absl::StatusOr<TensorView> AllocateOutput(KernelContext& ctx, int i,
                                          const Shape& shape, DType dtype,
                                          absl::string_view node);

// Maps `axis` in [-rank, rank - 1] (or [-rank, rank] when `inclusive_end`)
// to [0, rank - 1] (or [0, rank]); INVALID_ARGUMENT outside.
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank, bool inclusive_end,
                                  absl::string_view node);

// The values of a 1-D (or scalar) int64 or int32 tensor.
absl::StatusOr<std::vector<int64_t>> ReadInt64s(const TensorView& t,
                                                absl::string_view what,
                                                absl::string_view node);
// The values of input `i`, checked as GetInput checks it (against
// `dtype`) and read as ReadInt64s reads them.
absl::StatusOr<std::vector<int64_t>> GetInputInt64s(const KernelContext& ctx,
                                                    int i, DType dtype,
                                                    absl::string_view what,
                                                    absl::string_view node);
// GetInputInt64s for an optional input: `fallback` when it is absent.
absl::StatusOr<std::vector<int64_t>> GetOptionalInputInt64s(
    const KernelContext& ctx, int i, DType dtype,
    const std::vector<int64_t>& fallback, absl::string_view what,
    absl::string_view node);

// Product of dims[begin, end).
int64_t Product(const std::vector<int64_t>& dims, int begin, int end);

// A view of a host tensor, for code that mixes Tensors and views.
TensorView ViewOf(const Tensor& t);

// Put before a hot, vectorisable, non-template function: GCC compiles it
// also for AVX2 and AVX-512 machines and picks the best at load time (the
// build's baseline is x86-64-v2, SSE4.2, so that it runs anywhere). Off
// under sanitizers, whose runtimes do not take ifuncs.
#if defined(__x86_64__) && !defined(GLINT_SANITIZER)
#define GLINT_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GLINT_VECTOR_CLONES
#endif

// Lowers the calling thread's kernel threads (OpenMP's nthreads-var, which
// ParallelFor and oneDNN read when a primitive is created and when it runs)
// to at most `threads` while in scope, and restores them. For work too
// small to pay for a parallel region, and for sanitizer builds. Not
// thread-safe to share: one per scope, on the thread that runs the work.
class ScopedKernelThreads {
 public:
  explicit ScopedKernelThreads(int threads);
  ~ScopedKernelThreads();
  ScopedKernelThreads(const ScopedKernelThreads&) = delete;
  ScopedKernelThreads& operator=(const ScopedKernelThreads&) = delete;

 private:
  const int saved_;
};

// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel on
// the OpenMP threads oneDNN's primitives use too (one pool per calling
// thread), when n is at least 2 * `grain` items; else once, inline. A
// parallel call always starts a team of the thread's full count
// (omp_get_max_threads), however few chunks there are, so that the pool
// keeps its threads between ops. `fn` must not throw. Serial in sanitizer
// builds, whose runtimes cannot see OpenMP's synchronisation.
void ParallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& fn);

// Kernels run from the calling thread from now on use at most `threads`
// threads (> 0): ParallelFor, oneDNN's primitives created afterwards (they
// fix their work split at creation) and its GEMMs. It is a per-thread
// setting (OpenMP's nthreads-var): call it on the thread that compiles and
// on the one that executes. Threads not told use every core. Sanitizer
// builds build and run registered kernels with one thread regardless.
void SetKernelThreads(int threads);

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_KERNEL_UTIL_H_
