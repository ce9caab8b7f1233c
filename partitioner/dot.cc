#include "partitioner/dot.h"

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/device_info.h"
#include "core/op_cost.h"

namespace glint {
namespace {

// Distinct colours for up to 8 logical devices, then cycling.
constexpr const char* kColours[] = {"#a6cee3", "#b2df8a", "#fb9a99",
                                    "#fdbf6f", "#cab2d6", "#ffff99",
                                    "#8dd3c7", "#bebada"};

std::string Escape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string HumanBytes(uint64_t bytes) {
  if (bytes >= kMiB) return absl::StrCat(bytes / kMiB, " MiB");
  if (bytes >= 1024) return absl::StrCat(bytes / 1024, " KiB");
  return absl::StrCat(bytes, " B");
}

}  // namespace

std::string DagToDot(const Dag& dag, absl::string_view name) {
  std::string dot = absl::StrCat("digraph \"", Escape(name), "\" {\n",
                                 "  rankdir=TB;\n  compound=true;\n",
                                 "  node [shape=box, style=filled, "
                                 "fillcolor=white, fontsize=10];\n");
  absl::flat_hash_map<std::string, std::string> producer_node;
  for (const ValueInfo& in : dag.inputs) {
    const std::string id = absl::StrCat("in_", producer_node.size());
    producer_node[in.name] = id;
    absl::StrAppend(&dot, "  ", id, " [shape=ellipse, label=\"",
                    Escape(in.ToString()), "\"];\n");
  }
  int counter = 0;
  for (const DagNode& p : dag.nodes) {
    const DeviceInfo* model =
        p.logical_device >= 0 &&
                p.logical_device < static_cast<int>(dag.logical_devices.size())
            ? &dag.logical_devices[p.logical_device]
            : nullptr;
    absl::StrAppend(
        &dot, "  subgraph \"cluster_", Escape(p.name), "\" {\n",
        "    label=\"", Escape(p.name), " on logical device ",
        p.logical_device, model != nullptr ? absl::StrCat(" (", model->type, ")")
                                           : "",
        "\\n", p.function.nodes.size(), " nodes, memory ",
        HumanBytes(p.memory_bytes), "\";\n    style=filled;\n",
        "    fillcolor=\"", kColours[p.logical_device % 8], "\";\n");
    for (const Node& node : p.function.nodes) {
      const std::string id = absl::StrCat("n", counter++);
      absl::StrAppend(&dot, "    ", id, " [label=\"", Escape(node.name),
                      "\\n", Escape(node.op_type), "\"];\n");
      for (const std::string& out : node.outputs) {
        if (!out.empty()) producer_node[out] = id;
      }
    }
    absl::StrAppend(&dot, "  }\n");
  }
  // Edges: one per (producer, consumer, value), labelled with its bytes.
  counter = 0;
  for (const DagNode& p : dag.nodes) {
    for (const Node& node : p.function.nodes) {
      const std::string id = absl::StrCat("n", counter++);
      absl::flat_hash_set<std::string> drawn;
      for (const std::string& in : node.inputs) {
        if (in.empty() || !drawn.insert(in).second) continue;
        auto it = producer_node.find(in);
        if (it == producer_node.end()) continue;  // A constant.
        const ValueInfo* v = p.function.FindValue(in);
        absl::StrAppend(&dot, "  ", it->second, " -> ", id, " [label=\"",
                        v != nullptr ? HumanBytes(ValueBytes(*v)) : "?",
                        "\"];\n");
      }
    }
  }
  for (const ValueInfo& out : dag.outputs) {
    auto it = producer_node.find(out.name);
    if (it == producer_node.end()) continue;
    const std::string id = absl::StrCat("out_", counter++);
    absl::StrAppend(&dot, "  ", id, " [shape=ellipse, label=\"",
                    Escape(out.ToString()), "\"];\n  ", it->second, " -> ", id,
                    " [label=\"", HumanBytes(ValueBytes(out)), "\"];\n");
  }
  absl::StrAppend(&dot, "}\n");
  return dot;
}

}  // namespace glint
