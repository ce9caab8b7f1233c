#include "core/op_cost.h"

#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace glint {

uint64_t ValueBytes(const ValueInfo& value) {
  const int64_t n = value.shape.NumElements();
  return n < 0 ? 0 : static_cast<uint64_t>(n) * DTypeSize(value.dtype);
}

OpCost EstimateOpCost(const Node& node, const Graph& graph) {
  OpCost cost;
  auto info = [&](int i) -> const ValueInfo* {
    if (i >= static_cast<int>(node.inputs.size()) || node.inputs[i].empty()) {
      return nullptr;
    }
    return graph.FindValue(node.inputs[i]);
  };
  for (const std::string& in : node.inputs) {
    if (in.empty()) continue;
    const ValueInfo* v = graph.FindValue(in);
    if (v == nullptr) continue;
    cost.bytes_read += ValueBytes(*v);
    if (graph.IsInitializer(in)) cost.weight_bytes += ValueBytes(*v);
  }
  double out_elements = 0;
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    const ValueInfo* v = graph.FindValue(out);
    if (v == nullptr) continue;
    cost.bytes_written += ValueBytes(*v);
    const int64_t n = v->shape.NumElements();
    if (n > 0 && out_elements == 0) out_elements = static_cast<double>(n);
  }
  // Backends fuse ops into internal ones ("glint.FusedMatMul"...): they
  // cost what the op they are built on costs (the fused bias or
  // activation is noise next to it).
  absl::string_view op = node.op_type;
  absl::ConsumePrefix(&op, "glint.Fused");
  const ValueInfo* a = info(0);
  const ValueInfo* b = info(1);
  const bool a_static = a != nullptr && a->shape.IsStatic();
  const bool b_static = b != nullptr && b->shape.IsStatic();
  if (op == "MatMul" && a_static && a->shape.rank() >= 1) {
    const int64_t k = a->shape.dim(a->shape.rank() - 1);
    cost.flops = 2.0 * out_elements * static_cast<double>(k);
  } else if (op == "Gemm" && a_static && a->shape.rank() == 2) {
    const int64_t k = node.GetInt("transA", 0) != 0 ? a->shape.dim(0)
                                                    : a->shape.dim(1);
    cost.flops = 2.0 * out_elements * static_cast<double>(k);
    if (info(2) != nullptr) cost.flops += out_elements;
  } else if (op == "Conv" && b_static && b->shape.rank() >= 2) {
    double per_output = 1;  // (C_in / group) · kernel elements.
    for (int d = 1; d < b->shape.rank(); ++d) per_output *= b->shape.dim(d);
    cost.flops = 2.0 * out_elements * per_output;
    if (info(2) != nullptr) cost.flops += out_elements;
  } else if (op == "ConvTranspose" && a_static && b_static &&
             b->shape.rank() >= 2) {
    double per_input = 1;  // (C_out / group) · kernel elements.
    for (int d = 1; d < b->shape.rank(); ++d) per_input *= b->shape.dim(d);
    cost.flops = 2.0 * static_cast<double>(a->shape.NumElements()) * per_input;
  } else if ((op == "LSTM" || op == "GRU" || op == "RNN") && a_static &&
             b_static && a->shape.rank() == 3 && b->shape.rank() == 3) {
    // x [T, N, K] (or [N, T, K]), w [D, G·H, K]: per step and direction
    // x·Wᵀ and h·Rᵀ, 2·N·G·H·(K + H); the cell's elementwise work is noise.
    const double steps_batch =
        static_cast<double>(a->shape.dim(0) * a->shape.dim(1));
    const double dirs_gh = static_cast<double>(b->shape.dim(0)) *
                           static_cast<double>(b->shape.dim(1));
    const double k = static_cast<double>(b->shape.dim(2));
    const double h = static_cast<double>(node.GetInt("hidden_size", 0));
    cost.flops = 2.0 * steps_batch * dirs_gh * (k + h);
  } else {
    cost.flops = out_elements;
  }
  return cost;
}

}  // namespace glint
