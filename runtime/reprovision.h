// Re-provisioning: building a network again on the devices still healthy
// after one it used died (HostManager's device monitor asks for it; see
// runtime/device_monitor.h). HostManager then swaps the new plan in under
// the network's runs.
//
// Thread-safe: RebuildOnHealthyDevices reads only what never changes in
// the entry (its options, model and name) and builds through the
// thread-safe NetworkBuilder.
#ifndef GLINT_RUNTIME_REPROVISION_H_
#define GLINT_RUNTIME_REPROVISION_H_

#include <map>
#include <memory>

#include "absl/status/statusor.h"
#include "api/types.h"
#include "provisioner/executable_network.h"
#include "runtime/journal.h"
#include "runtime/network_builder.h"
#include "runtime/network_entry.h"

namespace glint {

// A network built anew: its plan, its plans at smaller batch sizes (when it
// batches), and its description.
struct RebuiltNetwork {
  std::unique_ptr<ExecutableNetwork> executable;
  std::map<int, std::shared_ptr<ExecutableNetwork>> smaller;
  NetworkInfo info;
};

// Builds `entry`'s network with its add's options on the healthy devices,
// with fewer replicas when the requested number no longer fits (down to
// one), and a batching network's smaller sizes at as many replicas (all or
// nothing). The model is the entry's copy, or read back from `journal`
// when the entry keeps none (NetworkJournal::KeepsModels). Errors: the
// build's (RESOURCE_EXHAUSTED when one replica fits nowhere), or the
// journal's when the model cannot be read back.
absl::StatusOr<RebuiltNetwork> RebuildOnHealthyDevices(
    const NetworkEntry& entry, const NetworkBuilder& builder,
    NetworkJournal* journal);

}  // namespace glint

#endif  // GLINT_RUNTIME_REPROVISION_H_
