// libFuzzer target for user placement plans (PartitionStrategy::kUser): a
// fixed small graph is partitioned over two or three devices by patterns
// and logical devices taken from the input. Partition must return a status
// or a valid Dag that honours the plan.
//
// The input is text, one directive per line, like the CLI's --place:
//   PATTERN=DEVICE      a rule (glob with * ? [...]; DEVICE any integer)
//   @devices=N          2 or 3 devices (default 2)
//   @replicas=N         PartitionOptions::replicas (default 1, any integer)
//   @plan_devices=N     PartitionOptions::plan_devices (default 0, any
//                       integer; the user strategy ignores it, the option
//                       checks do not)
//   @memory=BYTES       free memory of each device (default 1 GiB)
//   @unsupported=OP     the last device is of another type lacking OP
// Inputs that do not parse are skipped.
#include <fnmatch.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/device_info.h"
#include "core/graph.h"
#include "fuzz/fuzz_check.h"
#include "partitioner/partitioner.h"

namespace glint {
namespace {

ValueInfo F32(const std::string& name, Shape shape) {
  return ValueInfo{name, DType::kFloat32, std::move(shape)};
}

// x[1, 16] -> stem/mm -> stem/relu -+-> left/mm -> left/relu ---+-> join/add
//                                   +-> right/mm -> right/sigmoid +
// join/add -> head/mm -> head/softmax -> y; right/sigmoid's r2 is also an
// output. A branch, a join and shared names give patterns something to
// split: partitions with two parents, values crossing several borders.
Graph MakeGraph() {
  Graph g;
  g.name = "fuzz";
  g.opset_version = 13;
  const int64_t d = 16;
  g.inputs = {F32("x", Shape({1, d}))};
  g.values["x"] = g.inputs[0];
  for (const char* w : {"w0", "w1", "w2", "w3"}) {
    g.initializers[w] = *Tensor::Create(DType::kFloat32, Shape({d, d}));
    g.values[w] = F32(w, Shape({d, d}));
  }
  for (const char* v : {"h0", "a0", "l1", "l2", "r1", "r2", "s", "z", "y"}) {
    g.values[v] = F32(v, Shape({1, d}));
  }
  g.nodes = {
      Node{"stem/mm", "MatMul", "", {"x", "w0"}, {"h0"}, {}},
      Node{"stem/relu", "Relu", "", {"h0"}, {"a0"}, {}},
      Node{"left/mm", "MatMul", "", {"a0", "w1"}, {"l1"}, {}},
      Node{"left/relu", "Relu", "", {"l1"}, {"l2"}, {}},
      Node{"right/mm", "MatMul", "", {"a0", "w2"}, {"r1"}, {}},
      Node{"right/sigmoid", "Sigmoid", "", {"r1"}, {"r2"}, {}},
      Node{"join/add", "Add", "", {"l2", "r2"}, {"s"}, {}},
      Node{"head/mm", "MatMul", "", {"s", "w3"}, {"z"}, {}},
      Node{"head/softmax", "Softmax", "", {"z"}, {"y"}, {}},
  };
  g.outputs = {g.values["y"], g.values["r2"]};
  return g;
}

const Graph& TheGraph() {
  static const Graph* graph = [] {
    auto* g = new Graph(MakeGraph());
    absl::Status s = g->Validate();
    FUZZ_CHECK(s.ok(), s.ToString());
    return g;
  }();
  return *graph;
}

struct Input {
  int devices = 2;
  uint64_t memory = kGiB;
  std::string unsupported;
  PartitionOptions options;
};

bool ParseInput(absl::string_view text, Input* in) {
  in->options.strategy = PartitionStrategy::kUser;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    std::vector<absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) return false;
    if (kv[0] == "@devices") {
      if (!absl::SimpleAtoi(kv[1], &in->devices)) return false;
      if (in->devices != 2 && in->devices != 3) return false;
    } else if (kv[0] == "@replicas") {
      if (!absl::SimpleAtoi(kv[1], &in->options.replicas)) return false;
    } else if (kv[0] == "@plan_devices") {
      if (!absl::SimpleAtoi(kv[1], &in->options.plan_devices)) return false;
    } else if (kv[0] == "@memory") {
      if (!absl::SimpleAtoi(kv[1], &in->memory)) return false;
    } else if (kv[0] == "@unsupported") {
      in->unsupported = std::string(kv[1]);
    } else {
      int device = 0;
      if (!absl::SimpleAtoi(kv[1], &device)) return false;
      in->options.user_plan.push_back({std::string(kv[0]), device});
    }
  }
  return true;
}

std::vector<DeviceInfo> Devices(const Input& in) {
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < in.devices; ++i) {
    DeviceInfo d;
    d.id = i;
    d.type = "sim";
    if (!in.unsupported.empty() && i + 1 == in.devices) {
      d.type = "other";
      d.unsupported_ops = {in.unsupported};
    }
    d.name = absl::StrCat(d.type, ":", i);
    d.memory_bytes = in.memory;
    d.available_memory_bytes = in.memory;
    devices.push_back(std::move(d));
  }
  return devices;
}

// The logical device the plan gives `node`: its first matching rule's.
int RuleDevice(const PartitionOptions& options, const Node& node) {
  for (const UserPlacement& rule : options.user_plan) {
    if (rule.pattern == node.name ||
        fnmatch(rule.pattern.c_str(), node.name.c_str(), 0) == 0) {
      return rule.logical_device;
    }
  }
  return -1;
}

}  // namespace
}  // namespace glint

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glint;  // NOLINT: a fuzz entry point outside the namespace.
  Input in;
  if (!ParseInput(absl::string_view(reinterpret_cast<const char*>(data), size),
                  &in)) {
    return 0;
  }
  const Graph& graph = TheGraph();
  const std::vector<DeviceInfo> devices = Devices(in);
  absl::StatusOr<Dag> dag = Partition(graph, devices, in.options);
  if (!dag.ok()) {
    FUZZ_CHECK(!dag.status().message().empty(), "an error says why");
    return 0;
  }

  absl::Status valid = ValidateDag(*dag, static_cast<int>(devices.size()));
  FUZZ_CHECK(valid.ok(), valid.ToString());
  FUZZ_CHECK(dag->strategy == "user", dag->strategy);
  FUZZ_CHECK(dag->replicas == in.options.replicas, "replicas as asked");
  // Partitions cover the graph's nodes once, in order; each sits on the
  // logical device the plan gives its nodes, renumbered 0, 1... over the
  // devices the plan uses (one that gets no node takes no device). A node
  // moved off its rule's device for @unsupported would need one device of
  // the complete type more than the plan leaves, so success never moves.
  std::set<int> used;
  for (const Node& node : graph.nodes) used.insert(RuleDevice(in.options, node));
  auto rank = [&](int rule_device) {
    return static_cast<int>(std::distance(used.begin(), used.find(rule_device)));
  };
  FUZZ_CHECK(dag->num_logical_devices == static_cast<int>(used.size()),
             absl::StrCat(dag->num_logical_devices, " logical devices for ",
                          used.size(), " used by the plan"));
  int next = 0;
  for (const DagNode& p : dag->nodes) {
    FUZZ_CHECK(!p.graph_nodes.empty(), p.name + " is empty");
    for (int i : p.graph_nodes) {
      FUZZ_CHECK(i == next, absl::StrCat(p.name, " holds node ", i,
                                         ", expected ", next));
      ++next;
      const Node& node = graph.nodes[i];
      FUZZ_CHECK(rank(RuleDevice(in.options, node)) == p.logical_device,
                 absl::StrCat(node.Describe(), " is on logical device ",
                              p.logical_device, ", the plan says ",
                              RuleDevice(in.options, node), " (rank ",
                              rank(RuleDevice(in.options, node)), ")"));
    }
  }
  FUZZ_CHECK(next == static_cast<int>(graph.nodes.size()),
             "every node is placed");
  FUZZ_CHECK(!DagToDot(*dag, "fuzz").empty(), "DOT is written");
  return 0;
}
