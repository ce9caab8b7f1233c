#include "onnx/fold_value.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "core/tensor.h"
#include "onnx/onnx_tensor.h"

namespace glint::onnx_internal {

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

// Elements of `dims`; -1 over kMaxFoldElements, for a negative dim, for
// a rank over kMaxTensorRank, or for a dim over kMaxFoldDim (possible
// beside a zero dim: [0, 2^62] holds no element, and sums of such dims
// would overflow).
int64_t CountOf(const Dims& dims) {
  if (dims.size() > static_cast<size_t>(kMaxTensorRank)) return -1;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxFoldDim || (d > 0 && n > kMaxFoldElements / d)) {
      return -1;
    }
    n *= d;
  }
  return n <= kMaxFoldElements ? n : -1;
}

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

FoldValue MakeValue(int32_t type, Dims dims) {
  FoldValue v;
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

FoldValue Int64Vector(const Dims& values) {
  FoldValue v =
      MakeValue(TensorProto::INT64, {static_cast<int64_t>(values.size())});
  v.ints = values;
  return v;
}

// The same elements under `dims`.
FoldValue WithDims(FoldValue v, Dims dims) {
  v.dims = std::move(dims);
  return v;
}

// Reads a TensorProto of at most kMaxFoldElements foldable elements.
std::optional<FoldValue> ValueFromProto(const TensorProto& proto) {
  if (!IsFoldableType(proto.data_type())) return std::nullopt;
  Dims dims(proto.dims().begin(), proto.dims().end());
  if (CountOf(dims) < 0 ||
      proto.data_location() == TensorProto::EXTERNAL) {
    return std::nullopt;
  }
  absl::StatusOr<Tensor> t = TensorFromOnnxProto(proto);
  if (!t.ok()) return std::nullopt;
  FoldValue v = MakeValue(proto.data_type(), dims);
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

TensorProto ValueToProto(const FoldValue& v) {
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
std::optional<FoldValue> ConstantNodeValue(const onnx::NodeProto& node) {
  if (node.attribute_size() != 1) return std::nullopt;
  const onnx::AttributeProto& a = node.attribute(0);
  if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) {
    return ValueFromProto(a.t());
  }
  if (a.name() == "value_int" && a.type() == onnx::AttributeProto::INT) {
    FoldValue v = MakeValue(TensorProto::INT64, {});
    v.ints[0] = a.i();
    return v;
  }
  if (a.name() == "value_ints" && a.type() == onnx::AttributeProto::INTS &&
      a.ints_size() <= kMaxFoldElements) {
    return Int64Vector(Dims(a.ints().begin(), a.ints().end()));
  }
  if (a.name() == "value_float" && a.type() == onnx::AttributeProto::FLOAT) {
    FoldValue v = MakeValue(TensorProto::FLOAT, {});
    v.reals[0] = a.f();
    return v;
  }
  if (a.name() == "value_floats" && a.type() == onnx::AttributeProto::FLOATS &&
      a.floats_size() <= kMaxFoldElements) {
    FoldValue v = MakeValue(TensorProto::FLOAT, {a.floats_size()});
    for (int k = 0; k < a.floats_size(); ++k) v.reals[k] = a.floats(k);
    return v;
  }
  return std::nullopt;
}

std::optional<Dims> IntegerList(const FoldValue* v) {
  if (v == nullptr || v->real() || v->dims.size() > 1 || !v->complete()) {
    return std::nullopt;
  }
  return v->ints;
}

bool SameTypes(const std::vector<const FoldValue*>& ins) {
  for (const FoldValue* v : ins) {
    if (v->type != ins[0]->type) return false;
  }
  return true;
}

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

// Normalises `axis` against `rank`; nullopt when out of range.
std::optional<int64_t> Axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

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

const std::string& FoldValue::symbol(int64_t k) const {
  static const std::string* const kNone = new std::string();
  if (known(k) || k < 0 || k >= static_cast<int64_t>(symbols.size())) {
    return *kNone;
  }
  return symbols[k];
}

void MarkUnknown(FoldValue* v, int64_t k, const std::string& symbol) {
  if (v->unknown.empty()) v->unknown.assign(v->size(), false);
  v->unknown[k] = true;
  if (!symbol.empty()) {
    if (v->symbols.empty()) v->symbols.assign(v->size(), "");
    v->symbols[k] = symbol;
  }
}

bool IsInventedDimName(absl::string_view name) {
  return absl::StartsWith(name, "unk__");
}

void CopyElement(const FoldValue& src, int64_t from, FoldValue* dst,
                 int64_t to) {
  if (!src.known(from)) MarkUnknown(dst, to, src.symbol(from));
  if (src.real()) {
    dst->reals[to] = src.reals[from];
  } else {
    dst->ints[to] = src.ints[from];
  }
}

}  // namespace glint::onnx_internal
