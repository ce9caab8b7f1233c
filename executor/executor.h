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

#include <cstdint>
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

// Where a run's time went on its device streams, measured by host callbacks
// in stream order around its copies and launches (steady clock). Durations
// are summed over the run's streams: partitions on several devices work at
// once, so a phase may exceed the run's wall time. Waits for other devices'
// events count in no phase. Filled just before `done` is called; parts a
// failed run never reached stay 0.
struct RunTimings {
  // Network inputs host->device, and producers' outputs peer-copied in.
  int64_t input_ns = 0;
  // The partitions' launches, from the pre-launch check (after the inputs
  // are in) to the launch's end: includes waiting for the device's compute
  // engine behind other runs.
  int64_t compute_ns = 0;
  // Requested outputs device->host.
  int64_t output_ns = 0;
  // Each partition's launch, indexed as the replica's partitions (the same
  // in every replica), and the id of the device it ran on in the replica
  // the run took.
  std::vector<int64_t> partition_ns;
  std::vector<int> partition_device;
};

struct ExecutionRequest {
  // One host tensor per network input, in ExecutableNetwork::inputs order,
  // already checked against the declared dtypes and shapes.
  std::vector<Tensor> inputs;
  // Indices into ExecutableNetwork::outputs to return.
  std::vector<int> outputs;
  // Optional, per requested output (same order; missing or invalid: none):
  // host memory its device->host copy may land in
  // (DeviceManager::CopyToHostInto), so that it is not copied again.
  std::vector<Tensor> output_destinations;
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
  // With `trace`: each launch also adds a slice per node it executes, under
  // its partition's slice (LaunchOptions::profile). Ignored without one.
  bool profile = false;
  // When set, the run measures its phases into it (see RunTimings); a few
  // host callbacks per partition. Read it once `done` is called.
  std::shared_ptr<RunTimings> timings;
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
