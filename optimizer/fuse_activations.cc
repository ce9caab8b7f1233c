// Fusions of activations: Gelu as exporters decompose it, activations
// into the op before them, elementwise chains. optimizer/optimize.h.
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
using optimizer_internal::FindConsumer;
using optimizer_internal::FindProducer;
using optimizer_internal::FloatInitializer;
using optimizer_internal::IsBinary;
using optimizer_internal::IsDefaultDomain;
using optimizer_internal::MergeInto;
using optimizer_internal::Near;
using optimizer_internal::OtherInput;
using optimizer_internal::ScalarConstant;
using optimizer_internal::SoleConsumer;
using optimizer_internal::Uses;

namespace {

// The end of both Gelu forms: 0.5 * x * t, with t the output of node
// `from`, in the orders exporters write it: (t * x) * 0.5, (t * 0.5) * x,
// or t * (x * 0.5) with the half computed by its own node. Appends the
// nodes it matched to *erase and returns the one whose output is the
// Gelu's, or -1 when the pattern is not there.
int MatchHalfXTimes(const Graph& graph, const Uses& uses, int from,
                    const std::string& x, std::vector<int>* erase) {
  auto consumer_of = [&](int after, const std::string& v) {
    return uses.SingleInternalUse(v) ? FindConsumer(graph, after, v) : -1;
  };
  const std::string t = graph.nodes[from].outputs[0];
  const int m1 = consumer_of(from, t);
  if (m1 < 0 || !IsBinary(graph.nodes[m1], "Mul")) return -1;
  const std::string o = OtherInput(graph.nodes[m1], t);
  if (o == x || Near(ScalarConstant(graph, o), 0.5)) {
    const std::string m1_out = graph.nodes[m1].outputs[0];
    const int m2 = consumer_of(m1, m1_out);
    if (m2 < 0 || !IsBinary(graph.nodes[m2], "Mul")) return -1;
    const std::string o2 = OtherInput(graph.nodes[m2], m1_out);
    const bool ok = o == x ? Near(ScalarConstant(graph, o2), 0.5) : o2 == x;
    if (!ok) return -1;
    erase->push_back(m1);
    erase->push_back(m2);
    return m2;
  }
  int half = -1;
  for (int i = 0; i < m1 && half < 0; ++i) {
    if (!graph.nodes[i].outputs.empty() && graph.nodes[i].outputs[0] == o) {
      half = i;
    }
  }
  if (half < 0 || !uses.SingleInternalUse(o)) return -1;
  const Node& hn = graph.nodes[half];
  if (!IsBinary(hn, "Mul") ||
      !Near(ScalarConstant(graph, OtherInput(hn, x)), 0.5)) {
    return -1;
  }
  erase->push_back(m1);
  erase->push_back(half);
  return m1;
}

// Replaces the pattern's nodes (`erase`, `scale` among them) by one Gelu
// node of `approximate` form reading x, at `scale`'s place, producing the
// output of node `last`. Returns the Gelu's index.
int ReplaceByGelu(Graph* graph, std::vector<int> erase, int scale, int last,
                  const std::string& x, const std::string& approximate) {
  const std::string out = graph->nodes[last].outputs[0];
  for (int i : erase) {
    if (graph->nodes[i].outputs[0] != out) {
      graph->values.erase(graph->nodes[i].outputs[0]);
    }
  }
  if (graph->nodes[scale].outputs[0] != out) {
    graph->values.erase(graph->nodes[scale].outputs[0]);
  }
  Node& gelu = graph->nodes[scale];
  gelu.op_type = "Gelu";
  gelu.domain.clear();
  gelu.inputs = {x};
  gelu.outputs = {out};
  gelu.attributes.clear();
  if (approximate != "none") gelu.attributes["approximate"] = approximate;
  erase.erase(std::remove(erase.begin(), erase.end(), scale), erase.end());
  std::sort(erase.begin(), erase.end(), std::greater<int>());
  int at = scale;
  for (int i : erase) {
    graph->nodes.erase(graph->nodes.begin() + i);
    if (i < scale) --at;
  }
  return at;
}

// Matches x + 0.044715 * x^3 at the Add node `sum`, with x^3 written
// x * (x * x) or Pow(x, 3) and every intermediate read once: tries each
// operand of the Add as x. Returns x, or "" when it does not match; on a
// match *cube_nodes gets the nodes of the cubic term.
std::string MatchCubicTerm(const Graph& graph, const Uses& uses, int sum,
                           std::vector<int>* cube_nodes) {
  auto single_producer = [&](int before, const std::string& v) {
    return uses.SingleInternalUse(v) ? FindProducer(graph, before, v) : -1;
  };
  for (const std::string& cand : graph.nodes[sum].inputs) {
    const std::string a = OtherInput(graph.nodes[sum], cand);
    const int coef = a.empty() ? -1 : single_producer(sum, a);
    if (coef < 0 || !IsBinary(graph.nodes[coef], "Mul")) continue;
    std::string x3;
    for (const std::string& in : graph.nodes[coef].inputs) {
      if (Near(ScalarConstant(graph, in), 0.044715)) {
        x3 = OtherInput(graph.nodes[coef], in);
      }
    }
    const int cube = x3.empty() ? -1 : single_producer(coef, x3);
    if (cube < 0) continue;
    const Node& cn = graph.nodes[cube];
    std::vector<int> nodes = {coef, cube};
    bool is_cube = false;
    if (cn.op_type == "Pow" && IsDefaultDomain(cn) && cn.inputs.size() == 2) {
      is_cube = cn.inputs[0] == cand &&
                Near(ScalarConstant(graph, cn.inputs[1]), 3.0);
    } else if (IsBinary(cn, "Mul")) {
      const std::string sq = OtherInput(cn, cand);
      const int square = sq.empty() ? -1 : single_producer(cube, sq);
      is_cube = square >= 0 && IsBinary(graph.nodes[square], "Mul") &&
                graph.nodes[square].inputs[0] == cand &&
                graph.nodes[square].inputs[1] == cand;
      nodes.push_back(square);
    }
    if (is_cube) {
      *cube_nodes = std::move(nodes);
      return cand;
    }
  }
  return "";
}

// 0.5 * x * (1 + erf(x / sqrt(2))), as PyTorch exports nn.GELU().
void FuseErfGelu(Graph* graph) {
  constexpr double kSqrt2 = 1.4142135623730951;
  for (int e = 0; e < static_cast<int>(graph->nodes.size()); ++e) {
    const Node& erf = graph->nodes[e];
    if (!IsDefaultDomain(erf) || erf.op_type != "Erf" ||
        erf.inputs.size() != 1 || erf.outputs.size() != 1) {
      continue;
    }
    const Uses uses(*graph);
    // Every intermediate value must be read once, inside the pattern.
    auto consumer_of = [&](int from, const std::string& v) {
      return uses.SingleInternalUse(v) ? FindConsumer(*graph, from, v) : -1;
    };
    // x / sqrt(2) or x * (1 / sqrt(2)), feeding only the Erf.
    const int scale = FindProducer(*graph, e, erf.inputs[0]);
    if (scale < 0 || !uses.SingleInternalUse(erf.inputs[0])) continue;
    const Node& sn = graph->nodes[scale];
    std::string x;
    if (IsBinary(sn, "Div") && Near(ScalarConstant(*graph, sn.inputs[1]),
                                    kSqrt2)) {
      x = sn.inputs[0];
    } else if (IsBinary(sn, "Mul")) {
      for (int k = 0; k < 2 && x.empty(); ++k) {
        if (Near(ScalarConstant(*graph, sn.inputs[k]), 1.0 / kSqrt2)) {
          x = sn.inputs[1 - k];
        }
      }
    }
    const ValueInfo* xi = x.empty() ? nullptr : graph->FindValue(x);
    if (xi == nullptr || xi->dtype != DType::kFloat32) continue;
    // 1 + erf(...)
    const int add = consumer_of(e, erf.outputs[0]);
    if (add < 0 || !IsBinary(graph->nodes[add], "Add") ||
        !Near(ScalarConstant(*graph,
                             OtherInput(graph->nodes[add], erf.outputs[0])),
              1.0)) {
      continue;
    }
    std::vector<int> erase = {e, add};
    const int last = MatchHalfXTimes(*graph, uses, add, x, &erase);
    if (last < 0) continue;
    // The scaling node becomes Gelu(x): after x, before every reader of
    // the old output (they all followed the pattern's last node).
    e = ReplaceByGelu(graph, erase, scale, last, x, "none");
  }
}

// The tanh form, as PyTorch exports F.gelu(x, approximate="tanh"):
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), with x^3 as
// x * (x * x) or Pow(x, 3).
void FuseTanhGelu(Graph* graph) {
  constexpr double kSqrt2OverPi = 0.7978845608028654;
  for (int th = 0; th < static_cast<int>(graph->nodes.size()); ++th) {
    const Node& tanh = graph->nodes[th];
    if (!IsDefaultDomain(tanh) || tanh.op_type != "Tanh" ||
        tanh.inputs.size() != 1 || tanh.outputs.size() != 1) {
      continue;
    }
    const Uses uses(*graph);
    auto single_producer = [&](int before, const std::string& v) {
      return uses.SingleInternalUse(v) ? FindProducer(*graph, before, v) : -1;
    };
    const int scale = single_producer(th, tanh.inputs[0]);
    if (scale < 0 || !IsBinary(graph->nodes[scale], "Mul")) continue;
    std::string b;
    for (const std::string& in : graph->nodes[scale].inputs) {
      if (Near(ScalarConstant(*graph, in), kSqrt2OverPi)) {
        b = OtherInput(graph->nodes[scale], in);
      }
    }
    const int sum = b.empty() ? -1 : single_producer(scale, b);
    if (sum < 0 || !IsBinary(graph->nodes[sum], "Add")) continue;
    std::vector<int> cube_nodes;
    const std::string x = MatchCubicTerm(*graph, uses, sum, &cube_nodes);
    const ValueInfo* xi = x.empty() ? nullptr : graph->FindValue(x);
    if (xi == nullptr || xi->dtype != DType::kFloat32) continue;
    // 1 + tanh(...)
    const int add = uses.SingleInternalUse(tanh.outputs[0])
                        ? FindConsumer(*graph, th, tanh.outputs[0])
                        : -1;
    if (add < 0 || !IsBinary(graph->nodes[add], "Add") ||
        !Near(ScalarConstant(*graph,
                             OtherInput(graph->nodes[add], tanh.outputs[0])),
              1.0)) {
      continue;
    }
    std::vector<int> erase = {scale, sum, th, add};
    erase.insert(erase.end(), cube_nodes.begin(), cube_nodes.end());
    const int last = MatchHalfXTimes(*graph, uses, add, x, &erase);
    if (last < 0) continue;
    // The Gelu takes the place of the pattern's first node, after x.
    const int first = *std::min_element(erase.begin(), erase.end());
    th = ReplaceByGelu(graph, erase, first, last, x, "tanh");
  }
}

}  // namespace

absl::Status FuseGelu(Graph* graph) {
  FuseErfGelu(graph);
  FuseTanhGelu(graph);
  return absl::OkStatus();
}

namespace {

// The [min, max] of a Clip node (attributes before opset 11, constant
// inputs after); nullopt when a bound is a run-time value.
std::optional<std::pair<float, float>> ClipBounds(const Graph& graph,
                                                  const Node& clip) {
  float lo = clip.GetFloat("min", -std::numeric_limits<float>::infinity());
  float hi = clip.GetFloat("max", std::numeric_limits<float>::infinity());
  for (int k = 1; k <= 2 && k < clip.num_inputs(); ++k) {
    if (!clip.has_input(k)) continue;
    const Tensor* t = FloatInitializer(graph, clip.inputs[k]);
    if (t == nullptr || t->num_elements() != 1) return std::nullopt;
    (k == 1 ? lo : hi) = t->data<float>()[0];
  }
  return std::make_pair(lo, hi);
}

// Fuses Mul(x, Sigmoid(x)) into node `i`, which produces x, as its "Swish"
// activation, where x is read by exactly those two nodes and the Sigmoid by
// the Mul alone. Returns whether it did.
bool SiluAfter(Graph* graph, int i) {
  const std::string x = graph->nodes[i].outputs[0];
  const Uses uses(*graph);
  if (uses.IsGraphOutput(x)) return false;
  int sigmoid = -1, mul = -1, readers = 0;
  for (int k = 0; k < static_cast<int>(graph->nodes.size()); ++k) {
    const Node& n = graph->nodes[k];
    for (const std::string& in : n.inputs) readers += in == x ? 1 : 0;
    if (!IsDefaultDomain(n) || n.outputs.size() != 1) continue;
    if (n.op_type == "Sigmoid" && n.inputs.size() == 1 && n.inputs[0] == x) {
      sigmoid = k;
    }
  }
  if (sigmoid < 0 || readers != 2 ||
      !uses.SingleInternalUse(graph->nodes[sigmoid].outputs[0])) {
    return false;
  }
  const std::string s = graph->nodes[sigmoid].outputs[0];
  for (int k = 0; k < static_cast<int>(graph->nodes.size()); ++k) {
    const Node& n = graph->nodes[k];
    if (IsBinary(n, "Mul") &&
        ((n.inputs[0] == x && n.inputs[1] == s) ||
         (n.inputs[0] == s && n.inputs[1] == x))) {
      mul = k;
    }
  }
  if (mul < 0) return false;
  Node& fused = graph->nodes[i];
  fused.op_type = kFusedConvOp;
  fused.attributes["activation"] = std::string("Swish");
  graph->values.erase(x);
  graph->values.erase(s);
  fused.outputs = {graph->nodes[mul].outputs[0]};
  graph->nodes.erase(graph->nodes.begin() + std::max(sigmoid, mul));
  graph->nodes.erase(graph->nodes.begin() + std::min(sigmoid, mul));
  return true;
}

}  // namespace

absl::Status FuseActivations(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& p = graph->nodes[i];
    if (!IsDefaultDomain(p) || p.outputs.size() != 1 ||
        !ActivationOf(p).empty()) {
      continue;
    }
    std::string fused_type;
    if (p.op_type == "MatMul" || p.op_type == kFusedMatMulOp) {
      fused_type = kFusedMatMulOp;
    } else if (p.op_type == "Gemm") {
      fused_type = kFusedGemmOp;
    } else if (p.op_type == "Conv" || p.op_type == kFusedConvOp) {
      fused_type = kFusedConvOp;
    } else if (p.op_type == kChannelsLastBatchNormOp) {
      // DenseNet's pre-activation BatchNormalization -> Relu.
      fused_type = kChannelsLastBatchNormOp;
    } else {
      continue;
    }
    const ValueInfo* out = graph->FindValue(p.outputs[0]);
    if (out == nullptr || out->dtype != DType::kFloat32) continue;
    const bool conv = fused_type == kFusedConvOp;
    // SiLU after a convolution (EfficientNet, YOLO): x * Sigmoid(x), the
    // Sigmoid read only by the Mul, as oneDNN's swish post-op.
    if (conv && SiluAfter(graph, i)) continue;
    const int j = SoleConsumer(*graph, i);
    if (j < 0) continue;
    const Node& act = graph->nodes[j];
    if (!IsDefaultDomain(act) || act.outputs.size() != 1) continue;
    // Relu and LeakyRelu everywhere; Gelu (oneDNN's gelu_erf and
    // gelu_tanh post-ops, RowGemm's epilogue) for MatMul; the
    // activations of mobile CNNs (Sigmoid, Tanh, HardSwish, Clip as Relu6)
    // for Conv, whose oneDNN post-ops take them all.
    const std::string& op = act.op_type;
    bool fusable = op == "Relu" || op == "LeakyRelu";
    const std::string approximate = act.GetString("approximate", "none");
    fusable = fusable || (op == "Gelu" && fused_type == kFusedMatMulOp &&
                          (approximate == "none" || approximate == "tanh"));
    fusable = fusable || (conv && (op == "Sigmoid" || op == "Tanh" ||
                                   op == "HardSwish"));
    std::optional<std::pair<float, float>> clip;
    if (conv && op == "Clip") {
      clip = ClipBounds(*graph, act);
      fusable = clip.has_value();
    }
    if (!fusable || (fused_type == kChannelsLastBatchNormOp && op != "Relu")) {
      continue;
    }
    const float alpha =
        op == "LeakyRelu" ? act.GetFloat("alpha", 0.01f) : 0.0f;
    const std::string act_type =
        op == "Gelu" && approximate == "tanh" ? "GeluTanh" : op;
    Node& fused = graph->nodes[i];
    fused.op_type = fused_type;
    fused.attributes["activation"] = act_type;
    if (act_type == "LeakyRelu") fused.attributes["activation_alpha"] = alpha;
    if (clip.has_value()) {
      fused.attributes["activation_alpha"] = clip->first;
      fused.attributes["activation_beta"] = clip->second;
    }
    MergeInto(graph, i, j);
  }
  return absl::OkStatus();
}

namespace {

// A link of an elementwise chain: the value a chainable node transforms
// (float32, of the output's shape), and its constant scalar operand when
// it has one.
struct ChainStep {
  std::string data;
  float scalar = 0;
  bool scalar_first = false;
};

// `node` as a chain link, or nullopt when it is none the backend chains.
std::optional<ChainStep> AsChainStep(const Graph& graph, const Node& node,
                                     const RewriteBackend& backend) {
  if (!IsDefaultDomain(node) || node.outputs.size() != 1) return std::nullopt;
  const ValueInfo* out = graph.FindValue(node.outputs[0]);
  if (out == nullptr || out->dtype != DType::kFloat32) return std::nullopt;
  ChainStep step;
  if (backend.chainable_unary && backend.chainable_unary(node.op_type) &&
      node.inputs.size() == 1) {
    step.data = node.inputs[0];
  } else if (backend.chainable_scalar &&
             backend.chainable_scalar(node.op_type) &&
             node.inputs.size() == 2) {
    for (int k = 0; k < 2 && step.data.empty(); ++k) {
      const std::optional<float> c = ScalarConstant(graph, node.inputs[k]);
      if (c.has_value() && !graph.IsInitializer(node.inputs[1 - k])) {
        step.data = node.inputs[1 - k];
        step.scalar = *c;
        step.scalar_first = k == 0;
      }
    }
  }
  const ValueInfo* in = step.data.empty() ? nullptr : graph.FindValue(step.data);
  if (in == nullptr || in->dtype != DType::kFloat32 ||
      in->shape != out->shape) {
    return std::nullopt;
  }
  return step;
}

}  // namespace

absl::Status FuseElementwiseChains(Graph* graph,
                                   const RewriteBackend& backend) {
  if (!backend.chainable_unary && !backend.chainable_scalar) {
    return absl::OkStatus();
  }
  for (int head = 0; head < static_cast<int>(graph->nodes.size()); ++head) {
    std::optional<ChainStep> first =
        AsChainStep(*graph, graph->nodes[head], backend);
    if (!first.has_value()) continue;
    // Nodes are in topological order, so the first chainable node met is
    // its chain's head: extend it while each value has one reader, the
    // next step.
    const Uses uses(*graph);
    std::vector<int> chain = {head};
    std::vector<ChainStep> steps = {*first};
    for (;;) {
      const std::string& out = graph->nodes[chain.back()].outputs[0];
      if (!uses.SingleInternalUse(out)) break;
      const int next = FindConsumer(*graph, chain.back(), out);
      if (next < 0) break;
      std::optional<ChainStep> step =
          AsChainStep(*graph, graph->nodes[next], backend);
      if (!step.has_value() || step->data != out) break;
      chain.push_back(next);
      steps.push_back(*step);
    }
    if (chain.size() < 2) continue;
    Node fused;
    fused.name = graph->nodes[chain.back()].name;
    fused.op_type = kElementwiseChainOp;
    fused.inputs = {first->data};
    fused.outputs = graph->nodes[chain.back()].outputs;
    std::vector<std::string> ops;
    std::vector<float> scalars;
    std::vector<int64_t> scalar_first;
    for (size_t i = 0; i < chain.size(); ++i) {
      const Node& node = graph->nodes[chain[i]];
      ops.push_back(node.op_type);
      scalars.push_back(steps[i].scalar);
      scalar_first.push_back(steps[i].scalar_first ? 1 : 0);
      for (const auto& [name, value] : node.attributes) {
        fused.attributes[absl::StrCat(i, ":", name)] = value;
      }
      if (i + 1 < chain.size()) graph->values.erase(node.outputs[0]);
    }
    fused.attributes["ops"] = std::move(ops);
    fused.attributes["scalars"] = std::move(scalars);
    fused.attributes["scalar_first"] = std::move(scalar_first);
    // The fused node takes the tail's place (its input precedes the head);
    // the other links go.
    graph->nodes[chain.back()] = std::move(fused);
    for (int i = static_cast<int>(chain.size()) - 2; i >= 0; --i) {
      graph->nodes.erase(graph->nodes.begin() + chain[i]);
    }
  }
  return absl::OkStatus();
}

}  // namespace glint
