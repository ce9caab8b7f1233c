// Folding passes: constants, BatchNormalization into Conv, QDQ pairs into
// int8 ops; dropping unused initializers. optimizer/optimize.h.
#include "optimizer/optimize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "optimizer/graph_edit.h"

namespace glint {

using optimizer_internal::AddInitializer;
using optimizer_internal::FindProducer;
using optimizer_internal::FloatInitializer;
using optimizer_internal::FreshName;
using optimizer_internal::IsDefaultDomain;
using optimizer_internal::IsUnary;
using optimizer_internal::MergeInto;
using optimizer_internal::SoleConsumer;
using optimizer_internal::Uses;

absl::Status FoldConstants(Graph* graph, const RewriteBackend& backend) {
  if (!backend.evaluate) return absl::OkStatus();
  const Uses uses(*graph);
  for (size_t i = 0; i < graph->nodes.size();) {
    const Node& node = graph->nodes[i];
    bool foldable = IsDefaultDomain(node) &&
                    (node.num_inputs() > 0 || node.op_type == "Constant");
    for (const std::string& in : node.inputs) {
      foldable = foldable && (in.empty() || graph->IsInitializer(in));
    }
    for (const std::string& out : node.outputs) {
      foldable = foldable && !uses.IsGraphOutput(out);
    }
    std::optional<std::vector<Tensor>> results;
    if (foldable) results = backend.evaluate(*graph, node);
    if (!results.has_value() || results->size() != node.outputs.size()) {
      ++i;
      continue;
    }
    const std::vector<std::string> outputs = node.outputs;
    graph->nodes.erase(graph->nodes.begin() + i);
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].empty()) continue;
      AddInitializer(graph, outputs[o], std::move((*results)[o]));
    }
  }
  return absl::OkStatus();
}

absl::Status FoldBatchNormIntoConv(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& conv = graph->nodes[i];
    if (!IsDefaultDomain(conv) || conv.op_type != "Conv" ||
        conv.outputs.size() != 1) {
      continue;
    }
    const int j = SoleConsumer(*graph, i);
    if (j < 0) continue;
    const Node& bn = graph->nodes[j];
    if (!IsDefaultDomain(bn) || bn.op_type != "BatchNormalization" ||
        bn.inputs.size() != 5 || bn.inputs[0] != conv.outputs[0] ||
        bn.GetInt("training_mode", 0) != 0) {
      continue;
    }
    bool extra_outputs = false;
    for (size_t o = 1; o < bn.outputs.size(); ++o) {
      extra_outputs = extra_outputs || !bn.outputs[o].empty();
    }
    if (extra_outputs || bn.outputs.empty() || bn.outputs[0].empty()) continue;
    const Tensor* w = FloatInitializer(*graph, conv.inputs[1]);
    const Tensor* b =
        conv.has_input(2) ? FloatInitializer(*graph, conv.inputs[2]) : nullptr;
    if (w == nullptr || w->shape().rank() < 3 || (conv.has_input(2) && !b)) {
      continue;
    }
    const int64_t m = w->shape().dim(0);
    const Tensor* params[4];
    bool ok = b == nullptr || b->num_elements() == m;
    for (int p = 0; p < 4; ++p) {
      params[p] = FloatInitializer(*graph, bn.inputs[p + 1]);
      ok = ok && params[p] != nullptr && params[p]->num_elements() == m;
    }
    if (!ok) continue;
    const float eps = bn.GetFloat("epsilon", 1e-5f);
    const float* scale = params[0]->data<float>();
    const float* shift = params[1]->data<float>();
    const float* mean = params[2]->data<float>();
    const float* var = params[3]->data<float>();
    GLINT_ASSIGN_OR_RETURN(Tensor new_w,
                           Tensor::Create(DType::kFloat32, w->shape()));
    GLINT_ASSIGN_OR_RETURN(Tensor new_b,
                           Tensor::Create(DType::kFloat32, Shape({m})));
    const int64_t per_channel = w->num_elements() / std::max<int64_t>(m, 1);
    for (int64_t c = 0; c < m; ++c) {
      // BN(y) = (y - mean) * s + shift with s = scale / sqrt(var + eps);
      // y = W*x + b, so W' = W * s and b' = (b - mean) * s + shift.
      const float s = scale[c] / std::sqrt(var[c] + eps);
      const float* src = w->data<float>() + c * per_channel;
      float* dst = new_w.data<float>() + c * per_channel;
      for (int64_t k = 0; k < per_channel; ++k) dst[k] = src[k] * s;
      const float bias = b != nullptr ? b->data<float>()[c] : 0.0f;
      new_b.data<float>()[c] = (bias - mean[c]) * s + shift[c];
    }
    const std::string w_name = FreshName(*graph, conv.name + "_bn_w");
    AddInitializer(graph, w_name, std::move(new_w));
    const std::string b_name = FreshName(*graph, conv.name + "_bn_b");
    AddInitializer(graph, b_name, std::move(new_b));
    Node& target = graph->nodes[i];
    target.inputs.resize(3);
    target.inputs[1] = w_name;
    target.inputs[2] = b_name;
    MergeInto(graph, i, j);
  }
  return absl::OkStatus();
}

namespace {

// The first and last taps of one spatial axis of a convolution that read
// any input element at some output position (the others read only
// padding, which is zero): nullopt when every tap does, or none does.
std::optional<std::pair<int64_t, int64_t>> LiveTaps(int64_t in, int64_t k,
                                                    int64_t stride,
                                                    int64_t dilation,
                                                    int64_t pad_begin,
                                                    int64_t pad_end) {
  const int64_t span = (k - 1) * dilation + 1;
  if (in <= 0 || stride <= 0 || dilation <= 0 ||
      in + pad_begin + pad_end < span) {
    return std::nullopt;
  }
  const int64_t out = (in + pad_begin + pad_end - span) / stride + 1;
  int64_t lo = -1, hi = -1;
  for (int64_t t = 0; t < k; ++t) {
    bool live = false;
    for (int64_t o = 0; o < out && !live; ++o) {
      const int64_t pos = o * stride - pad_begin + t * dilation;
      live = pos >= 0 && pos < in;
    }
    if (!live) continue;
    if (lo < 0) lo = t;
    hi = t;
  }
  if (lo < 0 || (lo == 0 && hi == k - 1)) return std::nullopt;
  return std::make_pair(lo, hi);
}

}  // namespace

absl::Status TrimDeadConvTaps(Graph* graph) {
  for (Node& conv : graph->nodes) {
    if (!IsDefaultDomain(conv) || conv.op_type != "Conv" ||
        conv.inputs.size() < 2 || conv.outputs.size() != 1) {
      continue;
    }
    const std::string auto_pad = conv.GetString("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && !auto_pad.empty()) continue;
    const Tensor* w = FloatInitializer(*graph, conv.inputs[1]);
    const ValueInfo* x = graph->FindValue(conv.inputs[0]);
    if (w == nullptr || w->shape().rank() != 4 || x == nullptr ||
        !x->shape.has_rank() || x->shape.rank() != 4) {
      continue;
    }
    const std::vector<int64_t> strides = conv.GetInts("strides", {1, 1});
    const std::vector<int64_t> dilations = conv.GetInts("dilations", {1, 1});
    const std::vector<int64_t> pads = conv.GetInts("pads", {0, 0, 0, 0});
    if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) {
      continue;
    }
    int64_t lo[2], hi[2];
    bool trimmed = false;
    for (int a = 0; a < 2; ++a) {
      const int64_t k = w->shape().dim(2 + a);
      lo[a] = 0;
      hi[a] = k - 1;
      const auto live = LiveTaps(x->shape.dim(2 + a), k, strides[a],
                                 dilations[a], pads[a], pads[2 + a]);
      // The new pads must stay >= 0 (they do unless a stride skips over
      // the input entirely, which the check keeps out).
      if (!live || pads[a] - live->first * dilations[a] < 0 ||
          pads[2 + a] - (k - 1 - live->second) * dilations[a] < 0) {
        continue;
      }
      lo[a] = live->first;
      hi[a] = live->second;
      trimmed = true;
    }
    if (!trimmed) continue;
    const int64_t m = w->shape().dim(0), c = w->shape().dim(1);
    const int64_t kh = w->shape().dim(2), kw = w->shape().dim(3);
    const int64_t nh = hi[0] - lo[0] + 1, nw = hi[1] - lo[1] + 1;
    GLINT_ASSIGN_OR_RETURN(
        Tensor new_w, Tensor::Create(DType::kFloat32, Shape({m, c, nh, nw})));
    const float* src = w->data<float>();
    float* dst = new_w.data<float>();
    for (int64_t mc = 0; mc < m * c; ++mc) {
      for (int64_t r = 0; r < nh; ++r) {
        for (int64_t q = 0; q < nw; ++q) {
          dst[(mc * nh + r) * nw + q] =
              src[(mc * kh + lo[0] + r) * kw + lo[1] + q];
        }
      }
    }
    const std::string w_name = FreshName(*graph, conv.name + "_live_w");
    AddInitializer(graph, w_name, std::move(new_w));
    conv.inputs[1] = w_name;
    conv.attributes["pads"] = std::vector<int64_t>{
        pads[0] - lo[0] * dilations[0], pads[1] - lo[1] * dilations[1],
        pads[2] - (kh - 1 - hi[0]) * dilations[0],
        pads[3] - (kw - 1 - hi[1]) * dilations[1]};
    if (conv.HasAttribute("kernel_shape")) {
      conv.attributes["kernel_shape"] = std::vector<int64_t>{nh, nw};
    }
  }
  return absl::OkStatus();
}

namespace {

// A DequantizeLinear producing `value` whose scale (and zero point, if
// any) are initializers: its node index, inputs and axis.
struct Dequantize {
  int node = -1;
  std::string q, scale, zero;
  int64_t axis = 1;
  int64_t params = 1;  // Scale elements.
};

std::optional<Dequantize> FindDequantize(const Graph& graph, int before,
                                         const std::string& value) {
  if (value.empty()) return std::nullopt;
  const int p = FindProducer(graph, before, value);
  if (p < 0) return std::nullopt;
  const Node& dq = graph.nodes[p];
  if (!IsDefaultDomain(dq) || dq.op_type != "DequantizeLinear" ||
      dq.inputs.size() < 2 || dq.outputs.size() != 1) {
    return std::nullopt;
  }
  const Tensor* scale = FloatInitializer(graph, dq.inputs[1]);
  const Tensor* zero =
      dq.has_input(2) ? graph.FindInitializer(dq.inputs[2]) : nullptr;
  const ValueInfo* q = graph.FindValue(dq.inputs[0]);
  if (scale == nullptr || (dq.has_input(2) && zero == nullptr) ||
      q == nullptr) {
    return std::nullopt;
  }
  Dequantize d;
  d.node = p;
  d.q = dq.inputs[0];
  d.scale = dq.inputs[1];
  d.zero = dq.has_input(2) ? dq.inputs[2] : "";
  d.axis = graph.opset_version >= 13 ? dq.GetInt("axis", 1) : 1;
  d.params = scale->num_elements();
  if (d.axis < 0) d.axis += q->shape.rank();
  return d;
}

bool IsQuantized8(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.FindValue(value);
  return info != nullptr &&
         (info->dtype == DType::kUInt8 || info->dtype == DType::kInt8);
}

// A per-tensor QuantizeLinear reading `value` alone: its index, or -1.
int SoleQuantize(const Graph& graph, int producer) {
  const int j = SoleConsumer(graph, producer);
  if (j < 0) return -1;
  const Node& q = graph.nodes[j];
  if (!IsDefaultDomain(q) || q.op_type != "QuantizeLinear" ||
      q.inputs.size() < 2 || q.outputs.size() != 1 ||
      q.inputs[0] != graph.nodes[producer].outputs[0]) {
    return -1;
  }
  const Tensor* scale = FloatInitializer(graph, q.inputs[1]);
  if (scale == nullptr || scale->num_elements() != 1 ||
      (q.has_input(2) && graph.FindInitializer(q.inputs[2]) == nullptr)) {
    return -1;
  }
  return j;
}

// Erases the nodes in `erase` (indices) and, among `maybe_dead`, the
// DequantizeLinear nodes nothing reads any more.
void EraseNodes(Graph* graph, std::vector<int> erase,
                const std::vector<int>& maybe_dead) {
  const Uses uses(*graph);
  for (int d : maybe_dead) {
    const std::string& out = graph->nodes[d].outputs[0];
    bool read = uses.IsGraphOutput(out);
    for (size_t i = 0; i < graph->nodes.size() && !read; ++i) {
      if (std::find(erase.begin(), erase.end(), static_cast<int>(i)) !=
          erase.end()) {
        continue;
      }
      for (const std::string& in : graph->nodes[i].inputs) {
        read = read || in == out;
      }
    }
    if (!read) erase.push_back(d);
  }
  std::sort(erase.begin(), erase.end(), std::greater<int>());
  erase.erase(std::unique(erase.begin(), erase.end()), erase.end());
  // Values a remaining node produces (the fused node took over the last
  // one's output) stay.
  absl::flat_hash_set<std::string> kept;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (std::find(erase.begin(), erase.end(), static_cast<int>(i)) ==
        erase.end()) {
      for (const std::string& out : graph->nodes[i].outputs) kept.insert(out);
    }
  }
  for (const ValueInfo& o : graph->outputs) kept.insert(o.name);
  for (int i : erase) {
    for (const std::string& out : graph->nodes[i].outputs) {
      if (!kept.contains(out)) graph->values.erase(out);
    }
    graph->nodes.erase(graph->nodes.begin() + i);
  }
}

// The bias of quantized node `i` (its input 2, given) folded for the
// fused op: a float32 initializer of `channels` elements is used as it
// is; DequantizeLinear of an int32 initializer becomes a float32 copy
// added to the graph, its node in *dequantize. The name, or nullopt when
// the bias does not fit (the node is then left as it is).
absl::StatusOr<std::optional<std::string>> QuantizedBias(Graph* graph, int i,
                                                         int64_t channels,
                                                         int* dequantize) {
  const Node& p = graph->nodes[i];
  const std::string& b = p.inputs[2];
  if (const Tensor* bf = FloatInitializer(*graph, b); bf != nullptr) {
    if (bf->num_elements() != channels) return std::nullopt;
    return b;
  }
  const std::optional<Dequantize> bd = FindDequantize(*graph, i, b);
  const Tensor* bq = bd.has_value() ? graph->FindInitializer(bd->q) : nullptr;
  if (bq == nullptr || bq->num_elements() != channels ||
      (bd->params != 1 && bd->params != channels)) {
    return std::nullopt;
  }
  const Tensor* bs = graph->FindInitializer(bd->scale);
  const Tensor* bz =
      bd->zero.empty() ? nullptr : graph->FindInitializer(bd->zero);
  GLINT_ASSIGN_OR_RETURN(
      Tensor folded, Tensor::Create(DType::kFloat32, Shape({channels})));
  bool ok = true;
  for (int64_t c = 0; c < channels && ok; ++c) {
    auto int_at = [](const Tensor* t, int64_t k) -> int64_t {
      switch (t->dtype()) {
        case DType::kInt32:
          return t->data<int32_t>()[k];
        case DType::kUInt8:
          return t->data<uint8_t>()[k];
        case DType::kInt8:
          return t->data<int8_t>()[k];
        default:
          return 0;
      }
    };
    ok = bq->dtype() == DType::kInt32;
    const int64_t zc =
        bz == nullptr ? 0 : int_at(bz, bd->params == 1 ? 0 : c);
    folded.data<float>()[c] = static_cast<float>(int_at(bq, c) - zc) *
                              bs->data<float>()[bd->params == 1 ? 0 : c];
  }
  if (!ok) return std::nullopt;
  const std::string bias = FreshName(*graph, p.name + "_qbias");
  AddInitializer(graph, bias, std::move(folded));
  *dequantize = bd->node;
  return bias;
}

// Node `i` (Conv, MatMul or Gemm over the dequantized `x` and `w`) becomes
// the fused int8 op, taking the Relu and the per-tensor QuantizeLinear
// after it when they are there; the nodes it swallowed go, and the
// DequantizeLinear nodes (and `bias_dq`, if any) when nothing else reads
// them.
void ReplaceWithQuantizedOp(Graph* graph, int i, const Dequantize& x,
                            const Dequantize& w, const std::string& bias,
                            int bias_dq) {
  const Node& p = graph->nodes[i];
  const bool conv = p.op_type == "Conv";
  const bool trans_b = p.op_type == "Gemm" && p.GetInt("transB", 0) != 0;
  // Relu, then a per-tensor QuantizeLinear, each optional.
  int last = i;
  int relu = SoleConsumer(*graph, i);
  if (relu >= 0 && IsUnary(graph->nodes[relu], "Relu")) {
    last = relu;
  } else {
    relu = -1;
  }
  const int quant = SoleQuantize(*graph, last);
  Node fused;
  fused.name = p.name;
  fused.op_type = conv ? kQLinearFusedConvOp : kQLinearFusedMatMulOp;
  if (conv) fused.attributes = p.attributes;
  if (trans_b) fused.attributes["transB"] = int64_t{1};
  if (relu >= 0) fused.attributes["activation"] = std::string("Relu");
  fused.inputs = {x.q,    x.scale, x.zero, w.q, w.scale,
                  w.zero, "",      "",     bias};
  if (quant >= 0) {
    const Node& q = graph->nodes[quant];
    fused.inputs[6] = q.inputs[1];
    fused.inputs[7] = q.has_input(2) ? q.inputs[2] : "";
    fused.outputs = q.outputs;
  } else {
    fused.outputs = graph->nodes[last].outputs;
  }
  while (fused.inputs.size() > 6 && fused.inputs.back().empty()) {
    fused.inputs.pop_back();
  }
  std::vector<int> erase;
  if (relu >= 0) erase.push_back(relu);
  if (quant >= 0) erase.push_back(quant);
  if (relu >= 0 || quant >= 0) graph->values.erase(p.outputs[0]);
  if (relu >= 0 && quant >= 0) {
    graph->values.erase(graph->nodes[relu].outputs[0]);
  }
  std::vector<int> maybe_dead = {x.node, w.node};
  if (bias_dq >= 0) maybe_dead.push_back(bias_dq);
  graph->nodes[i] = std::move(fused);
  EraseNodes(graph, erase, maybe_dead);
}

// DequantizeLinear -> MaxPool -> QuantizeLinear with the same positive,
// finite scale and zero point: MaxPool on the quantized values (max
// commutes with the increasing dequantization, and the maximum
// requantizes exactly).
void FuseQuantizedMaxPools(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& pool = graph->nodes[i];
    if (!IsUnary(pool, "MaxPool")) continue;
    const std::optional<Dequantize> x =
        FindDequantize(*graph, i, pool.inputs[0]);
    if (!x.has_value() || x->params != 1 || !IsQuantized8(*graph, x->q)) {
      continue;
    }
    const int quant = SoleQuantize(*graph, i);
    if (quant < 0) continue;
    const Node& q = graph->nodes[quant];
    const Tensor* xs = graph->FindInitializer(x->scale);
    const Tensor* qs = graph->FindInitializer(q.inputs[1]);
    const Tensor* xz =
        x->zero.empty() ? nullptr : graph->FindInitializer(x->zero);
    const Tensor* qz =
        q.has_input(2) ? graph->FindInitializer(q.inputs[2]) : nullptr;
    const DType xd = graph->FindValue(x->q)->dtype;
    const DType qd = qz != nullptr ? qz->dtype() : DType::kUInt8;
    auto zero_of = [](const Tensor* z) -> int {
      if (z == nullptr) return 0;
      return z->dtype() == DType::kUInt8 ? z->data<uint8_t>()[0]
                                         : z->data<int8_t>()[0];
    };
    // Max commutes with dequantization only when it is increasing: a
    // negative scale turns the maximum into the minimum, a zero one (or a
    // NaN / infinite one) does not map the values one to one.
    const float scale = xs->data<float>()[0];
    if (xd != qd || !(scale > 0.0f) || !std::isfinite(scale) ||
        scale != qs->data<float>()[0] || zero_of(xz) != zero_of(qz)) {
      continue;
    }
    Node& np = graph->nodes[i];
    graph->values.erase(np.outputs[0]);
    np.inputs[0] = x->q;
    np.outputs = graph->nodes[quant].outputs;
    EraseNodes(graph, {quant}, {x->node});
    i = -1;
  }
}

}  // namespace

absl::Status FuseQuantizedOps(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& p = graph->nodes[i];
    if (!IsDefaultDomain(p) || p.outputs.size() != 1 || p.inputs.size() < 2) {
      continue;
    }
    const bool conv = p.op_type == "Conv";
    const bool matmul = p.op_type == "MatMul" && p.inputs.size() == 2;
    const bool gemm = p.op_type == "Gemm";
    if (!conv && !matmul && !gemm) continue;
    const ValueInfo* out = graph->FindValue(p.outputs[0]);
    if (out == nullptr || out->dtype != DType::kFloat32) continue;
    const bool trans_b = gemm && p.GetInt("transB", 0) != 0;
    if (gemm &&
        (p.GetInt("transA", 0) != 0 || p.GetFloat("alpha", 1.0f) != 1.0f ||
         p.GetFloat("beta", 1.0f) != 1.0f)) {
      continue;
    }
    const std::optional<Dequantize> x = FindDequantize(*graph, i, p.inputs[0]);
    const std::optional<Dequantize> w = FindDequantize(*graph, i, p.inputs[1]);
    if (!x.has_value() || !w.has_value() || x->params != 1 ||
        !IsQuantized8(*graph, x->q) || !IsQuantized8(*graph, w->q)) {
      continue;
    }
    const Tensor* wq = graph->FindInitializer(w->q);
    if (wq == nullptr || (matmul && wq->shape().rank() != 2)) continue;
    // Per-channel weights along the output channels only.
    const int64_t out_axis = conv ? 0 : (trans_b ? 0 : 1);
    const int64_t channels = wq->shape().dim(out_axis);
    if (w->params != 1 && (w->axis != out_axis || w->params != channels)) {
      continue;
    }
    // The bias: a float32 initializer, or DequantizeLinear of one.
    std::string bias;
    int bias_dq = -1;
    if ((conv || gemm) && p.has_input(2)) {
      GLINT_ASSIGN_OR_RETURN(std::optional<std::string> folded,
                             QuantizedBias(graph, i, channels, &bias_dq));
      if (!folded.has_value()) continue;
      bias = *std::move(folded);
    }
    if (gemm && !bias.empty()) {
      const Tensor* b = graph->FindInitializer(bias);
      if (b->shape().rank() == 2 && b->shape().dim(0) != 1) continue;
    }
    ReplaceWithQuantizedOp(graph, i, *x, *w, bias, bias_dq);
    i = -1;  // Indices moved; start over (graphs are small).
  }
  FuseQuantizedMaxPools(graph);
  return absl::OkStatus();
}

void RemoveUnusedInitializers(Graph* graph) {
  absl::flat_hash_set<std::string> used;
  for (const Node& node : graph->nodes) {
    for (const std::string& in : node.inputs) used.insert(in);
  }
  for (const ValueInfo& out : graph->outputs) used.insert(out.name);
  for (auto it = graph->initializers.begin();
       it != graph->initializers.end();) {
    if (used.contains(it->first)) {
      ++it;
    } else {
      graph->values.erase(it->first);
      it = graph->initializers.erase(it);
    }
  }
}

}  // namespace glint
