#include "devices/cpu/compile_steps.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace glint::cpu {

absl::StatusOr<std::vector<CompiledStep>> CompileSteps(
    const Graph& graph, const absl::flat_hash_map<std::string, int>& slot_of,
    absl::FunctionRef<const ValueInfo&(int slot)> info_of,
    const KernelRegistry& registry, Precision precision,
    const std::function<void(CompiledStep&)>& built) {
  std::vector<CompiledStep> steps;
  steps.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) {
    if (!node.domain.empty() && node.domain != "ai.onnx") {
      return absl::UnimplementedError(
          absl::StrCat("op '", node.op_type, "' of domain '", node.domain,
                       "' (", node.Describe(), ") is not supported"));
    }
    const KernelFactory* factory = registry.Find(node.op_type);
    if (factory == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("op '", node.op_type, "' (node '", node.name,
                       "') has no CPU kernel"));
    }
    KernelSpec spec;
    spec.node = &node;
    spec.opset_version = graph.opset_version;
    spec.precision = precision;
    CompiledStep step;
    step.node = &node;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        spec.inputs.push_back(ValueInfo{});
        spec.constant_inputs.push_back(nullptr);
        step.inputs.push_back(-1);
        continue;
      }
      const int id = slot_of.at(in);
      spec.inputs.push_back(info_of(id));
      spec.constant_inputs.push_back(graph.FindInitializer(in));
      step.inputs.push_back(id);
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) {
        spec.outputs.push_back(ValueInfo{});
        step.outputs.push_back(-1);
        continue;
      }
      const int id = slot_of.at(out);
      spec.outputs.push_back(info_of(id));
      step.outputs.push_back(id);
    }
    GLINT_ASSIGN_OR_RETURN(step.kernel, BuildNoThrow(*factory, spec));
    if (built) built(step);
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace glint::cpu
