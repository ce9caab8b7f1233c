#include "devices/cpu/optimize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
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

namespace glint::cpu {
namespace {

bool IsDefaultDomain(const Node& node) {
  return node.domain.empty() || node.domain == "ai.onnx";
}

// Who reads each value, so that a pass only fuses away a value nobody else
// sees.
class Uses {
 public:
  explicit Uses(const Graph& graph) {
    for (const Node& node : graph.nodes) {
      for (const std::string& in : node.inputs) {
        if (!in.empty()) ++count_[in];
      }
    }
    for (const ValueInfo& out : graph.outputs) outputs_.insert(out.name);
  }

  // True when `value` is read by exactly one node input and is not a graph
  // output: it can disappear into a fusion.
  bool SingleInternalUse(const std::string& value) const {
    auto it = count_.find(value);
    return it != count_.end() && it->second == 1 && !outputs_.contains(value);
  }
  bool IsGraphOutput(const std::string& value) const {
    return outputs_.contains(value);
  }

 private:
  absl::flat_hash_map<std::string, int> count_;
  absl::flat_hash_set<std::string> outputs_;
};

// The index of the node reading `value`, searching after `from`; -1 if none.
int FindConsumer(const Graph& graph, int from, const std::string& value) {
  for (int i = from + 1; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (const std::string& in : graph.nodes[i].inputs) {
      if (in == value) return i;
    }
  }
  return -1;
}

// The index of the node that produces `value`, searching before `before`;
// -1 if none (a graph input or initializer).
int FindProducer(const Graph& graph, int before, const std::string& value) {
  for (int i = std::min<int>(before, graph.nodes.size()) - 1; i >= 0; --i) {
    for (const std::string& out : graph.nodes[i].outputs) {
      if (out == value) return i;
    }
  }
  return -1;
}

// The node that alone reads node `i`'s first output, which is no graph
// output either (so a fusion may swallow the value); -1 if there is none.
int SoleConsumer(const Graph& graph, int i) {
  const std::string& value = graph.nodes[i].outputs[0];
  return Uses(graph).SingleInternalUse(value) ? FindConsumer(graph, i, value)
                                              : -1;
}

// The float32 output of `node` when it is a plain two-input MatMul (no
// fusion yet), else null.
const ValueInfo* PlainMatMulOutput(const Graph& graph, const Node& node) {
  if (!IsDefaultDomain(node) || node.op_type != "MatMul" ||
      node.outputs.size() != 1 || node.inputs.size() != 2) {
    return nullptr;
  }
  const ValueInfo* out = graph.FindValue(node.outputs[0]);
  return out != nullptr && out->dtype == DType::kFloat32 ? out : nullptr;
}

// An initializer name not yet used in `graph`.
std::string FreshName(const Graph& graph, const std::string& base) {
  std::string name = base;
  for (int i = 1; graph.values.contains(name) ||
                  graph.initializers.count(name) > 0;
       ++i) {
    name = absl::StrCat(base, "_", i);
  }
  return name;
}

void AddInitializer(Graph* graph, const std::string& name, Tensor tensor) {
  graph->values[name] = ValueInfo{name, tensor.dtype(), tensor.shape()};
  graph->initializers[name] = std::move(tensor);
}

// `producer`'s single output now is `consumer`'s; `consumer` is erased.
// The intermediate value disappears.
void MergeInto(Graph* graph, int producer, int consumer) {
  Node& p = graph->nodes[producer];
  graph->values.erase(p.outputs[0]);
  p.outputs = {graph->nodes[consumer].outputs[0]};
  graph->nodes.erase(graph->nodes.begin() + consumer);
}

const Tensor* FloatInitializer(const Graph& graph, const std::string& name) {
  const Tensor* t = graph.FindInitializer(name);
  return t != nullptr && t->dtype() == DType::kFloat32 ? t : nullptr;
}

// A KernelContext over owned tensors: how constant folding runs a kernel.
class FoldContext : public KernelContext {
 public:
  FoldContext(std::vector<TensorView> inputs, std::vector<bool> present,
              std::vector<DType> output_dtypes)
      : inputs_(std::move(inputs)),
        present_(std::move(present)),
        dtypes_(std::move(output_dtypes)),
        outputs_(dtypes_.size()) {}

  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const TensorView* input(int i) const override {
    return i >= 0 && i < num_inputs() && present_[i] ? &inputs_[i] : nullptr;
  }
  int num_outputs() const override { return static_cast<int>(dtypes_.size()); }
  bool output_used(int i) const override {
    return i >= 0 && i < num_outputs() && dtypes_[i] != DType::kUndefined;
  }
  absl::StatusOr<TensorView> AllocateOutput(int i,
                                            const Shape& shape) override {
    if (!output_used(i) || outputs_[i].raw_data() != nullptr) {
      return absl::InternalError("constant folding: bad output allocation");
    }
    if (static_cast<size_t>(shape.NumElements()) * DTypeSize(dtypes_[i]) >
        kMaxFoldedBytes) {
      // Not an error of the model: the node just stays a node.
      return absl::ResourceExhaustedError("folded constant too large");
    }
    GLINT_ASSIGN_OR_RETURN(outputs_[i], Tensor::Create(dtypes_[i], shape));
    return TensorView{dtypes_[i], shape, outputs_[i].raw_data()};
  }

  std::vector<Tensor>& outputs() { return outputs_; }

 private:
  std::vector<TensorView> inputs_;
  std::vector<bool> present_;
  std::vector<DType> dtypes_;
  std::vector<Tensor> outputs_;
};

// Evaluates `node` (inputs all initializers). Null when the node cannot or
// should not be folded; the graph is then left as it was.
std::unique_ptr<std::vector<Tensor>> Evaluate(const Graph& graph,
                                              const Node& node,
                                              const KernelRegistry& kernels) {
  const KernelFactory* factory = kernels.Find(node.op_type);
  if (factory == nullptr) return nullptr;
  KernelSpec spec;
  spec.node = &node;
  spec.opset_version = graph.opset_version;
  std::vector<TensorView> views;
  std::vector<bool> present;
  for (const std::string& in : node.inputs) {
    const Tensor* t = in.empty() ? nullptr : graph.FindInitializer(in);
    spec.inputs.push_back(t != nullptr ? ValueInfo{in, t->dtype(), t->shape()}
                                       : ValueInfo{});
    spec.constant_inputs.push_back(t);
    present.push_back(t != nullptr);
    views.push_back(t != nullptr
                        ? TensorView{t->dtype(), t->shape(),
                                     const_cast<void*>(t->raw_data())}
                        : TensorView{});
  }
  std::vector<DType> dtypes;
  for (const std::string& out : node.outputs) {
    const ValueInfo* info = out.empty() ? nullptr : graph.FindValue(out);
    spec.outputs.push_back(info != nullptr ? *info : ValueInfo{});
    dtypes.push_back(info != nullptr ? info->dtype : DType::kUndefined);
  }
  absl::StatusOr<std::unique_ptr<Kernel>> kernel =
      BuildNoThrow(*factory, spec);
  if (!kernel.ok()) return nullptr;
  FoldContext ctx(std::move(views), std::move(present), dtypes);
  if (!ComputeNoThrow(**kernel, ctx, node.Describe()).ok()) return nullptr;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] != DType::kUndefined && !ctx.outputs()[i].valid()) {
      return nullptr;  // An output the kernel did not produce.
    }
  }
  return std::make_unique<std::vector<Tensor>>(std::move(ctx.outputs()));
}

std::string ActivationOf(const Node& node) {
  return node.GetString("activation", "");
}

// The value of a one-element float32 initializer, if `name` is one.
std::optional<float> ScalarConstant(const Graph& graph,
                                    const std::string& name) {
  const Tensor* t = FloatInitializer(graph, name);
  if (t == nullptr || t->num_elements() != 1) return std::nullopt;
  return t->data<float>()[0];
}

bool Near(std::optional<float> v, double want) {
  return v.has_value() && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
}

// For a two-input node, the input that is not `value` ("" if neither or
// both are).
std::string OtherInput(const Node& node, const std::string& value) {
  if (node.inputs.size() != 2) return "";
  if (node.inputs[0] == value && node.inputs[1] != value) {
    return node.inputs[1];
  }
  if (node.inputs[1] == value && node.inputs[0] != value) {
    return node.inputs[0];
  }
  return "";
}

bool IsBinary(const Node& node, absl::string_view op) {
  return IsDefaultDomain(node) && node.op_type == op &&
         node.inputs.size() == 2 && node.outputs.size() == 1;
}

bool IsUnary(const Node& node, absl::string_view op) {
  return IsDefaultDomain(node) && node.op_type == op &&
         node.inputs.size() == 1 && node.outputs.size() == 1;
}

// What ConvertToChannelsLast can do with a node.
enum class LayoutRole {
  kNone,        // Stays NCHW.
  kConv,        // Joins the region whatever its input's layout.
  kFollower,    // Joins when its activation inputs are in the region.
};

bool IsStatic4DFloat(const Graph& graph, const std::string& value) {
  const ValueInfo* info = value.empty() ? nullptr : graph.FindValue(value);
  return info != nullptr && info->dtype == DType::kFloat32 &&
         info->shape.rank() == 4 && info->shape.IsStatic();
}

// IsStatic4DFloat, uint8/int8 allowed too (the quantized ops' values).
bool IsStatic4D(const Graph& graph, const std::string& value,
                bool quantized_ok) {
  const ValueInfo* info = value.empty() ? nullptr : graph.FindValue(value);
  if (info == nullptr || info->shape.rank() != 4 || !info->shape.IsStatic()) {
    return false;
  }
  return info->dtype == DType::kFloat32 ||
         (quantized_ok &&
          (info->dtype == DType::kUInt8 || info->dtype == DType::kInt8));
}

// [N, C, H, W] -> [N, H, W, C].
Shape ChannelsLastShape(const Shape& s) {
  return Shape({s.dim(0), s.dim(2), s.dim(3), s.dim(1)});
}

// The inputs of `node` that are activations (laid out as NCHW or NHWC);
// any other input (weights, bias, scalar bounds) keeps its layout.
std::vector<int> ActivationInputs(const Node& node) {
  if (node.op_type == "Add" || node.op_type == "Sub" ||
      node.op_type == "Mul" || node.op_type == "Div") {
    return {0, 1};
  }
  if (node.op_type == "Concat") {
    std::vector<int> all(node.inputs.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);
    return all;
  }
  return {0};
}

// A constant 4-element initializer of Resize (scales, sizes), its
// 8-element roi or Pad's 8 pads, or no operand at all: what
// ConvertToChannelsLast can permute to NHWC.
bool PermutableOperand(const Graph& graph, const std::string& name,
                             int64_t elements) {
  if (name.empty()) return true;
  const Tensor* t = graph.FindInitializer(name);
  return t != nullptr && (t->num_elements() == 0 ||
                          (t->num_elements() == elements && t->shape().rank() == 1));
}

LayoutRole ClassifyForChannelsLast(const Graph& graph, const Node& node) {
  const std::string& op = node.op_type;
  // The int8 convolutions, and what lies between them in quantized models:
  // per-tensor (De)QuantizeLinear (elementwise) and MaxPool on uint8.
  const bool qconv =
      op == kQLinearFusedConvOp && node.GetInt("channels_last", 0) == 0;
  const bool quantized_ok = qconv || op == "MaxPool" ||
                            op == "DequantizeLinear" || op == "QuantizeLinear";
  if (!IsDefaultDomain(node) || node.outputs.empty() ||
      !IsStatic4D(graph, node.outputs[0], quantized_ok)) {
    return LayoutRole::kNone;
  }
  for (size_t o = 1; o < node.outputs.size(); ++o) {
    if (!node.outputs[o].empty()) return LayoutRole::kNone;
  }
  if (node.inputs.empty() || !IsStatic4D(graph, node.inputs[0], quantized_ok)) {
    return LayoutRole::kNone;
  }
  if (qconv) return LayoutRole::kConv;
  if (op == "DequantizeLinear" || op == "QuantizeLinear") {
    const Tensor* scale = node.inputs.size() >= 2
                              ? graph.FindInitializer(node.inputs[1])
                              : nullptr;
    return scale != nullptr && scale->num_elements() == 1
               ? LayoutRole::kFollower
               : LayoutRole::kNone;
  }
  if (op == "Conv" || (op == kFusedConvOp &&
                       node.GetInt("channels_last", 0) == 0)) {
    return LayoutRole::kConv;
  }
  static const absl::flat_hash_set<std::string>* const kUnary =
      new absl::flat_hash_set<std::string>{
          "MaxPool",  "AveragePool", "GlobalAveragePool", "Relu",
          "LeakyRelu", "Sigmoid",    "Tanh",              "HardSigmoid",
          "HardSwish", "Elu",        "Selu",              "Softplus",
          "Identity",  kElementwiseChainOp};
  if (kUnary->contains(op)) {
    return node.inputs.size() == 1 ? LayoutRole::kFollower : LayoutRole::kNone;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    // Both operands are region values (ConvertToChannelsLast requires it
    // of every follower's activation inputs), so both are 4-D and take the
    // same permutation: broadcasting commutes with it. A squeeze-excite
    // block's [N, C, 1, 1] scale stays channels last with its features.
    return IsStatic4DFloat(graph, node.inputs[1]) ? LayoutRole::kFollower
                                                  : LayoutRole::kNone;
  }
  if (op == kChannelShuffleOp) return LayoutRole::kFollower;
  if (op == "Slice" && node.inputs.size() >= 4) {
    // Along the channels only (ShuffleNet's chunk into two branches): axes
    // [1] becomes [3]; starts, ends and steps apply to that axis as they
    // are.
    const Tensor* axes = graph.FindInitializer(node.inputs[3]);
    if (axes == nullptr || axes->num_elements() != 1 ||
        (axes->dtype() != DType::kInt64 && axes->dtype() != DType::kInt32)) {
      return LayoutRole::kNone;
    }
    const int64_t axis = axes->dtype() == DType::kInt64
                             ? axes->data<int64_t>()[0]
                             : axes->data<int32_t>()[0];
    return axis == 1 || axis == -3 ? LayoutRole::kFollower : LayoutRole::kNone;
  }
  if (op == "Concat") {
    // Along the channels (DenseNet's blocks, ASPP and FPN heads): axis 3
    // in NHWC. Every input is a region value, so 4-D.
    const int64_t axis = node.GetInt("axis", 1);
    return axis == 1 || axis == -3 ? LayoutRole::kFollower : LayoutRole::kNone;
  }
  if (op == "BatchNormalization") {
    // Inference only; one after a Concat (DenseNet's pre-activation
    // blocks) cannot fold into a Conv.
    return node.GetInt("training_mode", 0) == 0 && node.inputs.size() == 5
               ? LayoutRole::kFollower
               : LayoutRole::kNone;
  }
  if (op == "Pad" && node.inputs.size() >= 2 && node.inputs.size() <= 3 &&
      PermutableOperand(graph, node.inputs[1], 8) &&
      !node.inputs[1].empty()) {
    // Pad-11+ with constant pads (a transition's Pad before AveragePool,
    // as PyTorch exports a padded pool); the kernel pads any axes. Pad-18's
    // axes input is not taken.
    return LayoutRole::kFollower;
  }
  if (op == "Resize" && node.inputs.size() >= 3 &&
      !node.HasAttribute("axes") &&
      node.GetString("coordinate_transformation_mode", "") !=
          "tf_crop_and_resize") {
    // Resize-11+ (X, roi, scales[, sizes]) with constant operands, which
    // ConvertToChannelsLast permutes; the kernel resizes any axes.
    const bool constant =
        PermutableOperand(graph, node.inputs[1], 8) &&
        PermutableOperand(graph, node.inputs[2], 4) &&
        (node.inputs.size() < 4 ||
         PermutableOperand(graph, node.inputs[3], 4));
    return constant ? LayoutRole::kFollower : LayoutRole::kNone;
  }
  return LayoutRole::kNone;
}

Node TransposeNode(std::string name, std::string in, std::string out,
                   std::vector<int64_t> perm) {
  Node node;
  node.name = std::move(name);
  node.op_type = "Transpose";
  node.inputs = {std::move(in)};
  node.outputs = {std::move(out)};
  node.attributes["perm"] = std::move(perm);
  return node;
}

}  // namespace

absl::Status FoldConstants(Graph* graph, const KernelRegistry& kernels) {
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
    std::unique_ptr<std::vector<Tensor>> results;
    if (foldable) results = Evaluate(*graph, node, kernels);
    if (results == nullptr) {
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

namespace {

std::vector<int64_t> TransposePerm(const Node& node) {
  return node.GetInts("perm", {});
}

}  // namespace

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
    graph->nodes[i].attributes["perm"] = std::move(perm);
    MergeInto(graph, i, j);
    --i;  // The merged node may meet a third Transpose.
  }
  return absl::OkStatus();
}

absl::Status FuseAttention(Graph* graph) {
  for (int sm = 0; sm < static_cast<int>(graph->nodes.size()); ++sm) {
    const Node& softmax = graph->nodes[sm];
    if (!IsUnary(softmax, "Softmax")) continue;
    const ValueInfo* scores = graph->FindValue(softmax.inputs[0]);
    if (scores == nullptr || scores->dtype != DType::kFloat32 ||
        scores->shape.rank() != 4 || !scores->shape.IsStatic()) {
      continue;
    }
    // Before opset 13 Softmax flattens from `axis` on (default 1), which
    // for the last axis is the same thing.
    const int64_t axis =
        softmax.GetInt("axis", graph->opset_version >= 13 ? -1 : 1);
    if (axis != -1 && axis != 3) continue;
    const Uses uses(*graph);
    // The node producing `value`, which nothing else reads; -1 otherwise.
    auto sole_producer = [&](const std::string& value) {
      return uses.SingleInternalUse(value)
                 ? FindProducer(*graph, static_cast<int>(graph->nodes.size()),
                                value)
                 : -1;
    };
    auto sole_consumer = [&](int i) {
      const std::string& value = graph->nodes[i].outputs[0];
      return uses.SingleInternalUse(value) ? FindConsumer(*graph, i, value)
                                           : -1;
    };
    auto is = [&](int i, const char* op) {
      return i >= 0 && IsDefaultDomain(graph->nodes[i]) &&
             graph->nodes[i].op_type == op &&
             graph->nodes[i].outputs.size() == 1;
    };
    // Transpose(Reshape(X, [B, L, H, D]), perm) with X [B, L, H*D]: the
    // nodes and X, or nothing.
    struct Head {
      int transpose = -1, reshape = -1;
      std::string x;
      std::vector<int64_t> split;  // [B, L, H, D]
    };
    auto head = [&](const std::string& value,
                    const std::vector<int64_t>& perm) -> std::optional<Head> {
      Head h;
      h.transpose = sole_producer(value);
      if (!is(h.transpose, "Transpose") ||
          TransposePerm(graph->nodes[h.transpose]) != perm) {
        return std::nullopt;
      }
      h.reshape = sole_producer(graph->nodes[h.transpose].inputs[0]);
      if (!is(h.reshape, "Reshape")) return std::nullopt;
      const Node& r = graph->nodes[h.reshape];
      const ValueInfo* x = graph->FindValue(r.inputs[0]);
      const ValueInfo* split = graph->FindValue(r.outputs[0]);
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
    };
    const int mm1 = sole_producer(softmax.inputs[0]);
    if (!is(mm1, "MatMul") && !is(mm1, kFusedMatMulOp)) continue;
    const Node& qk = graph->nodes[mm1];
    if (qk.inputs.size() != 2 || !ActivationOf(qk).empty()) continue;
    const int mm2 = sole_consumer(sm);
    if (!is(mm2, "MatMul") || graph->nodes[mm2].inputs.size() != 2 ||
        graph->nodes[mm2].inputs[0] != softmax.outputs[0]) {
      continue;
    }
    const int out_t = sole_consumer(mm2);
    if (!is(out_t, "Transpose") ||
        TransposePerm(graph->nodes[out_t]) !=
            std::vector<int64_t>{0, 2, 1, 3}) {
      continue;
    }
    const int merge = sole_consumer(out_t);
    if (!is(merge, "Reshape")) continue;
    const std::optional<Head> q = head(qk.inputs[0], {0, 2, 1, 3});
    const std::optional<Head> k = head(qk.inputs[1], {0, 2, 3, 1});
    const std::optional<Head> v =
        head(graph->nodes[mm2].inputs[1], {0, 2, 1, 3});
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
    // The node takes the last one's place, where Q, K and V are all ready;
    // the rest of the pattern and its values go.
    std::vector<int> erase = {q->transpose, q->reshape, k->transpose,
                              k->reshape,   v->transpose, v->reshape,
                              mm1,          sm,           mm2,
                              out_t};
    for (int i : erase) graph->values.erase(graph->nodes[i].outputs[0]);
    graph->nodes[merge] = std::move(attention);
    std::sort(erase.begin(), erase.end(), std::greater<int>());
    for (int i : erase) graph->nodes.erase(graph->nodes.begin() + i);
    sm = -1;  // Indices moved; rescan (each match removes its Softmax).
  }
  return absl::OkStatus();
}

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
    const int64_t k = weights[0]->shape().dim(0);
    const int64_t e = weights[0]->shape().dim(1);
    // W [K, 3E]: each row is the three projections' rows side by side.
    GLINT_ASSIGN_OR_RETURN(Tensor w,
                           Tensor::Create(DType::kFloat32, Shape({k, 3 * e})));
    GLINT_ASSIGN_OR_RETURN(Tensor b,
                           Tensor::Create(DType::kFloat32, Shape({3 * e})));
    bool any_bias = false;
    for (int i = 0; i < 3; ++i) {
      for (int64_t r = 0; r < k; ++r) {
        std::copy_n(weights[i]->data<float>() + r * e, e,
                    w.data<float>() + r * 3 * e + i * e);
      }
      float* bias = b.data<float>() + i * e;
      if (biases[i] != nullptr) {
        std::copy_n(biases[i]->data<float>(), e, bias);
        any_bias = true;
      } else {
        std::fill_n(bias, e, 0.0f);
      }
    }
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

absl::Status FuseGelu(Graph* graph) {
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
  // The tanh form, as PyTorch exports F.gelu(x, approximate="tanh"):
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), with x^3 as
  // x * (x * x) or Pow(x, 3).
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
    // x + 0.044715 * x^3: try each operand of the Add as x.
    std::string x;
    std::vector<int> cube_nodes;
    for (const std::string& cand : graph->nodes[sum].inputs) {
      const std::string a = OtherInput(graph->nodes[sum], cand);
      const int coef = a.empty() ? -1 : single_producer(sum, a);
      if (coef < 0 || !IsBinary(graph->nodes[coef], "Mul")) continue;
      std::string x3;
      for (const std::string& in : graph->nodes[coef].inputs) {
        if (Near(ScalarConstant(*graph, in), 0.044715)) {
          x3 = OtherInput(graph->nodes[coef], in);
        }
      }
      const int cube = x3.empty() ? -1 : single_producer(coef, x3);
      if (cube < 0) continue;
      const Node& cn = graph->nodes[cube];
      std::vector<int> nodes = {coef, cube};
      bool is_cube = false;
      if (cn.op_type == "Pow" && IsDefaultDomain(cn) && cn.inputs.size() == 2) {
        is_cube = cn.inputs[0] == cand &&
                  Near(ScalarConstant(*graph, cn.inputs[1]), 3.0);
      } else if (IsBinary(cn, "Mul")) {
        const std::string sq = OtherInput(cn, cand);
        const int square = sq.empty() ? -1 : single_producer(cube, sq);
        is_cube = square >= 0 && IsBinary(graph->nodes[square], "Mul") &&
                  graph->nodes[square].inputs[0] == cand &&
                  graph->nodes[square].inputs[1] == cand;
        nodes.push_back(square);
      }
      if (is_cube) {
        x = cand;
        cube_nodes = std::move(nodes);
        break;
      }
    }
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
  return absl::OkStatus();
}

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

absl::Status FuseElementwiseChains(Graph* graph) {
  // The input a chainable node transforms ("" if the node is not one): a
  // float32 value of the output's shape; a scalar operand is a constant.
  struct Step {
    std::string data;
    float scalar = 0;
    bool scalar_first = false;
  };
  auto as_step = [&](const Node& node) -> std::optional<Step> {
    if (!IsDefaultDomain(node) || node.outputs.size() != 1) return std::nullopt;
    const ValueInfo* out = graph->FindValue(node.outputs[0]);
    if (out == nullptr || out->dtype != DType::kFloat32) return std::nullopt;
    Step step;
    if (IsChainableUnaryOp(node.op_type) && node.inputs.size() == 1) {
      step.data = node.inputs[0];
    } else if (IsChainableScalarOp(node.op_type) && node.inputs.size() == 2) {
      for (int k = 0; k < 2 && step.data.empty(); ++k) {
        const std::optional<float> c = ScalarConstant(*graph, node.inputs[k]);
        if (c.has_value() && !graph->IsInitializer(node.inputs[1 - k])) {
          step.data = node.inputs[1 - k];
          step.scalar = *c;
          step.scalar_first = k == 0;
        }
      }
    }
    const ValueInfo* in =
        step.data.empty() ? nullptr : graph->FindValue(step.data);
    if (in == nullptr || in->dtype != DType::kFloat32 ||
        in->shape != out->shape) {
      return std::nullopt;
    }
    return step;
  };
  for (int head = 0; head < static_cast<int>(graph->nodes.size()); ++head) {
    std::optional<Step> first = as_step(graph->nodes[head]);
    if (!first.has_value()) continue;
    // Nodes are in topological order, so the first chainable node met is
    // its chain's head: extend it while each value has one reader, the
    // next step.
    const Uses uses(*graph);
    std::vector<int> chain = {head};
    std::vector<Step> steps = {*first};
    for (;;) {
      const std::string& out = graph->nodes[chain.back()].outputs[0];
      if (!uses.SingleInternalUse(out)) break;
      const int next = FindConsumer(*graph, chain.back(), out);
      if (next < 0) break;
      std::optional<Step> step = as_step(graph->nodes[next]);
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

// Replaces the constant per-axis operands of a Resize (roi, scales, sizes)
// or a Pad (pads), in NCHW order, by NHWC copies: [a, b, c, d] ->
// [a, c, d, b], and each half of roi and pads likewise. Pad's scalar
// constant_value (input 2) is left as it is.
void PermuteConstantOperands(Graph* graph, Node* node) {
  const size_t last = node->op_type == "Pad" ? 1 : 3;
  for (size_t k = 1; k < node->inputs.size() && k <= last; ++k) {
    const Tensor* t = node->inputs[k].empty()
                          ? nullptr
                          : graph->FindInitializer(node->inputs[k]);
    if (t == nullptr || t->num_elements() == 0) continue;
    Tensor permuted = t->Clone();
    const size_t width = DTypeSize(t->dtype());
    const int64_t halves = t->num_elements() / 4;
    const auto* from = static_cast<const uint8_t*>(t->raw_data());
    auto* to = static_cast<uint8_t*>(permuted.raw_data());
    static constexpr int kFrom[4] = {0, 2, 3, 1};
    for (int64_t h = 0; h < halves; ++h) {
      for (int d = 0; d < 4; ++d) {
        std::memcpy(to + (h * 4 + d) * width, from + (h * 4 + kFrom[d]) * width,
                    width);
      }
    }
    const std::string name = FreshName(*graph, node->inputs[k] + "__nhwc");
    AddInitializer(graph, name, std::move(permuted));
    node->inputs[k] = name;
  }
}

absl::Status FuseChannelShuffle(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& split = graph->nodes[i];
    if (!IsDefaultDomain(split) || split.op_type != "Reshape" ||
        split.outputs.size() != 1 || !IsStatic4DFloat(*graph, split.inputs[0])) {
      continue;
    }
    const ValueInfo* in = graph->FindValue(split.inputs[0]);
    const ValueInfo* grouped = graph->FindValue(split.outputs[0]);
    if (grouped == nullptr || !grouped->shape.IsStatic() ||
        grouped->shape.rank() != 5) {
      continue;
    }
    const Shape& x = in->shape;
    const Shape& s5 = grouped->shape;
    if (s5.dim(0) != x.dim(0) || s5.dim(1) * s5.dim(2) != x.dim(1) ||
        s5.dim(3) != x.dim(2) || s5.dim(4) != x.dim(3) || s5.dim(1) < 1) {
      continue;
    }
    const int t = SoleConsumer(*graph, i);
    if (t < 0) continue;
    const Node& transpose = graph->nodes[t];
    if (!IsDefaultDomain(transpose) || transpose.op_type != "Transpose" ||
        transpose.outputs.size() != 1 ||
        TransposePerm(transpose) != std::vector<int64_t>{0, 2, 1, 3, 4}) {
      continue;
    }
    const int r = SoleConsumer(*graph, t);
    if (r < 0) continue;
    const Node& merge = graph->nodes[r];
    const ValueInfo* out =
        merge.outputs.size() == 1 ? graph->FindValue(merge.outputs[0]) : nullptr;
    if (!IsDefaultDomain(merge) || merge.op_type != "Reshape" ||
        merge.inputs[0] != transpose.outputs[0] || out == nullptr ||
        out->dtype != DType::kFloat32 || out->shape != x) {
      continue;
    }
    Node fused;
    fused.name = merge.name;
    fused.op_type = kChannelShuffleOp;
    fused.inputs = {split.inputs[0]};
    fused.outputs = merge.outputs;
    fused.attributes["groups"] = s5.dim(1);
    graph->values.erase(split.outputs[0]);
    graph->values.erase(transpose.outputs[0]);
    graph->nodes[r] = std::move(fused);
    graph->nodes.erase(graph->nodes.begin() + t);
    graph->nodes.erase(graph->nodes.begin() + i);
    --i;
  }
  return absl::OkStatus();
}

absl::Status ConvertToChannelsLast(Graph* graph) {
  // Which nodes join: every eligible Conv, then whatever follows a region
  // value with an eligible op, in topological order.
  std::vector<bool> joins(graph->nodes.size(), false);
  absl::flat_hash_set<std::string> region_values;
  bool any_conv = false;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const Node& node = graph->nodes[i];
    const LayoutRole role = ClassifyForChannelsLast(*graph, node);
    bool join = role == LayoutRole::kConv;
    if (role == LayoutRole::kFollower) {
      join = true;
      for (int k : ActivationInputs(node)) {
        join = join && region_values.contains(node.inputs[k]);
      }
    }
    if (!join) continue;
    any_conv = any_conv || role == LayoutRole::kConv;
    joins[i] = true;
    region_values.insert(node.outputs[0]);
  }
  if (!any_conv) return absl::OkStatus();
  // A Resize whose output no region node reads stays NCHW: it is cheaper
  // to bring its (smaller) input back than its output (a segmentation
  // head's final upsampling to the image's size).
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (!joins[i] || graph->nodes[i].op_type != "Resize") continue;
    const std::string& out = graph->nodes[i].outputs[0];
    bool read_inside = false;
    for (size_t j = i + 1; j < graph->nodes.size() && !read_inside; ++j) {
      read_inside = joins[j] && absl::c_linear_search(graph->nodes[j].inputs, out);
    }
    if (!read_inside) {
      joins[i] = false;
      region_values.erase(out);
    }
  }

  // Region values read outside it (or graph outputs) leave through a
  // Transpose that produces the original NCHW name.
  absl::flat_hash_set<std::string> leaves;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (joins[i]) continue;
    for (const std::string& in : graph->nodes[i].inputs) {
      if (region_values.contains(in)) leaves.insert(in);
    }
  }
  for (const ValueInfo& out : graph->outputs) {
    if (region_values.contains(out.name)) leaves.insert(out.name);
  }
  absl::flat_hash_set<std::string> node_names;
  for (const Node& node : graph->nodes) node_names.insert(node.name);
  auto fresh_node_name = [&](const std::string& base) {
    std::string name = base;
    for (int i = 1; node_names.contains(name); ++i) {
      name = absl::StrCat(base, "_", i);
    }
    node_names.insert(name);
    return name;
  };
  // Original name -> channels-last name, for region values and for NCHW
  // values transposed on their way in.
  absl::flat_hash_map<std::string, std::string> nhwc;
  auto add_nhwc_value = [&](const std::string& value) {
    const std::string name = FreshName(*graph, value + "__nhwc");
    ValueInfo info = *graph->FindValue(value);
    info.name = name;
    info.shape = ChannelsLastShape(info.shape);
    graph->values[name] = info;
    nhwc[value] = name;
    return name;
  };

  std::vector<Node> nodes;
  nodes.reserve(graph->nodes.size() + 2 * leaves.size() + 1);
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    Node node = std::move(graph->nodes[i]);
    if (!joins[i]) {
      nodes.push_back(std::move(node));
      continue;
    }
    for (int k : ActivationInputs(node)) {
      std::string& in = node.inputs[k];
      auto it = nhwc.find(in);
      if (it == nhwc.end()) {  // An NCHW value entering through a Conv.
        const std::string name = add_nhwc_value(in);
        nodes.push_back(TransposeNode(fresh_node_name(in + kToNhwcSuffix),
                                      in, name, {0, 2, 3, 1}));
        in = name;
      } else {
        in = it->second;
      }
    }
    const std::string& op = node.op_type;
    if (op == "Conv" || op == kFusedConvOp) {
      node.op_type = kFusedConvOp;
      node.attributes["channels_last"] = int64_t{1};
    } else if (op == kQLinearFusedConvOp) {
      node.attributes["channels_last"] = int64_t{1};
    } else if (op == "MaxPool") {
      node.op_type = kChannelsLastMaxPoolOp;
    } else if (op == "AveragePool") {
      node.op_type = kChannelsLastAveragePoolOp;
    } else if (op == "GlobalAveragePool") {
      node.op_type = kChannelsLastGlobalAveragePoolOp;
    } else if (op == "BatchNormalization") {
      node.op_type = kChannelsLastBatchNormOp;
    } else if (op == "Concat") {
      node.attributes["axis"] = int64_t{3};
    } else if (op == "Resize" || op == "Pad") {
      PermuteConstantOperands(graph, &node);
    } else if (op == kChannelShuffleOp) {
      node.op_type = kChannelsLastChannelShuffleOp;
    } else if (op == "Slice") {
      const Tensor* axes = graph->FindInitializer(node.inputs[3]);
      Tensor last = axes->dtype() == DType::kInt64
                        ? Tensor::FromVector(DType::kInt64, Shape({1}),
                                             std::vector<int64_t>{3})
                        : Tensor::FromVector(DType::kInt32, Shape({1}),
                                             std::vector<int32_t>{3});
      const std::string name = FreshName(*graph, node.inputs[3] + "__nhwc");
      AddInitializer(graph, name, std::move(last));
      node.inputs[3] = name;
    }
    node.outputs.resize(1);
    const std::string out = node.outputs[0];
    const std::string out_nhwc = add_nhwc_value(out);
    node.outputs[0] = out_nhwc;
    nodes.push_back(std::move(node));
    if (leaves.contains(out)) {
      nodes.push_back(TransposeNode(fresh_node_name(out + kToNchwSuffix),
                                    out_nhwc, out, {0, 3, 1, 2}));
    } else {
      graph->values.erase(out);
    }
  }
  graph->nodes = std::move(nodes);
  return absl::OkStatus();
}

bool IsLayoutReorder(const Node& node) {
  return node.op_type == "Transpose" &&
         (absl::StrContains(node.name, kToNhwcSuffix) ||
          absl::StrContains(node.name, kToNchwSuffix));
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
    std::vector<float> bias_values;
    int bias_dq = -1;
    if ((conv || gemm) && p.has_input(2)) {
      const std::string& b = p.inputs[2];
      const Tensor* bf = FloatInitializer(*graph, b);
      if (bf != nullptr) {
        if (bf->num_elements() != channels) continue;
        bias = b;
      } else {
        const std::optional<Dequantize> bd = FindDequantize(*graph, i, b);
        const Tensor* bq =
            bd.has_value() ? graph->FindInitializer(bd->q) : nullptr;
        if (bq == nullptr || bq->num_elements() != channels ||
            (bd->params != 1 && bd->params != channels)) {
          continue;
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
        if (!ok) continue;
        bias = FreshName(*graph, p.name + "_qbias");
        AddInitializer(graph, bias, std::move(folded));
        bias_dq = bd->node;
      }
    } else if (gemm && p.has_input(2)) {
      continue;
    }
    if (gemm && !bias.empty()) {
      const Tensor* b = graph->FindInitializer(bias);
      if (b->shape().rank() == 2 && b->shape().dim(0) != 1) continue;
    }
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
    fused.inputs = {x->q,    x->scale, x->zero, w->q, w->scale,
                    w->zero, "",       "",      bias};
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
    std::vector<int> maybe_dead = {x->node, w->node};
    if (bias_dq >= 0) maybe_dead.push_back(bias_dq);
    graph->nodes[i] = std::move(fused);
    EraseNodes(graph, erase, maybe_dead);
    i = -1;  // Indices moved; start over (graphs are small).
  }
  // DequantizeLinear -> MaxPool -> QuantizeLinear with the same positive,
  // finite scale and zero point: MaxPool on the quantized values (max
  // commutes with the increasing dequantization, and the maximum
  // requantizes exactly).
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

absl::Status OptimizeGraphForCpu(Graph* graph, const KernelRegistry& kernels) {
  // Before constant folding, which would turn the weights'
  // DequantizeLinear into float weights.
  GLINT_RETURN_IF_ERROR(FuseQuantizedOps(graph));
  GLINT_RETURN_IF_ERROR(FoldConstants(graph, kernels));
  GLINT_RETURN_IF_ERROR(FuseTransposes(graph));
  GLINT_RETURN_IF_ERROR(FoldBatchNormIntoConv(graph));
  GLINT_RETURN_IF_ERROR(FuseMatMulBias(graph));
  GLINT_RETURN_IF_ERROR(FuseMatMulScale(graph));
  GLINT_RETURN_IF_ERROR(FuseAttention(graph));
  GLINT_RETURN_IF_ERROR(FuseAttentionProjections(graph));
  GLINT_RETURN_IF_ERROR(FuseGelu(graph));
  GLINT_RETURN_IF_ERROR(FuseActivations(graph));
  GLINT_RETURN_IF_ERROR(FuseElementwiseChains(graph));
  GLINT_RETURN_IF_ERROR(FuseChannelShuffle(graph));
  GLINT_RETURN_IF_ERROR(ConvertToChannelsLast(graph));
  GLINT_RETURN_IF_ERROR(FuseResidualAdd(graph));
  // A Relu after a residual Add now follows the fused node.
  GLINT_RETURN_IF_ERROR(FuseActivations(graph));
  RemoveUnusedInitializers(graph);
  return graph->Validate();
}

}  // namespace glint::cpu
