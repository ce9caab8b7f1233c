// NetworkEntry: a network as HostManager keeps it, shared by the
// HostManager's map and by the runs on it, and the small operations on it
// that the HostManager's parts share. Internal to runtime/.
//
// Thread-safety: as each member says (most under NetworkEntry::mu).
#ifndef GLINT_RUNTIME_NETWORK_ENTRY_H_
#define GLINT_RUNTIME_NETWORK_ENTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "devices/device_manager.h"
#include "executor/executor.h"
#include "provisioner/executable_network.h"
#include "runtime/batcher.h"
#include "runtime/statistics.h"

namespace glint {

// A network added to the HostManager. Shared by the map and by its runs, so
// RemoveNetwork can drop it from the map while runs finish.
struct NetworkEntry {
  // name, inputs and outputs never change; the rest (the plan) is replaced
  // under HostManager::mu_ when the network is re-provisioned.
  NetworkInfo info;
  // What it was added from, to re-provision it when a device dies.
  std::string model;
  AddNetworkOptions options;

  absl::Mutex mu;
  // Null while unavailable. Each run holds a reference (taken and dropped
  // under `mu`) until it ends, so re-provisioning can swap it under them
  // and wait for the old one's runs.
  std::shared_ptr<ExecutableNetwork> executable ABSL_GUARDED_BY(mu);
  // With dynamic batching, the network compiled at each preferred batch
  // size below max_batch_size (`executable` is the max_batch_size one),
  // replaced with it; batches' references are held like runs'.
  std::map<int, std::shared_ptr<ExecutableNetwork>> smaller
      ABSL_GUARDED_BY(mu);
  int in_flight ABSL_GUARDED_BY(mu) = 0;
  // Runs that arrived while every replica sat on a dead device, waiting
  // for the re-provisioned plan (or the network's removal, or shutdown) to
  // start them again.
  std::vector<std::function<void()>> parked ABSL_GUARDED_BY(mu);
  // Set when the network batches (AddNetworkOptions::batching); never
  // changes after the add, also across re-provisioning (same shapes).
  std::shared_ptr<Batcher> batcher;
  // In the journal (added with one); ReplaceNetwork's networks are not, and
  // RemoveNetwork then has nothing to erase there.
  bool journaled = false;

  // Its serving statistics (thread-safe on its own).
  NetworkStatsRecorder stats;
};

// A run's clock readings for its statistics: written by the steps of
// RunNetworkAsync in order (each step happens after the one before), read
// by FinishRun.
struct RunMeasures {
  absl::Duration arrived;    // MonotonicNow() when RunNetworkAsync began.
  absl::Duration queued;     // When it asked for admission.
  absl::Duration admitted;   // When it was admitted.
  RunTimings timings;        // The executor's (ExecutionRequest::timings).
  // A batched run: `admitted` and `timings` are its batch's, which counts
  // the execution (see HostManager::MakeBatcher); `batch_admitted` says
  // whether its batch was admitted (then the run counts in flight).
  bool batched = false;
  bool batch_admitted = false;
  // Queued with its plan's execution slots all taken (written by
  // AdmissionQueue::Admit under its lock, read once admitted).
  bool waited_for_slot = false;
};

// Records the end of a run on `entry` in its statistics: its durations if
// it succeeded (`ok`), else its failure, and its leaving the in-flight
// count (`started`, or its batch was admitted) or the queue. Returns
// whether it counts as an execution of its own (an unbatched success),
// whose device launches the caller then records.
bool RecordRunEnd(NetworkEntry& entry, const RunMeasures& measures, bool ok,
                  bool started);

// The run-time kernel builds of the entry's plans (every compiled function
// counted once, however many replicas or devices load it).
ShapeBuildCounts CountShapeBuilds(NetworkEntry& entry)
    ABSL_LOCKS_EXCLUDED(entry.mu);

// Whether every replica of `network` has a partition on a dead device.
bool NoHealthyReplica(const ExecutableNetwork& network);

// Starts runs parked on `entry` (see NetworkEntry::parked) again.
void Unpark(NetworkEntry& entry);

// Waits for the runs of `entry`, which new runs can no longer find, then
// evicts its functions.
void Drain(NetworkEntry& entry);

// Waits until nothing but `plans` holds any of them (runs and batches take
// and drop their references under entry.mu), then drops them: their
// partitions are unloaded on return.
void AwaitUnused(NetworkEntry& entry,
                 std::vector<std::shared_ptr<ExecutableNetwork>>& plans)
    ABSL_LOCKS_EXCLUDED(entry.mu);

// Whether any partition of the entry's plans sits on one of `devices`.
bool UsesAnyOf(const NetworkEntry& entry,
               const std::vector<const DeviceManager*>& devices)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu);

// Ends a run's hold on its network: drops its reference to the executable
// and its in-flight count, which RemoveNetwork and re-provisioning wait for.
void LeaveNetwork(NetworkEntry& entry,
                  std::shared_ptr<ExecutableNetwork>& executable)
    ABSL_LOCKS_EXCLUDED(entry.mu);

// Drops a batch's reference to the plan it ran on, under entry.mu so that
// re-provisioning, which waits for the old plan's last user, sees it.
void LeaveNetworkPlan(NetworkEntry& entry,
                      std::shared_ptr<ExecutableNetwork>& executable)
    ABSL_LOCKS_EXCLUDED(entry.mu);

}  // namespace glint

#endif  // GLINT_RUNTIME_NETWORK_ENTRY_H_
