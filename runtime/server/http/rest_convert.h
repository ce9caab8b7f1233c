// The bodies of the KServe v2 / Open Inference Protocol REST endpoints
// (JSON) and Glint's API types: an infer request's JSON tensors become
// NamedTensors and RunOptions, outputs and metadata become JSON text. The
// HTTP side (rest_api.h, http_server.h) only routes and calls these.
//
// Tensor data is JSON numbers (booleans for BOOL), flat in row-major order
// or nested as the shape says. Floating-point values that JSON cannot spell
// travel as the strings "NaN", "Infinity" and "-Infinity", both ways. BYTES
// (strings) is refused: Glint computes on no string tensors.
//
// Every function is a pure function of its arguments (thread-safe). None
// throws: nlohmann::json's exceptions stay inside rest_convert.cc.
#ifndef GLINT_RUNTIME_SERVER_HTTP_REST_CONVERT_H_
#define GLINT_RUNTIME_SERVER_HTTP_REST_CONVERT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "nlohmann/json.hpp"
#include "proto/oip_types.h"

namespace glint {

// The OIP names (datatype strings, kOipModelVersion, kOipPlatform) are
// proto/oip_types.h's, shared with the gRPC service.

// --- Tensors ------------------------------------------------------------------

// A tensor of `dtype` and `shape` from an OIP `data` array: flat (exactly
// product(shape) scalars) or nested (arrays whose lengths follow the shape
// level by level, scalars at the innermost). Integer types take JSON
// integers within the type's range, floating types any number or "NaN",
// "Infinity", "-Infinity", BOOL true/false. INVALID_ARGUMENT naming `what`
// and the first offending element otherwise; the shape must pass
// CheckTensorSize.
absl::StatusOr<Tensor> TensorFromJson(const nlohmann::json& data, DType dtype,
                                      const Shape& shape,
                                      absl::string_view what);

// Appends `{"name":...,"datatype":...,"shape":[...],"data":[...]}`: data
// flat, floats in their shortest round-trip form. INVALID_ARGUMENT for a
// tensor without a buffer or of a dtype without an OIP data form.
absl::Status AppendTensorJson(const NamedTensor& tensor, std::string* out);

// --- Requests -----------------------------------------------------------------

// An infer request's body, validated.
struct RestInferRequest {
  std::optional<std::string> id;  // Echoed in the reply when given.
  std::vector<NamedTensor> inputs;
  // requested_outputs from `outputs`; priority from parameters.priority;
  // deadline from parameters.timeout (microseconds from `now`).
  RunOptions options;
};

// Parses the body of POST /v2/models/{m}/infer:
//   {"id"?, "parameters"?, "inputs": [{"name", "shape", "datatype",
//    "parameters"?, "data"}], "outputs"?: [{"name", "parameters"?}]}
// Every "parameters" object — the request's, each input's, each output's —
// is read by the inference protocol's one parser (proto/oip_parameters.h),
// as on the gRPC port: `priority`, `timeout` (integer microseconds, 0 =
// none; HTTP has no deadline of its own) and `binary_data_output` on the
// request, `binary_data` on an output (its data comes back as JSON, which
// Triton's clients read too); an unknown key is INVALID_ARGUMENT, Triton's
// binary tensor extension (`binary_data_size`), `classification` and
// `sequence_*` are UNIMPLEMENTED, and so are the shared-memory parameters
// (the HTTP port has no shared memory). INVALID_ARGUMENT for anything
// malformed, naming what and where; the JSON parser's message for bad JSON.
absl::StatusOr<RestInferRequest> ParseInferRequest(absl::string_view body,
                                                   absl::Time now);

// --- Replies ------------------------------------------------------------------

// {"model_name", "model_version", "id"? , "outputs": [...]}.
absl::StatusOr<std::string> InferResponseJson(
    absl::string_view model_name, const std::optional<std::string>& id,
    const std::vector<NamedTensor>& outputs);

// {"name", "versions": ["1"], "platform", "inputs": [...], "outputs": [...]},
// each tensor {"name", "datatype", "shape"} with -1 for a dimension not
// known until run time (and for the batch dim of a batching network), as
// the gRPC metadata (OipMetadataShape); with dynamic dims also
// "parameters": {"max_dims": "seq=512;..."}, their bounds.
std::string ModelMetadataJson(const NetworkInfo& network);

// {"name": "glint", "version", "extensions": ["schedule_policy"]}: of
// Triton's extensions, REST implements the priority and timeout
// parameters.
std::string ServerMetadataJson();

// {"error": message}, the body of every failed REST call.
std::string ErrorJson(absl::string_view message);

// `text` as a JSON string literal, quotes included. Invalid UTF-8 (names
// are user strings) becomes U+FFFD rather than failing.
std::string JsonQuote(absl::string_view text);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_HTTP_REST_CONVERT_H_
