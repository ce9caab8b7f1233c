#include "core/dtype.h"

#include "absl/strings/str_cat.h"

namespace glint {
namespace {

struct DTypeEntry {
  DType dtype;
  size_t size;
  absl::string_view name;
  absl::string_view numpy;  // Empty where numpy has no equivalent.
};

constexpr DTypeEntry kDTypes[] = {
    {DType::kFloat32, 4, "float32", "<f4"},
    {DType::kUInt8, 1, "uint8", "|u1"},
    {DType::kInt8, 1, "int8", "|i1"},
    {DType::kUInt16, 2, "uint16", "<u2"},
    {DType::kInt16, 2, "int16", "<i2"},
    {DType::kInt32, 4, "int32", "<i4"},
    {DType::kInt64, 8, "int64", "<i8"},
    {DType::kString, 0, "string", ""},
    {DType::kBool, 1, "bool", "|b1"},
    {DType::kFloat16, 2, "float16", "<f2"},
    {DType::kFloat64, 8, "float64", "<f8"},
    {DType::kUInt32, 4, "uint32", "<u4"},
    {DType::kUInt64, 8, "uint64", "<u8"},
    {DType::kBFloat16, 2, "bfloat16", ""},
};

const DTypeEntry* Find(DType dtype) {
  for (const DTypeEntry& e : kDTypes) {
    if (e.dtype == dtype) return &e;
  }
  return nullptr;
}

}  // namespace

size_t DTypeSize(DType dtype) {
  const DTypeEntry* e = Find(dtype);
  return e == nullptr ? 0 : e->size;
}

absl::string_view DTypeName(DType dtype) {
  const DTypeEntry* e = Find(dtype);
  return e == nullptr ? absl::string_view("undefined") : e->name;
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  for (const DTypeEntry& e : kDTypes) {
    if (e.name == name) return e.dtype;
  }
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type) {
  const DTypeEntry* e = Find(static_cast<DType>(onnx_type));
  if (e == nullptr || e->dtype == DType::kString) {
    return absl::UnimplementedError(
        absl::StrCat("ONNX element type ", onnx_type, " is not supported"));
  }
  return e->dtype;
}

absl::StatusOr<absl::string_view> NumpyDescr(DType dtype) {
  const DTypeEntry* e = Find(dtype);
  if (e == nullptr || e->numpy.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("dtype ", DTypeName(dtype), " has no numpy equivalent"));
  }
  return e->numpy;
}

absl::StatusOr<DType> DTypeFromNumpyDescr(absl::string_view descr) {
  // Single-byte types may be written with '<', '>' or '|'; multi-byte ones
  // must be little-endian ('<') or native-endian ('=') on this platform.
  if (descr.size() >= 2 && (descr[0] == '=' || descr[0] == '<' ||
                            descr[0] == '|')) {
    const absl::string_view body = descr.substr(1);
    for (const DTypeEntry& e : kDTypes) {
      if (!e.numpy.empty() && e.numpy.substr(1) == body) return e.dtype;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported numpy dtype '", descr,
      "' (big-endian and object arrays are not supported)"));
}

}  // namespace glint
