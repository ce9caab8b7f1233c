// Row-major index walks the CPU kernels share: element strides, the
// odometer that steps a multi-index (IndexWalk), optionally carrying a
// linear offset along. Inline, so that a kernel's loop compiles as tight as
// when it spelled the walk out.
#ifndef GLINT_DEVICES_CPU_INDEX_WALK_H_
#define GLINT_DEVICES_CPU_INDEX_WALK_H_

#include <cstdint>
#include <vector>

namespace glint::cpu {

// Row-major element strides of a tensor of `dims` (the last axis has
// stride 1).
inline std::vector<int64_t> RowStrides(const std::vector<int64_t>& dims) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  return strides;
}

// Strides into the smaller row-major tensor left when the axes marked in
// `removed` are dropped from a tensor of `dims`, given per axis of `dims`
// (0 for a removed axis), so that IndexWalk::Next with them carries
// each element's position in the smaller tensor (a reduction's output, a
// normalisation's group). `kept_elements`, when given, receives that
// tensor's size.
inline std::vector<int64_t> KeptStrides(const std::vector<int64_t>& dims,
                                        const std::vector<bool>& removed,
                                        int64_t* kept_elements = nullptr) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> strides(rank, 0);
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (!removed[d]) {
      strides[d] = s;
      s *= dims[d];
    }
  }
  if (kept_elements != nullptr) *kept_elements = s;
  return strides;
}

// A row-major walk over the positions of a tensor of `dims` (the last axis
// fastest): the odometer kernels step once per element. Meant as a local of
// the kernel's loop: its rank, dims and index then stay in registers, also
// across calls the loop makes (a plain function reading dims.size() on each
// step reloads it after every such call). Thread-compatible.
class IndexWalk {
 public:
  // Starts at position 0; `dims` must outlive the walk.
  explicit IndexWalk(const std::vector<int64_t>& dims)
      : dims_(dims.data()),
        rank_(static_cast<int>(dims.size())),
        index_(dims.size(), 0) {}

  // Axis `d` of the current position.
  int64_t index(int d) const { return index_[d]; }

  // Steps to the next position; false, back at position 0, after the last.
  bool Next() {
    for (int d = rank_ - 1; d >= 0; --d) {
      if (++index_[d] < dims_[d]) return true;
      index_[d] = 0;
    }
    return false;
  }

  // Next, keeping `offset` equal to the sum of index(d) * strides[d]
  // without recomputing it (strides may be 0, as KeptStrides gives).
  bool Next(const std::vector<int64_t>& strides, int64_t& offset) {
    for (int d = rank_ - 1; d >= 0; --d) {
      if (++index_[d] < dims_[d]) {
        offset += strides[d];
        return true;
      }
      offset -= strides[d] * (dims_[d] - 1);
      index_[d] = 0;
    }
    return false;
  }

 private:
  const int64_t* dims_;
  int rank_;
  std::vector<int64_t> index_;
};

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_INDEX_WALK_H_
