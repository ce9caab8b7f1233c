#include "onnx/shape_folding.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "core/graph.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "onnx/import_util.h"
#include "onnx/onnx_tensor.h"

namespace glint::onnx_internal {
namespace {

using Dims = std::vector<int64_t>;
using onnx::TensorProto;

bool IsReal(int32_t type) {
  return type == TensorProto::FLOAT || type == TensorProto::DOUBLE;
}

bool IsIntegral(int32_t type) {
  switch (type) {
    case TensorProto::INT64:
    case TensorProto::INT32:
    case TensorProto::INT16:
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::UINT16:
    case TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

bool IsFoldableType(int32_t type) { return IsReal(type) || IsIntegral(type); }

// Elements of `dims`; -1 over kMaxFoldElements or for a negative dim.
int64_t CountOf(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxFoldElements / d)) return -1;
    n *= d;
  }
  return n <= kMaxFoldElements ? n : -1;
}

// A small tensor the fold knows the contents of. Integer and bool elements
// live in `ints`, float and double ones in `reals` (rounded to the element
// type after every operation).
struct Value {
  int32_t type = 0;
  Dims dims;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  // Elements not known at import (a Shape's dims that depend on run-time
  // data); empty when every element is known. Only ops that move elements
  // (Gather, Slice, Concat, Unsqueeze...) carry them: x.shape[1] of an
  // [N, 1] value is known although N is not.
  std::vector<bool> unknown;

  bool complete() const {
    return std::find(unknown.begin(), unknown.end(), true) == unknown.end();
  }
  bool known(int64_t k) const { return unknown.empty() || !unknown[k]; }
  bool real() const { return IsReal(type); }
  int64_t size() const {
    return static_cast<int64_t>(real() ? reals.size() : ints.size());
  }
  double AsReal(int64_t k) const {
    return real() ? reals[k] : static_cast<double>(ints[k]);
  }
};

// An integer as an element of `type` holds it (two's complement wrap, as
// the kernels compute); bools are 0 or 1.
int64_t Narrow(int32_t type, int64_t v) {
  switch (type) {
    case TensorProto::INT32: return static_cast<int32_t>(v);
    case TensorProto::INT16: return static_cast<int16_t>(v);
    case TensorProto::INT8: return static_cast<int8_t>(v);
    case TensorProto::UINT8: return static_cast<uint8_t>(v);
    case TensorProto::UINT16: return static_cast<uint16_t>(v);
    case TensorProto::BOOL: return v != 0 ? 1 : 0;
    default: return v;
  }
}

double RoundReal(int32_t type, double v) {
  return type == TensorProto::FLOAT ? static_cast<double>(static_cast<float>(v))
                                    : v;
}

Value MakeValue(int32_t type, Dims dims) {
  Value v;
  v.type = type;
  v.dims = std::move(dims);
  const int64_t n = std::max<int64_t>(CountOf(v.dims), 0);
  if (v.real()) {
    v.reals.assign(n, 0.0);
  } else {
    v.ints.assign(n, 0);
  }
  return v;
}

Value Int64Vector(const Dims& values) {
  Value v = MakeValue(TensorProto::INT64, {static_cast<int64_t>(values.size())});
  v.ints = values;
  return v;
}

// Reads a TensorProto of at most kMaxFoldElements foldable elements.
std::optional<Value> ValueFromProto(const TensorProto& proto) {
  if (!IsFoldableType(proto.data_type())) return std::nullopt;
  Dims dims(proto.dims().begin(), proto.dims().end());
  if (CountOf(dims) < 0 ||
      proto.data_location() == TensorProto::EXTERNAL) {
    return std::nullopt;
  }
  absl::StatusOr<Tensor> t = TensorFromOnnxProto(proto);
  if (!t.ok()) return std::nullopt;
  Value v = MakeValue(proto.data_type(), dims);
  const int64_t n = v.size();
  for (int64_t k = 0; k < n; ++k) {
    switch (proto.data_type()) {
      case TensorProto::FLOAT: v.reals[k] = t->data<float>()[k]; break;
      case TensorProto::DOUBLE: v.reals[k] = t->data<double>()[k]; break;
      case TensorProto::INT64: v.ints[k] = t->data<int64_t>()[k]; break;
      case TensorProto::INT32: v.ints[k] = t->data<int32_t>()[k]; break;
      case TensorProto::INT16: v.ints[k] = t->data<int16_t>()[k]; break;
      case TensorProto::INT8: v.ints[k] = t->data<int8_t>()[k]; break;
      case TensorProto::UINT8: v.ints[k] = t->data<uint8_t>()[k]; break;
      case TensorProto::UINT16: v.ints[k] = t->data<uint16_t>()[k]; break;
      case TensorProto::BOOL: v.ints[k] = t->data<bool>()[k] ? 1 : 0; break;
      default: return std::nullopt;
    }
  }
  return v;
}

TensorProto ValueToProto(const Value& v) {
  TensorProto proto;
  proto.set_data_type(v.type);
  for (int64_t d : v.dims) proto.add_dims(d);
  for (int64_t k = 0; k < v.size(); ++k) {
    switch (v.type) {
      case TensorProto::FLOAT:
        proto.add_float_data(static_cast<float>(v.reals[k]));
        break;
      case TensorProto::DOUBLE: proto.add_double_data(v.reals[k]); break;
      case TensorProto::INT64: proto.add_int64_data(v.ints[k]); break;
      default:  // The narrower integers and bool travel in int32_data.
        proto.add_int32_data(static_cast<int32_t>(v.ints[k]));
        break;
    }
  }
  return proto;
}

const onnx::AttributeProto* Attr(const onnx::NodeProto& node,
                                 absl::string_view name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t IntAttr(const onnx::NodeProto& node, absl::string_view name,
                int64_t fallback) {
  const onnx::AttributeProto* a = Attr(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::INT ? a->i()
                                                                : fallback;
}

std::optional<Dims> IntsAttr(const onnx::NodeProto& node,
                             absl::string_view name) {
  const onnx::AttributeProto* a = Attr(node, name);
  if (a == nullptr || a->type() != onnx::AttributeProto::INTS) {
    return std::nullopt;
  }
  return Dims(a->ints().begin(), a->ints().end());
}

// The value of a Constant node, if it is small and of a foldable type.
std::optional<Value> ConstantNodeValue(const onnx::NodeProto& node) {
  if (node.attribute_size() != 1) return std::nullopt;
  const onnx::AttributeProto& a = node.attribute(0);
  if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) {
    return ValueFromProto(a.t());
  }
  if (a.name() == "value_int" && a.type() == onnx::AttributeProto::INT) {
    Value v = MakeValue(TensorProto::INT64, {});
    v.ints[0] = a.i();
    return v;
  }
  if (a.name() == "value_ints" && a.type() == onnx::AttributeProto::INTS &&
      a.ints_size() <= kMaxFoldElements) {
    return Int64Vector(Dims(a.ints().begin(), a.ints().end()));
  }
  if (a.name() == "value_float" && a.type() == onnx::AttributeProto::FLOAT) {
    Value v = MakeValue(TensorProto::FLOAT, {});
    v.reals[0] = a.f();
    return v;
  }
  if (a.name() == "value_floats" && a.type() == onnx::AttributeProto::FLOATS &&
      a.floats_size() <= kMaxFoldElements) {
    Value v = MakeValue(TensorProto::FLOAT, {a.floats_size()});
    for (int k = 0; k < a.floats_size(); ++k) v.reals[k] = a.floats(k);
    return v;
  }
  return std::nullopt;
}

// What one graph knows, with its enclosing graphs' knowledge behind it.
class Scope {
 public:
  Scope(const onnx::GraphProto& graph, const Scope* parent, bool iterates)
      : parent_(parent), types_(IndexTypes(graph)) {
    for (const TensorProto& init : graph.initializer()) {
      defined_.insert(init.name());
      initializers_[init.name()] = &init;
    }
    for (const onnx::ValueInfoProto& in : graph.input()) {
      defined_.insert(in.name());
      // A Loop or Scan body's inputs change from one iteration to the
      // next: their declared shapes are the first iteration's at best.
      if (iterates && initializers_.count(in.name()) == 0) {
        variant_.insert(in.name());
      }
    }
    for (const onnx::NodeProto& node : graph.node()) {
      for (const std::string& out : node.output()) defined_.insert(out);
    }
  }

  const Value* Find(const std::string& name) const {
    if (name.empty()) return nullptr;
    if (auto it = known_.find(name); it != known_.end()) return &it->second;
    if (auto it = initializers_.find(name); it != initializers_.end()) {
      std::optional<Value> v = ValueFromProto(*it->second);
      if (!v.has_value()) return nullptr;
      return &(known_[name] = *std::move(v));
    }
    if (defined_.contains(name)) return nullptr;
    return parent_ != nullptr ? parent_->Find(name) : nullptr;
  }

  // The shape of `name` where its rank is known and cannot change: each
  // dim fixed, or -1 where it depends on run-time data.
  std::optional<Dims> ShapeOf(const std::string& name) const {
    if (name.empty() || variant_.contains(name)) return std::nullopt;
    if (auto it = known_.find(name); it != known_.end()) return it->second.dims;
    if (auto it = initializers_.find(name); it != initializers_.end()) {
      return Dims(it->second->dims().begin(), it->second->dims().end());
    }
    if (auto it = types_.find(name); it != types_.end()) {
      const onnx::TypeProto& type = *it->second;
      if (!type.has_tensor_type() || !type.tensor_type().has_shape()) {
        return std::nullopt;
      }
      Dims dims;
      for (const auto& d : type.tensor_type().shape().dim()) {
        dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value()
                                                               : -1);
      }
      return dims;
    }
    if (defined_.contains(name)) return std::nullopt;
    return parent_ != nullptr ? parent_->ShapeOf(name) : std::nullopt;
  }

  void Learn(const std::string& name, Value v) { known_[name] = std::move(v); }
  // `name` is computed from a value whose shape may vary per iteration.
  void MarkVariant(const std::string& name) { variant_.insert(name); }
  bool IsVariant(const std::string& name) const {
    if (variant_.contains(name)) return true;
    if (defined_.contains(name)) return false;
    return parent_ != nullptr && parent_->IsVariant(name);
  }

 private:
  const Scope* parent_;
  TypeIndex types_;
  absl::flat_hash_map<std::string, const TensorProto*> initializers_;
  absl::flat_hash_set<std::string> defined_;
  absl::flat_hash_set<std::string> variant_;
  // Values read from initializers are cached here on first use.
  mutable absl::flat_hash_map<std::string, Value> known_;
};

// Numpy-style broadcast of `shapes`; nullopt where they do not broadcast.
std::optional<Dims> Broadcast(const std::vector<const Dims*>& shapes) {
  size_t rank = 0;
  for (const Dims* s : shapes) rank = std::max(rank, s->size());
  Dims out(rank, 1);
  for (const Dims* s : shapes) {
    const size_t off = rank - s->size();
    for (size_t k = 0; k < s->size(); ++k) {
      const int64_t d = (*s)[k];
      int64_t& o = out[off + k];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  }
  return out;
}

// The linear index into an input of shape `in` (broadcast to `out`) of the
// output element at linear index `k`.
int64_t BroadcastIndex(const Dims& out, const Dims& in, int64_t k) {
  int64_t index = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int64_t pos = k % out[d];
    k /= out[d];
    const int in_d = d - static_cast<int>(out.size() - in.size());
    if (in_d < 0) continue;
    if (in[in_d] != 1) index += pos * stride;
    stride *= in[in_d];
  }
  return index;
}

// Elementwise over broadcast inputs; `fn` gets the inputs' element indices
// and writes output element k, returning false to refuse the fold.
template <typename Fn>
std::optional<Value> Elementwise(const std::vector<const Value*>& ins,
                                 int32_t out_type, Fn fn) {
  std::vector<const Dims*> shapes;
  for (const Value* v : ins) shapes.push_back(&v->dims);
  std::optional<Dims> dims = Broadcast(shapes);
  if (!dims.has_value() || CountOf(*dims) < 0) return std::nullopt;
  Value out = MakeValue(out_type, *dims);
  std::vector<int64_t> at(ins.size());
  for (int64_t k = 0; k < out.size(); ++k) {
    for (size_t i = 0; i < ins.size(); ++i) {
      at[i] = BroadcastIndex(out.dims, ins[i]->dims, k);
    }
    if (!fn(at, &out, k)) return std::nullopt;
  }
  return out;
}

bool SameTypes(const std::vector<const Value*>& ins) {
  for (const Value* v : ins) {
    if (v->type != ins[0]->type) return false;
  }
  return true;
}

std::optional<Value> Arithmetic(const std::string& op,
                                const std::vector<const Value*>& ins,
                                const onnx::NodeProto& node) {
  if (ins.size() != 2 || !SameTypes(ins)) return std::nullopt;
  const Value& a = *ins[0];
  const Value& b = *ins[1];
  const int32_t type = a.type;
  if (type == TensorProto::BOOL) return std::nullopt;
  const bool fmod = IntAttr(node, "fmod", 0) != 0;
  return Elementwise(ins, type, [&](const std::vector<int64_t>& at,
                                    Value* out, int64_t k) {
    if (a.real()) {
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

std::optional<Value> Compare(const std::string& op,
                             const std::vector<const Value*>& ins) {
  if (ins.size() != 2 || !SameTypes(ins)) return std::nullopt;
  const Value& a = *ins[0];
  const Value& b = *ins[1];
  return Elementwise(ins, TensorProto::BOOL, [&](const std::vector<int64_t>& at,
                                                 Value* out, int64_t k) {
    // Integers compare exactly (no trip through double).
    int c;
    if (a.real()) {
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

std::optional<Value> Logic(const std::string& op,
                           const std::vector<const Value*>& ins) {
  for (const Value* v : ins) {
    if (v->type != TensorProto::BOOL) return std::nullopt;
  }
  if (op == "Not") {
    if (ins.size() != 1) return std::nullopt;
    Value out = *ins[0];
    for (int64_t& x : out.ints) x = x ? 0 : 1;
    return out;
  }
  if (ins.size() != 2) return std::nullopt;
  return Elementwise(ins, TensorProto::BOOL, [&](const std::vector<int64_t>& at,
                                                 Value* out, int64_t k) {
    const bool x = ins[0]->ints[at[0]] != 0, y = ins[1]->ints[at[1]] != 0;
    if (op == "And") out->ints[k] = x && y;
    else if (op == "Or") out->ints[k] = x || y;
    else if (op == "Xor") out->ints[k] = x != y;
    else return false;
    return true;
  });
}

std::optional<Value> Unary(const std::string& op, const Value& x) {
  if (x.type == TensorProto::BOOL) return std::nullopt;
  Value out = x;
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

std::optional<Value> Cast(const Value& x, int32_t to) {
  if (!IsFoldableType(to)) return std::nullopt;
  Value out = MakeValue(to, x.dims);
  out.unknown = x.unknown;
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

// Normalises `axis` against `rank`; nullopt when out of range.
std::optional<int64_t> Axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

// The element of `v` at multi-index `idx`.
int64_t Linear(const Dims& dims, const Dims& idx) {
  int64_t k = 0;
  for (size_t d = 0; d < dims.size(); ++d) k = k * dims[d] + idx[d];
  return k;
}

void Unravel(const Dims& dims, int64_t k, Dims* idx) {
  idx->resize(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    (*idx)[d] = dims[d] == 0 ? 0 : k % dims[d];
    k = dims[d] == 0 ? 0 : k / dims[d];
  }
}

// Copies element `from` of `src` to element `to` of `dst` (same type).
void CopyElement(const Value& src, int64_t from, Value* dst, int64_t to) {
  if (!src.known(from)) {
    if (dst->unknown.empty()) dst->unknown.assign(dst->size(), false);
    dst->unknown[to] = true;
  }
  if (src.real()) {
    dst->reals[to] = src.reals[from];
  } else {
    dst->ints[to] = src.ints[from];
  }
}

std::optional<Value> Gather(const Value& data, const Value& indices,
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
  Value out = MakeValue(data.type, out_dims);
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

std::optional<Dims> IntegerList(const Value* v) {
  if (v == nullptr || v->real() || v->dims.size() > 1 || !v->complete()) {
    return std::nullopt;
  }
  return v->ints;
}

std::optional<Value> Slice(const Value& data, const Dims& starts,
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
    const int64_t st = (*steps)[k];
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
  Value out = MakeValue(data.type, out_dims);
  Dims idx, src(rank);
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    for (int64_t d = 0; d < rank; ++d) src[d] = begin[d] + idx[d] * step[d];
    CopyElement(data, Linear(data.dims, src), &out, k);
  }
  return out;
}

std::optional<Value> Concat(const std::vector<const Value*>& ins,
                            int64_t axis_attr) {
  if (ins.empty() || !SameTypes(ins)) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(ins[0]->dims.size());
  std::optional<int64_t> axis = Axis(axis_attr, rank);
  if (!axis.has_value()) return std::nullopt;
  Dims out_dims = ins[0]->dims;
  out_dims[*axis] = 0;
  for (const Value* v : ins) {
    if (static_cast<int64_t>(v->dims.size()) != rank) return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != *axis && v->dims[d] != out_dims[d]) return std::nullopt;
    }
    out_dims[*axis] += v->dims[*axis];
  }
  if (CountOf(out_dims) < 0) return std::nullopt;
  Value out = MakeValue(ins[0]->type, out_dims);
  Dims idx;
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    int64_t pos = idx[*axis];
    for (const Value* v : ins) {
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

// The same elements under `dims`.
Value WithDims(Value v, Dims dims) {
  v.dims = std::move(dims);
  return v;
}

std::optional<Value> Unsqueeze(const Value& x, const Dims& axes) {
  const int64_t rank = static_cast<int64_t>(x.dims.size() + axes.size());
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

std::optional<Value> Squeeze(const Value& x, const std::optional<Dims>& axes) {
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

std::optional<Value> Reshape(const Value& x, const Dims& shape,
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
    if (dims[d] < 0) return std::nullopt;
    known *= dims[d];
    if (known > kMaxFoldElements) return std::nullopt;
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0) return std::nullopt;
    dims[infer] = x.size() / known;
  }
  if (CountOf(dims) != x.size()) return std::nullopt;
  return WithDims(x, dims);
}

std::optional<Value> Expand(const Value& x, const Dims& shape) {
  std::optional<Dims> dims = Broadcast({&x.dims, &shape});
  if (!dims.has_value() || CountOf(*dims) < 0) return std::nullopt;
  Value out = MakeValue(x.type, *dims);
  for (int64_t k = 0; k < out.size(); ++k) {
    CopyElement(x, BroadcastIndex(out.dims, x.dims, k), &out, k);
  }
  return out;
}

std::optional<Value> Tile(const Value& x, const Dims& repeats) {
  if (repeats.size() != x.dims.size()) return std::nullopt;
  Dims dims = x.dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (repeats[d] < 0) return std::nullopt;
    dims[d] *= repeats[d];
    if (CountOf(dims) < 0) return std::nullopt;
  }
  Value out = MakeValue(x.type, dims);
  Dims idx;
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] %= x.dims[d];
    CopyElement(x, Linear(x.dims, idx), &out, k);
  }
  return out;
}

std::optional<Value> Transpose(const Value& x, std::optional<Dims> perm) {
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
  Value out = MakeValue(x.type, dims);
  Dims idx, src(rank);
  for (int64_t k = 0; k < out.size(); ++k) {
    Unravel(out.dims, k, &idx);
    for (int64_t d = 0; d < rank; ++d) src[(*perm)[d]] = idx[d];
    CopyElement(x, Linear(x.dims, src), &out, k);
  }
  return out;
}

std::optional<Value> Range(const Value& start, const Value& limit,
                           const Value& delta) {
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
  Value out = MakeValue(start.type, {n});
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

std::optional<Value> Reduce(const std::string& op, const Value& x,
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
    if (reduced[d] && x.dims[d] == 0 && (op == "ReduceMax" || op == "ReduceMin")) {
      return std::nullopt;
    }
  }
  Value out = MakeValue(x.type, kept_dims);
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

// Inputs 1.. of `node` as an integer list (axes, shape, repeats...), or
// the attribute of the older opset; nullopt where neither is known.
std::optional<Dims> AxesOperand(const onnx::NodeProto& node, int input,
                                Scope* scope, bool* present) {
  *present = node.input_size() > input && !node.input(input).empty();
  if (!*present) {
    std::optional<Dims> attr = IntsAttr(node, "axes");
    *present = attr.has_value();
    return attr;
  }
  return IntegerList(scope->Find(node.input(input)));
}

bool IsReduce(const std::string& op) {
  return op == "ReduceSum" || op == "ReduceProd" || op == "ReduceMax" ||
         op == "ReduceMin";
}

// The value `node` computes, where Glint can fold it.
std::optional<Value> Evaluate(const onnx::NodeProto& node, Scope* scope,
                              int64_t opset) {
  const std::string& op = node.op_type();
  if (node.output_size() != 1 || node.output(0).empty()) return std::nullopt;
  // Shape and Size read only their input's shape.
  if (op == "Shape" || op == "Size") {
    if (node.input_size() != 1) return std::nullopt;
    std::optional<Dims> dims = scope->ShapeOf(node.input(0));
    if (!dims.has_value()) return std::nullopt;
    if (op == "Size") {
      int64_t n = 1;
      for (int64_t d : *dims) {
        if (d < 0) return std::nullopt;
        if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
          return std::nullopt;
        }
        n *= d;
      }
      Value v = MakeValue(TensorProto::INT64, {});
      v.ints[0] = n;
      return v;
    }
    const int64_t rank = static_cast<int64_t>(dims->size());
    int64_t start = IntAttr(node, "start", 0);
    int64_t end = IntAttr(node, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    Value v = Int64Vector(Dims(dims->begin() + start,
                               dims->begin() + std::max(start, end)));
    for (int64_t k = 0; k < v.size(); ++k) {
      if (v.ints[k] < 0) {
        if (v.unknown.empty()) v.unknown.assign(v.size(), false);
        v.unknown[k] = true;
        v.ints[k] = 0;
      }
    }
    return v;
  }
  // Every other op reads its inputs' values.
  std::vector<const Value*> ins;
  for (const std::string& in : node.input()) {
    if (in.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    const Value* v = scope->Find(in);
    if (v == nullptr) {
      // Optional operands of the older forms are read from attributes.
      ins.push_back(nullptr);
      continue;
    }
    ins.push_back(v);
  }
  auto all = [&](size_t n) {
    if (ins.size() < n) return false;
    for (size_t k = 0; k < n; ++k) {
      if (ins[k] == nullptr) return false;
    }
    return true;
  };
  auto present = [&](int k) {
    return node.input_size() > k && !node.input(k).empty();
  };
  // An operand that is present must be known.
  for (int k = 0; k < node.input_size(); ++k) {
    if (present(k) && ins[k] == nullptr) return std::nullopt;
  }
  if (op == "Identity") return all(1) ? std::optional<Value>(*ins[0]) : std::nullopt;
  // Only the ops that move elements carry unknown ones.
  static const absl::flat_hash_set<std::string>* const kMovers =
      new absl::flat_hash_set<std::string>{
          "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Reshape",
          "Expand", "Tile", "Transpose", "Cast"};
  if (!kMovers->contains(op)) {
    for (const Value* v : ins) {
      if (v != nullptr && !v->complete()) return std::nullopt;
    }
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
      op == "Mod" || op == "Pow") {
    if (!all(2) || ins.size() != 2) return std::nullopt;
    if (op == "Pow" && (!ins[0]->real() || ins[0]->type != ins[1]->type)) {
      return std::nullopt;
    }
    return Arithmetic(op, ins, node);
  }
  if (op == "Equal" || op == "Less" || op == "Greater" ||
      op == "LessOrEqual" || op == "GreaterOrEqual") {
    return all(2) ? Compare(op, ins) : std::nullopt;
  }
  if (op == "Not" || op == "And" || op == "Or" || op == "Xor") {
    return all(ins.size()) ? Logic(op, ins) : std::nullopt;
  }
  if (op == "Neg" || op == "Abs" || op == "Floor" || op == "Ceil" ||
      op == "Sqrt" || op == "Reciprocal") {
    return all(1) ? Unary(op, *ins[0]) : std::nullopt;
  }
  if (op == "Max" || op == "Min") {
    if (ins.empty() || !all(ins.size()) || !SameTypes(ins) ||
        ins[0]->type == TensorProto::BOOL) {
      return std::nullopt;
    }
    const bool max = op == "Max";
    return Elementwise(ins, ins[0]->type, [&](const std::vector<int64_t>& at,
                                              Value* out, int64_t k) {
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
  if (op == "Where") {
    if (!all(3) || ins[0]->type != TensorProto::BOOL ||
        ins[1]->type != ins[2]->type) {
      return std::nullopt;
    }
    return Elementwise(ins, ins[1]->type, [&](const std::vector<int64_t>& at,
                                              Value* out, int64_t k) {
      const Value* pick = ins[0]->ints[at[0]] ? ins[1] : ins[2];
      CopyElement(*pick, at[ins[0]->ints[at[0]] ? 1 : 2], out, k);
      return true;
    });
  }
  if (op == "Cast") {
    return all(1) ? Cast(*ins[0], static_cast<int32_t>(IntAttr(node, "to", 0)))
                  : std::nullopt;
  }
  if (op == "Gather") {
    if (!all(2) || ins[1]->real()) return std::nullopt;
    return Gather(*ins[0], *ins[1], IntAttr(node, "axis", 0));
  }
  if (op == "Slice") {
    if (!all(1)) return std::nullopt;
    if (opset < 10) {
      std::optional<Dims> starts = IntsAttr(node, "starts");
      std::optional<Dims> ends = IntsAttr(node, "ends");
      if (!starts.has_value() || !ends.has_value()) return std::nullopt;
      return Slice(*ins[0], *starts, *ends, IntsAttr(node, "axes"),
                   std::nullopt);
    }
    std::optional<Dims> starts = IntegerList(ins.size() > 1 ? ins[1] : nullptr);
    std::optional<Dims> ends = IntegerList(ins.size() > 2 ? ins[2] : nullptr);
    if (!starts.has_value() || !ends.has_value()) return std::nullopt;
    std::optional<Dims> axes, steps;
    if (present(3)) axes = IntegerList(ins[3]);
    if (present(4)) steps = IntegerList(ins[4]);
    return Slice(*ins[0], *starts, *ends, axes, steps);
  }
  if (op == "Concat") {
    return all(ins.size()) ? Concat(ins, IntAttr(node, "axis", 0))
                           : std::nullopt;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    if (!all(1)) return std::nullopt;
    bool has_axes = false;
    std::optional<Dims> axes = AxesOperand(node, 1, scope, &has_axes);
    if (has_axes && !axes.has_value()) return std::nullopt;
    if (op == "Unsqueeze") {
      return axes.has_value() ? Unsqueeze(*ins[0], *axes) : std::nullopt;
    }
    return Squeeze(*ins[0], axes);
  }
  if (op == "Reshape") {
    if (!all(2)) return std::nullopt;
    std::optional<Dims> shape = IntegerList(ins[1]);
    if (!shape.has_value()) return std::nullopt;
    return Reshape(*ins[0], *shape, IntAttr(node, "allowzero", 0) != 0);
  }
  if (op == "Expand" || op == "Tile") {
    if (!all(2)) return std::nullopt;
    std::optional<Dims> shape = IntegerList(ins[1]);
    if (!shape.has_value()) return std::nullopt;
    return op == "Expand" ? Expand(*ins[0], *shape) : Tile(*ins[0], *shape);
  }
  if (op == "Transpose") {
    return all(1) ? Transpose(*ins[0], IntsAttr(node, "perm")) : std::nullopt;
  }
  if (op == "ConstantOfShape") {
    if (!all(1)) return std::nullopt;
    std::optional<Dims> shape = IntegerList(ins[0]);
    if (!shape.has_value() || CountOf(*shape) < 0) return std::nullopt;
    Value fill = MakeValue(TensorProto::FLOAT, {1});
    if (const onnx::AttributeProto* a = Attr(node, "value"); a != nullptr) {
      std::optional<Value> v = a->type() == onnx::AttributeProto::TENSOR
                                   ? ValueFromProto(a->t())
                                   : std::nullopt;
      if (!v.has_value() || v->size() != 1) return std::nullopt;
      fill = *v;
    }
    return Expand(WithDims(fill, {}), *shape);
  }
  if (op == "Range") {
    return all(3) ? Range(*ins[0], *ins[1], *ins[2]) : std::nullopt;
  }
  if (IsReduce(op)) {
    if (!all(1)) return std::nullopt;
    // Axes moved from an attribute to input 1 at opset 13 (ReduceSum) and
    // 18 (the others); AxesOperand reads whichever the node has.
    bool has_axes = false;
    std::optional<Dims> axes = AxesOperand(node, 1, scope, &has_axes);
    if (has_axes && !axes.has_value()) return std::nullopt;
    return Reduce(op, *ins[0], axes, IntAttr(node, "keepdims", 1) != 0,
                  IntAttr(node, "noop_with_empty_axes", 0) != 0);
  }
  return std::nullopt;
}

// Rewrites `node` into a Constant node holding `value`.
void MakeConstant(const Value& value, onnx::NodeProto* node) {
  const std::string output = node->output(0);
  node->clear_input();
  node->clear_output();
  node->add_output(output);
  node->clear_attribute();
  node->set_op_type("Constant");
  node->clear_domain();
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  *attr->mutable_t() = ValueToProto(value);
}

// Declares `type` as the type of `value`: its element type and fixed dims.
void SetType(const Value& value, onnx::TypeProto* type) {
  type->Clear();
  onnx::TypeProto_Tensor* t = type->mutable_tensor_type();
  t->set_elem_type(value.type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : value.dims) shape->add_dim()->set_dim_value(d);
}

// An If whose condition is known at import takes one branch: its outputs
// have that branch's types. (libonnx merges both branches' types, and
// exporters write branches of different ranks: torchvision's "squeeze if
// 2-D" gives the If no rank at all.)
// Returns whether it changed a type.
template <typename Declare>
bool TypeIfByItsCondition(
    const onnx::NodeProto& node, const Scope& scope,
    absl::flat_hash_map<std::string, onnx::TypeProto*>* types,
    const Declare& declare) {
  if (node.input_size() < 1) return false;
  const Value* cond = scope.Find(node.input(0));
  if (cond == nullptr || cond->size() != 1 || !cond->complete() ||
      cond->real()) {
    return false;
  }
  const char* taken = cond->ints[0] != 0 ? "then_branch" : "else_branch";
  const onnx::GraphProto* branch = nullptr;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == taken && a.type() == onnx::AttributeProto::GRAPH) {
      branch = &a.g();
    }
  }
  if (branch == nullptr || branch->output_size() != node.output_size()) {
    return false;
  }
  bool changed = false;
  for (int i = 0; i < node.output_size(); ++i) {
    const onnx::TypeProto& from = branch->output(i).type();
    if (node.output(i).empty() || !from.has_tensor_type() ||
        !from.tensor_type().has_shape()) {
      continue;
    }
    onnx::TypeProto*& type = (*types)[node.output(i)];
    if (type == nullptr) type = declare(node.output(i));
    if (type->SerializeAsString() == from.SerializeAsString()) continue;
    *type = from;
    changed = true;
  }
  return changed;
}

bool Iterates(const onnx::NodeProto& node) {
  return node.op_type() == "Loop" || node.op_type() == "Scan";
}

absl::StatusOr<int> Fold(onnx::GraphProto* graph, const Scope* parent,
                         bool iterates, int64_t opset, int depth) {
  if (depth > kMaxSubgraphDepth) return 0;  // The importer refuses these.
  Scope scope(*graph, parent, iterates);
  absl::flat_hash_set<std::string> outputs;
  for (const onnx::ValueInfoProto& out : graph->output()) {
    outputs.insert(out.name());
  }
  // Where each value's type is declared, to record the folded ones' (the
  // fold that runs after the import helper's may go further than it did).
  absl::flat_hash_map<std::string, onnx::TypeProto*> types;
  for (onnx::ValueInfoProto& vi : *graph->mutable_value_info()) {
    types[vi.name()] = vi.mutable_type();
  }
  for (onnx::ValueInfoProto& vi : *graph->mutable_output()) {
    types[vi.name()] = vi.mutable_type();
  }
  types.erase("");
  auto declare = [&](const std::string& name) {
    onnx::ValueInfoProto* vi = graph->add_value_info();
    vi->set_name(name);
    return vi->mutable_type();
  };
  int folded = 0;
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (!IsDefaultDomain(node.domain())) continue;
    bool has_subgraphs = false;
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.type() != onnx::AttributeProto::GRAPH) continue;
      has_subgraphs = true;
      GLINT_ASSIGN_OR_RETURN(
          int inner, Fold(attr.mutable_g(), &scope, Iterates(node), opset,
                          depth + 1));
      folded += inner;
    }
    // A value computed from one that varies per iteration varies too.
    bool variant = false;
    for (const std::string& in : node.input()) {
      variant = variant || (!in.empty() && scope.IsVariant(in));
    }
    if (variant) {
      for (const std::string& out : node.output()) scope.MarkVariant(out);
      continue;
    }
    if (has_subgraphs) {
      if (node.op_type() == "If" &&
          TypeIfByItsCondition(node, scope, &types, declare)) {
        ++folded;
      }
      continue;
    }
    if (node.op_type() == "Constant") {
      if (node.output_size() == 1) {
        std::optional<Value> v = ConstantNodeValue(node);
        if (v.has_value()) scope.Learn(node.output(0), *std::move(v));
      }
      continue;
    }
    std::optional<Value> value = Evaluate(node, &scope, opset);
    if (!value.has_value() || CountOf(value->dims) != value->size()) continue;
    if (outputs.contains(node.output(0)) || !value->complete()) {
      scope.Learn(node.output(0), *std::move(value));
      continue;
    }
    MakeConstant(*value, &node);
    onnx::TypeProto*& type = types[node.output(0)];
    if (type == nullptr) type = declare(node.output(0));
    SetType(*value, type);
    scope.Learn(node.output(0), *std::move(value));
    ++folded;
  }
  return folded;
}

}  // namespace

absl::StatusOr<int> FoldShapeArithmetic(onnx::GraphProto* graph,
                                        int64_t opset) {
  return Fold(graph, nullptr, /*iterates=*/false, opset, 0);
}

}  // namespace glint::onnx_internal
