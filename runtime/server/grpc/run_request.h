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
#ifndef GLINT_RUNTIME_SERVER_GRPC_RUN_REQUEST_H_
#define GLINT_RUNTIME_SERVER_GRPC_RUN_REQUEST_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/types.h"
#include "proto/glint.pb.h"
#include "serving/shared_memory.h"

namespace glint {

// An output to be written into a bounds-checked shared-memory window (the
// view holds its region).
struct OutputWindow {
  std::string output;
  SharedMemoryRef ref;
  SharedMemoryView view;
};

// What a run needs besides the network's name. Holds the shared-memory
// regions it uses (inputs through their tensors, outputs through their
// windows) until it is destroyed: keep it until the reply is made.
struct DecodedRunRequest {
  std::vector<NamedTensor> inputs;
  // requested_outputs and trace from the request; the caller adds the
  // deadline, cancellation and priority.
  RunOptions options;
  using OutputWindow = ::glint::OutputWindow;
  std::vector<OutputWindow> output_windows;
};

// Offers each window to the run as an output buffer
// (RunOptions::output_buffers), so that its output is written there
// straight from its device rather than copied in afterwards. A window
// whose bytes overlap those of any of `inputs` (a borrowed shared-memory
// input) is not offered: the device could overwrite the input before a
// later partition reads it; that output is copied in after the run.
void AddOutputBuffers(const std::vector<OutputWindow>& windows,
                      const std::vector<NamedTensor>& inputs,
                      RunOptions* options);

// Copies each output that has a window in `windows` into it (unless the run
// wrote it there in place already), and returns
// per output (in `outputs`' order) its window, or null for those that
// travel in the message. Every window is checked before any is copied
// into: INVALID_ARGUMENT when a window names no output of the run
// (`field` names the request's field in the message) or is too small for
// its output, and then nothing more is written; but windows offered to
// the run (AddOutputBuffers) may already hold what its devices wrote
// there, so a refused reply does not leave the client's memory as it was.
// Used by both services (glint.v1 and the inference protocol).
absl::StatusOr<std::vector<const OutputWindow*>> WriteOutputWindows(
    const std::vector<OutputWindow>& windows,
    const std::vector<NamedTensor>& outputs, absl::string_view field);

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

#endif  // GLINT_RUNTIME_SERVER_GRPC_RUN_REQUEST_H_
