// Numpy-style ("multidirectional") broadcasting, shared by the elementwise
// kernels and by Gemm's C input.
#ifndef GLINT_DEVICES_CPU_BROADCAST_H_
#define GLINT_DEVICES_CPU_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace glint::cpu {

// The shape `shapes` broadcast to: ranks are right-aligned and each
// dimension must be equal or 1 across them. INVALID_ARGUMENT (message
// without node name; callers prefix it) when they are incompatible.
absl::StatusOr<Shape> BroadcastShapes(absl::Span<const Shape> shapes);

// How to walk inputs broadcast to an output, in row-major output order.
// The output is described as `dims` after dropping size-1 dimensions and
// merging dimensions that are contiguous in every input, so that the
// innermost loop is as long as possible; `strides[k][d]` is input k's
// element stride along dims[d] (0 where it is broadcast).
struct BroadcastPlan {
  std::vector<int64_t> dims;                  // At least one entry.
  std::vector<std::vector<int64_t>> strides;  // [input][dim].

  int64_t inner() const { return dims.back(); }
  // Number of rows (product of all dims but the last).
  int64_t rows() const;
};

// Every input shape must broadcast to `out` (check with BroadcastShapes).
BroadcastPlan MakeBroadcastPlan(const Shape& out,
                                absl::Span<const Shape> inputs);

// Calls `row(out_offset, in_offsets)` for each row of plan.inner() output
// elements; in_offsets[k] is the element offset of the row's first element
// in input k (input k advances by plan.strides[k].back() per element).
template <typename F>
void ForEachBroadcastRow(const BroadcastPlan& plan, F&& row) {
  const int rank = static_cast<int>(plan.dims.size());
  const int n_in = static_cast<int>(plan.strides.size());
  const int64_t rows = plan.rows();
  const int64_t inner = plan.inner();
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> offsets(n_in, 0);
  for (int64_t r = 0; r < rows; ++r) {
    row(r * inner, static_cast<const std::vector<int64_t>&>(offsets));
    // Advance the odometer over the outer dimensions.
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[d] < plan.dims[d]) {
        for (int k = 0; k < n_in; ++k) offsets[k] += plan.strides[k][d];
        break;
      }
      for (int k = 0; k < n_in; ++k) {
        offsets[k] -= plan.strides[k][d] * (plan.dims[d] - 1);
      }
      index[d] = 0;
    }
  }
}

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_BROADCAST_H_
