#include "provisioner/provisioner.h"

#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/status_macros.h"

namespace glint {
namespace {

bool SupportsAll(const DeviceManager& device, const Graph& function) {
  for (const Node& node : function.nodes) {
    if (!device.backend().IsOpSupported(node.op_type)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provisioner::Provision(
    const Dag& dag) const {
  // Logical → physical: each logical device gets a distinct physical one,
  // able to run all its partitions, preferring the most free memory.
  std::vector<std::vector<const DagNode*>> by_logical(
      static_cast<size_t>(dag.num_logical_devices));
  for (const DagNode& node : dag.nodes) {
    if (node.logical_device < 0 ||
        node.logical_device >= dag.num_logical_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("partition ", node.name, " has logical device ",
                       node.logical_device, " of ", dag.num_logical_devices));
    }
    by_logical[node.logical_device].push_back(&node);
  }
  if (dag.num_logical_devices > static_cast<int>(devices_.size())) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the plan needs ", dag.num_logical_devices,
                     " devices but only ", devices_.size(), " exist"));
  }
  std::vector<DeviceManager*> physical(by_logical.size(), nullptr);
  std::vector<bool> taken(devices_.size(), false);
  for (size_t l = 0; l < by_logical.size(); ++l) {
    int best = -1;
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (taken[d]) continue;
      bool capable = true;
      for (const DagNode* node : by_logical[l]) {
        capable = capable && SupportsAll(*devices_[d], node->function);
      }
      if (!capable) continue;
      if (best < 0 || devices_[d]->AvailableMemory() >
                          devices_[best]->AvailableMemory()) {
        best = static_cast<int>(d);
      }
    }
    if (best < 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "no free device can run the partitions of logical device ", l));
    }
    taken[best] = true;
    physical[l] = devices_[best];
  }

  auto network = std::make_unique<ExecutableNetwork>();
  network->inputs = dag.inputs;
  network->outputs = dag.outputs;
  // Compile each partition once per backend; load on its device. If any
  // step fails, `network` is destroyed on return, evicting what was loaded.
  for (const DagNode& node : dag.nodes) {
    DeviceManager* device = physical[node.logical_device];
    GLINT_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledFunction> compiled,
                           device->backend().Compile(node.function));
    absl::StatusOr<std::unique_ptr<LoadedFunction>> loaded =
        device->Load(std::move(compiled));
    if (!loaded.ok()) {
      return absl::Status(
          loaded.status().code(),
          absl::StrCat("loading partition ", node.name, " on device ",
                       device->GetDeviceInfo().name, ": ",
                       loaded.status().message()));
    }
    ProvisionedPartition p;
    p.name = node.name;
    p.device = device;
    p.function = *std::move(loaded);
    p.parents = node.parents;
    p.flops = p.function->function().flops();
    p.weight_bytes = p.function->function().constant_bytes();
    p.num_nodes = static_cast<int>(node.function.nodes.size());
    network->partitions.push_back(std::move(p));
  }
  return network;
}

}  // namespace glint
