// CPU kernels: the code that runs one graph node on host memory. The
// simulated devices execute their compiled functions with these kernels.
//
// A kernel is built once per node at compile time from a KernelSpec (the
// node, its input and output types, and the values of constant inputs), so
// expensive set-up (oneDNN primitives, packed weights) happens then. At run
// time Compute() reads its inputs and asks the context for output buffers.
#ifndef GLINT_DEVICES_CPU_KERNEL_H_
#define GLINT_DEVICES_CPU_KERNEL_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph.h"
#include "core/precision.h"
#include "core/tensor.h"

namespace glint::cpu {

// A borrowed view of a dense row-major tensor.
struct TensorView {
  DType dtype = DType::kUndefined;
  Shape shape;
  void* data = nullptr;

  int64_t num_elements() const { return shape.NumElements(); }
  size_t num_bytes() const {
    return static_cast<size_t>(num_elements()) * DTypeSize(dtype);
  }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
};

// What one Compute() call sees. Implemented by the executor of a compiled
// function (buffers from its arena) and by tests (owned tensors).
class KernelContext {
 public:
  virtual ~KernelContext() = default;

  virtual int num_inputs() const = 0;
  // Null where the optional input is absent (or i >= num_inputs()).
  virtual const TensorView* input(int i) const = 0;

  virtual int num_outputs() const = 0;
  // The buffer for output `i` with `shape` (its dtype is the node's inferred
  // output dtype). Call at most once per output. The memory is not zeroed.
  // INVALID_ARGUMENT if `shape` contradicts the statically inferred shape;
  // RESOURCE_EXHAUSTED if device memory runs out.
  virtual absl::StatusOr<TensorView> AllocateOutput(int i,
                                                    const Shape& shape) = 0;
  // False for an optional output the graph does not use; a kernel may then
  // skip computing it (it must still not allocate it).
  virtual bool output_used(int i) const = 0;
  // A tensor for the kernel's own use during this Compute (a control-flow
  // body's values, a Loop's scan parts), from the memory the outputs come
  // from: on a device, the device's, so that what a run holds is bounded by
  // the device whether a value leaves the node or not. Freed when its last
  // copy goes, which must be before Compute returns. The memory is not
  // zeroed. INVALID_ARGUMENT for a shape over the ceilings
  // (CheckTensorSize); RESOURCE_EXHAUSTED when the memory runs out. The
  // default, for contexts with no device (constant folding), is host
  // memory.
  virtual absl::StatusOr<Tensor> AllocateTemporary(DType dtype,
                                                   const Shape& shape) {
    return Tensor::CreateUninitialized(dtype, shape);
  }
};

// Everything the compiler knows about a node when it builds its kernel.
struct KernelSpec {
  const Node* node = nullptr;
  int64_t opset_version = 0;
  // One entry per node input; dtype kUndefined where the input is absent.
  std::vector<ValueInfo> inputs;
  // One entry per node output, as inferred at import (dims may be unknown).
  std::vector<ValueInfo> outputs;
  // One entry per input: the value when it is a compile-time constant
  // (an initializer), else null. Borrowed for the duration of the build.
  std::vector<const Tensor*> constant_inputs;
  // The network's precision (AddNetworkOptions::precision). MatMul, Gemm
  // and Conv (and their fused forms) compute in it; every other kernel
  // ignores it. Inputs and outputs stay float32 either way.
  Precision precision = Precision::kFloat32;

  bool has_input(int i) const {
    return i < static_cast<int>(inputs.size()) &&
           inputs[i].dtype != DType::kUndefined;
  }
  const Tensor* constant(int i) const {
    return i < static_cast<int>(constant_inputs.size()) ? constant_inputs[i]
                                                       : nullptr;
  }
};

// A constant input a kernel re-laid out at build time (oneDNN's packed
// weights): `bytes` at `data`, owned by the kernel.
struct PackedConstant {
  int input = -1;
  const void* data = nullptr;
  size_t bytes = 0;
};

// A compiled node. Thread-safe: Compute() may run concurrently for
// different executions of the same compiled function.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual absl::Status Compute(KernelContext& ctx) const = 0;

  // Packing constants without keeping both forms. A kernel that packed a
  // constant input for the only shapes it can see lists it here; the
  // compiled function may then hold the packed bytes in the device's
  // constant block in place of the plain value (the weights exist once,
  // in the layout the kernel reads) and calls UsePackedConstant. Default:
  // none.
  virtual std::vector<PackedConstant> PackedConstants() const { return {}; }
  // From now on input `input`'s view holds the bytes PackedConstants gave
  // (its dtype and shape stay the plain ones). Called at build time,
  // before any Compute.
  virtual void UsePackedConstant(int input) {}
  // The devices hold the packed bytes: the kernel frees its own copy of
  // those it was told to read from their input. Never concurrent with
  // Compute.
  virtual void ReleasePackedConstants() {}

  // What runs `node` (the node the kernel was built for), for per-op
  // profiles: the op type by default. A kernel that chose how to run it
  // says so, e.g. "glint.FusedConv[Relu, channels_last] oneDNN
  // brg:avx512_core" or "glint.FusedMatMul[bias] RowGemm", so that a
  // profile tells the implementations apart. Asked once, after the build
  // (the compiled function keeps the answer); thread-safe like Compute.
  virtual std::string Describe(const Node& node) const { return node.op_type; }
};

// Runs kernel.Compute(ctx) and turns a C++ exception escaping it into a
// status naming `node`: RESOURCE_EXHAUSTED for std::bad_alloc (an allocation
// a run-time value sized past what the host has), INTERNAL for any other.
// Kernels are written not to throw; this is the backstop that makes a
// kernel bug fail one run instead of ending the daemon. Every caller of
// Compute goes through it.
absl::Status ComputeNoThrow(const Kernel& kernel, KernelContext& ctx,
                            absl::string_view node);

// Builds a kernel, or refuses the node: UNIMPLEMENTED for an attribute
// value, dtype or form the kernel does not support, INVALID_ARGUMENT for a
// malformed node. Messages name the node (KernelSpec::node->Describe()).
using KernelFactory =
    std::function<absl::StatusOr<std::unique_ptr<Kernel>>(const KernelSpec&)>;

// factory(spec), with ComputeNoThrow's backstop for exceptions (building
// a kernel allocates too: oneDNN primitives, packed weights). Where a
// present input's rank is unknown (Shape::UnknownRank()), the kernel is
// built at run time instead, for each run's input shapes (late_kernel.h);
// the factory's errors then come from Compute.
absl::StatusOr<std::unique_ptr<Kernel>> BuildNoThrow(
    const KernelFactory& factory, const KernelSpec& spec);

// Op type → kernel factory, for the default ONNX domain.
// Thread-compatible: fill it once, then share it read-only.
class KernelRegistry {
 public:
  // A second registration of the same op type replaces the first. In
  // sanitizer builds the kernel is built and run with one OpenMP thread
  // (kernel.cc).
  void Register(std::string op_type, KernelFactory factory);
  // Null when no kernel exists for `op_type`.
  const KernelFactory* Find(absl::string_view op_type) const;
  std::vector<std::string> OpTypes() const;  // Sorted.

 private:
  std::map<std::string, KernelFactory, std::less<>> factories_;
};

// Adds every CPU kernel Glint has to `registry`. Explicit, so that no
// behaviour depends on static-initialisation order.
void RegisterCpuKernels(KernelRegistry* registry);

// The registry with every CPU kernel, built on first use (thread-safe).
const KernelRegistry& CpuKernelRegistry();

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_KERNEL_H_
