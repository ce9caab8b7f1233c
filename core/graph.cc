#include "core/graph.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace glint {

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

absl::Status Graph::Validate() const {
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
      const ValueInfo* info = FindValue(out);
      if (info == nullptr || info->dtype == DType::kUndefined) {
        return absl::InvalidArgumentError(
            absl::StrCat("the type of '", out, "' produced by ",
                         node.Describe(), " is unknown"));
      }
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
