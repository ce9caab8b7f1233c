// NetworkBuilder: turns an ONNX model into an ExecutableNetwork on a
// HostManager's devices. It imports the model (onnx/), partitions the graph
// into a DAG over the healthy devices (partitioner/) and provisions the
// partitions onto them (provisioner/), optionally replaying a cached plan
// (runtime/plan_cache.h).
//
// Thread-safe: its methods are const and builds may run concurrently; they
// share only the devices, which are thread-safe.
#ifndef GLINT_RUNTIME_NETWORK_BUILDER_H_
#define GLINT_RUNTIME_NETWORK_BUILDER_H_

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/types.h"
#include "core/device_info.h"
#include "core/graph.h"
#include "core/model_bytes.h"
#include "devices/device_manager.h"
#include "onnx/onnx_importer.h"
#include "provisioner/executable_network.h"
#include "provisioner/provisioner.h"
#include "runtime/journal.h"

namespace glint {

// The batch sizes a batching network is compiled at: each preferred size
// and max_batch_size, ascending (see runtime/batcher.h).
std::vector<int> CompiledBatchSizes(const DynamicBatching& batching);

class NetworkBuilder {
 public:
  // `devices` are borrowed and outlive the builder. `run_onnx_inference`
  // and `max_executions`: see HostManagerOptions::run_onnx_inference and
  // max_concurrent_executions.
  NetworkBuilder(std::vector<DeviceManager*> devices,
                 InferenceRunner run_onnx_inference,
                 int max_executions = Provisioner::kDefaultMaxExecutions);

  // Imports, partitions and provisions `onnx_model` on the healthy devices
  // (a mapped model's pages are dropped once parsed: ModelBytes::Evict)
  // and describes the result in `info`. `types` (ONNX inference's reply)
  // and `plan` (assignment, placement) replay a cached plan when set;
  // `made` receives what this build used. Errors: AddNetwork's, and
  // UNAVAILABLE when no healthy device is left.
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Build(
      absl::string_view name, const ModelBytes& onnx_model,
      const AddNetworkOptions& options, NetworkInfo* info,
      const CachedPlan* types = nullptr, const CachedPlan* plan = nullptr,
      CachedPlan* made = nullptr) const;

  // For a batching network: Build at each preferred batch size below
  // max_batch_size (see runtime/batcher.h), by size; empty without
  // batching.
  absl::StatusOr<std::map<int, std::shared_ptr<ExecutableNetwork>>>
  BuildSmaller(absl::string_view name, const ModelBytes& onnx_model,
               const AddNetworkOptions& options) const;

  // The healthy devices' descriptions, in device order (what a Build would
  // plan for), and their number.
  std::vector<DeviceInfo> HealthyDevices() const;
  size_t HealthyCount() const;

 private:
  // Build's first step: the graph, imported at the options' shapes, the
  // inference reply replayed from `types` or recorded into `inferred`.
  absl::StatusOr<Graph> Import(const ModelBytes& onnx_model,
                               const AddNetworkOptions& options,
                               const CachedPlan* types,
                               std::string* inferred) const;

  const std::vector<DeviceManager*> devices_;
  const InferenceRunner run_onnx_inference_;
  const int max_executions_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_NETWORK_BUILDER_H_
