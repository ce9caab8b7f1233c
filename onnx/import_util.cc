#include "onnx/import_util.h"

#include <exception>
#include <new>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"
#include "onnx/shape_inference/implementation.h"

namespace glint::onnx_internal {

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

std::string DescribeNode(const onnx::NodeProto& node) {
  return absl::StrCat("node '", node.name(), "' (", node.op_type(), ")");
}

absl::Status StatusFromException(absl::string_view stage) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(stage, ": out of memory"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(stage, ": ", e.what()));
  } catch (...) {
    return absl::InvalidArgumentError(
        absl::StrCat(stage, ": unknown exception"));
  }
}

TypeIndex IndexTypes(const onnx::GraphProto& graph) {
  TypeIndex types;
  for (const auto& vi : graph.value_info()) types[vi.name()] = &vi.type();
  for (const auto& vi : graph.output()) types[vi.name()] = &vi.type();
  for (const auto& vi : graph.input()) types[vi.name()] = &vi.type();
  return types;
}

onnx::TypeProto* FindMutableType(onnx::GraphProto* graph,
                                 const std::string& name) {
  for (auto& vi : *graph->mutable_value_info()) {
    if (vi.name() == name) return vi.mutable_type();
  }
  for (auto& vi : *graph->mutable_output()) {
    if (vi.name() == name) return vi.mutable_type();
  }
  return nullptr;
}

absl::Status RunShapeInference(onnx::ModelProto* model, bool strict) {
  // check_type and error_mode 1: a model whose declared types contradict
  // what its ops compute is malformed, and must fail here rather than at
  // run time. Data propagation resolves shapes computed by Shape/Gather/
  // Concat chains, common in exported models.
  onnx::ShapeInferenceOptions options(/*check_type_val=*/strict,
                                      /*strict_mode_val=*/strict ? 1 : 0,
                                      /*data_prop_val=*/true);
  std::unordered_map<std::string, onnx::TensorShapeProto> generated;
  try {
    onnx::shape_inference::InferShapes(
        *model, onnx::OpSchemaRegistry::Instance(), options, &generated);
  } catch (...) {
    return StatusFromException("ONNX shape inference failed");
  }
  return absl::OkStatus();
}

}  // namespace glint::onnx_internal
