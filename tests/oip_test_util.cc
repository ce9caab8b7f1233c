#include "tests/oip_test_util.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "client/file_util.h"
#include "client/tensor_file.h"
#include "onnx/onnx_pb.h"
#include "tests/test_util.h"

namespace glint {
namespace testing {
namespace {

// The protocol's datatypes (the KServe v2 specification's tensor data
// types table).
const std::vector<std::pair<std::string, DType>>& Datatypes() {
  static const auto* types = new std::vector<std::pair<std::string, DType>>{
      {"BOOL", DType::kBool},     {"UINT8", DType::kUInt8},
      {"UINT16", DType::kUInt16}, {"UINT32", DType::kUInt32},
      {"UINT64", DType::kUInt64}, {"INT8", DType::kInt8},
      {"INT16", DType::kInt16},   {"INT32", DType::kInt32},
      {"INT64", DType::kInt64},   {"FP16", DType::kFloat16},
      {"FP32", DType::kFloat32},  {"FP64", DType::kFloat64},
      {"BF16", DType::kBFloat16},
  };
  return *types;
}

constexpr char kNodeCases[] = "/usr/share/libonnx-testdata/data/node/";

}  // namespace

std::string OipDatatypeOf(DType dtype) {
  for (const auto& [name, d] : Datatypes()) {
    if (d == dtype) return name;
  }
  return "";
}

DType DTypeOfOipDatatype(const std::string& datatype) {
  for (const auto& [name, d] : Datatypes()) {
    if (name == datatype) return d;
  }
  return DType::kUndefined;
}

std::string RawBytes(const Tensor& tensor) {
  return std::string(static_cast<const char*>(tensor.raw_data()),
                     tensor.num_bytes());
}

absl::StatusOr<Tensor> TensorFromRaw(const std::string& datatype,
                                     const std::vector<int64_t>& shape,
                                     const std::string& bytes) {
  const DType dtype = DTypeOfOipDatatype(datatype);
  if (dtype == DType::kUndefined) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown datatype '", datatype, "'"));
  }
  return Tensor::FromBytes(
      dtype, Shape(shape),
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                bytes.size()));
}

absl::StatusOr<OnnxCase> LoadOnnxNodeCase(const std::string& name) {
  const std::string dir = absl::StrCat(kNodeCases, name, "/");
  OnnxCase c;
  absl::StatusOr<std::string> model = ReadFileToString(dir + "model.onnx");
  if (!model.ok()) return model.status();
  c.model = *std::move(model);
  onnx::ModelProto proto;
  if (!proto.ParseFromString(c.model)) {
    return absl::DataLossError(absl::StrCat(dir, "model.onnx does not parse"));
  }
  // input_<i>.pb pair with the runtime inputs by position.
  const std::vector<std::string> inputs = RuntimeInputNames(proto);
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<NamedTensor> t = ReadTensorProtoFile(
        absl::StrCat(dir, "test_data_set_0/input_", i, ".pb"));
    if (!t.ok()) return t.status();
    t->name = inputs[i];
    c.inputs.push_back(*std::move(t));
  }
  for (int i = 0; i < proto.graph().output_size(); ++i) {
    absl::StatusOr<NamedTensor> t = ReadTensorProtoFile(
        absl::StrCat(dir, "test_data_set_0/output_", i, ".pb"));
    if (!t.ok()) return t.status();
    t->name = proto.graph().output(i).name();
    c.outputs.push_back(*std::move(t));
  }
  return c;
}

}  // namespace testing
}  // namespace glint
