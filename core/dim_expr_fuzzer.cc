// libFuzzer target for dim expressions (core/dim_expr.h): a model's
// dim_param is untrusted text that ValueInfo::BytesWithin evaluates. Input:
// a byte for a constant to add, a byte for a divisor, then the text. Any
// text evaluates or is refused; what evaluates is a size (never negative);
// its product form, its upper bound and its sum of one term name the same
// size and parse; and DimAffine's canonical form of
// floor((e + add) / divisor) evaluates to exactly that.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/dim_expr.h"
#include "fuzz/fuzz_check.h"

namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int64_t add = static_cast<int8_t>(data[0]);
  const int64_t divisor = 1 + data[1] % 16;
  const absl::string_view text(reinterpret_cast<const char*>(data + 2),
                               size - 2);
  static const std::map<std::string, int64_t>* const kValues =
      new std::map<std::string, int64_t>{{"a", 3},   {"b", 5}, {"batch", 8},
                                         {"h", 224}, {"w", 7}, {"seq", 12}};

  const std::optional<int64_t> value = glint::EvaluateDim(text, *kValues);
  FUZZ_CHECK(!value.has_value() || *value >= 0,
             absl::StrCat("'", text, "' evaluates to ", *value));

  // Every name the builders give is one of the grammar.
  const auto parses = [](const std::string& name) {
    return glint::IsDimExpression(name);
  };
  if (std::optional<glint::DimProduct> p = glint::DimFactors(text)) {
    const std::string name = glint::DimProductName(*p);
    // Parenthesised factors may take it past the longest name read.
    FUZZ_CHECK(
        parses(name) || name.size() > glint::kMaxDimExprLength,
        absl::StrCat("'", text, "' as a product: '", name, "' does not parse"));
    const std::optional<int64_t> again = glint::EvaluateDim(name, *kValues);
    // Reordered factors may overflow where the text did not (or back):
    // only values both sides reach are compared.
    FUZZ_CHECK(!value.has_value() || !again.has_value() || *again == *value,
               absl::StrCat("'", text, "' is ", *value, " but its product '",
                            name, "' is ", *again));
  }

  // A bounded dim no value is given for is its bound: flattening the
  // bounds keeps the size, and so does a sum of one term.
  if (std::optional<std::string> upper = glint::DimUpperBound(text)) {
    FUZZ_CHECK(parses(*upper), absl::StrCat("'", text, "': its bound '", *upper,
                                            "' does not parse"));
    const std::optional<int64_t> got = glint::EvaluateDim(*upper, *kValues);
    FUZZ_CHECK(!value.has_value() || !got.has_value() || *got == *value,
               absl::StrCat("'", text, "' is ", *value, " but its bound '",
                            *upper, "' is ", *got));
  }
  if (std::optional<std::string> sum = glint::DimSum({std::string(text)})) {
    FUZZ_CHECK(parses(*sum), absl::StrCat("'", text, "': its sum '", *sum,
                                          "' does not parse"));
    const std::optional<int64_t> got = glint::EvaluateDim(*sum, *kValues);
    FUZZ_CHECK(!value.has_value() || !got.has_value() || *got == *value,
               absl::StrCat("'", text, "' is ", *value, " but its sum '", *sum,
                            "' is ", *got));
  }

  // floor((value + add) / divisor), where the text's value is not a
  // negative clamped to 0.
  if (std::optional<std::string> affine =
          glint::DimAffine(text, add, divisor)) {
    FUZZ_CHECK(parses(*affine), absl::StrCat("'", text, "': its affine form '",
                                             *affine, "' does not parse"));
    const std::optional<int64_t> got = glint::EvaluateDim(*affine, *kValues);
    if (value.has_value() && *value > 0 && got.has_value()) {
      int64_t want = FloorDiv(*value + add, divisor);
      if (want < 0) want = 0;
      FUZZ_CHECK(*got == want,
                 absl::StrCat("floor(('", text, "')+", add, ")/", divisor,
                              ") = ", want, " but '", *affine, "' is ", *got));
    }
  }
  return 0;
}
