// The C API's tensors (include/glint/c_api.h, "Tensors"): creating them from
// bytes or an ONNX TensorProto, reading them, and the lists runs return.
// Each exported function is a boundary, as in c_api.cc.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "capi/handles.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "core/text.h"
#include "glint/c_api.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"

using glint::capi_internal::CheckHandle;
using glint::capi_internal::CheckNotNull;
using glint::capi_internal::Delete;
using glint::capi_internal::Error;
using glint::capi_internal::FromStatus;
using glint::capi_internal::Guard;
using glint::capi_internal::KnownDType;
using glint::capi_internal::RawDType;
using glint::capi_internal::kTensorTag;

extern "C" {

GlintStatus* glint_tensor_create(const char* name, GlintDType dtype,
                                 const int64_t* dims, size_t rank,
                                 const void* data, size_t byte_size,
                                 GlintTensor** out) {
  static constexpr char kFn[] = "glint_tensor_create";
  const int raw_dtype = RawDType(dtype);
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    if (!KnownDType(raw_dtype)) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("dtype ", raw_dtype, " is not a GlintDType"));
    }
    if (rank > 0) GLINT_C_CHECK(CheckNotNull(kFn, "dims", dims));
    if (rank > static_cast<size_t>(glint::kMaxTensorRank)) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("rank ", rank, " is over the limit of ",
                                glint::kMaxTensorRank));
    }
    std::vector<int64_t> shape_dims(dims, dims + rank);
    for (size_t i = 0; i < rank; ++i) {
      if (shape_dims[i] < 0) {
        return Error(GLINT_INVALID_ARGUMENT, kFn,
                     absl::StrCat("dims[", i, "] is ", shape_dims[i],
                                  "; dimensions must be >= 0"));
      }
    }
    const glint::DType type = static_cast<glint::DType>(raw_dtype);
    glint::Shape shape(std::move(shape_dims));
    const std::string what =
        absl::StrCat("tensor '", glint::Clip(name), "'");
    GLINT_C_CHECK(FromStatus(kFn, glint::CheckTensorSize(type, shape, what)));
    const size_t expected =
        static_cast<size_t>(shape.NumElements()) * glint::DTypeSize(type);
    if (data == nullptr && byte_size != 0) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("data is NULL but byte_size is ", byte_size));
    }
    if (data != nullptr && byte_size != expected) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("byte_size is ", byte_size, " but ", what,
                                " of ", glint::DTypeName(type),
                                shape.ToString(), " needs ", expected));
    }
    absl::StatusOr<glint::Tensor> tensor = glint::Tensor::Create(type, shape);
    if (!tensor.ok()) return FromStatus(kFn, tensor.status());
    if (data != nullptr && expected > 0) {
      std::memcpy(tensor->raw_data(), data, expected);
    }
    *out = new GlintTensor{kTensorTag, {name, *std::move(tensor)}};
    return nullptr;
  });
}

GlintStatus* glint_tensor_create_from_onnx(const void* proto, size_t size,
                                           GlintTensor** out) {
  static constexpr char kFn[] = "glint_tensor_create_from_onnx";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    if (size > 0) GLINT_C_CHECK(CheckNotNull(kFn, "proto", proto));
    if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("size ", size,
                                " is over protobuf's 2 GiB message limit"));
    }
    onnx::TensorProto message;
    if (!message.ParseFromArray(proto, static_cast<int>(size))) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("the ", size,
                                " bytes are not a serialized ONNX "
                                "TensorProto"));
    }
    absl::StatusOr<glint::Tensor> tensor = glint::TensorFromOnnxProto(message);
    if (!tensor.ok()) return FromStatus(kFn, tensor.status());
    *out = new GlintTensor{kTensorTag, {message.name(), *std::move(tensor)}};
    return nullptr;
  });
}

GlintStatus* glint_tensor_info(const GlintTensor* tensor, const char** name,
                               GlintDType* dtype, const int64_t** dims,
                               size_t* rank, const void** data,
                               size_t* byte_size) {
  static constexpr char kFn[] = "glint_tensor_info";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "tensor", tensor));
    const glint::Tensor& t = tensor->named.tensor;
    if (name != nullptr) *name = tensor->named.name.c_str();
    if (dtype != nullptr) *dtype = static_cast<GlintDType>(t.dtype());
    if (dims != nullptr) *dims = t.shape().dims().data();
    if (rank != nullptr) *rank = static_cast<size_t>(t.shape().rank());
    if (data != nullptr) *data = t.raw_data();
    if (byte_size != nullptr) *byte_size = t.num_bytes();
    return nullptr;
  });
}

GlintStatus* glint_tensor_copy_data(const GlintTensor* tensor, void* dst,
                                    size_t dst_size) {
  static constexpr char kFn[] = "glint_tensor_copy_data";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "tensor", tensor));
    const glint::Tensor& t = tensor->named.tensor;
    if (dst_size != t.num_bytes()) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("dst_size is ", dst_size, " but tensor '",
                                glint::Clip(tensor->named.name), "' holds ",
                                t.num_bytes(), " bytes"));
    }
    if (dst_size == 0) return nullptr;
    GLINT_C_CHECK(CheckNotNull(kFn, "dst", dst));
    std::memcpy(dst, t.raw_data(), dst_size);
    return nullptr;
  });
}

void glint_tensor_delete(GlintTensor* tensor) { Delete(tensor); }

GlintStatus* glint_tensor_list_size(const GlintTensorList* list,
                                    size_t* size) {
  static constexpr char kFn[] = "glint_tensor_list_size";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "list", list));
    GLINT_C_CHECK(CheckNotNull(kFn, "size", size));
    *size = list->tensors.size();
    return nullptr;
  });
}

GlintStatus* glint_tensor_list_get(const GlintTensorList* list, size_t index,
                                   const GlintTensor** tensor) {
  static constexpr char kFn[] = "glint_tensor_list_get";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "list", list));
    GLINT_C_CHECK(CheckNotNull(kFn, "tensor", tensor));
    if (index >= list->tensors.size()) {
      return Error(GLINT_OUT_OF_RANGE, kFn,
                   absl::StrCat("index ", index, " is past the list's ",
                                list->tensors.size(), " tensors"));
    }
    *tensor = list->tensors[index].get();
    return nullptr;
  });
}

GlintStatus* glint_tensor_list_find(const GlintTensorList* list,
                                    const char* name,
                                    const GlintTensor** tensor) {
  static constexpr char kFn[] = "glint_tensor_list_find";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "list", list));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    GLINT_C_CHECK(CheckNotNull(kFn, "tensor", tensor));
    for (const auto& t : list->tensors) {
      if (t->named.name == name) {
        *tensor = t.get();
        return nullptr;
      }
    }
    return Error(GLINT_NOT_FOUND, kFn,
                 absl::StrCat("no tensor named '", glint::Clip(name),
                              "' in the list"));
  });
}

void glint_tensor_list_delete(GlintTensorList* list) { Delete(list); }

}  // extern "C"
