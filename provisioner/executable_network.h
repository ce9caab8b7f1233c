// The provisioned network: what the Provisioner builds and the Executor
// runs. Compiled and loaded partitions, their placement, the routing of
// every value between them (decided once, at provisioning) and each
// partition's ring of execution states. A leaf type: it knows devices, not
// the components that build or run it.
#ifndef GLINT_PROVISIONER_EXECUTABLE_NETWORK_H_
#define GLINT_PROVISIONER_EXECUTABLE_NETWORK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "devices/device_manager.h"

namespace glint {

// One partition's share of a run's state on its device: the device
// tensors of the values the partition brings there (its results, and its
// arguments copied in: ReplicaRouting::owned_slots), its done-event, and
// per device of the replica an event recorded behind the run's last use
// of those tensors there. The entries of a partition's ring
// (Replica::rings) serve its runs in turn; a run waits for the `released`
// events of the entry's previous holder before it writes into it. Touched
// by one run at a time, in the order those events impose.
// Thread-compatible.
struct PartitionExecution {
  PartitionExecution(size_t num_tensors, size_t num_devices)
      : tensors(num_tensors) {
    released.reserve(num_devices);
    for (size_t d = 0; d < num_devices; ++d) {
      released.push_back(std::make_unique<Event>());
    }
  }

  // Sized once, so addresses stay stable while enqueued work points at
  // them. Buffers stay between runs and are reused when large enough.
  std::vector<DeviceTensor> tensors;
  Event done;
  std::vector<std::unique_ptr<Event>> released;  // Per ReplicaRouting device.
};

// The entries of one partition's ring: those made at provisioning hold
// their buffers' reserved device memory for the network's lifetime. The
// entries are fixed once the replica runs; `holders` changes under
// Replica::ring_mu only.
struct PartitionRing {
  std::vector<std::unique_ptr<PartitionExecution>> entries;
  // Run tickets (Replica::next_ticket) of each entry's last holder; 0 for
  // none. Read and written under Replica::ring_mu only.
  std::vector<uint64_t> holders;
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
  // flight, as planned: values of dynamic shape at the network's bounds
  // (SizeSlotsWithin), 0 for those no bound sizes (runs allocate them). The
  // function's arena is not in it: launches on a device run one at a time, so
  // its one arena, reserved at load, serves every execution.
  uint64_t execution_bytes = 0;
  // At the network's bounds (ExecutableNetwork::dim_bounds): the most bytes
  // of run-time values one launch holds at once (its device's launch
  // reserve covers the largest of its partitions'), and how many of its
  // values no bound sizes (arithmetic the importer does not follow, a Loop's
  // or Scan's bodies), which each launch allocates beyond that reserve.
  // Sizes the data decides count at their bounds (core/dim_expr.h).
  uint64_t launch_bytes = 0;
  int unsized_values = 0;
  int num_nodes = 0;
};

// The bounds of a network's dynamic dims that its device memory is
// reserved for (AddNetworkOptions::max_dims, by the dims' names): each
// execution state holds its cross-partition values at these sizes, and each
// device sets aside the largest peak its launches reach at them, so that a
// run within them never fails for device memory.
struct DimBounds {
  std::map<std::string, int64_t> max;
  // The names in `max` whose bound is a default, not the user's, and of
  // those the ones that lead an input (axis 0: a batch). The provisioner
  // lowers these until what one run at the bounds adds on each device (its
  // execution state's values and the growth of the launch reserve) is at
  // most an eighth of the device's memory and half of what it has free, so
  // that a plain add neither asks for more than the devices can give nor
  // crowds out the networks added after it (more executions than one then
  // take what ReserveExecutions allows). It halves, in turn while that
  // does not fit: the leading dims down to kBatchFloor, then the others
  // together down to 1, then the leading ones down to 1. So a BERT encoder
  // keeps 1,024 tokens at a batch of 8 on a 2 GiB device, where halving
  // every dim alike would leave 128 of each.
  std::set<std::string> defaulted;
  std::set<std::string> leading;
  static constexpr int64_t kBatchFloor = 8;
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
  // Tensor slots of a run: one per (value, device) pair the replica's
  // runs hold.
  int num_tensors = 0;
  // Per tensor slot: its index in `devices` and the bytes reserved for it
  // in each reserved entry of its owner's ring (0 for a value of dynamic
  // shape).
  std::vector<int> slot_device;
  std::vector<size_t> slot_bytes;
  // Per tensor slot, its value's type (the producer's): what sizes a
  // value of dynamic shape at the network's bounds.
  std::vector<ValueInfo> slot_values;
  // Per tensor slot, the partition that writes it (its producer, or the
  // first partition on its device that copies it in) and its index in
  // that partition's PartitionExecution::tensors; per partition, the slots
  // it owns.
  std::vector<int> slot_owner;
  std::vector<int> slot_index;
  std::vector<std::vector<int>> owned_slots;
};

// One copy of the network on its own devices. Fixed after construction but
// for `outstanding` (atomic) and the rings' holders (under ring_mu), so
// thread-safe for runs.
struct Replica {
  Replica(std::vector<ProvisionedPartition> partitions_in,
          ReplicaRouting routing_in)
      : partitions(std::move(partitions_in)),
        routing(std::move(routing_in)),
        rings(partitions.size()) {}

  std::vector<ProvisionedPartition> partitions;  // Topological order.
  ReplicaRouting routing;
  // Runs in flight on this replica. The executor places runs by the load
  // of the replica's devices (DeviceManager::load, counted over every
  // network sharing them), not by this count.
  std::atomic<int> outstanding{0};

  // Per partition, the entries its runs take in turn, whose device memory
  // was reserved at provisioning (ReserveExecutions): a run takes an idle
  // one if any, else waits on its device's stream for the previous holder
  // of the one it takes to be done with it. So a run holds an
  // entry only while it works on that partition, and a pipeline whose
  // stages each fit one execution still has a run in every stage.
  // The provisioner makes the entries (at least one per partition) before
  // the replica runs; they stay until it is destroyed.
  std::vector<PartitionRing> rings;

  // Held while a run takes its tickets and enqueues its work, so that
  // ticket order is enqueue order: every event a run waits for was
  // recorded before (no run waits for a later one, so runs always finish).
  absl::Mutex ring_mu;
  uint64_t next_ticket ABSL_GUARDED_BY(ring_mu) = 1;

  // On each of its devices where its functions' launches allocate
  // run-time values, room for the largest of them at the network's bounds
  // (CompiledFunction::DynamicMemoryWithin).
  std::vector<std::unique_ptr<LaunchReservation>> launch_reservations;

  // A ring entry sized for partition `p`'s slots.
  std::unique_ptr<PartitionExecution> MakeExecution(size_t p) const {
    return std::make_unique<PartitionExecution>(
        routing.owned_slots.size() > p ? routing.owned_slots[p].size() : 0,
        routing.devices.size());
  }
  // The executions partition `p` reserves (its ring's size).
  size_t executions(size_t p) const { return rings[p].entries.size(); }
  // Runs that can hold an entry of every partition they are on at once
  // with no partition short of one: the sum of the rings' sizes (a
  // pipeline's runs each hold the stage they are on), for admission.
  int capacity() const {
    size_t total = 0;
    for (const PartitionRing& ring : rings) total += ring.entries.size();
    return static_cast<int>(total);
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

  // Runs admitted at once (HostManager's execution slots): every
  // replica's Replica::capacity(). A run beyond what a partition's ring
  // holds waits on the device for an entry, without a thread. Set by the
  // provisioner once it has reserved the entries; read on every run.
  int executions = 0;

  // The bounds memory was reserved for (DimBounds::max as the provisioner
  // settled them), and the values whose memory no bound determines (each
  // run allocates them): "value 'idx' of partition p0", "the bodies of
  // node 'If_3' (If)".
  std::map<std::string, int64_t> dim_bounds;
  std::vector<std::string> unreserved;
};

}  // namespace glint

#endif  // GLINT_PROVISIONER_EXECUTABLE_NETWORK_H_
