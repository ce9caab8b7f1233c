#include "devices/cpu/cpu_rewrites.h"

#include <memory>
#include <string>
#include <utility>

#include "core/status_macros.h"

namespace glint::cpu {
namespace {

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

}  // namespace

std::optional<std::vector<Tensor>> EvaluateConstantNode(
    const Graph& graph, const Node& node, const KernelRegistry& kernels) {
  const KernelFactory* factory = kernels.Find(node.op_type);
  if (factory == nullptr) return std::nullopt;
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
  if (!kernel.ok()) return std::nullopt;
  FoldContext ctx(std::move(views), std::move(present), dtypes);
  if (!ComputeNoThrow(**kernel, ctx, node.Describe()).ok()) {
    return std::nullopt;
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] != DType::kUndefined && !ctx.outputs()[i].valid()) {
      return std::nullopt;  // An output the kernel did not produce.
    }
  }
  return std::move(ctx.outputs());
}

RewriteBackend CpuRewriteBackend(const KernelRegistry& kernels) {
  RewriteBackend backend;
  backend.evaluate = [&kernels](const Graph& graph, const Node& node) {
    return EvaluateConstantNode(graph, node, kernels);
  };
  backend.chainable_unary = IsChainableUnaryOp;
  backend.chainable_scalar = IsChainableScalarOp;
  return backend;
}

absl::Status OptimizeGraphForCpu(Graph* graph, const KernelRegistry& kernels) {
  return OptimizeGraph(graph, CpuRewriteBackend(kernels));
}

absl::Status FoldConstants(Graph* graph, const KernelRegistry& kernels) {
  return glint::FoldConstants(graph, CpuRewriteBackend(kernels));
}

absl::Status FuseElementwiseChains(Graph* graph) {
  RewriteBackend backend;
  backend.chainable_unary = IsChainableUnaryOp;
  backend.chainable_scalar = IsChainableScalarOp;
  return glint::FuseElementwiseChains(graph, backend);
}

}  // namespace glint::cpu
