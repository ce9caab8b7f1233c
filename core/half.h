// The one conversion between float32 and the 16-bit float formats Glint
// stores as bit patterns: IEEE 754 binary16 (float16) and bfloat16 (the
// upper half of a float32). Used by the CPU kernels (devices/cpu/
// element_types.h), the CLI's printing (client/format.cc) and the tests'
// comparisons, so that all of them read the same bits as the same number.
//
// Header-only and free of state: every function is thread-safe.
#ifndef GLINT_CORE_HALF_H_
#define GLINT_CORE_HALF_H_

#include <cstdint>
#include <cstring>

namespace glint {
namespace half_internal {

// The bits of a float32 and back, without undefined behaviour.
inline uint32_t BitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}
inline float FloatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

}  // namespace half_internal

// Exact: every binary16 value, subnormals included, is a float32. Inf stays
// inf and NaN stays NaN with its sign and payload shifted into place.
inline float Float16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // Subnormal: shift the mantissa up until it is normal.
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
             ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return half_internal::FloatOf(bits);
}

// Rounds to nearest even, as numpy's astype(float16) does: values that
// round to 65520 or more become inf, those below half the smallest
// subnormal become (signed) zero. NaN stays a quiet, non-zero-payload NaN.
inline uint16_t FloatToFloat16(float f) {
  const uint32_t x = half_internal::BitsOf(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN (keep NaN quiet and non-zero).
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // Rounds to >= 65520: inf.
  if (abs < 0x38800000u) {  // Below the smallest normal half: subnormal.
    if (abs < 0x33000000u) return sign;  // Rounds to zero.
    const uint32_t e = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    // The half's subnormal step is 2^-24: drop 126 - e (14..24) bits.
    const uint32_t drop = 126 - e;
    uint32_t half = mant >> drop;
    const uint32_t rem = mant & ((1u << drop) - 1);
    const uint32_t mid = 1u << (drop - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t h = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

// Exact: a bfloat16 is the upper 16 bits of a float32.
inline float BFloat16ToFloat(uint16_t b) {
  return half_internal::FloatOf(static_cast<uint32_t>(b) << 16);
}

// Rounds to nearest even; NaN stays NaN (forced quiet so that truncating
// its payload cannot turn it into inf).
inline uint16_t FloatToBFloat16(float f) {
  const uint32_t x = half_internal::BitsOf(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40);
  }
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace glint

#endif  // GLINT_CORE_HALF_H_
