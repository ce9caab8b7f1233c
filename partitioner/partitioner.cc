#include "partitioner/partitioner.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "partitioner/cost_model.h"
#include "partitioner/hetero_split.h"
#include "partitioner/load_balance.h"
#include "partitioner/plan_util.h"
#include "partitioner/validate.h"

namespace glint {
namespace {

using partitioner_internal::ClassName;
using partitioner_internal::Mib;
using partitioner_internal::Ms;
using partitioner_internal::Supports;
using partitioner_internal::TypeKey;

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
  // Per logical device: why it is where it is (`glint show`), and its
  // class (index into the planner's groups_).
  std::vector<std::string> reasons;
  std::vector<int> classes;
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
    GLINT_RETURN_IF_ERROR(CheckEveryOpRuns());
    PartitionStrategy strategy = options_.strategy;
    Assignment a;
    if (!options_.fixed_assignment.empty()) {
      GLINT_ASSIGN_OR_RETURN(a, PlanFixed());
      strategy = options_.strategy == PartitionStrategy::kAuto
                     ? PartitionStrategy::kUser
                     : options_.strategy;
    } else if (strategy == PartitionStrategy::kUser) {
      GLINT_ASSIGN_OR_RETURN(a, PlanUser());
    } else {
      if (strategy == PartitionStrategy::kAuto) {
        if (options_.plan_devices > 1) {
          strategy = PartitionStrategy::kLoadBalanced;
        } else {
          strategy = WholeFits() ? PartitionStrategy::kWhole
                                 : PartitionStrategy::kMemory;
        }
      }
      GLINT_ASSIGN_OR_RETURN(a, PlanBySearch(strategy));
    }
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

  // Logical devices one replica can have from class `g`, and all classes.
  int LogicalIn(int g) const {
    return static_cast<int>(groups_[g].devices.size()) / options_.replicas;
  }
  int TotalLogical() const {
    int n = 0;
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) n += LogicalIn(g);
    return n;
  }

  // The device logical device `k` of class `g` is planned for: the
  // smallest of the replicas' devices that will serve it (a class's
  // devices go out in order of free memory, `replicas` at a time).
  const DeviceInfo& ModelOf(int g, int k) const {
    const auto& devices = groups_[g].devices;
    const int index = std::min<int>((k + 1) * options_.replicas - 1,
                                    static_cast<int>(devices.size()) - 1);
    return devices[index];
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
    if (TotalLogical() < std::max(options_.plan_devices, 1)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the plan needs ", needed, " devices (plan_devices ",
          std::max(options_.plan_devices, 1), " x replicas ",
          options_.replicas, ") but the ", groups_.size(),
          " device classes give each replica only ", TotalLogical(),
          " (a logical device's replicas must be of one class)"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckEveryOpRuns() const {
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
    return absl::OkStatus();
  }

  // Whether one device of some class runs every node and holds it all.
  bool WholeFits() const {
    const uint64_t need = costs_.Segment(0, costs_.num_nodes()).memory_bytes();
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      if (LogicalIn(g) == 0 || need > ModelOf(g, 0).available_memory_bytes) {
        continue;
      }
      bool all = true;
      for (const Node& node : graph_.nodes) {
        all = all && Supports(groups_[g].devices[0], node);
      }
      if (all) return true;
    }
    return false;
  }

  // The most logical devices a searched strategy may use per replica.
  int MaxStages(PartitionStrategy strategy) const {
    if (strategy == PartitionStrategy::kWhole) return 1;
    return options_.plan_devices > 0 ? options_.plan_devices : TotalLogical();
  }

  // One search over capability, memory, device counts and speed together
  // (hetero_split.h): whole and memory want the fewest devices (then the
  // fastest such plan), load_balanced the smallest bottleneck.
  HeteroSplit Search(PartitionStrategy strategy) const {
    const int n = costs_.num_nodes();
    HeteroProblem problem;
    problem.item_flops.resize(n);
    problem.cut_bytes.resize(n);
    for (int i = 0; i < n; ++i) {
      problem.item_flops[i] = costs_.node_cost(i).flops;
      problem.cut_bytes[i] = static_cast<double>(costs_.cut_bytes()[i]);
    }
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      DeviceClassSpec& c = problem.classes.emplace_back();
      const DeviceInfo& d = groups_[g].devices[0];
      c.seconds_per_flop = 1.0 / Rate(d);
      c.seconds_per_byte = 1.0 / Bandwidth(d);
      for (int k = 0; k < LogicalIn(g); ++k) {
        c.capacities.push_back(ModelOf(g, k).available_memory_bytes);
      }
      c.supported.resize(n);
      for (int i = 0; i < n; ++i) c.supported[i] = Supports(d, graph_.nodes[i]);
    }
    problem.segment_memory = [this](int b, int e) {
      return costs_.SegmentMemory(b, e);
    };
    problem.max_stages = MaxStages(strategy);
    return HeteroChainSplit(problem, strategy == PartitionStrategy::kLoadBalanced
                                         ? HeteroObjective::kFastest
                                         : HeteroObjective::kFewestThenFastest);
  }

  absl::StatusOr<Assignment> PlanBySearch(PartitionStrategy strategy) {
    if (groups_.size() == 1) {
      // One class: the single-class strategies are exact and much faster
      // (the search must find, for every start, how far memory lets a
      // stage run: O(n · stage length) segment costings). Memory's greedy
      // longest prefix is the fewest stages; the min-max split ignores
      // memory, which cannot bind when the whole network fits the
      // smallest device it uses.
      primary_ = 0;
      const bool memory_free =
          costs_.Segment(0, costs_.num_nodes()).memory_bytes() <=
          ModelOf(0, std::max(0, std::min(MaxStages(strategy), LogicalIn(0)) -
                                     1))
              .available_memory_bytes;
      if (strategy != PartitionStrategy::kLoadBalanced || memory_free) {
        absl::StatusOr<Assignment> a = Plan(strategy);
        if (a.ok()) {
          a->classes.assign(a->models.size(), 0);
          a->reasons.assign(a->models.size(), "the only device class");
          return a;
        }
      }
    }
    const HeteroSplit split = Search(strategy);
    if (split.feasible) return FromSplit(split);
    // No plan gives each contiguous run its own device (or the search was
    // too large to try): the heuristic below lets runs share a device.
    absl::StatusOr<Assignment> shared = PlanSharingDevices(strategy);
    if (shared.ok() || split.too_large) return shared;
    return Diagnose(split, strategy);
  }

  Assignment FromSplit(const HeteroSplit& split) const {
    Assignment a;
    a.logical.assign(costs_.num_nodes(), 0);
    for (size_t s = 0; s < split.stages.size(); ++s) {
      const HeteroStage& stage = split.stages[s];
      for (int i = stage.begin; i < stage.end; ++i) {
        a.logical[i] = static_cast<int>(s);
      }
      a.models.push_back(ModelOf(stage.device_class, stage.index_in_class));
      a.classes.push_back(stage.device_class);
      a.reasons.push_back(StageReason(stage, split));
    }
    return a;
  }

  // Why a stage is on its class rather than another: the first reason
  // each other class is out (capability, memory, speed), or that its
  // devices are better used by other stages.
  std::string StageReason(const HeteroStage& stage,
                          const HeteroSplit& split) const {
    const SegmentCost cost = costs_.Segment(stage.begin, stage.end);
    std::vector<std::string> why;
    for (int h = 0; h < static_cast<int>(groups_.size()); ++h) {
      if (h == stage.device_class) continue;
      const DeviceInfo& d = groups_[h].devices[0];
      const std::string name = absl::StrCat("'", ClassName(d), "'");
      bool runs = true;
      for (int i = stage.begin; i < stage.end && runs; ++i) {
        if (!Supports(d, graph_.nodes[i])) {
          why.push_back(absl::StrCat("capability: ", name, " cannot run ",
                                     graph_.nodes[i].Describe()));
          runs = false;
        }
      }
      if (!runs) continue;
      if (LogicalIn(h) == 0 ||
          cost.memory_bytes() > ModelOf(h, 0).available_memory_bytes) {
        why.push_back(absl::StrCat(
            "memory: needs ", Mib(cost.memory_bytes()), ", ", name,
            " has at most ",
            LogicalIn(h) == 0 ? Mib(0)
                              : Mib(ModelOf(h, 0).available_memory_bytes)));
        continue;
      }
      const double there =
          cost.flops / Rate(d) +
          (stage.begin > 0 ? static_cast<double>(cost.input_bytes) / Bandwidth(d)
                           : 0);
      if (there > stage.seconds) {
        why.push_back(absl::StrCat("speed: ", Ms(stage.seconds), " here, ",
                                   Ms(there), " on ", name));
      } else {
        why.push_back(absl::StrCat("balance: ", name,
                                   "'s devices serve other stages (",
                                   Ms(there), " there)"));
      }
    }
    if (why.empty()) {
      return absl::StrCat("the only device class; stage ", Ms(stage.seconds),
                          ", bottleneck ", Ms(split.bottleneck_seconds));
    }
    return absl::StrCat(absl::StrJoin(why, "; "), "; bottleneck ",
                        Ms(split.bottleneck_seconds));
  }

  // No plan exists: name the first node none can place and, per class,
  // the constraint that stops it there.
  absl::Status Diagnose(const HeteroSplit& split,
                        PartitionStrategy strategy) const {
    const int at = std::min(split.reachable, costs_.num_nodes() - 1);
    const Node& node = graph_.nodes[at];
    const SegmentCost alone = costs_.Segment(at, at + 1);
    std::vector<std::string> why;
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      const DeviceInfo& d = groups_[g].devices[0];
      const std::string name = absl::StrCat("'", ClassName(d), "'");
      if (!Supports(d, node)) {
        why.push_back(absl::StrCat(name, " does not run op '", node.op_type,
                                   "'"));
      } else if (LogicalIn(g) == 0) {
        why.push_back(absl::StrCat(name, " has ", groups_[g].devices.size(),
                                   " devices, fewer than the ",
                                   options_.replicas, " replicas"));
      } else if (alone.memory_bytes() >
                 ModelOf(g, 0).available_memory_bytes) {
        const DeviceInfo& m = ModelOf(g, 0);
        why.push_back(absl::StrCat(
            name, ": the node alone needs ", Mib(alone.memory_bytes()), ", ",
            m.name, " has ", Mib(m.available_memory_bytes), " free (",
            Mib(alone.memory_bytes() - m.available_memory_bytes),
            " missing)"));
      } else {
        why.push_back(absl::StrCat(
            name, ": its ", LogicalIn(g),
            " devices per replica are full or taken by the nodes before it"));
      }
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "no plan places ", node.Describe(), " (node ", at + 1, " of ",
        costs_.num_nodes(), "; strategy ", PartitionStrategyName(strategy),
        ", at most ", MaxStages(strategy), " devices per replica, network ",
        Mib(costs_.Segment(0, costs_.num_nodes()).memory_bytes()),
        " in all): ", absl::StrJoin(why, "; ")));
  }

  // Glint's former heterogeneous plan, kept for plans whose contiguous
  // runs must share devices (ops alternating between classes on fewer
  // devices than runs): one class carries the strategy's plan and the
  // nodes it cannot run go to one device per capable class. Each class is
  // tried as the carrier, those running the most nodes first.
  absl::StatusOr<Assignment> PlanSharingDevices(PartitionStrategy strategy) {
    std::vector<std::pair<int, int>> order;  // (-nodes it runs, class)
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      int count = 0;
      for (const Node& node : graph_.nodes) {
        count += Supports(groups_[g].devices[0], node) ? 1 : 0;
      }
      order.push_back({-count, g});
    }
    std::sort(order.begin(), order.end());
    absl::Status first = absl::OkStatus();
    for (const auto& [count, g] : order) {
      if (LogicalIn(g) == 0) continue;
      primary_ = g;
      absl::StatusOr<Assignment> a = Plan(strategy);
      absl::Status s = a.status();
      if (s.ok()) {
        a->classes.assign(a->models.size(), g);
        a->reasons.assign(a->models.size(),
                          absl::StrCat("carrier class of a plan whose device "
                                       "runs alternate between classes"));
        s = PlaceUnsupported(*a);
      }
      if (s.ok()) {
        Dag dag = BuildDag(*a);
        s = ValidateDag(dag, TotalDevices());
        if (s.ok()) s = CheckGroupCounts(dag);
      }
      if (s.ok()) return a;
      if (first.ok()) first = s;
    }
    return first.ok() ? absl::ResourceExhaustedError("no device class can "
                                                     "serve every replica")
                      : first;
  }

  // Logical devices one replica can have from the carrier class.
  int UsableLogical() const {
    return static_cast<int>(groups_[primary_].devices.size()) /
           options_.replicas;
  }

  // The device logical device `l` of the carrier class is planned for.
  const DeviceInfo& Model(int l) const { return ModelOf(primary_, l); }

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
    const int usable = TotalLogical();
    for (int l : fixed) {
      if (l < 0 || l >= usable) {
        return absl::InvalidArgumentError(
            absl::StrCat("the plan to replay names logical device ", l, " but ",
                         usable, " devices are available to each replica"));
      }
    }
    Assignment a;
    a.logical = fixed;
    GLINT_RETURN_IF_ERROR(AssignClasses(a, "replayed plan"));
    return a;
  }

  absl::StatusOr<Assignment> PlanUser() const {
    if (options_.user_plan.empty()) {
      return absl::InvalidArgumentError(
          "the user strategy needs a user plan (node pattern -> device)");
    }
    const int usable = TotalLogical();
    for (const UserPlacement& rule : options_.user_plan) {
      if (rule.logical_device < 0 || rule.logical_device >= usable) {
        return absl::InvalidArgumentError(absl::StrCat(
            "user plan rule '", rule.pattern, "' names logical device ",
            rule.logical_device, " but ", usable,
            " devices are available to each replica"));
      }
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
    GLINT_RETURN_IF_ERROR(AssignClasses(a, "user plan"));
    return a;
  }

  // For plans that name logical devices without classes (user plans,
  // replayed assignments): renumbers the logical devices that get nodes
  // 0, 1... in order (one that gets none takes no device), then, the
  // heaviest first (as the search gives the fast classes the heavy
  // stages), gives each a device of the class that runs the most of its
  // nodes, then has room for them, then is fastest. Nodes its class
  // cannot run move to a device of a capable class (PlaceUnsupported).
  absl::Status AssignClasses(Assignment& a, absl::string_view why) const {
    std::map<int, int> renumber;
    for (int l : a.logical) renumber.emplace(l, 0);
    int next = 0;
    for (auto& [l, to] : renumber) to = next++;
    for (int& l : a.logical) l = renumber[l];
    const int n = costs_.num_nodes();
    std::vector<uint64_t> need(next, 0);
    std::vector<double> flops(next, 0);
    for (int b = 0; b < n;) {
      int e = b + 1;
      while (e < n && a.logical[e] == a.logical[b]) ++e;
      const SegmentCost cost = costs_.Segment(b, e);
      need[a.logical[b]] += cost.memory_bytes();
      flops[a.logical[b]] += cost.flops;
      b = e;
    }
    std::vector<int> order(next);
    for (int l = 0; l < next; ++l) order[l] = l;
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return flops[x] > flops[y]; });
    std::vector<int> used(groups_.size(), 0);
    a.models.resize(next);
    a.classes.resize(next);
    a.reasons.resize(next);
    for (int l : order) {
      int best = -1;
      std::tuple<int, bool, double, uint64_t> best_key;
      for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
        if (used[g] >= LogicalIn(g)) continue;
        const DeviceInfo& model = ModelOf(g, used[g]);
        int runs = 0;
        for (int i = 0; i < n; ++i) {
          runs += a.logical[i] == l && Supports(model, graph_.nodes[i]);
        }
        const std::tuple<int, bool, double, uint64_t> key{
            runs, need[l] <= model.available_memory_bytes, Rate(model),
            model.available_memory_bytes};
        if (best < 0 || key > best_key) {
          best = g;
          best_key = key;
        }
      }
      if (best < 0) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the plan names ", next, " logical devices but the devices give "
            "each replica only ", TotalLogical()));
      }
      a.models[l] = ModelOf(best, used[best]++);
      a.classes[l] = best;
      a.reasons[l] = std::string(why);
    }
    return PlaceUnsupported(a);
  }

  // Nodes their logical device's class cannot run go to one logical device
  // per capable class (the first capable class in class order).
  absl::Status PlaceUnsupported(Assignment& a) const {
    absl::flat_hash_map<int, int> logical_of_group;
    for (int i = 0; i < costs_.num_nodes(); ++i) {
      const Node& node = graph_.nodes[i];
      if (Supports(a.models[a.logical[i]], node)) continue;
      const std::string carrier = ClassName(a.models[a.logical[i]]);
      int group = -1;
      for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
        if (Supports(groups_[g].devices[0], node)) {
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
        a.models.push_back(ModelOf(group, 0));
        a.classes.push_back(group);
        a.reasons.push_back(absl::StrCat("capability: '", carrier,
                                         "' cannot run ", node.Describe()));
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
      node.device_class = ClassName(model);
      if (node.logical_device < static_cast<int>(a.reasons.size())) {
        node.placement_reason = a.reasons[node.logical_device];
      }
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
    std::vector<double> busy(dag.num_logical_devices, 0);
    for (const DagNode& node : dag.nodes) {
      busy[node.logical_device] += node.estimated_seconds;
    }
    for (double t : busy) {
      dag.estimated_bottleneck_seconds =
          std::max(dag.estimated_bottleneck_seconds, t);
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
