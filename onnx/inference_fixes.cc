#include "onnx/inference_fixes.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor.h"
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

// The rank of the output of a Reshape or ConstantOfShape that inference
// left rankless, from the static length of its 1-D shape operand; nullopt
// where the node is of another kind or either is unknown.
absl::StatusOr<std::optional<RankPatch>> RecoverableRank(
    const onnx::NodeProto& node, const TypeIndex& types) {
  int shape_input;
  if (node.op_type() == "Reshape") {
    shape_input = 1;
  } else if (node.op_type() == "ConstantOfShape") {
    shape_input = 0;
  } else {
    return std::nullopt;
  }
  if (node.input_size() <= shape_input || node.output_size() < 1 ||
      DeclaredRank(types, node.output(0)) >= 0) {
    return std::nullopt;
  }
  auto in = types.find(node.input(shape_input));
  if (in == types.end() || !in->second->has_tensor_type()) return std::nullopt;
  const onnx::TypeProto_Tensor& t = in->second->tensor_type();
  if (!t.has_shape() || t.shape().dim_size() != 1 ||
      !t.shape().dim(0).has_dim_value()) {
    return std::nullopt;
  }
  const int64_t rank = t.shape().dim(0).dim_value();
  if (rank > kMaxTensorRank) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeNode(node), ": its shape operand has ", rank,
                     " elements, over Glint's rank limit of ", kMaxTensorRank));
  }
  return RankPatch{node.output(0), rank};
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
      GLINT_ASSIGN_OR_RETURN(std::optional<RankPatch> patch,
                             RecoverableRank(node, types));
      if (patch.has_value()) patches.push_back(*std::move(patch));
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

}  // namespace glint::onnx_internal
