// The graph rewrites (optimizer/optimize.h) as the CPU backend runs them:
// constant folding evaluates nodes with the CPU kernels, and
// glint.ElementwiseChain chains the ops elementwise.cc can.
//
// Thread-compatible: free functions over the graph they are given.
#ifndef GLINT_DEVICES_CPU_CPU_REWRITES_H_
#define GLINT_DEVICES_CPU_CPU_REWRITES_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/graph.h"
#include "devices/cpu/kernel.h"
#include "optimizer/optimize.h"

namespace glint::cpu {

// Constant folding refuses results larger than this, so that a generating
// op (Expand, Tile...) cannot bloat the constant block.
inline constexpr size_t kMaxFoldedBytes = 16 << 20;

// Runs `node` (every input an initializer of `graph`) once with its kernel
// from `kernels`: its outputs, or nullopt when no kernel takes it, the
// kernel fails, or an output would exceed kMaxFoldedBytes.
std::optional<std::vector<Tensor>> EvaluateConstantNode(
    const Graph& graph, const Node& node, const KernelRegistry& kernels);

// Whether `op` can be a step of glint.ElementwiseChain: a float unary op,
// or Add/Sub/Mul/Div with a one-element constant. Defined with the
// kernels, in elementwise.cc.
bool IsChainableUnaryOp(absl::string_view op);
bool IsChainableScalarOp(absl::string_view op);

// The CPU backend's RewriteBackend; `kernels` must outlive it.
RewriteBackend CpuRewriteBackend(const KernelRegistry& kernels);

// OptimizeGraph (every pass, in order) for the CPU backend. The graph
// stays valid and computes the same outputs up to float rounding.
absl::Status OptimizeGraphForCpu(Graph* graph, const KernelRegistry& kernels);

// The passes that need the backend, with the CPU's.
absl::Status FoldConstants(Graph* graph, const KernelRegistry& kernels);
absl::Status FuseElementwiseChains(Graph* graph);

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_CPU_REWRITES_H_
