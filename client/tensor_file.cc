#include "client/tensor_file.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/file_util.h"
#include "client/npy.h"

namespace glint {
namespace {

std::string Describe(const onnx::TensorProto& proto) {
  return proto.name().empty() ? std::string("TensorProto")
                              : absl::StrCat("TensorProto '", proto.name(), "'");
}

// Copies `values` (one per element) into `t`, narrowing each to Dst. ONNX
// stores small integer types and 16-bit float bit patterns widened to int32.
template <typename Dst, typename Field>
void CopyNarrowing(const Field& values, Tensor* t) {
  Dst* out = t->data<Dst>();
  for (int i = 0; i < values.size(); ++i) out[i] = static_cast<Dst>(values[i]);
}

}  // namespace

absl::StatusOr<NamedTensor> TensorFromOnnx(const onnx::TensorProto& proto) {
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::UnimplementedError(absl::StrCat(
        Describe(proto), ": tensors with external data are not supported"));
  }
  if (proto.has_segment()) {
    return absl::UnimplementedError(absl::StrCat(
        Describe(proto), ": segmented tensors are not supported"));
  }
  absl::StatusOr<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(),
                        absl::StrCat(Describe(proto), ": ",
                                     dtype.status().message()));
  }
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(proto), ": negative dimension in [",
                       absl::StrJoin(dims, ", "), "]"));
    }
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) ||
        count > (uint64_t{1} << 40)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(proto), ": shape is too large"));
    }
  }
  absl::StatusOr<Tensor> tensor = Tensor::Create(*dtype, Shape(dims));
  if (!tensor.ok()) return tensor.status();
  Tensor& t = *tensor;

  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != t.num_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(proto), ": raw_data has ", proto.raw_data().size(),
          " bytes, a ", DTypeName(*dtype), " tensor of shape ",
          t.shape().ToString(), " needs ", t.num_bytes()));
    }
    if (t.num_bytes() > 0) {
      std::memcpy(t.raw_data(), proto.raw_data().data(), t.num_bytes());
    }
    return NamedTensor{proto.name(), std::move(t)};
  }

  // Typed fields. Which field holds the data depends on data_type.
  int have = 0;
  const char* field = "";
  switch (*dtype) {
    case DType::kFloat32:
      field = "float_data";
      have = proto.float_data_size();
      if (have == static_cast<int>(count)) {
        CopyNarrowing<float>(proto.float_data(), &t);
      }
      break;
    case DType::kFloat64:
      field = "double_data";
      have = proto.double_data_size();
      if (have == static_cast<int>(count)) {
        CopyNarrowing<double>(proto.double_data(), &t);
      }
      break;
    case DType::kInt64:
      field = "int64_data";
      have = proto.int64_data_size();
      if (have == static_cast<int>(count)) {
        CopyNarrowing<int64_t>(proto.int64_data(), &t);
      }
      break;
    case DType::kUInt32:
    case DType::kUInt64:
      field = "uint64_data";
      have = proto.uint64_data_size();
      if (have == static_cast<int>(count)) {
        if (*dtype == DType::kUInt32) {
          CopyNarrowing<uint32_t>(proto.uint64_data(), &t);
        } else {
          CopyNarrowing<uint64_t>(proto.uint64_data(), &t);
        }
      }
      break;
    default:
      field = "int32_data";
      have = proto.int32_data_size();
      if (have != static_cast<int>(count)) break;
      switch (*dtype) {
        case DType::kInt32: CopyNarrowing<int32_t>(proto.int32_data(), &t); break;
        case DType::kInt16: CopyNarrowing<int16_t>(proto.int32_data(), &t); break;
        case DType::kInt8: CopyNarrowing<int8_t>(proto.int32_data(), &t); break;
        case DType::kUInt16:
        case DType::kFloat16:
        case DType::kBFloat16:
          CopyNarrowing<uint16_t>(proto.int32_data(), &t);
          break;
        case DType::kUInt8: CopyNarrowing<uint8_t>(proto.int32_data(), &t); break;
        case DType::kBool: {
          uint8_t* out = t.data<uint8_t>();
          for (int i = 0; i < have; ++i) out[i] = proto.int32_data(i) != 0;
          break;
        }
        default:
          return absl::UnimplementedError(absl::StrCat(
              Describe(proto), ": dtype ", DTypeName(*dtype),
              " is not supported"));
      }
      break;
  }
  if (have != static_cast<int>(count)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Describe(proto), ": ", field, " has ", have, " elements, shape ",
        t.shape().ToString(), " needs ", count));
  }
  return NamedTensor{proto.name(), std::move(t)};
}

absl::StatusOr<onnx::TensorProto> TensorToOnnx(const NamedTensor& tensor) {
  const Tensor& t = tensor.tensor;
  if (DTypeSize(t.dtype()) == 0 || !t.shape().IsStatic() || !t.valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", tensor.name, "' cannot be written as a TensorProto"));
  }
  onnx::TensorProto proto;
  proto.set_name(tensor.name);
  proto.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape().dims()) proto.add_dims(d);
  proto.set_raw_data(static_cast<const char*>(t.raw_data()), t.num_bytes());
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
