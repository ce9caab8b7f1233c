// Partitioning time (issue 4): generated residual-MLP graphs of about 100,
// 1,000 and 10,000 nodes split over 8 devices, load-balanced and
// memory-constrained. The baseline, measured in the same run, is one pass
// of Graph::Validate() over the same graph (a linear walk of its values):
// the ratio shows how far partitioning is from a single pass, and
// time / (n log n) shows the growth. Prints only; asserts nothing.
//
// Heterogeneous fleets (issue 19): 2 fast devices lacking Tanh and Softmax
// (which the graph has once each, mid-way and at the end) + 2 slow
// complete ones, and 2 fast + 2 slow with the same ops. Printed: planning
// time and the estimated bottleneck of the plan against today's (before
// issue 19) plan: with ops missing, the class running every op carried the
// whole plan (the 2 slow devices); with the same ops, all 4 devices were one
// group planned at the slowest rate.
//
//   bazel run //bench:partition_bench
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "partitioner/partitioner.h"

namespace glint {
namespace {

// Blocks of MatMul → Relu → Add(skip): 3 nodes per block, [1, 64] tensors,
// [64, 64] weights.
Graph ResidualMlp(int blocks) {
  Graph g;
  g.opset_version = 13;
  auto f32 = [](const std::string& n, Shape s) {
    return ValueInfo{n, DType::kFloat32, std::move(s)};
  };
  const Shape act({1, 64});
  g.inputs = {f32("x", act)};
  g.values["x"] = g.inputs[0];
  std::string prev = "x";
  for (int b = 0; b < blocks; ++b) {
    const std::string id = std::to_string(b);
    const std::string w = "w" + id, h = "h" + id, r = "r" + id, o = "o" + id;
    g.initializers[w] = *Tensor::Create(DType::kFloat32, Shape({64, 64}));
    g.values[w] = f32(w, Shape({64, 64}));
    for (const std::string& v : {h, r, o}) g.values[v] = f32(v, act);
    g.nodes.push_back(Node{"mm" + id, "MatMul", "", {prev, w}, {h}, {}});
    g.nodes.push_back(Node{"relu" + id, "Relu", "", {h}, {r}, {}});
    g.nodes.push_back(Node{"add" + id, "Add", "", {r, prev}, {o}, {}});
    prev = o;
  }
  g.outputs = {g.values[prev]};
  return g;
}

// ResidualMlp with a Tanh after the middle block and a Softmax at the end.
Graph ResidualMlpWithRareOps(int blocks) {
  Graph g = ResidualMlp(blocks);
  auto retarget = [&](int node, const std::string& op, const std::string& tag) {
    const std::string out = g.nodes[node].outputs[0];
    const std::string mid = out + "_" + tag;
    g.values[mid] = g.values[out];
    g.values[mid].name = mid;
    g.nodes[node].outputs[0] = mid;
    g.nodes.insert(g.nodes.begin() + node + 1,
                   Node{tag, op, "", {mid}, {out}, {}});
  };
  retarget(static_cast<int>(g.nodes.size()) - 1, "Softmax", "softmax");
  retarget(3 * (blocks / 2) + 2, "Tanh", "tanh");
  return g;
}

template <typename F>
double MedianMillis(F f, int runs) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const absl::Time start = absl::Now();
    f();
    t.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

DeviceInfo Sim(int id, double gflops, std::vector<std::string> unsupported) {
  DeviceInfo d;
  d.id = id;
  d.type = "sim";
  d.name = "sim:" + std::to_string(id);
  d.memory_bytes = d.available_memory_bytes = 64 * kMiB;
  d.compute_flops = gflops * 1e9;
  d.link_bytes_per_second = 10e9;
  d.unsupported_ops = std::move(unsupported);
  return d;
}

void HeterogeneousFleets() {
  std::printf("\nheterogeneous fleets: 2 fast (400 GFLOP/s) + 2 slow (100 "
              "GFLOP/s), load-balanced over all 4\n");
  std::printf("%8s %-28s %12s %16s %16s %8s\n", "nodes", "fleet", "plan ms",
              "bottleneck us", "today's us", "gain");
  for (int blocks : {333, 3333}) {
    const Graph g = ResidualMlpWithRareOps(blocks);
    if (!g.Validate().ok()) {
      std::printf("bad graph: %s\n", g.Validate().ToString().c_str());
      return;
    }
    const int n = static_cast<int>(g.nodes.size());
    const std::vector<std::string> missing = {"Tanh", "Softmax"};
    struct Fleet {
      const char* name;
      std::vector<DeviceInfo> devices;
      std::vector<DeviceInfo> today;  // What today's planner planned with.
      int today_stages;
    };
    std::vector<Fleet> fleets;
    fleets.push_back({"fast lacking ops + slow",
                      {Sim(0, 400, missing), Sim(1, 400, missing),
                       Sim(2, 100, {}), Sim(3, 100, {})},
                      {Sim(2, 100, {}), Sim(3, 100, {})},
                      2});
    fleets.push_back({"fast + slow, same ops",
                      {Sim(0, 400, {}), Sim(1, 400, {}), Sim(2, 100, {}),
                       Sim(3, 100, {})},
                      {Sim(0, 100, {}), Sim(1, 100, {}), Sim(2, 100, {}),
                       Sim(3, 100, {})},
                      4});
    // Memory binds: each device holds a third of the weights; today's plan
    // (the 2 slow devices alone) cannot hold it.
    Fleet tight{"lacking ops + slow, tight", fleets[0].devices,
                fleets[0].today, 2};
    for (auto* list : {&tight.devices, &tight.today}) {
      for (DeviceInfo& d : *list) {
        d.memory_bytes = d.available_memory_bytes = g.WeightBytes() / 3;
      }
    }
    fleets.push_back(tight);
    for (const Fleet& fleet : fleets) {
      PartitionOptions options;
      options.strategy = PartitionStrategy::kLoadBalanced;
      options.plan_devices = 4;
      double bottleneck = 0;
      const double ms = MedianMillis(
          [&] {
            auto dag = Partition(g, fleet.devices, options);
            bottleneck = dag.ok() ? dag->estimated_bottleneck_seconds : -1;
          },
          n > 5000 ? 3 : 11);
      options.plan_devices = fleet.today_stages;
      auto today = Partition(g, fleet.today, options);
      const double today_s =
          today.ok() ? today->estimated_bottleneck_seconds : -1;
      if (today_s > 0) {
        std::printf("%8d %-28s %12.1f %16.2f %16.2f %7.2fx\n", n,
                    fleet.name, ms, bottleneck * 1e6, today_s * 1e6,
                    today_s / bottleneck);
      } else {
        std::printf("%8d %-28s %12.1f %16.2f %16s %8s\n", n, fleet.name, ms,
                    bottleneck * 1e6, "no plan", "-");
      }
    }
  }
}

}  // namespace
}  // namespace glint

int main() {
  using namespace glint;
  std::vector<DeviceInfo> devices(8);
  for (int i = 0; i < 8; ++i) {
    devices[i].id = i;
    devices[i].type = "sim";
    devices[i].name = "sim:" + std::to_string(i);
    devices[i].memory_bytes = devices[i].available_memory_bytes = 64 * kMiB;
  }
  std::printf("%8s %10s %14s %14s %12s %10s %16s\n", "nodes", "partitions",
              "balanced ms", "memory ms", "validate ms", "ratio",
              "us/(n log2 n)");
  for (int blocks : {33, 333, 3333}) {
    const Graph g = ResidualMlp(blocks);
    const int n = static_cast<int>(g.nodes.size());
    PartitionOptions balanced;
    balanced.strategy = PartitionStrategy::kLoadBalanced;
    balanced.plan_devices = 8;
    // Memory: devices that each hold an eighth of the weights (+ slack).
    std::vector<DeviceInfo> tight = devices;
    const uint64_t share = g.WeightBytes() / 8 + 64 * 1024;
    for (DeviceInfo& d : tight) d.available_memory_bytes = share + share / 4;
    PartitionOptions memory;
    memory.strategy = PartitionStrategy::kMemory;

    size_t parts = 0;
    const int runs = n > 5000 ? 5 : 21;
    const double balanced_ms = MedianMillis(
        [&] { parts = Partition(g, devices, balanced)->nodes.size(); }, runs);
    size_t memory_parts = 0;
    const double memory_ms = MedianMillis(
        [&] {
          auto dag = Partition(g, tight, memory);
          memory_parts = dag.ok() ? dag->nodes.size() : 0;
        },
        runs);
    const double validate_ms = MedianMillis([&] { (void)g.Validate(); }, runs);
    std::printf("%8d %5zu / %-4zu %14.2f %14.2f %12.3f %10.1f %16.3f\n", n,
                parts, memory_parts, balanced_ms, memory_ms, validate_ms,
                balanced_ms / validate_ms,
                balanced_ms * 1e3 / (n * std::log2(double(n))));
  }
  HeterogeneousFleets();
  return 0;
}
