// The exact min-max split of a chain into contiguous stages, the heart of
// the load-balanced pipeline strategy.
#ifndef GLINT_PARTITIONER_LOAD_BALANCE_H_
#define GLINT_PARTITIONER_LOAD_BALANCE_H_

#include <vector>

namespace glint {

struct ChainSplit {
  double max_stage_cost = 0;
  std::vector<int> stage_starts;  // Ascending; the first is 0.
};

// Splits items 0..n-1 into at most `max_stages` contiguous stages
// minimising the most expensive stage, where a stage [i, j) costs
// sum(item_cost[i..j)) + cut_cost[i] (what entering the stage costs;
// cut_cost[0] is ignored as 0). Costs must be non-negative;
// cut_cost.size() == n. Optimal among all contiguous splits up to a
// relative 1e-12: a binary search on the answer whose feasibility test is
// itself exact (fewest stages under a bound, by dynamic programming over
// a Fenwick tree), O(n log n) per probe.
ChainSplit MinMaxContiguousSplit(const std::vector<double>& item_cost,
                                 const std::vector<double>& cut_cost,
                                 int max_stages);

}  // namespace glint

#endif  // GLINT_PARTITIONER_LOAD_BALANCE_H_
