#include "client/tensor_file.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/file_util.h"
#include "client/npy.h"
#include "onnx/onnx_tensor.h"

namespace glint {

absl::StatusOr<NamedTensor> TensorFromOnnx(const onnx::TensorProto& proto) {
  absl::StatusOr<Tensor> t = TensorFromOnnxProto(proto);
  if (!t.ok()) return t.status();
  return NamedTensor{proto.name(), *std::move(t)};
}

absl::StatusOr<onnx::TensorProto> TensorToOnnx(const NamedTensor& tensor) {
  onnx::TensorProto proto;
  proto.set_name(tensor.name);
  absl::Status s = TensorToOnnxProto(tensor.tensor, &proto);
  if (!s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("tensor '", tensor.name, "': ", s.message()));
  }
  return proto;
}

absl::StatusOr<NamedTensor> ReadTensorProtoFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(*bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a serialized ONNX TensorProto"));
  }
  absl::StatusOr<NamedTensor> t = TensorFromOnnx(proto);
  if (!t.ok()) {
    return absl::Status(t.status().code(),
                        absl::StrCat(path, ": ", t.status().message()));
  }
  return t;
}

absl::StatusOr<NamedTensor> ReadTensorFile(const std::string& path) {
  if (absl::EndsWith(path, ".npy")) {
    absl::StatusOr<Tensor> t = ReadNpyFile(path);
    if (!t.ok()) return t.status();
    return NamedTensor{"", *std::move(t)};
  }
  if (absl::EndsWith(path, ".pb")) return ReadTensorProtoFile(path);
  return absl::InvalidArgumentError(absl::StrCat(
      "'", path, "': unknown tensor file type (expected .npy or .pb)"));
}

}  // namespace glint
