#include "runtime/tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace glint {

bool Shape::IsStatic() const {
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Shape::NumElements() const {
  bool empty = false;
  for (int64_t d : dims_) {
    if (d < 0) return -1;
    empty = empty || d == 0;
  }
  // A zero anywhere makes the product zero, however large the dimensions
  // before it: multiplying in order would overflow first ([3037000500,
  // 3037000500, 0] passes every reader's byte-count check, which computes
  // in uint64_t). Without a zero, Tensor::Create bounds the product.
  if (empty) return 0;
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::ToString() const {
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
  if (!shape.IsStatic()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a tensor of shape ", shape.ToString()));
  }
  if (DTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot allocate a tensor of dtype ", DTypeName(dtype)));
  }
  // num_bytes() must not wrap: no buffer holds more than PTRDIFF_MAX bytes,
  // and AlignedAlloc rounds the size up. A zero dimension makes the tensor
  // empty whatever the others are.
  uint64_t bytes = DTypeSize(dtype);
  bool too_large = false;
  for (int64_t d : shape.dims()) {
    if (d == 0) {
      too_large = false;
      break;
    }
    too_large = too_large ||
                __builtin_mul_overflow(bytes, static_cast<uint64_t>(d),
                                       &bytes) ||
                bytes > static_cast<uint64_t>(PTRDIFF_MAX);
  }
  if (too_large) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", DTypeName(dtype), " tensor of shape ", shape.ToString(),
        " is too large"));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  bytes = t.num_bytes();
  void* p = AlignedAlloc(bytes);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("host allocation of ", bytes, " bytes failed"));
  }
  std::memset(p, 0, bytes);
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

absl::StatusOr<Tensor> Tensor::FromBytes(DType dtype, Shape shape,
                                         absl::Span<const uint8_t> bytes) {
  auto t = Create(dtype, std::move(shape));
  if (!t.ok()) return t.status();
  if (t->num_bytes() != bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", DTypeName(dtype), " tensor of shape ", t->shape().ToString(),
        " needs ", t->num_bytes(), " bytes, got ", bytes.size()));
  }
  if (!bytes.empty()) std::memcpy(t->raw_data(), bytes.data(), bytes.size());
  return t;
}

Tensor Tensor::Clone() const {
  auto t = Create(dtype_, shape_);
  if (!t.ok()) return Tensor();
  if (num_bytes() > 0) std::memcpy(t->raw_data(), data_, num_bytes());
  return *std::move(t);
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
