// A ModelInfer request of the inference protocol taken apart for
// HostManager::RunNetworkAsync with its shared-memory windows resolved
// against glintd's registry (Triton's system shared memory extension), and
// its reply put together: outputs with a window written there (the reply
// keeps their datatype and shape, with an empty raw_output_contents
// entry), the others in raw_output_contents.
//
// Kept apart from the gRPC service so that the handler stays thin and this
// is tested without gRPC (oip_infer_test.cc). Functions are thread-safe
// (the registry is); a PreparedOipInfer is thread-compatible.
#ifndef GLINT_RUNTIME_SERVER_GRPC_OIP_INFER_H_
#define GLINT_RUNTIME_SERVER_GRPC_OIP_INFER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "proto/inference.pb.h"
#include "runtime/server/grpc/run_request.h"
#include "serving/shared_memory.h"

namespace glint {

// What a ModelInfer run needs. Holds the shared-memory regions it uses
// (inputs through their tensors, outputs through their windows) until it
// is destroyed: keep it until the reply is made.
struct PreparedOipInfer {
  std::string model_name;
  // Every input: those sent in the message, then those borrowed (no copy)
  // from their windows.
  std::vector<NamedTensor> inputs;
  // requested_outputs, priority and deadline; the caller adds the
  // cancellation.
  RunOptions options;
  std::vector<OutputWindow> output_windows;
};

// OipInferCallFromProto (its codes), then each window against `registry`:
// INVALID_ARGUMENT for an unregistered region, or a window that does not
// lie inside its region (an offset past its end, a region too small);
// FAILED_PRECONDITION for a region whose object was shrunk. Nothing is
// read or written outside a region.
absl::StatusOr<PreparedOipInfer> PrepareOipInfer(
    const inference::ModelInferRequest& request,
    const SharedMemoryRegistry& registry, absl::Time now,
    absl::Time grpc_deadline);

// Writes the outputs with a window into it and fills `response`
// (OipInferResponseToProto). INVALID_ARGUMENT when a window is too small
// for its output or names no output of the run (no window is written
// then); INTERNAL when an output cannot travel.
absl::Status FinishOipInfer(const inference::ModelInferRequest& request,
                            const PreparedOipInfer& run,
                            const std::vector<NamedTensor>& outputs,
                            inference::ModelInferResponse* response);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_OIP_INFER_H_
