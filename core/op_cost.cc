#include "core/op_cost.h"

#include <algorithm>

#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace glint {

namespace {

// Elements of `shape` with unknown dims counted as 1; 0 for an unknown
// rank.
int64_t PlanningElements(const Shape& shape) {
  if (!shape.has_rank()) return 0;
  int64_t n = 1;
  for (int64_t d : shape.dims()) {
    if (d != Shape::kUnknownDim) n *= d;
  }
  return n;
}

// Dim `i` of `shape`, 1 when unknown.
int64_t PlanningDim(const Shape& shape, int i) {
  const int64_t d = shape.dim(i);
  return d == Shape::kUnknownDim ? 1 : d;
}

}  // namespace

uint64_t ValueBytes(const ValueInfo& value) {
  const int64_t n = PlanningElements(value.shape);
  return n < 0 ? 0 : static_cast<uint64_t>(n) * DTypeSize(value.dtype);
}

namespace {

// Flops of one run of `graph`'s nodes, weights of its initializers.
OpCost SubgraphCost(const Graph& graph) {
  OpCost total;
  for (const Node& n : graph.nodes) {
    total.flops += EstimateOpCost(n, graph).flops;
  }
  total.weight_bytes = graph.WeightBytes();
  return total;
}

// How often a Loop or Scan runs its body, where static shapes or a
// constant trip count tell; 1 otherwise (a lower bound).
double Iterations(const Node& node, const Graph& graph) {
  if (node.op_type == "Loop" && node.has_input(0)) {
    const Tensor* m = graph.FindInitializer(node.inputs[0]);
    if (m != nullptr && m->dtype() == DType::kInt64 &&
        m->num_elements() == 1) {
      return static_cast<double>(std::max<int64_t>(*m->data<int64_t>(), 0));
    }
  }
  if (node.op_type == "Scan") {
    // The first scan input's length along axis 0 (1 in opset 8's batched
    // form), when static.
    const int64_t m = node.GetInt("num_scan_inputs", 0);
    const int first = node.num_explicit_inputs() - static_cast<int>(m);
    const int axis = graph.opset_version < 9 ? 1 : 0;
    if (m > 0 && node.has_input(first) &&
        node.GetInts("scan_input_axes").empty()) {
      const ValueInfo* v = graph.FindValue(node.inputs[first]);
      if (v != nullptr && v->shape.has_rank() && v->shape.rank() > axis &&
          v->shape.dim(axis) > 0) {
        return static_cast<double>(v->shape.dim(axis));
      }
    }
  }
  return 1;
}

// Adds the bytes `node` reads, writes and holds as weights to `cost`;
// returns its first non-empty output's element count (0 if none).
double CountBytes(const Node& node, const Graph& graph, OpCost* cost) {
  for (const std::string& in : node.inputs) {
    if (in.empty()) continue;
    const ValueInfo* v = graph.FindValue(in);
    if (v == nullptr) continue;
    cost->bytes_read += ValueBytes(*v);
    if (graph.IsInitializer(in)) cost->weight_bytes += ValueBytes(*v);
  }
  double out_elements = 0;
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    const ValueInfo* v = graph.FindValue(out);
    if (v == nullptr) continue;
    cost->bytes_written += ValueBytes(*v);
    const int64_t n = PlanningElements(v->shape);
    if (n > 0 && out_elements == 0) out_elements = static_cast<double>(n);
  }
  return out_elements;
}

// An LSTM/GRU/RNN of input x [T, N, K] (or [N, T, K]) and weights
// w [D, G·H, K]: per step and direction x·Wᵀ and h·Rᵀ, 2·N·G·H·(K + H);
// the cell's elementwise work is noise.
double RecurrentFlops(const Node& node, const Shape& x, const Shape& w) {
  const double steps_batch =
      static_cast<double>(PlanningDim(x, 0) * PlanningDim(x, 1));
  const double dirs_gh = static_cast<double>(PlanningDim(w, 0)) *
                         static_cast<double>(PlanningDim(w, 1));
  const double k = static_cast<double>(PlanningDim(w, 2));
  const double h = static_cast<double>(node.GetInt("hidden_size", 0));
  return 2.0 * steps_batch * dirs_gh * (k + h);
}

}  // namespace

OpCost EstimateOpCost(const Node& node, const Graph& graph) {
  OpCost cost;
  auto info = [&](int i) -> const ValueInfo* {
    if (i >= static_cast<int>(node.inputs.size()) || node.inputs[i].empty()) {
      return nullptr;
    }
    return graph.FindValue(node.inputs[i]);
  };
  const double out_elements = CountBytes(node, graph, &cost);
  // Backends fuse ops into internal ones ("glint.FusedMatMul"...): they
  // cost what the op they are built on costs (the fused bias or
  // activation is noise next to it).
  absl::string_view op = node.op_type;
  absl::ConsumePrefix(&op, "glint.Fused");
  const ValueInfo* a = info(0);
  const ValueInfo* b = info(1);
  // The integer forms cost what their float op costs (int8 runs faster, but
  // the partitioner only compares nodes).
  if (op == "MatMulInteger" || op == "QLinearMatMul") op = "MatMul";
  if (op == "ConvInteger") op = "Conv";
  if (op == "QLinearConv") {
    op = "Conv";
    b = info(3);  // W.
  }
  // Typed with a rank: unknown dims count as 1 (PlanningDim).
  const bool a_static = a != nullptr && a->shape.has_rank();
  const bool b_static = b != nullptr && b->shape.has_rank();
  if (op == "MatMul" && a_static && a->shape.rank() >= 1) {
    const int64_t k = PlanningDim(a->shape, a->shape.rank() - 1);
    cost.flops = 2.0 * out_elements * static_cast<double>(k);
  } else if (op == "Gemm" && a_static && a->shape.rank() == 2) {
    const int64_t k = node.GetInt("transA", 0) != 0 ? PlanningDim(a->shape, 0)
                                                    : PlanningDim(a->shape, 1);
    cost.flops = 2.0 * out_elements * static_cast<double>(k);
    if (info(2) != nullptr) cost.flops += out_elements;
  } else if (op == "Conv" && b_static && b->shape.rank() >= 2) {
    double per_output = 1;  // (C_in / group) · kernel elements.
    for (int d = 1; d < b->shape.rank(); ++d) {
      per_output *= PlanningDim(b->shape, d);
    }
    cost.flops = 2.0 * out_elements * per_output;
    if (info(2) != nullptr) cost.flops += out_elements;
  } else if (op == "ConvTranspose" && a_static && b_static &&
             b->shape.rank() >= 2) {
    double per_input = 1;  // (C_out / group) · kernel elements.
    for (int d = 1; d < b->shape.rank(); ++d) {
      per_input *= PlanningDim(b->shape, d);
    }
    cost.flops =
        2.0 * static_cast<double>(PlanningElements(a->shape)) * per_input;
  } else if ((op == "LSTM" || op == "GRU" || op == "RNN") && a_static &&
             b_static && a->shape.rank() == 3 && b->shape.rank() == 3) {
    cost.flops = RecurrentFlops(node, a->shape, b->shape);
  } else if (const auto subgraphs = node.Subgraphs(); !subgraphs.empty()) {
    // Control flow: the costlier branch of an If, the body times its
    // iterations for Loop and Scan. The subgraphs' constants are weights
    // the node holds.
    double flops = 0;
    for (const auto& [attr, sub] : subgraphs) {
      const OpCost c = SubgraphCost(*sub);
      flops = std::max(flops, c.flops);
      cost.weight_bytes += c.weight_bytes;
    }
    cost.flops = std::max(flops * Iterations(node, graph), out_elements);
  } else {
    cost.flops = out_elements;
  }
  return cost;
}

}  // namespace glint
