#include "onnx/onnx_importer.h"

#include <climits>
#include <cstddef>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/status_macros.h"
#include "onnx/graph_builder.h"
#include "onnx/import_util.h"
#include "onnx/legacy_ops.h"
#include "onnx/newer_opsets.h"
#include "onnx/onnx_inference.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_validate.h"
#include "onnx/shape_folding.h"

namespace glint {
namespace {

using onnx_internal::AssignNodeNames;
using onnx_internal::BindInputs;
using onnx_internal::BuildGraph;
using onnx_internal::CheckModelIsRunnable;
using onnx_internal::CheckNamesAreUtf8;
using onnx_internal::FoldShapeArithmetic;
using onnx_internal::InferTypes;
using onnx_internal::InferTypesElsewhere;
using onnx_internal::NormalizeDefaultDomain;
using onnx_internal::ReadInitializers;
using onnx_internal::SortNodes;
using onnx_internal::UpgradeLegacyNodes;
using onnx_internal::StatusFromException;

absl::StatusOr<onnx::ModelProto> ParseModel(absl::string_view model_bytes) {
  if (model_bytes.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        "model bytes exceed 2 GiB, the protobuf limit; models that large "
        "need external data, which Glint does not support");
  }
  onnx::ModelProto model;
  if (model_bytes.empty() ||
      !model.ParseFromArray(model_bytes.data(),
                            static_cast<int>(model_bytes.size()))) {
    return absl::InvalidArgumentError(
        "model bytes are not a valid ONNX ModelProto");
  }
  if (!model.has_graph()) {
    return absl::InvalidArgumentError("the ONNX model has no graph");
  }
  return model;
}

// The phases of an import, in order; each refuses what it cannot take, so
// a model fails with the first reason in this order (onnx/README.md).
absl::StatusOr<Graph> Import(absl::string_view model_bytes,
                             const ImportOptions& options) {
  // libonnx learns the opsets newer than its own (onnx/newer_opsets.h).
  onnx_internal::RegisterNewerOpsetSchemas();
  // Parse and normalise: the default domain spelled "", unique node names.
  GLINT_ASSIGN_OR_RETURN(onnx::ModelProto model, ParseModel(model_bytes));
  if (options.parsed) options.parsed();
  GLINT_ASSIGN_OR_RETURN(const int64_t opset, NormalizeDefaultDomain(&model));
  onnx::GraphProto* graph = model.mutable_graph();
  GLINT_RETURN_IF_ERROR(CheckNamesAreUtf8(*graph));
  AssignNodeNames(graph);

  // Validate: what Glint cannot run is refused before any inference.
  GLINT_RETURN_IF_ERROR(CheckModelIsRunnable(*graph, opset, options));

  // Bind: constants read, runtime inputs typed and their dims fixed.
  GLINT_ASSIGN_OR_RETURN(auto initializers, ReadInitializers(*graph));
  Graph result;
  result.name = graph->name();
  result.opset_version = opset;
  GLINT_RETURN_IF_ERROR(BindInputs(graph, initializers, options, &result));
  GLINT_RETURN_IF_ERROR(SortNodes(graph));

  // Infer the type of every value, here or in the caller's helper process.
  GLINT_RETURN_IF_ERROR(options.run_inference
                            ? InferTypesElsewhere(&model, options.run_inference)
                            : InferTypes(&model));
  // The shape arithmetic inference folded (in the helper, on its copy)
  // leaves this model too, as Constant nodes (onnx/shape_folding.h).
  GLINT_RETURN_IF_ERROR(FoldShapeArithmetic(graph, opset).status());

  // Old opsets' forms of ops in today's terms (onnx/legacy_ops.h).
  GLINT_RETURN_IF_ERROR(UpgradeLegacyNodes(opset, graph, &initializers));

  // Build the Graph and check it.
  GLINT_RETURN_IF_ERROR(BuildGraph(*graph, std::move(initializers), &result));
  GLINT_RETURN_IF_ERROR(result.Validate());
  return result;
}

}  // namespace

absl::StatusOr<Graph> ImportOnnxModel(absl::string_view model_bytes,
                                      const ImportOptions& options) {
  // ONNX and the is_supported callback may throw; the API promises a
  // status, never an exception.
  try {
    return Import(model_bytes, options);
  } catch (...) {
    absl::Status s = StatusFromException("ONNX import failed");
    return s.code() == absl::StatusCode::kResourceExhausted
               ? s
               : absl::InternalError(s.message());
  }
}

}  // namespace glint
