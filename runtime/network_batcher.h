// The batcher of a network added with dynamic batching (runtime/batcher.h),
// wired to the HostManager's parts: each batch takes one admission slot (at
// its most urgent member's priority), runs on the executor on the plan
// compiled at its size, and is recorded like a single run.
//
// Thread-safety: as Batcher's. The context's pointers are borrowed and must
// outlive the batcher's last batch (HostManager closes its batchers before
// it destroys them).
#ifndef GLINT_RUNTIME_NETWORK_BATCHER_H_
#define GLINT_RUNTIME_NETWORK_BATCHER_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "core/cancellation.h"
#include "executor/executor.h"
#include "runtime/admission.h"
#include "runtime/batcher.h"
#include "runtime/network_entry.h"

namespace glint {

// The parts of a HostManager that a network's batches go through.
struct BatchRunContext {
  const Executor* executor = nullptr;
  AdmissionQueue* admission = nullptr;
  std::shared_ptr<const CancellationToken> shutdown;
  BatchTimer* timer = nullptr;
  int max_queue_size = 0;  // HostManagerOptions::max_queue_size.
  // Called after a batch ran successfully, with its timings.
  std::function<void(const RunTimings&)> executed;
  // Called when a batch failed UNAVAILABLE (a device may have died).
  std::function<void()> unavailable;
};

// `entry` (its options, info and plans) must outlive the batcher: a batch
// runs only for requests that hold the entry until they are answered.
absl::StatusOr<std::shared_ptr<Batcher>> MakeNetworkBatcher(
    NetworkEntry* entry, BatchRunContext context);

}  // namespace glint

#endif  // GLINT_RUNTIME_NETWORK_BATCHER_H_
