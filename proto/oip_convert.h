// Conversions between the inference protocol's messages
// (proto/inference.proto: the Open Inference Protocol and Triton's
// extensions) and Glint's API types. The gRPC service
// (runtime/server/grpc/inference_service.h) only calls these and HostManager.
//
// Every function is a pure function of its arguments (thread-safe).
#ifndef GLINT_PROTO_OIP_CONVERT_H_
#define GLINT_PROTO_OIP_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/device_info.h"
#include "proto/inference.pb.h"
#include "proto/oip_types.h"

namespace glint {

// A requested output to be written into a shared-memory window.
struct OipOutputWindow {
  std::string output;
  SharedMemoryRef window;
};

// A ModelInfer request as HostManager::RunNetworkAsync takes it, but for
// the shared-memory windows, which the server resolves against its
// registry (runtime/server/grpc/oip_infer.h).
struct OipInferCall {
  std::string model_name;
  // The inputs sent in the message (raw or typed contents).
  std::vector<NamedTensor> inputs;
  // The inputs whose bytes lie in shared memory: datatype, shape and the
  // window (byte_size already checked to be the tensor's bytes).
  std::vector<SharedMemoryTensor> shared_memory_inputs;
  // Requested outputs to be written into shared memory, in the request's
  // order.
  std::vector<OipOutputWindow> output_windows;
  // requested_outputs (the request's `outputs`, in order), priority and
  // deadline (parameters `priority` and `timeout`, and `grpc_deadline`).
  // The caller adds the cancellation token.
  RunOptions options;
};

// Validates and converts a ModelInfer request:
//  - model_version "" or "1" (else NOT_FOUND);
//  - each input's datatype (DTypeFromOipDatatype) and shape (no negative
//    dimension, within the tensor ceilings);
//  - its data: in a shared-memory window (Triton's system shared memory:
//    input parameters `shared_memory_region` (a non-empty string),
//    `shared_memory_byte_size` (required with a region; exactly
//    product(shape) * sizeof(datatype)) and `shared_memory_offset`
//    (optional, 0), int64 or uint64, not negative; such an input has no
//    `contents` and no raw_input_contents entry), or for the other inputs
//    either every one in raw_input_contents (one entry per input not in
//    shared memory, in order, product(shape) * sizeof(datatype)
//    little-endian bytes, and then no input may carry `contents`), or in
//    its typed `contents` field for its datatype (BOOL bool_contents,
//    INT8/INT16/INT32 int_contents, INT64 int64_contents, UINT8/UINT16/
//    UINT32 uint_contents, UINT64 uint64_contents, FP32 fp32_contents,
//    FP64 fp64_contents) with exactly product(shape) values, each within
//    its datatype's range, and no other field set. FP16 and BF16 have no
//    typed field: raw only;
//  - request parameters, input and output parameters: the protocol's one
//    parser, shared with the REST port (proto/oip_parameters.h):
//    `priority`, `timeout` (merged with `grpc_deadline`, the call's),
//    `binary_data_output`; the shared-memory windows; an output's
//    `binary_data` (a bool, meaningless over gRPC);
//  - requested outputs: names without duplicates; an output's window
//    is the byte size it must fit in, checked once the output is known.
// Whether a region exists and the window lies inside it is the
// registry's to say (not checked here). INVALID_ARGUMENT naming the
// offending input, output or parameter for anything else; UNIMPLEMENTED
// for the features Glint lacks (`classification`, sequence parameters).
absl::StatusOr<OipInferCall> OipInferCallFromProto(
    const inference::ModelInferRequest& request, absl::Time now,
    absl::Time grpc_deadline);

// Fills the reply of a run: model_name, model_version "1", the request's
// `id`, and per output its name, datatype and shape, with the bytes in
// raw_output_contents (one entry per output, in order; an empty entry for
// output i when in_shared_memory[i]: its bytes were written into its
// window, as Triton answers, so that clients that index the entries by
// output keep working). INTERNAL for an output that cannot travel (a
// dtype without an OIP datatype).
absl::Status OipInferResponseToProto(
    const inference::ModelInferRequest& request,
    const std::vector<NamedTensor>& outputs,
    inference::ModelInferResponse* response,
    const std::vector<bool>& in_shared_memory = {});

// ModelMetadata: name, versions ["1"], platform kOipPlatform, inputs and
// outputs with OIP datatypes; -1 for a dimension not fixed: unknown output
// dims, and the batch dimension (the first) when the network batches
// dynamically. A tensor of a dtype without an OIP datatype is listed with
// an empty datatype.
void ModelMetadataToProto(const NetworkInfo& info,
                          inference::ModelMetadataResponse* response);

// ModelConfig (Triton's, reduced): name, platform, backend,
// max_batch_size and dynamic_batching from the network's batching, inputs
// and outputs with Triton data types and dims (behind the batch
// dimension when batching), one instance group per replica (kind
// KIND_MODEL: Glint places it; `gpus`: the ids of the devices it spans,
// from `devices`), and parameters partition_strategy, replicas and
// plan_devices (devices per replica) as strings.
void ModelConfigToProto(const NetworkInfo& info,
                        const std::vector<DeviceInfo>& devices,
                        inference::ModelConfig* config);

// One model's statistics (Triton's ModelStatistics): version "1",
// last_inference in ms since the epoch (0: never), inference and
// execution counts, and InferStatistics: success (successful requests, end
// to end), fail, queue, compute_input, compute_infer, compute_output as
// count and total nanoseconds.
void ModelStatisticsToProto(const NetworkStatistics& stats,
                            inference::ModelStatistics* proto);

// RepositoryIndex: every network, version "1", state "READY" or
// "UNAVAILABLE" with the reason; with `ready_only` the READY ones only.
void RepositoryIndexToProto(const std::vector<NetworkInfo>& networks,
                            bool ready_only,
                            inference::RepositoryIndexResponse* response);

// SystemSharedMemoryStatus: one entry per region, keyed by its name.
void SystemSharedMemoryStatusToProto(
    const std::vector<SharedMemoryRegionInfo>& regions,
    inference::SystemSharedMemoryStatusResponse* response);

// Validates a load: a non-empty model name; repository_name empty (Glint
// has one repository); parameters: "config" (string_param, JSON: see
// TritonModelConfigFromJson) and at most one file, "file:1/model.onnx"
// (bytes_param), as Triton clients send a model's files; any other
// parameter, file name or version is INVALID_ARGUMENT naming it.
absl::StatusOr<OipModelLoad> OipModelLoadFromProto(
    const inference::RepositoryModelLoadRequest& request);

// Validates an unload: a non-empty model name, repository_name empty;
// parameter "unload_dependents" (a bool; Glint has no ensembles) is
// accepted, anything else INVALID_ARGUMENT. Returns the model name.
absl::StatusOr<std::string> OipModelUnloadFromProto(
    const inference::RepositoryModelUnloadRequest& request);

}  // namespace glint

#endif  // GLINT_PROTO_OIP_CONVERT_H_
