// Throughput against runs in flight for a network split by memory onto
// devices it nearly fills (issue 33): runs are admitted by the executions
// whose device memory the plan reserved, so throughput should rise to the
// devices' capacity and stay flat beyond it, with no run failing.
//
//   bazel run -c opt //bench:memory_admission_bench --
//   [levels=1,2,4,8,48,256,1024]
//       [seconds=3] [max_concurrent_executions=8] [compute_gflops=0]
//
// The network: an MLP of 12 layers of 1024×1024 floats (48 MiB of weights)
// on a batch of 256 rows (1 MiB a value), added with strategy memory to 4
// sim devices of 24 MiB (the set-up: 3 partitions, each device
// nearly full, with room for one or two executions' values beside the
// weights). The baseline in the same run: the same model whole on one
// device of 1 GiB (every execution it wants reserved). Each level keeps that
// many RunNetworkAsync calls outstanding (a closed loop: each answer starts the
// next call) for the given seconds; printed per level: runs/s, its ratio
// to the level-1 figure of the same plan, p50 latency, failures by code and
// the runs that waited for an execution slot. Asserts nothing.
//
// With compute_gflops > 0 every device gets the simulated timing model at
// that rate (devices/sim: a launch takes at least its FLOPs at that rate,
// waiting rather than computing beyond the host's own time), so that the
// devices work side by side as accelerators would instead of sharing this
// host's cores: the split plan's three stages can then overlap, and
// throughput at 3 in flight and beyond shows whether runs hold a stage's
// execution state only while they are on it (a pipeline) or the whole
// network's until they end (one run at a time).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/timing.h"
#include "onnx/test_models.h"
#include "runtime/host_manager.h"

namespace glint {
namespace {

constexpr int64_t kBatch = 256;
constexpr int64_t kWidth = 1024;
constexpr int kLayers = 12;

struct Level {
  int in_flight = 0;
  int64_t ok = 0;
  std::map<std::string, int64_t> failures;  // By status code.
  double seconds = 0;
  double p50_ms = 0;
  uint64_t slot_waits = 0;
};

// A closed loop of `in_flight` calls for `duration`.
class Loop {
 public:
  Loop(HostManager* host, std::string name, Tensor input, int in_flight,
       absl::Duration duration)
      : host_(host),
        name_(std::move(name)),
        input_(std::move(input)),
        in_flight_(in_flight),
        stop_at_(absl::Now() + duration) {}

  Level Run() {
    const absl::Time start = absl::Now();
    for (int i = 0; i < in_flight_; ++i) Call();
    done_.WaitForNotification();
    Level level;
    level.in_flight = in_flight_;
    level.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    absl::MutexLock lock(&mu_);
    level.ok = ok_;
    level.failures = failures_;
    level.p50_ms = bench::Median(latencies_ms_);
    return level;
  }

 private:
  void Call() {
    const absl::Time sent = absl::Now();
    host_->RunNetworkAsync(
        name_, {{"x", input_}}, RunOptions(),
        [this, sent](absl::StatusOr<std::vector<NamedTensor>> out) {
          const absl::Time now = absl::Now();
          bool again = false;
          {
            absl::MutexLock lock(&mu_);
            if (out.ok()) {
              ++ok_;
              latencies_ms_.push_back(absl::ToDoubleMilliseconds(now - sent));
            } else {
              ++failures_[absl::StatusCodeToString(out.status().code())];
            }
            // A failed call ends its slot of the loop (a failure may be
            // answered inline: calling again from here would recurse).
            again = out.ok() && now < stop_at_;
            if (!again && --outstanding_ == 0) done_.Notify();
          }
          if (again) Call();
        });
  }

  HostManager* const host_;
  const std::string name_;
  const Tensor input_;
  const int in_flight_;
  const absl::Time stop_at_;
  absl::Mutex mu_;
  int outstanding_ ABSL_GUARDED_BY(mu_) = in_flight_;
  int64_t ok_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> failures_ ABSL_GUARDED_BY(mu_);
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  absl::Notification done_;
};

Tensor Input() {
  std::vector<float> x(kBatch * kWidth);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 13) / 13.0f - 0.5f;
  return Tensor::FromVector(DType::kFloat32, Shape({kBatch, kWidth}), x);
}

// Adds the model to a new HostManager on `devices` and runs every level.
int Measure(const std::string& title, const std::vector<DeviceConfig>& devices,
            PartitionStrategy strategy, const std::vector<int>& levels,
            absl::Duration duration, int max_executions) {
  HostManagerOptions options;
  options.max_queue_size = 4096;
  options.max_concurrent_executions = max_executions;
  auto host = HostManager::CreateFromConfigs(options, devices);
  if (!host.ok()) {
    std::fprintf(stderr, "%s\n", host.status().ToString().c_str());
    return 1;
  }
  AddNetworkOptions add;
  add.partition.strategy = strategy;
  absl::StatusOr<NetworkInfo> info = (*host)->AddNetwork(
      "mlp", testing::MakeDeepMlpModel(kBatch, kWidth, kLayers), add);
  if (!info.ok()) {
    std::fprintf(stderr, "%s\n", info.status().ToString().c_str());
    return 1;
  }
  std::printf("\n%s: %zu partitions\n", title.c_str(),
              info->partitions.size());
  for (const PartitionInfo& p : info->partitions) {
    std::printf("  %s on %s: weights %.1f MiB, %llu B per execution, "
                "executions reserved: %d\n",
                p.name.c_str(), p.device_name.c_str(),
                p.weight_bytes / 1048576.0,
                static_cast<unsigned long long>(p.execution_bytes),
                p.executions);
  }
  std::printf("%9s %9s %9s %9s %10s %s\n", "in flight", "runs/s", "ratio",
              "p50 ms", "slot waits", "failures");
  double first = 0;
  uint64_t waits_before = 0;
  for (int in_flight : levels) {
    Level level =
        Loop(host->get(), "mlp", Input(), in_flight, duration).Run();
    absl::StatusOr<NetworkStatistics> stats = (*host)->GetStatistics("mlp");
    const uint64_t waits = stats.ok() ? stats->slot_wait.count : 0;
    level.slot_waits = waits - waits_before;
    waits_before = waits;
    const double rate = level.ok / level.seconds;
    if (first == 0) first = rate;
    std::string failures;
    for (const auto& [code, count] : level.failures) {
      absl::StrAppend(&failures, code, " ", count, " ");
    }
    std::printf("%9d %9.1f %9.2f %9.2f %10llu %s\n", in_flight, rate,
                first > 0 ? rate / first : 0, level.p50_ms,
                static_cast<unsigned long long>(level.slot_waits),
                failures.empty() ? "none" : failures.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  std::vector<int> levels = {1, 2, 4, 8, 48, 256, 1024};
  double seconds = 3;
  int max_executions = 8;
  if (argc > 1) {
    levels.clear();
    for (absl::string_view s : absl::StrSplit(argv[1], ',')) {
      int n = 0;
      if (!absl::SimpleAtoi(s, &n) || n < 1) {
        std::fprintf(stderr, "bad level '%s'\n", std::string(s).c_str());
        return 2;
      }
      levels.push_back(n);
    }
  }
  if (argc > 2 && (!absl::SimpleAtod(argv[2], &seconds) || seconds <= 0)) {
    std::fprintf(stderr, "bad seconds '%s'\n", argv[2]);
    return 2;
  }
  if (argc > 3 && (!absl::SimpleAtoi(argv[3], &max_executions) ||
                   max_executions < 1)) {
    std::fprintf(stderr, "bad max_concurrent_executions '%s'\n", argv[3]);
    return 2;
  }
  double gflops = 0;
  if (argc > 4 && (!absl::SimpleAtod(argv[4], &gflops) || gflops < 0)) {
    std::fprintf(stderr, "bad compute_gflops '%s'\n", argv[4]);
    return 2;
  }
  std::printf("load average: %s\n", glint::bench::LoadAverage().c_str());
  std::vector<glint::DeviceConfig> split(4);
  for (glint::DeviceConfig& d : split) d.memory_bytes = uint64_t{24} << 20;
  std::vector<glint::DeviceConfig> whole(1);
  whole[0].memory_bytes = uint64_t{1} << 30;
  if (gflops > 0) {
    for (glint::DeviceConfig& d : split) {
      d.params["compute_gflops"] = absl::StrCat(gflops);
    }
    whole[0].params["compute_gflops"] = absl::StrCat(gflops);
    std::printf("devices with the timing model at %g GFLOP/s\n", gflops);
  }
  const absl::Duration duration = absl::Seconds(seconds);
  if (int rc = glint::Measure("split by memory over 4 devices of 24 MiB",
                              split, glint::PartitionStrategy::kMemory,
                              levels, duration, max_executions)) {
    return rc;
  }
  if (int rc = glint::Measure("baseline: whole on 1 device of 1 GiB", whole,
                              glint::PartitionStrategy::kWhole, levels,
                              duration, max_executions)) {
    return rc;
  }
  std::printf("load average: %s\n", glint::bench::LoadAverage().c_str());
  return 0;
}
