#include "onnx/dim_naming.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/dim_expr.h"

namespace glint::onnx_internal {
namespace {

// The most factors a Reshape's -1 is worked out from.
constexpr size_t kMaxFactors = 64;

// One dim of an input: its size, or its name, or neither.
struct Dim {
  int64_t value = -1;
  std::string name;

  bool known() const { return value >= 0; }
  bool named() const { return !name.empty(); }
  // As a product (coefficient and factors); nullopt where neither known
  // nor named.
  std::optional<DimProduct> AsProduct() const {
    if (known()) return DimProduct{value, {}};
    if (named()) return DimFactors(name);
    return std::nullopt;
  }
};

// A dim's size as text, or its name: what DeriveOutputDimNames gives.
std::string DimText(const Dim& d) {
  return d.known() ? absl::StrCat(d.value) : d.name;
}

std::optional<std::vector<Dim>> InputDims(const DimSource& source,
                                          const onnx::NodeProto& node,
                                          int input) {
  if (input >= node.input_size() || node.input(input).empty()) {
    return std::nullopt;
  }
  std::vector<std::string> names;
  std::optional<Dims> dims = source.shape_of(node.input(input), &names);
  if (!dims.has_value()) return std::nullopt;
  std::vector<Dim> out(dims->size());
  for (size_t k = 0; k < dims->size(); ++k) {
    if ((*dims)[k] >= 0) {
      out[k].value = (*dims)[k];
    } else if (k < names.size() && !IsInventedDimName(names[k])) {
      out[k].name = names[k];
    }
  }
  return out;
}

// Element k of a folded shape operand as a dim.
Dim ElementDim(const FoldValue& v, int64_t k) {
  Dim d;
  if (v.known(k)) {
    d.value = v.ints[k];
  } else if (!IsInventedDimName(v.symbol(k))) {
    d.name = v.symbol(k);
  }
  return d;
}

// A folded 1-D integer operand (a shape, repeats, sizes), or null.
const FoldValue* IntegerVector(const DimSource& source,
                               const onnx::NodeProto& node, int input) {
  if (input >= node.input_size() || node.input(input).empty()) return nullptr;
  const FoldValue* v = source.find(node.input(input));
  if (v == nullptr || v->real() || v->dims.size() != 1) return nullptr;
  return v;
}

std::string AttrString(const onnx::NodeProto& node, absl::string_view name) {
  const onnx::AttributeProto* a = Attr(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::STRING ? a->s()
                                                                   : "";
}

// The name of a dim that is a product (its size where it has no factors).
std::string ProductName(const std::optional<DimProduct>& p) {
  if (!p.has_value() || p->coefficient < 0) return "";
  return DimProductName(*p);
}

// Conv, MaxPool, AveragePool, LpPool: each spatial dim is
// floor((in + pads - dilation*(kernel-1) - 1) / stride) + 1, or
// ceil(in / stride) for SAME padding; the batch dim is the input's.
void NameWindowed(const onnx::NodeProto& node, const DimSource& source,
                  std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  const size_t rank = names->size();
  if (!x.has_value() || x->size() != rank || rank < 3) return;
  if (IntAttr(node, "ceil_mode", 0) != 0) return;
  (*names)[0] = DimText((*x)[0]);
  const size_t n = rank - 2;
  std::optional<Dims> kernel = IntsAttr(node, "kernel_shape");
  if (!kernel.has_value() && node.op_type() == "Conv") {
    std::optional<std::vector<Dim>> w = InputDims(source, node, 1);
    if (!w.has_value() || w->size() != rank) return;
    kernel.emplace();
    for (size_t i = 0; i < n; ++i) {
      if (!(*w)[2 + i].known()) return;
      kernel->push_back((*w)[2 + i].value);
    }
  }
  const Dims strides = IntsAttr(node, "strides").value_or(Dims(n, 1));
  const Dims dilations = IntsAttr(node, "dilations").value_or(Dims(n, 1));
  Dims pads = IntsAttr(node, "pads").value_or(Dims(2 * n, 0));
  const std::string auto_pad = AttrString(node, "auto_pad");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") pads.assign(2 * n, 0);
  if (!kernel.has_value() || kernel->size() != n || strides.size() != n ||
      dilations.size() != n || pads.size() != 2 * n ||
      !(auto_pad.empty() || auto_pad == "NOTSET" || auto_pad == "VALID" ||
        same)) {
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const Dim& in = (*x)[2 + i];
    const int64_t k = (*kernel)[i], s = strides[i], d = dilations[i];
    if (!in.named() || k < 1 || s < 1 || d < 1 || k > (1 << 20) ||
        s > (1 << 20) || d > (1 << 20) || pads[i] < 0 || pads[n + i] < 0 ||
        pads[i] > (1 << 20) || pads[n + i] > (1 << 20)) {
      continue;
    }
    const int64_t window = d * (k - 1) + 1;
    std::optional<std::string> out =
        same ? DimAffine(in.name, s - 1, s)
             : DimAffine(in.name, pads[i] + pads[n + i] - window + s, s);
    if (out.has_value()) (*names)[2 + i] = *out;
  }
}

// Reshape: each target element is a size, a dim read at run time (named
// by the fold), 0 (the input's dim there) or -1 (what is left of the
// input's size once the others are taken, where the names cancel).
void NameReshape(const onnx::NodeProto& node, const DimSource& source,
                 std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  const FoldValue* shape = IntegerVector(source, node, 1);
  if (!x.has_value() || shape == nullptr ||
      shape->size() != static_cast<int64_t>(names->size())) {
    return;
  }
  const bool allow_zero = IntAttr(node, "allowzero", 0) != 0;
  std::vector<Dim> out(names->size());
  int infer = -1;
  for (int64_t k = 0; k < shape->size(); ++k) {
    Dim d = ElementDim(*shape, k);
    // An element read at run time that may be 0 or -1 (`seq-1`) would mean
    // "the input's dim" or "the rest" there: only a size names a dim.
    if (d.named() && d.name.find('-') != std::string::npos) d.name.clear();
    if (d.value == 0 && !allow_zero) {
      if (k >= static_cast<int64_t>(x->size())) return;
      d = (*x)[k];
    } else if (shape->known(k) && d.value == -1) {
      if (infer >= 0) return;
      infer = static_cast<int>(k);
      continue;
    }
    out[k] = d;
    (*names)[k] = DimText(d);
  }
  if (infer < 0) return;
  // The -1: the input's product divided by the other dims' product.
  DimProduct left;
  for (const Dim& d : *x) {
    std::optional<DimProduct> p = d.AsProduct();
    if (!p.has_value() || p->coefficient < 1 ||
        left.coefficient > (int64_t{1} << 40) / p->coefficient) {
      return;
    }
    left.coefficient *= p->coefficient;
    left.factors.insert(left.factors.end(), p->factors.begin(),
                        p->factors.end());
    // Cancelling is quadratic in the factors: a hostile model's dozens of
    // long products are not followed.
    if (left.factors.size() > kMaxFactors) return;
  }
  for (int k = 0; k < static_cast<int>(out.size()); ++k) {
    if (k == infer) continue;
    std::optional<DimProduct> p = out[k].AsProduct();
    if (!p.has_value() || p->coefficient < 1 ||
        left.coefficient % p->coefficient != 0) {
      return;
    }
    left.coefficient /= p->coefficient;
    for (const std::string& f : p->factors) {
      auto it = std::find(left.factors.begin(), left.factors.end(), f);
      if (it == left.factors.end()) return;  // The names do not cancel.
      left.factors.erase(it);
    }
  }
  (*names)[infer] = ProductName(left);
}

// Expand: the input's dims broadcast against the target's elements.
void NameExpand(const onnx::NodeProto& node, const DimSource& source,
                std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  const FoldValue* shape = IntegerVector(source, node, 1);
  const int64_t rank = static_cast<int64_t>(names->size());
  if (!x.has_value() || shape == nullptr ||
      rank != std::max<int64_t>(shape->size(), x->size())) {
    return;
  }
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t xi = k - (rank - static_cast<int64_t>(x->size()));
    const int64_t si = k - (rank - shape->size());
    const Dim in = xi >= 0 ? (*x)[xi] : Dim{1, ""};
    const Dim to = si >= 0 ? ElementDim(*shape, si) : Dim{1, ""};
    if (to.value == 1) {
      (*names)[k] = DimText(in);
    } else if (to.known()) {
      (*names)[k] = DimText(to);  // The input's dim is 1 or this size.
    } else if (to.named() && (in.value == 1 || in.name == to.name)) {
      (*names)[k] = to.name;
    }
  }
}

// ConstantOfShape: the shape's elements.
void NameConstantOfShape(const onnx::NodeProto& node, const DimSource& source,
                         std::vector<std::string>* names) {
  const FoldValue* shape = IntegerVector(source, node, 0);
  if (shape == nullptr ||
      shape->size() != static_cast<int64_t>(names->size())) {
    return;
  }
  for (int64_t k = 0; k < shape->size(); ++k) {
    (*names)[k] = DimText(ElementDim(*shape, k));
  }
}

// Tile: each dim times its repeat count.
void NameTile(const onnx::NodeProto& node, const DimSource& source,
              std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  const FoldValue* repeats = IntegerVector(source, node, 1);
  if (!x.has_value() || repeats == nullptr || !repeats->complete() ||
      x->size() != names->size() ||
      repeats->size() != static_cast<int64_t>(names->size())) {
    return;
  }
  for (size_t k = 0; k < x->size(); ++k) {
    std::optional<DimProduct> p = (*x)[k].AsProduct();
    const int64_t r = repeats->ints[k];
    if (!(*x)[k].named() || !p.has_value() || r < 1 || r > (1 << 20) ||
        p->coefficient > (int64_t{1} << 40) / r) {
      continue;
    }
    p->coefficient *= r;
    (*names)[k] = ProductName(p);
  }
}

// Flatten: the product of the dims before `axis`, and of the rest.
void NameFlatten(const onnx::NodeProto& node, const DimSource& source,
                 std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value() || names->size() != 2) return;
  const int64_t r = static_cast<int64_t>(x->size());
  int64_t axis = IntAttr(node, "axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) return;
  for (int side = 0; side < 2; ++side) {
    DimProduct p;
    bool ok = true;
    for (int64_t k = side == 0 ? 0 : axis; k < (side == 0 ? axis : r); ++k) {
      std::optional<DimProduct> d = (*x)[k].AsProduct();
      if (!d.has_value() || d->coefficient < 1 ||
          p.coefficient > (int64_t{1} << 40) / d->coefficient) {
        ok = false;
        break;
      }
      p.coefficient *= d->coefficient;
      p.factors.insert(p.factors.end(), d->factors.begin(), d->factors.end());
    }
    if (ok) (*names)[side] = ProductName(p);
  }
}

// Resize and Upsample: floor(dim * scale) for a known scale that is an
// integer or the inverse of one, or the dims `sizes` names.
void NameResize(const onnx::NodeProto& node, const DimSource& source,
                int64_t opset, std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value() || x->size() != names->size()) return;
  // Resize-18's axes and aspect-ratio policies pick other dims and sizes.
  if (Attr(node, "axes") != nullptr ||
      !(AttrString(node, "keep_aspect_ratio_policy").empty() ||
        AttrString(node, "keep_aspect_ratio_policy") == "stretch")) {
    return;
  }
  const bool resize = node.op_type() == "Resize";
  // Resize-11 and later: (X, roi, scales, sizes); before: (X, scales).
  const int scales_input = resize && opset >= 11 ? 2 : 1;
  if (resize && opset >= 11) {
    if (const FoldValue* sizes = IntegerVector(source, node, 3)) {
      if (sizes->size() != static_cast<int64_t>(names->size())) return;
      for (int64_t k = 0; k < sizes->size(); ++k) {
        (*names)[k] = DimText(ElementDim(*sizes, k));
      }
      return;
    }
  }
  const FoldValue* scales = nullptr;
  if (scales_input < node.input_size() && !node.input(scales_input).empty()) {
    scales = source.find(node.input(scales_input));
  }
  if (scales == nullptr || !scales->real() || !scales->complete() ||
      scales->size() != static_cast<int64_t>(names->size())) {
    return;
  }
  for (size_t k = 0; k < x->size(); ++k) {
    const double s = scales->reals[k];
    const Dim& in = (*x)[k];
    if (!in.named() || !(s > 0) || s > (1 << 20)) continue;
    if (s >= 1 && s == std::floor(s)) {
      std::optional<DimProduct> p = in.AsProduct();
      if (!p.has_value() ||
          p->coefficient > (int64_t{1} << 40) / static_cast<int64_t>(s)) {
        continue;
      }
      p->coefficient *= static_cast<int64_t>(s);
      (*names)[k] = ProductName(p);
    } else if (const double inv = 1 / s;
               inv == std::floor(inv) && inv <= (1 << 20)) {
      (*names)[k] =
          DimAffine(in.name, 0, static_cast<int64_t>(inv)).value_or("");
    }
  }
}

// Whether `name` may name a dim: a size, or an expression holding a name
// and not too long to read back.
bool Usable(const std::string& name) {
  if (name.empty() || name.size() > kMaxDimExprLength) return false;
  if (std::all_of(name.begin(), name.end(),
                  [](char c) { return absl::ascii_isdigit(c); })) {
    int64_t size;
    return absl::SimpleAtoi(name, &size);
  }
  return std::any_of(name.begin(), name.end(),
                     [](char c) { return absl::ascii_isalpha(c); }) &&
         DimFactors(name).has_value();
}

}  // namespace

std::vector<std::string> DeriveOutputDimNames(const onnx::NodeProto& node,
                                              int rank, const DimSource& source,
                                              int64_t opset) {
  std::vector<std::string> names(std::max(rank, 0));
  if (rank <= 0 || node.output_size() < 1) return names;
  const std::string& op = node.op_type();
  if (op == "Conv" || op == "MaxPool" || op == "AveragePool" ||
      op == "LpPool") {
    NameWindowed(node, source, &names);
  } else if (op == "Reshape") {
    NameReshape(node, source, &names);
  } else if (op == "Expand") {
    NameExpand(node, source, &names);
  } else if (op == "ConstantOfShape") {
    NameConstantOfShape(node, source, &names);
  } else if (op == "Tile") {
    NameTile(node, source, &names);
  } else if (op == "Flatten") {
    NameFlatten(node, source, &names);
  } else if (op == "Resize" || op == "Upsample") {
    NameResize(node, source, opset, &names);
  }
  for (std::string& name : names) {
    if (!Usable(name)) name.clear();
  }
  return names;
}

}  // namespace glint::onnx_internal
