// Tensors from files: ONNX TensorProto (.pb, as in ONNX's test data) and
// numpy (.npy). Used by the glint CLI and by the end-to-end tests.
//
// All functions are thread-safe (no shared state).
#ifndef GLINT_CLIENT_TENSOR_FILE_H_
#define GLINT_CLIENT_TENSOR_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/tensor.h"
#include "onnx/onnx_pb.h"

namespace glint {

// The tensor of `proto` (TensorFromOnnxProto, onnx/onnx_tensor.h: raw_data
// or the typed field ONNX prescribes, sizes and value ranges checked), named
// by the proto's name. Its errors.
absl::StatusOr<NamedTensor> TensorFromOnnx(const onnx::TensorProto& proto);

// The inverse, always through raw_data (TensorToOnnxProto); errors name the
// tensor.
absl::StatusOr<onnx::TensorProto> TensorToOnnx(const NamedTensor& tensor);

// Parses a serialized TensorProto file; errors name the path.
absl::StatusOr<NamedTensor> ReadTensorProtoFile(const std::string& path);

// By extension: ".npy" → ReadNpyFile (name left empty), ".pb" →
// ReadTensorProtoFile. INVALID_ARGUMENT for any other extension.
absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path);

}  // namespace glint

#endif  // GLINT_CLIENT_TENSOR_FILE_H_
