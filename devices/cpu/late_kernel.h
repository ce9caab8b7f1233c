// Kernels for nodes whose input ranks are unknown until run time.
//
// Import keeps a value whose rank inference could not find as
// Shape::UnknownRank() (an If whose branches differ in rank, a Reshape whose
// shape is data, and whatever such a value feeds). A kernel factory checks
// ranks and picks its implementation from the shapes it is given, so such a
// node cannot be built at compile time. LateBoundKernel builds it when a
// run brings the shapes: on each Compute it takes the inputs' actual shapes,
// builds the node's kernel for them (once per distinct set of input shapes,
// a small cache) and runs it. Errors are the factory's, at run time.
//
// Internal to //devices/cpu:kernels: BuildNoThrow (kernel.h) returns one
// where a present input's rank is unknown, so every compiler of kernels
// (a device function, control-flow bodies, constant folding) gets it.
#ifndef GLINT_DEVICES_CPU_LATE_KERNEL_H_
#define GLINT_DEVICES_CPU_LATE_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "devices/cpu/kernel.h"

namespace glint::cpu {

// True if some present input of `spec` has an unknown rank.
bool NeedsRunTimeShapes(const KernelSpec& spec);

// A kernel that builds `factory`'s kernel for `spec`'s node with each run's
// input shapes. Keeps what the build needs beyond the call: a copy of the
// node (subgraphs and tensor attributes are shared, not copied), the
// types, and a shared reference to each constant input. Never fails
// itself.
std::unique_ptr<Kernel> MakeLateBoundKernel(KernelFactory factory,
                                            const KernelSpec& spec);

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_LATE_KERNEL_H_
