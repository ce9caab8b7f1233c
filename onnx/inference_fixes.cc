#include "onnx/inference_fixes.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "onnx/defs/data_type_utils.h"
#include "onnx/defs/schema.h"
#include "onnx/import_util.h"

namespace glint::onnx_internal {
namespace {

// A copy of `model` in which every ConvTranspose is an Identity of its X,
// with the declared shapes of outputs and values dropped so that the
// stand-in contradicts nothing: inferring it finds every rank without
// running ConvTranspose's inference.
onnx::ModelProto ConvTransposeProbe(const onnx::ModelProto& model) {
  onnx::ModelProto probe = model;
  onnx::GraphProto* graph = probe.mutable_graph();
  graph->clear_value_info();
  for (auto& out : *graph->mutable_output()) {
    out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    if (node.op_type() != "ConvTranspose" || node.input_size() < 1) continue;
    node.set_op_type("Identity");
    node.clear_attribute();
    const std::string x = node.input(0);
    node.clear_input();
    node.add_input(x);
    while (node.output_size() > 1) node.mutable_output()->RemoveLast();
  }
  return probe;
}

// The rank `types` gives a value with a tensor type and a shape; -1 where
// it gives none.
int DeclaredRank(const TypeIndex& types, const std::string& value) {
  auto t = types.find(value);
  if (t == types.end() || !t->second->has_tensor_type() ||
      !t->second->tensor_type().has_shape()) {
    return -1;
  }
  return t->second->tensor_type().shape().dim_size();
}

// The `axis` attribute of `node`, added (an INT) where the node has none.
onnx::AttributeProto* MutableAxis(onnx::NodeProto* node) {
  onnx::AttributeProto* attr = nullptr;
  for (onnx::AttributeProto& a : *node->mutable_attribute()) {
    if (a.name() == "axis") attr = &a;
  }
  if (attr == nullptr) {
    attr = node->add_attribute();
    attr->set_name("axis");
    attr->set_type(onnx::AttributeProto::INT);
  }
  return attr;
}

// The LayerNormalization nodes of `model` that have a Mean output and a
// negative axis. INVALID_ARGUMENT for an axis outside int's range, which no
// rank makes valid.
absl::StatusOr<AxisRewrites> NegativeLayerNormAxes(
    const onnx::ModelProto& model) {
  AxisRewrites negative;
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const onnx::NodeProto& node = model.graph().node(i);
    if (node.op_type() != "LayerNormalization") continue;
    int64_t axis = -1;
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "axis") axis = attr.i();
    }
    if (axis > INT_MAX || axis < INT_MIN) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(node), ": axis ", axis, " is out of range"));
    }
    if (axis < 0 && node.output_size() >= 2) negative.emplace_back(i, axis);
  }
  return negative;
}

// The rank of the input of each node in `negative` (-1 where unknown),
// found by inferring a copy of `model` whose such axes are 0, which is
// valid at any rank. Axis 0 changes the statistics' shapes, so the copy
// drops what the model declares for them.
absl::StatusOr<std::vector<int>> LayerNormInputRanks(
    const onnx::ModelProto& model, const AxisRewrites& negative) {
  onnx::ModelProto probe = model;
  for (const auto& [i, axis] : negative) {
    onnx::NodeProto* node = probe.mutable_graph()->mutable_node(i);
    MutableAxis(node)->set_i(0);
    for (int o = 1; o < node->output_size(); ++o) {
      if (onnx::TypeProto* t =
              FindMutableType(probe.mutable_graph(), node->output(o))) {
        t->mutable_tensor_type()->clear_shape();
      }
    }
  }
  GLINT_RETURN_IF_ERROR(RunShapeInference(&probe));
  const TypeIndex types = IndexTypes(probe.graph());
  std::vector<int> ranks;
  for (const auto& [i, axis] : negative) {
    const onnx::NodeProto& node = model.graph().node(i);
    ranks.push_back(node.input_size() < 1 ? -1
                                          : DeclaredRank(types, node.input(0)));
  }
  return ranks;
}

// An output whose rank RecoverRanks found.
struct RankPatch {
  std::string value;
  int64_t rank;
};

// Ops whose outputs have their first input's rank whatever their other
// operands hold: ONNX 1.12 leaves their outputs rankless when those
// operands are computed at run time (a Slice by a count of detections).
bool KeepsRank(const std::string& op) {
  static const absl::flat_hash_set<std::string>* const kOps =
      new absl::flat_hash_set<std::string>{
          "Slice",       "Tile",          "Pad",      "Resize",
          "Upsample",    "TopK",          "Split",    "CenterCropPad",
          "ScatterElements", "ScatterND", "Scatter",  "Trilu",
          "CumSum",      "ReverseSequence"};
  return kOps->contains(op);
}

// The ranks of the outputs of `node` that inference left rankless, where
// the node's op fixes them: a Reshape's or ConstantOfShape's is the static
// length of its 1-D shape operand, a rank-keeping op's (KeepsRank) its
// first input's, a Compress's its input's along an axis and 1 without;
// none where the node is of another kind or the operand's
// rank is unknown too.
absl::StatusOr<std::vector<RankPatch>> RecoverableRanks(
    const onnx::NodeProto& node, const TypeIndex& types) {
  std::vector<RankPatch> patches;
  if (KeepsRank(node.op_type())) {
    const int rank =
        node.input_size() < 1 ? -1 : DeclaredRank(types, node.input(0));
    if (rank < 0) return patches;
    for (const std::string& out : node.output()) {
      if (!out.empty() && DeclaredRank(types, out) < 0) {
        patches.push_back(RankPatch{out, rank});
      }
    }
    return patches;
  }
  // Compress: its input's rank along an axis, else 1 (it flattens). ONNX
  // 1.12 has no inference for it.
  if (node.op_type() == "Compress" && node.output_size() == 1 &&
      !node.output(0).empty() && DeclaredRank(types, node.output(0)) < 0) {
    bool has_axis = false;
    for (const onnx::AttributeProto& a : node.attribute()) {
      has_axis = has_axis || a.name() == "axis";
    }
    const int rank = !has_axis ? 1
                     : node.input_size() < 1
                         ? -1
                         : DeclaredRank(types, node.input(0));
    if (rank >= 0) patches.push_back(RankPatch{node.output(0), rank});
    return patches;
  }
  int shape_input;
  if (node.op_type() == "Reshape") {
    shape_input = 1;
  } else if (node.op_type() == "ConstantOfShape") {
    shape_input = 0;
  } else {
    return patches;
  }
  if (node.input_size() <= shape_input || node.output_size() < 1 ||
      DeclaredRank(types, node.output(0)) >= 0) {
    return patches;
  }
  auto in = types.find(node.input(shape_input));
  if (in == types.end() || !in->second->has_tensor_type()) return patches;
  const onnx::TypeProto_Tensor& t = in->second->tensor_type();
  if (!t.has_shape() || t.shape().dim_size() != 1 ||
      !t.shape().dim(0).has_dim_value()) {
    return patches;
  }
  const int64_t rank = t.shape().dim(0).dim_value();
  if (rank > kMaxTensorRank) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeNode(node), ": its shape operand has ", rank,
                     " elements, over Glint's rank limit of ", kMaxTensorRank));
  }
  patches.push_back(RankPatch{node.output(0), rank});
  return patches;
}

// The element type `graph` gives `value` (declared or inferred, or an
// initializer's); UNDEFINED (0) where it gives none.
int32_t ElemTypeOf(const TypeIndex& types,
                   const absl::flat_hash_map<std::string, int32_t>& inits,
                   const std::string& value) {
  auto t = types.find(value);
  if (t != types.end() && t->second->has_tensor_type() &&
      t->second->tensor_type().elem_type() != 0) {
    return t->second->tensor_type().elem_type();
  }
  auto i = inits.find(value);
  return i == inits.end() ? 0 : i->second;
}

const onnx::AttributeProto* FindAttribute(const onnx::NodeProto& node,
                                          absl::string_view name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

const absl::flat_hash_set<std::string>& ShapePreservingOps() {
  static const auto* const kOps = new absl::flat_hash_set<std::string>{
      "Abs", "BatchNormalization", "Cast", "Ceil", "Clip", "Dropout", "Elu", "Exp",
      "Floor", "HardSigmoid", "Identity", "InstanceNormalization",
      "LeakyRelu", "Log", "LogSoftmax", "LRN", "Neg", "Reciprocal", "Relu",
      "Selu", "Sigmoid", "Softmax", "Softplus", "Softsign", "Sqrt", "Tanh"};
  return *kOps;
}

const absl::flat_hash_set<std::string>& LegacyBroadcastOpsForTyping() {
  static const auto* const kOps = new absl::flat_hash_set<std::string>{
      "Add", "Sub", "Mul", "Div", "Pow", "PRelu"};
  return *kOps;
}

// The formal parameter `i` of `params` (the last one when it is variadic
// and i is past it); null when there is none.
const onnx::OpSchema::FormalParameter* Formal(
    const std::vector<onnx::OpSchema::FormalParameter>& params, int i) {
  if (params.empty()) return nullptr;
  if (i < static_cast<int>(params.size())) return &params[i];
  const auto& last = params.back();
  return last.GetOption() == onnx::OpSchema::Variadic ? &last : nullptr;
}

// The values of the int64 initializer `name` (empty if there is none).
std::vector<int64_t> ConstantInt64s(const onnx::GraphProto& graph,
                                    const std::string& name) {
  for (const onnx::TensorProto& t : graph.initializer()) {
    if (t.name() != name || t.data_type() != onnx::TensorProto::INT64) {
      continue;
    }
    if (t.int64_data_size() > 0) {
      return std::vector<int64_t>(t.int64_data().begin(), t.int64_data().end());
    }
    std::vector<int64_t> v(t.raw_data().size() / sizeof(int64_t));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(int64_t));
    return v;
  }
  return {};
}

// The element type, and for a Constant the dims, that output `out` of
// `node` has by its op's definition; type 0 where that needs what is
// unknown.
struct FallbackType {
  int32_t elem_type = 0;
  bool has_dims = false;
  std::vector<int64_t> dims;
};

FallbackType TypeByDefinition(
    const onnx::GraphProto& graph, const onnx::NodeProto& node, int out,
    int64_t opset, const TypeIndex& types,
    const absl::flat_hash_map<std::string, int32_t>& inits) {
  FallbackType r;
  const std::string& op = node.op_type();
  // Output 0 of these has input 0's shape (and, unless typed above, its
  // type): the unary ops and, before opset 7, the binary ones whose B
  // broadcasts to A. Old schemas of them have no inference function.
  if (out == 0 && node.input_size() > 0 && IsDefaultDomain(node.domain()) &&
      (ShapePreservingOps().contains(op) ||
       (opset < 7 && LegacyBroadcastOpsForTyping().contains(op)))) {
    auto in = types.find(node.input(0));
    if (in != types.end() && in->second->has_tensor_type() &&
        in->second->tensor_type().has_shape()) {
      r.has_dims = true;
      for (const auto& d : in->second->tensor_type().shape().dim()) {
        r.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      }
    }
  }
  if (IsDefaultDomain(node.domain())) {
    if (op == "Cast") {
      if (const auto* to = FindAttribute(node, "to")) {
        onnx::TensorProto::DataType named;
        if (to->type() != onnx::AttributeProto::STRING) {
          r.elem_type = static_cast<int32_t>(to->i());
        } else if (onnx::TensorProto::DataType_Parse(to->s(), &named)) {
          r.elem_type = named;  // Cast-1 names its type.
        }
      }
      return r;
    }
    if (op == "Constant" || op == "ConstantOfShape") {
      if (const auto* v = FindAttribute(node, "value"); v && v->has_t()) {
        r.elem_type = v->t().data_type();
        if (op == "Constant") {
          r.has_dims = true;
          r.dims.assign(v->t().dims().begin(), v->t().dims().end());
        }
      } else if (op == "ConstantOfShape") {
        r.elem_type = onnx::TensorProto::FLOAT;
      } else if (FindAttribute(node, "value_float") != nullptr) {
        r.elem_type = onnx::TensorProto::FLOAT;
        r.has_dims = true;
      } else if (FindAttribute(node, "value_int") != nullptr) {
        r.elem_type = onnx::TensorProto::INT64;
        r.has_dims = true;
      } else if (const auto* f = FindAttribute(node, "value_floats")) {
        r.elem_type = onnx::TensorProto::FLOAT;
        r.has_dims = true;
        r.dims = {f->floats_size()};
      } else if (const auto* n = FindAttribute(node, "value_ints")) {
        r.elem_type = onnx::TensorProto::INT64;
        r.has_dims = true;
        r.dims = {n->ints_size()};
      }
      return r;
    }
  }
  // Reshape-1..4: the `shape` attribute, 0 copying the input's dim and
  // -1 what the rest leaves (Reshape-1 infers nothing).
  if (op == "Reshape" && out == 0 && IsDefaultDomain(node.domain()) &&
      node.input_size() == 1) {
    const onnx::AttributeProto* shape_attr = FindAttribute(node, "shape");
    auto in = types.find(node.input(0));
    if (shape_attr != nullptr && in != types.end() &&
        in->second->has_tensor_type() &&
        in->second->tensor_type().has_shape()) {
      const auto& in_shape = in->second->tensor_type().shape();
      int64_t total = 1;
      for (const auto& d : in_shape.dim()) {
        total = d.has_dim_value() && total >= 0 ? total * d.dim_value() : -1;
      }
      int64_t known = 1;
      int unknown = -1;
      r.dims.clear();
      for (int i = 0; i < shape_attr->ints_size(); ++i) {
        int64_t d = shape_attr->ints(i);
        if (d == 0 && i < in_shape.dim_size()) {
          d = in_shape.dim(i).has_dim_value() ? in_shape.dim(i).dim_value()
                                              : -1;
          if (d < 0) total = -1;
        } else if (d == -1) {
          unknown = i;
        }
        if (d >= 0) known *= d;
        r.dims.push_back(d);
      }
      if (unknown >= 0) {
        r.dims[unknown] = total >= 0 && known > 0 ? total / known : -1;
      }
      r.has_dims = true;
    }
  }
  // Split-1: the split (attribute, or the constant second input), else
  // equal parts along `axis` (Split-1 infers nothing).
  if (op == "Split" && IsDefaultDomain(node.domain()) && opset < 2 &&
      node.input_size() >= 1) {
    auto in = types.find(node.input(0));
    if (in != types.end() && in->second->has_tensor_type() &&
        in->second->tensor_type().has_shape()) {
      const auto& shape = in->second->tensor_type().shape();
      const onnx::AttributeProto* axis_attr = FindAttribute(node, "axis");
      int64_t axis = axis_attr != nullptr ? axis_attr->i() : 0;
      if (axis < 0) axis += shape.dim_size();
      std::vector<int64_t> split;
      if (const auto* a = FindAttribute(node, "split")) {
        split.assign(a->ints().begin(), a->ints().end());
      } else if (node.input_size() > 1) {
        split = ConstantInt64s(graph, node.input(1));
      }
      if (axis >= 0 && axis < shape.dim_size()) {
        const auto& d = shape.dim(static_cast<int>(axis));
        int64_t part = -1;
        if (out < static_cast<int>(split.size())) {
          part = split[out];
        } else if (split.empty() && d.has_dim_value() &&
                   node.output_size() > 0 &&
                   d.dim_value() % node.output_size() == 0) {
          part = d.dim_value() / node.output_size();
        }
        r.has_dims = true;
        r.dims.clear();
        for (const auto& dim : shape.dim()) {
          r.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
        }
        r.dims[axis] = part;
      }
    }
  }
  // Tile-1..5: (input, tiles, axis), constant scalars (Tile-1 infers
  // nothing).
  if (op == "Tile" && IsDefaultDomain(node.domain()) && opset < 6 &&
      node.input_size() == 3 && out == 0) {
    auto in = types.find(node.input(0));
    const std::vector<int64_t> tiles = ConstantInt64s(graph, node.input(1));
    const std::vector<int64_t> axis = ConstantInt64s(graph, node.input(2));
    if (in != types.end() && in->second->has_tensor_type() &&
        in->second->tensor_type().has_shape() && tiles.size() == 1 &&
        axis.size() == 1) {
      const auto& shape = in->second->tensor_type().shape();
      const int64_t a = axis[0] < 0 ? axis[0] + shape.dim_size() : axis[0];
      if (a >= 0 && a < shape.dim_size() && tiles[0] >= 0) {
        r.has_dims = true;
        for (const auto& d : shape.dim()) {
          r.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        }
        if (r.dims[a] >= 0) r.dims[a] *= tiles[0];
      }
    }
  }
  // Concat: input 0's dims, the axis summed (Concat-1 infers nothing).
  if (op == "Concat" && out == 0 && IsDefaultDomain(node.domain())) {
    const onnx::AttributeProto* axis_attr = FindAttribute(node, "axis");
    int64_t axis = axis_attr != nullptr ? axis_attr->i() : 1;
    std::vector<int64_t> dims;
    bool known = node.input_size() > 0;
    for (int i = 0; known && i < node.input_size(); ++i) {
      auto in = types.find(node.input(i));
      known = in != types.end() && in->second->has_tensor_type() &&
              in->second->tensor_type().has_shape();
      if (!known) break;
      const auto& shape = in->second->tensor_type().shape();
      if (i == 0) {
        if (axis < 0) axis += shape.dim_size();
        known = axis >= 0 && axis < shape.dim_size();
        for (const auto& d : shape.dim()) {
          dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
        }
        if (known) dims[axis] = 0;
      }
      known = known && shape.dim_size() == static_cast<int>(dims.size());
      if (!known) break;
      const auto& d = shape.dim(static_cast<int>(axis));
      dims[axis] = dims[axis] < 0 || !d.has_dim_value()
                       ? -1
                       : dims[axis] + d.dim_value();
    }
    if (known) {
      r.has_dims = true;
      r.dims = std::move(dims);
    }
  }
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(
      op, static_cast<int>(opset),
      IsDefaultDomain(node.domain()) ? std::string() : node.domain());
  if (schema == nullptr) return r;
  const auto* formal = Formal(schema->outputs(), out);
  if (formal == nullptr) return r;
  const std::string& type_str = formal->GetTypeStr();
  for (int i = 0; i < node.input_size(); ++i) {
    const auto* in = Formal(schema->inputs(), i);
    if (in == nullptr || in->GetTypeStr() != type_str || node.input(i).empty()) {
      continue;
    }
    r.elem_type = ElemTypeOf(types, inits, node.input(i));
    if (r.elem_type != 0) return r;
  }
  const onnx::DataTypeSet& allowed = formal->GetTypes();
  if (allowed.size() == 1) {
    const onnx::TypeProto t =
        onnx::Utils::DataTypeUtils::ToTypeProto(*allowed.begin());
    if (t.has_tensor_type()) r.elem_type = t.tensor_type().elem_type();
  }
  return r;
}

}  // namespace

absl::Status CheckConvTransposeRanks(const onnx::ModelProto& model) {
  bool any = false;
  for (const onnx::NodeProto& node : model.graph().node()) {
    any = any || node.op_type() == "ConvTranspose";
  }
  if (!any) return absl::OkStatus();
  onnx::ModelProto probe = ConvTransposeProbe(model);
  // A probe that fails tells nothing; the real inference reports the error.
  if (!RunShapeInference(&probe).ok()) return absl::OkStatus();
  const TypeIndex types = IndexTypes(probe.graph());
  absl::flat_hash_map<std::string, int> init_rank;
  for (const auto& init : model.graph().initializer()) {
    init_rank[init.name()] = init.dims_size();
  }
  auto rank_of = [&](const std::string& value) -> int {
    auto it = init_rank.find(value);
    return it != init_rank.end() ? it->second : DeclaredRank(types, value);
  };
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.op_type() != "ConvTranspose" || node.input_size() < 2) continue;
    const int x = rank_of(node.input(0));
    const int w = rank_of(node.input(1));
    if ((x >= 0 && x < 3) || (x >= 0 && w >= 0 && w < x)) {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeNode(node), ": X has rank ", x, " and W rank ",
                       w, "; ConvTranspose needs rank >= 3 and W of X's rank"));
    }
  }
  return absl::OkStatus();
}

absl::Status NormalizeLayerNormAxes(onnx::ModelProto* model,
                                    AxisRewrites* rewritten) {
  // A negative axis depends on the rank, known only after inference; only
  // nodes with a Mean output need it, which are rare outside training
  // graphs, so the probe is rarely paid for.
  GLINT_ASSIGN_OR_RETURN(const AxisRewrites negative,
                         NegativeLayerNormAxes(*model));
  if (negative.empty()) return absl::OkStatus();
  GLINT_ASSIGN_OR_RETURN(const std::vector<int> ranks,
                         LayerNormInputRanks(*model, negative));
  for (size_t k = 0; k < negative.size(); ++k) {
    const auto [i, axis] = negative[k];
    const int64_t rank = ranks[k];
    if (rank < 0) continue;  // Rank unknown: inference does not index it.
    if (axis < -rank) {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeNode(model->graph().node(i)), ": axis ", axis,
                       " is out of range for an input of rank ", rank));
    }
    MutableAxis(model->mutable_graph()->mutable_node(i))->set_i(axis + rank);
    rewritten->emplace_back(i, axis);
  }
  return absl::OkStatus();
}

void RestoreLayerNormAxes(const AxisRewrites& rewritten,
                          onnx::GraphProto* graph) {
  for (const auto& [i, axis] : rewritten) {
    for (onnx::AttributeProto& a :
         *graph->mutable_node(i)->mutable_attribute()) {
      if (a.name() == "axis") a.set_i(axis);
    }
  }
}

absl::StatusOr<bool> RecoverRanks(onnx::GraphProto* graph) {
  std::vector<RankPatch> patches;
  {
    const TypeIndex types = IndexTypes(*graph);
    for (const onnx::NodeProto& node : graph->node()) {
      GLINT_ASSIGN_OR_RETURN(std::vector<RankPatch> found,
                             RecoverableRanks(node, types));
      for (RankPatch& p : found) patches.push_back(std::move(p));
    }
  }
  for (const RankPatch& p : patches) {
    onnx::TypeProto* type = FindMutableType(graph, p.value);
    if (type == nullptr) {
      onnx::ValueInfoProto* vi = graph->add_value_info();
      vi->set_name(p.value);
      type = vi->mutable_type();
    }
    onnx::TensorShapeProto* shape =
        type->mutable_tensor_type()->mutable_shape();
    for (int64_t i = 0; i < p.rank; ++i) shape->add_dim();
  }
  return !patches.empty();
}

int64_t DefaultOpsetOf(const onnx::ModelProto& model) {
  int64_t opset = 0;
  for (const auto& o : model.opset_import()) {
    if (IsDefaultDomain(o.domain())) opset = o.version();
  }
  return opset;
}

bool IsDeclarationContradiction(const absl::Status& failure) {
  // ONNX 1.12 words every such conflict against the "existing" type:
  // "Inferred elem type differs from existing elem type", "... existing
  // shape differ in rank/dimension", "is not equal to the existing dim
  // value", "does not match existing output type".
  return absl::StrContains(failure.message(), "existing");
}

bool FallBackTypes(onnx::GraphProto* graph, int64_t opset) {
  absl::flat_hash_map<std::string, int32_t> inits;
  for (const auto& init : graph->initializer()) {
    inits[init.name()] = init.data_type();
  }
  bool changed = false;
  // Kept up to date as types are added (value_info elements never move:
  // a RepeatedPtrField holds them by pointer), so one pass is linear.
  TypeIndex types = IndexTypes(*graph);
  for (int n = 0; n < graph->node_size(); ++n) {
    const onnx::NodeProto& node = graph->node(n);
    for (int o = 0; o < node.output_size(); ++o) {
      const std::string& value = node.output(o);
      if (value.empty()) continue;
      // Typed values keep their type; a rankless one may still get its
      // shape here (old schemas that propagate only the element type).
      const int32_t known = ElemTypeOf(types, inits, value);
      auto have = types.find(value);
      const bool has_shape = have != types.end() &&
                             have->second->has_tensor_type() &&
                             have->second->tensor_type().has_shape();
      if (known != 0 && (has_shape || inits.contains(value))) continue;
      const FallbackType t =
          TypeByDefinition(*graph, node, o, opset, types, inits);
      if (known != 0 && !t.has_dims) continue;
      if (known == 0 && t.elem_type == 0) continue;
      onnx::TypeProto* type = FindMutableType(graph, value);
      if (type == nullptr) {
        onnx::ValueInfoProto* vi = graph->add_value_info();
        vi->set_name(value);
        type = vi->mutable_type();
      }
      onnx::TypeProto_Tensor* tensor = type->mutable_tensor_type();
      tensor->set_elem_type(known != 0 ? known : t.elem_type);
      if (t.has_dims && !tensor->has_shape()) {
        onnx::TensorShapeProto* shape = tensor->mutable_shape();
        for (int64_t d : t.dims) {
          onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
          if (d >= 0) dim->set_dim_value(d);
        }
      }
      types[value] = type;
      changed = true;
    }
  }
  return changed;
}

absl::Status InferWithFallback(onnx::ModelProto* model,
                               const absl::Status& failure) {
  if (failure.code() != absl::StatusCode::kInvalidArgument ||
      IsDeclarationContradiction(failure)) {
    return failure;
  }
  const int64_t opset = DefaultOpsetOf(*model);
  onnx::GraphProto* graph = model->mutable_graph();
  // FallBackTypes carries types forward itself in one pass; further rounds
  // only pick up shapes ONNX infers from them, so a few are enough (and
  // a huge model does not pay one inference per node).
  for (int round = 0; round < 4; ++round) {
    GLINT_RETURN_IF_ERROR(RunShapeInference(model, /*strict=*/false));
    if (!FallBackTypes(graph, opset)) break;
  }
  const TypeIndex types = IndexTypes(*graph);
  absl::flat_hash_map<std::string, int32_t> inits;
  for (const auto& init : graph->initializer()) {
    inits[init.name()] = init.data_type();
  }
  for (const onnx::NodeProto& node : graph->node()) {
    for (const std::string& value : node.output()) {
      if (value.empty() || ElemTypeOf(types, inits, value) != 0) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          failure.message(), "; without ONNX's inference, value '", value,
          "' produced by ", DescribeNode(node), " has no type"));
    }
  }
  return absl::OkStatus();
}

}  // namespace glint::onnx_internal
