// Executor: runs an ExecutableNetwork on event-synchronized device streams.
//
// A run enqueues the whole DAG up front: for each partition, on its view of
// a stream its device shares between runs, it waits for the done-events of
// producers on other devices, copies their outputs in (peer copy),
// launches, and records its own done-event; outputs are copied back to the
// host on the producer's stream.
// The host never waits between partitions: completion is reported by a
// callback the last stream runs. See docs/ARCHITECTURE.md, Executor.
#ifndef GLINT_EXECUTOR_EXECUTOR_H_
#define GLINT_EXECUTOR_EXECUTOR_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "provisioner/executable_network.h"

namespace glint {

struct ExecutionRequest {
  // One host tensor per network input, in ExecutableNetwork::inputs order,
  // already checked against the declared dtypes and shapes.
  std::vector<Tensor> inputs;
  // Indices into ExecutableNetwork::outputs to return.
  std::vector<int> outputs;
  // Checked before each partition starts: work not yet started is skipped
  // once the deadline passes (DEADLINE_EXCEEDED) or `cancel` is set
  // (CANCELLED). A partition already running finishes.
  absl::Time deadline = absl::InfiniteFuture();
  std::shared_ptr<const CancellationToken> cancel;
  // Set when the host shuts down: the run stops the same way and fails
  // UNAVAILABLE, which tells a client to retry elsewhere.
  std::shared_ptr<const CancellationToken> shutdown;
  // When set, the run adds a slice per partition, copy and wait on each
  // device stream's track, and one for the host's enqueueing.
  std::shared_ptr<RunTrace> trace;
  // Larger is more urgent (RunOptions::priority): on each device, the
  // run's ready work goes before that of less urgent runs (launches at the
  // compute engine included); first come, first served among equals.
  int priority = 0;
};

// Called once with the requested outputs (in request order) or the run's
// first error, which names the partition and device that failed.
using ExecutionCallback =
    std::function<void(absl::StatusOr<std::vector<Tensor>>)>;

// Stateless apart from the devices it borrows; thread-safe.
class Executor {
 public:
  Executor() = default;

  // `network` must outlive the run (until `done` is called). `done` may
  // run on a device thread, or inline when the run fails before enqueue.
  void Run(const ExecutableNetwork& network, ExecutionRequest request,
           ExecutionCallback done) const;
};

}  // namespace glint

#endif  // GLINT_EXECUTOR_EXECUTOR_H_
