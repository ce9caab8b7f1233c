// Glint's graph IR: the ONNX model after import, in plain C++ types.
//
// Values are identified by name, as in ONNX. Nodes are kept in topological
// order (Validate() checks it), so a pass can walk `nodes` front to back.
// A partition is itself a Graph (see Subgraph()).
#ifndef GLINT_CORE_GRAPH_H_
#define GLINT_CORE_GRAPH_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace glint {

// Type of one value (an edge of the graph).
struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;  // May hold Shape::kUnknownDim for data-dependent sizes.

  // "x: float32[1, 3, 224, 224]".
  std::string ToString() const;
};

// A node attribute, as ONNX defines them (graph-valued ones excepted).
using Attribute = std::variant<int64_t, float, std::string,
                               std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor>;

struct Node {
  std::string name;     // Unique within the graph.
  std::string op_type;  // "Conv", "MatMul"...
  std::string domain;   // "" for the default ai.onnx domain.
  std::vector<std::string> inputs;   // "" marks an absent optional input.
  std::vector<std::string> outputs;  // "" marks an unused optional output.
  std::map<std::string, Attribute> attributes;

  bool HasAttribute(absl::string_view attr) const;
  // Typed lookups; return `fallback` when the attribute is absent or of
  // another type.
  int64_t GetInt(absl::string_view attr, int64_t fallback) const;
  float GetFloat(absl::string_view attr, float fallback) const;
  std::string GetString(absl::string_view attr, std::string fallback) const;
  std::vector<int64_t> GetInts(absl::string_view attr,
                               std::vector<int64_t> fallback = {}) const;
  std::vector<float> GetFloats(absl::string_view attr,
                               std::vector<float> fallback = {}) const;
  std::vector<std::string> GetStrings(
      absl::string_view attr, std::vector<std::string> fallback = {}) const;
  const Tensor* GetTensor(absl::string_view attr) const;

  // Number of inputs that are present (non-empty names, trailing included).
  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const {
    return i < num_inputs() && !inputs[i].empty();
  }
  // "node 'conv1' (Conv)", for messages.
  std::string Describe() const;
};

// A computation graph. Thread-compatible.
class Graph {
 public:
  std::string name;
  int64_t opset_version = 0;  // Of the default domain.
  std::vector<ValueInfo> inputs;   // Runtime inputs (never initializers).
  std::vector<ValueInfo> outputs;
  std::vector<Node> nodes;         // Topologically sorted.
  std::map<std::string, Tensor> initializers;  // Constants, by value name.

  // Every value's type: inputs, initializers and node outputs. Filled by the
  // importer and kept up to date by passes.
  absl::flat_hash_map<std::string, ValueInfo> values;

  const ValueInfo* FindValue(absl::string_view value) const;
  const Tensor* FindInitializer(absl::string_view value) const;
  bool IsInitializer(absl::string_view value) const {
    return FindInitializer(value) != nullptr;
  }

  // Checks structure: names unique, every consumed value produced earlier
  // (or an input/initializer), every value typed, outputs produced. Returns
  // INVALID_ARGUMENT naming the first offence.
  absl::Status Validate() const;

  // The sub-graph made of `node_indices` (ascending). Its inputs are the
  // values consumed but not produced inside (initializers stay
  // initializers), its outputs the values produced inside and consumed
  // outside or listed in this graph's outputs.
  Graph Subgraph(const std::vector<int>& node_indices) const;

  // Bytes of all initializers.
  size_t WeightBytes() const;
};

}  // namespace glint

#endif  // GLINT_CORE_GRAPH_H_
