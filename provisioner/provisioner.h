// Provisioner: turns a partitioned Dag into an ExecutableNetwork by mapping
// each replica's logical devices to distinct physical ones (of the type the
// logical device was planned for, able to run its ops, most free memory
// first), compiling each partition once per backend, loading it and
// routing each replica's values (executable_network.h). All or nothing: on
// any failure everything the call loaded is evicted again, so a failed
// AddNetwork leaves no trace.
#ifndef GLINT_PROVISIONER_PROVISIONER_H_
#define GLINT_PROVISIONER_PROVISIONER_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dag.h"
#include "devices/compiled_function.h"
#include "devices/device_manager.h"
#include "provisioner/executable_network.h"

namespace glint {

// Reserves the execution states of `replica` (loaded, routed): the device
// memory of the values one run holds on each device (ReplicaRouting::
// slot_bytes), allocated up front for as many runs as may be in flight at
// once: at least one, at most `max_executions`, and beyond the first no
// more than half of what each device has left, so that networks added
// later find room too. RESOURCE_EXHAUSTED when not even one execution
// fits. Values of dynamic shape reserve nothing (runs allocate them).
absl::Status ReserveExecutions(Replica& replica, int max_executions);

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
  // Each replica gets its execution states reserved (ReserveExecutions),
  // at most `max_executions` of them.
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provision(
      const Dag& dag, const CompileOptions& options = CompileOptions(),
      int max_executions = kDefaultMaxExecutions) const;

  // Executions reserved per replica at most, by default.
  static constexpr int kDefaultMaxExecutions = 8;

 private:
  // Provision's steps. Logical → physical device, per replica: distinct
  // capable devices (RESOURCE_EXHAUSTED when too few).
  absl::StatusOr<std::vector<std::vector<DeviceManager*>>> Place(
      const Dag& dag) const;
  // Compiles each partition once per backend and loads it on its device in
  // every replica, into `network`.
  absl::Status Load(const Dag& dag,
                    const std::vector<std::vector<DeviceManager*>>& physical,
                    const CompileOptions& options, int max_executions,
                    ExecutableNetwork* network) const;

  const std::vector<DeviceManager*> devices_;
};

}  // namespace glint

#endif  // GLINT_PROVISIONER_PROVISIONER_H_
