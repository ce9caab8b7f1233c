#include "runtime/network_batcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/text.h"
#include "runtime/network_builder.h"

namespace glint {

namespace {

// The plan compiled at a batch of `size` (batches are padded to one);
// null when the network is unavailable.
std::shared_ptr<ExecutableNetwork> PlanOfSize(NetworkEntry& entry,
                                              int64_t size) {
  absl::MutexLock lock(&entry.mu);
  auto it = entry.smaller.find(static_cast<int>(size));
  if (it != entry.smaller.end()) return it->second;
  if (size == entry.options.batching.max_batch_size) return entry.executable;
  return nullptr;
}

// Runs one batch of `entry`'s requests: on the plan compiled at its size,
// once admitted (one slot for the whole batch, and one of the plan's
// execution slots).
void RunBatch(std::shared_ptr<const BatchRunContext> context,
              NetworkEntry* entry, int num_outputs, BatchExecution batch,
              BatchDone done) {
  // The batch's own reference to the plan, dropped under entry->mu when
  // it ends (as a run's, see NetworkEntry::executable).
  auto executable = std::make_shared<std::shared_ptr<ExecutableNetwork>>(
      PlanOfSize(*entry, batch.size));
  if (*executable == nullptr) {
    done(absl::UnavailableError(
        absl::StrCat("network '", Clip(entry->info.name),
                     "' is unavailable: ", entry->info.unavailable_reason)));
    return;
  }
  std::shared_ptr<BatchMeasures> measures = batch.measures;
  ExecutionRequest request;
  request.inputs = std::move(batch.inputs);
  for (int i = 0; i < num_outputs; ++i) request.outputs.push_back(i);
  request.deadline = batch.deadline;
  request.shutdown = context->shutdown;
  request.trace = std::move(batch.trace);
  request.profile = batch.profile;
  request.priority = batch.priority;
  request.timings =
      std::shared_ptr<RunTimings>(measures, &measures->timings);
  auto shared_done = std::make_shared<BatchDone>(std::move(done));
  const int members = batch.requests;
  // The batch holds one execution slot of the plan of its size.
  const ExecutionSlots slots{executable->get(), (*executable)->executions};
  auto waited_for_slot = std::make_shared<bool>(false);
  const absl::Duration queued = MonotonicNow();
  absl::Status admission = context->admission->Admit(
      batch.priority, slots,
      [context, entry, executable, shared_done, measures, members,
       waited_for_slot, queued,
       request = std::make_shared<ExecutionRequest>(
           std::move(request))](bool admitted) {
        if (!admitted) {
          LeaveNetworkPlan(*entry, *executable);
          (*shared_done)(
              absl::UnavailableError("the host manager is shutting down"));
          return;
        }
        // Its members leave the queue for the devices together.
        measures->admitted = true;
        measures->admitted_at = MonotonicNow();
        if (*waited_for_slot) {
          entry->stats.RecordSlotWait(measures->admitted_at - queued);
        }
        entry->stats.AddQueued(-members);
        entry->stats.AddInFlight(members);
        context->executor->Run(
            **executable, std::move(*request),
            [context, entry, executable, measures,
             shared_done](absl::StatusOr<std::vector<Tensor>> result) {
              // One execution however many requests it served.
              if (result.ok()) {
                entry->stats.RecordExecution();
                context->executed(measures->timings);
              }
              // Before the plan may go: its address keys its slots.
              context->admission->Release(executable->get());
              LeaveNetworkPlan(*entry, *executable);
              if (!result.ok() && absl::IsUnavailable(result.status())) {
                context->unavailable();
              }
              (*shared_done)(std::move(result));
            });
      });
  if (!admission.ok()) {
    LeaveNetworkPlan(*entry, *executable);
    (*shared_done)(admission);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<Batcher>> MakeNetworkBatcher(
    NetworkEntry* entry, BatchRunContext context) {
  BatcherOptions options;
  options.batching = entry->options.batching;
  options.inputs = entry->info.inputs;
  options.outputs = entry->info.outputs;
  // One batch per pipeline stage of each replica, and one more ready
  // behind them, so that devices never wait for the host to form the next.
  options.max_in_flight =
      std::max(1, entry->info.replicas) *
          std::max<int>(1, static_cast<int>(entry->info.partitions.size())) +
      1;
  options.max_queue_size = context.max_queue_size;
  options.sizes = CompiledBatchSizes(entry->options.batching);
  const int num_outputs = static_cast<int>(entry->info.outputs.size());
  // `entry` outlives every batch: a batch runs only for requests that hold
  // the entry until they are answered.
  auto shared = std::make_shared<const BatchRunContext>(std::move(context));
  BatchExecutor execute = [shared, entry, num_outputs](BatchExecution batch,
                                                       BatchDone done) {
    RunBatch(shared, entry, num_outputs, std::move(batch), std::move(done));
  };
  return Batcher::Create(std::move(options), std::move(execute),
                         shared->timer);
}

}  // namespace glint
