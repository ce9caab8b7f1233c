// Executor benchmarks (issue 5). Prints figures and ratios against
// baselines run alongside; asserts nothing.
//
//   bazel run //bench:executor_bench
//
// 1. Per-partition overhead: a chain of K trivial partitions alternating
//    between 2 devices, against the same K nodes as one partition on one
//    device; (chain - single) / K is the cost of one partition hop (wait on
//    the producer's event, peer copy, launch, record).
// 2. Pipeline throughput: 2 stages of 5 ms simulated compute on 2 devices,
//    against the same network whole on 1 device, 16 requests in flight.
// 3. Concurrency: throughput of the 2-device chain at 1, 4, 16, 64, 512
//    concurrent runs, with the most threads the process had meanwhile
//    (runs share each device's streams, so it should not grow with them).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "devices/sim/sim_device.h"
#include "executor/executor.h"
#include "partitioner/partitioner.h"
#include "provisioner/provisioner.h"

namespace glint {
namespace {

// x[n] → Add(w) → Add(w) → ... (k Adds) → y.
Graph AddChain(int k, int64_t n) {
  Graph g;
  g.opset_version = 13;
  const ValueInfo x{"x", DType::kFloat32, Shape({n})};
  g.inputs = {x};
  g.values["x"] = x;
  g.initializers["w"] = *Tensor::Create(DType::kFloat32, Shape({n}));
  g.values["w"] = {"w", DType::kFloat32, Shape({n})};
  std::string prev = "x";
  for (int i = 0; i < k; ++i) {
    const std::string out = i + 1 == k ? "y" : "t" + std::to_string(i);
    g.nodes.push_back(
        Node{"add" + std::to_string(i), "Add", "", {prev, "w"}, {out}, {}});
    g.values[out] = {out, DType::kFloat32, Shape({n})};
    prev = out;
  }
  g.outputs = {g.values["y"]};
  return g;
}

std::vector<std::unique_ptr<SimDevice>> MakeDevices(int n,
                                                    const char* gflops) {
  std::vector<std::unique_ptr<SimDevice>> devices;
  for (int i = 0; i < n; ++i) {
    DeviceConfig c;
    c.memory_bytes = 256 * kMiB;
    if (gflops != nullptr) c.params["compute_gflops"] = gflops;
    devices.push_back(*SimDevice::Create(i, c));
  }
  return devices;
}

std::unique_ptr<ExecutableNetwork> Build(
    const Graph& g, const std::vector<std::unique_ptr<SimDevice>>& devices,
    PartitionOptions options) {
  std::vector<DeviceInfo> infos;
  std::vector<DeviceManager*> raw;
  for (const auto& d : devices) {
    infos.push_back(d->GetDeviceInfo());
    raw.push_back(d.get());
  }
  auto dag = Partition(g, infos, options);
  if (!dag.ok()) {
    std::fprintf(stderr, "partition: %s\n", dag.status().ToString().c_str());
    std::exit(1);
  }
  auto net = Provisioner(raw).Provision(*dag);
  if (!net.ok()) {
    std::fprintf(stderr, "provision: %s\n", net.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(net);
}

// Threads of this process, from /proc/self/task.
int ThreadCount() {
  int n = 0;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", error);
       !error && it != std::filesystem::directory_iterator();
       it.increment(error)) {
    ++n;
  }
  return n;
}

// The most threads seen by NoteThreads() since the last ResetThreads().
std::atomic<int> most_threads{0};
void NoteThreads() {
  const int n = ThreadCount();
  int seen = most_threads.load();
  while (n > seen && !most_threads.compare_exchange_weak(seen, n)) {
  }
}
void ResetThreads() { most_threads = ThreadCount(); }

// Runs `total` runs keeping `in_flight` outstanding; returns runs/second.
// Counts the process's threads every 64 completions.
double Throughput(const Executor& executor, const ExecutableNetwork& net,
                  int64_t n, int total, int in_flight) {
  absl::Mutex mu;
  int started = 0, finished = 0;
  const Tensor input = *Tensor::Create(DType::kFloat32, Shape({n}));
  std::function<void()> start_one;
  start_one = [&] {
    ExecutionRequest request;
    request.inputs = {input};
    request.outputs = {0};
    executor.Run(net, std::move(request),
                 [&](absl::StatusOr<std::vector<Tensor>> out) {
                   bool more = false;
                   bool count = false;
                   {
                     absl::MutexLock lock(&mu);
                     ++finished;
                     count = finished % 64 == 1;
                     if (started < total) {
                       ++started;
                       more = true;
                     }
                   }
                   if (count) NoteThreads();
                   if (more) start_one();
                 });
  };
  const absl::Time begin = absl::Now();
  {
    absl::MutexLock lock(&mu);
    started = std::min(in_flight, total);
  }
  for (int i = 0; i < std::min(in_flight, total); ++i) start_one();
  NoteThreads();
  absl::MutexLock lock(&mu);
  auto all_done = [&] { return finished == total; };
  mu.Await(absl::Condition(&all_done));
  return total / absl::ToDoubleSeconds(absl::Now() - begin);
}

double MedianRunMicros(const Executor& executor, const ExecutableNetwork& net,
                       int64_t n, int runs) {
  const Tensor input = *Tensor::Create(DType::kFloat32, Shape({n}));
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    absl::Notification done;
    ExecutionRequest request;
    request.inputs = {input};
    request.outputs = {0};
    const absl::Time start = absl::Now();
    executor.Run(net, std::move(request),
                 [&](absl::StatusOr<std::vector<Tensor>>) { done.Notify(); });
    done.WaitForNotification();
    t.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace
}  // namespace glint

int main() {
  using namespace glint;
  // As glintd runs (runtime/server/README.md): Debian's Abseil has mutex
  // deadlock detection on, which keeps a global lock graph that costs
  // runs with many in flight; glintd turns it off, so the bench does too.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Executor executor;

  // 1. Per-partition overhead.
  constexpr int kHops = 32;
  auto devices = MakeDevices(2, nullptr);
  const Graph chain = AddChain(kHops, 16);
  PartitionOptions alternate;
  alternate.strategy = PartitionStrategy::kUser;
  for (int i = 0; i < kHops; ++i) {
    alternate.user_plan.push_back({"add" + std::to_string(i), i % 2});
  }
  auto hops = Build(chain, devices, alternate);
  PartitionOptions whole;
  whole.strategy = PartitionStrategy::kWhole;
  auto single = Build(chain, devices, whole);
  const double hop_us = MedianRunMicros(executor, *hops, 16, 300);
  const double single_us = MedianRunMicros(executor, *single, 16, 300);
  std::printf("per-partition overhead: %d partitions on 2 devices %.1f us, "
              "one partition %.1f us -> %.2f us per partition hop\n",
              kHops, hop_us, single_us, (hop_us - single_us) / kHops);

  // 2. Pipeline throughput with the timing model: each Add of 100,000
  // elements is 1e5 FLOPs; at 20 MFLOP/s that is 5 ms.
  auto timed = MakeDevices(2, "0.02");
  const Graph two = AddChain(2, 100000);
  PartitionOptions pipeline;
  pipeline.strategy = PartitionStrategy::kLoadBalanced;
  pipeline.plan_devices = 2;
  auto staged = Build(two, timed, pipeline);
  auto one = Build(two, timed, whole);
  const double staged_rps = Throughput(executor, *staged, 100000, 200, 16);
  const double one_rps = Throughput(executor, *one, 100000, 200, 16);
  std::printf("pipeline: 2 stages on 2 devices %.1f runs/s, 1 device %.1f "
              "runs/s -> %.2fx\n",
              staged_rps, one_rps, staged_rps / one_rps);

  // 3. Concurrency on the 2-device chain (no timing model).
  std::printf("concurrency (%d-partition chain, 2 devices), runs in flight: "
              "runs/s (vs 1), most threads of the process meanwhile\n",
              kHops);
  const int threads_before = ThreadCount();
  ResetThreads();
  const double base = Throughput(executor, *hops, 16, 2000, 1);
  const int base_threads = most_threads.load();
  int most = base_threads;
  for (int c : {1, 4, 16, 64, 512}) {
    ResetThreads();
    const double rps =
        c == 1 ? base : Throughput(executor, *hops, 16, std::max(2000, 4 * c), c);
    const int threads = c == 1 ? base_threads : most_threads.load();
    most = std::max(most, threads);
    std::printf("  %4d: %6.0f runs/s (%.2fx), %d threads\n", c, rps,
                rps / base, threads);
  }
  std::printf("threads: %d before the concurrency runs, at most %d during "
              "them (4 devices made, 2 of them timed)\n",
              threads_before, most);
  return 0;
}
