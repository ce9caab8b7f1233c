// Compiling a graph into kernel steps: what a device function
// (devices/sim/cpu_function.h) and a control-flow body (control_flow.cc)
// both do before they run anything: each node's kernel built once, with
// everything known at compile time, its inputs and outputs resolved to
// value slots.
#ifndef GLINT_DEVICES_CPU_COMPILE_STEPS_H_
#define GLINT_DEVICES_CPU_COMPILE_STEPS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/graph.h"
#include "core/precision.h"
#include "devices/cpu/kernel.h"

namespace glint::cpu {

// One node compiled: its kernel and the slots of its inputs and outputs
// (-1 for an optional one left out).
struct CompiledStep {
  const Node* node = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::vector<int> inputs;
  std::vector<int> outputs;
};

// Builds the kernel of each node of `graph`, in order. Every value a node
// reads or writes has a slot in `slot_of`, whose type is `info_of(slot)`;
// constant inputs are `graph`'s initializers. Each kernel is built at
// `precision`. `built` (when set) sees each step as soon as its kernel is
// built, before the next is (the caller may then let go of a constant no
// later node reads). Errors: UNIMPLEMENTED naming the op and the node for
// an op of another domain or without a CPU kernel, and the kernels' own.
absl::StatusOr<std::vector<CompiledStep>> CompileSteps(
    const Graph& graph, const absl::flat_hash_map<std::string, int>& slot_of,
    absl::FunctionRef<const ValueInfo&(int slot)> info_of,
    const KernelRegistry& registry, Precision precision,
    const std::function<void(CompiledStep&)>& built = nullptr);

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_COMPILE_STEPS_H_
