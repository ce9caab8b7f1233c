// Dynamic batching (Triton's dynamic batcher): a network's concurrent
// requests are merged along their first dimension, run as one execution
// and split back, each caller getting the rows an unbatched run of its
// request would have given.
//
// Design. A batching network's batch dim is bound when it is compiled
// (ImportOptions::batch_size), so it is compiled at max_batch_size and at
// each preferred batch size: those are the sizes a batch can run at. A batch runs on the smallest compiled size that holds
// its rows, padded up to it by repeating its first row, which is valid
// input by construction (zeros could be a divisor, an index out of
// range...); the padding rows' results are dropped. The preferred sizes
// are thus the operator's trade: each costs its own plan, weights and
// arenas on the devices, and saves the padding's compute for batches of
// that size (preferred size 1 makes a lone request cost what an unbatched
// run costs). Whether a row's result depends on its position in the batch,
// on the other rows, or on the size compiled (oneDNN may pick other
// kernels for other shapes) is checked bit for bit against unbatched runs
// of the same requests by host_manager_batching_test (ONNX node cases and
// a CNN, on one device and pipelined over two): they are identical.
//
// Shapes. The batch dim is bound at each compiled size; the inputs' other
// dims may be dynamic (a sequence length, an image size: they stay
// Shape::kUnknownDim and each run brings its own, see docs/ARCHITECTURE.md
// "Shapes per request"). Only requests whose inputs have equal dims but
// the first merge: each such shape (its merge key) forms batches of its
// own, and a batch runs at that shape with its compiled batch size.
//
// Policy (per network and shape, FIFO): a batch takes the waiting requests
// of one shape in arrival order while their rows fit max_batch_size (a
// request never spans two batches, nor is it passed by a later one of its
// shape). Shapes are considered in the order of their oldest waiting
// request; the first that may start, starts. It is dispatched, while fewer
// than max_in_flight batches of the network execute, as soon as
//   - it is full (max_batch_size rows), or
//   - its rows reach a preferred batch size (the largest one possible), or
//   - the oldest waiting request of its shape has waited max_queue_delay
//     (with a zero delay: at once), or
//   - the batcher is flushed (its network is being removed).
// Under load, requests accumulate while the network's in-flight batches
// execute, so batches grow by themselves; max_queue_delay trades latency
// at low load for fuller batches.
//
// Per request: a request already cancelled or past its deadline when its
// batch forms leaves the queue alone (CANCELLED, DEADLINE_EXCEEDED); one
// cancelled or late while its batch executes gets that error instead of
// its rows, and the others get theirs. The batch itself runs until its
// latest member's deadline. Malformed requests never reach a batcher: the
// HostManager refuses them, alone, before enqueueing.
#ifndef GLINT_RUNTIME_BATCHER_H_
#define GLINT_RUNTIME_BATCHER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/cancellation.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "executor/executor.h"

namespace glint {

// Calls functions at given times on one thread, shared by every batcher of
// a HostManager (so batching adds one thread, not one per network or
// request). The thread starts with the first At(). Thread-safe.
class BatchTimer {
 public:
  BatchTimer() = default;
  // Stops the thread; functions not yet due are dropped, not called.
  ~BatchTimer();
  BatchTimer(const BatchTimer&) = delete;
  BatchTimer& operator=(const BatchTimer&) = delete;

  // Calls `fn` on the timer's thread at or soon after `when`. `fn` must not
  // block for long: it delays every other batcher's timer.
  void At(absl::Time when, std::function<void()> fn) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::multimap<absl::Time, std::function<void()>> due_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// What became of a batch, for its members' statistics: filled by the
// BatchExecutor before it calls `done`.
struct BatchMeasures {
  bool admitted = false;  // Whether the batch was admitted to run...
  absl::Duration admitted_at = absl::ZeroDuration();  // ...and when (any
                                                      // monotonic clock).
  RunTimings timings;     // The executor's measures of the batch's run.
};

// What one execution of a batch runs: the network's inputs at one of its
// compiled batch sizes, `rows` of them real and the rest padding.
struct BatchExecution {
  // In the network's input order, each with `size` rows (a compiled size,
  // BatcherOptions::sizes), of which the first `rows` are real.
  std::vector<Tensor> inputs;
  int64_t size = 0;
  int64_t rows = 0;
  int requests = 0;
  // The latest of its requests' deadlines: past it, no member wants it.
  absl::Time deadline = absl::InfiniteFuture();
  int priority = 0;  // The most urgent member's (RunOptions::priority).
  std::shared_ptr<RunTrace> trace;  // The first traced member's, if any.
  bool profile = false;             // That member's RunOptions::profile.
  // Never null; the executor fills it (see BatchMeasures).
  std::shared_ptr<BatchMeasures> measures;
};

// Every network output at the batch's size, in the network's order, or
// the execution's error (which then fails every member).
using BatchDone = std::function<void(absl::StatusOr<std::vector<Tensor>>)>;
// Starts an execution; calls `done` exactly once, on any thread, possibly
// before returning.
using BatchExecutor = std::function<void(BatchExecution, BatchDone)>;

// One caller's request, its inputs already checked (HostManager's
// BindInputs): every input has the network's dtype and its known dims but
// the first, which is the same number of rows (1..max_batch_size) for all
// inputs.
struct BatchRequest {
  std::vector<Tensor> inputs;  // In the network's input order.
  std::vector<int> outputs;    // Indices of the network outputs it wants.
  absl::Time deadline = absl::InfiniteFuture();
  std::shared_ptr<const CancellationToken> cancel;
  int priority = 0;
  std::shared_ptr<RunTrace> trace;  // Records its batch's execution.
  bool profile = false;             // With trace: per-node slices too.
  // Called exactly once, without the batcher's lock: the requested outputs
  // (in `outputs` order), each with this request's rows only, or the error;
  // and its batch's measures (default ones if it never joined a batch).
  std::function<void(absl::StatusOr<std::vector<Tensor>>,
                     const BatchMeasures&)>
      done;
};

struct BatcherOptions {
  DynamicBatching batching;  // max_batch_size > 0.
  // The network's inputs and outputs as compiled: every first dim is
  // max_batch_size (the HostManager checks this at AddNetwork); other dims
  // may be unknown.
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  // The batch sizes the network is compiled at, ascending; the last is
  // max_batch_size (empty: just max_batch_size). A batch is padded to the
  // smallest that holds its rows.
  std::vector<int> sizes;
  // Batches of this network executing at once (>= 1); while that many
  // run, requests wait and the next batch grows.
  int max_in_flight = 1;
  // Requests waiting to be batched; beyond it Enqueue fails with
  // RESOURCE_EXHAUSTED.
  int max_queue_size = 1024;
};

// Counts since the batcher was made (NetworkStatistics' execution_count
// and inference_count for a batching network).
struct BatcherCounts {
  uint64_t executions = 0;  // Batches executed (successfully or not).
  uint64_t requests = 0;    // Requests those batches served.
  uint64_t rows = 0;        // Their real rows (not the padding).
};

// One network's dynamic batcher. Thread-safe. Owned by a shared_ptr (the
// timer holds weak references), made by Create.
class Batcher : public std::enable_shared_from_this<Batcher> {
 public:
  // `execute` runs a batch (HostManager: admission, then the executor);
  // `timer` is borrowed and must outlive the batcher's last timed wake-up
  // (the HostManager owns both, the timer longest). INVALID_ARGUMENT for a
  // configuration ValidateDynamicBatching refuses.
  static absl::StatusOr<std::shared_ptr<Batcher>> Create(
      BatcherOptions options, BatchExecutor execute, BatchTimer* timer);

  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues `request`; its `done` is called later (possibly before Enqueue
  // returns, on this thread). Errors, with `done` not called:
  // RESOURCE_EXHAUSTED (max_queue_size requests wait), UNAVAILABLE (closed).
  absl::Status Enqueue(BatchRequest request) ABSL_LOCKS_EXCLUDED(mu_);

  // From now on dispatches without waiting for max_queue_delay or a
  // preferred size: the network is being removed and its waiting requests
  // should finish promptly.
  void Flush() ABSL_LOCKS_EXCLUDED(mu_);
  // Fails every waiting request with `reason` and refuses new ones;
  // batches executing finish. Idempotent.
  void Close(absl::Status reason) ABSL_LOCKS_EXCLUDED(mu_);

  int queued() const ABSL_LOCKS_EXCLUDED(mu_);      // Requests waiting.
  int in_flight() const ABSL_LOCKS_EXCLUDED(mu_);   // Batches executing.
  BatcherCounts counts() const ABSL_LOCKS_EXCLUDED(mu_);
  const DynamicBatching& batching() const { return options_.batching; }

 private:
  struct Waiting {
    BatchRequest request;
    int64_t rows = 0;
    // Its inputs' dims but the first: only requests of one key merge.
    std::vector<int64_t> key;
    absl::Time arrived;
  };
  struct Formed {
    std::vector<Waiting> members;
    int64_t rows = 0;
  };
  // The batch one merge key could form now: the FIFO prefix of that key's
  // waiting requests that fits max_batch_size, and how many of them reach
  // the largest preferred size that the prefix can make exactly.
  struct Candidate {
    std::vector<size_t> members;  // Indices into queue_, ascending.
    int64_t rows = 0;
    size_t preferred_take = 0;  // 0: no preferred size reached.
    int64_t preferred_rows = 0;
    bool full = false;  // max_batch_size rows, or a request left over.
  };

  Batcher(BatcherOptions options, BatchExecutor execute, BatchTimer* timer);

  // Forms and starts every batch the policy allows now, and arms the timer
  // for the next one. Re-entrant calls (an execution that completes inline)
  // leave the work to the outermost call, so the stack stays flat.
  void Dispatch() ABSL_LOCKS_EXCLUDED(mu_);
  // The next batch to start now, if any; moves requests that gave up
  // (cancelled, late, or all when closed) to `failed` with their status.
  std::optional<Formed> NextBatch(
      absl::Time now,
      std::vector<std::pair<Waiting, absl::Status>>* failed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One candidate per merge key of the waiting requests, in the order of
  // its oldest request.
  std::vector<Candidate> Candidates() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the first `take` of `members` (indices into queue_) out of the
  // queue into a batch of `rows` rows, which counts as in flight.
  Formed Take(const std::vector<size_t>& members, size_t take, int64_t rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Merges `batch` into one execution and starts it.
  void Start(Formed batch) ABSL_LOCKS_EXCLUDED(mu_);
  // A batch ended: frees its slot, dispatches the next, splits its rows.
  void Finish(std::vector<Waiting> members,
              absl::StatusOr<std::vector<Tensor>> result,
              const BatchMeasures& measures)
      ABSL_LOCKS_EXCLUDED(mu_);

  const BatcherOptions options_;
  const BatchExecutor execute_;
  BatchTimer* const timer_;

  mutable absl::Mutex mu_;
  std::deque<Waiting> queue_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status closed_ ABSL_GUARDED_BY(mu_);  // Not OK once closed.
  // Dispatch(): one runs at a time; another call meanwhile sets `again_`.
  bool dispatching_ ABSL_GUARDED_BY(mu_) = false;
  bool again_ ABSL_GUARDED_BY(mu_) = false;
  // The earliest time the timer is armed for (InfiniteFuture: none).
  absl::Time armed_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  BatcherCounts counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace glint

#endif  // GLINT_RUNTIME_BATCHER_H_
