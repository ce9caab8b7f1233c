// Element types of tensors. The numeric values are ONNX's
// TensorProto.DataType numbers so that conversions at the edges are trivial.
#ifndef GLINT_CORE_DTYPE_H_
#define GLINT_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace glint {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,  // Recognised so it can be named in errors; never computed on.
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// Size of one element in bytes; 0 for kUndefined and kString.
size_t DTypeSize(DType dtype);

// Lower-case name as used in messages and by the CLI: "float32", "int64"...
absl::string_view DTypeName(DType dtype);

// Inverse of DTypeName; also accepts numpy's short codes via NumpyDescr.
absl::StatusOr<DType> ParseDType(absl::string_view name);

// Maps an ONNX TensorProto.DataType number; unsupported numbers are
// UNIMPLEMENTED.
absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type);

// numpy's array-protocol type string ("<f4", "|b1"...) for the dtype, and back.
absl::StatusOr<absl::string_view> NumpyDescr(DType dtype);
absl::StatusOr<DType> DTypeFromNumpyDescr(absl::string_view descr);

}  // namespace glint

#endif  // GLINT_CORE_DTYPE_H_
