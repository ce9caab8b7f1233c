#include "onnx/dim_naming.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/dim_expr.h"

namespace glint::onnx_internal {
namespace {

// The most factors a Reshape's -1 is worked out from.
constexpr size_t kMaxFactors = 64;

// The elementwise ops whose inputs broadcast (multidirectionally).
bool IsBroadcastOp(const std::string& op) {
  static const absl::flat_hash_set<std::string>* const kOps =
      new absl::flat_hash_set<std::string>{"Add",
                                           "Sub",
                                           "Mul",
                                           "Div",
                                           "Pow",
                                           "Mod",
                                           "And",
                                           "Or",
                                           "Xor",
                                           "Equal",
                                           "Greater",
                                           "Less",
                                           "Where",
                                           "Max",
                                           "Min",
                                           "Sum",
                                           "Mean",
                                           "BitShift",
                                           "PRelu",
                                           "BitwiseAnd",
                                           "BitwiseOr",
                                           "BitwiseXor",
                                           "GreaterOrEqual",
                                           "LessOrEqual"};
  return kOps->contains(op);
}

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

// The product of `dims` (each known or named), or "" where one is
// neither or the coefficient passes 2^40.
std::string ProductOf(const std::vector<Dim>& dims) {
  DimProduct p;
  for (const Dim& d : dims) {
    std::optional<DimProduct> f = d.AsProduct();
    if (!f.has_value() || f->coefficient < 0 ||
        (f->coefficient > 0 &&
         p.coefficient > (int64_t{1} << 40) / f->coefficient)) {
      return "";
    }
    p.coefficient *= f->coefficient;
    p.factors.insert(p.factors.end(), f->factors.begin(), f->factors.end());
    if (p.factors.size() > kMaxFactors) return "";
  }
  return p.coefficient == 0 ? "0" : ProductName(p);
}

// The name of a size the data decides, at most `bound` (a size or a dim
// name): the node's tag (DataDependentTag) and the bound, or "" where
// `bound` is "" or too long.
std::string Bounded(const std::string& tag, const std::string& bound) {
  if (bound.empty()) return "";
  return DimBounded(tag, bound).value_or("");
}

// Axis attribute `name` of a node over a value of rank `rank`, in
// [0, rank), or -1.
int64_t AxisAttr(const onnx::NodeProto& node, absl::string_view name,
                 int64_t fallback, int64_t rank) {
  int64_t axis = IntAttr(node, name, fallback);
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

// NonZero: [rank of x, how many nonzero], at most x's element count.
void NameNonZero(const onnx::NodeProto& node, const DimSource& source,
                 const std::string& tag, std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value() || names->size() != 2) return;
  (*names)[0] = absl::StrCat(x->size());
  (*names)[1] = Bounded(tag, ProductOf(*x));
}

// TopK (values and indices): x's dims, with k along the axis: k's name
// where the fold knows it, else at most x's dim there.
void NameTopK(const onnx::NodeProto& node, const DimSource& source,
              const std::string& tag, std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value() || x->size() != names->size()) return;
  const int64_t axis = AxisAttr(node, "axis", -1, x->size());
  if (axis < 0) return;
  for (size_t k = 0; k < x->size(); ++k) (*names)[k] = DimText((*x)[k]);
  const FoldValue* k_value = IntegerVector(source, node, 1);
  const Dim by_k = k_value != nullptr && k_value->size() == 1
                       ? ElementDim(*k_value, 0)
                       : Dim{};
  (*names)[axis] = by_k.known() || by_k.named()
                       ? DimText(by_k)
                       : Bounded(tag, DimText((*x)[axis]));
}

// Compress: at most x's dim along the axis, or its elements (flattened).
void NameCompress(const onnx::NodeProto& node, const DimSource& source,
                  const std::string& tag, std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value()) return;
  if (Attr(node, "axis") == nullptr) {
    if (names->size() == 1) (*names)[0] = Bounded(tag, ProductOf(*x));
    return;
  }
  const int64_t axis = AxisAttr(node, "axis", 0, x->size());
  if (axis < 0 || x->size() != names->size()) return;
  for (size_t k = 0; k < x->size(); ++k) (*names)[k] = DimText((*x)[k]);
  (*names)[axis] = Bounded(tag, DimText((*x)[axis]));
}

// Unique: Y has at most as many unique elements (or slices along the
// axis) as x has; indices and counts one per unique; inverse_indices one
// per element (or slice) of x.
void NameUnique(const onnx::NodeProto& node, int output,
                const DimSource& source, const std::string& tag,
                std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value()) return;
  const bool flat = Attr(node, "axis") == nullptr;
  const int64_t axis = flat ? 0 : AxisAttr(node, "axis", 0, x->size());
  if (axis < 0) return;
  const std::string all = flat ? ProductOf(*x) : DimText((*x)[axis]);
  const std::string unique = Bounded(tag, all);
  if (output == 0 && !flat && x->size() == names->size()) {
    for (size_t k = 0; k < x->size(); ++k) (*names)[k] = DimText((*x)[k]);
    (*names)[axis] = unique;
  } else if (names->size() == 1) {
    (*names)[0] = output == 0 || output == 1 || output == 3 ? unique : all;
  }
}

// NonMaxSuppression: [how many kept, 3], at most batches x classes x the
// boxes a class keeps (max_output_boxes_per_class, or every box).
void NameNonMaxSuppression(const onnx::NodeProto& node, const DimSource& source,
                           const std::string& tag,
                           std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> boxes = InputDims(source, node, 0);
  std::optional<std::vector<Dim>> scores = InputDims(source, node, 1);
  if (!boxes.has_value() || !scores.has_value() || boxes->size() != 3 ||
      scores->size() != 3 || names->size() != 2) {
    return;
  }
  (*names)[1] = "3";
  // Each class keeps at most its boxes, and at most the maximum where it
  // is known: the smaller where both are sizes, else the maximum where it
  // is one a device could hold (an exporter's "keep all" is 2^63-1).
  Dim per_class = (*boxes)[1];
  const FoldValue* most = IntegerVector(source, node, 2);
  if (node.input_size() < 3 || node.input(2).empty()) {
    per_class = Dim{0, ""};  // No maximum: no box is kept.
  } else if (most != nullptr && most->size() == 1 && most->known(0) &&
             most->ints[0] >= 0) {
    const int64_t m = most->ints[0];
    // The boxes' count at its bound, where that is a size.
    int64_t boxes_bound = per_class.value;
    if (per_class.named()) {
      std::optional<std::string> b = DimUpperBound(per_class.name);
      if (!b.has_value() || !absl::SimpleAtoi(*b, &boxes_bound)) {
        boxes_bound = -1;
      }
    }
    if (boxes_bound >= 0 ? m < boxes_bound : m <= (int64_t{1} << 20)) {
      per_class = Dim{m, ""};
    }
  }
  (*names)[0] =
      Bounded(tag, ProductOf({(*scores)[0], (*scores)[1], per_class}));
}

// Concat: the inputs' dims, added along the axis (at most the sum of their
// bounds where one is a size the data decides).
void NameConcat(const onnx::NodeProto& node, const DimSource& source,
                const std::string& tag, std::vector<std::string>* names) {
  const int64_t rank = static_cast<int64_t>(names->size());
  const int64_t axis = AxisAttr(node, "axis", 0, rank);
  if (axis < 0 || node.input_size() < 1) return;
  std::vector<std::string> along, bounds;
  bool data_dependent = false;
  for (int i = 0; i < node.input_size(); ++i) {
    std::optional<std::vector<Dim>> x = InputDims(source, node, i);
    if (!x.has_value() || x->size() != names->size()) return;
    for (int64_t k = 0; k < rank; ++k) {
      if (k != axis && (*names)[k].empty()) (*names)[k] = DimText((*x)[k]);
    }
    const Dim& d = (*x)[axis];
    if (!d.known() && !d.named()) return;
    along.push_back(DimText(d));
    if (d.named() && IsDataDependentDim(d.name)) data_dependent = true;
    std::optional<std::string> bound = DimUpperBound(along.back());
    if (!bound.has_value()) return;
    bounds.push_back(*std::move(bound));
  }
  // The sum of the names where it is short enough to read back; else,
  // where sizes the data decides are in it, a name of the node at most the
  // sum of their bounds (SSDlite's 90 per-class TopKs of at most 3234 boxes: at
  // most 291060).
  std::string sum = DimSum(along).value_or("");
  if ((sum.empty() || sum.size() > kMaxDimExprLength) && data_dependent) {
    sum = Bounded(tag, DimSum(bounds).value_or(""));
  }
  (*names)[axis] = sum;
}

// Slice of a dim it cannot size (a size the data decides, or starts, ends
// or steps read at run time): each dim the slice may cut is at most the
// input's, and at most the span a known start, end and step take
// (torchvision's `keep[:post_nms_top_n]` keeps at most 1000 of 10125
// boxes).
void NameSlice(const onnx::NodeProto& node, const DimSource& source,
               const std::string& tag, std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value() || x->size() != names->size()) return;
  const int64_t rank = static_cast<int64_t>(x->size());
  const FoldValue* starts = IntegerVector(source, node, 1);
  const FoldValue* ends = IntegerVector(source, node, 2);
  const FoldValue* axes = IntegerVector(source, node, 3);
  const FoldValue* steps = IntegerVector(source, node, 4);
  const bool has_axes = node.input_size() > 3 && !node.input(3).empty();
  const bool has_steps = node.input_size() > 4 && !node.input(4).empty();
  // Which axes it cuts (every one where that is not known), and the most
  // each keeps where its start, end and step are known.
  std::vector<bool> cut(rank, true);
  std::vector<int64_t> span(rank, -1);
  if (starts != nullptr && (!has_axes || (axes != nullptr && axes->complete() &&
                                          axes->size() == starts->size()))) {
    cut.assign(rank, false);
    for (int64_t i = 0; i < starts->size(); ++i) {
      int64_t a = has_axes ? axes->ints[i] : i;
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) return;
      cut[a] = true;
      const bool step_known =
          !has_steps || (steps != nullptr && steps->size() == starts->size() &&
                         steps->known(i));
      const int64_t step = has_steps && step_known ? steps->ints[i] : 1;
      if (!starts->known(i) || ends == nullptr ||
          ends->size() != starts->size() || !ends->known(i) || !step_known) {
        continue;
      }
      const int64_t b = starts->ints[i], e = ends->ints[i];
      // Counted from the front only: a negative start or end counts from
      // the dim's end, which the data decides.
      if (step > 0 && b >= 0 && e >= b) {
        span[a] = (e - b) / step + ((e - b) % step != 0 ? 1 : 0);
      }
    }
  }
  for (int64_t k = 0; k < rank; ++k) {
    const std::string in = DimText((*x)[k]);
    if (!cut[k]) {
      (*names)[k] = in;
      continue;
    }
    std::string bound = in;
    if (span[k] >= 0) {
      // The smaller at the bounds where the input's is a size; the span
      // where that is one a device could hold.
      const std::optional<std::string> upper =
          in.empty() ? std::nullopt : DimUpperBound(in);
      int64_t size;
      if (upper.has_value() && absl::SimpleAtoi(*upper, &size)) {
        bound = absl::StrCat(std::min(size, span[k]));
      } else if (span[k] <= (int64_t{1} << 20)) {
        bound = absl::StrCat(span[k]);
      }
    }
    (*names)[k] = Bounded(absl::StrCat(tag, "_", k), bound);
  }
}

// Gather: data's dims around the axis, indices' dims in its place.
void NameGather(const onnx::NodeProto& node, const DimSource& source,
                std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> data = InputDims(source, node, 0);
  std::optional<std::vector<Dim>> indices = InputDims(source, node, 1);
  if (!data.has_value() || !indices.has_value() ||
      data->size() + indices->size() != names->size() + 1) {
    return;
  }
  const int64_t axis = AxisAttr(node, "axis", 0, data->size());
  if (axis < 0) return;
  size_t k = 0;
  for (int64_t i = 0; i < axis; ++i) (*names)[k++] = DimText((*data)[i]);
  for (const Dim& d : *indices) (*names)[k++] = DimText(d);
  for (size_t i = axis + 1; i < data->size(); ++i) {
    (*names)[k++] = DimText((*data)[i]);
  }
}

// At least the largest of `dims` (each a size or a name of the grammar):
// the largest where all are sizes at their bounds, the one where they are
// one, else their sum. "" where one is not of the grammar, or its bound is
// a difference: one that is below 0 at the bounds (an If's branch no run
// at the bounds takes) would take from the sum.
std::string MaxBound(const std::vector<std::string>& dims) {
  std::vector<std::string> bounds;
  int64_t largest = 0;
  bool sizes = true;
  for (const std::string& d : dims) {
    std::optional<std::string> bound = DimUpperBound(d);
    if (!bound.has_value()) return "";
    int64_t size;
    if (absl::SimpleAtoi(*bound, &size)) {
      largest = std::max(largest, size);
    } else if (bound->find('-') != std::string::npos) {
      return "";
    } else {
      sizes = false;
    }
    if (std::find(bounds.begin(), bounds.end(), *bound) == bounds.end()) {
      bounds.push_back(*std::move(bound));
    }
  }
  if (sizes) return absl::StrCat(largest);
  if (bounds.size() == 1) return bounds[0];
  return DimSum(bounds).value_or("");
}

// An elementwise op of inputs broadcast together: each output dim is the
// inputs' where they are one (or 1 beside it), else at most the largest.
void NameBroadcast(const onnx::NodeProto& node, const DimSource& source,
                   const std::string& tag, std::vector<std::string>* names) {
  const int64_t rank = static_cast<int64_t>(names->size());
  std::vector<std::vector<Dim>> ins;
  for (int i = 0; i < node.input_size(); ++i) {
    std::optional<std::vector<Dim>> x = InputDims(source, node, i);
    if (!x.has_value() || static_cast<int64_t>(x->size()) > rank) return;
    ins.push_back(*std::move(x));
  }
  for (int64_t k = 0; k < rank; ++k) {
    std::vector<std::string> dims;
    bool all = true;
    for (const std::vector<Dim>& x : ins) {
      const int64_t at = k - (rank - static_cast<int64_t>(x.size()));
      if (at < 0) continue;
      const Dim& d = x[at];
      if (d.value == 1) continue;  // Broadcast: the others' size.
      if (!d.known() && !d.named()) {
        all = false;
        break;
      }
      if (std::find(dims.begin(), dims.end(), DimText(d)) == dims.end()) {
        dims.push_back(DimText(d));
      }
    }
    if (!all) continue;
    // A run broadcasts only sizes that are one, or 1: a known one is it.
    auto known = std::find_if(dims.begin(), dims.end(), [](const auto& d) {
      return absl::c_all_of(d, absl::ascii_isdigit);
    });
    if (known != dims.end()) {
      (*names)[k] = *known;
    } else if (dims.empty()) {
      (*names)[k] = "1";
    } else if (dims.size() == 1) {
      (*names)[k] = dims[0];
    } else {
      (*names)[k] = Bounded(absl::StrCat(tag, "_", k), MaxBound(dims));
    }
  }
}

// If: output `output`'s dims where both branches agree, else at most the
// larger (MaxBound).
void NameIf(const onnx::NodeProto& node, int output, const DimSource& source,
            const std::string& tag, std::vector<std::string>* names) {
  std::vector<std::vector<std::string>> branches;
  for (const char* branch : {"then_branch", "else_branch"}) {
    const onnx::AttributeProto* g = Attr(node, branch);
    if (g == nullptr || !g->has_g() || output >= g->g().output_size()) return;
    const onnx::TypeProto& type = g->g().output(output).type();
    if (!type.has_tensor_type() || !type.tensor_type().has_shape() ||
        type.tensor_type().shape().dim_size() !=
            static_cast<int>(names->size())) {
      return;
    }
    std::vector<std::string>& dims = branches.emplace_back();
    for (const auto& d : type.tensor_type().shape().dim()) {
      dims.push_back(d.has_dim_value() && d.dim_value() >= 0
                         ? absl::StrCat(d.dim_value())
                     : source.usable_name(d.dim_param()) ? d.dim_param()
                                                         : "");
    }
  }
  for (size_t k = 0; k < names->size(); ++k) {
    const std::string& a = branches[0][k];
    const std::string& b = branches[1][k];
    if (a.empty() || b.empty()) continue;
    if (a == b) {
      (*names)[k] = a;
      continue;
    }
    (*names)[k] = Bounded(absl::StrCat(tag, "_", k), MaxBound({a, b}));
  }
}

// A convolution's or pool's window over `n` spatial dims, each value in
// [0, 2^20] (kernel, strides and dilations at least 1), padding resolved
// (VALID: none).
struct Window {
  Dims kernel, strides, dilations, pads;
  bool same = false;  // SAME_UPPER or SAME_LOWER.
};

// The window `node`'s attributes give (`kernel` where it has no
// kernel_shape: a convolution's weights'); nullopt where one has the wrong
// length or a value out of range, or auto_pad is not one ONNX defines.
std::optional<Window> ReadWindow(const onnx::NodeProto& node, size_t n,
                                 std::optional<Dims> kernel) {
  Window w;
  kernel = IntsAttr(node, "kernel_shape").value_or(kernel.value_or(Dims()));
  w.kernel = *std::move(kernel);
  w.strides = IntsAttr(node, "strides").value_or(Dims(n, 1));
  w.dilations = IntsAttr(node, "dilations").value_or(Dims(n, 1));
  w.pads = IntsAttr(node, "pads").value_or(Dims(2 * n, 0));
  const std::string auto_pad = AttrString(node, "auto_pad");
  w.same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") w.pads.assign(2 * n, 0);
  if (w.kernel.size() != n || w.strides.size() != n ||
      w.dilations.size() != n || w.pads.size() != 2 * n ||
      !(auto_pad.empty() || auto_pad == "NOTSET" || auto_pad == "VALID" ||
        w.same)) {
    return std::nullopt;
  }
  constexpr int64_t kMax = int64_t{1} << 20;
  const auto in_range = [](const Dims& v, int64_t low) {
    return absl::c_all_of(v,
                          [low](int64_t x) { return x >= low && x <= kMax; });
  };
  if (!in_range(w.kernel, 1) || !in_range(w.strides, 1) ||
      !in_range(w.dilations, 1) || !in_range(w.pads, 0)) {
    return std::nullopt;
  }
  return w;
}

// The kernel a convolution's weights (input 1 of `node`, of rank `rank`)
// give, where the node has no kernel_shape; nullopt where it cannot be
// read.
std::optional<Dims> WeightKernel(const onnx::NodeProto& node,
                                 const DimSource& source, size_t rank) {
  if (Attr(node, "kernel_shape") != nullptr) return std::nullopt;
  std::optional<std::vector<Dim>> w = InputDims(source, node, 1);
  if (!w.has_value() || w->size() != rank) return std::nullopt;
  Dims kernel;
  for (size_t i = 2; i < rank; ++i) {
    if (!(*w)[i].known()) return std::nullopt;
    kernel.push_back((*w)[i].value);
  }
  return kernel;
}

// Conv, MaxPool, AveragePool, LpPool: each spatial dim is
// floor((in + pads - dilation*(kernel-1) - 1) / stride) + 1, or
// ceil(in / stride) for SAME padding; the batch dim is the input's. In
// ceil_mode the floor is a ceiling, less one where the last window would
// start in the end padding: at most the ceiling, a bounded dim.
void NameWindowed(const onnx::NodeProto& node, const DimSource& source,
                  const std::string& tag, std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  const size_t rank = names->size();
  if (!x.has_value() || x->size() != rank || rank < 3) return;
  (*names)[0] = DimText((*x)[0]);
  const size_t n = rank - 2;
  std::optional<Window> window =
      ReadWindow(node, n,
                 node.op_type() == "Conv" ? WeightKernel(node, source, rank)
                                          : std::nullopt);
  if (!window.has_value()) return;
  const bool ceil_mode = IntAttr(node, "ceil_mode", 0) != 0;
  for (size_t i = 0; i < n; ++i) {
    const Dim& in = (*x)[2 + i];
    if (!in.named()) continue;
    const int64_t s = window->strides[i];
    const int64_t span = window->dilations[i] * (window->kernel[i] - 1) + 1;
    const int64_t add = window->pads[i] + window->pads[n + i] - span + s;
    if (window->same) {
      (*names)[2 + i] = DimAffine(in.name, s - 1, s).value_or("");
    } else if (ceil_mode) {
      (*names)[2 + i] =
          Bounded(absl::StrCat(tag, "_", 2 + i),
                  DimAffine(in.name, add + s - 1, s).value_or(""));
    } else {
      (*names)[2 + i] = DimAffine(in.name, add, s).value_or("");
    }
  }
}

// ConvTranspose without output_shape: each spatial dim is
// stride*(in-1) + output_padding + dilation*(kernel-1) + 1 - pads, or
// in*stride for SAME padding; the batch dim is the input's.
void NameConvTranspose(const onnx::NodeProto& node, const DimSource& source,
                       std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  const size_t rank = names->size();
  if (!x.has_value() || x->size() != rank || rank < 3 ||
      Attr(node, "output_shape") != nullptr) {
    return;
  }
  (*names)[0] = DimText((*x)[0]);
  const size_t n = rank - 2;
  std::optional<Window> window =
      ReadWindow(node, n, WeightKernel(node, source, rank));
  const Dims extra = IntsAttr(node, "output_padding").value_or(Dims(n, 0));
  if (!window.has_value() || extra.size() != n) return;
  for (size_t i = 0; i < n; ++i) {
    const Dim& in = (*x)[2 + i];
    const int64_t s = window->strides[i];
    std::optional<DimProduct> p = in.AsProduct();
    if (!in.named() || !p.has_value() || p->coefficient < 1 || extra[i] < 0 ||
        extra[i] > (1 << 20) || p->coefficient > (int64_t{1} << 40) / s) {
      continue;
    }
    p->coefficient *= s;
    const int64_t span = window->dilations[i] * (window->kernel[i] - 1) + 1;
    const int64_t add = window->same ? 0
                                     : extra[i] + span - window->pads[i] -
                                           window->pads[n + i] - s;
    (*names)[2 + i] = DimAffine(ProductName(p), add, 1).value_or("");
  }
}

// Pad with known pads: each dim plus what it is padded by at its start and
// end (less, for negative pads); opset 18's `axes` picks the dims.
void NamePad(const onnx::NodeProto& node, const DimSource& source,
             int64_t opset, std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value() || x->size() != names->size()) return;
  const int64_t rank = static_cast<int64_t>(x->size());
  Dims pads;
  if (opset < 11) {
    pads = IntsAttr(node, "pads").value_or(Dims());
  } else if (const FoldValue* p = IntegerVector(source, node, 1);
             p != nullptr && p->complete()) {
    pads = p->ints;
  }
  std::vector<int64_t> axes(rank);
  for (int64_t k = 0; k < rank; ++k) axes[k] = k;
  if (node.input_size() > 3 && !node.input(3).empty()) {
    const FoldValue* a = IntegerVector(source, node, 3);
    if (a == nullptr || !a->complete()) return;
    axes = a->ints;
  }
  const int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * n) return;
  for (int64_t k = 0; k < rank; ++k) (*names)[k] = DimText((*x)[k]);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) return;
    const int64_t add = pads[i] + pads[n + i];
    const Dim& in = (*x)[a];
    if (!in.named() || add < -(int64_t{1} << 40) || add > (int64_t{1} << 40)) {
      (*names)[a] = "";  // A size ONNX works out itself, or none.
      continue;
    }
    (*names)[a] = DimAffine(in.name, add, 1).value_or("");
  }
}

// DepthToSpace and SpaceToDepth by `blocksize` b: [n, c/(b*b), h*b, w*b]
// and [n, c*b*b, h/b, w/b] (a run's h and w are multiples of b there).
void NameDepthSpace(const onnx::NodeProto& node, const DimSource& source,
                    std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  const int64_t b = IntAttr(node, "blocksize", 0);
  if (!x.has_value() || x->size() != 4 || names->size() != 4 || b < 1 ||
      b > (1 << 10)) {
    return;
  }
  const bool to_space = node.op_type() == "DepthToSpace";
  (*names)[0] = DimText((*x)[0]);
  for (size_t k = 1; k < 4; ++k) {
    std::optional<DimProduct> p = (*x)[k].AsProduct();
    if (!(*x)[k].named() || !p.has_value() || p->coefficient < 1) continue;
    // Channels shrink and space grows toward space, and back.
    const bool grows = (k == 1) != to_space;
    const int64_t by = k == 1 ? b * b : b;
    if (grows) {
      if (p->coefficient > (int64_t{1} << 40) / by) continue;
      p->coefficient *= by;
      (*names)[k] = ProductName(p);
    } else {
      (*names)[k] = DimAffine((*x)[k].name, 0, by).value_or("");
    }
  }
}

// Split without sizes: equal parts of the axis's dim (opset 18's
// num_outputs: each ceil(dim/n), the last at most that).
void NameSplit(const onnx::NodeProto& node, int output, const DimSource& source,
               int64_t opset, const std::string& tag,
               std::vector<std::string>* names) {
  std::optional<std::vector<Dim>> x = InputDims(source, node, 0);
  if (!x.has_value() || x->size() != names->size()) return;
  const int64_t axis = AxisAttr(node, "axis", 0, x->size());
  const bool sized = Attr(node, "split") != nullptr ||
                     (node.input_size() > 1 && !node.input(1).empty());
  const int64_t parts = node.output_size();
  if (axis < 0 || sized || parts < 1) return;
  for (size_t k = 0; k < x->size(); ++k) (*names)[k] = DimText((*x)[k]);
  const Dim& in = (*x)[axis];
  if (!in.named()) return;
  if (opset < 18) {
    (*names)[axis] = DimAffine(in.name, 0, parts).value_or("");
    return;
  }
  const std::string chunk = DimAffine(in.name, parts - 1, parts).value_or("");
  (*names)[axis] =
      output + 1 < parts ? chunk : Bounded(absl::StrCat(tag, "_", axis), chunk);
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
  (*names)[0] = ProductOf({x->begin(), x->begin() + axis});
  (*names)[1] = ProductOf({x->begin() + axis, x->end()});
}

// floor(in * s) for another scale: floor(p*in / q) where s is p/q exactly
// (1.5 is 3/2; the kernels multiply exactly there), else at most
// ceil(s)*in, a bounded dim. "" where `in` is no product.
std::string RationalScaled(const Dim& in, double s, const std::string& tag) {
  std::optional<DimProduct> p = in.AsProduct();
  if (!p.has_value() || p->coefficient < 1) return "";
  for (int64_t q = 2; q <= 64; ++q) {
    const double num = s * static_cast<double>(q);
    if (num != std::floor(num) || num > (1 << 20)) continue;
    const int64_t mul = static_cast<int64_t>(num);
    if (p->coefficient > (int64_t{1} << 40) / mul) return "";
    DimProduct scaled = *p;
    scaled.coefficient *= mul;
    return DimAffine(ProductName(scaled), 0, q).value_or("");
  }
  const int64_t up = static_cast<int64_t>(std::ceil(s));
  if (p->coefficient > (int64_t{1} << 40) / up) return "";
  p->coefficient *= up;
  return Bounded(tag, ProductName(p));
}

// Resize and Upsample: floor(dim * scale) for a known scale (exactly for
// an integer, the inverse of one or a fraction of small terms, else at
// most ceil(scale)*dim), or the dims `sizes` names.
void NameResize(const onnx::NodeProto& node, const DimSource& source,
                int64_t opset, const std::string& tag,
                std::vector<std::string>* names) {
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
    } else {
      (*names)[k] = RationalScaled(in, s, absl::StrCat(tag, "_", k));
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

std::string DataDependentTag(const onnx::NodeProto& node, int output,
                             absl::string_view scope) {
  // FNV-1a of the scope and the output's name: the same tag in every round
  // of inference and every import, and one per value (a name is unique in
  // its graph; two bodies may each have one of a name).
  uint64_t hash = 14695981039346656037u;
  for (absl::string_view part : {scope, absl::string_view("/"),
                                 absl::string_view(node.output(output))}) {
    for (char c : part) {
      hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211u;
    }
  }
  return absl::StrCat(absl::AsciiStrToLower(node.op_type().substr(0, 32)), "_",
                      absl::Hex(hash, absl::kZeroPad16));
}

std::vector<std::string> DeriveOutputDimNames(const onnx::NodeProto& node,
                                              int output, int rank,
                                              const DimSource& source,
                                              int64_t opset) {
  std::vector<std::string> names(std::max(rank, 0));
  if (rank <= 0 || output < 0 || output >= node.output_size()) return names;
  const std::string& op = node.op_type();
  // TopK's values and indices are one size, and Unique's outputs; If's
  // and Split's outputs each their own.
  const std::string tag = DataDependentTag(
      node, op == "If" || op == "Split" ? output : 0, source.scope);
  if (op == "TopK" && output < 2) {
    NameTopK(node, source, tag, &names);
  } else if (op == "Unique") {
    NameUnique(node, output, source, tag, &names);
  } else if (op == "Split") {
    NameSplit(node, output, source, opset, tag, &names);
  } else if (op == "If") {
    NameIf(node, output, source, tag, &names);
  } else if (output > 0) {
    return names;
  } else if (op == "Conv" || op == "MaxPool" || op == "AveragePool" ||
             op == "LpPool") {
    NameWindowed(node, source, tag, &names);
  } else if (op == "ConvTranspose") {
    NameConvTranspose(node, source, &names);
  } else if (op == "Reshape") {
    NameReshape(node, source, &names);
  } else if (op == "Pad") {
    NamePad(node, source, opset, &names);
  } else if (op == "DepthToSpace" || op == "SpaceToDepth") {
    NameDepthSpace(node, source, &names);
  } else if (op == "Expand") {
    NameExpand(node, source, &names);
  } else if (op == "ConstantOfShape") {
    NameConstantOfShape(node, source, &names);
  } else if (op == "Tile") {
    NameTile(node, source, &names);
  } else if (op == "Flatten") {
    NameFlatten(node, source, &names);
  } else if (op == "Resize" || op == "Upsample") {
    NameResize(node, source, opset, tag, &names);
  } else if (op == "NonZero") {
    NameNonZero(node, source, tag, &names);
  } else if (op == "Compress") {
    NameCompress(node, source, tag, &names);
  } else if (op == "NonMaxSuppression") {
    NameNonMaxSuppression(node, source, tag, &names);
  } else if (op == "Concat") {
    NameConcat(node, source, tag, &names);
  } else if (op == "Slice") {
    NameSlice(node, source, tag, &names);
  } else if (op == "Gather") {
    NameGather(node, source, &names);
  } else if (IsBroadcastOp(op)) {
    NameBroadcast(node, source, tag, &names);
  }
  for (std::string& name : names) {
    if (!Usable(name)) name.clear();
  }
  return names;
}

}  // namespace glint::onnx_internal
