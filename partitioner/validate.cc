#include "partitioner/validate.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "partitioner/plan_util.h"

namespace glint {

using partitioner_internal::Mib;
using partitioner_internal::Supports;

absl::Status ValidateAcyclic(const Dag& dag) {
  for (int i = 0; i < static_cast<int>(dag.nodes.size()); ++i) {
    for (int parent : dag.nodes[i].parents) {
      if (parent < 0 || parent >= i) {
        return absl::InvalidArgumentError(absl::StrCat(
            "partition ", dag.nodes[i].name, " depends on partition ", parent,
            ", which does not come before it (a cycle or a bad order)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateProducedBeforeConsumed(const Dag& dag) {
  absl::flat_hash_map<std::string, int> producer;
  absl::flat_hash_set<std::string> network_inputs;
  for (const ValueInfo& in : dag.inputs) network_inputs.insert(in.name);
  for (int i = 0; i < static_cast<int>(dag.nodes.size()); ++i) {
    const DagNode& node = dag.nodes[i];
    for (const ValueInfo& in : node.function.inputs) {
      if (network_inputs.contains(in.name)) continue;
      auto it = producer.find(in.name);
      if (it == producer.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("partition ", node.name, " consumes '", in.name,
                         "', which no earlier partition produces"));
      }
      if (std::find(node.parents.begin(), node.parents.end(), it->second) ==
          node.parents.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "partition ", node.name, " consumes '", in.name,
            "' from partition ", dag.nodes[it->second].name,
            ", which is not its parent"));
      }
    }
    for (const ValueInfo& out : node.function.outputs) {
      producer.emplace(out.name, i);
    }
  }
  for (const ValueInfo& out : dag.outputs) {
    if (!producer.contains(out.name) && !network_inputs.contains(out.name)) {
      bool constant = dag.constant_outputs.count(out.name) > 0;
      for (const DagNode& node : dag.nodes) {
        constant = constant || node.function.IsInitializer(out.name);
      }
      if (!constant) {
        return absl::InvalidArgumentError(absl::StrCat(
            "network output '", out.name, "' is produced by no partition"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMemoryFits(const Dag& dag) {
  std::vector<uint64_t> used(dag.logical_devices.size(), 0);
  for (const DagNode& node : dag.nodes) {
    if (node.logical_device < 0 ||
        node.logical_device >= static_cast<int>(used.size())) {
      continue;  // ValidateDeviceCount reports it.
    }
    used[node.logical_device] += node.memory_bytes;
  }
  for (size_t l = 0; l < used.size(); ++l) {
    if (used[l] > dag.logical_devices[l].available_memory_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the partitions on logical device ", l, " need ", Mib(used[l]),
          " but ", dag.logical_devices[l].name, " has ",
          Mib(dag.logical_devices[l].available_memory_bytes), " free"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateDeviceCount(const Dag& dag, int available_devices) {
  if (dag.replicas < 1 ||
      dag.num_logical_devices != static_cast<int>(dag.logical_devices.size())) {
    return absl::InvalidArgumentError("malformed plan: device counts");
  }
  const int needed = dag.num_logical_devices * dag.replicas;
  if (needed > available_devices) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the plan needs ", needed, " devices (", dag.num_logical_devices,
        " per replica x ", dag.replicas, " replicas) but only ",
        available_devices, " exist"));
  }
  for (const DagNode& node : dag.nodes) {
    if (node.logical_device < 0 ||
        node.logical_device >= dag.num_logical_devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "partition ", node.name, " is on logical device ",
          node.logical_device, " of ", dag.num_logical_devices));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateOpsSupported(const Dag& dag) {
  for (const DagNode& node : dag.nodes) {
    if (node.logical_device < 0 ||
        node.logical_device >= static_cast<int>(dag.logical_devices.size())) {
      continue;
    }
    const DeviceInfo& device = dag.logical_devices[node.logical_device];
    for (const Node& op : node.function.nodes) {
      if (!Supports(device, op)) {
        return absl::UnimplementedError(absl::StrCat(
            "partition ", node.name, " places op '", op.op_type, "' (node '",
            op.name, "') on a device of type '", device.type,
            "', which does not support it",
            op.Subgraphs().empty() ? "" : " or an op of its subgraphs"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateDag(const Dag& dag, int available_devices) {
  GLINT_RETURN_IF_ERROR(ValidateAcyclic(dag));
  GLINT_RETURN_IF_ERROR(ValidateProducedBeforeConsumed(dag));
  GLINT_RETURN_IF_ERROR(ValidateDeviceCount(dag, available_devices));
  GLINT_RETURN_IF_ERROR(ValidateOpsSupported(dag));
  GLINT_RETURN_IF_ERROR(ValidateMemoryFits(dag));
  return absl::OkStatus();
}

}  // namespace glint
