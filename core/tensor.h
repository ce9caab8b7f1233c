// Host tensors: an element type, a shape and a 64-byte-aligned buffer that
// the tensor either owns (shared, copy-on-nothing) or borrows from a caller.
#ifndef GLINT_CORE_TENSOR_H_
#define GLINT_CORE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/dtype.h"

namespace glint {

// Ceilings on what any tensor may be, checked wherever a shape comes from
// outside (a model, a request, a kernel computing an output shape from
// data) before anything is allocated or multiplied: 1 TiB and rank 64. They
// are far beyond real models and keep every size Glint computes from shapes
// (elements, bytes, sums of a few million of them) inside int64 arithmetic.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
inline constexpr int kMaxTensorRank = 64;

// Dimensions of a tensor. A dimension of kUnknownDim is not known until run
// time (a symbolic or data-dependent size); a Shape with none is "static".
//
// A type may also leave the rank itself unknown (UnknownRank(): an If whose
// branches differ in rank, a Reshape whose shape is data): such a Shape has
// no dims, so rank() is 0, but it is not a scalar's: IsStatic() is false,
// NumElements() is -1, it equals no shape and prints "[...]". Only
// types (ValueInfo) hold one; a tensor's shape always has a rank.
class Shape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  Shape() = default;  // A scalar.
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  // The shape of a value whose rank is not known until run time.
  static Shape UnknownRank();

  bool has_rank() const { return !unknown_rank_; }
  // 0 when the rank is unknown: check has_rank() first where it matters.
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  // Setting dims on an unknown-rank Shape does not give it a rank: assign
  // a Shape instead.
  std::vector<int64_t>& mutable_dims() { return dims_; }

  // Known rank and every dim known.
  bool IsStatic() const;
  // Product of the dimensions (1 for a scalar); -1 if any is unknown, or
  // the rank. Saturates at INT64_MAX instead of overflowing: such a shape
  // fails CheckTensorSize, which every shape from outside passes through.
  int64_t NumElements() const;
  // True if a tensor of shape `computed` (a kernel's output, a request's
  // input) may be a value of this type: any shape when the rank is unknown,
  // else the same rank with each known dim equal.
  bool Admits(const Shape& computed) const;
  // "[2, 3, ?]"; "[...]" for an unknown rank.
  std::string ToString() const;

  // Equal dims, both ranks known. An unknown rank equals no shape, not even
  // another unknown rank (as NaN): a pass comparing two types to rule out
  // broadcasting must not take them for one shape.
  friend bool operator==(const Shape& a, const Shape& b) {
    return !a.unknown_rank_ && !b.unknown_rank_ && a.dims_ == b.dims_;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::vector<int64_t> dims_;
  bool unknown_rank_ = false;
};

// OK if a tensor of `dtype` and `shape` may exist: rank at most
// kMaxTensorRank (an unknown rank passes), no negative dimension other than
// kUnknownDim, and the
// known dimensions' product in bytes at most kMaxTensorBytes (computed
// with overflow checks). INVALID_ARGUMENT naming the shape otherwise.
// `what` names the tensor in the message ("input 'x'").
absl::Status CheckTensorSize(DType dtype, const Shape& shape,
                             absl::string_view what = "a tensor");

// Alignment of every buffer Glint allocates; enough for AVX-512 and oneDNN.
inline constexpr size_t kTensorAlignment = 64;

// A dense row-major tensor in host memory.
//
// Copying a Tensor is cheap and shares the buffer (like a shared_ptr); use
// Clone() for a deep copy. Thread-compatible: concurrent reads are safe,
// writes to the data need external synchronisation.
class Tensor {
 public:
  Tensor() = default;  // An empty float32 scalar with no buffer (!valid()).

  // Allocates an owned, zero-filled buffer. INVALID_ARGUMENT for an
  // unknown/negative dimension, an element type without a size or a shape
  // over the ceilings (CheckTensorSize); RESOURCE_EXHAUSTED when the host
  // has no memory for it.
  static absl::StatusOr<Tensor> Create(DType dtype, Shape shape);
  // As Create, but the bytes are left as the allocator gives them: for a
  // caller that writes every byte before anything reads them (the
  // destination of a copy). Zeroing a large buffer first costs a pass over
  // it, and its page faults, for nothing.
  static absl::StatusOr<Tensor> CreateUninitialized(DType dtype, Shape shape);
  // Wraps memory owned by the caller, which must outlive the tensor and
  // every copy of it. `data` need not be aligned.
  static Tensor Borrow(DType dtype, Shape shape, void* data);
  // Wraps memory that `keep_alive` keeps valid: the tensor and every copy of
  // it hold `keep_alive`, so the memory lives until the last of them goes
  // (glintd's shared-memory windows, borrowed for a run). `data` need not
  // be aligned.
  static Tensor Borrow(DType dtype, Shape shape, void* data,
                       std::shared_ptr<void> keep_alive);
  // Owned tensor holding a copy of `bytes`, which must be exactly
  // NumElements * DTypeSize long (INVALID_ARGUMENT otherwise).
  static absl::StatusOr<Tensor> FromBytes(DType dtype, Shape shape,
                                          absl::Span<const uint8_t> bytes);

  template <typename T>
  static Tensor FromVector(DType dtype, Shape shape, const std::vector<T>& v);

  bool valid() const { return data_ != nullptr || num_bytes() == 0; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return shape_.NumElements(); }
  size_t num_bytes() const {
    return static_cast<size_t>(num_elements()) * DTypeSize(dtype_);
  }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() { return static_cast<T*>(data_); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }
  absl::Span<const uint8_t> bytes() const {
    return {static_cast<const uint8_t*>(data_), num_bytes()};
  }

  Tensor Clone() const;
  // Same buffer, new shape with the same element count.
  absl::StatusOr<Tensor> Reshaped(Shape shape) const;
  // The first bytes of this tensor's buffer seen as `dtype` and `shape`
  // (sharing the buffer and its keep-alive). INVALID_ARGUMENT when they
  // need more bytes than the buffer holds, or a shape over the ceilings.
  absl::StatusOr<Tensor> ViewAs(DType dtype, Shape shape) const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  // Null for tensors borrowed without a keep-alive.
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

template <typename T>
Tensor Tensor::FromVector(DType dtype, Shape shape, const std::vector<T>& v) {
  absl::StatusOr<Tensor> t = FromBytes(
      dtype, std::move(shape),
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                v.size() * sizeof(T)));
  return t.ok() ? *std::move(t) : Tensor();
}

// Allocates `bytes` (rounded up) aligned to kTensorAlignment; freed with
// std::free. Returns null when out of memory.
void* AlignedAlloc(size_t bytes);

}  // namespace glint

#endif  // GLINT_CORE_TENSOR_H_
