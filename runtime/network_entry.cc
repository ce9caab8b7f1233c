#include "runtime/network_entry.h"

#include <set>
#include <utility>

namespace glint {

bool RecordRunEnd(NetworkEntry& entry, const RunMeasures& measures, bool ok,
                  bool started) {
  const absl::Duration request = MonotonicNow() - measures.arrived;
  bool execution = false;
  if (ok) {
    NetworkStatsRecorder::Success success;
    success.request = request;
    success.queue = measures.admitted - measures.queued;
    success.compute_input = absl::Nanoseconds(measures.timings.input_ns);
    success.compute_infer = absl::Nanoseconds(measures.timings.compute_ns);
    success.compute_output = absl::Nanoseconds(measures.timings.output_ns);
    success.partition_ns = measures.timings.partition_ns;
    entry.stats.RecordSuccess(success);
    // A batched run's batch counts the execution and the devices' time.
    if (!measures.batched) {
      entry.stats.RecordExecution();
      execution = true;
    }
  } else {
    entry.stats.RecordFailure(request);
  }
  if (started || measures.batch_admitted) entry.stats.AddInFlight(-1);
  if (measures.batched && !measures.batch_admitted) {
    entry.stats.AddQueued(-1);
  }
  return execution;
}

ShapeBuildCounts CountShapeBuilds(NetworkEntry& entry) {
  std::vector<std::shared_ptr<ExecutableNetwork>> plans;
  {
    absl::MutexLock lock(&entry.mu);
    plans.push_back(entry.executable);
    for (const auto& [size, plan] : entry.smaller) plans.push_back(plan);
  }
  std::set<const CompiledFunction*> seen;
  ShapeBuildCounts total;
  for (const std::shared_ptr<ExecutableNetwork>& plan : plans) {
    if (plan == nullptr) continue;  // Unavailable.
    for (const std::unique_ptr<Replica>& replica : plan->replicas) {
      for (const ProvisionedPartition& p : replica->partitions) {
        if (p.function == nullptr) continue;
        const CompiledFunction& f = p.function->function();
        if (!seen.insert(&f).second) continue;
        const ShapeBuildCounts counts = f.shape_builds();
        total.builds += counts.builds;
        total.time += counts.time;
      }
    }
  }
  return total;
}

bool NoHealthyReplica(const ExecutableNetwork& network) {
  for (const auto& replica : network.replicas) {
    bool healthy = true;
    for (const ProvisionedPartition& p : replica->partitions) {
      healthy = healthy && p.device->healthy();
    }
    if (healthy) return false;
  }
  return true;
}

void Unpark(NetworkEntry& entry) {
  std::vector<std::function<void()>> parked;
  {
    absl::MutexLock lock(&entry.mu);
    parked.swap(entry.parked);
  }
  for (auto& run : parked) run();
}

void Drain(NetworkEntry& entry) {
  // Parked runs learn now that it is gone, and waiting ones are batched
  // without further delay.
  Unpark(entry);
  if (entry.batcher != nullptr) entry.batcher->Flush();
  absl::MutexLock lock(&entry.mu);
  entry.mu.Await(absl::Condition(
      +[](int* n) { return *n == 0; }, &entry.in_flight));
  // Evict now rather than when the last reference goes: finished runs'
  // callbacks may still hold the entry for a moment, but never touch the
  // executable again, and the caller expects the memory back on return.
  entry.executable.reset();
  entry.smaller.clear();
}

void AwaitUnused(NetworkEntry& entry,
                 std::vector<std::shared_ptr<ExecutableNetwork>>& plans) {
  absl::MutexLock lock(&entry.mu);
  entry.mu.Await(absl::Condition(
      +[](std::vector<std::shared_ptr<ExecutableNetwork>>* plans) {
        for (const auto& p : *plans) {
          if (p.use_count() > 1) return false;
        }
        return true;
      },
      &plans));
  plans.clear();
}

bool UsesAnyOf(const NetworkEntry& entry,
               const std::vector<const DeviceManager*>& devices) {
  auto uses = [&devices](const std::shared_ptr<ExecutableNetwork>& network) {
    for (const auto& replica : network->replicas) {
      for (const ProvisionedPartition& p : replica->partitions) {
        for (const DeviceManager* device : devices) {
          if (p.device == device) return true;
        }
      }
    }
    return false;
  };
  if (entry.executable != nullptr && uses(entry.executable)) return true;
  for (const auto& [size, smaller] : entry.smaller) {
    if (uses(smaller)) return true;
  }
  return false;
}

void LeaveNetwork(NetworkEntry& entry,
                  std::shared_ptr<ExecutableNetwork>& executable)
    ABSL_LOCKS_EXCLUDED(entry.mu) {
  absl::MutexLock lock(&entry.mu);
  executable.reset();
  --entry.in_flight;
}

void LeaveNetworkPlan(NetworkEntry& entry,
                      std::shared_ptr<ExecutableNetwork>& executable)
    ABSL_LOCKS_EXCLUDED(entry.mu) {
  absl::MutexLock lock(&entry.mu);
  executable.reset();
}

}  // namespace glint
