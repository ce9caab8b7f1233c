#include "partitioner/cost_model.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_set.h"

namespace glint {
namespace {

uint64_t Aligned(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace

GraphCostModel::GraphCostModel(const Graph& graph) : graph_(graph) {
  const int n = static_cast<int>(graph.nodes.size());
  node_costs_.reserve(n);
  for (const auto& [name, info] : graph.values) {
    ValueFacts& f = values_[name];
    f.bytes = ValueBytes(info);
    f.initializer = graph.IsInitializer(name);
  }
  for (const ValueInfo& out : graph.outputs) values_[out.name].graph_output = true;
  for (int i = 0; i < n; ++i) {
    const Node& node = graph.nodes[i];
    node_costs_.push_back(EstimateOpCost(node, graph));
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      std::vector<int>& c = values_[in].consumers;
      if (c.empty() || c.back() != i) c.push_back(i);
    }
    for (const std::string& out : node.outputs) {
      if (!out.empty()) values_[out].producer = i;
    }
  }
  // Uses by index (values_ is not modified from here on, so pointers
  // into it stay valid).
  node_inputs_.resize(n);
  node_outputs_.resize(n);
  for (int i = 0; i < n; ++i) {
    const Node& node = graph.nodes[i];
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& in = node.inputs[k];
      if (in.empty()) continue;
      Use use;
      use.value = &values_.at(in);
      const std::vector<int>& c = use.value->consumers;
      auto it = std::lower_bound(c.begin(), c.end(), i);
      use.previous_use = it == c.begin() ? -1 : *(it - 1);
      for (size_t j = 0; j < k; ++j) use.repeat |= node.inputs[j] == in;
      node_inputs_[i].push_back(use);
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      Use use;
      use.value = &values_.at(out);
      node_outputs_[i].push_back(use);
    }
  }
  // cut_bytes_[i]: values with producer < i and some consumer >= i.
  std::vector<int64_t> delta(n + 2, 0);
  for (const auto& [name, f] : values_) {
    if (f.producer < 0 || f.consumers.empty()) continue;
    const int last = f.consumers.back();
    if (last <= f.producer) continue;
    delta[f.producer + 1] += static_cast<int64_t>(f.bytes);
    delta[last + 1] -= static_cast<int64_t>(f.bytes);
  }
  cut_bytes_.assign(n + 1, 0);
  int64_t running = 0;
  for (int i = 0; i <= n; ++i) {
    running += delta[i];
    cut_bytes_[i] = i == 0 ? 0 : static_cast<uint64_t>(running);
  }
}

SegmentCost GraphCostModel::Segment(int begin, int end) const {
  SegmentCost cost;
  if (begin >= end) return cost;
  const int len = end - begin;
  std::vector<int64_t> live(len + 1, 0);  // Difference array over positions.
  absl::flat_hash_set<absl::string_view> seen;
  auto live_range = [&](int from, int to, uint64_t bytes) {
    live[from - begin] += static_cast<int64_t>(bytes);
    live[to - begin + 1] -= static_cast<int64_t>(bytes);
  };
  for (int i = begin; i < end; ++i) {
    const Node& node = graph_.nodes[i];
    cost.flops += node_costs_[i].flops;
    for (const std::string& in : node.inputs) {
      if (in.empty() || !seen.insert(in).second) continue;
      const ValueFacts& f = values_.at(in);
      if (f.initializer) {
        cost.weight_bytes += Aligned(f.bytes);
        continue;
      }
      if (f.producer >= begin && f.producer < end) continue;  // Inside.
      // A segment input: copied in at the start into a buffer of the run's
      // own, held while the run is on the partition (the executor's
      // PartitionExecution), so live through the whole segment.
      cost.input_bytes += f.bytes;
      live_range(begin, end - 1, f.bytes);
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      const ValueFacts& f = values_.at(out);
      auto after = std::lower_bound(f.consumers.begin(), f.consumers.end(), end);
      const bool leaves = f.graph_output || after != f.consumers.end();
      int first_use = i, last_use = i;
      if (leaves) {
        // Written into a buffer of the run's own, held until the run ends:
        // live through the whole segment, as its inputs.
        first_use = begin;
        last_use = end - 1;
        cost.output_bytes += f.bytes;
      } else if (after != f.consumers.begin()) {
        last_use = std::max(i, *(after - 1));
      }
      live_range(first_use, last_use, f.bytes);
    }
  }
  int64_t running = 0, peak = 0;
  for (int p = 0; p < len; ++p) {
    running += live[p];
    peak = std::max(peak, running);
  }
  cost.peak_activation_bytes = static_cast<uint64_t>(peak);
  return cost;
}

uint64_t GraphCostModel::SegmentMemory(int begin, int end) const {
  if (begin >= end) return 0;
  const int len = end - begin;
  uint64_t weights = 0;
  std::vector<int64_t> live(len + 1, 0);
  auto live_range = [&](int from, int to, uint64_t bytes) {
    live[from - begin] += static_cast<int64_t>(bytes);
    live[to - begin + 1] -= static_cast<int64_t>(bytes);
  };
  for (int i = begin; i < end; ++i) {
    for (const Use& use : node_inputs_[i]) {
      // Seen before in the segment (Segment's `seen`): an earlier use here.
      if (use.repeat || use.previous_use >= begin) continue;
      const ValueFacts& f = *use.value;
      if (f.initializer) {
        weights += Aligned(f.bytes);
        continue;
      }
      if (f.producer >= begin && f.producer < end) continue;
      live_range(begin, end - 1, f.bytes);  // As in Segment.
    }
    for (const Use& use : node_outputs_[i]) {
      const ValueFacts& f = *use.value;
      auto after = std::lower_bound(f.consumers.begin(), f.consumers.end(), end);
      const bool leaves = f.graph_output || after != f.consumers.end();
      int first_use = i, last_use = i;
      if (leaves) {  // As in Segment.
        first_use = begin;
        last_use = end - 1;
      } else if (after != f.consumers.begin()) {
        last_use = std::max(i, *(after - 1));
      }
      live_range(first_use, last_use, f.bytes);
    }
  }
  int64_t running = 0, peak = 0;
  for (int p = 0; p < len; ++p) {
    running += live[p];
    peak = std::max(peak, running);
  }
  return weights + static_cast<uint64_t>(peak);
}

}  // namespace glint
