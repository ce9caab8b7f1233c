// The provisioned network: what the Provisioner builds and the Executor
// runs. Compiled and loaded partitions, their placement, the routing of
// every value between them (decided once, at provisioning) and the pooled
// per-run execution states. A leaf type: it knows devices, not the
// components that build or run it.
#ifndef GLINT_PROVISIONER_EXECUTABLE_NETWORK_H_
#define GLINT_PROVISIONER_EXECUTABLE_NETWORK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "devices/device_manager.h"

namespace glint {

// What one run of a replica needs on the devices: the device tensors of
// the values crossing partition borders and the partitions' done-events.
// Owned by one run at a time. Thread-compatible.
struct ExecutionState {
  ExecutionState(size_t num_tensors, size_t num_partitions)
      : tensors(num_tensors) {
    done_events.reserve(num_partitions);
    for (size_t i = 0; i < num_partitions; ++i) {
      done_events.push_back(std::make_unique<Event>());
    }
  }

  // One per tensor slot of the replica (ReplicaRouting::num_tensors).
  // Buffers stay between runs and are reused when large enough. Sized once
  // at construction, so addresses stay stable while enqueued work points
  // at them.
  std::vector<DeviceTensor> tensors;
  std::vector<std::unique_ptr<Event>> done_events;  // One per partition.
  // Whether the state served a run before (it then holds its buffers).
  bool warm = false;
};

// The execution states of one replica: the ones reserved for it at
// provisioning (their buffers allocated on the devices up front, so that a
// run holding one allocates nothing for the values it plans) and, beyond
// them, states made on demand. Thread-safe.
//
// Whoever runs the replica bounds how many runs hold a state at once to
// reserved() (HostManager's admission does); a run beyond it still gets a
// state, a new empty one whose buffers it allocates as it runs, as callers
// without admission (tools, tests) always did.
class ExecutionStatePool {
 public:
  // Idle states kept at most beyond the reserved ones; states beyond it are
  // freed on release, so a burst of concurrent runs does not pin its memory
  // for ever.
  static constexpr size_t kMaxIdle = 8;

  // New states get `num_tensors` tensor slots and `num_partitions`
  // done-events.
  ExecutionStatePool(size_t num_tensors, size_t num_partitions)
      : num_tensors_(num_tensors), num_partitions_(num_partitions) {}

  // A state with the pool's slots and done-events, for Reserve to fill.
  std::unique_ptr<ExecutionState> MakeState() const {
    return std::make_unique<ExecutionState>(num_tensors_, num_partitions_);
  }

  // Adds states whose buffers hold reserved device memory; they are kept
  // for the pool's lifetime. Called before the replica runs.
  void Reserve(std::vector<std::unique_ptr<ExecutionState>> states)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    reserved_ += states.size();
    for (auto& state : states) idle_.push_back(std::move(state));
  }

  // An idle state, or null when none is.
  std::unique_ptr<ExecutionState> TryAcquire() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<ExecutionState> state = std::move(idle_.back());
    idle_.pop_back();
    return state;
  }

  // An idle state, or a new empty one.
  std::unique_ptr<ExecutionState> Acquire() ABSL_LOCKS_EXCLUDED(mu_) {
    std::unique_ptr<ExecutionState> state = TryAcquire();
    return state != nullptr ? std::move(state) : MakeState();
  }

  // A kept buffer may exceed what its last run used by this much (and
  // twice that run's bytes) before Release frees it.
  static constexpr size_t kMaxSlackBytes = size_t{64} << 10;

  // Returns a state whose run has finished (every enqueued item done).
  // Buffers far larger than the run used (kept from a larger request of a
  // network with dynamic dims) are freed, so that one large request does
  // not pin device memory in the idle states for ever; so are the buffers
  // of slots no reservation sized (`reserved_bytes`, indexed by slot: 0
  // for a value of dynamic shape) after a `failed` run, so that a failed
  // run leaves the devices' memory as it found it.
  void Release(std::unique_ptr<ExecutionState> state,
               const std::vector<size_t>& reserved_bytes, bool failed)
      ABSL_LOCKS_EXCLUDED(mu_) {
    state->warm = true;
    for (size_t i = 0; i < state->tensors.size(); ++i) {
      DeviceTensor& t = state->tensors[i];
      if (t.buffer == nullptr) continue;
      const size_t reserved =
          i < reserved_bytes.size() ? reserved_bytes[i] : 0;
      if (reserved > 0 && t.buffer->size() == reserved) continue;
      const size_t used = t.shape.IsStatic() ? t.num_bytes() : 0;
      if (failed || t.buffer->size() > 2 * used + kMaxSlackBytes) {
        t.buffer.reset();
      }
    }
    absl::MutexLock lock(&mu_);
    if (idle_.size() < reserved_ + kMaxIdle) idle_.push_back(std::move(state));
  }

  size_t idle() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return idle_.size();
  }
  // States reserved at provisioning.
  size_t reserved() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return reserved_;
  }

 private:
  const size_t num_tensors_;
  const size_t num_partitions_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<ExecutionState>> idle_ ABSL_GUARDED_BY(mu_);
  size_t reserved_ ABSL_GUARDED_BY(mu_) = 0;
};

// One partition, loaded on its device.
struct ProvisionedPartition {
  std::string name;
  DeviceManager* device = nullptr;  // Borrowed from the HostManager.
  std::unique_ptr<LoadedFunction> function;
  std::vector<int> parents;  // Indices of earlier partitions.
  double flops = 0;
  uint64_t weight_bytes = 0;
  // Device memory one execution holds on this partition's device for the
  // values it brings there (inputs copied in, results) while the run is in
  // flight, as planned: values of dynamic shape count 0 (they are
  // allocated per run). The function's arena is not in it: launches on a
  // device run one at a time, so its one arena, reserved at load, serves
  // every execution.
  uint64_t execution_bytes = 0;
  int num_nodes = 0;
};

// Where one argument of a partition comes from in a run.
struct InputRoute {
  enum class Source {
    // Nothing moves: an earlier partition on the same device produced it,
    // an earlier partition's copy brought it here already, or no run
    // provides it (the function holds it).
    kOnDevice,
    // Copied from the request's host tensor (H2D).
    kNetworkInput,
    // Copied from the device of the partition that produces it (P2P),
    // after waiting for that partition's done-event.
    kPeer,
  };
  Source source = Source::kOnDevice;
  std::string value;  // The value's name, for trace slices.
  // The argument's tensor slot (on this partition's device).
  int tensor = -1;
  // kNetworkInput: the index into ExecutableNetwork::inputs.
  int network_input = -1;
  // kPeer: the producing partition and the value's slot on its device.
  int producer = -1;
  int producer_tensor = -1;
};

// Where one network output comes from in a run.
struct OutputRoute {
  enum class Source {
    kNone,          // Nothing produces it: a run asking for it fails.
    kConstant,      // A constant (ExecutableNetwork::constant_outputs).
    kNetworkInput,  // A network input no partition computes: echoed.
    kPartition,     // Copied back (D2H) from the producing partition.
  };
  Source source = Source::kNone;
  int network_input = -1;  // kNetworkInput.
  int producer = -1;       // kPartition: the producing partition.
  int tensor = -1;         // kPartition: the value's slot on its device.
};

// How a replica's runs move data, computed once by the Provisioner so that
// a run only follows it.
struct ReplicaRouting {
  // The distinct devices the replica uses, in order of first use (the
  // device of partition 0 first): a run leases one stream on each, and a
  // trace gives each its track in this order.
  std::vector<DeviceManager*> devices;
  // Per partition: its index in `devices`, its argument routes (one per
  // function input, in order) and its result slots (one per function
  // output, in order).
  std::vector<int> partition_device;
  std::vector<std::vector<InputRoute>> inputs;
  std::vector<std::vector<int>> results;
  // Per network output (ExecutableNetwork::outputs order).
  std::vector<OutputRoute> outputs;
  // Tensor slots of an ExecutionState: one per (value, device) pair the
  // replica's runs hold.
  int num_tensors = 0;
  // Per tensor slot: its index in `devices` and the bytes reserved for it
  // in each reserved execution state (0 for a value of dynamic shape).
  std::vector<int> slot_device;
  std::vector<size_t> slot_bytes;
};

// One copy of the network on its own devices. Fixed after construction but
// for `outstanding` and the pool.
struct Replica {
  Replica(std::vector<ProvisionedPartition> partitions_in,
          ReplicaRouting routing_in)
      : partitions(std::move(partitions_in)),
        routing(std::move(routing_in)),
        states(routing.num_tensors, partitions.size()) {}

  std::vector<ProvisionedPartition> partitions;  // Topological order.
  ReplicaRouting routing;
  // Runs in flight on this replica. The executor places runs by the load
  // of the replica's devices (DeviceManager::load, counted over every
  // network sharing them), not by this count.
  std::atomic<int> outstanding{0};
  // Execution states of this replica's runs; states.reserved() of them
  // may run at once without allocating (see ExecutionStatePool).
  ExecutionStatePool states;

  // Gives a run's state back (see ExecutionStatePool::Release).
  void ReleaseState(std::unique_ptr<ExecutionState> state, bool failed) {
    states.Release(std::move(state), routing.slot_bytes, failed);
  }
};

// A network ready to run. Destroying it evicts its functions; it must not
// be destroyed while runs of it are in flight. Thread-safe for runs: only
// Replica::outstanding and the state pools change after construction.
struct ExecutableNetwork {
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  // Outputs that are constants (Dag::constant_outputs), on the host.
  std::map<std::string, Tensor> constant_outputs;
  // Per replica, the device id of each logical device (see Dag::placement).
  std::vector<std::vector<int>> placement;
  std::vector<std::unique_ptr<Replica>> replicas;  // At least one.

  // Runs that may be in flight at once with their memory reserved: the
  // reserved execution states of every replica. Set by the provisioner
  // once it has reserved them; read on every run, so kept rather than
  // summed under the pools' locks.
  int executions = 0;
};

}  // namespace glint

#endif  // GLINT_PROVISIONER_EXECUTABLE_NETWORK_H_
