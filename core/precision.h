// The arithmetic precision a network's heavy ops (MatMul, Gemm, Conv and
// their fused forms) compute in. Chosen per network at AddNetwork; every
// value between nodes stays float32 whatever it is.
#ifndef GLINT_CORE_PRECISION_H_
#define GLINT_CORE_PRECISION_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace glint {

enum class Precision {
  // IEEE float32 throughout (the default).
  kFloat32,
  // Mixed precision, as the seed engines' "bf16": the operands of
  // MatMul/Gemm/Conv are rounded to bfloat16 (8 bits of mantissa) where
  // the CPU has bfloat16 instructions, products accumulate in float32 and
  // results are float32. About 3 significant digits per operand.
  kBFloat16,
};

// "fp32" or "bf16" (any case; "" is fp32); INVALID_ARGUMENT naming the
// allowed values otherwise.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);
// "fp32" or "bf16".
absl::string_view PrecisionName(Precision precision);

}  // namespace glint

#endif  // GLINT_CORE_PRECISION_H_
