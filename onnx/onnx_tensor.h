// Conversions between ONNX TensorProto and glint::Tensor, shared by the
// importer (initializers, Constant nodes), the CLI and tests (`.pb` files).
#ifndef GLINT_ONNX_ONNX_TENSOR_H_
#define GLINT_ONNX_ONNX_TENSOR_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "core/tensor.h"

namespace glint {

// Reads raw_data or the typed field the ONNX spec assigns to the element
// type (int32_data also carries int8/uint8/int16/uint16/bool and the bit
// patterns of float16/bfloat16; uint64_data carries uint32/uint64).
// Errors: UNIMPLEMENTED for external or segmented data and element types
// Glint lacks (string, complex...); INVALID_ARGUMENT for negative dims, a
// value count or byte size that does not match the shape, or values out of
// the element type's range.
absl::StatusOr<Tensor> TensorFromOnnxProto(const onnx::TensorProto& proto);

// Writes `tensor` as dims, data_type and little-endian raw_data; keeps
// `proto`'s name and clears everything else. INVALID_ARGUMENT for a tensor
// without data, with unknown dims or of an element type without a size.
absl::Status TensorToOnnxProto(const Tensor& tensor, onnx::TensorProto* proto);

}  // namespace glint

#endif  // GLINT_ONNX_ONNX_TENSOR_H_
