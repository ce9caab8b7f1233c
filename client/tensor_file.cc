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

// The typed field ONNX prescribes for `dtype` and how many values it holds.
struct TypedField {
  const char* name;
  int size;
};

TypedField TypedFieldOf(const onnx::TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return {"float_data", proto.float_data_size()};
    case DType::kFloat64: return {"double_data", proto.double_data_size()};
    case DType::kInt64: return {"int64_data", proto.int64_data_size()};
    case DType::kUInt32:
    case DType::kUInt64:
      return {"uint64_data", proto.uint64_data_size()};
    default: return {"int32_data", proto.int32_data_size()};
  }
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
  // The data must be there before the tensor is allocated: a few bytes of
  // proto can claim a shape of terabytes.
  if (proto.has_raw_data()) {
    const uint64_t needed = count * DTypeSize(*dtype);
    if (proto.raw_data().size() != needed) {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(proto), ": raw_data has ", proto.raw_data().size(),
          " bytes, a ", DTypeName(*dtype), " tensor of shape ",
          Shape(dims).ToString(), " needs ", needed));
    }
  } else {
    const TypedField field = TypedFieldOf(proto, *dtype);
    if (static_cast<uint64_t>(field.size) != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(proto), ": ", field.name, " has ", field.size,
          " elements, shape ", Shape(dims).ToString(), " needs ", count));
    }
  }
  absl::StatusOr<Tensor> tensor = Tensor::Create(*dtype, Shape(dims));
  if (!tensor.ok()) return tensor.status();
  Tensor& t = *tensor;

  if (proto.has_raw_data()) {
    if (t.num_bytes() > 0) {
      std::memcpy(t.raw_data(), proto.raw_data().data(), t.num_bytes());
    }
    return NamedTensor{proto.name(), std::move(t)};
  }

  // Typed fields, whose sizes were checked above.
  switch (*dtype) {
    case DType::kFloat32: CopyNarrowing<float>(proto.float_data(), &t); break;
    case DType::kFloat64: CopyNarrowing<double>(proto.double_data(), &t); break;
    case DType::kInt64: CopyNarrowing<int64_t>(proto.int64_data(), &t); break;
    case DType::kUInt32:
      CopyNarrowing<uint32_t>(proto.uint64_data(), &t);
      break;
    case DType::kUInt64:
      CopyNarrowing<uint64_t>(proto.uint64_data(), &t);
      break;
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
      for (int i = 0; i < proto.int32_data_size(); ++i) {
        out[i] = proto.int32_data(i) != 0;
      }
      break;
    }
    default:
      return absl::UnimplementedError(absl::StrCat(
          Describe(proto), ": dtype ", DTypeName(*dtype), " is not supported"));
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
