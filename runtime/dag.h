// The DAG of partitions a network is split into (Glow's DAG/DAGNode).
#ifndef GLINT_RUNTIME_DAG_H_
#define GLINT_RUNTIME_DAG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/graph.h"

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
};

// Partitions in topological order, plus the network's interface.
struct Dag {
  std::vector<DagNode> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  int num_logical_devices = 0;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_DAG_H_
