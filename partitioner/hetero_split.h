// The exact search behind heterogeneous plans: a chain of items (the
// graph's nodes in topological order) split into contiguous stages, each
// on its own logical device taken from one of several device classes that
// differ in speed, link bandwidth, memory and op support.
#ifndef GLINT_PARTITIONER_HETERO_SPLIT_H_
#define GLINT_PARTITIONER_HETERO_SPLIT_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace glint {

// Interchangeable devices (same type, ops and rates). Logical devices of a
// class are handed out in the order of `capacities` (its caller lists them
// by free memory, largest first): the k-th stage placed on the class, in
// chain order, gets capacities[k].
struct DeviceClassSpec {
  double seconds_per_flop = 0;  // 1 / compute rate; > 0.
  double seconds_per_byte = 0;  // 1 / link bandwidth (transfer into a stage).
  std::vector<uint64_t> capacities;  // Free bytes of each logical device.
  std::vector<bool> supported;       // Per item: can the class run it.
};

struct HeteroProblem {
  std::vector<double> item_flops;
  // Bytes a cut before item i moves into the stage starting there
  // (cut_bytes[0] is ignored as 0). Same size as item_flops.
  std::vector<double> cut_bytes;
  std::vector<DeviceClassSpec> classes;
  // Bytes stage [begin, end) holds on its device. Must not grow when the
  // stage shrinks (true of GraphCostModel::Segment: weights are a subset
  // and every position's live bytes can only drop).
  std::function<uint64_t(int begin, int end)> segment_memory;
  // The most logical devices (stages) one plan may use.
  int max_stages = 1;
};

struct HeteroStage {
  int begin = 0;
  int end = 0;
  int device_class = 0;
  int index_in_class = 0;  // Which of the class's capacities it uses.
  double seconds = 0;      // Compute + transfer in, at the class's rates.
};

enum class HeteroObjective {
  // The smallest bottleneck (slowest stage) with at most max_stages stages.
  kFastest,
  // The fewest stages; among those, the smallest bottleneck.
  kFewestThenFastest,
};

struct HeteroSplit {
  bool feasible = false;
  double bottleneck_seconds = 0;
  std::vector<HeteroStage> stages;  // In chain order.
  // When infeasible: the longest prefix [0, reachable) any sequence of
  // stages can cover; item `reachable` is the first that no plan places.
  int reachable = 0;
  // The search's state space (stages per class) was too large to try:
  // neither feasible nor reachable mean anything.
  bool too_large = false;
};

// Exact: among all splits of the chain into contiguous stages, each on a
// distinct logical device of a class that supports all its items and
// whose capacity (the class's devices used in capacities' order along the
// chain) holds its memory, with at most max_stages stages, returns one
// optimal for `objective`, up to a relative 1e-12 in the bottleneck.
// A stage [i, j) on class g costs (flops of i..j-1) × seconds_per_flop +
// cut_bytes[i] × seconds_per_byte.
//
// How: binary search on the bottleneck B; each probe is a reachability
// dynamic program over (stages used per class, prefix covered): from a
// covered prefix i, class g's next device covers every end j up to the
// last that is supported, fits and costs at most B (all three are
// monotone in j), marked with a difference array. O(S · n · G · log n)
// per probe for S = Π(devices per class + 1) states, G classes.
HeteroSplit HeteroChainSplit(const HeteroProblem& problem,
                             HeteroObjective objective);

}  // namespace glint

#endif  // GLINT_PARTITIONER_HETERO_SPLIT_H_
