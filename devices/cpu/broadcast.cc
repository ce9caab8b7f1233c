#include "devices/cpu/broadcast.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace glint::cpu {

absl::StatusOr<Shape> BroadcastShapes(absl::Span<const Shape> shapes) {
  int rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.rank());
  std::vector<int64_t> out(rank, 1);
  for (const Shape& s : shapes) {
    const int offset = rank - s.rank();
    for (int i = 0; i < s.rank(); ++i) {
      const int64_t d = s.dim(i);
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ",
          absl::StrJoin(shapes, ", ",
                        [](std::string* str, const Shape& x) {
                          absl::StrAppend(str, x.ToString());
                        }),
          " cannot be broadcast together"));
    }
  }
  return Shape(std::move(out));
}

int64_t BroadcastPlan::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) r *= dims[i];
  return r;
}

BroadcastPlan MakeBroadcastPlan(const Shape& out,
                                absl::Span<const Shape> inputs) {
  const int rank = out.rank();
  // Full-rank strides of each input as seen from the output.
  std::vector<std::vector<int64_t>> full(inputs.size(),
                                         std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Shape& s = inputs[k];
    const int offset = rank - s.rank();
    int64_t stride = 1;
    // offset < 0 only for leading size-1 axes beyond the output's rank.
    for (int i = s.rank() - 1; i >= 0 && offset + i >= 0; --i) {
      full[k][offset + i] = (s.dim(i) == 1) ? 0 : stride;
      stride *= s.dim(i);
    }
  }
  BroadcastPlan plan;
  plan.strides.resize(inputs.size());
  for (int d = 0; d < rank; ++d) {
    if (out.dim(d) == 1) continue;  // Contributes nothing to the walk.
    bool merge = !plan.dims.empty();
    for (size_t k = 0; merge && k < inputs.size(); ++k) {
      // Row-major contiguity: the previous kept dim steps over this one.
      merge = plan.strides[k].back() == full[k][d] * out.dim(d);
    }
    if (merge) {
      plan.dims.back() *= out.dim(d);
      for (size_t k = 0; k < inputs.size(); ++k) {
        plan.strides[k].back() = full[k][d];
      }
    } else {
      plan.dims.push_back(out.dim(d));
      for (size_t k = 0; k < inputs.size(); ++k) {
        plan.strides[k].push_back(full[k][d]);
      }
    }
  }
  if (plan.dims.empty()) {  // A scalar or all-ones output: one element.
    plan.dims.push_back(1);
    for (auto& s : plan.strides) s.push_back(0);
  }
  return plan;
}

}  // namespace glint::cpu
