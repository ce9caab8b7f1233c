// The partition-level cost model: what a contiguous run of nodes (in the
// graph's topological order) costs in compute, memory and transfers.
#ifndef GLINT_PARTITIONER_COST_MODEL_H_
#define GLINT_PARTITIONER_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/graph.h"
#include "core/op_cost.h"

namespace glint {

struct SegmentCost {
  double flops = 0;
  uint64_t weight_bytes = 0;      // Distinct initializers, 64-byte aligned.
  uint64_t peak_activation_bytes = 0;  // Max live bytes by liveness.
  uint64_t input_bytes = 0;       // Values crossing into the segment.
  uint64_t output_bytes = 0;      // Values leaving it (or graph outputs).

  // What the segment holds on its device at its peak.
  uint64_t memory_bytes() const { return weight_bytes + peak_activation_bytes; }
};

// Precomputed facts about a graph for costing segments of its node list.
// Immutable after construction; thread-compatible.
class GraphCostModel {
 public:
  explicit GraphCostModel(const Graph& graph);
  // It points into its own tables.
  GraphCostModel(const GraphCostModel&) = delete;
  GraphCostModel& operator=(const GraphCostModel&) = delete;

  int num_nodes() const { return static_cast<int>(node_costs_.size()); }
  const OpCost& node_cost(int i) const { return node_costs_[i]; }

  // Cost of nodes [begin, end). Liveness: a value inside the segment lives
  // from its producer to its last consumer; the segment's inputs and the
  // values leaving it (or graph outputs) live through the whole segment, as
  // a run holds them on the device in buffers of its own (the executor's
  // PartitionExecution) while its internal values share the function's arena.
  // So memory_bytes() is what one execution needs beside the weights.
  SegmentCost Segment(int begin, int end) const;

  // Segment(begin, end).memory_bytes(), computed without hashing (the
  // heterogeneous search calls it O(n · stage length) times).
  uint64_t SegmentMemory(int begin, int end) const;

  // Bytes of the values produced before node `i` and consumed at or after
  // it: what a pipeline cut before node `i` must transfer. 0 for i = 0.
  const std::vector<uint64_t>& cut_bytes() const { return cut_bytes_; }

 private:
  struct ValueFacts {
    uint64_t bytes = 0;
    int producer = -1;          // Node index; -1 for inputs.
    bool initializer = false;
    bool graph_output = false;
    std::vector<int> consumers;  // Ascending node indices.
  };

  // Per node, per input and output: what SegmentMemory needs, by index.
  struct Use {
    const ValueFacts* value = nullptr;
    int previous_use = -1;  // Latest consumer before this node; -1: none.
    bool repeat = false;    // Already an input of this node (inputs only).
  };

  const Graph& graph_;
  std::vector<std::vector<Use>> node_inputs_, node_outputs_;
  std::vector<OpCost> node_costs_;
  absl::flat_hash_map<std::string, ValueFacts> values_;
  std::vector<uint64_t> cut_bytes_;  // Size num_nodes() + 1.
};

}  // namespace glint

#endif  // GLINT_PARTITIONER_COST_MODEL_H_
