#include "core/graph.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/dim_expr.h"

namespace glint {

const std::string& ValueInfo::DimName(int axis) const {
  static const std::string* const kNone = new std::string();
  if (!shape.has_rank() || axis < 0 || axis >= shape.rank() ||
      dim_names.size() != static_cast<size_t>(shape.rank()) ||
      shape.dim(axis) != Shape::kUnknownDim) {
    return *kNone;
  }
  return dim_names[axis];
}

bool ValueInfo::HasDimNames() const {
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (!DimName(axis).empty()) return true;
  }
  return false;
}

std::optional<uint64_t> ValueInfo::BytesWithin(
    const std::map<std::string, int64_t>& bounds) const {
  const size_t element = DTypeSize(dtype);
  if (!shape.has_rank() || element == 0) return std::nullopt;
  uint64_t bytes = element;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    int64_t size = shape.dim(axis);
    if (size == Shape::kUnknownDim) {
      const std::string& name = DimName(axis);
      if (name.empty()) return std::nullopt;
      std::optional<int64_t> bound = EvaluateDim(name, bounds);
      if (!bound.has_value()) return std::nullopt;
      size = *bound;
    }
    if (size < 0) return std::nullopt;
    if (size == 0) return 0;
    if (bytes > kBytesWithinLimit / static_cast<uint64_t>(size)) {
      bytes = kBytesWithinLimit;
      continue;  // A later 0 still makes it empty.
    }
    bytes *= static_cast<uint64_t>(size);
  }
  return bytes;
}

std::string ValueInfo::ShapeString() const {
  if (!HasDimNames()) return shape.ToString();
  std::vector<std::string> dims;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    const std::string& n = DimName(axis);
    if (!n.empty()) {
      dims.push_back(n);
    } else if (shape.dim(axis) == Shape::kUnknownDim) {
      dims.push_back("?");
    } else {
      dims.push_back(absl::StrCat(shape.dim(axis)));
    }
  }
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

std::string ValueInfo::ToString() const {
  return absl::StrCat(name, ": ", DTypeName(dtype), shape.ToString());
}

bool Node::HasAttribute(absl::string_view attr) const {
  return attributes.find(std::string(attr)) != attributes.end();
}

namespace {

template <typename T>
const T* GetAs(const Node& node, absl::string_view attr) {
  auto it = node.attributes.find(std::string(attr));
  if (it == node.attributes.end()) return nullptr;
  return std::get_if<T>(&it->second);
}

}  // namespace

int64_t Node::GetInt(absl::string_view attr, int64_t fallback) const {
  const int64_t* v = GetAs<int64_t>(*this, attr);
  return v == nullptr ? fallback : *v;
}

float Node::GetFloat(absl::string_view attr, float fallback) const {
  const float* v = GetAs<float>(*this, attr);
  return v == nullptr ? fallback : *v;
}

std::string Node::GetString(absl::string_view attr,
                            std::string fallback) const {
  const std::string* v = GetAs<std::string>(*this, attr);
  return v == nullptr ? fallback : *v;
}

std::vector<int64_t> Node::GetInts(absl::string_view attr,
                                   std::vector<int64_t> fallback) const {
  const auto* v = GetAs<std::vector<int64_t>>(*this, attr);
  return v == nullptr ? fallback : *v;
}

std::vector<float> Node::GetFloats(absl::string_view attr,
                                   std::vector<float> fallback) const {
  const auto* v = GetAs<std::vector<float>>(*this, attr);
  return v == nullptr ? fallback : *v;
}

std::vector<std::string> Node::GetStrings(
    absl::string_view attr, std::vector<std::string> fallback) const {
  const auto* v = GetAs<std::vector<std::string>>(*this, attr);
  return v == nullptr ? fallback : *v;
}

const Tensor* Node::GetTensor(absl::string_view attr) const {
  return GetAs<Tensor>(*this, attr);
}

const Graph* Node::GetGraph(absl::string_view attr) const {
  const GraphAttribute* g = GetAs<GraphAttribute>(*this, attr);
  return g == nullptr ? nullptr : g->get();
}

std::vector<std::pair<std::string, const Graph*>> Node::Subgraphs() const {
  std::vector<std::pair<std::string, const Graph*>> result;
  for (const auto& [name, value] : attributes) {
    if (const GraphAttribute* g = std::get_if<GraphAttribute>(&value)) {
      if (*g != nullptr) result.emplace_back(name, g->get());
    }
  }
  return result;
}

std::string Node::Describe() const {
  return absl::StrCat("node '", name, "' (", op_type, ")");
}

const ValueInfo* Graph::FindValue(absl::string_view value) const {
  auto it = values.find(value);
  return it == values.end() ? nullptr : &it->second;
}

const Tensor* Graph::FindInitializer(absl::string_view value) const {
  auto it = initializers.find(std::string(value));
  return it == initializers.end() ? nullptr : &it->second;
}

namespace {

absl::Status ValidateGraph(const Graph& graph, int depth);

// A node's subgraphs against its implicit inputs (Node::num_implicit_inputs).
absl::Status ValidateSubgraphs(const Graph& graph, const Node& node,
                               int depth) {
  const int implicit = node.num_implicit_inputs;
  if (implicit < 0 || implicit > node.num_inputs()) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Describe(), " has ", implicit,
                     " implicit inputs of ", node.num_inputs()));
  }
  const auto subgraphs = node.Subgraphs();
  if (subgraphs.empty()) {
    if (implicit == 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        node.Describe(), " has implicit inputs but no subgraph"));
  }
  if (depth >= kMaxSubgraphDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Describe(), ": subgraphs nest deeper than ",
                     kMaxSubgraphDepth, " levels"));
  }
  for (const auto& [attr, sub] : subgraphs) {
    const int n = static_cast<int>(sub->inputs.size());
    if (n < implicit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "subgraph '", attr, "' of ", node.Describe(), " has ", n,
          " inputs, fewer than the node's ", implicit, " implicit inputs"));
    }
    for (int k = 0; k < implicit; ++k) {
      const std::string& outer =
          node.inputs[node.num_inputs() - implicit + k];
      const ValueInfo* info = graph.FindValue(outer);
      const ValueInfo& inner = sub->inputs[n - implicit + k];
      if (info != nullptr && info->dtype != inner.dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "subgraph '", attr, "' of ", node.Describe(), " reads '", outer,
            "' as '", inner.name, "' of dtype ", DTypeName(inner.dtype),
            ", but it is ", DTypeName(info->dtype)));
      }
    }
    absl::Status s = ValidateGraph(*sub, depth + 1);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("subgraph '", attr, "' of ", node.Describe(), ": ",
                       s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateGraph(const Graph& graph, int depth) {
  const auto& inputs = graph.inputs;
  const auto& initializers = graph.initializers;
  const auto& nodes = graph.nodes;
  const auto& outputs = graph.outputs;
  absl::flat_hash_set<std::string> available;
  for (const ValueInfo& in : inputs) {
    if (!available.insert(in.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", in.name, "' is declared twice"));
    }
  }
  for (const auto& [name, tensor] : initializers) available.insert(name);
  absl::flat_hash_set<std::string> node_names;
  for (const Node& node : nodes) {
    if (!node_names.insert(node.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two nodes are named '", node.name, "'"));
    }
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      if (!available.contains(in)) {
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), " consumes '", in,
                         "', which no earlier node, input or initializer "
                         "provides"));
      }
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      if (!available.insert(out).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "value '", out, "' is produced twice (second by ",
            node.Describe(), ")"));
      }
      const ValueInfo* info = graph.FindValue(out);
      if (info == nullptr || info->dtype == DType::kUndefined) {
        return absl::InvalidArgumentError(
            absl::StrCat("the type of '", out, "' produced by ",
                         node.Describe(), " is unknown"));
      }
    }
    if (node.num_implicit_inputs != 0 || !node.Subgraphs().empty()) {
      absl::Status s = ValidateSubgraphs(graph, node, depth);
      if (!s.ok()) return s;
    }
  }
  for (const ValueInfo& out : outputs) {
    if (!available.contains(out.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", out.name, "' is never produced"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Graph::Validate() const { return ValidateGraph(*this, 0); }

Graph Graph::Subgraph(const std::vector<int>& node_indices) const {
  Graph sub;
  sub.name = name;
  sub.opset_version = opset_version;
  absl::flat_hash_set<std::string> produced_inside;
  absl::flat_hash_set<std::string> consumed_inside;
  for (int i : node_indices) {
    for (const std::string& out : nodes[i].outputs) {
      if (!out.empty()) produced_inside.insert(out);
    }
  }
  absl::flat_hash_set<std::string> added_inputs;
  for (int i : node_indices) {
    const Node& node = nodes[i];
    sub.nodes.push_back(node);
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      consumed_inside.insert(in);
      if (const ValueInfo* v = FindValue(in)) sub.values[in] = *v;
      if (produced_inside.contains(in)) continue;
      if (const Tensor* init = FindInitializer(in)) {
        sub.initializers[in] = *init;
      } else if (added_inputs.insert(in).second) {
        sub.inputs.push_back(*FindValue(in));
      }
    }
    for (const std::string& out : node.outputs) {
      if (!out.empty()) sub.values[out] = *FindValue(out);
    }
  }
  // Outputs: produced inside and needed outside (by another node or as a
  // graph output), in a deterministic order.
  absl::flat_hash_set<std::string> needed_outside;
  absl::flat_hash_set<int> inside(node_indices.begin(), node_indices.end());
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (inside.contains(i)) continue;
    for (const std::string& in : nodes[i].inputs) needed_outside.insert(in);
  }
  for (const ValueInfo& out : outputs) needed_outside.insert(out.name);
  for (int i : node_indices) {
    for (const std::string& out : nodes[i].outputs) {
      if (!out.empty() && needed_outside.contains(out)) {
        sub.outputs.push_back(*FindValue(out));
      }
    }
  }
  for (const auto& [n, t] : sub.initializers) sub.values[n] = *FindValue(n);
  for (const ValueInfo& in : sub.inputs) sub.values[in.name] = in;
  return sub;
}

size_t Graph::WeightBytes() const {
  size_t total = 0;
  for (const auto& [name, t] : initializers) total += t.num_bytes();
  return total;
}

}  // namespace glint
