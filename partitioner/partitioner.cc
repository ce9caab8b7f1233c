#include "partitioner/partitioner.h"

#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace glint {
namespace {

bool SupportsAll(const DeviceInfo& device, const Graph& graph,
                 std::string* missing) {
  for (const Node& node : graph.nodes) {
    for (const std::string& op : device.unsupported_ops) {
      if (op == node.op_type) {
        *missing = absl::StrCat("op '", op, "' (node '", node.name, "')");
        return false;
      }
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<Dag> Partition(const Graph& graph,
                              const std::vector<DeviceInfo>& devices,
                              const PartitionOptions& options) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("no devices to partition onto");
  }
  const uint64_t weights = graph.WeightBytes();
  // Whole network on the capable device with the most free memory.
  int best = -1;
  std::string missing;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!SupportsAll(devices[i], graph, &missing)) continue;
    if (best < 0 || devices[i].available_memory_bytes >
                        devices[best].available_memory_bytes) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0) {
    return absl::UnimplementedError(
        absl::StrCat(missing, " is not supported by any device"));
  }
  if (weights > devices[best].available_memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the network's weights (", weights, " bytes) do not fit on any "
        "device; the most free memory is ",
        devices[best].available_memory_bytes, " bytes on ",
        devices[best].name));
  }
  Dag dag;
  dag.inputs = graph.inputs;
  dag.outputs = graph.outputs;
  dag.num_logical_devices = 1;
  DagNode node;
  node.name = "p0";
  node.graph_nodes.resize(graph.nodes.size());
  std::iota(node.graph_nodes.begin(), node.graph_nodes.end(), 0);
  // The whole graph is the partition: same interface, same constants.
  node.function = graph;
  node.weight_bytes = weights;
  node.logical_device = 0;
  dag.nodes.push_back(std::move(node));
  (void)options;
  return dag;
}

absl::Status ValidateDag(const Dag& dag) {
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < static_cast<int>(dag.nodes.size()); ++i) {
    const DagNode& node = dag.nodes[i];
    for (int parent : node.parents) {
      if (parent < 0 || parent >= i) {
        return absl::InvalidArgumentError(absl::StrCat(
            "partition ", node.name, " depends on partition ", parent,
            ", which does not come before it"));
      }
    }
    for (const ValueInfo& out : node.function.outputs) {
      producer.emplace(out.name, i);
    }
  }
  absl::flat_hash_set<std::string> network_inputs;
  for (const ValueInfo& in : dag.inputs) network_inputs.insert(in.name);
  for (int i = 0; i < static_cast<int>(dag.nodes.size()); ++i) {
    const DagNode& node = dag.nodes[i];
    for (const ValueInfo& in : node.function.inputs) {
      if (network_inputs.contains(in.name)) continue;
      auto it = producer.find(in.name);
      if (it == producer.end() || it->second >= i) {
        return absl::InvalidArgumentError(
            absl::StrCat("partition ", node.name, " consumes '", in.name,
                         "', which no earlier partition produces"));
      }
      bool is_parent = false;
      for (int p : node.parents) is_parent = is_parent || p == it->second;
      if (!is_parent) {
        return absl::InvalidArgumentError(absl::StrCat(
            "partition ", node.name, " consumes '", in.name,
            "' from a partition that is not its parent"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace glint
