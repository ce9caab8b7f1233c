#include "partitioner/partitioner.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "partitioner/cost_model.h"
#include "partitioner/load_balance.h"
#include "partitioner/plan_util.h"
#include "partitioner/validate.h"

namespace glint {
namespace {

using partitioner_internal::Mib;
using partitioner_internal::Supports;

// Devices of one type with the same unsupported ops are interchangeable.
std::string TypeKey(const DeviceInfo& device) {
  std::vector<std::string> ops = device.unsupported_ops;
  std::sort(ops.begin(), ops.end());
  return absl::StrCat(device.type, "|", absl::StrJoin(ops, "+"));
}

double Rate(const DeviceInfo& d) {
  return d.compute_flops > 0 ? d.compute_flops : kNominalFlops;
}
double Bandwidth(const DeviceInfo& d) {
  return d.link_bytes_per_second > 0 ? d.link_bytes_per_second
                                     : kNominalLinkBytesPerSecond;
}

// A group of interchangeable devices, most free memory first.
struct DeviceGroup {
  std::string key;
  std::vector<DeviceInfo> devices;
};

// The node → logical device assignment a strategy produces, and the device
// each logical device was planned for.
struct Assignment {
  std::vector<int> logical;  // Per node.
  std::vector<DeviceInfo> models;
};

class Planner {
 public:
  Planner(const Graph& graph, const std::vector<DeviceInfo>& devices,
          const PartitionOptions& options)
      : graph_(graph), options_(options), costs_(graph) {
    std::map<std::string, DeviceGroup> groups;
    for (const DeviceInfo& d : devices) {
      DeviceGroup& g = groups[TypeKey(d)];
      g.key = TypeKey(d);
      g.devices.push_back(d);
    }
    for (auto& [key, g] : groups) {
      std::stable_sort(g.devices.begin(), g.devices.end(),
                       [](const DeviceInfo& a, const DeviceInfo& b) {
                         return a.available_memory_bytes >
                                b.available_memory_bytes;
                       });
      groups_.push_back(std::move(g));
    }
  }

  absl::StatusOr<Dag> Run() {
    GLINT_RETURN_IF_ERROR(CheckOptions());
    GLINT_RETURN_IF_ERROR(ChoosePrimaryGroup());
    PartitionStrategy strategy = options_.strategy;
    if (strategy == PartitionStrategy::kAuto) {
      if (options_.plan_devices > 1) {
        strategy = PartitionStrategy::kLoadBalanced;
      } else {
        const SegmentCost whole = costs_.Segment(0, costs_.num_nodes());
        strategy = whole.memory_bytes() <= Model(0).available_memory_bytes
                       ? PartitionStrategy::kWhole
                       : PartitionStrategy::kMemory;
      }
    }
    Assignment a;
    if (!options_.fixed_assignment.empty()) {
      GLINT_ASSIGN_OR_RETURN(a, PlanFixed());
      strategy = options_.strategy == PartitionStrategy::kAuto
                     ? PartitionStrategy::kUser
                     : options_.strategy;
    } else {
      GLINT_ASSIGN_OR_RETURN(a, Plan(strategy));
    }
    GLINT_RETURN_IF_ERROR(PlaceUnsupported(a));
    Dag dag = BuildDag(a);
    dag.strategy = std::string(PartitionStrategyName(strategy));
    GLINT_RETURN_IF_ERROR(ValidateDag(dag, TotalDevices()));
    GLINT_RETURN_IF_ERROR(CheckGroupCounts(dag));
    return dag;
  }

 private:
  int TotalDevices() const {
    int n = 0;
    for (const DeviceGroup& g : groups_) n += static_cast<int>(g.devices.size());
    return n;
  }

  absl::Status CheckOptions() const {
    if (options_.replicas < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replicas must be at least 1, got ", options_.replicas));
    }
    if (options_.plan_devices < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan_devices must not be negative, got ", options_.plan_devices));
    }
    if (groups_.empty()) {
      return absl::ResourceExhaustedError("there are no devices");
    }
    // Both come from the wire (AddNetworkOptions) as any non-negative int32:
    // their product needs 64 bits.
    const int64_t needed =
        int64_t{std::max(options_.plan_devices, 1)} * options_.replicas;
    if (needed > TotalDevices()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the plan needs ", needed, " devices (plan_devices ",
          std::max(options_.plan_devices, 1), " x replicas ",
          options_.replicas, ") but only ", TotalDevices(), " exist"));
    }
    return absl::OkStatus();
  }

  // The group that can run the most nodes (then: most free memory) carries
  // the plan; nodes it cannot run go to other groups.
  absl::Status ChoosePrimaryGroup() {
    for (const Node& node : graph_.nodes) {
      bool any = false;
      for (const DeviceGroup& g : groups_) {
        any = any || Supports(g.devices[0], node);
      }
      if (!any) {
        return absl::UnimplementedError(
            absl::StrCat("op '", node.op_type, "' (node '", node.name,
                         "') is not supported by any device"));
      }
    }
    int best = 0;
    int best_count = -1;
    for (int gi = 0; gi < static_cast<int>(groups_.size()); ++gi) {
      int count = 0;
      for (const Node& node : graph_.nodes) {
        count += Supports(groups_[gi].devices[0], node) ? 1 : 0;
      }
      const bool better =
          count > best_count ||
          (count == best_count &&
           groups_[gi].devices[0].available_memory_bytes >
               groups_[best].devices[0].available_memory_bytes);
      if (better) {
        best = gi;
        best_count = count;
      }
    }
    primary_ = best;
    return absl::OkStatus();
  }

  // Logical devices one replica can have from the primary group.
  int UsableLogical() const {
    return static_cast<int>(groups_[primary_].devices.size()) /
           options_.replicas;
  }

  // The device logical device `l` is planned for: the smallest of the
  // replicas' devices that will serve it (devices go out in order of free
  // memory, `replicas` at a time).
  const DeviceInfo& Model(int l) const {
    const auto& devices = groups_[primary_].devices;
    const int index = std::min<int>((l + 1) * options_.replicas - 1,
                                    static_cast<int>(devices.size()) - 1);
    return devices[index];
  }

  absl::StatusOr<Assignment> PlanWhole() const {
    const SegmentCost whole = costs_.Segment(0, costs_.num_nodes());
    if (whole.memory_bytes() > Model(0).available_memory_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the network needs ", Mib(whole.memory_bytes()),
          " (weights ", Mib(whole.weight_bytes), " + peak activations ",
          Mib(whole.peak_activation_bytes), ") but the device with the most "
          "free memory, ", Model(0).name, ", has ",
          Mib(Model(0).available_memory_bytes)));
    }
    Assignment a;
    a.logical.assign(costs_.num_nodes(), 0);
    a.models = {Model(0)};
    return a;
  }

  absl::StatusOr<Assignment> PlanMemory() const {
    const int n = costs_.num_nodes();
    const int limit = options_.plan_devices > 0 ? options_.plan_devices
                                                : UsableLogical();
    Assignment a;
    a.logical.assign(n, 0);
    int begin = 0;
    for (int l = 0; begin < n; ++l) {
      if (l >= limit) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the network does not fit in ", limit,
            " devices even split by memory (", n - begin,
            " nodes left after filling them); it needs ",
            Mib(costs_.Segment(0, n).memory_bytes()), " in all"));
      }
      const uint64_t capacity = Model(l).available_memory_bytes;
      // Memory grows with the segment's end: binary search the longest
      // prefix that fits (greedy longest is optimal for the fewest parts).
      int lo = begin, hi = n;  // Fits [begin, lo); the answer is in [lo, hi].
      while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (costs_.Segment(begin, mid).memory_bytes() <= capacity) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      if (lo == begin) {
        const Node& node = graph_.nodes[begin];
        return absl::ResourceExhaustedError(absl::StrCat(
            node.Describe(), " alone needs ",
            Mib(costs_.Segment(begin, begin + 1).memory_bytes()),
            ", more than ", Model(l).name, " has free (", Mib(capacity),
            ")"));
      }
      for (int i = begin; i < lo; ++i) a.logical[i] = l;
      a.models.push_back(Model(l));
      begin = lo;
    }
    return a;
  }

  absl::StatusOr<Assignment> PlanLoadBalanced() const {
    const int n = costs_.num_nodes();
    const int stages =
        options_.plan_devices > 0 ? options_.plan_devices : UsableLogical();
    if (stages > UsableLogical()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the plan needs ", int64_t{stages} * options_.replicas,
          " devices of type ",
          groups_[primary_].devices[0].type, " but only ",
          groups_[primary_].devices.size(), " exist"));
    }
    // Homogeneous stages: plan with the slowest rates among them.
    double rate = Rate(Model(0)), bandwidth = Bandwidth(Model(0));
    for (int l = 1; l < stages; ++l) {
      rate = std::min(rate, Rate(Model(l)));
      bandwidth = std::min(bandwidth, Bandwidth(Model(l)));
    }
    std::vector<double> item(n), cut(n);
    for (int i = 0; i < n; ++i) {
      item[i] = costs_.node_cost(i).flops / rate;
      cut[i] = static_cast<double>(costs_.cut_bytes()[i]) / bandwidth;
    }
    const ChainSplit split = MinMaxContiguousSplit(item, cut, stages);
    Assignment a;
    a.logical.assign(n, 0);
    for (size_t s = 0; s < split.stage_starts.size(); ++s) {
      const int b = split.stage_starts[s];
      const int e =
          s + 1 < split.stage_starts.size() ? split.stage_starts[s + 1] : n;
      for (int i = b; i < e; ++i) a.logical[i] = static_cast<int>(s);
      a.models.push_back(Model(static_cast<int>(s)));
    }
    return a;
  }

  absl::StatusOr<Assignment> Plan(PartitionStrategy strategy) const {
    switch (strategy) {
      case PartitionStrategy::kWhole:
        return PlanWhole();
      case PartitionStrategy::kMemory:
        return PlanMemory();
      case PartitionStrategy::kLoadBalanced:
        return PlanLoadBalanced();
      case PartitionStrategy::kUser:
        return PlanUser();
      case PartitionStrategy::kAuto:
        break;
    }
    return absl::InternalError("unresolved strategy");
  }

  absl::StatusOr<Assignment> PlanFixed() const {
    const std::vector<int>& fixed = options_.fixed_assignment;
    if (static_cast<int>(fixed.size()) != costs_.num_nodes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the plan to replay assigns ", fixed.size(),
                       " nodes; the graph has ", costs_.num_nodes()));
    }
    const int usable = UsableLogical();
    Assignment a;
    int highest = 0;
    for (int l : fixed) {
      if (l < 0 || l >= usable) {
        return absl::InvalidArgumentError(
            absl::StrCat("the plan to replay names logical device ", l, " but ",
                         usable, " devices are available to each replica"));
      }
      highest = std::max(highest, l);
    }
    a.logical = fixed;
    for (int l = 0; l <= highest; ++l) a.models.push_back(Model(l));
    return a;
  }

  absl::StatusOr<Assignment> PlanUser() const {
    if (options_.user_plan.empty()) {
      return absl::InvalidArgumentError(
          "the user strategy needs a user plan (node pattern -> device)");
    }
    const int usable = UsableLogical();
    int highest = 0;
    for (const UserPlacement& rule : options_.user_plan) {
      if (rule.logical_device < 0 || rule.logical_device >= usable) {
        return absl::InvalidArgumentError(absl::StrCat(
            "user plan rule '", rule.pattern, "' names logical device ",
            rule.logical_device, " but ", usable,
            " devices are available to each replica"));
      }
      highest = std::max(highest, rule.logical_device);
    }
    Assignment a;
    for (const Node& node : graph_.nodes) {
      int device = -1;
      for (const UserPlacement& rule : options_.user_plan) {
        if (rule.pattern == node.name ||
            fnmatch(rule.pattern.c_str(), node.name.c_str(), 0) == 0) {
          device = rule.logical_device;
          break;
        }
      }
      if (device < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the user plan places no rule on ", node.Describe(),
            "; every node must match a pattern"));
      }
      a.logical.push_back(device);
    }
    for (int l = 0; l <= highest; ++l) a.models.push_back(Model(l));
    return a;
  }

  // Heterogeneous placement: nodes the primary type cannot run go to one
  // logical device per capable secondary group.
  absl::Status PlaceUnsupported(Assignment& a) const {
    absl::flat_hash_map<int, int> logical_of_group;
    for (int i = 0; i < costs_.num_nodes(); ++i) {
      const Node& node = graph_.nodes[i];
      if (Supports(groups_[primary_].devices[0], node)) continue;
      int group = -1;
      for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
        if (g != primary_ && Supports(groups_[g].devices[0], node)) {
          group = g;
          break;
        }
      }
      if (group < 0) {
        return absl::UnimplementedError(
            absl::StrCat("op '", node.op_type, "' (node '", node.name,
                         "') is not supported by any device"));
      }
      auto it = logical_of_group.find(group);
      if (it == logical_of_group.end()) {
        if (static_cast<int>(groups_[group].devices.size()) <
            options_.replicas) {
          return absl::ResourceExhaustedError(absl::StrCat(
              node.Describe(), " needs a device of type '",
              groups_[group].devices[0].type, "' per replica: ",
              options_.replicas, " needed, ", groups_[group].devices.size(),
              " exist"));
        }
        it = logical_of_group
                 .emplace(group, static_cast<int>(a.models.size()))
                 .first;
        a.models.push_back(
            groups_[group].devices[options_.replicas - 1]);
      }
      a.logical[i] = it->second;
    }
    return absl::OkStatus();
  }

  Dag BuildDag(const Assignment& a) const {
    Dag dag;
    dag.inputs = graph_.inputs;
    dag.outputs = graph_.outputs;
    for (const ValueInfo& out : graph_.outputs) {
      auto it = graph_.initializers.find(out.name);
      if (it != graph_.initializers.end()) {
        dag.constant_outputs.emplace(out.name, it->second);
      }
    }
    dag.replicas = options_.replicas;
    dag.assignment = a.logical;
    dag.num_logical_devices = static_cast<int>(a.models.size());
    dag.logical_devices = a.models;
    const int n = costs_.num_nodes();
    absl::flat_hash_map<std::string, int> producer;  // value → partition.
    for (int b = 0; b < n;) {
      int e = b + 1;
      while (e < n && a.logical[e] == a.logical[b]) ++e;
      DagNode node;
      node.name = absl::StrCat("p", dag.nodes.size());
      for (int i = b; i < e; ++i) node.graph_nodes.push_back(i);
      node.function = b == 0 && e == n ? graph_ : graph_.Subgraph(node.graph_nodes);
      node.logical_device = a.logical[b];
      const SegmentCost cost = costs_.Segment(b, e);
      node.flops = cost.flops;
      node.weight_bytes = cost.weight_bytes;
      node.memory_bytes = cost.memory_bytes();
      node.input_bytes = cost.input_bytes;
      const DeviceInfo& model = a.models[node.logical_device];
      node.estimated_seconds =
          cost.flops / Rate(model) +
          static_cast<double>(cost.input_bytes) / Bandwidth(model);
      const int index = static_cast<int>(dag.nodes.size());
      for (const ValueInfo& in : node.function.inputs) {
        auto it = producer.find(in.name);
        if (it == producer.end()) continue;  // A network input.
        if (std::find(node.parents.begin(), node.parents.end(), it->second) ==
            node.parents.end()) {
          node.parents.push_back(it->second);
          dag.nodes[it->second].children.push_back(index);
        }
      }
      for (const ValueInfo& out : node.function.outputs) {
        producer.emplace(out.name, index);
      }
      dag.nodes.push_back(std::move(node));
      b = e;
    }
    return dag;
  }

  // Each group must have (its logical devices) × replicas devices.
  absl::Status CheckGroupCounts(const Dag& dag) const {
    std::map<std::string, int> needed;
    for (const DeviceInfo& model : dag.logical_devices) {
      needed[TypeKey(model)] += dag.replicas;
    }
    for (const auto& [key, count] : needed) {
      for (const DeviceGroup& g : groups_) {
        if (g.key == key && count > static_cast<int>(g.devices.size())) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "the plan needs ", count, " devices of type '",
              g.devices[0].type, "' but only ", g.devices.size(), " exist"));
        }
      }
    }
    return absl::OkStatus();
  }

  const Graph& graph_;
  const PartitionOptions& options_;
  const GraphCostModel costs_;
  std::vector<DeviceGroup> groups_;
  int primary_ = 0;
};

}  // namespace

absl::StatusOr<Dag> Partition(const Graph& graph,
                              const std::vector<DeviceInfo>& devices,
                              const PartitionOptions& options) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("no devices to partition onto");
  }
  return Planner(graph, devices, options).Run();
}

}  // namespace glint
