// The one conversion between ONNX TensorProto and glint::Tensor. The
// importer reads initializers and tensor-valued attributes (Constant's
// `value`...) with it (onnx/graph_builder.cc); the client reads and writes
// `.pb` tensor files with it (client/tensor_file.cc), so a tensor file and
// a model's weights are held to the same rules.
//
// A small target (//onnx:onnx_tensor: protobuf types and core/ only), so
// that the client links it without the importer. Every function is
// thread-safe (no shared state).
#ifndef GLINT_ONNX_ONNX_TENSOR_H_
#define GLINT_ONNX_ONNX_TENSOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "onnx/onnx_pb.h"

namespace glint {

// Reads raw_data or the typed field the ONNX spec assigns to the element
// type (int32_data also carries int8/uint8/int16/uint16/bool and the bit
// patterns of float16/bfloat16; uint64_data carries uint32/uint64). Values
// of a typed field are range-checked against the element type, and raw
// bools are normalised to 0/1. The sizes are checked before anything is
// allocated: a few bytes of proto may claim a shape of terabytes.
// Errors: UNIMPLEMENTED for external or segmented data and element types
// Glint lacks (string, complex...); INVALID_ARGUMENT for no element type,
// negative dims, a shape over CheckTensorSize's ceilings, a value count or
// byte size that does not match the shape ("<field> has N elements" /
// "raw_data has N bytes"), or values out of the element type's range.
absl::StatusOr<Tensor> TensorFromOnnxProto(const onnx::TensorProto& proto);

// Writes `tensor` as dims, data_type and little-endian raw_data; keeps
// `proto`'s name and clears everything else. INVALID_ARGUMENT for a tensor
// without data, with unknown dims or of an element type without a size.
absl::Status TensorToOnnxProto(const Tensor& tensor, onnx::TensorProto* proto);

// ONNX's name of a TensorProto.DataType number ("FLOAT16"), or the number
// itself where ONNX has no such type; for messages.
std::string OnnxTypeName(int32_t onnx_type);

}  // namespace glint

#endif  // GLINT_ONNX_ONNX_TENSOR_H_
