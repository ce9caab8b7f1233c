// A glint.v1 RunNetworkRequest taken apart for HostManager::RunNetworkAsync,
// and its reply put together. Inputs come from raw_data (borrowed from the
// request, no copy: keep the request until the run has ended) or from
// shared memory (borrowed from the mapping, no copy);
// outputs go into the reply or, where output_shared_memory says, into a
// region's window, the reply then carrying only their dtype and shape.
//
// Kept apart from the service so that the handler stays thin whatever API
// it is written on (sync or callback) and this is tested without gRPC.
// Functions are thread-safe (the registry is); a DecodedRunRequest is
// thread-compatible.
#ifndef GLINT_RUNTIME_SERVER_RUN_REQUEST_H_
#define GLINT_RUNTIME_SERVER_RUN_REQUEST_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/types.h"
#include "proto/glint.pb.h"
#include "runtime/server/shared_memory.h"

namespace glint {

// What a run needs besides the network's name. Holds the shared-memory
// regions it uses (inputs through their tensors, outputs through their
// windows) until it is destroyed: keep it until the reply is made.
struct DecodedRunRequest {
  std::vector<NamedTensor> inputs;
  // requested_outputs and trace from the request; the caller adds the
  // deadline, cancellation and priority.
  RunOptions options;
  struct OutputWindow {
    std::string output;
    SharedMemoryRef ref;
    SharedMemoryView view;
  };
  std::vector<OutputWindow> output_windows;
};

// INVALID_ARGUMENT for a malformed tensor (TensorFromProto,
// SharedMemoryTensorFromProto), an unregistered region, a window outside
// its region or not the tensor's size, or an output window for an output
// that requested_outputs leaves out. FAILED_PRECONDITION for a region whose
// object was shrunk.
absl::StatusOr<DecodedRunRequest> DecodeRunRequest(const v1::RunNetworkRequest& request,
                                       const SharedMemoryRegistry& registry);

// Fills `response` with the run's `outputs` (in their order); those with a
// window are copied into it. INVALID_ARGUMENT when a window names no output
// of the run or is too small for it (nothing is written into any window
// then); INTERNAL when an output cannot travel.
absl::Status EncodeRunResponse(const DecodedRunRequest& run,
                             const std::vector<NamedTensor>& outputs,
                             v1::RunNetworkResponse* response);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_RUN_REQUEST_H_
