// Element types beyond the C++ arithmetic ones, and dispatch over every
// dtype a kernel may meet.
//
// float16 and bfloat16 are stored as their 16-bit patterns and computed in
// float32: each kernel is written once over a "compute type" C and reads /
// writes storage type S through Load<C> / Store<S>, which convert with
// core/half.h.
#ifndef GLINT_DEVICES_CPU_ELEMENT_TYPES_H_
#define GLINT_DEVICES_CPU_ELEMENT_TYPES_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/half.h"
#include "devices/cpu/kernel_util.h"

namespace glint::cpu {

// IEEE 754 binary16, as its bit pattern.
struct Float16 {
  uint16_t bits;
};
// The upper half of a float32, as its bit pattern.
struct BFloat16 {
  uint16_t bits;
};

template <> constexpr DType DTypeOf<bool>() { return DType::kBool; }
template <> constexpr DType DTypeOf<Float16>() { return DType::kFloat16; }
template <> constexpr DType DTypeOf<BFloat16>() { return DType::kBFloat16; }

// The type a storage type is computed in.
template <typename S>
struct ComputeTypeOf {
  using type = S;
};
template <> struct ComputeTypeOf<Float16> { using type = float; };
template <> struct ComputeTypeOf<BFloat16> { using type = float; };
template <typename S>
using ComputeType = typename ComputeTypeOf<S>::type;

template <typename S>
inline constexpr bool kIsFloatStorage =
    std::is_floating_point_v<S> || std::is_same_v<S, Float16> ||
    std::is_same_v<S, BFloat16>;

// Storage → compute value.
template <typename C, typename S>
inline C Load(S s) {
  if constexpr (std::is_same_v<S, Float16>) {
    return static_cast<C>(Float16ToFloat(s.bits));
  } else if constexpr (std::is_same_v<S, BFloat16>) {
    return static_cast<C>(BFloat16ToFloat(s.bits));
  } else {
    return static_cast<C>(s);
  }
}

// Compute value → storage.
template <typename S, typename C>
inline S Store(C c) {
  if constexpr (std::is_same_v<S, Float16>) {
    return Float16{FloatToFloat16(static_cast<float>(c))};
  } else if constexpr (std::is_same_v<S, BFloat16>) {
    return BFloat16{FloatToBFloat16(static_cast<float>(c))};
  } else {
    return static_cast<S>(c);
  }
}

inline constexpr std::initializer_list<DType> kAllFloatDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
inline constexpr std::initializer_list<DType> kAllNumericDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
    DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
    DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64};
inline constexpr std::initializer_list<DType> kAllSignedDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
    DType::kInt8,    DType::kInt16,   DType::kInt32,   DType::kInt64};
inline constexpr std::initializer_list<DType> kIntegerDTypes = {
    DType::kInt8,  DType::kUInt8,  DType::kInt16, DType::kUInt16,
    DType::kInt32, DType::kUInt32, DType::kInt64, DType::kUInt64};
inline constexpr std::initializer_list<DType> kUnsignedDTypes = {
    DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64};
inline constexpr std::initializer_list<DType> kBoolDTypes = {DType::kBool};
inline constexpr std::initializer_list<DType> kEveryDType = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
    DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
    DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64,
    DType::kBool};

// Calls `f(TypeTag<S>{})` for the storage type of any fixed-size dtype.
template <typename F>
absl::Status VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    case DType::kFloat16: return f(TypeTag<Float16>{});
    case DType::kBFloat16: return f(TypeTag<BFloat16>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kUInt16: return f(TypeTag<uint16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kUInt32: return f(TypeTag<uint32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kUInt64: return f(TypeTag<uint64_t>{});
    case DType::kBool: return f(TypeTag<bool>{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("no kernel for dtype ", DTypeName(dtype)));
  }
}

// Calls `f(TypeTag<T>{})` for a type of the same byte size as `dtype`:
// for kernels that only move elements.
template <typename F>
absl::Status VisitBySize(DType dtype, F&& f) {
  switch (DTypeSize(dtype)) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("no kernel for dtype ", DTypeName(dtype)));
  }
}

// Every element of `t` widened to double, for kernels that compute in
// double precision whatever their element type.
inline std::vector<double> LoadAsDoubles(const TensorView& t) {
  std::vector<double> v(t.num_elements());
  (void)VisitDType(t.dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = Load<double>(t.as<const S>()[i]);
    }
    return absl::OkStatus();
  });
  return v;
}

// Writes `v` into `t` (same element count), rounding to nearest for
// integer element types.
inline void StoreDoubles(const std::vector<double>& v, const TensorView& t) {
  (void)VisitDType(t.dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    using C = ComputeType<S>;
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
        t.as<S>()[i] = Store<S>(static_cast<C>(std::nearbyint(v[i])));
      } else {
        t.as<S>()[i] = Store<S>(static_cast<C>(v[i]));
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_ELEMENT_TYPES_H_
