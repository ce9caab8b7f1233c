#include "executor/executor.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <set>
#include <vector>

#include "absl/synchronization/notification.h"
#include "devices/fault/fault_injecting_device.h"
#include "devices/sim/sim_device.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "provisioner/provisioner.h"

namespace glint {
namespace {

ValueInfo F32(const std::string& name, Shape shape) {
  return {name, DType::kFloat32, std::move(shape)};
}

// x → Add(w) → t on logical device 0; t → Relu → y on logical device 1.
// With `second_constant`, partition 1 adds a constant before the Relu, so
// loading it needs device memory.
Dag TwoStageDag(bool second_constant = false) {
  Graph g;
  g.opset_version = 13;
  g.inputs = {F32("x", Shape({4}))};
  g.outputs = {F32("y", Shape({4}))};
  g.initializers["w"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, -1, 1, -1});
  g.nodes = {Node{"add", "Add", "", {"x", "w"}, {"t"}, {}},
             Node{"relu", "Relu", "", {"t"}, {"y"}, {}}};
  for (const char* v : {"x", "w", "t", "y"}) g.values[v] = F32(v, Shape({4}));
  if (second_constant) {
    g.initializers["w2"] = *Tensor::Create(DType::kFloat32, Shape({4}));
    g.values["w2"] = F32("w2", Shape({4}));
    g.nodes[1].inputs = {"t2"};
    g.nodes.insert(g.nodes.begin() + 1,
                   Node{"add2", "Add", "", {"t", "w2"}, {"t2"}, {}});
    g.values["t2"] = F32("t2", Shape({4}));
  }

  Dag dag;
  dag.inputs = g.inputs;
  dag.outputs = g.outputs;
  dag.num_logical_devices = 2;
  DeviceInfo sim;
  sim.type = "sim";
  dag.logical_devices = {sim, sim};
  DagNode p0, p1;
  p0.name = "p0";
  p0.graph_nodes = {0};
  p0.function = g.Subgraph({0});
  p0.logical_device = 0;
  p0.children = {1};
  p1.name = "p1";
  p1.graph_nodes = second_constant ? std::vector<int>{1, 2}
                                   : std::vector<int>{1};
  p1.function = g.Subgraph(p1.graph_nodes);
  p1.logical_device = 1;
  p1.parents = {0};
  dag.nodes = {p0, p1};
  return dag;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      DeviceConfig c;
      c.memory_bytes = 1 << 20;
      devices_.push_back(*SimDevice::Create(i, c));
    }
  }

  absl::StatusOr<std::vector<Tensor>> RunSync(const ExecutableNetwork& net,
                                              Tensor x) {
    absl::Notification done;
    absl::StatusOr<std::vector<Tensor>> result;
    ExecutionRequest request;
    request.inputs = {std::move(x)};
    request.outputs = {0};
    executor_.Run(net, std::move(request),
                  [&](absl::StatusOr<std::vector<Tensor>> r) {
                    result = std::move(r);
                    done.Notify();
                  });
    done.WaitForNotification();
    return result;
  }

  std::vector<std::unique_ptr<SimDevice>> devices_;
  Executor executor_;
};

TEST_F(ExecutorTest, ChainsPartitionsAcrossDevices) {
  Provisioner provisioner({devices_[0].get(), devices_[1].get()});
  auto net = provisioner.Provision(TwoStageDag());
  ASSERT_TRUE(net.ok()) << net.status();
  ASSERT_EQ((*net)->replicas.size(), 1u);
  const auto& partitions = (*net)->replicas[0]->partitions;
  ASSERT_EQ(partitions.size(), 2u);
  EXPECT_NE(partitions[0].device, partitions[1].device);
  auto out = RunSync(**net, Tensor::FromVector<float>(
                                DType::kFloat32, Shape({4}), {1, 1, -3, 3}));
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> want = {2, 0, 0, 2};
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*out)[0].data<float>()[i], want[i]);
}

TEST_F(ExecutorTest, RunsReuseTheReservedEntriesOfEachPartition) {
  Provisioner provisioner({devices_[0].get(), devices_[1].get()});
  auto net = provisioner.Provision(TwoStageDag());
  ASSERT_TRUE(net.ok());
  Replica& replica = *(*net)->replicas[0];
  auto input = [](float v) {
    return Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                     {v, v, v, v});
  };
  // Each partition's ring is reserved when the network is provisioned, up
  // to the default number of executions (these devices have room for
  // them all); admission may let in one run per entry.
  for (size_t p = 0; p < replica.partitions.size(); ++p) {
    EXPECT_EQ(replica.executions(p),
              size_t{Provisioner::kDefaultMaxExecutions});
  }
  EXPECT_EQ((*net)->executions, 2 * Provisioner::kDefaultMaxExecutions);
  const uint64_t free0 = devices_[0]->AvailableMemory();
  const uint64_t free1 = devices_[1]->AvailableMemory();
  for (int i = 0; i < 20; ++i) {  // Every entry, more than once.
    auto out = RunSync(**net, input(i));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].data<float>()[0], i + 1.0f);  // Fresh data each run.
    // Not even the first run allocates device memory: the reserved
    // entries' buffers are reused, so the devices' free memory does not
    // move.
    EXPECT_EQ(devices_[0]->AvailableMemory(), free0);
    EXPECT_EQ(devices_[1]->AvailableMemory(), free1);
  }
}

TEST(ExecutorReplicaTest, RunsGoToTheReplicaWhoseDevicesAreLeastLoaded) {
  std::vector<std::unique_ptr<SimDevice>> devices;
  std::vector<DeviceManager*> raw;
  for (int i = 0; i < 4; ++i) {
    DeviceConfig c;
    c.memory_bytes = 1 << 20;
    devices.push_back(*SimDevice::Create(i, c));
    raw.push_back(devices.back().get());
  }
  Dag dag = TwoStageDag();
  dag.replicas = 2;
  auto net = Provisioner(raw).Provision(dag);
  ASSERT_TRUE(net.ok()) << net.status();
  ASSERT_EQ((*net)->replicas.size(), 2u);
  // Replica 0's devices look busy (as with runs of other networks on
  // them): the next run must go to replica 1's devices.
  for (DeviceManager* d : (*net)->replicas[0]->routing.devices) {
    for (int i = 0; i < 5; ++i) d->load().AddRun(1);
  }
  std::set<int> replica1_devices;
  for (const ProvisionedPartition& p : (*net)->replicas[1]->partitions) {
    replica1_devices.insert(p.device->id() + 1);  // Trace pids.
  }
  auto trace = std::make_shared<RunTrace>();
  absl::Notification done;
  ExecutionRequest request;
  request.inputs = {
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 1, 1, 1})};
  request.outputs = {0};
  request.trace = trace;
  Executor executor;
  executor.Run(**net, std::move(request),
               [&](absl::StatusOr<std::vector<Tensor>> r) {
                 EXPECT_TRUE(r.ok()) << r.status();
                 done.Notify();
               });
  done.WaitForNotification();
  std::set<int> used;
  const nlohmann::json json = nlohmann::json::parse(trace->ToChromeJson());
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"].get<int>() > 0) {
      used.insert(e["pid"].get<int>());
    }
  }
  EXPECT_EQ(used, replica1_devices);
  EXPECT_EQ((*net)->replicas[1]->outstanding.load(), 0);
  for (DeviceManager* d : (*net)->replicas[1]->routing.devices) {
    EXPECT_EQ(d->load().active_runs(), 0);
  }
  for (DeviceManager* d : (*net)->replicas[0]->routing.devices) {
    EXPECT_EQ(d->load().active_runs(), 5);
    for (int i = 0; i < 5; ++i) d->load().RemoveRun();
  }
}

// The two-stage network whole on one device of type `device`, in
// `replicas` copies (the provisioner puts copy i on device i).
Dag OneDeviceDag(const DeviceInfo& device, int replicas) {
  Dag dag = TwoStageDag();
  for (DagNode& node : dag.nodes) node.logical_device = 0;
  dag.num_logical_devices = 1;
  dag.logical_devices = {device};
  dag.replicas = replicas;
  return dag;
}

// Runs `net` on x = (v, v, v, v); returns the id of the device its first
// partition ran on, after checking its output y = Relu(x + w) against the
// reference. With `unstick`: if the run has not ended after 30 s (it went
// where a launch hangs), that is a failure, and `unstick` ends it.
int RunAndReportDevice(const Executor& executor, const ExecutableNetwork& net,
                       float v, std::function<void()> unstick = nullptr) {
  absl::Notification done;
  absl::StatusOr<std::vector<Tensor>> result;
  ExecutionRequest request;
  request.inputs = {
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {v, v, v, v})};
  request.outputs = {0};
  auto timings = std::make_shared<RunTimings>();
  request.timings = timings;
  executor.Run(net, std::move(request),
               [&](absl::StatusOr<std::vector<Tensor>> r) {
                 result = std::move(r);
                 done.Notify();
               });
  if (unstick != nullptr &&
      !done.WaitForNotificationWithTimeout(absl::Seconds(30))) {
    ADD_FAILURE() << "the run went to a device that is held up";
    unstick();
  }
  done.WaitForNotification();
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return -1;
  const std::vector<float> w = {1, -1, 1, -1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*result)[0].data<float>()[i], std::max(0.0f, v + w[i]));
  }
  EXPECT_EQ(timings->partition_device.size(), 2u);
  return timings->partition_device.empty() ? -1 : timings->partition_device[0];
}

TEST(ExecutorReplicaTest, IdleRunsTakeTurnsOverTheDevicesAcrossNetworks) {
  // Two networks (as two batch sizes of one network under dynamic
  // batching), each with a replica on device 0 and one on device 1. One
  // run at a time: every device is idle at each pick, so the device placed
  // on least recently takes the run, whichever network it belongs to.
  std::vector<std::unique_ptr<SimDevice>> devices;
  std::vector<DeviceManager*> raw;
  for (int i = 0; i < 2; ++i) {
    DeviceConfig c;
    c.memory_bytes = 1 << 20;
    devices.push_back(*SimDevice::Create(i, c));
    raw.push_back(devices.back().get());
  }
  const DeviceInfo info = raw[0]->GetDeviceInfo();
  auto a = Provisioner(raw).Provision(OneDeviceDag(info, 2));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Provisioner(raw).Provision(OneDeviceDag(info, 2));
  ASSERT_TRUE(b.ok()) << b.status();
  for (const ExecutableNetwork* net : {a->get(), b->get()}) {
    ASSERT_EQ(net->replicas.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(net->replicas[r]->routing.devices,
                std::vector<DeviceManager*>{raw[r]});
    }
  }
  Executor executor;
  const ExecutableNetwork* order[] = {a->get(), a->get(), b->get(),
                                      a->get(), b->get(), b->get()};
  std::vector<int> used;
  for (int i = 0; i < 6; ++i) {
    used.push_back(RunAndReportDevice(executor, *order[i], i - 2.0f));
  }
  EXPECT_EQ(used, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  for (DeviceManager* d : raw) EXPECT_EQ(d->load().active_runs(), 0);
}

TEST(ExecutorReplicaTest, ARunOfAnotherNetworkSteersTheRunToTheIdleDevice) {
  // Networks a and b each have a replica on device 0 and one on device 1.
  // A run of a is held on device 0 (its launch hangs); b's run, whose own
  // replicas have nothing outstanding, must go to device 1.
  std::vector<std::unique_ptr<FaultInjectingDevice>> faulty;
  std::vector<DeviceManager*> raw;
  for (int i = 0; i < 2; ++i) {
    DeviceConfig c;
    c.memory_bytes = 1 << 20;
    faulty.push_back(
        std::make_unique<FaultInjectingDevice>(*SimDevice::Create(i, c)));
    raw.push_back(faulty.back().get());
  }
  const DeviceInfo info = raw[0]->GetDeviceInfo();
  auto a = Provisioner(raw).Provision(OneDeviceDag(info, 2));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Provisioner(raw).Provision(OneDeviceDag(info, 2));
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ((*a)->replicas[0]->routing.devices,
            std::vector<DeviceManager*>{raw[0]});
  ASSERT_EQ((*b)->replicas[0]->routing.devices,
            std::vector<DeviceManager*>{raw[0]});
  Executor executor;

  faulty[0]->SetHangLaunch(faulty[0]->launch_count() + 1);
  absl::Notification held_done;
  absl::StatusOr<std::vector<Tensor>> held;
  ExecutionRequest request;
  request.inputs = {
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 1, 1, 1})};
  request.outputs = {0};
  executor.Run(**a, std::move(request),
               [&](absl::StatusOr<std::vector<Tensor>> r) {
                 held = std::move(r);
                 held_done.Notify();
               });
  EXPECT_EQ(raw[0]->load().active_runs(), 1);
  EXPECT_EQ(raw[1]->load().active_runs(), 0);

  EXPECT_EQ(RunAndReportDevice(executor, **b, 3, [&] { faulty[0]->Kill(); }),
            1);
  EXPECT_EQ((*b)->replicas[0]->outstanding.load(), 0);
  // The held run still counts on device 0 until it ends: killing the
  // device releases its hung launch and fails it.
  EXPECT_EQ(raw[0]->load().active_runs(), 1);
  faulty[0]->Kill();
  held_done.WaitForNotification();
  EXPECT_EQ(held.status().code(), absl::StatusCode::kUnavailable)
      << held.status();
  EXPECT_EQ(raw[0]->load().active_runs(), 0);
  // Device 0 is dead: runs keep to device 1, whatever the loads.
  EXPECT_EQ(RunAndReportDevice(executor, **a, 2), 1);
  EXPECT_EQ(RunAndReportDevice(executor, **b, 2), 1);
}

TEST_F(ExecutorTest, TraceHasATrackPerStreamAndASlicePerStep) {
  Provisioner provisioner({devices_[0].get(), devices_[1].get()});
  auto net = provisioner.Provision(TwoStageDag());
  ASSERT_TRUE(net.ok());
  auto trace = std::make_shared<RunTrace>();
  absl::Notification done;
  ExecutionRequest request;
  request.inputs = {
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 1, 1, 1})};
  request.outputs = {0};
  request.trace = trace;
  executor_.Run(**net, std::move(request),
                [&](absl::StatusOr<std::vector<Tensor>> r) {
                  EXPECT_TRUE(r.ok()) << r.status();
                  done.Notify();
                });
  done.WaitForNotification();
  const nlohmann::json json = nlohmann::json::parse(trace->ToChromeJson());
  std::set<std::string> names;
  std::set<int> device_tracks;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] != "X") continue;
    names.insert(e["name"].get<std::string>());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["pid"].get<int>() > 0) device_tracks.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(device_tracks, (std::set<int>{1, 2}));
  for (const char* want :
       {"partition p0", "partition p1", "wait p0", "copy x host->device",
        "copy t sim:0->device", "copy y device->host", "enqueue"}) {
    EXPECT_EQ(names.count(want), 1u) << want;
  }
}

TEST_F(ExecutorTest, ManyConcurrentRunsAreIndependent) {
  Provisioner provisioner({devices_[0].get(), devices_[1].get()});
  auto net = provisioner.Provision(TwoStageDag());
  ASSERT_TRUE(net.ok());
  constexpr int kRuns = 64;
  std::vector<absl::StatusOr<std::vector<Tensor>>> results(kRuns);
  std::vector<absl::Notification> done(kRuns);
  for (int r = 0; r < kRuns; ++r) {
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(
        DType::kFloat32, Shape({4}),
        {float(r), float(r), float(-r), float(r)})};
    request.outputs = {0};
    executor_.Run(**net, std::move(request),
                  [&, r](absl::StatusOr<std::vector<Tensor>> out) {
                    results[r] = std::move(out);
                    done[r].Notify();
                  });
  }
  for (int r = 0; r < kRuns; ++r) {
    done[r].WaitForNotification();
    ASSERT_TRUE(results[r].ok()) << results[r].status();
    const float* y = (*results[r])[0].data<float>();
    EXPECT_EQ(y[0], r + 1.0f);
    EXPECT_EQ(y[1], std::max(r - 1.0f, 0.0f));
    EXPECT_EQ(y[2], std::max(1.0f - r, 0.0f));
    EXPECT_EQ(y[3], std::max(r - 1.0f, 0.0f));
  }
}

// A chain of `stages` Adds, stage s on logical device s % devices:
// y = x + stages · (1, -1, 2, -2).
Dag ChainDag(int stages, int devices) {
  Graph g;
  g.opset_version = 13;
  g.inputs = {F32("x", Shape({4}))};
  g.values["x"] = g.inputs[0];
  g.initializers["w"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, -1, 2, -2});
  g.values["w"] = F32("w", Shape({4}));
  std::string prev = "x";
  for (int s = 0; s < stages; ++s) {
    const std::string out = s + 1 == stages ? "y" : "t" + std::to_string(s);
    g.nodes.push_back(
        Node{"add" + std::to_string(s), "Add", "", {prev, "w"}, {out}, {}});
    g.values[out] = F32(out, Shape({4}));
    prev = out;
  }
  g.outputs = {g.values["y"]};
  Dag dag;
  dag.inputs = g.inputs;
  dag.outputs = g.outputs;
  dag.num_logical_devices = devices;
  DeviceInfo sim;
  sim.type = "sim";
  dag.logical_devices.assign(devices, sim);
  for (int s = 0; s < stages; ++s) {
    DagNode node;
    node.name = "p" + std::to_string(s);
    node.graph_nodes = {s};
    node.function = g.Subgraph(node.graph_nodes);
    node.logical_device = s % devices;
    if (s > 0) node.parents = {s - 1};
    dag.nodes.push_back(std::move(node));
  }
  return dag;
}

TEST(ExecutorConcurrencyTest, SixtyFourRunsOverFourDevicesAndTwoNetworks) {
  std::vector<std::unique_ptr<SimDevice>> devices;
  std::vector<DeviceManager*> raw;
  for (int i = 0; i < 4; ++i) {
    DeviceConfig c;
    c.memory_bytes = 1 << 20;
    devices.push_back(*SimDevice::Create(i, c));
    raw.push_back(devices.back().get());
  }
  auto a = Provisioner(raw).Provision(ChainDag(4, 4));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Provisioner(raw).Provision(ChainDag(6, 4));
  ASSERT_TRUE(b.ok()) << b.status();
  Executor executor;
  constexpr int kRuns = 64;
  std::vector<absl::StatusOr<std::vector<Tensor>>> results(kRuns);
  std::vector<absl::Notification> done(kRuns);
  for (int r = 0; r < kRuns; ++r) {
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(
        DType::kFloat32, Shape({4}), {float(r), float(-r), float(2 * r), 0})};
    request.outputs = {0};
    executor.Run(r % 2 == 0 ? **a : **b, std::move(request),
                 [&, r](absl::StatusOr<std::vector<Tensor>> out) {
                   results[r] = std::move(out);
                   done[r].Notify();
                 });
  }
  for (int r = 0; r < kRuns; ++r) {
    done[r].WaitForNotification();
    ASSERT_TRUE(results[r].ok()) << results[r].status();
    const float k = r % 2 == 0 ? 4 : 6;  // Stages: each adds w once.
    const float* y = (*results[r])[0].data<float>();
    EXPECT_EQ(y[0], r + k);
    EXPECT_EQ(y[1], -r - k);
    EXPECT_EQ(y[2], 2 * r + 2 * k);
    EXPECT_EQ(y[3], -2 * k);
  }
}

// Threads of this process, from /proc/self/task.
int ThreadCount() {
  int n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST(ExecutorConcurrencyTest, ThreadsStayFlatWith512RunsInFlight) {
  // Each launch takes 1 ms of simulated compute (4 FLOPs at 4,000 FLOP/s),
  // so the 512 runs are still in flight while they are counted.
  std::vector<std::unique_ptr<SimDevice>> devices;
  for (int i = 0; i < 2; ++i) {
    DeviceConfig c;
    c.memory_bytes = 64 << 20;
    c.params["compute_gflops"] = "0.000004";
    devices.push_back(*SimDevice::Create(i, c));
  }
  auto net = Provisioner({devices[0].get(), devices[1].get()})
                 .Provision(TwoStageDag());
  ASSERT_TRUE(net.ok()) << net.status();
  Executor executor;
  auto run = [&](float v, std::function<void(absl::StatusOr<std::vector<Tensor>>)>
                              done) {
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                                {v, v, -v, v})};
    request.outputs = {0};
    executor.Run(**net, std::move(request), std::move(done));
  };
  {
    // A first run opens the devices' shared streams.
    absl::Notification warm;
    run(0, [&](absl::StatusOr<std::vector<Tensor>> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      warm.Notify();
    });
    warm.WaitForNotification();
  }
  const int baseline = ThreadCount();

  constexpr int kRuns = 512;
  std::vector<absl::StatusOr<std::vector<Tensor>>> results(kRuns);
  std::vector<absl::Notification> done(kRuns);
  std::atomic<int> most{0};
  auto note_threads = [&most] {
    const int n = ThreadCount();
    int seen = most.load();
    while (n > seen && !most.compare_exchange_weak(seen, n)) {
    }
  };
  for (int r = 0; r < kRuns; ++r) {
    run(float(r), [&, r](absl::StatusOr<std::vector<Tensor>> out) {
      note_threads();
      results[r] = std::move(out);
      done[r].Notify();
    });
  }
  note_threads();
  for (int r = 0; r < kRuns; ++r) {
    done[r].WaitForNotification();
    ASSERT_TRUE(results[r].ok()) << r << ": " << results[r].status();
    const float* y = (*results[r])[0].data<float>();
    EXPECT_EQ(y[0], r + 1.0f);
    EXPECT_EQ(y[1], std::max(r - 1.0f, 0.0f));
    EXPECT_EQ(y[2], std::max(1.0f - r, 0.0f));
    EXPECT_EQ(y[3], std::max(r - 1.0f, 0.0f));
  }
  // Runs share each device's streams: no thread per run (before, each run
  // leased a stream thread per device).
  EXPECT_LE(most.load(), baseline) << "baseline " << baseline;
}

TEST_F(ExecutorTest, StoppedDeviceFailsTheRunFast) {
  Provisioner provisioner({devices_[0].get(), devices_[1].get()});
  auto net = provisioner.Provision(TwoStageDag());
  ASSERT_TRUE(net.ok());
  (*net)->replicas[0]->partitions[1].device->Stop();
  auto out = RunSync(**net, Tensor::FromVector<float>(DType::kFloat32,
                                                      Shape({4}), {1, 1, 1, 1}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable)
      << out.status();
}

TEST_F(ExecutorTest, PastDeadlineIsDeadlineExceeded) {
  Provisioner provisioner({devices_[0].get(), devices_[1].get()});
  auto net = provisioner.Provision(TwoStageDag());
  ASSERT_TRUE(net.ok());
  absl::Notification done;
  absl::Status status;
  ExecutionRequest request;
  request.inputs = {
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 1, 1, 1})};
  request.outputs = {0};
  request.deadline = absl::Now() - absl::Seconds(1);
  executor_.Run(**net, std::move(request),
                [&](absl::StatusOr<std::vector<Tensor>> r) {
                  status = r.status();
                  done.Notify();
                });
  done.WaitForNotification();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(ExecutorTest, ProvisionFailureEvictsEverything) {
  // Device 1 is too small for partition 1's constant: everything loaded on
  // device 0 must be evicted again.
  DeviceConfig tiny;
  tiny.memory_bytes = 32;
  auto small = *SimDevice::Create(1, tiny);
  const uint64_t free0 = devices_[0]->AvailableMemory();
  Provisioner provisioner({devices_[0].get(), small.get()});
  absl::Status s = provisioner.Provision(TwoStageDag(true)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(devices_[0]->AvailableMemory(), free0);
  EXPECT_EQ(small->AvailableMemory(), 32u);
}

// Two sim devices behind fault injectors, for deadlines, cancellation and
// failures between partitions.
class ExecutorFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      DeviceConfig c;
      c.memory_bytes = 1 << 20;
      faulty_.push_back(
          std::make_unique<FaultInjectingDevice>(*SimDevice::Create(i, c)));
    }
    Dag dag = TwoStageDag();
    for (int i = 0; i < 2; ++i) {
      dag.logical_devices[i] = faulty_[i]->GetDeviceInfo();
    }
    auto net =
        Provisioner({faulty_[0].get(), faulty_[1].get()}).Provision(dag);
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);
    ASSERT_EQ(net_->replicas[0]->partitions[0].device, faulty_[0].get());
    // Warm the network's execution state, so that memory is steady.
    ASSERT_TRUE(Run().ok());
    free_ = {faulty_[0]->AvailableMemory(), faulty_[1]->AvailableMemory()};
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      absl::Time deadline = absl::InfiniteFuture(),
      std::shared_ptr<CancellationToken> cancel = nullptr) {
    absl::Notification done;
    absl::StatusOr<std::vector<Tensor>> result;
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                                {1, 1, 1, 1})};
    request.outputs = {0};
    request.deadline = deadline;
    request.cancel = cancel;
    executor_.Run(*net_, std::move(request),
                  [&](absl::StatusOr<std::vector<Tensor>> r) {
                    result = std::move(r);
                    done.Notify();
                  });
    if (cancel != nullptr) cancel->Cancel();
    done.WaitForNotification();
    return result;
  }

  void ExpectMemoryBack() {
    EXPECT_EQ(faulty_[0]->AvailableMemory(), free_[0]);
    EXPECT_EQ(faulty_[1]->AvailableMemory(), free_[1]);
  }

  std::vector<std::unique_ptr<FaultInjectingDevice>> faulty_;
  std::unique_ptr<ExecutableNetwork> net_;
  std::vector<uint64_t> free_;
  Executor executor_;
};

TEST_F(ExecutorFaultTest, DeadlineSkipsPartitionsNotYetStarted) {
  // Partition 0's device is slow (a simulated 300 ms launch); the deadline
  // passes meanwhile, so partition 1 never launches.
  // Partition 1's device would take 5 s per launch: finishing well before
  // that shows it was skipped, not run.
  faulty_[0]->SetLaunchDelay(absl::Milliseconds(300));
  faulty_[1]->SetLaunchDelay(absl::Seconds(5));
  const absl::Time start = absl::Now();
  auto out = Run(absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded)
      << out.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  ExpectMemoryBack();
}

TEST_F(ExecutorFaultTest, CancellationSkipsPartitionsNotYetStarted) {
  faulty_[0]->SetLaunchDelay(absl::Milliseconds(300));
  faulty_[1]->SetLaunchDelay(absl::Seconds(5));
  const absl::Time start = absl::Now();
  auto out = Run(absl::InfiniteFuture(), std::make_shared<CancellationToken>());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  ExpectMemoryBack();
}

TEST_F(ExecutorFaultTest, FirstErrorNamesPartitionAndDeviceAndDeviceRecovers) {
  faulty_[1]->SetFailLaunch(faulty_[1]->launch_count() + 1);
  auto out = Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal) << out.status();
  EXPECT_NE(out.status().message().find("partition p1 on device sim:1"),
            absl::string_view::npos)
      << out.status();
  ExpectMemoryBack();
  // The device keeps working: the next run succeeds.
  auto again = Run();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0].data<float>()[0], 2.0f);
}

TEST_F(ExecutorFaultTest, AFailingRunLeavesOtherNetworksAlone) {
  // Another network, whole on device 0, runs 16 times while a run of the
  // two-device network fails on device 1.
  Dag other = TwoStageDag();
  for (DagNode& node : other.nodes) node.logical_device = 0;
  other.nodes[1].parents = {0};
  other.num_logical_devices = 1;
  other.logical_devices = {faulty_[0]->GetDeviceInfo()};
  auto whole = Provisioner({faulty_[0].get()}).Provision(other);
  ASSERT_TRUE(whole.ok()) << whole.status();
  faulty_[1]->SetFailLaunch(faulty_[1]->launch_count() + 1);
  constexpr int kOthers = 16;
  std::vector<absl::Notification> done(kOthers);
  std::vector<absl::StatusOr<std::vector<Tensor>>> results(kOthers);
  for (int r = 0; r < kOthers; ++r) {
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                                {1, 1, 1, 1})};
    request.outputs = {0};
    executor_.Run(**whole, std::move(request),
                  [&, r](absl::StatusOr<std::vector<Tensor>> out) {
                    results[r] = std::move(out);
                    done[r].Notify();
                  });
  }
  auto failing = Run();
  EXPECT_EQ(failing.status().code(), absl::StatusCode::kInternal);
  for (int r = 0; r < kOthers; ++r) {
    done[r].WaitForNotification();
    ASSERT_TRUE(results[r].ok()) << results[r].status();
    EXPECT_EQ((*results[r])[0].data<float>()[0], 2.0f);
  }
}

TEST_F(ExecutorFaultTest, RunsSharingAStreamFailAlone) {
  // Two runs back to back: their work goes on the same shared stream of
  // each device, run A's first. A's launch on device 1 fails; B's, right
  // behind it on that stream, must compute exactly. (Device 0 is slowed
  // down so that both runs are queued before either computes.)
  faulty_[0]->SetLaunchDelay(absl::Milliseconds(20));
  faulty_[1]->SetFailLaunch(faulty_[1]->launch_count() + 1);
  absl::Notification a_done, b_done;
  absl::StatusOr<std::vector<Tensor>> a, b;
  auto start = [&](std::vector<float> x, absl::StatusOr<std::vector<Tensor>>* out,
                   absl::Notification* done) {
    ExecutionRequest request;
    request.inputs = {
        Tensor::FromVector<float>(DType::kFloat32, Shape({4}), std::move(x))};
    request.outputs = {0};
    executor_.Run(*net_, std::move(request),
                  [out, done](absl::StatusOr<std::vector<Tensor>> r) {
                    *out = std::move(r);
                    done->Notify();
                  });
  };
  start({1, 1, 1, 1}, &a, &a_done);
  start({5, -7, 3, -1}, &b, &b_done);
  a_done.WaitForNotification();
  b_done.WaitForNotification();
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInternal) << a.status();
  EXPECT_NE(a.status().message().find("partition p1 on device sim:1"),
            absl::string_view::npos)
      << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  // y = Relu(x + (1, -1, 1, -1)).
  const std::vector<float> want = {6, 0, 4, 0};
  ASSERT_EQ((*b)[0].num_elements(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*b)[0].data<float>()[i], want[i]);
}

TEST_F(ExecutorFaultTest, CancellingOneRunLeavesTheRunsBesideItAlone) {
  // Three runs on the same shared streams; the middle one is cancelled
  // while device 0 is still busy with the first (a 100 ms launch): it is
  // skipped, the others compute.
  faulty_[0]->SetLaunchDelay(absl::Milliseconds(100));
  auto cancel = std::make_shared<CancellationToken>();
  std::vector<absl::StatusOr<std::vector<Tensor>>> out(3);
  std::vector<absl::Notification> done(3);
  for (int r = 0; r < 3; ++r) {
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                                {float(r), 0, 0, 0})};
    request.outputs = {0};
    if (r == 1) request.cancel = cancel;
    executor_.Run(*net_, std::move(request),
                  [&, r](absl::StatusOr<std::vector<Tensor>> result) {
                    out[r] = std::move(result);
                    done[r].Notify();
                  });
  }
  cancel->Cancel();
  for (int r = 0; r < 3; ++r) done[r].WaitForNotification();
  EXPECT_EQ(out[1].status().code(), absl::StatusCode::kCancelled)
      << out[1].status();
  for (int r : {0, 2}) {
    ASSERT_TRUE(out[r].ok()) << out[r].status();
    EXPECT_EQ((*out[r])[0].data<float>()[0], r + 1.0f);
    EXPECT_EQ((*out[r])[0].data<float>()[1], 0.0f);
  }
}

// One reserved entry per partition: every run waits on the devices for
// the entry the run before it holds, whether that run fails, is cancelled
// or succeeds; nothing is allocated beyond the reservation, and each run
// computes its own result. (Device 0 is held until all 32 runs are
// enqueued, so that each waits for the one before it.)
TEST_F(ExecutorFaultTest, OneEntryPerPartitionPassesFromRunToRun) {
  Dag dag = TwoStageDag();
  for (int i = 0; i < 2; ++i) {
    dag.logical_devices[i] = faulty_[i]->GetDeviceInfo();
  }
  auto net = Provisioner({faulty_[0].get(), faulty_[1].get()})
                 .Provision(dag, CompileOptions(), /*max_executions=*/1);
  ASSERT_TRUE(net.ok()) << net.status();
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ((*net)->replicas[0]->executions(p), 1u);
  }
  EXPECT_EQ((*net)->executions, 2);
  const uint64_t free0 = faulty_[0]->AvailableMemory();
  const uint64_t free1 = faulty_[1]->AvailableMemory();

  constexpr int kRuns = 32;
  constexpr int kFailing = 4, kCancelled = 10;
  faulty_[0]->Hold(true);
  faulty_[1]->SetFailLaunch(faulty_[1]->launch_count() + kFailing + 1);
  auto cancel = std::make_shared<CancellationToken>();
  std::vector<absl::StatusOr<std::vector<Tensor>>> out(kRuns);
  std::vector<absl::Notification> done(kRuns);
  for (int r = 0; r < kRuns; ++r) {
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                                {float(r), -1, 0, 0})};
    request.outputs = {0};
    if (r == kCancelled) request.cancel = cancel;
    executor_.Run(**net, std::move(request),
                  [&, r](absl::StatusOr<std::vector<Tensor>> result) {
                    out[r] = std::move(result);
                    done[r].Notify();
                  });
  }
  cancel->Cancel();
  faulty_[0]->Hold(false);
  for (int r = 0; r < kRuns; ++r) done[r].WaitForNotification();
  for (int r = 0; r < kRuns; ++r) {
    if (r == kFailing) {
      EXPECT_EQ(out[r].status().code(), absl::StatusCode::kInternal)
          << out[r].status();
    } else if (r == kCancelled) {
      EXPECT_EQ(out[r].status().code(), absl::StatusCode::kCancelled)
          << out[r].status();
    } else {
      ASSERT_TRUE(out[r].ok()) << r << ": " << out[r].status();
      // y = Relu(x + (1, -1, 1, -1)).
      const std::vector<float> want = {r + 1.0f, 0, 1, 0};
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ((*out[r])[0].data<float>()[i], want[i]) << r;
      }
    }
  }
  EXPECT_EQ(faulty_[0]->AvailableMemory(), free0);
  EXPECT_EQ(faulty_[1]->AvailableMemory(), free1);
}

TEST_F(ExecutorFaultTest, DeadDeviceFailsFastWithUnavailable) {
  faulty_[1]->Kill();
  const absl::Time start = absl::Now();
  auto out = Run();
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable)
      << out.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// Both devices die while the run is being enqueued (after its streams are
// open): every view's OnDone then runs at once, before the run's EndBatch
// calls, which must not touch views the finished run has closed (a
// use-after-free, seen under --config=asan).
TEST(ExecutorKillTest, DevicesKilledWhileEnqueueingFailTheRunCleanly) {
  for (int round = 0; round < 20; ++round) {
    std::vector<std::unique_ptr<FaultInjectingDevice>> faulty;
    for (int i = 0; i < 2; ++i) {
      DeviceConfig c;
      c.memory_bytes = 1 << 20;
      FaultOptions options;
      options.kill_at_launch = 1;
      faulty.push_back(std::make_unique<FaultInjectingDevice>(
          *SimDevice::Create(i, c), options));
    }
    Dag dag = TwoStageDag();
    for (int i = 0; i < 2; ++i) {
      dag.logical_devices[i] = faulty[i]->GetDeviceInfo();
    }
    auto net = Provisioner({faulty[0].get(), faulty[1].get()}).Provision(dag);
    ASSERT_TRUE(net.ok()) << net.status();
    Executor executor;
    absl::Notification done;
    absl::StatusOr<std::vector<Tensor>> result;
    ExecutionRequest request;
    request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                                {1, 1, 1, 1})};
    request.outputs = {0};
    executor.Run(**net, std::move(request),
                 [&](absl::StatusOr<std::vector<Tensor>> r) {
                   result = std::move(r);
                   done.Notify();
                 });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable)
        << result.status();
    EXPECT_TRUE(faulty[0]->dead());
    EXPECT_TRUE(faulty[1]->dead());
  }
}

}  // namespace
}  // namespace glint
