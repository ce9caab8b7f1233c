// The small tensor that Glint's shape folding (shape_folding.h) computes
// on: FoldValue, its element types, its conversion from and to
// TensorProto (and from a Constant node), the node-attribute readers the
// evaluators share, numpy broadcasting, and the index helpers over a
// FoldValue's row-major elements. The per-op evaluators are in
// fold_ops.h.
//
// Internal to //onnx:onnx_importer. Every function is thread-safe on
// distinct values (none keeps state).
#ifndef GLINT_ONNX_FOLD_VALUE_H_
#define GLINT_ONNX_FOLD_VALUE_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

using Dims = std::vector<int64_t>;

// The most elements a folded value (or an input read for one) may have:
// shape arithmetic works on a few dims; anything larger is data.
inline constexpr int64_t kMaxFoldElements = 4096;
// The largest dim a folded value may have (its other dims may be 0).
inline constexpr int64_t kMaxFoldDim = int64_t{1} << 31;

// FLOAT or DOUBLE.
bool IsReal(int32_t type);
// The integer types the fold computes on, and BOOL.
bool IsIntegral(int32_t type);
bool IsFoldableType(int32_t type);

// Elements of `dims`; -1 over kMaxFoldElements or for a negative dim.
int64_t CountOf(const Dims& dims);

// A small tensor the fold knows the contents of. Integer and bool elements
// live in `ints`, float and double ones in `reals` (rounded to the element
// type after every operation).
struct FoldValue {
  int32_t type = 0;
  Dims dims;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  // Elements not known at import (a Shape's dims that depend on run-time
  // data); empty when every element is known. Ops that move elements
  // (Gather, Slice, Concat, Unsqueeze...) carry them: x.shape[1] of an
  // [N, 1] value is known although N is not. Every unknown element is a
  // dim, or dims multiplied, or a dim scaled, divided or offset by
  // constants (fold_ops.h).
  std::vector<bool> unknown;
  // The names of unknown elements that are a symbolic dim of some value
  // (its ONNX dim_param, "seq", as Shape(x) reads it), "" where unnamed;
  // empty, or one per element. Carried wherever `unknown` is, and through
  // Casts to INT64 or INT32: Range(0, seq, 1) has `seq` elements. Integer
  // arithmetic on them names its result by a dim expression: Mul by 12 is
  // `12*seq` (core/dim_expr.h).
  std::vector<std::string> symbols;

  bool complete() const {
    return std::find(unknown.begin(), unknown.end(), true) == unknown.end();
  }
  bool known(int64_t k) const { return unknown.empty() || !unknown[k]; }
  bool real() const { return IsReal(type); }
  int64_t size() const {
    return static_cast<int64_t>(real() ? reals.size() : ints.size());
  }
  // The name of unknown element k; "" where it has none.
  const std::string& symbol(int64_t k) const;
  double AsReal(int64_t k) const {
    return real() ? reals[k] : static_cast<double>(ints[k]);
  }
};

// An integer as an element of `type` holds it (two's complement wrap, as
// the kernels compute); bools are 0 or 1.
int64_t Narrow(int32_t type, int64_t v);
// A real as an element of `type` holds it (FLOAT rounds).
double RoundReal(int32_t type, double v);

// A value of `type` and `dims`, every element 0.
FoldValue MakeValue(int32_t type, Dims dims);
// A 1-D INT64 value holding `values`.
FoldValue Int64Vector(const Dims& values);
// The same elements under `dims`.
FoldValue WithDims(FoldValue v, Dims dims);

// Reads a TensorProto of at most kMaxFoldElements foldable elements.
std::optional<FoldValue> ValueFromProto(const onnx::TensorProto& proto);
onnx::TensorProto ValueToProto(const FoldValue& v);
// The value of a Constant node, if it is small and of a foldable type.
std::optional<FoldValue> ConstantNodeValue(const onnx::NodeProto& node);

// `node`'s attribute `name`; null where it has none.
const onnx::AttributeProto* Attr(const onnx::NodeProto& node,
                                 absl::string_view name);
// An INT attribute, `fallback` where absent or of another type.
int64_t IntAttr(const onnx::NodeProto& node, absl::string_view name,
                int64_t fallback);
// An INTS attribute; nullopt where absent or of another type.
std::optional<Dims> IntsAttr(const onnx::NodeProto& node,
                             absl::string_view name);

// A complete integer scalar or 1-D value as a list (axes, a shape...);
// nullopt for null, a real, a higher rank or unknown elements.
std::optional<Dims> IntegerList(const FoldValue* v);
// Whether every value has the first one's element type.
bool SameTypes(const std::vector<const FoldValue*>& ins);

// Numpy-style broadcast of `shapes`; nullopt where they do not broadcast.
std::optional<Dims> Broadcast(const std::vector<const Dims*>& shapes);
// The linear index into an input of shape `in` (broadcast to `out`) of the
// output element at linear index `k`.
int64_t BroadcastIndex(const Dims& out, const Dims& in, int64_t k);

// Elementwise over broadcast inputs; `fn` gets the inputs' element indices
// and writes output element k, returning false to refuse the fold.
template <typename Fn>
std::optional<FoldValue> Elementwise(const std::vector<const FoldValue*>& ins,
                                     int32_t out_type, Fn fn) {
  std::vector<const Dims*> shapes;
  for (const FoldValue* v : ins) shapes.push_back(&v->dims);
  std::optional<Dims> dims = Broadcast(shapes);
  if (!dims.has_value() || CountOf(*dims) < 0) return std::nullopt;
  FoldValue out = MakeValue(out_type, *dims);
  std::vector<int64_t> at(ins.size());
  for (int64_t k = 0; k < out.size(); ++k) {
    for (size_t i = 0; i < ins.size(); ++i) {
      at[i] = BroadcastIndex(out.dims, ins[i]->dims, k);
    }
    if (!fn(at, &out, k)) return std::nullopt;
  }
  return out;
}

// Normalises `axis` against `rank`; nullopt when out of range.
std::optional<int64_t> Axis(int64_t axis, int64_t rank);
// The linear index of multi-index `idx` in `dims`.
int64_t Linear(const Dims& dims, const Dims& idx);
// The multi-index in `dims` of linear index `k`.
void Unravel(const Dims& dims, int64_t k, Dims* idx);
// Marks element k of `v` unknown, named `symbol` ("" for no name).
void MarkUnknown(FoldValue* v, int64_t k, const std::string& symbol);
// Whether `name` is one ONNX's inference invented for a dim it could not
// relate to another ("unk__0": libonnx's SymbolTableImpl). Such a name
// changes from one round of inference to the next, so the fold never
// builds on one (shape_folding.h ForgetUnsizableDimNames).
bool IsInventedDimName(absl::string_view name);
// Copies element `from` of `src` to element `to` of `dst` (same type),
// unknown or not, with its symbol.
void CopyElement(const FoldValue& src, int64_t from, FoldValue* dst,
                 int64_t to);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_FOLD_VALUE_H_
