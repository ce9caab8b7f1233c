// The C API's handles and the helpers every exported function uses at the
// boundary (capi/c_api.cc, capi/c_api_tensors.cc). Internal to capi/: not
// installed, not exported from libglint.so.
//
// A handle begins with its kind's tag, checked on entry (Is<T>) and
// overwritten on delete, so that a handle of another kind is refused rather
// than misread. Handles are thread-compatible: the C API documents which
// calls may share one (include/glint/c_api.h).
#ifndef GLINT_CAPI_HANDLES_H_
#define GLINT_CAPI_HANDLES_H_

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "api/types.h"
#include "core/cancellation.h"
#include "core/trace.h"
#include "glint/c_api.h"
#include "runtime/host_manager.h"

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

namespace glint::capi_internal {

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
template <>
constexpr uint64_t TagOf<GlintStatus>() {
  return kStatusTag;
}
template <>
constexpr uint64_t TagOf<GlintTensor>() {
  return kTensorTag;
}
template <>
constexpr uint64_t TagOf<GlintTensorList>() {
  return kTensorListTag;
}
template <>
constexpr uint64_t TagOf<GlintRuntime>() {
  return kRuntimeTag;
}
template <>
constexpr uint64_t TagOf<GlintNetwork>() {
  return kNetworkTag;
}
template <>
constexpr uint64_t TagOf<GlintNetworkList>() {
  return kNetworkListTag;
}
template <>
constexpr uint64_t TagOf<GlintAddOptions>() {
  return kAddOptionsTag;
}
template <>
constexpr uint64_t TagOf<GlintCancel>() {
  return kCancelTag;
}
template <>
constexpr uint64_t TagOf<GlintRunOptions>() {
  return kRunOptionsTag;
}
template <>
constexpr uint64_t TagOf<GlintProfile>() {
  return kProfileTag;
}

constexpr const char* KindName(const GlintTensor*) { return "GlintTensor"; }
constexpr const char* KindName(const GlintTensorList*) {
  return "GlintTensorList";
}
constexpr const char* KindName(const GlintRuntime*) { return "GlintRuntime"; }
constexpr const char* KindName(const GlintNetwork*) { return "GlintNetwork"; }
constexpr const char* KindName(const GlintNetworkList*) {
  return "GlintNetworkList";
}
constexpr const char* KindName(const GlintAddOptions*) {
  return "GlintAddOptions";
}
constexpr const char* KindName(const GlintCancel*) { return "GlintCancel"; }
constexpr const char* KindName(const GlintRunOptions*) {
  return "GlintRunOptions";
}
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
inline GlintStatus* OutOfMemory() {
  static GlintStatus* const status = new GlintStatus{
      kStatusTag, GLINT_RESOURCE_EXHAUSTED, "glint: out of host memory"};
  return status;
}

inline GlintStatus* Error(GlintCode code, absl::string_view function,
                          absl::string_view message) {
  return new GlintStatus{kStatusTag, code,
                         absl::StrCat(function, ": ", message)};
}

inline GlintStatus* FromStatus(absl::string_view function,
                               const absl::Status& s) {
  if (s.ok()) return nullptr;
  return Error(static_cast<GlintCode>(s.code()), function, s.message());
}

// The boundary: runs `body`, turning any exception into a status.
template <typename F>
inline GlintStatus* Guard(const char* function, F&& body) noexcept {
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
inline GlintStatus* CheckHandle(const char* function, const char* param,
                                const T* p) {
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

inline GlintStatus* CheckNotNull(const char* function, const char* param,
                                 const void* p) {
  if (p != nullptr) return nullptr;
  return Error(GLINT_INVALID_ARGUMENT, function,
               absl::StrCat(param, " is NULL"));
}

// A caller's GlintDType as the integer it passed, read without loading it
// as the enum: C lets a caller pass any int (the tests pass 1234), which in
// C++ is outside GlintDType's range, and loading it as one is undefined
// (UBSan's -fsanitize=enum flags it).
inline int RawDType(const GlintDType& dtype) {
  static_assert(sizeof(GlintDType) == sizeof(int), "GlintDType is an int");
  int raw;
  std::memcpy(&raw, &dtype, sizeof raw);
  return raw;
}

// True for a GlintDType that Glint has (`dtype` from RawDType).
inline bool KnownDType(int dtype) {
  switch (dtype) {
    case GLINT_DTYPE_FLOAT32:
    case GLINT_DTYPE_UINT8:
    case GLINT_DTYPE_INT8:
    case GLINT_DTYPE_UINT16:
    case GLINT_DTYPE_INT16:
    case GLINT_DTYPE_INT32:
    case GLINT_DTYPE_INT64:
    case GLINT_DTYPE_BOOL:
    case GLINT_DTYPE_FLOAT16:
    case GLINT_DTYPE_FLOAT64:
    case GLINT_DTYPE_UINT32:
    case GLINT_DTYPE_UINT64:
    case GLINT_DTYPE_BFLOAT16:
      return true;
    default:
      return false;
  }
}

inline std::unique_ptr<GlintTensorList> MakeList(
    std::vector<glint::NamedTensor> tensors) {
  auto list = std::make_unique<GlintTensorList>();
  list->tag = kTensorListTag;
  for (glint::NamedTensor& t : tensors) {
    list->tensors.push_back(
        std::make_unique<GlintTensor>(GlintTensor{kTensorTag, std::move(t)}));
  }
  return list;
}

inline GlintNetwork* MakeNetwork(glint::NetworkInfo info) {
  return new GlintNetwork{kNetworkTag, std::move(info)};
}

}  // namespace glint::capi_internal

// Returns the status of `expr` (a GlintStatus*) from the calling function
// when it is an error.
#define GLINT_C_CHECK(expr)                          \
  do {                                               \
    if (GlintStatus* check_ = (expr)) return check_; \
  } while (0)

#endif  // GLINT_CAPI_HANDLES_H_
