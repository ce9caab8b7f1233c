// What the graph rewrites share: who reads a value, finding producers and
// consumers, fresh names, merging a node into its producer, reading
// constants. Internal to optimizer/ (not in its hdrs).
#ifndef GLINT_OPTIMIZER_GRAPH_EDIT_H_
#define GLINT_OPTIMIZER_GRAPH_EDIT_H_

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/graph.h"

namespace glint::optimizer_internal {

inline bool IsDefaultDomain(const Node& node) {
  return node.domain.empty() || node.domain == "ai.onnx";
}

// Who reads each value, so that a pass only fuses away a value nobody else
// sees.
class Uses {
 public:
  explicit Uses(const Graph& graph) {
    for (const Node& node : graph.nodes) {
      for (const std::string& in : node.inputs) {
        if (!in.empty()) ++count_[in];
      }
    }
    for (const ValueInfo& out : graph.outputs) outputs_.insert(out.name);
  }

  // True when `value` is read by exactly one node input and is not a graph
  // output: it can disappear into a fusion.
  bool SingleInternalUse(const std::string& value) const {
    auto it = count_.find(value);
    return it != count_.end() && it->second == 1 && !outputs_.contains(value);
  }
  bool IsGraphOutput(const std::string& value) const {
    return outputs_.contains(value);
  }

 private:
  absl::flat_hash_map<std::string, int> count_;
  absl::flat_hash_set<std::string> outputs_;
};

// The index of the node reading `value`, searching after `from`; -1 if none.
inline int FindConsumer(const Graph& graph, int from, const std::string& value) {
  for (int i = from + 1; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (const std::string& in : graph.nodes[i].inputs) {
      if (in == value) return i;
    }
  }
  return -1;
}

// The index of the node that produces `value`, searching before `before`;
// -1 if none (a graph input or initializer).
inline int FindProducer(const Graph& graph, int before, const std::string& value) {
  for (int i = std::min<int>(before, graph.nodes.size()) - 1; i >= 0; --i) {
    for (const std::string& out : graph.nodes[i].outputs) {
      if (out == value) return i;
    }
  }
  return -1;
}

// The node that alone reads node `i`'s first output, which is no graph
// output either (so a fusion may swallow the value); -1 if there is none.
inline int SoleConsumer(const Graph& graph, int i) {
  const std::string& value = graph.nodes[i].outputs[0];
  return Uses(graph).SingleInternalUse(value) ? FindConsumer(graph, i, value)
                                              : -1;
}

// The float32 output of `node` when it is a plain two-input MatMul (no
// fusion yet), else null.
inline const ValueInfo* PlainMatMulOutput(const Graph& graph, const Node& node) {
  if (!IsDefaultDomain(node) || node.op_type != "MatMul" ||
      node.outputs.size() != 1 || node.inputs.size() != 2) {
    return nullptr;
  }
  const ValueInfo* out = graph.FindValue(node.outputs[0]);
  return out != nullptr && out->dtype == DType::kFloat32 ? out : nullptr;
}

// An initializer name not yet used in `graph`.
inline std::string FreshName(const Graph& graph, const std::string& base) {
  std::string name = base;
  for (int i = 1; graph.values.contains(name) ||
                  graph.initializers.count(name) > 0;
       ++i) {
    name = absl::StrCat(base, "_", i);
  }
  return name;
}

inline void AddInitializer(Graph* graph, const std::string& name, Tensor tensor) {
  graph->values[name] = ValueInfo{name, tensor.dtype(), tensor.shape()};
  graph->initializers[name] = std::move(tensor);
}

// `producer`'s single output now is `consumer`'s; `consumer` is erased.
// The intermediate value disappears.
inline void MergeInto(Graph* graph, int producer, int consumer) {
  Node& p = graph->nodes[producer];
  graph->values.erase(p.outputs[0]);
  p.outputs = {graph->nodes[consumer].outputs[0]};
  graph->nodes.erase(graph->nodes.begin() + consumer);
}

inline const Tensor* FloatInitializer(const Graph& graph, const std::string& name) {
  const Tensor* t = graph.FindInitializer(name);
  return t != nullptr && t->dtype() == DType::kFloat32 ? t : nullptr;
}

inline std::string ActivationOf(const Node& node) {
  return node.GetString("activation", "");
}

// The value of a one-element float32 initializer, if `name` is one.
inline std::optional<float> ScalarConstant(const Graph& graph,
                                    const std::string& name) {
  const Tensor* t = FloatInitializer(graph, name);
  if (t == nullptr || t->num_elements() != 1) return std::nullopt;
  return t->data<float>()[0];
}

inline bool Near(std::optional<float> v, double want) {
  return v.has_value() && std::fabs(*v - want) <= 1e-4 * std::fabs(want);
}

// For a two-input node, the input that is not `value` ("" if neither or
// both are).
inline std::string OtherInput(const Node& node, const std::string& value) {
  if (node.inputs.size() != 2) return "";
  if (node.inputs[0] == value && node.inputs[1] != value) {
    return node.inputs[1];
  }
  if (node.inputs[1] == value && node.inputs[0] != value) {
    return node.inputs[0];
  }
  return "";
}

inline bool IsBinary(const Node& node, absl::string_view op) {
  return IsDefaultDomain(node) && node.op_type == op &&
         node.inputs.size() == 2 && node.outputs.size() == 1;
}

inline bool IsUnary(const Node& node, absl::string_view op) {
  return IsDefaultDomain(node) && node.op_type == op &&
         node.inputs.size() == 1 && node.outputs.size() == 1;
}

inline Node TransposeNode(std::string name, std::string in, std::string out,
                   std::vector<int64_t> perm) {
  Node node;
  node.name = std::move(name);
  node.op_type = "Transpose";
  node.inputs = {std::move(in)};
  node.outputs = {std::move(out)};
  node.attributes["perm"] = std::move(perm);
  return node;
}

inline std::vector<int64_t> TransposePerm(const Node& node) {
  return node.GetInts("perm", {});
}

}  // namespace glint::optimizer_internal

#endif  // GLINT_OPTIMIZER_GRAPH_EDIT_H_
