// The parameters of an inference request — on the request, on each input,
// on each requested output — as the Open Inference Protocol and Triton's
// extensions define them, read once for both transports. The gRPC service
// turns its `map<string, InferParameter>` (proto/oip_convert.cc) and the
// REST port its JSON `"parameters"` object (runtime/server/http/rest_convert.cc)
// into OipParameters; every rule — which keys exist, their types, what an
// unknown key gets, how `timeout` meets the transport's own deadline — is
// here, so the two ports cannot drift apart.
//
// No protobuf or JSON types. Every function is a pure function of its
// arguments (thread-safe).
#ifndef GLINT_PROTO_OIP_PARAMETERS_H_
#define GLINT_PROTO_OIP_PARAMETERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/types.h"

namespace glint {

// One parameter's value: the protocol's parameter types (gRPC's
// InferParameter oneof; a JSON scalar). std::monostate is a parameter sent
// without a value (an unset oneof), which no key accepts.
using OipParameterValue =
    std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string>;

struct OipParameter {
  std::string key;
  OipParameterValue value;
};

// In the order the transport gave them (the first offending one is named).
using OipParameters = std::vector<OipParameter>;

// The request's own parameters, into `options`:
//  - `priority`: an integer level (RunPriorityFromOip) → options->priority;
//  - `timeout`: integer microseconds (DeadlineFromOipTimeout) → the
//    earlier of now + timeout and `transport_deadline` (the gRPC call's
//    deadline; InfiniteFuture for HTTP, which has none). Without `timeout`
//    the deadline is `transport_deadline`. This is the one place a run's
//    deadline is merged from what the request says;
//  - `binary_data_output`: a bool, accepted and without effect (Triton's
//    HTTP client sends it; each transport has one encoding of outputs);
//  - `sequence_*`: UNIMPLEMENTED (no sequence batching);
//  - anything else: INVALID_ARGUMENT naming the key (a misspelt `timeout`
//    would otherwise be a deadline silently lost).
// Integers are int64 or uint64 values within int64; a wrong type is
// INVALID_ARGUMENT naming the key.
absl::Status ApplyOipRequestParameters(const OipParameters& parameters,
                                       absl::Time now,
                                       absl::Time transport_deadline,
                                       RunOptions* options);

// An input's parameters: only Triton's shared-memory ones
// (`shared_memory_region`, a non-empty string; `shared_memory_byte_size`,
// required with a region; `shared_memory_offset`, optional, 0), integers
// not negative. Returns the window, or nullopt when the input has none.
// `binary_data_size` (Triton's binary tensor extension) is UNIMPLEMENTED;
// any other key, an incomplete window or a wrong type is INVALID_ARGUMENT
// prefixed with `what` (e.g. "input 'x'"). Whether the window's size
// matches the tensor, and whether the region exists, is the caller's.
absl::StatusOr<std::optional<SharedMemoryRef>> ParseOipInputParameters(
    const OipParameters& parameters, absl::string_view what);

// A requested output's parameters: `binary_data` (a bool; each transport
// has one encoding of outputs, so it changes nothing), the shared-memory
// window as for inputs, `classification` UNIMPLEMENTED, any other key
// INVALID_ARGUMENT prefixed with `what`.
absl::StatusOr<std::optional<SharedMemoryRef>> ParseOipOutputParameters(
    const OipParameters& parameters, absl::string_view what);

// Whether `key` belongs to Triton's shared-memory extension (a transport
// without that extension refuses these before parsing).
bool IsOipSharedMemoryParameter(absl::string_view key);

}  // namespace glint

#endif  // GLINT_PROTO_OIP_PARAMETERS_H_
