// Test helpers for CPU kernels: a KernelContext over owned host tensors and
// RunKernel(), which builds a node's kernel from the registry and runs it
// once. Reusable by any test that needs to execute a single node.
//
//   Node add = MakeNode("Add", {"a", "b"}, {"y"});
//   absl::StatusOr<std::vector<Tensor>> out = RunKernel(
//       CpuKernelRegistry(), add,
//       {MakeTensor<float>({2}, {1, 2}), MakeTensor<float>({}, {10})});
//   // out->at(0): float32[2] {11, 12}
#ifndef GLINT_DEVICES_CPU_KERNEL_TEST_UTIL_H_
#define GLINT_DEVICES_CPU_KERNEL_TEST_UTIL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_util.h"

namespace glint::cpu::testing {

// A KernelContext whose inputs are borrowed Tensors and whose outputs are
// owned Tensors allocated on demand. A default-constructed (!valid())
// input Tensor marks an absent optional input. Not thread-safe for
// AllocateOutput; inputs may be read concurrently.
class TestKernelContext : public KernelContext {
 public:
  // `output_dtypes` gives every output's dtype (its size is the number of
  // outputs). `expected_shapes`, when non-empty, is checked by
  // AllocateOutput like a compiled function would (kUnknownDim matches
  // anything). `output_used` defaults to all true.
  TestKernelContext(std::vector<Tensor> inputs,
                    std::vector<DType> output_dtypes,
                    std::vector<Shape> expected_shapes = {},
                    std::vector<bool> output_used = {});

  int num_inputs() const override;
  const TensorView* input(int i) const override;
  int num_outputs() const override;
  absl::StatusOr<TensorView> AllocateOutput(int i,
                                            const Shape& shape) override;
  bool output_used(int i) const override;
  // From the same bounded memory as the outputs, when set_memory_bytes
  // bounds it; the bytes come back when the tensor goes.
  absl::StatusOr<Tensor> AllocateTemporary(DType dtype,
                                           const Shape& shape) override;

  // Outputs (and temporaries) come from a device memory of `bytes` (0, the
  // default: no bound), as a compiled function's come from its device's: an
  // output that does not fit in what is left is RESOURCE_EXHAUSTED "out of
  // memory", before anything is allocated or touched. Tests of hostile
  // inputs use it so that an output a huge run-time value legitimately
  // asks for is refused as glintd's devices refuse it.
  void set_memory_bytes(int64_t bytes) { memory_bytes_ = bytes; }

  // Output i; !valid() if it was never allocated.
  const Tensor& output(int i) const { return outputs_[i]; }
  std::vector<Tensor> TakeOutputs() { return std::move(outputs_); }

 private:
  std::vector<Tensor> inputs_;
  std::vector<TensorView> views_;
  std::vector<bool> present_;
  std::vector<DType> output_dtypes_;
  std::vector<Shape> expected_shapes_;
  std::vector<bool> output_used_;
  std::vector<Tensor> outputs_;
  std::vector<bool> allocated_;
  // Takes `bytes` from the bounded memory; RESOURCE_EXHAUSTED when they do
  // not fit.
  absl::Status Take(int64_t bytes);

  int64_t memory_bytes_ = 0;
  // Shared with the temporaries, which give their bytes back when freed.
  std::shared_ptr<std::atomic<int64_t>> used_bytes_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

struct RunKernelOptions {
  int64_t opset_version = 17;
  // Indices of inputs the kernel is told are compile-time constants.
  std::vector<int> constant_inputs;
  // Dtypes of the outputs; where missing or kUndefined, the spec leaves the
  // dtype undefined (the kernel derives it) and the context allocates with
  // DefaultOutputDType().
  std::vector<DType> output_dtypes;
  // Static output shapes: told to the kernel and checked on allocation.
  std::vector<Shape> output_shapes;
  // Declares every input dimension as unknown in the spec, so that kernels
  // take their "shape only known at run time" path.
  bool hide_input_shapes = false;
  // Runs Compute this many times (each time on a fresh context), from
  // `threads` threads at once when > 1; every run must give the same
  // bytes. Exercises primitive caching and thread safety.
  int runs = 1;
  int threads = 1;
  // KernelSpec::precision.
  Precision precision = Precision::kFloat32;
  // The device memory each run's outputs come from
  // (TestKernelContext::set_memory_bytes); 0: no bound.
  int64_t memory_bytes = 0;
};

// RunKernelOptions for a node of `opset` (the opset 18-23 tests).
inline RunKernelOptions Opset(int64_t opset) {
  RunKernelOptions options;
  options.opset_version = opset;
  return options;
}

// The dtype an importer would infer for `node`'s output `i` given its
// input dtypes, for the ops the CPU kernels implement: Constant's value,
// int64 for MaxPool's Indices, else the first present input's dtype.
DType DefaultOutputDType(const Node& node, int i,
                         const std::vector<Tensor>& inputs);

// The KernelSpec RunKernel builds (exposed for tests that build kernels
// themselves). Borrows `node` and `inputs`.
KernelSpec MakeSpec(const Node& node, const std::vector<Tensor>& inputs,
                    const RunKernelOptions& options = {});

// Builds `node`'s kernel from `registry` and runs it on `inputs`, through
// BuildNoThrow/ComputeNoThrow as glintd does. Returns the outputs
// (!valid() for unused ones), the factory's error, or Compute's error. NOT_FOUND if the registry has no such op.
absl::StatusOr<std::vector<Tensor>> RunKernel(
    const KernelRegistry& registry, const Node& node,
    const std::vector<Tensor>& inputs, const RunKernelOptions& options = {});

// A node named after its op type ("Add" → "add_node").
Node MakeNode(std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs,
              std::map<std::string, Attribute> attributes = {});

// An owned tensor of C++ element type T (float, int64_t...).
template <typename T>
Tensor MakeTensor(std::vector<int64_t> dims, const std::vector<T>& values) {
  return Tensor::FromVector(DTypeOf<T>(), Shape(std::move(dims)), values);
}

// The elements of `t` (whose dtype must be T's).
template <typename T>
std::vector<T> ToVector(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.num_elements());
}

// A tensor of `dims` with values uniform in [lo, hi), deterministic in
// `seed`.
Tensor RandomTensor(std::vector<int64_t> dims, uint32_t seed,
                    float lo = -1.0f, float hi = 1.0f);

// `t` (float32) with every element rounded to the nearest bfloat16, as
// bf16 precision rounds the operands of MatMul/Gemm/Conv.
Tensor RoundToBFloat16(const Tensor& t);

// Largest |a - b| / max(1, |b|) over the elements (float32 tensors of equal
// element count); +inf if the counts differ.
double MaxRelativeError(const Tensor& a, const Tensor& b);

// What bf16 precision promises, checked on `got`: it is the product of the
// bfloat16-rounded operands accumulated in float32 (`want_rounded`, to
// float32's accuracy), hence within bfloat16's error of the exact result
// `want`: |got - want| <= 2^-7 * `magnitude` (the same product of the
// operands' absolute values; two roundings of at most 2^-9 each, doubled
// for the accumulation). And on random data it is not the float32
// kernel's result `f32` bit for bit, which shows the mode is active.
// Relative errors are held to 1e-4. Where this CPU has no bfloat16
// kernels (CpuComputesBFloat16), `got` must instead be `f32` bit for bit.
void ExpectBf16Result(const Tensor& got, const Tensor& want_rounded,
                      const Tensor& want, const Tensor& magnitude,
                      const Tensor& f32);

// Sets the calling thread's OpenMP thread count (up or down, unlike
// ScopedKernelThreads) for a scope and restores it, also when an ASSERT
// leaves the test early. A no-op without OpenMP.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads);
  ~ScopedOmpThreads();
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int saved_ = 1;
};

}  // namespace glint::cpu::testing

#endif  // GLINT_DEVICES_CPU_KERNEL_TEST_UTIL_H_
