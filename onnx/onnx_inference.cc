#include "onnx/onnx_inference.h"

#include <climits>
#include <cstddef>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "onnx/import_util.h"
#include "onnx/inference_fixes.h"
#include "onnx/newer_opsets.h"
#include "onnx/onnx_validate.h"
#include "onnx/shape_folding.h"

namespace glint {
namespace onnx_internal {
namespace {

// Rounds of folding and inference (InferTypes): a round per level of
// shapes computed from values whose shapes were computed (two a layer in
// an exported transformer). A model needing more keeps the rest unknown
// until run time.
constexpr int kMaxFoldRounds = 128;

// RecoverRanks in `graph` and every subgraph in it.
absl::StatusOr<bool> RecoverRanksEverywhere(onnx::GraphProto* graph) {
  GLINT_ASSIGN_OR_RETURN(bool changed, RecoverRanks(graph));
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.type() != onnx::AttributeProto::GRAPH) continue;
      GLINT_ASSIGN_OR_RETURN(bool sub,
                             RecoverRanksEverywhere(attr.mutable_g()));
      changed = changed || sub;
    }
  }
  return changed;
}

bool HasSubgraphs(const onnx::GraphProto& graph) {
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.type() == onnx::AttributeProto::GRAPH) return true;
    }
  }
  return false;
}

// What inference found for the subgraphs of `graph`'s nodes, moved out of
// it: one node per node of `graph` holding only its graph attributes, each
// with the subgraph's value_info, inputs and outputs (types only) and the
// same for its own nodes.
void MoveSubgraphTypes(onnx::GraphProto* graph, onnx::GraphProto* reply) {
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    onnx::NodeProto* out = reply->add_node();
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      if (attr.type() != onnx::AttributeProto::GRAPH) continue;
      onnx::AttributeProto* a = out->add_attribute();
      a->set_name(attr.name());
      a->set_type(onnx::AttributeProto::GRAPH);
      onnx::GraphProto* g = attr.mutable_g();
      onnx::GraphProto* r = a->mutable_g();
      r->mutable_value_info()->Swap(g->mutable_value_info());
      r->mutable_input()->Swap(g->mutable_input());
      r->mutable_output()->Swap(g->mutable_output());
      MoveSubgraphTypes(g, r);
    }
  }
}

// Puts what MoveSubgraphTypes took out (in another process, from the same
// model) into `graph`. INTERNAL where the reply's structure is not the
// model's: the helper is not trusted to be right.
absl::Status TakeSubgraphTypes(onnx::GraphProto* graph,
                               onnx::GraphProto* reply) {
  const auto malformed = [] {
    return absl::InternalError("the import helper's reply is malformed");
  };
  if (reply->node_size() != graph->node_size()) return malformed();
  for (int i = 0; i < graph->node_size(); ++i) {
    onnx::NodeProto* node = graph->mutable_node(i);
    onnx::NodeProto* got = reply->mutable_node(i);
    int k = 0;
    for (onnx::AttributeProto& attr : *node->mutable_attribute()) {
      if (attr.type() != onnx::AttributeProto::GRAPH) continue;
      if (k >= got->attribute_size()) return malformed();
      onnx::AttributeProto* a = got->mutable_attribute(k++);
      onnx::GraphProto* g = attr.mutable_g();
      onnx::GraphProto* r = a->mutable_g();
      if (a->name() != attr.name() ||
          r->input_size() != g->input_size() ||
          r->output_size() != g->output_size()) {
        return malformed();
      }
      for (int j = 0; j < g->input_size(); ++j) {
        if (r->input(j).name() != g->input(j).name()) return malformed();
      }
      for (int j = 0; j < g->output_size(); ++j) {
        if (r->output(j).name() != g->output(j).name()) return malformed();
      }
      g->mutable_value_info()->Swap(r->mutable_value_info());
      g->mutable_input()->Swap(r->mutable_input());
      g->mutable_output()->Swap(r->mutable_output());
      GLINT_RETURN_IF_ERROR(TakeSubgraphTypes(g, r));
    }
    if (k != got->attribute_size()) return malformed();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status InferTypes(onnx::ModelProto* model) {
  RegisterNewerOpsetSchemas();
  onnx::GraphProto* graph = model->mutable_graph();
  GLINT_RETURN_IF_ERROR(CheckAttributeValues(*graph));
  GLINT_RETURN_IF_ERROR(CheckNodes(*model));
  AxisRewrites layer_norm_axes;
  GLINT_RETURN_IF_ERROR(NormalizeLayerNormAxes(model, &layer_norm_axes));
  GLINT_RETURN_IF_ERROR(CheckConvTransposeRanks(*model));
  // Where ONNX's strict inference fails, Glint's fallback types the model
  // (InferWithFallback); later passes then run ONNX's inference non-strict.
  absl::Status inferred = RunShapeInference(model);
  bool strict = inferred.ok();
  // Old schemas (Concat-1, ...) have no inference function and leave their
  // outputs untyped without failing: Glint types those, and ONNX then
  // infers what follows them.
  for (int round = 0; strict && round < 4 &&
                      FallBackTypes(graph, DefaultOpsetOf(*model));
       ++round) {
    inferred = RunShapeInference(model);
    strict = inferred.ok();
  }
  if (!strict) GLINT_RETURN_IF_ERROR(InferWithFallback(model, inferred));
  // Each round gives a rank to at least one more value, and ranks only flow
  // forward, so a few rounds cover any realistic chain of reshapes.
  for (int round = 0; round < 4; ++round) {
    GLINT_ASSIGN_OR_RETURN(bool changed, RecoverRanksEverywhere(graph));
    if (!changed) break;
    GLINT_RETURN_IF_ERROR(RunShapeInference(model, strict));
  }
  // Glint's own step (shape_folding.h): shape arithmetic ONNX could not
  // follow becomes Constant nodes, and ONNX types what they feed. Each
  // round resolves at least one more level of shapes computed from shapes.
  const int64_t opset = DefaultOpsetOf(*model);
  for (int round = 0; round < kMaxFoldRounds; ++round) {
    GLINT_ASSIGN_OR_RETURN(const int folded,
                           FoldShapeArithmetic(graph, opset));
    if (folded == 0) break;
    ForgetUnsizableDimNames(graph);
    GLINT_RETURN_IF_ERROR(RunShapeInference(model, strict));
    GLINT_RETURN_IF_ERROR(RecoverRanksEverywhere(graph).status());
  }
  RestoreLayerNormAxes(layer_norm_axes, graph);
  return absl::OkStatus();
}

absl::Status InferTypesElsewhere(onnx::ModelProto* model,
                                 const InferenceRunner& run) {
  // The importer has taken the large initializers out already
  // (TakeInitializers): the helper gets their types, not their bytes.
  onnx::GraphProto* graph = model->mutable_graph();
  GLINT_ASSIGN_OR_RETURN(std::string reply, run(model->SerializeAsString()));
  onnx::GraphProto inferred;
  if (!inferred.ParseFromString(reply) ||
      inferred.output_size() != graph->output_size()) {
    return absl::InternalError("the import helper's reply is malformed");
  }
  for (int i = 0; i < graph->output_size(); ++i) {
    if (inferred.output(i).name() != graph->output(i).name()) {
      return absl::InternalError("the import helper's reply is malformed");
    }
  }
  // A model without subgraphs gets a reply without nodes: the form the plan
  // cache kept before subgraphs were imported, which it may replay.
  if (HasSubgraphs(*graph)) {
    GLINT_RETURN_IF_ERROR(TakeSubgraphTypes(graph, &inferred));
  } else if (inferred.node_size() != 0) {
    return absl::InternalError("the import helper's reply is malformed");
  }
  graph->mutable_value_info()->Swap(inferred.mutable_value_info());
  graph->mutable_output()->Swap(inferred.mutable_output());
  return absl::OkStatus();
}

}  // namespace onnx_internal

absl::StatusOr<std::string> RunOnnxInference(absl::string_view request) {
  try {
    onnx::ModelProto model;
    if (request.size() > static_cast<size_t>(INT_MAX) ||
        !model.ParseFromArray(request.data(),
                              static_cast<int>(request.size())) ||
        !model.has_graph()) {
      return absl::InvalidArgumentError(
          "the inference request is not a prepared ONNX model");
    }
    GLINT_RETURN_IF_ERROR(onnx_internal::InferTypes(&model));
    onnx::GraphProto inferred;
    inferred.mutable_value_info()->Swap(
        model.mutable_graph()->mutable_value_info());
    inferred.mutable_output()->Swap(model.mutable_graph()->mutable_output());
    if (onnx_internal::HasSubgraphs(model.graph())) {
      onnx_internal::MoveSubgraphTypes(model.mutable_graph(), &inferred);
    }
    return inferred.SerializeAsString();
  } catch (...) {
    return onnx_internal::StatusFromException("ONNX shape inference failed");
  }
}

}  // namespace glint
