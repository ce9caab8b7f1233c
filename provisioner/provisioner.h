// Provisioner: turns a partitioned Dag into an ExecutableNetwork by mapping
// each replica's logical devices to distinct physical ones (of the type the
// logical device was planned for, able to run its ops, most free memory
// first), compiling each partition once per backend and loading it. All or nothing: on any failure everything the
// call loaded is evicted again, so a failed AddNetwork leaves no trace.
#ifndef GLINT_PROVISIONER_PROVISIONER_H_
#define GLINT_PROVISIONER_PROVISIONER_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/device_manager.h"
#include "executor/execution_state.h"
#include "core/dag.h"

namespace glint {

// One partition, loaded on its device.
struct ProvisionedPartition {
  std::string name;
  DeviceManager* device = nullptr;  // Borrowed from the HostManager.
  std::unique_ptr<LoadedFunction> function;
  std::vector<int> parents;  // Indices of earlier partitions.
  double flops = 0;
  uint64_t weight_bytes = 0;
  int num_nodes = 0;
};

// One copy of the network on its own devices.
struct Replica {
  std::vector<ProvisionedPartition> partitions;  // Topological order.
  // Runs in flight on this replica; the executor sends a run to the
  // replica with the fewest.
  std::atomic<int> outstanding{0};
  // Idle execution states of this replica's runs.
  ExecutionStatePool states;
};

// A network ready to run. Destroying it evicts its functions; it must not
// be destroyed while runs of it are in flight. Thread-safe for runs: only
// Replica::outstanding changes after construction.
struct ExecutableNetwork {
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  // Outputs that are constants (Dag::constant_outputs), on the host.
  std::map<std::string, Tensor> constant_outputs;
  // Per replica, the device id of each logical device (see Dag::placement).
  std::vector<std::vector<int>> placement;
  std::vector<std::unique_ptr<Replica>> replicas;  // At least one.
};

// Thread-safe (stateless apart from the borrowed devices).
class Provisioner {
 public:
  explicit Provisioner(std::vector<DeviceManager*> devices)
      : devices_(std::move(devices)) {}

  // Errors: RESOURCE_EXHAUSTED (too few capable devices for the logical
  // ones of every replica, saying how many are needed, or a partition does
  // not fit), UNIMPLEMENTED / INVALID_ARGUMENT from compile, UNAVAILABLE
  // for stopped devices.
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provision(
      const Dag& dag) const;

 private:
  const std::vector<DeviceManager*> devices_;
};

}  // namespace glint

#endif  // GLINT_PROVISIONER_PROVISIONER_H_
