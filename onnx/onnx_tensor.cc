#include "onnx/onnx_tensor.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace glint {
namespace {

std::string TensorLabel(const onnx::TensorProto& proto) {
  return proto.name().empty()
             ? std::string("ONNX tensor")
             : absl::StrCat("ONNX tensor '", proto.name(), "'");
}

// Copies `src` into `dst` element by element, refusing values that do not
// fit the destination: a wrapped-around weight would silently change the
// model's results.
template <typename Dst, typename Field>
absl::Status CopyChecked(const Field& src, int64_t lo, int64_t hi,
                         const onnx::TensorProto& proto, Dst* dst) {
  for (int i = 0; i < src.size(); ++i) {
    const auto v = src.Get(i);
    if (static_cast<long double>(v) < lo || static_cast<long double>(v) > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(TensorLabel(proto), " of type ",
                       OnnxTypeName(proto.data_type()), " holds value ", v,
                       " at index ", i, ", outside [", lo, ", ", hi, "]"));
    }
    dst[i] = static_cast<Dst>(v);
  }
  return absl::OkStatus();
}

template <typename T, typename Field>
absl::Status CopySame(const Field& src, T* dst) {
  if (src.size() > 0) std::memcpy(dst, src.data(), src.size() * sizeof(T));
  return absl::OkStatus();
}

// The typed field ONNX assigns to an element type, and how many values it
// holds.
struct TypedField {
  const char* name;
  int64_t size;
};

TypedField TypedFieldOf(const onnx::TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return {"float_data", proto.float_data_size()};
    case DType::kFloat64:
      return {"double_data", proto.double_data_size()};
    case DType::kInt64:
      return {"int64_data", proto.int64_data_size()};
    case DType::kUInt32:
    case DType::kUInt64:
      return {"uint64_data", proto.uint64_data_size()};
    default:
      return {"int32_data", proto.int32_data_size()};
  }
}

absl::Status FillFromTypedField(const onnx::TensorProto& proto, Tensor* t) {
  switch (t->dtype()) {
    case DType::kFloat32:
      return CopySame(proto.float_data(), t->data<float>());
    case DType::kFloat64:
      return CopySame(proto.double_data(), t->data<double>());
    case DType::kInt64:
      return CopySame(proto.int64_data(), t->data<int64_t>());
    case DType::kUInt64:
      return CopySame(proto.uint64_data(), t->data<uint64_t>());
    case DType::kInt32:
      return CopySame(proto.int32_data(), t->data<int32_t>());
    case DType::kUInt32:
      return CopyChecked(proto.uint64_data(), 0,
                         std::numeric_limits<uint32_t>::max(), proto,
                         t->data<uint32_t>());
    case DType::kInt16:
      return CopyChecked(proto.int32_data(), INT16_MIN, INT16_MAX, proto,
                         t->data<int16_t>());
    case DType::kUInt16:
      return CopyChecked(proto.int32_data(), 0, UINT16_MAX, proto,
                         t->data<uint16_t>());
    case DType::kInt8:
      return CopyChecked(proto.int32_data(), INT8_MIN, INT8_MAX, proto,
                         t->data<int8_t>());
    case DType::kUInt8:
      return CopyChecked(proto.int32_data(), 0, UINT8_MAX, proto,
                         t->data<uint8_t>());
    case DType::kFloat16:
    case DType::kBFloat16:
      // The spec stores the 16-bit pattern zero-extended; some writers
      // sign-extend it. Both keep the same low 16 bits.
      return CopyChecked(proto.int32_data(), INT16_MIN, UINT16_MAX, proto,
                         t->data<uint16_t>());
    case DType::kBool: {
      uint8_t* dst = t->data<uint8_t>();
      for (int i = 0; i < proto.int32_data_size(); ++i) {
        dst[i] = proto.int32_data(i) != 0 ? 1 : 0;
      }
      return absl::OkStatus();
    }
    default:
      return absl::UnimplementedError(
          absl::StrCat(TensorLabel(proto), " has element type ",
                       DTypeName(t->dtype()), ", which Glint cannot read"));
  }
}

// The element type of `proto`, refusing what Glint cannot hold or load.
absl::StatusOr<DType> ElementType(const onnx::TensorProto& proto) {
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::UnimplementedError(absl::StrCat(
        TensorLabel(proto),
        " keeps its data in an external file, which Glint does not load"));
  }
  if (proto.has_segment()) {
    return absl::UnimplementedError(absl::StrCat(
        TensorLabel(proto), " is segmented, which Glint does not support"));
  }
  if (proto.data_type() == onnx::TensorProto::UNDEFINED) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(proto), " has no element type"));
  }
  absl::StatusOr<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype.ok()) {
    return absl::UnimplementedError(absl::StrCat(
        TensorLabel(proto), " has element type ",
        OnnxTypeName(proto.data_type()), ", which Glint does not support"));
  }
  return *dtype;
}

// Whether the data `proto` carries is exactly what `dtype` and `shape`
// (already through CheckTensorSize) need.
absl::Status CheckDataSize(const onnx::TensorProto& proto, DType dtype,
                           const Shape& shape) {
  const int64_t count = shape.NumElements();
  if (proto.has_raw_data()) {
    const int64_t want = count * static_cast<int64_t>(DTypeSize(dtype));
    if (static_cast<int64_t>(proto.raw_data().size()) == want) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(proto), ": raw_data has ",
                     proto.raw_data().size(), " bytes; a ", DTypeName(dtype),
                     " tensor of shape ", shape.ToString(), " needs ", want));
  }
  const TypedField field = TypedFieldOf(proto, dtype);
  if (field.size == count) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(TensorLabel(proto), ": ", field.name, " has ", field.size,
                   " elements; a ", DTypeName(dtype), " tensor of shape ",
                   shape.ToString(), " needs ", count));
}

}  // namespace

std::string OnnxTypeName(int32_t onnx_type) {
  if (onnx::TensorProto_DataType_IsValid(onnx_type)) {
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(onnx_type));
  }
  return absl::StrCat(onnx_type);
}

absl::StatusOr<Tensor> TensorFromOnnxProto(const onnx::TensorProto& proto) {
  GLINT_ASSIGN_OR_RETURN(const DType dtype, ElementType(proto));
  const Shape shape(
      std::vector<int64_t>(proto.dims().begin(), proto.dims().end()));
  GLINT_RETURN_IF_ERROR(CheckTensorSize(dtype, shape, TensorLabel(proto)));
  GLINT_RETURN_IF_ERROR(CheckDataSize(proto, dtype, shape));
  if (!proto.has_raw_data()) {
    GLINT_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
    GLINT_RETURN_IF_ERROR(FillFromTypedField(proto, &t));
    return t;
  }
  // Every byte is written below: no zeroing first (a weight's worth).
  GLINT_ASSIGN_OR_RETURN(Tensor t, Tensor::CreateUninitialized(dtype, shape));
  // ONNX's raw_data is little-endian, as is every host Glint runs on.
  if (t.num_bytes() > 0) {
    std::memcpy(t.raw_data(), proto.raw_data().data(), t.num_bytes());
  }
  if (dtype == DType::kBool) {
    // Kernels take a bool for one byte that is 0 or 1.
    uint8_t* p = t.data<uint8_t>();
    for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = p[i] != 0 ? 1 : 0;
  }
  return t;
}

absl::Status TensorToOnnxProto(const Tensor& tensor, onnx::TensorProto* proto) {
  if (!tensor.shape().IsStatic()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write a tensor of shape ",
                     tensor.shape().ToString(), " as an ONNX TensorProto"));
  }
  if (DTypeSize(tensor.dtype()) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write a tensor of dtype ",
                     DTypeName(tensor.dtype()), " as an ONNX TensorProto"));
  }
  if (tensor.raw_data() == nullptr && tensor.num_bytes() > 0) {
    return absl::InvalidArgumentError("the tensor has no data");
  }
  std::string name = proto->name();
  proto->Clear();
  proto->set_name(std::move(name));
  proto->set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape().dims()) proto->add_dims(d);
  const absl::Span<const uint8_t> bytes = tensor.bytes();
  proto->set_raw_data(
      std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  return absl::OkStatus();
}

}  // namespace glint
