// The DAG of partitions a network is split into (Glow's DAG/DAGNode).
#ifndef GLINT_CORE_DAG_H_
#define GLINT_CORE_DAG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/device_info.h"
#include "core/graph.h"

namespace glint {

// One partition: a sub-function placed on one logical device.
struct DagNode {
  std::string name;  // "p0", "p1"... in topological order.
  // Indices into the partitioned Graph's nodes (ascending).
  std::vector<int> graph_nodes;
  // The partition as a standalone Graph (see Graph::Subgraph): its inputs
  // and outputs are the values crossing its border.
  Graph function;
  int logical_device = 0;
  std::vector<int> parents;   // DagNode indices this one consumes from.
  std::vector<int> children;  // DagNode indices consuming from this one.
  // Estimates from the cost model.
  double flops = 0;
  uint64_t weight_bytes = 0;
  uint64_t memory_bytes = 0;  // Weights + peak live activations.
  uint64_t input_bytes = 0;   // Crossing into the partition per run.
  double estimated_seconds = 0;  // Compute + transfer in, on its device.
  // The class of device it was planned for ("sim without Softmax, 50
  // GFLOP/s") and why there rather than on another class (capability,
  // memory, speed), for `glint show`.
  std::string device_class;
  std::string placement_reason;
};

// Partitions in topological order, plus the network's interface.
struct Dag {
  std::vector<DagNode> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  // Network outputs that are constants of the model (initializers): no
  // partition computes them, the host answers them from here.
  std::map<std::string, Tensor> constant_outputs;
  // Devices one copy of the network spans. logical_devices[l] describes the
  // device logical device l was planned for (its type, capacity, rates);
  // the provisioner maps it to a physical device of that type.
  int num_logical_devices = 0;
  std::vector<DeviceInfo> logical_devices;
  // Copies of the whole plan, each on its own physical devices.
  int replicas = 1;
  std::string strategy;  // The strategy that made the plan, for reports.
  // The cost model's pipeline bottleneck: the busiest logical device's
  // estimated seconds per run (its partitions' compute + transfers in).
  double estimated_bottleneck_seconds = 0;
  // The plan in its smallest form, to cache and replay it: the logical
  // device of each node of the partitioned Graph (PartitionOptions::
  // fixed_assignment takes it back).
  std::vector<int> assignment;
  // Where to place it, when replaying a cached plan: per replica, the
  // device id each logical device goes to. Empty: the provisioner chooses
  // (and fills ExecutableNetwork::placement with its choice).
  std::vector<std::vector<int>> placement;
};

}  // namespace glint

#endif  // GLINT_CORE_DAG_H_
