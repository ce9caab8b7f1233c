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
#include "onnx/onnx_validate.h"

namespace glint {
namespace onnx_internal {
namespace {

// Initializers up to this size travel to the inference helper with their
// data (shape-like values that inference reads); larger ones go as typed
// inputs, so a 100 MB model is not copied to the helper.
constexpr size_t kInlineInitializerBytes = 1 << 20;

// Replaces the initializers of `graph` over kInlineInitializerBytes by
// graph inputs of their type, for a request to the inference helper.
void TypeBigInitializersAsInputs(onnx::GraphProto* graph) {
  absl::flat_hash_set<std::string> inputs;
  for (const auto& in : graph->input()) inputs.insert(in.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (onnx::TensorProto& init : *graph->mutable_initializer()) {
    if (init.ByteSizeLong() <= kInlineInitializerBytes) {
      *kept.Add() = std::move(init);
      continue;
    }
    if (inputs.contains(init.name())) continue;  // Typed by the importer.
    onnx::ValueInfoProto* in = graph->add_input();
    in->set_name(init.name());
    onnx::TypeProto_Tensor* type = in->mutable_type()->mutable_tensor_type();
    type->set_elem_type(init.data_type());
    for (int64_t d : init.dims()) {
      type->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  graph->mutable_initializer()->Swap(&kept);
}

}  // namespace

absl::Status InferTypes(onnx::ModelProto* model) {
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
    GLINT_ASSIGN_OR_RETURN(bool changed, RecoverRanks(graph));
    if (!changed) break;
    GLINT_RETURN_IF_ERROR(RunShapeInference(model, strict));
  }
  RestoreLayerNormAxes(layer_norm_axes, graph);
  return absl::OkStatus();
}

absl::Status InferTypesElsewhere(onnx::ModelProto* model,
                                 const InferenceRunner& run) {
  onnx::GraphProto* graph = model->mutable_graph();
  TypeBigInitializersAsInputs(graph);
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
    return inferred.SerializeAsString();
  } catch (...) {
    return onnx_internal::StatusFromException("ONNX shape inference failed");
  }
}

}  // namespace glint
