// The simulated devices' backend: compiles a partition into a CpuFunction,
// the node's CPU kernels in order plus a buffer plan, and executes it on
// device memory when a stream runs the launch.
#ifndef GLINT_DEVICES_SIM_CPU_FUNCTION_H_
#define GLINT_DEVICES_SIM_CPU_FUNCTION_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/graph.h"
#include "core/trace.h"
#include "devices/compiled_function.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/shape_builds.h"
#include "devices/device_memory.h"

namespace glint {

// Where the buffer of one value lives during an execution.
struct ValueSlot {
  enum class Kind {
    kInput,     // index: position in the function's inputs.
    kConstant,  // offset: into the constant block.
    kArena,     // offset: into the execution's arena (static shape).
    kOutput,    // index: position in the function's outputs.
    kDynamic,   // Shape known only at run time: allocated when produced,
                // freed once its last reader is done.
  };
  Kind kind = Kind::kDynamic;
  size_t index = 0;
  size_t offset = 0;
  ValueInfo info;
};

// Device memory an execution works on, provided by the device.
struct CpuExecutionMemory {
  void* constants = nullptr;  // The loaded constant block.
  void* arena = nullptr;      // arena_bytes() of scratch.
  // Allocates device memory for outputs (which outlive the launch).
  std::function<absl::StatusOr<std::unique_ptr<DeviceBuffer>>(size_t)>
      allocate;
  // Allocates device memory for a value of run-time shape that the launch
  // frees before it ends (kDynamic slots, control-flow bodies' values):
  // the device's launch reserve (DeviceManager::ReserveLaunchMemory). When
  // unset, `allocate`.
  std::function<absl::StatusOr<std::unique_ptr<DeviceBuffer>>(size_t)>
      allocate_scratch;
  // The address kernels use for a buffer of this device (device addresses
  // handed to host code are opaque handles).
  void* (*resolve)(const DeviceBuffer&) = nullptr;
};

// Thread-safe (immutable after Create; Execute may run concurrently with
// distinct memory).
class CpuFunction : public CompiledFunction {
 public:
  // Kernels are built at `precision` (cpu::KernelSpec::precision).
  // Takes `partition` over: a constant that one kernel reads, and only in
  // the form it packs, is dropped as soon as that kernel is built (freed
  // if the caller kept no reference to it).
  static absl::StatusOr<std::shared_ptr<const CpuFunction>> Create(
      Graph partition, const cpu::KernelRegistry& kernels,
      Precision precision = Precision::kFloat32);

  const std::vector<ValueInfo>& inputs() const override { return inputs_; }
  const std::vector<ValueInfo>& outputs() const override { return outputs_; }
  size_t constant_bytes() const override { return constant_bytes_; }
  size_t arena_bytes() const override { return arena_bytes_; }
  double flops() const override { return flops_; }
  ShapeBuildCounts shape_builds() const override {
    return {shape_builds_.builds(), shape_builds_.time()};
  }
  // Walks the steps in order: each step's dynamic outputs are live from it
  // on, and go after their release step (Step::release_after).
  DynamicMemory DynamicMemoryWithin(
      const std::map<std::string, int64_t>& bounds) const override;

  // Writes the constant block (constant_bytes() long) to `dst`, as the
  // device's upload does. FAILED_PRECONDITION after ReleaseHostConstants.
  absl::Status WriteConstants(void* dst) const;
  // Drops the host copy of the constants (see CompiledFunction).
  void ReleaseHostConstants() const override;
  void ReleaseHostConstantsOnNextLoad() const override;

  // Runs every kernel. `inputs` and `outputs` match inputs()/outputs().
  // With `profile` (a profiled run's launch, LaunchOptions::profile), adds
  // one slice per step to profile->trace on its track: the node's name,
  // category "op" ("reorder" for a layout Transpose the optimiser
  // inserted, IsLayoutReorder), and as args its op type, kernel
  // (cpu::Kernel::Describe) and run-time input and output shapes
  // (NodeSliceArgs); the steps that ran before a failure included. A
  // control-flow node is one step, its subgraphs inside its slice. Without
  // it, no clock is read and nothing is formatted: the choice is made once
  // per call.
  absl::Status Execute(const CpuExecutionMemory& memory,
                       const std::vector<const DeviceTensor*>& inputs,
                       const std::vector<DeviceTensor*>& outputs,
                       const TraceTrack* profile = nullptr) const;

 private:
  struct Step {
    const Node* node;
    std::unique_ptr<cpu::Kernel> kernel;
    std::vector<int> inputs;   // Slot ids; -1 for an absent input.
    std::vector<int> outputs;  // Slot ids; -1 for an unused output.
    // For profiled runs, fixed at compile time: the slice's name (the
    // node's, or its op type when unnamed), category and kernel.
    std::string slice_name;
    const char* category = "op";
    std::string kernel_description;
    // Dynamic values (slot ids) this step is the last to read, or produces
    // for no reader: their device memory goes back once it is done, so a
    // run holds its live values only, as the arena's plan does for static
    // ones, not every value it has made.
    std::vector<int> release_after;
  };

  CpuFunction() = default;

  // Create's steps. Gives every value a slot (inputs, constants, node
  // outputs: arena ones placed by liveness) and fills `slot_of`.
  absl::Status AssignSlots(absl::flat_hash_map<std::string, int>* slot_of);
  // Builds the steps' kernels at `precision`. A constant that a single
  // kernel reads, and that kernel packs, is held packed from then on
  // (packed_) and its plain value leaves graph_ at once.
  absl::Status BuildSteps(const cpu::KernelRegistry& kernels,
                          Precision precision,
                          const absl::flat_hash_map<std::string, int>& slot_of);
  // Fills every step's release_after.
  void PlanDynamicReleases();
  // Lays out the constant block: the packed constants and the plain ones
  // left in graph_, by name.
  void PlaceConstants(const absl::flat_hash_map<std::string, int>& slot_of);
  // Execute's profiled path: every step through `run_step`, timed, its
  // slice (op type, kernel, shapes read from `views`) added to `profile`'s
  // trace in one batch; stops at the first failing step.
  absl::Status RunStepsProfiled(
      const std::function<absl::Status(const Step&)>& run_step,
      const std::vector<cpu::TensorView>& views,
      const std::vector<bool>& produced, const TraceTrack& profile) const;

  Graph graph_;  // Owns the nodes the steps point to.
  // Installed on the executing thread for each Execute: the kernels' builds
  // for shapes first met at run time.
  mutable cpu::ShapeBuildRecorder shape_builds_;
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
  std::vector<ValueSlot> slots_;
  std::vector<Step> steps_;
  // Function outputs not produced by a step (an input or constant passed
  // through): output index → slot id.
  std::vector<std::pair<size_t, int>> passthrough_outputs_;
  // One initializer in the constant block: its plain value, or the packed
  // form a kernel made of it (cpu::Kernel::PackedConstants), owned by that
  // kernel.
  struct HostConstant {
    size_t offset = 0;
    Tensor plain;
    const void* packed = nullptr;
    cpu::Kernel* packer = nullptr;  // The kernel owning `packed`.
    size_t bytes = 0;
  };
  // The function's only host copy of its constants (graph_ keeps none once
  // the kernels are built), until ReleaseHostConstants empties it and has
  // the kernels in packing_kernels_ drop their packed forms: a loaded
  // function's constants then live on its devices alone. Execute never
  // reads them (it reads the device's constant block), and Release runs
  // before any launch (the provisioner calls it).
  mutable absl::Mutex constants_mu_;
  mutable std::vector<HostConstant> constants_ ABSL_GUARDED_BY(constants_mu_);
  mutable bool constants_released_ ABSL_GUARDED_BY(constants_mu_) = false;
  // ReleaseHostConstantsOnNextLoad: WriteConstants drops each constant once
  // copied.
  mutable bool release_on_write_ ABSL_GUARDED_BY(constants_mu_) = false;
  std::vector<cpu::Kernel*> packing_kernels_;
  // Constants held packed by the kernel that reads them (BuildSteps), by
  // name, with that kernel; PlaceConstants puts them in the constant block.
  std::map<std::string, std::pair<cpu::PackedConstant, cpu::Kernel*>> packed_;
  size_t constant_bytes_ = 0;
  size_t arena_bytes_ = 0;
  double flops_ = 0;
};

// Backend of the simulated device type: CPU kernels. Thread-safe.
class CpuBackend : public Backend {
 public:
  // `unsupported_ops` lets a device type pretend it lacks ops (to exercise
  // heterogeneous placement). `threads` > 0 sizes compiled kernels for that
  // many threads (the executing thread must be set alike, see
  // cpu::SetKernelThreads); 0 means every core.
  explicit CpuBackend(std::vector<std::string> unsupported_ops = {},
                      int threads = 0);

  absl::string_view name() const override { return "cpu"; }
  bool IsOpSupported(absl::string_view op_type) const override;
  using Backend::Compile;
  absl::StatusOr<std::shared_ptr<const CompiledFunction>> Compile(
      const Graph& partition, const CompileOptions& options) const override;
  absl::StatusOr<std::shared_ptr<const CompiledFunction>> CompileConsuming(
      Graph partition, const CompileOptions& options) const override;

 private:
  const cpu::KernelRegistry& kernels_;
  std::vector<std::string> unsupported_ops_;
  const int threads_;
};

}  // namespace glint

#endif  // GLINT_DEVICES_SIM_CPU_FUNCTION_H_
