#include "core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace glint {

Shape Shape::UnknownRank() {
  Shape s;
  s.unknown_rank_ = true;
  return s;
}

bool Shape::Admits(const Shape& computed) const {
  if (unknown_rank_) return true;
  if (computed.unknown_rank_ || computed.rank() != rank()) return false;
  for (int d = 0; d < rank(); ++d) {
    if (dims_[d] >= 0 && dims_[d] != computed.dims_[d]) return false;
  }
  return true;
}

bool Shape::IsStatic() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Shape::NumElements() const {
  if (unknown_rank_) return -1;
  int64_t n = 1;
  bool saturated = false;
  for (int64_t d : dims_) {
    if (d < 0) return -1;
    if (__builtin_mul_overflow(n, d, &n)) saturated = true;
  }
  // A zero dimension makes the product 0 even after an overflow.
  if (saturated) {
    for (int64_t d : dims_) {
      if (d == 0) return 0;
    }
    return std::numeric_limits<int64_t>::max();
  }
  return n;
}

absl::Status CheckTensorSize(DType dtype, const Shape& shape,
                             absl::string_view what) {
  if (shape.rank() > kMaxTensorRank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has rank ", shape.rank(),
                     ", over Glint's limit of ", kMaxTensorRank));
  }
  // Bytes of one element times every known dimension; a zero dimension
  // makes the tensor empty whatever the others are.
  int64_t bytes = std::max<int64_t>(1, DTypeSize(dtype));
  bool over = false;
  for (int64_t d : shape.dims()) {
    if (d == 0) return absl::OkStatus();
    if (d < 0 && d != Shape::kUnknownDim) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has negative dimension ", d));
    }
    if (d > 0 &&
        (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxTensorBytes)) {
      over = true;
    }
  }
  if (over) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of shape ", shape.ToString(), " and type ",
                     DTypeName(dtype), " would exceed Glint's limit of ",
                     kMaxTensorBytes >> 30, " GiB per tensor"));
  }
  return absl::OkStatus();
}

std::string Shape::ToString() const {
  if (unknown_rank_) return "[...]";
  return absl::StrCat(
      "[",
      absl::StrJoin(dims_, ", ",
                    [](std::string* out, int64_t d) {
                      absl::StrAppend(out, d < 0 ? "?" : absl::StrCat(d));
                    }),
      "]");
}

void* AlignedAlloc(size_t bytes) {
  const size_t rounded =
      ((bytes + kTensorAlignment - 1) / kTensorAlignment) * kTensorAlignment;
  return std::aligned_alloc(kTensorAlignment,
                            rounded == 0 ? kTensorAlignment : rounded);
}

absl::StatusOr<Tensor> Tensor::Create(DType dtype, Shape shape) {
  absl::StatusOr<Tensor> t = CreateUninitialized(dtype, std::move(shape));
  if (t.ok()) std::memset(t->raw_data(), 0, t->num_bytes());
  return t;
}

absl::StatusOr<Tensor> Tensor::CreateUninitialized(DType dtype, Shape shape) {
  if (!shape.IsStatic()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a tensor of shape ", shape.ToString()));
  }
  if (DTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot allocate a tensor of dtype ", DTypeName(dtype)));
  }
  if (absl::Status s = CheckTensorSize(dtype, shape); !s.ok()) return s;
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  const size_t bytes = t.num_bytes();
  void* p = AlignedAlloc(bytes);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("host allocation of ", bytes, " bytes failed"));
  }
  t.owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  return t;
}

Tensor Tensor::Borrow(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::Borrow(DType dtype, Shape shape, void* data,
                      std::shared_ptr<void> keep_alive) {
  Tensor t = Borrow(dtype, std::move(shape), data);
  t.owner_ = std::move(keep_alive);
  return t;
}

absl::StatusOr<Tensor> Tensor::FromBytes(DType dtype, Shape shape,
                                         absl::Span<const uint8_t> bytes) {
  // Sizes are checked before allocating: a few bytes claiming a huge shape
  // must not make the host reserve and zero it first.
  if (absl::Status s = CheckTensorSize(dtype, shape); !s.ok()) return s;
  if (shape.IsStatic() && DTypeSize(dtype) != 0 &&
      static_cast<uint64_t>(shape.NumElements()) * DTypeSize(dtype) !=
          bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", DTypeName(dtype), " tensor of shape ", shape.ToString(),
        " needs ", shape.NumElements() * DTypeSize(dtype), " bytes, got ",
        bytes.size()));
  }
  // Every byte is copied in below (the sizes match, checked above).
  auto t = CreateUninitialized(dtype, std::move(shape));
  if (!t.ok()) return t.status();
  if (!bytes.empty()) std::memcpy(t->raw_data(), bytes.data(), bytes.size());
  return t;
}

Tensor Tensor::Clone() const {
  auto t = Create(dtype_, shape_);
  if (!t.ok()) return Tensor();
  if (num_bytes() > 0) std::memcpy(t->raw_data(), data_, num_bytes());
  return *std::move(t);
}

absl::StatusOr<Tensor> Tensor::ViewAs(DType dtype, Shape shape) const {
  if (absl::Status s = CheckTensorSize(dtype, shape); !s.ok()) return s;
  const size_t bytes =
      static_cast<size_t>(shape.NumElements()) * DTypeSize(dtype);
  if (!shape.IsStatic() || bytes > num_bytes() ||
      (bytes > 0 && data_ == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat(DTypeName(dtype), shape.ToString(), " does not fit in ",
                     num_bytes(), " bytes"));
  }
  Tensor t = *this;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  return t;
}

absl::StatusOr<Tensor> Tensor::Reshaped(Shape shape) const {
  if (shape.NumElements() != num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", shape_.ToString(), " to ",
                     shape.ToString()));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

}  // namespace glint
