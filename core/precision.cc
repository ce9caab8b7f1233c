#include "core/precision.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/text.h"

namespace glint {

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower.empty() || lower == "fp32") return Precision::kFloat32;
  if (lower == "bf16") return Precision::kBFloat16;
  return absl::InvalidArgumentError(absl::StrCat(
      "precision '", Clip(name), "' is not one of: fp32 (the default), bf16"));
}

absl::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFloat32:
      return "fp32";
    case Precision::kBFloat16:
      return "bf16";
  }
  return "fp32";
}

}  // namespace glint
