// Fusions around MatMul, Gemm and Conv: bias, scale, transposes,
// attention, residual adds. optimizer/optimize.h.
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

using optimizer_internal::ActivationOf;
using optimizer_internal::AddInitializer;
using optimizer_internal::FindConsumer;
using optimizer_internal::FindProducer;
using optimizer_internal::FloatInitializer;
using optimizer_internal::FreshName;
using optimizer_internal::IsBinary;
using optimizer_internal::IsDefaultDomain;
using optimizer_internal::IsUnary;
using optimizer_internal::MergeInto;
using optimizer_internal::OtherInput;
using optimizer_internal::PlainMatMulOutput;
using optimizer_internal::ScalarConstant;
using optimizer_internal::SoleConsumer;
using optimizer_internal::TransposePerm;
using optimizer_internal::Uses;

absl::Status FuseMatMulBias(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& mm = graph->nodes[i];
    const ValueInfo* out = PlainMatMulOutput(*graph, mm);
    const ValueInfo* b = out != nullptr ? graph->FindValue(mm.inputs[1])
                                        : nullptr;
    if (out == nullptr || out->shape.rank() < 1 || b == nullptr ||
        b->shape.rank() < 2) {
      continue;
    }
    const int64_t n = out->shape.dims().back();
    if (n < 0) continue;
    const int j = SoleConsumer(*graph, i);
    if (j < 0) continue;
    const Node& add = graph->nodes[j];
    if (!IsDefaultDomain(add) || add.op_type != "Add" ||
        add.inputs.size() != 2 || add.outputs.size() != 1) {
      continue;
    }
    const std::string& other =
        add.inputs[0] == mm.outputs[0] ? add.inputs[1] : add.inputs[0];
    const Tensor* bias = FloatInitializer(*graph, other);
    if (bias == nullptr || bias->num_elements() != n ||
        bias->shape().rank() > out->shape.rank()) {
      continue;
    }
    // Only a bias along the last axis keeps Add's output shape the
    // MatMul's: every other dim must be 1.
    if (bias->shape().rank() > 0 && bias->shape().dims().back() != n) {
      continue;
    }
    Node& fused = graph->nodes[i];
    fused.op_type = kFusedMatMulOp;
    fused.domain.clear();
    fused.inputs.push_back(other);
    MergeInto(graph, i, j);
  }
  return absl::OkStatus();
}

absl::Status FuseMatMulScale(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& mm = graph->nodes[i];
    const ValueInfo* out = PlainMatMulOutput(*graph, mm);
    if (out == nullptr) continue;
    const int j = SoleConsumer(*graph, i);
    if (j < 0) continue;
    const Node& scale = graph->nodes[j];
    const bool mul = IsBinary(scale, "Mul");
    // Mul commutes; Div only by the constant (x / c).
    if (!mul && !(IsBinary(scale, "Div") &&
                  scale.inputs[0] == mm.outputs[0])) {
      continue;
    }
    const std::optional<float> c =
        ScalarConstant(*graph, OtherInput(scale, mm.outputs[0]));
    const ValueInfo* scaled = graph->FindValue(scale.outputs[0]);
    if (!c.has_value() || (!mul && *c == 0.0f) || scaled == nullptr ||
        scaled->shape != out->shape) {
      continue;
    }
    Node& fused = graph->nodes[i];
    fused.op_type = kFusedMatMulOp;
    fused.attributes["alpha"] = mul ? *c : 1.0f / *c;
    MergeInto(graph, i, j);
  }
  return absl::OkStatus();
}

absl::Status FuseTransposes(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& inner = graph->nodes[i];
    if (!IsUnary(inner, "Transpose")) continue;
    const int j = SoleConsumer(*graph, i);
    if (j < 0 || !IsUnary(graph->nodes[j], "Transpose")) continue;
    const Node& outer = graph->nodes[j];
    // An absent perm reverses the axes: both must be explicit here.
    const std::vector<int64_t> p1 = TransposePerm(inner);
    const std::vector<int64_t> p2 = TransposePerm(outer);
    if (p1.empty() || p1.size() != p2.size()) continue;
    std::vector<int64_t> perm(p1.size());
    bool valid = true;
    for (size_t k = 0; k < p2.size() && valid; ++k) {
      valid = p2[k] >= 0 && p2[k] < static_cast<int64_t>(p1.size());
      if (valid) perm[k] = p1[p2[k]];
    }
    if (!valid) continue;
    // A layout reorder merged into a model's own Transpose is the model's
    // op now (the node keeps the inner one's name otherwise), so that
    // profiles count it as such.
    if (IsLayoutReorder(inner) && !IsLayoutReorder(outer)) {
      graph->nodes[i].name = outer.name;
    }
    graph->nodes[i].attributes["perm"] = std::move(perm);
    MergeInto(graph, i, j);
    --i;  // The merged node may meet a third Transpose.
  }
  // A Transpose that keeps every axis in place copies its input: its
  // readers read the input instead. After ConvertToChannelsLast this is
  // the reorder out of NHWC met by a model's own permute to NHWC (each
  // ConvNeXt block: a channels-last depthwise Conv, then permute(0, 2, 3,
  // 1) before its LayerNorm and Linear layers).
  const Uses uses(*graph);
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& node = graph->nodes[i];
    if (!IsUnary(node, "Transpose")) continue;
    const std::vector<int64_t> perm = TransposePerm(node);
    bool identity = !perm.empty();
    for (size_t k = 0; k < perm.size() && identity; ++k) {
      identity = perm[k] == static_cast<int64_t>(k);
    }
    if (!identity || uses.IsGraphOutput(node.outputs[0])) continue;
    const std::string in = node.inputs[0], out = node.outputs[0];
    for (int j = i + 1; j < static_cast<int>(graph->nodes.size()); ++j) {
      for (std::string& input : graph->nodes[j].inputs) {
        if (input == out) input = in;
      }
    }
    graph->values.erase(out);
    graph->nodes.erase(graph->nodes.begin() + i);
    --i;
  }
  return absl::OkStatus();
}

namespace {

// Transpose(Reshape(X, [B, L, H, D]), perm) with X [B, L, H*D]: how an
// exported attention block splits Q, K or V into heads.
struct AttentionHead {
  int transpose = -1, reshape = -1;
  std::string x;
  std::vector<int64_t> split;  // [B, L, H, D]
};

// Pattern queries for FuseAttention over one state of the graph: every
// intermediate value of the pattern must be read once, inside it. Valid
// until the graph changes. Not thread-safe.
class AttentionMatcher {
 public:
  explicit AttentionMatcher(const Graph& graph) : graph_(graph), uses_(graph) {}

  // The node producing `value`, which nothing else reads; -1 otherwise.
  int SoleProducer(const std::string& value) const {
    return uses_.SingleInternalUse(value)
               ? FindProducer(graph_, static_cast<int>(graph_.nodes.size()),
                              value)
               : -1;
  }
  // The only node reading node i's output; -1 when there is none or more.
  int SoleConsumer(int i) const {
    const std::string& value = graph_.nodes[i].outputs[0];
    return uses_.SingleInternalUse(value) ? FindConsumer(graph_, i, value)
                                          : -1;
  }
  // Whether node i is a single-output `op` of the default domain.
  bool Is(int i, const char* op) const {
    return i >= 0 && IsDefaultDomain(graph_.nodes[i]) &&
           graph_.nodes[i].op_type == op &&
           graph_.nodes[i].outputs.size() == 1;
  }
  // The head split producing `value` with permutation `perm`; nullopt
  // when `value` is not one.
  std::optional<AttentionHead> Head(const std::string& value,
                                    const std::vector<int64_t>& perm) const {
    AttentionHead h;
    h.transpose = SoleProducer(value);
    if (!Is(h.transpose, "Transpose") ||
        TransposePerm(graph_.nodes[h.transpose]) != perm) {
      return std::nullopt;
    }
    h.reshape = SoleProducer(graph_.nodes[h.transpose].inputs[0]);
    if (!Is(h.reshape, "Reshape")) return std::nullopt;
    const Node& r = graph_.nodes[h.reshape];
    const ValueInfo* x = graph_.FindValue(r.inputs[0]);
    const ValueInfo* split = graph_.FindValue(r.outputs[0]);
    if (x == nullptr || split == nullptr || x->dtype != DType::kFloat32 ||
        x->shape.rank() != 3 || !x->shape.IsStatic() ||
        split->shape.rank() != 4 || !split->shape.IsStatic()) {
      return std::nullopt;
    }
    h.split = split->shape.dims();
    if (x->shape.dim(0) != h.split[0] || x->shape.dim(1) != h.split[1] ||
        x->shape.dim(2) != h.split[2] * h.split[3]) {
      return std::nullopt;
    }
    h.x = r.inputs[0];
    return h;
  }

 private:
  const Graph& graph_;
  const Uses uses_;
};

// Whether `softmax` normalizes the last axis of a static 4-D float tensor
// (attention scores [B, H, L, L']).
bool IsScoresSoftmax(const Graph& graph, const Node& softmax) {
  if (!IsUnary(softmax, "Softmax")) return false;
  const ValueInfo* scores = graph.FindValue(softmax.inputs[0]);
  if (scores == nullptr || scores->dtype != DType::kFloat32 ||
      scores->shape.rank() != 4 || !scores->shape.IsStatic()) {
    return false;
  }
  // Before opset 13 Softmax flattens from `axis` on (default 1), which
  // for the last axis is the same thing.
  const int64_t axis =
      softmax.GetInt("axis", graph.opset_version >= 13 ? -1 : 1);
  return axis == -1 || axis == 3;
}

// Puts `attention` in node `merge`'s place, where Q, K and V are all
// ready, and removes the rest of the pattern (`erase`) and its values.
void ReplaceByAttention(Graph* graph, std::vector<int> erase, int merge,
                        Node attention) {
  for (int i : erase) graph->values.erase(graph->nodes[i].outputs[0]);
  graph->nodes[merge] = std::move(attention);
  std::sort(erase.begin(), erase.end(), std::greater<int>());
  for (int i : erase) graph->nodes.erase(graph->nodes.begin() + i);
}

}  // namespace

absl::Status FuseAttention(Graph* graph) {
  for (int sm = 0; sm < static_cast<int>(graph->nodes.size()); ++sm) {
    const Node& softmax = graph->nodes[sm];
    if (!IsScoresSoftmax(*graph, softmax)) continue;
    const AttentionMatcher m(*graph);
    const int mm1 = m.SoleProducer(softmax.inputs[0]);
    if (!m.Is(mm1, "MatMul") && !m.Is(mm1, kFusedMatMulOp)) continue;
    const Node& qk = graph->nodes[mm1];
    if (qk.inputs.size() != 2 || !ActivationOf(qk).empty()) continue;
    const int mm2 = m.SoleConsumer(sm);
    if (!m.Is(mm2, "MatMul") || graph->nodes[mm2].inputs.size() != 2 ||
        graph->nodes[mm2].inputs[0] != softmax.outputs[0]) {
      continue;
    }
    const int out_t = m.SoleConsumer(mm2);
    if (!m.Is(out_t, "Transpose") ||
        TransposePerm(graph->nodes[out_t]) !=
            std::vector<int64_t>{0, 2, 1, 3}) {
      continue;
    }
    const int merge = m.SoleConsumer(out_t);
    if (!m.Is(merge, "Reshape")) continue;
    const std::optional<AttentionHead> q = m.Head(qk.inputs[0], {0, 2, 1, 3});
    const std::optional<AttentionHead> k = m.Head(qk.inputs[1], {0, 2, 3, 1});
    const std::optional<AttentionHead> v =
        m.Head(graph->nodes[mm2].inputs[1], {0, 2, 1, 3});
    const ValueInfo* y = graph->FindValue(graph->nodes[merge].outputs[0]);
    if (!q || !k || !v || y == nullptr) continue;
    // Same batch, heads and head size everywhere; K and V of one length.
    const int64_t batch = q->split[0], heads = q->split[2];
    if (k->split[0] != batch || v->split[0] != batch ||
        k->split[2] != heads || v->split[2] != heads ||
        k->split[3] != q->split[3] || v->split[3] != q->split[3] ||
        v->split[1] != k->split[1] ||
        y->shape != graph->FindValue(q->x)->shape) {
      continue;
    }
    Node attention;
    attention.name = graph->nodes[merge].name;
    attention.op_type = kAttentionOp;
    attention.inputs = {q->x, k->x, v->x};
    attention.outputs = graph->nodes[merge].outputs;
    attention.attributes["num_heads"] = heads;
    attention.attributes["scale"] = qk.GetFloat("alpha", 1.0f);
    ReplaceByAttention(graph,
                       {q->transpose, q->reshape, k->transpose, k->reshape,
                        v->transpose, v->reshape, mm1, sm, mm2, out_t},
                       merge, std::move(attention));
    sm = -1;  // Indices moved; rescan (each match removes its Softmax).
  }
  return absl::OkStatus();
}

namespace {

// The three projections' [K, E] weights side by side in one W [K, 3E]
// (each row the three rows side by side), and their biases in one [3E],
// zero where a projection has none; *any_bias says whether one had.
absl::Status PackQkv(const Tensor* const weights[3],
                     const Tensor* const biases[3], Tensor* w, Tensor* b,
                     bool* any_bias) {
  const int64_t k = weights[0]->shape().dim(0);
  const int64_t e = weights[0]->shape().dim(1);
  GLINT_ASSIGN_OR_RETURN(*w,
                         Tensor::Create(DType::kFloat32, Shape({k, 3 * e})));
  GLINT_ASSIGN_OR_RETURN(*b, Tensor::Create(DType::kFloat32, Shape({3 * e})));
  *any_bias = false;
  for (int i = 0; i < 3; ++i) {
    for (int64_t r = 0; r < k; ++r) {
      std::copy_n(weights[i]->data<float>() + r * e, e,
                  w->data<float>() + r * 3 * e + i * e);
    }
    float* bias = b->data<float>() + i * e;
    if (biases[i] != nullptr) {
      std::copy_n(biases[i]->data<float>(), e, bias);
      *any_bias = true;
    } else {
      std::fill_n(bias, e, 0.0f);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FuseAttentionProjections(Graph* graph) {
  for (int a = 0; a < static_cast<int>(graph->nodes.size()); ++a) {
    const Node& attention = graph->nodes[a];
    if (attention.op_type != kAttentionOp || attention.inputs.size() != 3) {
      continue;
    }
    const Uses uses(*graph);
    int producers[3];
    const Tensor* weights[3];
    const Tensor* biases[3];
    bool ok = attention.inputs[0] != attention.inputs[1] &&
              attention.inputs[1] != attention.inputs[2] &&
              attention.inputs[0] != attention.inputs[2];
    for (int i = 0; i < 3 && ok; ++i) {
      const std::string& value = attention.inputs[i];
      producers[i] = uses.SingleInternalUse(value)
                         ? FindProducer(*graph, a, value)
                         : -1;
      if (producers[i] < 0) {
        ok = false;
        break;
      }
      const Node& mm = graph->nodes[producers[i]];
      ok = (PlainMatMulOutput(*graph, mm) != nullptr ||
            (mm.op_type == kFusedMatMulOp && mm.inputs.size() == 3 &&
             ActivationOf(mm).empty() && mm.GetFloat("alpha", 1.0f) == 1.0f)) &&
           mm.inputs[0] == graph->nodes[producers[0]].inputs[0];
      weights[i] = ok ? FloatInitializer(*graph, mm.inputs[1]) : nullptr;
      biases[i] = ok && mm.has_input(2)
                      ? FloatInitializer(*graph, mm.inputs[2])
                      : nullptr;
      ok = ok && weights[i] != nullptr && weights[i]->shape().rank() == 2 &&
           weights[i]->shape() == weights[0]->shape() &&
           (!mm.has_input(2) ||
            (biases[i] != nullptr &&
             biases[i]->num_elements() == weights[i]->shape().dim(1)));
    }
    const ValueInfo* q = ok ? graph->FindValue(attention.inputs[0]) : nullptr;
    if (q == nullptr || q->shape.rank() != 3 || !q->shape.IsStatic()) continue;
    const int64_t e = weights[0]->shape().dim(1);
    Tensor w, b;
    bool any_bias = false;
    GLINT_RETURN_IF_ERROR(PackQkv(weights, biases, &w, &b, &any_bias));
    Node fused = graph->nodes[producers[0]];
    fused.name = attention.name + "_qkv";
    fused.op_type = kFusedMatMulOp;
    fused.attributes.clear();
    const std::string w_name = FreshName(*graph, fused.name + "_w");
    AddInitializer(graph, w_name, std::move(w));
    fused.inputs = {fused.inputs[0], w_name};
    if (any_bias) {
      const std::string b_name = FreshName(*graph, fused.name + "_b");
      AddInitializer(graph, b_name, std::move(b));
      fused.inputs.push_back(b_name);
    }
    const std::string qkv = FreshName(*graph, fused.name);
    graph->values[qkv] = ValueInfo{
        qkv, DType::kFloat32,
        Shape({q->shape.dim(0), q->shape.dim(1), 3 * e})};
    fused.outputs = {qkv};
    for (const std::string& value : attention.inputs) {
      graph->values.erase(value);
    }
    graph->nodes[a].inputs = {qkv};
    // The first projection's place: A is ready there.
    std::sort(producers, producers + 3);
    graph->nodes[producers[0]] = std::move(fused);
    graph->nodes.erase(graph->nodes.begin() + producers[2]);
    graph->nodes.erase(graph->nodes.begin() + producers[1]);
    a -= 2;
  }
  return absl::OkStatus();
}

absl::Status FuseResidualAdd(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& p = graph->nodes[i];
    const bool matmul = p.op_type == "MatMul" || p.op_type == kFusedMatMulOp;
    const bool conv = p.op_type == "Conv" || p.op_type == kFusedConvOp;
    // The addend goes in before the activation, so there must be none yet.
    if (!IsDefaultDomain(p) || (!matmul && !conv) || p.outputs.size() != 1 ||
        p.inputs.size() > 3 || !ActivationOf(p).empty()) {
      continue;
    }
    const ValueInfo* out = graph->FindValue(p.outputs[0]);
    if (out == nullptr || out->dtype != DType::kFloat32 ||
        !out->shape.IsStatic()) {
      continue;
    }
    const int j = SoleConsumer(*graph, i);
    if (j < 0 || !IsBinary(graph->nodes[j], "Add")) continue;
    const Node& add = graph->nodes[j];
    const std::string z = OtherInput(add, p.outputs[0]);
    const ValueInfo* zi = z.empty() ? nullptr : graph->FindValue(z);
    const ValueInfo* sum = graph->FindValue(add.outputs[0]);
    // No broadcasting either way: Z is read as one more output-shaped
    // tensor.
    if (zi == nullptr || zi->dtype != DType::kFloat32 ||
        zi->shape != out->shape || sum == nullptr || sum->shape != out->shape) {
      continue;
    }
    Node fused = std::move(graph->nodes[i]);
    graph->values.erase(fused.outputs[0]);
    fused.op_type = matmul ? kFusedMatMulOp : kFusedConvOp;
    fused.inputs.resize(3);  // An absent bias stays "".
    fused.inputs.push_back(z);
    fused.outputs = {add.outputs[0]};
    // Z may be computed after the producer: the fused node takes the Add's
    // place, where every input of both is ready.
    graph->nodes[j] = std::move(fused);
    graph->nodes.erase(graph->nodes.begin() + i);
    --i;
  }
  return absl::OkStatus();
}

}  // namespace glint
