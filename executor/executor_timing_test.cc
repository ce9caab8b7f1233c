// The executor against the timing model: each partition takes a known
// simulated time, so concurrency shows in wall-clock totals. Bounds are
// wide (the machines are shared) but separate the overlapped schedule
// from the serial one.
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "devices/sim/sim_device.h"
#include "executor/executor.h"
#include "gtest/gtest.h"
#include "provisioner/provisioner.h"

namespace glint {
namespace {

// Each partition is one Add of 4 elements (4 FLOPs); at 40 FLOP/s it takes
// 100 ms of simulated compute.
constexpr absl::Duration kStage = absl::Milliseconds(100);
constexpr char kSlowGflops[] = "0.00000004";

ValueInfo F32(const std::string& name) {
  return {name, DType::kFloat32, Shape({4})};
}

// Builds a graph of Adds and a DAG with one partition per node, on the
// given logical devices.
struct AddSpec {
  std::string a, b, out;
  int device;
};

Dag MakeDag(const std::vector<AddSpec>& adds, const std::string& output) {
  Graph g;
  g.opset_version = 13;
  g.inputs = {F32("x")};
  g.values["x"] = F32("x");
  g.initializers["w"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 2, 3, 4});
  g.values["w"] = F32("w");
  for (size_t i = 0; i < adds.size(); ++i) {
    g.nodes.push_back(Node{"add" + std::to_string(i), "Add", "",
                           {adds[i].a, adds[i].b}, {adds[i].out}, {}});
    g.values[adds[i].out] = F32(adds[i].out);
  }
  g.outputs = {F32(output)};
  Dag dag;
  dag.inputs = g.inputs;
  dag.outputs = g.outputs;
  int devices = 0;
  for (const AddSpec& a : adds) devices = std::max(devices, a.device + 1);
  dag.num_logical_devices = devices;
  DeviceInfo sim;
  sim.type = "sim";
  dag.logical_devices.assign(devices, sim);
  for (size_t i = 0; i < adds.size(); ++i) {
    DagNode node;
    node.name = "p" + std::to_string(i);
    node.graph_nodes = {static_cast<int>(i)};
    node.function = g.Subgraph(node.graph_nodes);
    node.logical_device = adds[i].device;
    for (size_t j = 0; j < i; ++j) {
      for (const std::string& in : {adds[i].a, adds[i].b}) {
        if (in == adds[j].out) node.parents.push_back(static_cast<int>(j));
      }
    }
    dag.nodes.push_back(std::move(node));
  }
  return dag;
}

class ExecutorTimingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      DeviceConfig c;
      c.memory_bytes = 1 << 20;
      c.params["compute_gflops"] = kSlowGflops;
      devices_.push_back(*SimDevice::Create(i, c));
    }
  }

  std::unique_ptr<ExecutableNetwork> Provision(
      const Dag& dag, int max_executions = Provisioner::kDefaultMaxExecutions) {
    auto net = Provisioner({devices_[0].get(), devices_[1].get()})
                   .Provision(dag, CompileOptions(), max_executions);
    EXPECT_TRUE(net.ok()) << net.status();
    return net.ok() ? *std::move(net) : nullptr;
  }

  // Starts `runs` runs at once; returns how long Run() took to return
  // (longest) and how long until all finished.
  std::pair<absl::Duration, absl::Duration> RunConcurrently(
      const ExecutableNetwork& net, int runs) {
    std::vector<absl::Notification> done(runs);
    std::vector<absl::Status> status(runs);
    absl::Duration enqueue;
    const absl::Time start = absl::Now();
    for (int r = 0; r < runs; ++r) {
      ExecutionRequest request;
      request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                                  {0, 0, 0, 0})};
      request.outputs = {0};
      const absl::Time before = absl::Now();
      executor_.Run(net, std::move(request),
                    [&, r](absl::StatusOr<std::vector<Tensor>> out) {
                      status[r] = out.status();
                      done[r].Notify();
                    });
      enqueue = std::max(enqueue, absl::Now() - before);
    }
    for (int r = 0; r < runs; ++r) {
      done[r].WaitForNotification();
      EXPECT_TRUE(status[r].ok()) << status[r];
    }
    return {enqueue, absl::Now() - start};
  }

  std::vector<std::unique_ptr<SimDevice>> devices_;
  Executor executor_;
};

TEST_F(ExecutorTimingTest, HostIsFreeLongBeforeTheRunCompletes) {
  auto net = Provision(MakeDag({{"x", "w", "a", 0}, {"a", "w", "y", 1}}, "y"));
  ASSERT_NE(net, nullptr);
  // The devices' first run starts their stream threads (slow under a
  // sanitizer); what is measured is a run's own enqueueing.
  RunConcurrently(*net, 1);
  const auto [enqueue, total] = RunConcurrently(*net, 1);
  EXPECT_GE(total, 2 * kStage);
  // Enqueueing the whole DAG is host work only; the run takes 200 ms.
  EXPECT_LT(enqueue, kStage / 2) << enqueue;
}

TEST_F(ExecutorTimingTest, IndependentBranchesRunConcurrently) {
  // a = x + w on device 0 and b = x + w on device 1 in parallel, then
  // y = a + b on device 0: critical path 2 stages, sum 3 stages.
  auto net = Provision(MakeDag(
      {{"x", "w", "a", 0}, {"x", "w", "b", 1}, {"a", "b", "y", 0}}, "y"));
  ASSERT_NE(net, nullptr);
  const auto [enqueue, total] = RunConcurrently(*net, 1);
  EXPECT_GE(total, 2 * kStage);
  EXPECT_LT(total, 2 * kStage + kStage * 3 / 4) << total;
}

TEST_F(ExecutorTimingTest, ConcurrentRequestsPipelineAcrossStages) {
  // Two stages on two devices, two requests: request 2's stage 1 overlaps
  // request 1's stage 2, so 3 stage-times instead of 4.
  auto net = Provision(MakeDag({{"x", "w", "a", 0}, {"a", "w", "y", 1}}, "y"));
  ASSERT_NE(net, nullptr);
  const auto [enqueue, total] = RunConcurrently(*net, 2);
  EXPECT_GE(total, 3 * kStage);
  EXPECT_LT(total, 3 * kStage + kStage * 3 / 4) << total;
}

TEST_F(ExecutorTimingTest, OneExecutionPerStageStillPipelines) {
  // The same with one execution state reserved per partition: a run holds
  // a stage's state only while it is on that stage, so 4 requests take 5
  // stage-times, not 8 (one run at a time). The bound is halfway between:
  // each of the 4 runs hands its states on twice, which under TSan on a
  // busy machine cost 76 ms over the 5 stages.
  auto net = Provision(MakeDag({{"x", "w", "a", 0}, {"a", "w", "y", 1}}, "y"),
                       /*max_executions=*/1);
  ASSERT_NE(net, nullptr);
  ASSERT_EQ(net->replicas[0]->executions(0), 1u);
  ASSERT_EQ(net->replicas[0]->executions(1), 1u);
  const auto [enqueue, total] = RunConcurrently(*net, 4);
  EXPECT_GE(total, 5 * kStage);
  EXPECT_LT(total, 5 * kStage + kStage * 3 / 2) << total;
}

// RunTimings: each phase as the timing model makes it. Every copy takes the
// link latency (input x, the peer copy of `a`, output y: one each) and each
// partition its stage; the wait for device 0 counts in no phase.
TEST(ExecutorRunTimingsTest, PhasesAreMeasuredOnTheStreams) {
  constexpr absl::Duration kCopy = absl::Milliseconds(30);
  std::vector<std::unique_ptr<SimDevice>> devices;
  for (int i = 0; i < 2; ++i) {
    DeviceConfig c;
    c.memory_bytes = 1 << 20;
    c.params["compute_gflops"] = kSlowGflops;
    c.params["link_latency_us"] = "30000";
    devices.push_back(*SimDevice::Create(i, c));
  }
  auto net = Provisioner({devices[0].get(), devices[1].get()})
                 .Provision(MakeDag({{"x", "w", "a", 0}, {"a", "w", "y", 1}},
                                    "y"));
  ASSERT_TRUE(net.ok()) << net.status();
  ExecutionRequest request;
  request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                              {0, 0, 0, 0})};
  request.outputs = {0};
  auto timings = std::make_shared<RunTimings>();
  request.timings = timings;
  absl::Notification done;
  absl::Status status;
  Executor executor;
  const absl::Time start = absl::Now();
  executor.Run(**net, std::move(request),
               [&](absl::StatusOr<std::vector<Tensor>> out) {
                 status = out.status();
                 done.Notify();
               });
  done.WaitForNotification();
  const absl::Duration wall = absl::Now() - start;
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(timings->partition_ns.size(), 2u);
  for (int64_t ns : timings->partition_ns) {
    EXPECT_GE(absl::Nanoseconds(ns), kStage);
  }
  EXPECT_EQ(timings->compute_ns,
            timings->partition_ns[0] + timings->partition_ns[1]);
  EXPECT_EQ(timings->partition_device, (std::vector<int>{0, 1}));
  EXPECT_GE(absl::Nanoseconds(timings->input_ns), 2 * kCopy);
  EXPECT_GE(absl::Nanoseconds(timings->output_ns), kCopy);
  // The stages and copies are serial here, and nothing is counted twice
  // (the wait of device 1 for device 0 is in no phase): the phases fit in
  // the run's wall time.
  EXPECT_LE(absl::Nanoseconds(timings->input_ns + timings->compute_ns +
                              timings->output_ns),
            wall);
}

// Untimed runs leave no clocks behind; a run that fails before its
// launches reports no compute.
TEST(ExecutorRunTimingsTest, FailedRunReportsNoCompute) {
  DeviceConfig c;
  c.memory_bytes = 1 << 20;
  std::unique_ptr<SimDevice> device = *SimDevice::Create(0, c);
  auto net = Provisioner({device.get()})
                 .Provision(MakeDag({{"x", "w", "y", 0}}, "y"));
  ASSERT_TRUE(net.ok()) << net.status();
  ExecutionRequest request;
  request.inputs = {Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                              {0, 0, 0, 0})};
  request.outputs = {0};
  request.deadline = absl::Now() - absl::Seconds(1);
  auto timings = std::make_shared<RunTimings>();
  request.timings = timings;
  absl::Notification done;
  absl::Status status;
  Executor().Run(**net, std::move(request),
                 [&](absl::StatusOr<std::vector<Tensor>> out) {
                   status = out.status();
                   done.Notify();
                 });
  done.WaitForNotification();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(timings->compute_ns, 0);
}

}  // namespace
}  // namespace glint
