// Tensors from files: ONNX TensorProto (.pb, as in ONNX's test data) and
// numpy (.npy). Used by the glint CLI and by the end-to-end tests.
//
// All functions are thread-safe (no shared state).
#ifndef GLINT_CLIENT_TENSOR_FILE_H_
#define GLINT_CLIENT_TENSOR_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "api/types.h"
#include "core/tensor.h"

namespace glint {

// Converts a TensorProto holding its data in raw_data (little-endian) or in
// the typed field ONNX prescribes for its data_type (float_data; int32_data
// for int8/16, uint8/16, bool, float16 and bfloat16 bit patterns;
// int64_data; double_data; uint64_data for uint32/64). The name is the
// proto's name. INVALID_ARGUMENT for negative dims or an element count that
// does not match the dims; UNIMPLEMENTED for string/complex types, external
// data and segments.
absl::StatusOr<NamedTensor> TensorFromOnnx(const onnx::TensorProto& proto);

// The inverse, always through raw_data.
absl::StatusOr<onnx::TensorProto> TensorToOnnx(const NamedTensor& tensor);

// Parses a serialized TensorProto file; errors name the path.
absl::StatusOr<NamedTensor> ReadTensorProtoFile(const std::string& path);

// By extension: ".npy" → ReadNpyFile (name left empty), ".pb" →
// ReadTensorProtoFile. INVALID_ARGUMENT for any other extension.
absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path);

}  // namespace glint

#endif  // GLINT_CLIENT_TENSOR_FILE_H_
