// What a device type's backend makes of a partition, and the backend itself.
#ifndef GLINT_DEVICES_COMPILED_FUNCTION_H_
#define GLINT_DEVICES_COMPILED_FUNCTION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/graph.h"
#include "core/precision.h"
#include "core/tensor.h"

namespace glint {

// Kernel builds that a function's runs made for shapes first met at run
// time (a network with dynamic dims builds a kernel's primitive per shape
// on first use; see devices/cpu/shape_builds.h), and their total time.
struct ShapeBuildCounts {
  uint64_t builds = 0;
  absl::Duration time = absl::ZeroDuration();
};

// Device memory a launch of a function takes for its values of run-time
// shape (CompiledFunction::DynamicMemoryWithin).
struct DynamicMemory {
  // At most this many bytes are live at once, counting the values whose
  // size the bounds determine.
  uint64_t peak_bytes = 0;
  // The values not counted: their size is not determined by the bounds
  // (a dim without a name the bounds size, the values of a Loop's or a
  // Scan's bodies, made once per iteration). Runs allocate them beyond the
  // reserve.
  std::vector<std::string> unbounded;
};

// A partition compiled for one device type: device-independent until a
// DeviceManager loads it (uploading its constants). Immutable after
// compile, so one compiled function can be loaded on several devices of its
// type. Thread-safe.
class CompiledFunction {
 public:
  virtual ~CompiledFunction() = default;

  // The partition's runtime inputs and outputs, in call order.
  virtual const std::vector<ValueInfo>& inputs() const = 0;
  virtual const std::vector<ValueInfo>& outputs() const = 0;
  // Bytes of constants the device must hold while the function is loaded.
  virtual size_t constant_bytes() const = 0;
  // Bytes of the activation arena one execution needs (planned by
  // liveness); dynamically shaped values are allocated beside it.
  virtual size_t arena_bytes() const = 0;
  // Estimated floating-point operations per execution.
  virtual double flops() const = 0;
  // Run-time kernel builds since compile, over every device that runs it.
  // Thread-safe.
  virtual ShapeBuildCounts shape_builds() const { return {}; }
  // What one launch allocates for values of run-time shape (those outside
  // the arena) when the network's named dims are each within `bounds`
  // (ValueInfo::BytesWithin): the peak of those live at once, as the
  // launch frees each after its last reader. Launches on a device run one
  // at a time, so the device reserves the largest of its functions' peaks
  // (DeviceManager::ReserveLaunchMemory). The function's outputs are not
  // in it: they live in the caller's execution state. Zero for a function
  // of static shapes.
  virtual DynamicMemory DynamicMemoryWithin(
      const std::map<std::string, int64_t>& bounds) const {
    return {};
  }
  // Called once every device that needs the function has loaded it (the
  // provisioner does, after its last Load): the function may drop its host
  // copy of the constants, which the devices now hold, so that a network's
  // weights are not kept twice. A later Load of it fails
  // FAILED_PRECONDITION (compile again). Thread-safe.
  virtual void ReleaseHostConstants() const {}
  // Says that the next Load is the last (the provisioner's): the function
  // may drop each host constant as soon as that Load has copied it to the
  // device, so that the weights are not held in full both on the host and
  // on the device while it loads; after it, as ReleaseHostConstants.
  // Thread-safe.
  virtual void ReleaseHostConstantsOnNextLoad() const {}
};

// How a network's partitions are compiled (from its AddNetworkOptions).
// Part of what a compiled function is: two networks differing here share
// no compiled code.
struct CompileOptions {
  // What MatMul/Gemm/Conv compute in; values between nodes stay float32.
  // A backend without bfloat16 arithmetic computes in float32.
  Precision precision = Precision::kFloat32;
};

// Compiles partitions for a device type. Thread-safe.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual absl::string_view name() const = 0;
  // Whether the backend has a kernel for `op_type` (default ONNX domain).
  virtual bool IsOpSupported(absl::string_view op_type) const = 0;
  // UNIMPLEMENTED (naming op and node) for what the backend cannot run,
  // INVALID_ARGUMENT for malformed nodes.
  virtual absl::StatusOr<std::shared_ptr<const CompiledFunction>> Compile(
      const Graph& partition, const CompileOptions& options) const = 0;
  // Compile for a caller that needs `partition` no more (the provisioner's
  // last compile of a partition): the backend may take its constants over
  // and let each go once its kernels hold what they need of it (a packed
  // copy), so that a network's weights are not held twice while it
  // compiles. Default: Compile(partition, options).
  virtual absl::StatusOr<std::shared_ptr<const CompiledFunction>>
  CompileConsuming(Graph partition, const CompileOptions& options) const {
    return Compile(partition, options);
  }
  // With the default options (float32).
  absl::StatusOr<std::shared_ptr<const CompiledFunction>> Compile(
      const Graph& partition) const {
    return Compile(partition, CompileOptions());
  }
};

}  // namespace glint

#endif  // GLINT_DEVICES_COMPILED_FUNCTION_H_
