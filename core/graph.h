// Glint's graph IR: the ONNX model after import, in plain C++ types.
//
// Values are identified by name, as in ONNX. Nodes are kept in topological
// order (Validate() checks it), so a pass can walk `nodes` front to back.
// A partition is itself a Graph (see Subgraph()).
#ifndef GLINT_CORE_GRAPH_H_
#define GLINT_CORE_GRAPH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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
  // Symbolic names of the dims `shape` leaves unknown (ONNX dim_param:
  // "batch", "seq"), one entry per dim, "" where a dim is known or has no
  // name; empty when no dim is named. Two unknown dims of one name are one
  // size in every run (ONNX's meaning): the importer propagates the names
  // the model gives its inputs through every value its shape inference
  // (and Glint's, onnx/shape_folding.h) can follow. A pass that changes
  // `shape` permutes or clears them; names that no longer fit it (another
  // rank, a dim now known) are ignored by DimName() and what reads them.
  std::vector<std::string> dim_names;

  // dim_names[axis] where it names an unknown dim of `shape`, else "".
  const std::string& DimName(int axis) const;
  // Whether some dim has a name.
  bool HasDimNames() const;
  // "[batch, seq, 768]": Shape::ToString() with named dims by name.
  std::string ShapeString() const;
  // "x: float32[1, 3, 224, 224]", unknown dims as "?" whether named or not
  // (ShapeString() for the names).
  std::string ToString() const;
  // The most bytes the value takes in a run whose named dims are each at
  // most `bounds[name]` (a network's dynamic dims, by name): its known
  // dims times the bounds of its named ones, a name derived from them
  // ("(height+1)/2", "64*batch": core/dim_expr.h) evaluated at the bounds.
  // nullopt where that is not known: an unknown rank, an unknown dim
  // without a name or whose name neither `bounds` has nor an expression of
  // its names is (a data-dependent size, or a dim neither ONNX nor the
  // importer could relate to the inputs') or a dtype of no fixed size. A size
  // past 2^62 bytes (bounds no device holds) is that limit, kBytesWithinLimit:
  // sums of a few stay in range and never fit.
  std::optional<uint64_t> BytesWithin(
      const std::map<std::string, int64_t>& bounds) const;
  static constexpr uint64_t kBytesWithinLimit = uint64_t{1} << 62;
};

// a + b, or UINT64_MAX where that overflows: device memory sums of values
// sized at user-given bounds.
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

class Graph;

// A graph-valued attribute (the branches of If, the body of Loop and Scan):
// shared and immutable, so that copying a node or a graph (partitions,
// optimiser passes) never copies a subgraph, and a compiled kernel can keep
// the subgraph alive without pointing into the node.
using GraphAttribute = std::shared_ptr<const Graph>;

// A node attribute, as ONNX defines them (lists of graphs, sparse tensors
// and type protos excepted).
using Attribute = std::variant<int64_t, float, std::string,
                               std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor,
                               GraphAttribute>;

struct Node {
  std::string name;     // Unique within the graph.
  std::string op_type;  // "Conv", "MatMul"...
  std::string domain;   // "" for the default ai.onnx domain.
  std::vector<std::string> inputs;   // "" marks an absent optional input.
  std::vector<std::string> outputs;  // "" marks an unused optional output.
  std::map<std::string, Attribute> attributes;
  // Control flow (If, Loop, Scan): how many of `inputs`, at the end, are
  // values its subgraphs read from an enclosing graph. ONNX lets a subgraph
  // name outer values without listing them; the importer makes each such
  // capture an explicit input of the node, so that every pass, the
  // partitioner (a partition boundary then carries a capture like any other
  // input) and the executor see the dependency. Every subgraph of the node
  // lists the same values, in the same order, as its own last
  // `num_implicit_inputs` inputs (under the names it uses inside), and
  // binds them by position: passes may rename the outer values freely.
  int num_implicit_inputs = 0;

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
  // Null when absent or not a graph.
  const Graph* GetGraph(absl::string_view attr) const;
  // Every graph-valued attribute, by attribute name.
  std::vector<std::pair<std::string, const Graph*>> Subgraphs() const;
  // Inputs before the implicit ones (ONNX's own inputs of the node).
  int num_explicit_inputs() const {
    return num_inputs() - num_implicit_inputs;
  }

  // Number of inputs that are present (non-empty names, trailing included).
  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const {
    return i < num_inputs() && !inputs[i].empty();
  }
  // "node 'conv1' (Conv)", for messages.
  std::string Describe() const;
};

// How deeply subgraphs may nest (a Loop inside an If inside a Loop is 3);
// the importer refuses deeper models, so recursion over subgraphs is
// bounded.
inline constexpr int kMaxSubgraphDepth = 16;

// A computation graph. Thread-compatible.
class Graph {
 public:
  std::string name;
  int64_t opset_version = 0;  // Of the default domain.
  // Runtime inputs (never initializers). Their dim_names are the model's
  // names of its dynamic dims: what a request's shapes are checked
  // against (equal names, equal sizes).
  std::vector<ValueInfo> inputs;
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
  // (or an input/initializer), every value typed, outputs produced, and for
  // nodes with subgraphs: each subgraph valid itself (recursively, at most
  // kMaxSubgraphDepth deep) with the node's implicit inputs as its last
  // inputs, of the same dtypes. Returns INVALID_ARGUMENT naming the first
  // offence.
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
