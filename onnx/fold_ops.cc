#include "onnx/fold_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/dim_expr.h"
#include "core/tensor.h"
#include "onnx/fold_value.h"

namespace glint::onnx_internal {
namespace {

using onnx::TensorProto;

// --- The evaluators, one per op or family ---------------------------------

// The name of a dim, as element k of `v` holds one: its symbol, where it
// has one the fold may build on (never a name ONNX invented: it changes
// from one round of inference to the next).
std::optional<std::string> DimOperand(const FoldValue& v, int64_t k) {
  const std::string& name = v.symbol(k);
  if (name.empty() || IsInventedDimName(name)) return std::nullopt;
  return name;
}

// The largest constant dim arithmetic is named with (core/dim_expr.h reads
// constants up to 2^62).
constexpr int64_t kMaxConstant = int64_t{1} << 40;

// Whether a dim of name `name` is a size, never negative: a dim as Shape
// reads it, or one scaled, multiplied or divided (no constant subtracted).
bool IsSizeName(const std::string& name) {
  return name.find('-') == std::string::npos;
}

// Integer arithmetic on a dim the fold does not know: the name of the
// result as a dim expression (core/dim_expr.h), where the arithmetic is one
// an exporter writes for a shape: a dim times a positive constant or times
// another dim (batch * heads), a dim plus or minus a constant, a size
// divided by a positive constant (C's truncation is the floor on a size,
// never negative). nullopt for anything else, or for a name too long to
// read back: the fold refuses the value.
std::optional<std::string> DimArithmetic(const std::string& op,
                                         const FoldValue& a, int64_t i,
                                         const FoldValue& b, int64_t j) {
  std::optional<std::string> result;
  if (op == "Mul") {
    DimProduct product;
    for (const auto& [v, k] : {std::pair{&a, i}, std::pair{&b, j}}) {
      if (v->known(k)) {
        const int64_t c = v->ints[k];
        if (c < 1 || product.coefficient > (int64_t{1} << 40) / c) {
          return std::nullopt;
        }
        product.coefficient *= c;
        continue;
      }
      std::optional<std::string> name = DimOperand(*v, k);
      std::optional<DimProduct> factors =
          name.has_value() ? DimFactors(*name) : std::nullopt;
      if (!factors.has_value() || factors->coefficient < 1 ||
          product.coefficient > (int64_t{1} << 40) / factors->coefficient) {
        return std::nullopt;
      }
      product.coefficient *= factors->coefficient;
      product.factors.insert(product.factors.end(), factors->factors.begin(),
                             factors->factors.end());
    }
    result = DimProductName(std::move(product));
    return result->size() <= kMaxDimExprLength ? result : std::nullopt;
  }
  // The others take a dim and a constant: dim + c, c + dim, dim - c, dim / c.
  const bool dim_left = !a.known(i);
  if (dim_left == !b.known(j)) return std::nullopt;
  if (!dim_left && op != "Add") return std::nullopt;
  std::optional<std::string> name =
      dim_left ? DimOperand(a, i) : DimOperand(b, j);
  const int64_t c = dim_left ? b.ints[j] : a.ints[i];
  if (!name.has_value() || c > kMaxConstant || c < -kMaxConstant) {
    return std::nullopt;
  }
  if (op == "Add") {
    result = DimAffine(*name, c, 1);
  } else if (op == "Sub") {
    result = DimAffine(*name, -c, 1);
  } else if (op == "Div" && c > 0 && IsSizeName(*name)) {
    // C's truncation is the floor here: the dividend is a size.
    result = DimAffine(*name, 0, c);
  }
  if (result.has_value() && result->size() > kMaxDimExprLength) {
    return std::nullopt;
  }
  return result;
}

// Whether unknown element k of `v` is a size (IsSizeName).
bool IsSize(const FoldValue& v, int64_t k) { return IsSizeName(v.symbol(k)); }

std::optional<FoldValue> Arithmetic(const std::string& op,
                                    const std::vector<const FoldValue*>& ins,
                                    const onnx::NodeProto& node) {
  if (ins.size() != 2 || !SameTypes(ins)) return std::nullopt;
  const FoldValue& a = *ins[0];
  const FoldValue& b = *ins[1];
  const int32_t type = a.type;
  if (type == TensorProto::BOOL) return std::nullopt;
  const bool fmod = IntAttr(node, "fmod", 0) != 0;
  return Elementwise(ins, type, [&](const std::vector<int64_t>& at,
                                    FoldValue* out, int64_t k) {
    if (a.real()) {
      if (!a.known(at[0]) || !b.known(at[1])) return false;
      const double x = a.reals[at[0]], y = b.reals[at[1]];
      double r;
      if (op == "Add") r = x + y;
      else if (op == "Sub") r = x - y;
      else if (op == "Mul") r = x * y;
      else if (op == "Div") r = x / y;
      else if (op == "Pow") r = std::pow(x, y);
      else if (op == "Mod" && fmod) r = std::fmod(x, y);
      else return false;
      out->reals[k] = RoundReal(type, r);
      return true;
    }
    if (!a.known(at[0]) || !b.known(at[1])) {
      std::optional<std::string> name = DimArithmetic(op, a, at[0], b, at[1]);
      if (!name.has_value()) return false;
      MarkUnknown(out, k, *name);
      return true;
    }
    const int64_t x = a.ints[at[0]], y = b.ints[at[1]];
    const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    int64_t r;
    if (op == "Add") {
      r = static_cast<int64_t>(ux + uy);
    } else if (op == "Sub") {
      r = static_cast<int64_t>(ux - uy);
    } else if (op == "Mul") {
      r = static_cast<int64_t>(ux * uy);
    } else if (op == "Div" || op == "Mod") {
      if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1)) {
        return false;  // The kernel decides what that means.
      }
      if (op == "Div") {
        r = x / y;  // C's truncation, as the kernels and ONNX Runtime.
      } else {
        r = x % y;
        // Without fmod, the remainder takes the divisor's sign.
        if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
      }
    } else {
      return false;
    }
    out->ints[k] = Narrow(type, r);
    return true;
  });
}

std::optional<FoldValue> Compare(const std::string& op,
                                 const std::vector<const FoldValue*>& ins) {
  if (ins.size() != 2 || !SameTypes(ins)) return std::nullopt;
  const FoldValue& a = *ins[0];
  const FoldValue& b = *ins[1];
  return Elementwise(ins, TensorProto::BOOL, [&](const std::vector<int64_t>& at,
                                                 FoldValue* out, int64_t k) {
    // Integers compare exactly (no trip through double).
    int c;
    if (!a.known(at[0]) || !b.known(at[1])) {
      // A dim the fold does not know still compares with a negative
      // constant (the -1 of "keep this dim", as torch's expand(n, -1, -1)
      // writes it), and equals a dim of its own name.
      if (a.real()) return false;
      const bool ua = !a.known(at[0]), ub = !b.known(at[1]);
      if (ua && ub) {
        const std::optional<std::string> x = DimOperand(a, at[0]);
        if (!x.has_value() || x != DimOperand(b, at[1])) return false;
        c = 0;
      } else if (ua ? !IsSize(a, at[0]) || b.ints[at[1]] >= 0
                    : !IsSize(b, at[1]) || a.ints[at[0]] >= 0) {
        return false;
      } else {
        c = ua ? 1 : -1;
      }
    } else if (a.real()) {
      const double x = a.reals[at[0]], y = b.reals[at[1]];
      if (std::isnan(x) || std::isnan(y)) return false;
      c = x < y ? -1 : (x > y ? 1 : 0);
    } else {
      const int64_t x = a.ints[at[0]], y = b.ints[at[1]];
      c = x < y ? -1 : (x > y ? 1 : 0);
    }
    bool r;
    if (op == "Equal") r = c == 0;
    else if (op == "Less") r = c < 0;
    else if (op == "Greater") r = c > 0;
    else if (op == "LessOrEqual") r = c <= 0;
    else if (op == "GreaterOrEqual") r = c >= 0;
    else return false;
    out->ints[k] = r ? 1 : 0;
    return true;
  });
}

std::optional<FoldValue> Logic(const std::string& op,
                               const std::vector<const FoldValue*>& ins) {
  for (const FoldValue* v : ins) {
    if (v->type != TensorProto::BOOL) return std::nullopt;
  }
  if (op == "Not") {
    if (ins.size() != 1) return std::nullopt;
    FoldValue out = *ins[0];
    for (int64_t& x : out.ints) x = x ? 0 : 1;
    return out;
  }
  if (ins.size() != 2) return std::nullopt;
  return Elementwise(ins, TensorProto::BOOL, [&](const std::vector<int64_t>& at,
                                                 FoldValue* out, int64_t k) {
    const bool x = ins[0]->ints[at[0]] != 0, y = ins[1]->ints[at[1]] != 0;
    if (op == "And") out->ints[k] = x && y;
    else if (op == "Or") out->ints[k] = x || y;
    else if (op == "Xor") out->ints[k] = x != y;
    else return false;
    return true;
  });
}

std::optional<FoldValue> Unary(const std::string& op, const FoldValue& x) {
  if (x.type == TensorProto::BOOL) return std::nullopt;
  FoldValue out = x;
  for (int64_t k = 0; k < out.size(); ++k) {
    if (x.real()) {
      double v = x.reals[k];
      if (op == "Neg") v = -v;
      else if (op == "Abs") v = std::fabs(v);
      else if (op == "Floor") v = std::floor(v);
      else if (op == "Ceil") v = std::ceil(v);
      else if (op == "Sqrt") v = std::sqrt(v);
      else if (op == "Reciprocal") v = 1.0 / v;
      else return std::nullopt;
      out.reals[k] = RoundReal(x.type, v);
    } else {
      const int64_t v = x.ints[k];
      if (op == "Neg" || op == "Abs") {
        if (v == std::numeric_limits<int64_t>::min()) return std::nullopt;
        out.ints[k] = Narrow(x.type, op == "Neg" ? -v : (v < 0 ? -v : v));
      } else if (op != "Floor" && op != "Ceil") {
        return std::nullopt;
      }
    }
  }
  return out;
}

std::optional<FoldValue> Cast(const FoldValue& x, int32_t to) {
  if (!IsFoldableType(to)) return std::nullopt;
  FoldValue out = MakeValue(to, x.dims);
  out.unknown = x.unknown;
  // A dim is the same dim as an INT64 or INT32 (a dim beyond 2^31 holds no
  // tensor of this world); narrower types may wrap it.
  if ((to == TensorProto::INT64 || to == TensorProto::INT32) && !x.real()) {
    out.symbols = x.symbols;
  }
  for (int64_t k = 0; k < x.size(); ++k) {
    if (!x.known(k)) continue;
    if (out.real()) {
      out.reals[k] = RoundReal(to, x.AsReal(k));
    } else if (x.real()) {
      const double v = x.reals[k];
      if (to == TensorProto::BOOL) {
        out.ints[k] = v != 0.0 ? 1 : 0;
        continue;
      }
      // Out of int64's range the conversion is undefined: leave it to run
      // time.
      if (!std::isfinite(v) || v >= 9.2e18 || v <= -9.2e18) {
        return std::nullopt;
      }
      out.ints[k] = Narrow(to, static_cast<int64_t>(v));
    } else {
      out.ints[k] = Narrow(to, x.ints[k]);
    }
  }
  return out;
}

std::optional<FoldValue> Gather(const FoldValue& data, const FoldValue& indices,
                                int64_t axis_attr) {
  if (data.dims.empty() || indices.real() || !indices.complete() ||
      indices.type == TensorProto::BOOL) {
    return std::nullopt;
  }
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  std::optional<int64_t> axis = Axis(axis_attr, rank);
  if (!axis.has_value()) return std::nullopt;
  Dims out_dims(data.dims.begin(), data.dims.begin() + *axis);
  out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
  out_dims.insert(out_dims.end(), data.dims.begin() + *axis + 1,
                  data.dims.end());
  if (CountOf(out_dims) < 0) return std::nullopt;
  FoldValue out = MakeValue(data.type, out_dims);
  const int64_t n = data.dims[*axis];
  Dims idx, src;
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    src.assign(data.dims.size(), 0);
    for (int64_t d = 0; d < *axis; ++d) src[d] = idx[d];
    Dims ind(idx.begin() + *axis, idx.begin() + *axis + indices.dims.size());
    int64_t i = indices.ints[Linear(indices.dims, ind)];
    if (i < -n || i >= n) return std::nullopt;  // The kernel says so.
    src[*axis] = i < 0 ? i + n : i;
    for (int64_t d = *axis + 1; d < rank; ++d) {
      src[d] = idx[d - 1 + indices.dims.size()];
    }
    CopyElement(data, Linear(data.dims, src), &out, k);
  }
  return out;
}

std::optional<FoldValue> Slice(const FoldValue& data, const Dims& starts,
                               const Dims& ends, std::optional<Dims> axes,
                               std::optional<Dims> steps) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (starts.size() != ends.size()) return std::nullopt;
  if (!axes.has_value()) {
    axes = Dims();
    for (size_t k = 0; k < starts.size(); ++k) axes->push_back(k);
  }
  if (!steps.has_value()) steps = Dims(starts.size(), 1);
  if (axes->size() != starts.size() || steps->size() != starts.size()) {
    return std::nullopt;
  }
  Dims begin(rank, 0), step(rank, 1), out_dims = data.dims;
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    std::optional<int64_t> a = Axis((*axes)[k], rank);
    if (!a.has_value() || seen[*a] || (*steps)[k] == 0) return std::nullopt;
    seen[*a] = true;
    const int64_t dim = data.dims[*a];
    // A step beyond the dim takes one element at most: clamp it, so that
    // the arithmetic below cannot overflow (INT64_MIN has no negation).
    const int64_t st = std::clamp<int64_t>((*steps)[k], -(dim + 1), dim + 1);
    int64_t s = starts[k], e = ends[k];
    // ONNX's clamping (Slice-13); int64 extremes stand for "to the end".
    if (s < 0) s = s < -dim ? (st > 0 ? 0 : -1) : s + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t n = st > 0 ? (e - s + st - 1) / st : (s - e + (-st) - 1) / (-st);
    begin[*a] = s;
    step[*a] = st;
    out_dims[*a] = std::max<int64_t>(n, 0);
  }
  if (CountOf(out_dims) < 0) return std::nullopt;
  FoldValue out = MakeValue(data.type, out_dims);
  Dims idx, src(rank);
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    for (int64_t d = 0; d < rank; ++d) src[d] = begin[d] + idx[d] * step[d];
    CopyElement(data, Linear(data.dims, src), &out, k);
  }
  return out;
}

std::optional<FoldValue> Concat(const std::vector<const FoldValue*>& ins,
                                int64_t axis_attr) {
  if (ins.empty() || !SameTypes(ins)) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(ins[0]->dims.size());
  std::optional<int64_t> axis = Axis(axis_attr, rank);
  if (!axis.has_value()) return std::nullopt;
  Dims out_dims = ins[0]->dims;
  out_dims[*axis] = 0;
  for (const FoldValue* v : ins) {
    if (static_cast<int64_t>(v->dims.size()) != rank) return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != *axis && v->dims[d] != out_dims[d]) return std::nullopt;
    }
    out_dims[*axis] += v->dims[*axis];
  }
  if (CountOf(out_dims) < 0) return std::nullopt;
  FoldValue out = MakeValue(ins[0]->type, out_dims);
  Dims idx;
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    int64_t pos = idx[*axis];
    for (const FoldValue* v : ins) {
      if (pos < v->dims[*axis]) {
        Dims src = idx;
        src[*axis] = pos;
        CopyElement(*v, Linear(v->dims, src), &out, k);
        break;
      }
      pos -= v->dims[*axis];
    }
  }
  return out;
}

std::optional<FoldValue> Unsqueeze(const FoldValue& x, const Dims& axes) {
  const int64_t rank = static_cast<int64_t>(x.dims.size() + axes.size());
  if (rank > kMaxTensorRank) return std::nullopt;
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    std::optional<int64_t> ax = Axis(a, rank);
    if (!ax.has_value() || inserted[*ax]) return std::nullopt;
    inserted[*ax] = true;
  }
  Dims dims;
  size_t from = 0;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(inserted[d] ? 1 : x.dims[from++]);
  }
  return WithDims(x, dims);
}

std::optional<FoldValue> Squeeze(const FoldValue& x,
                                 const std::optional<Dims>& axes) {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::vector<bool> drop(rank, false);
  if (axes.has_value()) {
    for (int64_t a : *axes) {
      std::optional<int64_t> ax = Axis(a, rank);
      if (!ax.has_value() || x.dims[*ax] != 1) return std::nullopt;
      drop[*ax] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) drop[d] = x.dims[d] == 1;
  }
  Dims dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!drop[d]) dims.push_back(x.dims[d]);
  }
  return WithDims(x, dims);
}

std::optional<FoldValue> Reshape(const FoldValue& x, const Dims& shape,
                                 bool allow_zero) {
  Dims dims = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(d);
      continue;
    }
    if (dims[d] == 0 && !allow_zero) {
      if (d >= x.dims.size()) return std::nullopt;
      dims[d] = x.dims[d];
    }
    if (dims[d] < 0 || dims[d] > kMaxFoldDim) return std::nullopt;
    known *= dims[d];  // Both at most 2^31 here: no overflow.
    if (known > kMaxFoldElements) return std::nullopt;
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0) return std::nullopt;
    dims[infer] = x.size() / known;
  }
  if (CountOf(dims) != x.size()) return std::nullopt;
  return WithDims(x, dims);
}

std::optional<FoldValue> Expand(const FoldValue& x, const Dims& shape) {
  std::optional<Dims> dims = Broadcast({&x.dims, &shape});
  if (!dims.has_value() || CountOf(*dims) < 0) return std::nullopt;
  FoldValue out = MakeValue(x.type, *dims);
  for (int64_t k = 0; k < out.size(); ++k) {
    CopyElement(x, BroadcastIndex(out.dims, x.dims, k), &out, k);
  }
  return out;
}

std::optional<FoldValue> Tile(const FoldValue& x, const Dims& repeats) {
  if (repeats.size() != x.dims.size()) return std::nullopt;
  Dims dims = x.dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (repeats[d] < 0 || repeats[d] > kMaxFoldElements) return std::nullopt;
    dims[d] *= repeats[d];
    if (CountOf(dims) < 0) return std::nullopt;
  }
  FoldValue out = MakeValue(x.type, dims);
  Dims idx;
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] %= x.dims[d];
    CopyElement(x, Linear(x.dims, idx), &out, k);
  }
  return out;
}

std::optional<FoldValue> Transpose(const FoldValue& x,
                                   std::optional<Dims> perm) {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (!perm.has_value()) {
    perm = Dims();
    for (int64_t d = rank - 1; d >= 0; --d) perm->push_back(d);
  }
  if (static_cast<int64_t>(perm->size()) != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  Dims dims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t p = (*perm)[d];
    if (p < 0 || p >= rank || seen[p]) return std::nullopt;
    seen[p] = true;
    dims[d] = x.dims[p];
  }
  FoldValue out = MakeValue(x.type, dims);
  Dims idx, src(rank);
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    for (int64_t d = 0; d < rank; ++d) src[(*perm)[d]] = idx[d];
    CopyElement(x, Linear(x.dims, src), &out, k);
  }
  return out;
}

std::optional<FoldValue> Range(const FoldValue& start, const FoldValue& limit,
                               const FoldValue& delta) {
  if (!SameTypes({&start, &limit, &delta}) || start.size() != 1 ||
      limit.size() != 1 || delta.size() != 1 ||
      start.type == TensorProto::BOOL) {
    return std::nullopt;
  }
  int64_t n;
  if (start.real()) {
    const double s = start.reals[0], l = limit.reals[0], d = delta.reals[0];
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) ||
        !std::isfinite(d)) {
      return std::nullopt;
    }
    const double count = std::max(std::ceil((l - s) / d), 0.0);
    if (count > kMaxFoldElements) return std::nullopt;
    n = static_cast<int64_t>(count);
  } else {
    // Exactly, in 128 bits: int64 extremes must not wrap.
    const __int128 s = start.ints[0], l = limit.ints[0], d = delta.ints[0];
    if (d == 0) return std::nullopt;
    __int128 span = l - s;
    __int128 count = span / d;
    if (count * d != span && (span > 0) == (d > 0)) ++count;
    if (count < 0) count = 0;
    if (count > kMaxFoldElements) return std::nullopt;
    n = static_cast<int64_t>(count);
  }
  FoldValue out = MakeValue(start.type, {n});
  for (int64_t k = 0; k < out.size(); ++k) {
    if (out.real()) {
      out.reals[k] = RoundReal(out.type, start.reals[0] + k * delta.reals[0]);
    } else {
      out.ints[k] = Narrow(
          out.type, static_cast<int64_t>(
                        static_cast<uint64_t>(start.ints[0]) +
                        static_cast<uint64_t>(k) *
                            static_cast<uint64_t>(delta.ints[0])));
    }
  }
  return out;
}

std::optional<FoldValue> Reduce(const std::string& op, const FoldValue& x,
                                std::optional<Dims> axes, bool keep_dims,
                                bool noop_with_empty_axes) {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (x.type == TensorProto::BOOL) return std::nullopt;
  if (!axes.has_value() || axes->empty()) {
    if (noop_with_empty_axes) return x;
    axes = Dims();
    for (int64_t d = 0; d < rank; ++d) axes->push_back(d);
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t a : *axes) {
    std::optional<int64_t> ax = Axis(a, rank);
    if (!ax.has_value()) return std::nullopt;
    reduced[*ax] = true;
  }
  Dims kept_dims, out_dims;
  for (int64_t d = 0; d < rank; ++d) {
    kept_dims.push_back(reduced[d] ? 1 : x.dims[d]);
    if (!reduced[d]) out_dims.push_back(x.dims[d]);
    if (reduced[d] && x.dims[d] == 0 &&
        (op == "ReduceMax" || op == "ReduceMin")) {
      return std::nullopt;
    }
  }
  FoldValue out = MakeValue(x.type, kept_dims);
  std::vector<bool> started(out.size(), false);
  Dims idx;
  for (int64_t k = 0; k < out.size(); ++k) {
    if (out.real()) {
      out.reals[k] = op == "ReduceProd" ? 1.0 : 0.0;
    } else {
      out.ints[k] = op == "ReduceProd" ? 1 : 0;
    }
  }
  for (int64_t k = 0; k < x.size(); ++k) {
    Unravel(x.dims, k, &idx);
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d]) idx[d] = 0;
    }
    const int64_t o = Linear(kept_dims, idx);
    const bool first = !started[o];
    started[o] = true;
    if (x.real()) {
      double& r = out.reals[o];
      const double v = x.reals[k];
      if (op == "ReduceSum") r += v;
      else if (op == "ReduceProd") r *= v;
      else if (op == "ReduceMax") r = first ? v : std::max(r, v);
      else if (op == "ReduceMin") r = first ? v : std::min(r, v);
      else return std::nullopt;
    } else {
      int64_t& r = out.ints[o];
      const int64_t v = x.ints[k];
      if (op == "ReduceSum") {
        r = static_cast<int64_t>(static_cast<uint64_t>(r) + v);
      } else if (op == "ReduceProd") {
        r = static_cast<int64_t>(static_cast<uint64_t>(r) * v);
      } else if (op == "ReduceMax") {
        r = first ? v : std::max(r, v);
      } else if (op == "ReduceMin") {
        r = first ? v : std::min(r, v);
      } else {
        return std::nullopt;
      }
    }
  }
  for (int64_t k = 0; k < out.size(); ++k) {
    if (out.real()) {
      out.reals[k] = RoundReal(out.type, out.reals[k]);
    } else {
      out.ints[k] = Narrow(out.type, out.ints[k]);
    }
  }
  if (!keep_dims) out.dims = out_dims;
  return out;
}

// --- The dispatch: one function per op family -----------------------------

// What an op family's function reads: the node, its operands (one per
// input, null where absent) and the model's opset.
struct OpArgs {
  const onnx::NodeProto& node;
  const std::vector<const FoldValue*>& ins;
  int64_t opset;

  const std::string& op() const { return node.op_type(); }
  // Whether operands 0..n-1 are all given.
  bool all(size_t n) const {
    return ins.size() >= n &&
           std::none_of(ins.begin(), ins.begin() + n,
                        [](const FoldValue* v) { return v == nullptr; });
  }
  bool present(int k) const {
    return node.input_size() > k && !node.input(k).empty();
  }
};

// Operand `input` as an integer list (axes), or the `axes` attribute of
// the older opset where the node has no such operand; nullopt where
// neither is known. `*present`: whether the node gives axes either way.
std::optional<Dims> AxesOperand(const OpArgs& a, int input, bool* present) {
  *present = a.present(input);
  if (!*present) {
    std::optional<Dims> attr = IntsAttr(a.node, "axes");
    *present = attr.has_value();
    return attr;
  }
  return IntegerList(a.ins[input]);
}

std::optional<FoldValue> FoldIdentity(const OpArgs& a) {
  return a.all(1) ? std::optional<FoldValue>(*a.ins[0]) : std::nullopt;
}

std::optional<FoldValue> FoldArithmetic(const OpArgs& a) {
  if (!a.all(2) || a.ins.size() != 2) return std::nullopt;
  if (a.op() == "Pow" &&
      (!a.ins[0]->real() || a.ins[0]->type != a.ins[1]->type)) {
    return std::nullopt;
  }
  return Arithmetic(a.op(), a.ins, a.node);
}

std::optional<FoldValue> FoldCompare(const OpArgs& a) {
  return a.all(2) ? Compare(a.op(), a.ins) : std::nullopt;
}

std::optional<FoldValue> FoldLogic(const OpArgs& a) {
  return a.all(a.ins.size()) ? Logic(a.op(), a.ins) : std::nullopt;
}

std::optional<FoldValue> FoldUnary(const OpArgs& a) {
  return a.all(1) ? Unary(a.op(), *a.ins[0]) : std::nullopt;
}

std::optional<FoldValue> FoldMaxMin(const OpArgs& a) {
  const std::vector<const FoldValue*>& ins = a.ins;
  if (ins.empty() || !a.all(ins.size()) || !SameTypes(ins) ||
      ins[0]->type == TensorProto::BOOL) {
    return std::nullopt;
  }
  const bool max = a.op() == "Max";
  return Elementwise(ins, ins[0]->type, [&](const std::vector<int64_t>& at,
                                            FoldValue* out, int64_t k) {
    for (size_t i = 0; i < ins.size(); ++i) {
      if (out->real()) {
        const double v = ins[i]->reals[at[i]];
        if (std::isnan(v)) return false;
        if (i == 0 || (max ? v > out->reals[k] : v < out->reals[k])) {
          out->reals[k] = v;
        }
      } else {
        const int64_t v = ins[i]->ints[at[i]];
        if (i == 0 || (max ? v > out->ints[k] : v < out->ints[k])) {
          out->ints[k] = v;
        }
      }
    }
    return true;
  });
}

std::optional<FoldValue> FoldWhere(const OpArgs& a) {
  const std::vector<const FoldValue*>& ins = a.ins;
  if (!a.all(3) || ins[0]->type != TensorProto::BOOL || !ins[0]->complete() ||
      ins[1]->type != ins[2]->type) {
    return std::nullopt;
  }
  return Elementwise(ins, ins[1]->type, [&](const std::vector<int64_t>& at,
                                            FoldValue* out, int64_t k) {
    const FoldValue* pick = ins[0]->ints[at[0]] ? ins[1] : ins[2];
    CopyElement(*pick, at[ins[0]->ints[at[0]] ? 1 : 2], out, k);
    return true;
  });
}

std::optional<FoldValue> FoldCast(const OpArgs& a) {
  if (!a.all(1)) return std::nullopt;
  return Cast(*a.ins[0], static_cast<int32_t>(IntAttr(a.node, "to", 0)));
}

std::optional<FoldValue> FoldGather(const OpArgs& a) {
  if (!a.all(2) || a.ins[1]->real()) return std::nullopt;
  return Gather(*a.ins[0], *a.ins[1], IntAttr(a.node, "axis", 0));
}

std::optional<FoldValue> FoldSlice(const OpArgs& a) {
  if (!a.all(1)) return std::nullopt;
  if (a.opset < 10) {
    std::optional<Dims> starts = IntsAttr(a.node, "starts");
    std::optional<Dims> ends = IntsAttr(a.node, "ends");
    if (!starts.has_value() || !ends.has_value()) return std::nullopt;
    return Slice(*a.ins[0], *starts, *ends, IntsAttr(a.node, "axes"),
                 std::nullopt);
  }
  std::optional<Dims> starts =
      IntegerList(a.ins.size() > 1 ? a.ins[1] : nullptr);
  std::optional<Dims> ends = IntegerList(a.ins.size() > 2 ? a.ins[2] : nullptr);
  if (!starts.has_value() || !ends.has_value()) return std::nullopt;
  std::optional<Dims> axes, steps;
  if (a.present(3)) axes = IntegerList(a.ins[3]);
  if (a.present(4)) steps = IntegerList(a.ins[4]);
  return Slice(*a.ins[0], *starts, *ends, axes, steps);
}

std::optional<FoldValue> FoldConcat(const OpArgs& a) {
  return a.all(a.ins.size()) ? Concat(a.ins, IntAttr(a.node, "axis", 0))
                             : std::nullopt;
}

std::optional<FoldValue> FoldUnsqueezeOrSqueeze(const OpArgs& a) {
  if (!a.all(1)) return std::nullopt;
  bool has_axes = false;
  std::optional<Dims> axes = AxesOperand(a, 1, &has_axes);
  if (has_axes && !axes.has_value()) return std::nullopt;
  if (a.op() == "Unsqueeze") {
    return axes.has_value() ? Unsqueeze(*a.ins[0], *axes) : std::nullopt;
  }
  return Squeeze(*a.ins[0], axes);
}

std::optional<FoldValue> FoldReshape(const OpArgs& a) {
  if (!a.all(2)) return std::nullopt;
  std::optional<Dims> shape = IntegerList(a.ins[1]);
  if (!shape.has_value()) return std::nullopt;
  return Reshape(*a.ins[0], *shape, IntAttr(a.node, "allowzero", 0) != 0);
}

std::optional<FoldValue> FoldExpandOrTile(const OpArgs& a) {
  if (!a.all(2)) return std::nullopt;
  std::optional<Dims> shape = IntegerList(a.ins[1]);
  if (!shape.has_value()) return std::nullopt;
  return a.op() == "Expand" ? Expand(*a.ins[0], *shape)
                            : Tile(*a.ins[0], *shape);
}

std::optional<FoldValue> FoldTranspose(const OpArgs& a) {
  return a.all(1) ? Transpose(*a.ins[0], IntsAttr(a.node, "perm"))
                  : std::nullopt;
}

std::optional<FoldValue> FoldConstantOfShape(const OpArgs& a) {
  if (!a.all(1)) return std::nullopt;
  std::optional<Dims> shape = IntegerList(a.ins[0]);
  if (!shape.has_value() || CountOf(*shape) < 0) return std::nullopt;
  FoldValue fill = MakeValue(TensorProto::FLOAT, {1});
  if (const onnx::AttributeProto* attr = Attr(a.node, "value");
      attr != nullptr) {
    std::optional<FoldValue> v = attr->type() == onnx::AttributeProto::TENSOR
                                     ? ValueFromProto(attr->t())
                                     : std::nullopt;
    if (!v.has_value() || v->size() != 1) return std::nullopt;
    fill = *v;
  }
  return Expand(WithDims(fill, {}), *shape);
}

std::optional<FoldValue> FoldRange(const OpArgs& a) {
  return a.all(3) ? Range(*a.ins[0], *a.ins[1], *a.ins[2]) : std::nullopt;
}

std::optional<FoldValue> FoldReduce(const OpArgs& a) {
  if (!a.all(1)) return std::nullopt;
  // Axes moved from an attribute to input 1 at opset 13 (ReduceSum) and
  // 18 (the others); AxesOperand reads whichever the node has.
  bool has_axes = false;
  std::optional<Dims> axes = AxesOperand(a, 1, &has_axes);
  if (has_axes && !axes.has_value()) return std::nullopt;
  return Reduce(a.op(), *a.ins[0], axes,
                IntAttr(a.node, "keepdims", 1) != 0,
                IntAttr(a.node, "noop_with_empty_axes", 0) != 0);
}

struct OpEntry {
  std::optional<FoldValue> (*fold)(const OpArgs&);
  // Takes operands with unknown elements: the ops that move elements
  // without computing on them carry them, Where picks them, integer
  // arithmetic names them (DimArithmetic) and comparisons decide what they
  // can of them; every other op folds only complete operands.
  bool takes_unknown;
};

// The ops Glint folds, by op type.
const absl::flat_hash_map<std::string, OpEntry>& OpTable() {
  static const auto* const kTable = [] {
    auto* t = new absl::flat_hash_map<std::string, OpEntry>;
    auto add = [t](std::initializer_list<const char*> ops,
                   std::optional<FoldValue> (*fold)(const OpArgs&),
                   bool takes_unknown) {
      for (const char* op : ops) (*t)[op] = OpEntry{fold, takes_unknown};
    };
    add({"Identity"}, FoldIdentity, true);
    add({"Add", "Sub", "Mul", "Div", "Mod", "Pow"}, FoldArithmetic, true);
    add({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"},
        FoldCompare, true);
    add({"Not", "And", "Or", "Xor"}, FoldLogic, false);
    add({"Neg", "Abs", "Floor", "Ceil", "Sqrt", "Reciprocal"}, FoldUnary,
        false);
    add({"Max", "Min"}, FoldMaxMin, false);
    add({"Where"}, FoldWhere, true);
    add({"Cast"}, FoldCast, true);
    add({"Gather"}, FoldGather, true);
    add({"Slice"}, FoldSlice, true);
    add({"Concat"}, FoldConcat, true);
    add({"Unsqueeze", "Squeeze"}, FoldUnsqueezeOrSqueeze, true);
    add({"Reshape"}, FoldReshape, true);
    add({"Expand", "Tile"}, FoldExpandOrTile, true);
    add({"Transpose"}, FoldTranspose, true);
    add({"ConstantOfShape"}, FoldConstantOfShape, false);
    add({"Range"}, FoldRange, false);
    add({"ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin"}, FoldReduce,
        false);
    return t;
  }();
  return *kTable;
}

}  // namespace

std::optional<FoldValue> FoldOp(const onnx::NodeProto& node,
                                const std::vector<const FoldValue*>& inputs,
                                int64_t opset) {
  if (static_cast<int>(inputs.size()) != node.input_size()) {
    return std::nullopt;
  }
  // An operand that is present must be known.
  for (int k = 0; k < node.input_size(); ++k) {
    if (!node.input(k).empty() && inputs[k] == nullptr) return std::nullopt;
  }
  const absl::flat_hash_map<std::string, OpEntry>& table = OpTable();
  auto it = table.find(node.op_type());
  if (it == table.end()) return std::nullopt;
  // Only some ops take unknown elements (OpEntry::takes_unknown).
  if (!it->second.takes_unknown) {
    for (const FoldValue* v : inputs) {
      if (v != nullptr && !v->complete()) return std::nullopt;
    }
  }
  return it->second.fold(OpArgs{node, inputs, opset});
}

}  // namespace glint::onnx_internal
