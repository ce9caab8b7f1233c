// The per-op part of the cost model: what one node computes and moves.
// Shared by the partitioner (placement, balancing) and the backends
// (reporting a compiled function's cost).
#ifndef GLINT_CORE_OP_COST_H_
#define GLINT_CORE_OP_COST_H_

#include <cstdint>

#include "core/graph.h"

namespace glint {

struct OpCost {
  double flops = 0;            // A multiply-add counts 2.
  uint64_t bytes_read = 0;     // All inputs, constants included.
  uint64_t bytes_written = 0;  // All outputs.
  uint64_t weight_bytes = 0;   // Inputs that are initializers.
};

// Estimates from the node's shapes as typed. A dim of unknown size (a
// dynamic input dim, a data-dependent one) counts as 1, its smallest
// non-empty size: a network with shapes per request is planned at its
// smallest request, where the ops still weigh as their static dims say (a
// value of unknown rank counts as empty).
//   MatMul [.., M, K] x [.., K, N]: 2·M·K·N per batch element.
//   Gemm: 2·M·K·N (+ M·N for C).
//   Conv: 2 · output elements · (C_in / group) · kernel elements (+ bias).
//   ConvTranspose: 2 · input elements · (C_out / group) · kernel elements.
//   If: its costlier branch; Loop and Scan: the body times the iterations
//   when a constant trip count or static scan length tells, else once;
//   their subgraphs' initializers count as weight_bytes.
//   Everything else: one operation per output element.
OpCost EstimateOpCost(const Node& node, const Graph& graph);

// Bytes of a value, dims of unknown size counted as 1; 0 when its rank is
// unknown.
uint64_t ValueBytes(const ValueInfo& value);

}  // namespace glint

#endif  // GLINT_CORE_OP_COST_H_
