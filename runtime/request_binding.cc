#include "runtime/request_binding.h"

#include <utility>

#include "absl/time/clock.h"
#include "core/status_macros.h"

namespace glint {

absl::StatusOr<std::shared_ptr<ExecutionRequest>> BindRequest(
    const NetworkInfo& info, std::vector<NamedTensor> inputs,
    const RunOptions& options,
    std::shared_ptr<const CancellationToken> shutdown) {
  if (options.profile && options.trace == nullptr) {
    return absl::InvalidArgumentError(
        "RunOptions::profile records into RunOptions::trace, which is not "
        "set");
  }
  GLINT_ASSIGN_OR_RETURN(std::vector<Tensor> bound,
                         BindInputs(info, std::move(inputs)));
  GLINT_ASSIGN_OR_RETURN(std::vector<int> outputs,
                         BindOutputs(info, options.requested_outputs));
  auto request = std::make_shared<ExecutionRequest>();
  request->inputs = std::move(bound);
  if (!options.output_buffers.empty()) {
    request->output_destinations.resize(outputs.size());
    for (size_t r = 0; r < outputs.size(); ++r) {
      for (const RunOptions::OutputBuffer& b : options.output_buffers) {
        if (b.output == info.outputs[outputs[r]].name) {
          request->output_destinations[r] = b.memory;
        }
      }
    }
  }
  request->outputs = std::move(outputs);
  request->deadline = options.deadline;
  request->cancel = options.cancel;
  request->shutdown = std::move(shutdown);
  request->trace = options.trace;
  request->profile = options.profile;
  request->priority = options.priority;
  return request;
}

TraceSlice* TraceAdmission(const RunOptions& options) {
  if (options.trace == nullptr) return nullptr;
  TraceSlice slice;
  slice.name = "admission queue";
  slice.category = "host";
  slice.process_name = "host";
  slice.thread_name = "admission";
  slice.thread = 1;
  slice.begin = absl::Now();
  return options.trace->AddSlice(std::move(slice));
}

}  // namespace glint
