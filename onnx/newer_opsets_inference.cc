#include "onnx/newer_opsets_inference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnx/defs/shape_inference.h"
#include "onnx/defs/tensor_proto_util.h"

namespace glint::onnx_internal {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::TensorShapeProto;
using Dims = std::vector<int64_t>;

namespace {

// --- Small pieces of inference -------------------------------------------

bool HasInput(InferenceContext& ctx, size_t i) {
  return ctx.getNumInputs() > i && ctx.getInputType(i) != nullptr;
}

const TensorShapeProto* InputShape(InferenceContext& ctx, size_t i) {
  return onnx::hasInputShape(ctx, i) ? &onnx::getInputShape(ctx, i) : nullptr;
}

// The integer values of constant input `i` (an initializer or a Constant
// node's output); nullopt where it is absent or computed at run time.
std::optional<Dims> InputInts(InferenceContext& ctx, size_t i) {
  if (!HasInput(ctx, i)) return std::nullopt;
  const onnx::TensorProto* data = ctx.getInputData(i);
  if (data == nullptr) return std::nullopt;
  if (data->data_type() == onnx::TensorProto::INT64) {
    return onnx::ParseData<int64_t>(data);
  }
  if (data->data_type() == onnx::TensorProto::INT32) {
    std::vector<int32_t> v = onnx::ParseData<int32_t>(data);
    return Dims(v.begin(), v.end());
  }
  return std::nullopt;
}

std::optional<std::vector<float>> InputFloats(InferenceContext& ctx,
                                              size_t i) {
  if (!HasInput(ctx, i)) return std::nullopt;
  const onnx::TensorProto* data = ctx.getInputData(i);
  if (data == nullptr || data->data_type() != onnx::TensorProto::FLOAT) {
    return std::nullopt;
  }
  return onnx::ParseData<float>(data);
}

std::optional<Dims> IntsAttr(InferenceContext& ctx, const char* name) {
  const AttributeProto* a = ctx.getAttribute(name);
  if (a == nullptr) return std::nullopt;
  return Dims(a->ints().begin(), a->ints().end());
}

int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    fail_shape_inference(what, " axis ", axis, " is out of range for rank ",
                         rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// An output of `rank` unknown dims.
void SetRank(InferenceContext& ctx, size_t out, int64_t rank) {
  TensorShapeProto* shape = onnx::getOutputShape(ctx, out);
  shape->clear_dim();
  for (int64_t d = 0; d < rank; ++d) shape->add_dim();
}

bool Known(const TensorShapeProto::Dimension& d) {
  return d.has_dim_value();
}

}  // namespace

void PropagateFirst(InferenceContext& ctx) {
  onnx::propagateShapeAndTypeFromFirstInput(ctx);
}

// --- Inference functions ---------------------------------------------------

// Reduce*-18 and later: axes are input 1.
void InferReduce(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (in == nullptr) return;
  const int64_t rank = in->dim_size();
  const bool keep = onnx::getAttribute(ctx, "keepdims", 1) != 0;
  const bool noop = onnx::getAttribute(ctx, "noop_with_empty_axes", 0) != 0;
  Dims axes;
  if (HasInput(ctx, 1)) {
    std::optional<Dims> given = InputInts(ctx, 1);
    if (!given.has_value()) {
      // Axes computed at run time: the rank is known only if kept.
      if (keep) SetRank(ctx, 0, rank);
      return;
    }
    axes = *given;
  }
  if (axes.empty() && noop) {
    onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
    return;
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[NormalizeAxis(a, rank, "Reduce")] = true;
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  out->clear_dim();
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      *out->add_dim() = in->dim(d);
    } else if (keep) {
      out->add_dim()->set_dim_value(1);
    }
  }
}

// Split-18: `split` input or `num_outputs` (the last chunk smaller).
void InferSplit(InferenceContext& ctx) {
  const size_t n = ctx.getNumOutputs();
  for (size_t o = 0; o < n; ++o) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, o);
  }
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (in == nullptr) return;
  const int64_t rank = in->dim_size();
  const int64_t axis =
      NormalizeAxis(onnx::getAttribute(ctx, "axis", 0), rank, "Split");
  const AttributeProto* num = ctx.getAttribute("num_outputs");
  if (num != nullptr && HasInput(ctx, 1)) {
    fail_shape_inference("Split: both the split input and num_outputs given");
  }
  if (num != nullptr && num->i() != static_cast<int64_t>(n)) {
    fail_shape_inference("Split: num_outputs is ", num->i(), " but the node has ",
                         n, " outputs");
  }
  std::optional<Dims> sizes;
  if (HasInput(ctx, 1)) {
    sizes = InputInts(ctx, 1);
    if (sizes.has_value() && sizes->size() != n) {
      fail_shape_inference("Split: split has ", sizes->size(),
                           " entries for ", n, " outputs");
    }
  } else if (Known(in->dim(axis))) {
    const int64_t dim = in->dim(axis).dim_value();
    const int64_t parts = static_cast<int64_t>(n);
    if (num == nullptr && dim % parts != 0) {
      fail_shape_inference("Split: dim ", dim, " does not split evenly into ",
                           parts);
    }
    const int64_t chunk = (dim + parts - 1) / parts;
    sizes = Dims();
    for (int64_t k = 0; k < parts; ++k) {
      sizes->push_back(std::max<int64_t>(0, std::min(chunk, dim - k * chunk)));
    }
  }
  for (size_t o = 0; o < n; ++o) {
    TensorShapeProto* out = onnx::getOutputShape(ctx, o);
    *out = *in;
    out->mutable_dim(axis)->Clear();
    if (sizes.has_value()) out->mutable_dim(axis)->set_dim_value((*sizes)[o]);
  }
}

// Pad-18: pads for `axes` (input 3) or for every axis.
void InferPad(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (in == nullptr) return;
  const int64_t rank = in->dim_size();
  std::optional<Dims> pads = InputInts(ctx, 1);
  Dims axes;
  if (HasInput(ctx, 3)) {
    std::optional<Dims> given = InputInts(ctx, 3);
    if (!given.has_value()) {
      SetRank(ctx, 0, rank);
      return;
    }
    for (int64_t a : *given) axes.push_back(NormalizeAxis(a, rank, "Pad"));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (!pads.has_value()) {
    SetRank(ctx, 0, rank);
    return;
  }
  const int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads->size()) != 2 * n) {
    fail_shape_inference("Pad: pads has ", pads->size(), " entries for ", n,
                         " axes");
  }
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  *out = *in;
  for (int64_t k = 0; k < n; ++k) {
    auto* d = out->mutable_dim(axes[k]);
    if (!d->has_dim_value()) {
      d->Clear();
      continue;
    }
    const int64_t size = d->dim_value() + (*pads)[k] + (*pads)[k + n];
    if (size < 0) fail_shape_inference("Pad: negative output size");
    d->Clear();
    d->set_dim_value(size);
  }
}

// Resize-18/19: scales or sizes for `axes`, keep_aspect_ratio_policy.
void InferResize(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (in == nullptr) return;
  const int64_t rank = in->dim_size();
  Dims axes;
  if (std::optional<Dims> a = IntsAttr(ctx, "axes"); a.has_value()) {
    for (int64_t x : *a) axes.push_back(NormalizeAxis(x, rank, "Resize"));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const int64_t n = static_cast<int64_t>(axes.size());
  std::optional<Dims> sizes = InputInts(ctx, 3);
  std::optional<std::vector<float>> scales = InputFloats(ctx, 2);
  if (scales.has_value() && scales->empty()) scales.reset();
  if (sizes.has_value() && sizes->empty()) sizes.reset();
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  *out = *in;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
      out->mutable_dim(d)->Clear();
    }
  }
  const std::string policy =
      onnx::getAttribute(ctx, "keep_aspect_ratio_policy", std::string("stretch"));
  if (sizes.has_value()) {
    if (static_cast<int64_t>(sizes->size()) != n) {
      fail_shape_inference("Resize: sizes has ", sizes->size(),
                           " entries for ", n, " axes");
    }
    if (policy == "stretch") {
      for (int64_t k = 0; k < n; ++k) {
        out->mutable_dim(axes[k])->set_dim_value((*sizes)[k]);
      }
      return;
    }
    // One scale for every axis, the smallest or largest ratio.
    double scale = policy == "not_larger" ? 1e300 : 0.0;
    for (int64_t k = 0; k < n; ++k) {
      if (!Known(in->dim(axes[k])) || in->dim(axes[k]).dim_value() == 0) return;
      const double r = static_cast<double>((*sizes)[k]) /
                       static_cast<double>(in->dim(axes[k]).dim_value());
      scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
    }
    for (int64_t k = 0; k < n; ++k) {
      out->mutable_dim(axes[k])->set_dim_value(static_cast<int64_t>(
          std::round(scale * in->dim(axes[k]).dim_value())));
    }
    return;
  }
  if (scales.has_value()) {
    if (static_cast<int64_t>(scales->size()) != n) {
      fail_shape_inference("Resize: scales has ", scales->size(),
                           " entries for ", n, " axes");
    }
    for (int64_t k = 0; k < n; ++k) {
      if (!Known(in->dim(axes[k]))) continue;
      out->mutable_dim(axes[k])->set_dim_value(static_cast<int64_t>(
          std::floor(in->dim(axes[k]).dim_value() * (*scales)[k])));
    }
  }
}

// The spatial output size of a pooling window (AveragePool-19, LpPool-18).
void InferPool(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (in == nullptr) return;
  const int64_t rank = in->dim_size();
  if (rank < 3) fail_shape_inference("pooling needs an input of rank >= 3");
  const int64_t n = rank - 2;
  Dims kernel = IntsAttr(ctx, "kernel_shape").value_or(Dims());
  if (static_cast<int64_t>(kernel.size()) != n) {
    fail_shape_inference("kernel_shape has ", kernel.size(), " entries for ",
                         n, " spatial axes");
  }
  Dims strides = IntsAttr(ctx, "strides").value_or(Dims(n, 1));
  Dims dilations = IntsAttr(ctx, "dilations").value_or(Dims(n, 1));
  Dims pads = IntsAttr(ctx, "pads").value_or(Dims(2 * n, 0));
  if (static_cast<int64_t>(strides.size()) != n ||
      static_cast<int64_t>(dilations.size()) != n ||
      static_cast<int64_t>(pads.size()) != 2 * n) {
    fail_shape_inference("strides, dilations or pads of the wrong length");
  }
  const std::string auto_pad =
      onnx::getAttribute(ctx, "auto_pad", std::string("NOTSET"));
  const bool ceil_mode = onnx::getAttribute(ctx, "ceil_mode", 0) != 0;
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  out->clear_dim();
  *out->add_dim() = in->dim(0);
  *out->add_dim() = in->dim(1);
  for (int64_t i = 0; i < n; ++i) {
    auto* d = out->add_dim();
    if (!Known(in->dim(i + 2))) continue;
    if (strides[i] < 1 || dilations[i] < 1 || kernel[i] < 1) {
      fail_shape_inference("kernel, strides and dilations must be positive");
    }
    const int64_t size = in->dim(i + 2).dim_value();
    const int64_t window = (kernel[i] - 1) * dilations[i] + 1;
    int64_t o;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = (size + strides[i] - 1) / strides[i];
    } else if (auto_pad == "VALID") {
      o = size >= window ? (size - window) / strides[i] + 1 : 0;
    } else {
      const int64_t span = size + pads[i] + pads[i + n] - window;
      if (span < 0) fail_shape_inference("the window is larger than the input");
      o = (ceil_mode ? (span + strides[i] - 1) / strides[i]
                     : span / strides[i]) + 1;
      // A last window starting in the end padding is dropped.
      if (ceil_mode && (o - 1) * strides[i] >= size + pads[i]) --o;
    }
    d->set_dim_value(o);
  }
}

// Col2Im-18: [N, C * prod(block_shape), L] -> [N, C, image_shape...].
void InferCol2Im(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  std::optional<Dims> image = InputInts(ctx, 1);
  std::optional<Dims> block = InputInts(ctx, 2);
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (!image.has_value()) return;
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  out->clear_dim();
  auto* n = out->add_dim();
  auto* c = out->add_dim();
  for (int64_t d : *image) out->add_dim()->set_dim_value(d);
  if (in == nullptr || in->dim_size() != 3) return;
  *n = in->dim(0);
  if (block.has_value() && Known(in->dim(1))) {
    int64_t prod = 1;
    for (int64_t b : *block) prod *= b;
    if (prod <= 0 || in->dim(1).dim_value() % prod != 0) {
      fail_shape_inference("Col2Im: input channels are not a multiple of the "
                           "block size");
    }
    c->set_dim_value(in->dim(1).dim_value() / prod);
  }
}

// CenterCropPad-18: `shape` (input 1) on `axes`.
void InferCenterCropPad(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (in == nullptr) return;
  const int64_t rank = in->dim_size();
  Dims axes;
  if (std::optional<Dims> a = IntsAttr(ctx, "axes"); a.has_value()) {
    for (int64_t x : *a) axes.push_back(NormalizeAxis(x, rank, "CenterCropPad"));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::optional<Dims> shape = InputInts(ctx, 1);
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  *out = *in;
  for (size_t k = 0; k < axes.size(); ++k) {
    auto* d = out->mutable_dim(axes[k]);
    d->Clear();
    if (shape.has_value()) {
      if (shape->size() != axes.size()) {
        fail_shape_inference("CenterCropPad: shape has ", shape->size(),
                             " entries for ", axes.size(), " axes");
      }
      d->set_dim_value((*shape)[k]);
    }
  }
}

void InferBroadcast(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (onnx::hasNInputShapes(ctx, 2)) {
    onnx::bidirectionalBroadcastShapeInference(
        onnx::getInputShape(ctx, 0), onnx::getInputShape(ctx, 1),
        *onnx::getOutputShape(ctx, 0));
  }
}

void InferCast(InferenceContext& ctx) {
  onnx::propagateElemTypeFromAttributeToOutput(ctx, "to", 0);
  if (onnx::hasInputShape(ctx, 0)) {
    onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  }
}

void InferCastLike(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
  if (onnx::hasInputShape(ctx, 0)) {
    onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  }
}

// DFT-20: axis (input 2, default -2) and dft_length (input 1) as inputs.
void InferDft(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const TensorShapeProto* in = InputShape(ctx, 0);
  if (in == nullptr) return;
  const int64_t rank = in->dim_size();
  if (rank < 2) fail_shape_inference("DFT: input of rank < 2");
  int64_t axis = -2;
  if (HasInput(ctx, 2)) {
    std::optional<Dims> a = InputInts(ctx, 2);
    if (!a.has_value() || a->size() != 1) {
      SetRank(ctx, 0, rank);
      return;
    }
    axis = (*a)[0];
  }
  // The last axis holds the real and imaginary parts; it is not a signal
  // axis.
  if (axis < -rank || axis >= rank - 1 || axis == -1) {
    fail_shape_inference("DFT: axis ", axis, " is out of range");
  }
  if (axis < 0) axis += rank;
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  *out = *in;
  out->mutable_dim(rank - 1)->Clear();
  out->mutable_dim(rank - 1)->set_dim_value(2);
  auto* d = out->mutable_dim(axis);
  std::optional<int64_t> length;
  if (HasInput(ctx, 1)) {
    std::optional<Dims> l = InputInts(ctx, 1);
    if (!l.has_value() || l->size() != 1) {
      d->Clear();
      return;
    }
    length = (*l)[0];
  } else if (Known(in->dim(axis))) {
    length = in->dim(axis).dim_value();
  }
  d->Clear();
  if (!length.has_value()) return;
  const bool onesided = onnx::getAttribute(ctx, "onesided", 0) != 0;
  d->set_dim_value(onesided ? *length / 2 + 1 : *length);
}

// AffineGrid-20: theta [N, 2, 3] or [N, 3, 4], size [N, C, H, W(, D)].
void InferAffineGrid(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  std::optional<Dims> size = InputInts(ctx, 1);
  if (!size.has_value()) return;
  if (size->size() != 4 && size->size() != 5) {
    fail_shape_inference("AffineGrid: size must have 4 or 5 entries");
  }
  TensorShapeProto* out = onnx::getOutputShape(ctx, 0);
  out->clear_dim();
  out->add_dim()->set_dim_value((*size)[0]);
  for (size_t k = 2; k < size->size(); ++k) {
    out->add_dim()->set_dim_value((*size)[k]);
  }
  out->add_dim()->set_dim_value(static_cast<int64_t>(size->size()) - 2);
}

// Attention-23. Q [B, Hq, Sq, D] (or [B, Sq, Hq*D] with q_num_heads),
// K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv], optional past_key/past_value
// [B, Hkv, Spast, D]; Y is Q's form with V's head size.
void InferAttention(InferenceContext& ctx) {
  for (size_t o = 0; o < ctx.getNumOutputs(); ++o) {
    if (ctx.getOutputType(o) != nullptr) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, o);
    }
  }
  const TensorShapeProto* q = InputShape(ctx, 0);
  const TensorShapeProto* k = InputShape(ctx, 1);
  const TensorShapeProto* v = InputShape(ctx, 2);
  if (q == nullptr || v == nullptr) return;
  if (q->dim_size() != v->dim_size() ||
      (q->dim_size() != 3 && q->dim_size() != 4)) {
    fail_shape_inference("Attention: Q and V must both be 3-D or 4-D");
  }
  TensorShapeProto* y = onnx::getOutputShape(ctx, 0);
  *y = *q;
  auto* last = y->mutable_dim(q->dim_size() - 1);
  last->Clear();
  if (q->dim_size() == 4) {
    if (Known(v->dim(3))) last->set_dim_value(v->dim(3).dim_value());
  } else {
    const int64_t qh = onnx::getAttribute(ctx, "q_num_heads", 0);
    const int64_t kvh = onnx::getAttribute(ctx, "kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0) {
      fail_shape_inference("Attention: 3-D inputs need q_num_heads and "
                           "kv_num_heads");
    }
    if (Known(v->dim(2)) && v->dim(2).dim_value() % kvh == 0) {
      last->set_dim_value(v->dim(2).dim_value() / kvh * qh);
    }
  }
  if (q->dim_size() != 4 || k == nullptr || k->dim_size() != 4) return;
  // present_key/value: the past followed by this call's keys/values.
  const TensorShapeProto* past = InputShape(ctx, 4);
  auto total = [&](const TensorShapeProto& now) {
    TensorShapeProto::Dimension d;
    if (past != nullptr && past->dim_size() == 4) {
      if (Known(past->dim(2)) && Known(now.dim(2))) {
        d.set_dim_value(past->dim(2).dim_value() + now.dim(2).dim_value());
      }
    } else {
      d = now.dim(2);
    }
    return d;
  };
  for (size_t o = 1; o <= 2 && o < ctx.getNumOutputs(); ++o) {
    if (ctx.getOutputType(o) == nullptr) continue;
    const TensorShapeProto& src = o == 1 ? *k : *v;
    TensorShapeProto* p = onnx::getOutputShape(ctx, o);
    *p = src;
    *p->mutable_dim(2) = total(src);
  }
  if (ctx.getNumOutputs() > 3 && ctx.getOutputType(3) != nullptr) {
    TensorShapeProto* qk = onnx::getOutputShape(ctx, 3);
    qk->clear_dim();
    *qk->add_dim() = q->dim(0);
    *qk->add_dim() = q->dim(1);
    *qk->add_dim() = q->dim(2);
    *qk->add_dim() = total(*k);
  }
}

void InferQuantizeLinear(InferenceContext& ctx) {
  int32_t type = onnx::TensorProto::UINT8;
  if (HasInput(ctx, 2)) {
    type = ctx.getInputType(2)->tensor_type().elem_type();
  } else if (const AttributeProto* a = ctx.getAttribute("output_dtype");
             a != nullptr && a->i() != 0) {
    type = static_cast<int32_t>(a->i());
  }
  onnx::updateOutputElemType(ctx, 0, type);
  if (onnx::hasInputShape(ctx, 0)) {
    onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  }
}

void InferDequantizeLinear(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
  if (onnx::hasInputShape(ctx, 0)) {
    onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  }
}

void InferRMSNormalization(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
  if (onnx::hasInputShape(ctx, 0)) {
    onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  }
}

}  // namespace glint::onnx_internal
