// Binding a run request to a network: its inputs and outputs
// (input_binding.h) and the executor's ExecutionRequest made from them.
// Pure functions; thread-safe.
#ifndef GLINT_RUNTIME_REQUEST_BINDING_H_
#define GLINT_RUNTIME_REQUEST_BINDING_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/cancellation.h"
#include "core/trace.h"
#include "executor/executor.h"
#include "runtime/input_binding.h"

namespace glint {

// The executor's request for a run of the network `info` describes: bound
// inputs and outputs, output buffers, deadline, cancellation, `shutdown`,
// trace and priority from `options`.
absl::StatusOr<std::shared_ptr<ExecutionRequest>> BindRequest(
    const NetworkInfo& info, std::vector<NamedTensor> inputs,
    const RunOptions& options,
    std::shared_ptr<const CancellationToken> shutdown);

// A traced run's slice for its time in the admission queue, to be ended
// when the run starts or is refused; null when the run is not traced.
TraceSlice* TraceAdmission(const RunOptions& options);

}  // namespace glint

#endif  // GLINT_RUNTIME_REQUEST_BINDING_H_
