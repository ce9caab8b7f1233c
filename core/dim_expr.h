// Dim expressions: the names of dims derived from a network's dynamic dims.
//
// ONNX names a dim it cannot size by a string (dim_param): two dims of one
// name are one size in every run. The importer names the dims it derives
// from the inputs' named dims by the arithmetic that derives them, written
// as an expression over those names: a stride-2 convolution of an image
// `height` pixels high is `(height+1)/2` high, a batch of `batch` windows
// of 64 is `64*batch`. ValueInfo::BytesWithin evaluates such a name at a
// network's bounds, so the memory planned for the bounds covers the values
// whose size those dims fix.
//
// Some sizes no input's dims fix: how many elements NonZero finds, how many
// boxes NonMaxSuppression keeps, a TopK's run-time k. The importer names
// such a dim by a name of its own and an upper bound the inputs' dims do
// fix: `nonzero_1f3a<=3*height*width` (at most one per element of a
// 3 x height x width input). Two dims of one such name are one size (the
// name is the producing node's); its value at a network's bounds is its
// bound, so the memory planned for the bounds covers every run.
//
// The grammar is small on purpose:
//   dim     := bounded | expr
//   bounded := name '<=' expr
//   expr    := term (('+' | '-') term)*
//   term    := factor (('*' | '/') factor)*
//   factor  := integer | name | '(' expr ')' | '(' bounded ')'
//   name    := [A-Za-z_][A-Za-z0-9_]*
// `/` is floor division, and only by a positive integer. The importer
// writes sums, products, floor divisions by constants and constants
// subtracted, which never decrease when a name grows over the sizes a run
// can have (where every factor is a size, never negative), so the value at
// the bounds is the most any run takes. A model's own dim name written in
// this grammar ("n*m") is read as the expression it spells. The builders below
// keep each form canonical (one spelling per size they can tell equal), so that
// two paths to one size (a residual's two branches) meet under one name.
//
// Thread-safe: free functions on values.
#ifndef GLINT_CORE_DIM_EXPR_H_
#define GLINT_CORE_DIM_EXPR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace glint {

// The longest dim expression read (a model's dim_param is untrusted text).
inline constexpr size_t kMaxDimExprLength = 256;

// Whether `name` is a plain name of the grammar ("batch", "seq_len").
bool IsDimIdentifier(absl::string_view name);

// The size `name` has when each dim is at `values[dim]`: `values[name]`
// where it is there (as given), else `name` evaluated as an expression,
// each bounded dim at its bound: 0 where that is negative (a size no run has,
// as a kernel wider than the image at the bounds gives). nullopt where it is
// neither, names a dim `values` lacks or holds outside [0, 2^62], divides by
// anything but a positive integer, or leaves [-2^62, 2^62] on the way.
std::optional<int64_t> EvaluateDim(
    absl::string_view name, const std::map<std::string, int64_t>& values);

// floor((base + add) / divisor), `base` a dim name or expression, canonical:
// a base that is itself floor((x + a) / m) folds into floor((x + a + add*m)
// / (m * divisor)). `divisor` must be positive. nullopt where `base` is
// not an expression of the grammar, a constant overflows or the name would
// be longer than kMaxDimExprLength.
std::optional<std::string> DimAffine(absl::string_view base, int64_t add,
                                     int64_t divisor);

// A dim as a product: its integer coefficient and its other factors, each
// a dim name or a parenthesised expression, sorted. "64*batch" is
// {64, {"batch"}}; "(h+1)/2" is {1, {"(h+1)/2"}}.
struct DimProduct {
  int64_t coefficient = 1;
  std::vector<std::string> factors;
};
// nullopt where `name` is not an expression of the grammar.
std::optional<DimProduct> DimFactors(absl::string_view name);
// The canonical name of `product`: "64*batch", "batch*seq", "12" for no
// factors, "batch" for coefficient 1 and one factor.
std::string DimProductName(DimProduct product);

// Whether `name` is of the grammar (at most kMaxDimExprLength long).
bool IsDimExpression(absl::string_view name);

// Whether `name` holds a bounded dim (one the data decides).
bool IsDataDependentDim(absl::string_view name);

// `name` with each bounded dim replaced by its bound: an expression over
// the inputs' dims that is at least `name` in every run. nullopt where
// `name` is not of the grammar.
std::optional<std::string> DimUpperBound(absl::string_view name);

// The bounded dim `tag<=bound`, its bound flattened (DimUpperBound): a
// NonZero's count over a value of a TopK's run-time k is at most the
// TopK's bound. nullopt where `tag` is not a name, `bound` not of the
// grammar, or the name would be longer than kMaxDimExprLength.
std::optional<std::string> DimBounded(absl::string_view tag,
                                      absl::string_view bound);

// The sum of `terms` (each of the grammar, none a negative product), like
// products added: {"(h+1)/2", "(h+1)/2", "4"} is "2*((h+1)/2)+4". nullopt
// where a term is not of the grammar or a coefficient overflows.
std::optional<std::string> DimSum(const std::vector<std::string>& terms);

}  // namespace glint

#endif  // GLINT_CORE_DIM_EXPR_H_
