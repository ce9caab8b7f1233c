// Provisioner: turns a partitioned Dag into an ExecutableNetwork by mapping
// each replica's logical devices to distinct physical ones (of the type the
// logical device was planned for, able to run its ops, most free memory
// first), compiling each partition once per backend, loading it and
// routing each replica's values (executable_network.h). All or nothing: on
// any failure everything the call loaded is evicted again, so a failed
// AddNetwork leaves no trace.
#ifndef GLINT_PROVISIONER_PROVISIONER_H_
#define GLINT_PROVISIONER_PROVISIONER_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dag.h"
#include "devices/compiled_function.h"
#include "devices/device_manager.h"
#include "provisioner/executable_network.h"

namespace glint {

// Reserves the ring entries of `replica`'s partitions (loaded, routed;
// Replica::rings): each entry holds the device memory of the values a
// partition brings onto its device for one run (the slots it owns,
// ReplicaRouting::slot_bytes), allocated up front. On each device, every
// partition there gets the same number of entries: at least one, at most
// `max_executions`, and beyond the first no more than half of what the
// device has left, so that networks added later find room too.
// RESOURCE_EXHAUSTED when not even one execution of the partitions on a
// device fits. Values of dynamic shape are reserved at the network's
// bounds (SizeSlotsWithin); those no bound sizes reserve nothing (runs
// allocate them in the entry they hold, which keeps them).
absl::Status ReserveExecutions(Replica& replica, int max_executions);

// Sizes `replica`'s slots (ReplicaRouting::slot_bytes) and its
// partitions' execution_bytes for runs whose dims are within `bounds`:
// a value of dynamic shape by ValueInfo::BytesWithin, 0 where no bound
// determines it. Run before ReserveExecutions.
void SizeSlotsWithin(Replica& replica,
                     const std::map<std::string, int64_t>& bounds);

// Thread-safe (stateless apart from the borrowed devices).
class Provisioner {
 public:
  explicit Provisioner(std::vector<DeviceManager*> devices)
      : devices_(std::move(devices)) {}

  // Errors: RESOURCE_EXHAUSTED (too few capable devices for the logical
  // ones of every replica, saying how many are needed, or a partition does
  // not fit), UNIMPLEMENTED / INVALID_ARGUMENT from compile, UNAVAILABLE
  // for stopped devices. Every partition is compiled with `options`.
  //
  // Each replica's partitions get their ring entries reserved
  // (ReserveExecutions), at most `max_executions` each.
  //
  // Memory is reserved for `bounds` (DimBounds): the defaulted ones are
  // lowered first where a run at them would not fit, and
  // ExecutableNetwork::dim_bounds says where they settled. Then
  // RESOURCE_EXHAUSTED, naming the bounds, when a run at them still does
  // not fit.
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provision(
      const Dag& dag, const CompileOptions& options = CompileOptions(),
      int max_executions = kDefaultMaxExecutions,
      const DimBounds& bounds = DimBounds()) const;
  // As Provision, but each partition's constants leave `dag` as soon as every
  // backend that needs them has compiled them (dag->nodes[i].function keeps
  // its nodes and types; its initializers are emptied): from then on the
  // compiled functions hold them, so a network's weights are not kept twice
  // while later partitions compile and load. `dag` still describes the
  // network. Whatever the outcome, the constants are gone from `dag`.
  // Only the partitions' own: those of If/Loop/Scan bodies (graph
  // attributes of their nodes) stay with the dag until it goes.
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>>
  ProvisionReleasingConstants(Dag* dag,
                              const CompileOptions& options = CompileOptions(),
                              int max_executions = kDefaultMaxExecutions,
                              const DimBounds& bounds = DimBounds()) const;

  // Executions reserved per partition at most, by default.
  static constexpr int kDefaultMaxExecutions = 8;

 private:
  // Provision's steps. Logical → physical device, per replica: distinct
  // capable devices (RESOURCE_EXHAUSTED when too few).
  absl::StatusOr<std::vector<std::vector<DeviceManager*>>> Place(
      const Dag& dag) const;
  // Provision's and ProvisionReleasingConstants' work: `release`, when set,
  // is `dag` itself.
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provision(
      const Dag& dag, Dag* release, const CompileOptions& options,
      int max_executions, const DimBounds& bounds) const;
  // Compiles each partition once per backend and loads it on its device in
  // every replica, into `network`; empties the initializers of
  // release->nodes[i] after its last compile when `release` is set.
  absl::Status Load(const Dag& dag, Dag* release,
                    const std::vector<std::vector<DeviceManager*>>& physical,
                    const CompileOptions& options, int max_executions,
                    const DimBounds& bounds, ExecutableNetwork* network) const;

  const std::vector<DeviceManager*> devices_;
};

}  // namespace glint

#endif  // GLINT_PROVISIONER_PROVISIONER_H_
