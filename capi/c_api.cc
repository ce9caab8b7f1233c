// The C API over HostManager (include/glint/c_api.h).
//
// Every exported function is a boundary: it checks its pointers and handle
// tags, converts, calls the C++ runtime, and turns every failure (an
// absl::Status, or an exception from the standard library or a callback)
// into a GlintStatus. Nothing below throws across the C ABI.
#include "glint/c_api.h"

#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/cancellation.h"
#include "core/dtype.h"
#include "core/logging.h"
#include "core/op_profile.h"
#include "core/precision.h"
#include "core/tensor.h"
#include "core/text.h"
#include "core/trace.h"
#include "onnx/onnx_tensor.h"
#include "onnx/onnx_pb.h"
#include "runtime/host_manager.h"
#include "runtime/server/device_spec.h"

// The handles. Each begins with its kind's tag, checked on entry (Is<T>)
// and overwritten on delete, so that a handle of another kind is refused
// rather than misread.
struct GlintStatus {
  uint64_t tag;
  GlintCode code;
  std::string message;
};
struct GlintTensor {
  uint64_t tag;
  glint::NamedTensor named;
};
struct GlintTensorList {
  uint64_t tag;
  // unique_ptr: the borrowed GlintTensor* handed out stay put.
  std::vector<std::unique_ptr<GlintTensor>> tensors;
};
struct GlintRuntime {
  uint64_t tag;
  std::unique_ptr<glint::HostManager> host;
};
struct GlintNetwork {
  uint64_t tag;
  glint::NetworkInfo info;
};
struct GlintNetworkList {
  uint64_t tag;
  std::vector<std::unique_ptr<GlintNetwork>> networks;
};
struct GlintAddOptions {
  uint64_t tag;
  glint::AddNetworkOptions options;
};
struct GlintCancel {
  uint64_t tag;
  std::shared_ptr<glint::CancellationToken> token;
};
struct GlintRunOptions {
  uint64_t tag;
  glint::RunOptions options;  // Without its deadline: see timeout_us.
  int64_t timeout_us = 0;     // 0: no deadline.
};
struct GlintProfile {
  uint64_t tag;
  // Shared with the run options given it and their runs, so that the
  // handle may go while they run.
  std::shared_ptr<glint::RunTrace> trace;
  std::string text;  // The last string handed out (borrowed by the caller).
};

namespace {

// "GL" + a kind letter + "HANDLE" in ASCII, distinct per kind.
constexpr uint64_t kStatusTag = 0x474c53'48414e444cULL;
constexpr uint64_t kTensorTag = 0x474c54'48414e444cULL;
constexpr uint64_t kTensorListTag = 0x474c4c'48414e444cULL;
constexpr uint64_t kRuntimeTag = 0x474c52'48414e444cULL;
constexpr uint64_t kNetworkTag = 0x474c4e'48414e444cULL;
constexpr uint64_t kNetworkListTag = 0x474c4d'48414e444cULL;
constexpr uint64_t kAddOptionsTag = 0x474c41'48414e444cULL;
constexpr uint64_t kCancelTag = 0x474c43'48414e444cULL;
constexpr uint64_t kRunOptionsTag = 0x474c4f'48414e444cULL;
constexpr uint64_t kProfileTag = 0x474c50'48414e444cULL;
constexpr uint64_t kDeletedTag = 0xdeadbeefdeadbeefULL;

template <typename T>
constexpr uint64_t TagOf();
template <> constexpr uint64_t TagOf<GlintStatus>() { return kStatusTag; }
template <> constexpr uint64_t TagOf<GlintTensor>() { return kTensorTag; }
template <> constexpr uint64_t TagOf<GlintTensorList>() { return kTensorListTag; }
template <> constexpr uint64_t TagOf<GlintRuntime>() { return kRuntimeTag; }
template <> constexpr uint64_t TagOf<GlintNetwork>() { return kNetworkTag; }
template <> constexpr uint64_t TagOf<GlintNetworkList>() { return kNetworkListTag; }
template <> constexpr uint64_t TagOf<GlintAddOptions>() { return kAddOptionsTag; }
template <> constexpr uint64_t TagOf<GlintCancel>() { return kCancelTag; }
template <> constexpr uint64_t TagOf<GlintRunOptions>() { return kRunOptionsTag; }
template <> constexpr uint64_t TagOf<GlintProfile>() { return kProfileTag; }

constexpr const char* KindName(const GlintTensor*) { return "GlintTensor"; }
constexpr const char* KindName(const GlintTensorList*) { return "GlintTensorList"; }
constexpr const char* KindName(const GlintRuntime*) { return "GlintRuntime"; }
constexpr const char* KindName(const GlintNetwork*) { return "GlintNetwork"; }
constexpr const char* KindName(const GlintNetworkList*) { return "GlintNetworkList"; }
constexpr const char* KindName(const GlintAddOptions*) { return "GlintAddOptions"; }
constexpr const char* KindName(const GlintCancel*) { return "GlintCancel"; }
constexpr const char* KindName(const GlintRunOptions*) { return "GlintRunOptions"; }
constexpr const char* KindName(const GlintProfile*) { return "GlintProfile"; }

// Whether `p` is a live handle of kind T. The tag is read with memcpy:
// `p` may point at anything.
template <typename T>
bool Is(const T* p) {
  if (p == nullptr) return false;
  uint64_t tag;
  std::memcpy(&tag, p, sizeof(tag));
  return tag == TagOf<T>();
}

template <typename T>
void Delete(T* p) {
  if (!Is(p)) return;
  p->tag = kDeletedTag;
  delete p;
}

// What an allocation failure returns: preallocated, never freed.
GlintStatus* OutOfMemory() {
  static GlintStatus* const status = new GlintStatus{
      kStatusTag, GLINT_RESOURCE_EXHAUSTED, "glint: out of host memory"};
  return status;
}

GlintStatus* Error(GlintCode code, absl::string_view function,
                   absl::string_view message) {
  return new GlintStatus{kStatusTag, code, absl::StrCat(function, ": ", message)};
}

GlintStatus* FromStatus(absl::string_view function, const absl::Status& s) {
  if (s.ok()) return nullptr;
  return Error(static_cast<GlintCode>(s.code()), function, s.message());
}

// The boundary: runs `body`, turning any exception into a status.
template <typename F>
GlintStatus* Guard(const char* function, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return OutOfMemory();
  } catch (const std::exception& e) {
    try {
      return Error(GLINT_INTERNAL, function,
                   absl::StrCat("unexpected exception: ", e.what()));
    } catch (...) {
      return OutOfMemory();
    }
  } catch (...) {
    try {
      return Error(GLINT_INTERNAL, function, "unexpected exception");
    } catch (...) {
      return OutOfMemory();
    }
  }
}

// INVALID_ARGUMENT unless `p` is a live handle of kind T.
template <typename T>
GlintStatus* CheckHandle(const char* function, const char* param, const T* p) {
  if (p == nullptr) {
    return Error(GLINT_INVALID_ARGUMENT, function,
                 absl::StrCat(param, " is NULL"));
  }
  if (!Is(p)) {
    return Error(GLINT_INVALID_ARGUMENT, function,
                 absl::StrCat(param, " is not a ", KindName(p),
                              " (a handle of another kind, or one deleted)"));
  }
  return nullptr;
}

GlintStatus* CheckNotNull(const char* function, const char* param,
                          const void* p) {
  if (p != nullptr) return nullptr;
  return Error(GLINT_INVALID_ARGUMENT, function,
               absl::StrCat(param, " is NULL"));
}

#define GLINT_C_CHECK(expr)                  \
  do {                                       \
    if (GlintStatus* check_ = (expr)) return check_; \
  } while (0)

// Set while a run's completion callback runs on this thread: deleting the
// runtime there would wait for the very run that calls it.
thread_local int callback_depth = 0;

bool KnownDType(GlintDType dtype) {
  switch (dtype) {
    case GLINT_DTYPE_FLOAT32: case GLINT_DTYPE_UINT8: case GLINT_DTYPE_INT8:
    case GLINT_DTYPE_UINT16: case GLINT_DTYPE_INT16: case GLINT_DTYPE_INT32:
    case GLINT_DTYPE_INT64: case GLINT_DTYPE_BOOL: case GLINT_DTYPE_FLOAT16:
    case GLINT_DTYPE_FLOAT64: case GLINT_DTYPE_UINT32: case GLINT_DTYPE_UINT64:
    case GLINT_DTYPE_BFLOAT16:
      return true;
    default:
      return false;
  }
}

std::unique_ptr<GlintTensorList> MakeList(
    std::vector<glint::NamedTensor> tensors) {
  auto list = std::make_unique<GlintTensorList>();
  list->tag = kTensorListTag;
  for (glint::NamedTensor& t : tensors) {
    list->tensors.push_back(
        std::make_unique<GlintTensor>(GlintTensor{kTensorTag, std::move(t)}));
  }
  return list;
}

GlintNetwork* MakeNetwork(glint::NetworkInfo info) {
  return new GlintNetwork{kNetworkTag, std::move(info)};
}

// Checks and converts a run's arguments.
GlintStatus* PrepareRun(const char* function, GlintRuntime* runtime,
                        const char* name, const GlintTensor* const* inputs,
                        size_t num_inputs, const GlintRunOptions* options,
                        std::vector<glint::NamedTensor>* tensors,
                        glint::RunOptions* run_options) {
  GLINT_C_CHECK(CheckHandle(function, "runtime", runtime));
  GLINT_C_CHECK(CheckNotNull(function, "name", name));
  if (num_inputs > 0) GLINT_C_CHECK(CheckNotNull(function, "inputs", inputs));
  for (size_t i = 0; i < num_inputs; ++i) {
    const std::string param = absl::StrCat("inputs[", i, "]");
    GLINT_C_CHECK(CheckHandle(function, param.c_str(), inputs[i]));
    tensors->push_back(inputs[i]->named);  // Shares the bytes.
  }
  if (options != nullptr) {
    GLINT_C_CHECK(CheckHandle(function, "options", options));
    *run_options = options->options;
    if (options->timeout_us > 0) {
      run_options->deadline =
          absl::Now() + absl::Microseconds(options->timeout_us);
    }
  }
  return nullptr;
}

GlintStatus* Add(const char* function, GlintRuntime* runtime, const char* name,
                 absl::string_view model, const GlintAddOptions* options,
                 GlintNetwork** out) {
  glint::AddNetworkOptions add;
  if (options != nullptr) {
    GLINT_C_CHECK(CheckHandle(function, "options", options));
    add = options->options;
  }
  absl::StatusOr<glint::NetworkInfo> info =
      runtime->host->AddNetwork(name, model, add);
  if (!info.ok()) return FromStatus(function, info.status());
  if (out != nullptr) *out = MakeNetwork(*std::move(info));
  return nullptr;
}

}  // namespace

extern "C" {

uint32_t glint_api_version(void) { return GLINT_C_API_VERSION; }

// ---- Status -------------------------------------------------------------

GlintCode glint_status_code(const GlintStatus* status) {
  if (status == nullptr) return GLINT_OK;
  if (!Is(status)) return GLINT_INVALID_ARGUMENT;
  return status->code;
}

const char* glint_status_message(const GlintStatus* status) {
  if (status == nullptr) return "";
  if (!Is(status)) {
    return "glint_status_message: not a GlintStatus (a handle of another "
           "kind, or one deleted)";
  }
  return status->message.c_str();
}

void glint_status_delete(GlintStatus* status) {
  if (status == OutOfMemory()) return;
  Delete(status);
}

const char* glint_code_name(GlintCode code) {
  switch (code) {
    case GLINT_OK: return "OK";
    case GLINT_CANCELLED: return "CANCELLED";
    case GLINT_UNKNOWN: return "UNKNOWN";
    case GLINT_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case GLINT_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case GLINT_NOT_FOUND: return "NOT_FOUND";
    case GLINT_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case GLINT_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case GLINT_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case GLINT_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case GLINT_ABORTED: return "ABORTED";
    case GLINT_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case GLINT_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case GLINT_INTERNAL: return "INTERNAL";
    case GLINT_UNAVAILABLE: return "UNAVAILABLE";
    case GLINT_DATA_LOSS: return "DATA_LOSS";
    case GLINT_UNAUTHENTICATED: return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

// ---- Tensors ------------------------------------------------------------

GlintStatus* glint_tensor_create(const char* name, GlintDType dtype,
                                 const int64_t* dims, size_t rank,
                                 const void* data, size_t byte_size,
                                 GlintTensor** out) {
  static constexpr char kFn[] = "glint_tensor_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    if (!KnownDType(dtype)) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("dtype ", static_cast<int>(dtype),
                                " is not a GlintDType"));
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
    const glint::DType type = static_cast<glint::DType>(dtype);
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

// ---- Runtime ------------------------------------------------------------

GlintStatus* glint_runtime_create(const char* device_spec,
                                  GlintRuntime** out) {
  static constexpr char kFn[] = "glint_runtime_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    absl::StatusOr<std::vector<glint::DeviceConfig>> configs =
        glint::ParseDeviceSpec(device_spec != nullptr
                                   ? absl::string_view(device_spec)
                                   : glint::kDefaultDeviceSpec);
    if (!configs.ok()) return FromStatus(kFn, configs.status());
    glint::ShareHostCores(
        static_cast<int>(std::thread::hardware_concurrency()), &*configs);
    absl::StatusOr<std::unique_ptr<glint::HostManager>> host =
        glint::HostManager::CreateFromConfigs({}, *configs);
    if (!host.ok()) return FromStatus(kFn, host.status());
    *out = new GlintRuntime{kRuntimeTag, *std::move(host)};
    return nullptr;
  });
}

GlintStatus* glint_runtime_delete(GlintRuntime* runtime) {
  static constexpr char kFn[] = "glint_runtime_delete";
  return Guard(kFn, [&]() -> GlintStatus* {
    if (runtime == nullptr) return nullptr;
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    if (callback_depth > 0) {
      return Error(GLINT_FAILED_PRECONDITION, kFn,
                   "called from a run's completion callback, which the "
                   "runtime would wait for; delete it from another thread");
    }
    runtime->tag = kDeletedTag;
    delete runtime;  // ~HostManager waits for the runs in flight.
    return nullptr;
  });
}

// ---- Networks -----------------------------------------------------------

GlintStatus* glint_add_options_create(GlintAddOptions** out) {
  static constexpr char kFn[] = "glint_add_options_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintAddOptions{kAddOptionsTag, {}};
    return nullptr;
  });
}

void glint_add_options_delete(GlintAddOptions* options) { Delete(options); }

GlintStatus* glint_add_options_set_strategy(GlintAddOptions* options,
                                            const char* strategy) {
  static constexpr char kFn[] = "glint_add_options_set_strategy";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "strategy", strategy));
    absl::StatusOr<glint::PartitionStrategy> parsed =
        glint::ParsePartitionStrategy(strategy);
    if (!parsed.ok()) return FromStatus(kFn, parsed.status());
    if (*parsed == glint::PartitionStrategy::kUser) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   "strategy \"user\" needs a user plan, which the C API "
                   "does not take; use \"auto\", \"whole\", \"memory\" or "
                   "\"load_balanced\"");
    }
    options->options.partition.strategy = *parsed;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_plan_devices(GlintAddOptions* options,
                                                int plan_devices) {
  static constexpr char kFn[] = "glint_add_options_set_plan_devices";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (plan_devices < 0) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("plan_devices is ", plan_devices,
                                "; it must be >= 0 (0: the strategy "
                                "chooses)"));
    }
    options->options.partition.plan_devices = plan_devices;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_replicas(GlintAddOptions* options,
                                            int replicas) {
  static constexpr char kFn[] = "glint_add_options_set_replicas";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (replicas < 1) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("replicas is ", replicas,
                                "; it must be >= 1"));
    }
    options->options.partition.replicas = replicas;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_precision(GlintAddOptions* options,
                                             const char* precision) {
  static constexpr char kFn[] = "glint_add_options_set_precision";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "precision", precision));
    absl::StatusOr<glint::Precision> parsed = glint::ParsePrecision(precision);
    if (!parsed.ok()) return FromStatus(kFn, parsed.status());
    options->options.precision = *parsed;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_input_shape(GlintAddOptions* options,
                                               const char* input,
                                               const int64_t* dims,
                                               size_t rank) {
  static constexpr char kFn[] = "glint_add_options_set_input_shape";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "input", input));
    if (rank > 0) GLINT_C_CHECK(CheckNotNull(kFn, "dims", dims));
    if (rank > static_cast<size_t>(glint::kMaxTensorRank)) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("rank ", rank, " is over the limit of ",
                                glint::kMaxTensorRank));
    }
    glint::Shape shape(std::vector<int64_t>(dims, dims + rank));
    for (size_t i = 0; i < rank; ++i) {
      if (shape.dim(static_cast<int>(i)) < 0) {
        return Error(GLINT_INVALID_ARGUMENT, kFn,
                     absl::StrCat("dims[", i, "] is ", shape.dim(i),
                                  "; a bound shape is static (dims >= 0)"));
      }
    }
    options->options.input_shapes[input] = std::move(shape);
    return nullptr;
  });
}

GlintStatus* glint_runtime_add_network(GlintRuntime* runtime, const char* name,
                                       const void* model, size_t model_size,
                                       const GlintAddOptions* options,
                                       GlintNetwork** out) {
  static constexpr char kFn[] = "glint_runtime_add_network";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    if (model_size > 0) GLINT_C_CHECK(CheckNotNull(kFn, "model", model));
    return Add(kFn, runtime, name,
               absl::string_view(static_cast<const char*>(model), model_size),
               options, out);
  });
}

GlintStatus* glint_runtime_add_network_from_file(
    GlintRuntime* runtime, const char* name, const char* path,
    const GlintAddOptions* options, GlintNetwork** out) {
  static constexpr char kFn[] = "glint_runtime_add_network_from_file";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    GLINT_C_CHECK(CheckNotNull(kFn, "path", path));
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      return Error(GLINT_NOT_FOUND, kFn,
                   absl::StrCat("cannot open '", glint::Clip(path), "': ",
                                std::strerror(errno)));
    }
    std::stringstream model;
    model << file.rdbuf();
    if (file.bad()) {
      return Error(GLINT_DATA_LOSS, kFn,
                   absl::StrCat("cannot read '", glint::Clip(path), "'"));
    }
    return Add(kFn, runtime, name, model.str(), options, out);
  });
}

GlintStatus* glint_runtime_remove_network(GlintRuntime* runtime,
                                          const char* name) {
  static constexpr char kFn[] = "glint_runtime_remove_network";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    return FromStatus(kFn, runtime->host->RemoveNetwork(name));
  });
}

GlintStatus* glint_runtime_get_network(GlintRuntime* runtime, const char* name,
                                       GlintNetwork** out) {
  static constexpr char kFn[] = "glint_runtime_get_network";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    absl::StatusOr<glint::NetworkInfo> info = runtime->host->GetNetwork(name);
    if (!info.ok()) return FromStatus(kFn, info.status());
    *out = MakeNetwork(*std::move(info));
    return nullptr;
  });
}

GlintStatus* glint_runtime_list_networks(GlintRuntime* runtime,
                                         GlintNetworkList** out) {
  static constexpr char kFn[] = "glint_runtime_list_networks";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    auto list = std::make_unique<GlintNetworkList>();
    list->tag = kNetworkListTag;
    for (glint::NetworkInfo& info : runtime->host->ListNetworks()) {
      list->networks.push_back(std::unique_ptr<GlintNetwork>(
          MakeNetwork(std::move(info))));
    }
    *out = list.release();
    return nullptr;
  });
}

GlintStatus* glint_network_info(const GlintNetwork* network, const char** name,
                                size_t* num_inputs, size_t* num_outputs,
                                size_t* num_partitions, int* replicas,
                                const char** strategy) {
  static constexpr char kFn[] = "glint_network_info";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "network", network));
    const glint::NetworkInfo& info = network->info;
    if (name != nullptr) *name = info.name.c_str();
    if (num_inputs != nullptr) *num_inputs = info.inputs.size();
    if (num_outputs != nullptr) *num_outputs = info.outputs.size();
    if (num_partitions != nullptr) *num_partitions = info.partitions.size();
    if (replicas != nullptr) *replicas = info.replicas;
    if (strategy != nullptr) *strategy = info.strategy.c_str();
    return nullptr;
  });
}

GlintStatus* glint_network_value(const GlintNetwork* network, int is_output,
                                 size_t index, const char** name,
                                 GlintDType* dtype, const int64_t** dims,
                                 size_t* rank) {
  static constexpr char kFn[] = "glint_network_value";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "network", network));
    const std::vector<glint::ValueInfo>& values =
        is_output ? network->info.outputs : network->info.inputs;
    if (index >= values.size()) {
      return Error(GLINT_OUT_OF_RANGE, kFn,
                   absl::StrCat(is_output ? "output" : "input", " index ",
                                index, " is past network '",
                                glint::Clip(network->info.name), "''s ",
                                values.size(),
                                is_output ? " outputs" : " inputs"));
    }
    const glint::ValueInfo& value = values[index];
    if (name != nullptr) *name = value.name.c_str();
    if (dtype != nullptr) *dtype = static_cast<GlintDType>(value.dtype);
    const bool known = value.shape.has_rank();
    if (dims != nullptr) *dims = known ? value.shape.dims().data() : nullptr;
    if (rank != nullptr) {
      *rank = known ? static_cast<size_t>(value.shape.rank())
                    : GLINT_UNKNOWN_RANK;
    }
    return nullptr;
  });
}

void glint_network_delete(GlintNetwork* network) { Delete(network); }

GlintStatus* glint_network_list_size(const GlintNetworkList* list,
                                     size_t* size) {
  static constexpr char kFn[] = "glint_network_list_size";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "list", list));
    GLINT_C_CHECK(CheckNotNull(kFn, "size", size));
    *size = list->networks.size();
    return nullptr;
  });
}

GlintStatus* glint_network_list_get(const GlintNetworkList* list, size_t index,
                                    const GlintNetwork** network) {
  static constexpr char kFn[] = "glint_network_list_get";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "list", list));
    GLINT_C_CHECK(CheckNotNull(kFn, "network", network));
    if (index >= list->networks.size()) {
      return Error(GLINT_OUT_OF_RANGE, kFn,
                   absl::StrCat("index ", index, " is past the list's ",
                                list->networks.size(), " networks"));
    }
    *network = list->networks[index].get();
    return nullptr;
  });
}

void glint_network_list_delete(GlintNetworkList* list) { Delete(list); }

// ---- Runs ---------------------------------------------------------------

GlintStatus* glint_cancel_create(GlintCancel** out) {
  static constexpr char kFn[] = "glint_cancel_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintCancel{kCancelTag,
                           std::make_shared<glint::CancellationToken>()};
    return nullptr;
  });
}

GlintStatus* glint_cancel_trigger(GlintCancel* cancel) {
  static constexpr char kFn[] = "glint_cancel_trigger";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "cancel", cancel));
    cancel->token->Cancel();
    return nullptr;
  });
}

void glint_cancel_delete(GlintCancel* cancel) { Delete(cancel); }

GlintStatus* glint_run_options_create(GlintRunOptions** out) {
  static constexpr char kFn[] = "glint_run_options_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintRunOptions{kRunOptionsTag, {}, 0};
    return nullptr;
  });
}

void glint_run_options_delete(GlintRunOptions* options) { Delete(options); }

GlintStatus* glint_run_options_set_timeout_us(GlintRunOptions* options,
                                              int64_t timeout_us) {
  static constexpr char kFn[] = "glint_run_options_set_timeout_us";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (timeout_us <= 0) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("timeout_us is ", timeout_us,
                                "; it must be > 0"));
    }
    options->timeout_us = timeout_us;
    return nullptr;
  });
}

GlintStatus* glint_run_options_set_cancel(GlintRunOptions* options,
                                          GlintCancel* cancel) {
  static constexpr char kFn[] = "glint_run_options_set_cancel";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (cancel == nullptr) {
      options->options.cancel = nullptr;
      return nullptr;
    }
    GLINT_C_CHECK(CheckHandle(kFn, "cancel", cancel));
    options->options.cancel = cancel->token;
    return nullptr;
  });
}

GlintStatus* glint_run_options_set_priority(GlintRunOptions* options,
                                            int priority) {
  static constexpr char kFn[] = "glint_run_options_set_priority";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    options->options.priority = priority;
    return nullptr;
  });
}

GlintStatus* glint_run_options_add_output(GlintRunOptions* options,
                                          const char* name) {
  static constexpr char kFn[] = "glint_run_options_add_output";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    options->options.requested_outputs.push_back(name);
    return nullptr;
  });
}

GlintStatus* glint_profile_create(GlintProfile** out) {
  static constexpr char kFn[] = "glint_profile_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintProfile{kProfileTag, std::make_shared<glint::RunTrace>(),
                            std::string()};
    return nullptr;
  });
}

void glint_profile_delete(GlintProfile* profile) { Delete(profile); }

GlintStatus* glint_run_options_set_profile(GlintRunOptions* options,
                                           GlintProfile* profile) {
  static constexpr char kFn[] = "glint_run_options_set_profile";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (profile == nullptr) {
      options->options.trace = nullptr;
      options->options.profile = false;
      return nullptr;
    }
    GLINT_C_CHECK(CheckHandle(kFn, "profile", profile));
    options->options.trace = profile->trace;
    options->options.profile = true;
    return nullptr;
  });
}

GlintStatus* glint_profile_trace_json(GlintProfile* profile,
                                      const char** json) {
  static constexpr char kFn[] = "glint_profile_trace_json";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "profile", profile));
    GLINT_C_CHECK(CheckNotNull(kFn, "json", json));
    profile->text = profile->trace->ToChromeJson();
    *json = profile->text.c_str();
    return nullptr;
  });
}

GlintStatus* glint_profile_summary(GlintProfile* profile, int top,
                                   const char** text) {
  static constexpr char kFn[] = "glint_profile_summary";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "profile", profile));
    GLINT_C_CHECK(CheckNotNull(kFn, "text", text));
    profile->text = glint::FormatOpProfile(
        glint::AggregateOpProfile(
            glint::OpSpansFromSlices(profile->trace->Slices())),
        top);
    *text = profile->text.c_str();
    return nullptr;
  });
}

GlintStatus* glint_runtime_run(GlintRuntime* runtime, const char* name,
                               const GlintTensor* const* inputs,
                               size_t num_inputs,
                               const GlintRunOptions* options,
                               GlintTensorList** outputs) {
  static constexpr char kFn[] = "glint_runtime_run";
  return Guard(kFn, [&]() -> GlintStatus* {
    std::vector<glint::NamedTensor> tensors;
    glint::RunOptions run_options;
    GLINT_C_CHECK(PrepareRun(kFn, runtime, name, inputs, num_inputs, options,
                             &tensors, &run_options));
    GLINT_C_CHECK(CheckNotNull(kFn, "outputs", outputs));
    absl::StatusOr<std::vector<glint::NamedTensor>> result =
        runtime->host->RunNetwork(name, std::move(tensors), run_options);
    if (!result.ok()) return FromStatus(kFn, result.status());
    *outputs = MakeList(*std::move(result)).release();
    return nullptr;
  });
}

GlintStatus* glint_runtime_run_async(GlintRuntime* runtime, const char* name,
                                     const GlintTensor* const* inputs,
                                     size_t num_inputs,
                                     const GlintRunOptions* options,
                                     GlintRunCallback callback,
                                     void* user_data) {
  static constexpr char kFn[] = "glint_runtime_run_async";
  return Guard(kFn, [&]() -> GlintStatus* {
    std::vector<glint::NamedTensor> tensors;
    glint::RunOptions run_options;
    GLINT_C_CHECK(PrepareRun(kFn, runtime, name, inputs, num_inputs, options,
                             &tensors, &run_options));
    if (callback == nullptr) {
      return Error(GLINT_INVALID_ARGUMENT, kFn, "callback is NULL");
    }
    runtime->host->RunNetworkAsync(
        name, std::move(tensors), run_options,
        [callback, user_data](
            absl::StatusOr<std::vector<glint::NamedTensor>> result) {
          GlintStatus* status = nullptr;
          GlintTensorList* list = nullptr;
          status = Guard("glint_runtime_run_async", [&]() -> GlintStatus* {
            if (!result.ok()) {
              return FromStatus("glint_runtime_run_async", result.status());
            }
            list = MakeList(*std::move(result)).release();
            return nullptr;
          });
          ++callback_depth;
          try {
            callback(user_data, status, list);
          } catch (...) {
            // A C++ callback that throws: the exception must not unwind
            // into Glint's threads.
            GLINT_LOG_ERROR(
                "glint_runtime_run_async: the completion callback threw; "
                "ignored");
          }
          --callback_depth;
        });
    return nullptr;
  });
}

}  // extern "C"
