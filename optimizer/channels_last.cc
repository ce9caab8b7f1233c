// Channels-last regions and the channel shuffle. optimizer/optimize.h.
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
using optimizer_internal::FreshName;
using optimizer_internal::IsDefaultDomain;
using optimizer_internal::SoleConsumer;
using optimizer_internal::TransposeNode;
using optimizer_internal::TransposePerm;
using optimizer_internal::Uses;

namespace {

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

// A 4-D value of known channels: the layout's business. Its batch and
// image size may be dynamic (shapes per request): the NHWC kernels take
// each run's, as the NCHW ones do.
bool HasChannels4D(const ValueInfo& info) {
  return info.shape.has_rank() && info.shape.rank() == 4 &&
         info.shape.dim(1) != Shape::kUnknownDim;
}

// A float32 value HasChannels4D.
bool IsChannels4DFloat(const Graph& graph, const std::string& value) {
  const ValueInfo* info = value.empty() ? nullptr : graph.FindValue(value);
  return info != nullptr && info->dtype == DType::kFloat32 &&
         HasChannels4D(*info);
}

// IsChannels4DFloat, uint8/int8 allowed too (the quantized ops' values).
bool IsChannels4D(const Graph& graph, const std::string& value,
                  bool quantized_ok) {
  const ValueInfo* info = value.empty() ? nullptr : graph.FindValue(value);
  if (info == nullptr || !HasChannels4D(*info)) return false;
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

// The followers that name an axis or take per-axis operands (Slice,
// Concat, BatchNormalization, Pad, Resize): they join when that axis is the
// channels or the operands are constants ConvertToChannelsLast can permute.
LayoutRole ClassifyAxisFollower(const Graph& graph, const Node& node) {
  const std::string& op = node.op_type;
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

LayoutRole ClassifyForChannelsLast(const Graph& graph, const Node& node) {
  const std::string& op = node.op_type;
  // The int8 convolutions, and what lies between them in quantized models:
  // per-tensor (De)QuantizeLinear (elementwise) and MaxPool on uint8.
  const bool qconv =
      op == kQLinearFusedConvOp && node.GetInt("channels_last", 0) == 0;
  const bool quantized_ok = qconv || op == "MaxPool" ||
                            op == "DequantizeLinear" || op == "QuantizeLinear";
  if (!IsDefaultDomain(node) || node.outputs.empty() ||
      !IsChannels4D(graph, node.outputs[0], quantized_ok)) {
    return LayoutRole::kNone;
  }
  for (size_t o = 1; o < node.outputs.size(); ++o) {
    if (!node.outputs[o].empty()) return LayoutRole::kNone;
  }
  if (node.inputs.empty() ||
      !IsChannels4D(graph, node.inputs[0], quantized_ok)) {
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
    return IsChannels4DFloat(graph, node.inputs[1]) ? LayoutRole::kFollower
                                                    : LayoutRole::kNone;
  }
  if (op == kChannelShuffleOp) return LayoutRole::kFollower;
  return ClassifyAxisFollower(graph, node);
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

}  // namespace

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

namespace {

// Which nodes join the channels-last region: every eligible Conv, then
// whatever follows a region value with an eligible op, in topological order.
// Fills *region_values with the outputs of the nodes that join. All false
// when no Conv joins: a region without one gains nothing.
std::vector<bool> ChooseChannelsLastRegion(
    const Graph& graph, absl::flat_hash_set<std::string>* region_values) {
  std::vector<bool> joins(graph.nodes.size(), false);
  bool any_conv = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const LayoutRole role = ClassifyForChannelsLast(graph, node);
    bool join = role == LayoutRole::kConv;
    if (role == LayoutRole::kFollower) {
      join = true;
      for (int k : ActivationInputs(node)) {
        join = join && region_values->contains(node.inputs[k]);
      }
    }
    if (!join) continue;
    any_conv = any_conv || role == LayoutRole::kConv;
    joins[i] = true;
    region_values->insert(node.outputs[0]);
  }
  if (!any_conv) {
    region_values->clear();
    return std::vector<bool>(graph.nodes.size(), false);
  }
  // A Resize whose output no region node reads stays NCHW: it is cheaper
  // to bring its (smaller) input back than its output (a segmentation
  // head's final upsampling to the image's size).
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!joins[i] || graph.nodes[i].op_type != "Resize") continue;
    const std::string& out = graph.nodes[i].outputs[0];
    bool read_inside = false;
    for (size_t j = i + 1; j < graph.nodes.size() && !read_inside; ++j) {
      read_inside = joins[j] && absl::c_linear_search(graph.nodes[j].inputs, out);
    }
    if (!read_inside) {
      joins[i] = false;
      region_values->erase(out);
    }
  }
  return joins;
}

// The region values read outside it (or graph outputs): they leave through
// a Transpose that produces the original NCHW name.
absl::flat_hash_set<std::string> RegionLeaves(
    const Graph& graph, const std::vector<bool>& joins,
    const absl::flat_hash_set<std::string>& region_values) {
  absl::flat_hash_set<std::string> leaves;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (joins[i]) continue;
    for (const std::string& in : graph.nodes[i].inputs) {
      if (region_values.contains(in)) leaves.insert(in);
    }
  }
  for (const ValueInfo& out : graph.outputs) {
    if (region_values.contains(out.name)) leaves.insert(out.name);
  }
  return leaves;
}

// Turns a region node into its channels-last form: the NHWC op or
// attribute, and permuted constant operands. Its inputs and outputs are
// renamed by the caller.
void MakeChannelsLast(Graph* graph, Node* node) {
  const std::string& op = node->op_type;
  if (op == "Conv" || op == kFusedConvOp) {
    node->op_type = kFusedConvOp;
    node->attributes["channels_last"] = int64_t{1};
  } else if (op == kQLinearFusedConvOp) {
    node->attributes["channels_last"] = int64_t{1};
  } else if (op == "MaxPool") {
    node->op_type = kChannelsLastMaxPoolOp;
  } else if (op == "AveragePool") {
    node->op_type = kChannelsLastAveragePoolOp;
  } else if (op == "GlobalAveragePool") {
    node->op_type = kChannelsLastGlobalAveragePoolOp;
  } else if (op == "BatchNormalization") {
    node->op_type = kChannelsLastBatchNormOp;
  } else if (op == "Concat") {
    node->attributes["axis"] = int64_t{3};
  } else if (op == "Resize" || op == "Pad") {
    PermuteConstantOperands(graph, node);
  } else if (op == kChannelShuffleOp) {
    node->op_type = kChannelsLastChannelShuffleOp;
  } else if (op == "Slice") {
    const Tensor* axes = graph->FindInitializer(node->inputs[3]);
    Tensor last = axes->dtype() == DType::kInt64
                      ? Tensor::FromVector(DType::kInt64, Shape({1}),
                                           std::vector<int64_t>{3})
                      : Tensor::FromVector(DType::kInt32, Shape({1}),
                                           std::vector<int32_t>{3});
    const std::string name = FreshName(*graph, node->inputs[3] + "__nhwc");
    AddInitializer(graph, name, std::move(last));
    node->inputs[3] = name;
  }
}

}  // namespace

absl::Status ConvertToChannelsLast(Graph* graph) {
  absl::flat_hash_set<std::string> region_values;
  const std::vector<bool> joins =
      ChooseChannelsLastRegion(*graph, &region_values);
  if (region_values.empty()) return absl::OkStatus();
  const absl::flat_hash_set<std::string> leaves =
      RegionLeaves(*graph, joins, region_values);
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
    if (info.dim_names.size() == 4) {  // The names move with their dims.
      info.dim_names = {info.dim_names[0], info.dim_names[2], info.dim_names[3],
                        info.dim_names[1]};
    }
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
    MakeChannelsLast(graph, &node);
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

absl::Status FuseConcatBatchNorm(Graph* graph) {
  for (int i = 0; i < static_cast<int>(graph->nodes.size()); ++i) {
    const Node& concat = graph->nodes[i];
    if (!IsDefaultDomain(concat) || concat.op_type != "Concat" ||
        concat.outputs.size() != 1 || concat.inputs.empty()) {
      continue;
    }
    const int64_t axis = concat.GetInt("axis", 1);
    // In the region every value is 4-D NHWC (its batch and image size may
    // be dynamic); the channels are axis 3.
    const ValueInfo* out = graph->FindValue(concat.outputs[0]);
    if ((axis != 3 && axis != -1) || out == nullptr ||
        out->dtype != DType::kFloat32 || !out->shape.has_rank() ||
        out->shape.rank() != 4) {
      continue;
    }
    const int j = SoleConsumer(*graph, i);
    if (j < 0) continue;
    const Node& bn = graph->nodes[j];
    // spatial=0 (opsets 7-8) is refused by the kernel: left to say so.
    if (bn.op_type != kChannelsLastBatchNormOp || bn.inputs.size() != 5 ||
        bn.inputs[0] != concat.outputs[0] || bn.outputs.size() != 1 ||
        bn.GetInt("spatial", 1) != 1) {
      continue;
    }
    bool fusable = true;
    for (int k = 1; k <= 4 && fusable; ++k) {
      const Tensor* t = graph->FindInitializer(bn.inputs[k]);
      fusable = t != nullptr && t->dtype() == DType::kFloat32;
    }
    for (const std::string& in : concat.inputs) {
      const ValueInfo* info = graph->FindValue(in);
      fusable = fusable && info != nullptr && info->dtype == DType::kFloat32;
    }
    if (!fusable) continue;
    std::vector<std::string> inputs(bn.inputs.begin() + 1, bn.inputs.end());
    inputs.insert(inputs.end(), concat.inputs.begin(), concat.inputs.end());
    Node& fused = graph->nodes[j];
    fused.op_type = kChannelsLastConcatBatchNormOp;
    fused.inputs = std::move(inputs);
    graph->values.erase(concat.outputs[0]);
    graph->nodes.erase(graph->nodes.begin() + i);
    --i;
  }
  return absl::OkStatus();
}

namespace {

// A one-element int64/int32 initializer's value.
std::optional<int64_t> OneInt(const Graph& graph, const std::string& name) {
  const Tensor* t = name.empty() ? nullptr : graph.FindInitializer(name);
  if (t == nullptr || t->num_elements() != 1) return std::nullopt;
  if (t->dtype() == DType::kInt64) return t->data<int64_t>()[0];
  if (t->dtype() == DType::kInt32) return t->data<int32_t>()[0];
  return std::nullopt;
}

// The channels [begin, end) that `slice` takes of an NHWC value of
// `channels` channels: a Slice along axis 3 with constant starts and ends
// and step 1 (ShuffleNet's chunk, in the region); else nullopt. Bounds as
// ONNX resolves them (negative from the end, clamped to [0, channels]).
std::optional<std::pair<int64_t, int64_t>> ChannelSliceRange(const Graph& graph,
                                                             const Node& slice,
                                                             int64_t channels) {
  if (!IsDefaultDomain(slice) || slice.op_type != "Slice" ||
      slice.inputs.size() < 4 || slice.inputs.size() > 5 ||
      slice.outputs.size() != 1) {
    return std::nullopt;
  }
  const std::optional<int64_t> axis = OneInt(graph, slice.inputs[3]);
  if (!axis.has_value() || (*axis != 3 && *axis != -1)) return std::nullopt;
  if (slice.inputs.size() == 5 && !slice.inputs[4].empty() &&
      OneInt(graph, slice.inputs[4]) != std::optional<int64_t>(1)) {
    return std::nullopt;
  }
  const std::optional<int64_t> start = OneInt(graph, slice.inputs[1]);
  const std::optional<int64_t> end = OneInt(graph, slice.inputs[2]);
  if (!start.has_value() || !end.has_value()) return std::nullopt;
  auto resolve = [channels](int64_t v) {
    if (v < 0) v = v < -channels ? 0 : v + channels;
    return std::min(v, channels);
  };
  const int64_t b = resolve(*start);
  return std::make_pair(b, std::max(b, resolve(*end)));
}

}  // namespace

absl::Status FuseChannelGather(Graph* graph) {
  for (int s = 0; s < static_cast<int>(graph->nodes.size()); ++s) {
    const Node& shuffle = graph->nodes[s];
    if (shuffle.op_type != kChannelsLastChannelShuffleOp ||
        shuffle.inputs.size() != 1 || shuffle.outputs.size() != 1) {
      continue;
    }
    const std::string shuffled = shuffle.outputs[0];
    const ValueInfo* out = graph->FindValue(shuffled);
    const int64_t groups = shuffle.GetInt("groups", 0);
    if (out == nullptr || out->dtype != DType::kFloat32 ||
        !out->shape.has_rank() || out->shape.rank() != 4 ||
        out->shape.dim(3) <= 0 || groups < 1 ||
        out->shape.dim(3) % groups != 0) {
      continue;
    }
    const int64_t channels = out->shape.dim(3);
    // The Concat it shuffles, when the shuffle alone reads it.
    std::vector<std::string> inputs = {shuffle.inputs[0]};
    int concat = FindProducer(*graph, s, shuffle.inputs[0]);
    if (concat >= 0) {
      const Node& c = graph->nodes[concat];
      const int64_t axis = c.GetInt("axis", 1);
      if (IsDefaultDomain(c) && c.op_type == "Concat" &&
          c.outputs.size() == 1 && (axis == 3 || axis == -1) &&
          SoleConsumer(*graph, concat) == s) {
        inputs = c.inputs;
      } else {
        concat = -1;
      }
    }
    // Its readers, when every one is a channel Slice of it (the next unit's
    // chunk into halves) and it is no graph output.
    std::vector<int> slices;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    bool all_slices = !Uses(*graph).IsGraphOutput(shuffled);
    for (int k = s + 1; k < static_cast<int>(graph->nodes.size()); ++k) {
      const Node& reader = graph->nodes[k];
      const int reads = static_cast<int>(
          std::count(reader.inputs.begin(), reader.inputs.end(), shuffled));
      if (reads == 0) continue;
      const auto range = ChannelSliceRange(*graph, reader, channels);
      if (reads != 1 || reader.inputs[0] != shuffled || !range.has_value()) {
        all_slices = false;
        break;
      }
      slices.push_back(k);
      ranges.push_back(*range);
    }
    if (!all_slices) slices.clear();
    if (concat < 0 && slices.empty()) continue;  // Nothing to save.
    Node fused;
    fused.name = shuffle.name;
    fused.op_type = kChannelsLastChannelGatherOp;
    fused.inputs = inputs;
    fused.attributes["groups"] = groups;
    std::vector<int64_t> bounds;
    if (slices.empty()) {
      fused.outputs = {shuffled};
      bounds = {0, channels};
    } else {
      for (size_t j = 0; j < slices.size(); ++j) {
        fused.outputs.push_back(graph->nodes[slices[j]].outputs[0]);
        bounds.push_back(ranges[j].first);
        bounds.push_back(ranges[j].second);
      }
      graph->values.erase(shuffled);
    }
    fused.attributes["ranges"] = std::move(bounds);
    graph->nodes[s] = std::move(fused);
    for (auto it = slices.rbegin(); it != slices.rend(); ++it) {
      graph->nodes.erase(graph->nodes.begin() + *it);
    }
    if (concat >= 0) {
      graph->values.erase(graph->nodes[concat].outputs[0]);
      graph->nodes.erase(graph->nodes.begin() + concat);
      --s;
    }
  }
  return absl::OkStatus();
}

bool IsLayoutReorder(const Node& node) {
  return node.op_type == "Transpose" &&
         (absl::StrContains(node.name, kToNhwcSuffix) ||
          absl::StrContains(node.name, kToNchwSuffix));
}

}  // namespace glint
