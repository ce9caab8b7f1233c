// Provisioner: turns a partitioned Dag into an ExecutableNetwork by mapping
// logical devices to physical ones, compiling each partition once per
// device type and loading it. All or nothing: on any failure everything the
// call loaded is evicted again, so a failed AddNetwork leaves no trace.
#ifndef GLINT_PROVISIONER_PROVISIONER_H_
#define GLINT_PROVISIONER_PROVISIONER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/device_manager.h"
#include "runtime/dag.h"

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

// A network ready to run. Destroying it evicts its functions; it must not
// be destroyed while runs of it are in flight. Thread-compatible (immutable
// once built, so concurrent runs only read it).
struct ExecutableNetwork {
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ProvisionedPartition> partitions;  // Topological order.
};

// Thread-safe (stateless apart from the borrowed devices).
class Provisioner {
 public:
  explicit Provisioner(std::vector<DeviceManager*> devices)
      : devices_(std::move(devices)) {}

  // Errors: RESOURCE_EXHAUSTED (too few devices for the logical ones, or a
  // partition does not fit), UNIMPLEMENTED / INVALID_ARGUMENT from compile,
  // UNAVAILABLE for stopped devices.
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provision(
      const Dag& dag) const;

 private:
  const std::vector<DeviceManager*> devices_;
};

}  // namespace glint

#endif  // GLINT_PROVISIONER_PROVISIONER_H_
