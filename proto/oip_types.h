// The Open Inference Protocol's (KServe v2) and Triton's vocabulary in
// Glint's terms, without protobuf: datatype strings, the schedule-policy
// request parameters (priority, timeout), and a Triton model configuration
// given as JSON (RepositoryModelLoad's `config` parameter) turned into
// AddNetworkOptions. Shared by both front ends of the protocol: the gRPC
// service (proto/oip_convert.h) and the REST endpoints
// (runtime/server/http/rest_convert.h).
//
// Every function is a pure function of its arguments (thread-safe).
#ifndef GLINT_PROTO_OIP_TYPES_H_
#define GLINT_PROTO_OIP_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/dtype.h"

namespace glint {

// What ModelMetadata and ModelConfig report as the platform and backend of
// every Glint network: Triton's "<backend>_<format>" naming, for ONNX
// models run by Glint. A load's config may also name the ONNX Runtime
// platform/backend (the same model format), as configs written for Triton
// do.
inline constexpr absl::string_view kOipPlatform = "glint_onnx";
inline constexpr absl::string_view kOipBackend = "glint";

// The one model version Glint has per network.
inline constexpr absl::string_view kOipModelVersion = "1";

// glintd's version, as server metadata reports it over gRPC and REST.
inline constexpr absl::string_view kGlintVersion = "0.1.0";

// OK for "" (the latest) and "1"; NOT_FOUND for any other version.
absl::Status CheckOipModelVersion(absl::string_view model,
                                  absl::string_view version);

// --- Datatypes ---------------------------------------------------------------

// "BOOL", "UINT8".."UINT64", "INT8".."INT64", "FP16", "FP32", "FP64",
// "BF16". BYTES (strings) is INVALID_ARGUMENT saying Glint does not carry
// strings; anything else is INVALID_ARGUMENT naming the accepted ones.
absl::StatusOr<DType> DTypeFromOipDatatype(absl::string_view datatype);
// The datatype string of `dtype`: "BYTES" for kString, "" for a dtype the
// protocol has no string for (kUndefined).
absl::string_view OipDatatype(DType dtype);

// A tensor's shape as the protocol's metadata reports it: -1 for each
// dynamic dim and, when the network batches dynamically, for the batch
// (first) dim; an unknown rank as one -1, as Triton answers for such a
// tensor (the protocol has no unknown rank).
std::vector<int64_t> OipMetadataShape(const ValueInfo& value, bool batched);

// The "max_dims" parameter's text for a network's dynamic dims, as a
// Triton config's parameters.max_dims takes it ("seq=512;batch=8"): each
// key (DynamicDim::Key) once, in the dims' order; empty without any.
std::string OipMaxDimsParameter(const std::vector<DynamicDim>& dims);

// Triton's model_config DataType (TYPE_BOOL = 1 ... TYPE_BF16 = 14; the
// numbers of model_config.proto). TYPE_INVALID (0) for undefined.
int TritonDataType(DType dtype);
// "TYPE_FP32" (and the other TYPE_ names) → DType; INVALID_ARGUMENT for
// TYPE_STRING, TYPE_INVALID and unknown names.
absl::StatusOr<DType> DTypeFromTritonDataTypeName(absl::string_view name);

// --- Schedule policy: the request parameters `priority` and `timeout` --------

// Triton's request priority level: 1 is the highest, larger numbers are
// lower, 0 means the model's default. Glint has no per-model priority
// levels; its RunOptions::priority is "larger = more urgent, 0 default".
// The mapping: level 0 → 0 (the default, as a request without the
// parameter); level L in [1, kOipMaxPriorityLevel] →
// kOipMaxPriorityLevel + 1 - L, so every explicit level runs ahead of
// default-priority requests (as in Triton's usual set-up, where the
// default level is the last one) and level 1 ahead of all.
// INVALID_ARGUMENT for a negative level or one above the maximum.
inline constexpr int64_t kOipMaxPriorityLevel = 1'000'000;
absl::StatusOr<int> RunPriorityFromOip(int64_t level);

// The request parameter `timeout`, in microseconds: the run's deadline is
// `now` + timeout, or `grpc_deadline` if that is earlier. 0 means no
// timeout (Triton's meaning); negative values and values beyond 10 years
// are INVALID_ARGUMENT.
absl::StatusOr<absl::Time> DeadlineFromOipTimeout(int64_t timeout_us,
                                                  absl::Time now,
                                                  absl::Time grpc_deadline);

// --- A Triton model configuration (RepositoryModelLoad's `config`) ---------

// An `input` or `output` entry of the configuration: what the client says
// the model's tensor is. Checked against the network once it is added.
struct TritonTensorSpec {
  std::string name;
  std::optional<DType> dtype;             // Unset: not given.
  std::optional<std::vector<int64_t>> dims;  // Without the batch dimension
                                             // when max_batch_size > 0;
                                             // -1: any.
};

struct TritonModelConfig {
  // Triton's max_batch_size is options.batching.max_batch_size: > 0 means
  // requests carry a batch dimension first, and Glint batches them.
  AddNetworkOptions options;
  std::vector<TritonTensorSpec> inputs;
  std::vector<TritonTensorSpec> outputs;
};

// Parses the JSON form of Triton's ModelConfig (protobuf's JSON mapping:
// snake_case or lowerCamelCase names; 64-bit numbers as numbers or decimal
// strings; enums by name). What Glint honours:
//   name              must equal `model_name` when given
//   platform/backend  "glint_onnx"/"glint" or "onnxruntime_onnx"/
//                     "onnxruntime" when given; anything else is refused
//   max_batch_size    > 0 turns on dynamic batching with that many rows
//   dynamic_batching  {max_queue_delay_microseconds, preferred_batch_size}
//                     (needs max_batch_size > 0, as in Triton)
//   instance_group    [{count, kind, name}]: the counts add up to the
//                     network's replicas; `gpus` is refused (Glint places)
//   input/output      [{name, data_type, dims}]: an input's dims (all
//                     known; with a -1 the input's unknown dims stay
//                     dynamic) bind its shape as input_shapes does, behind a
//                     batch dimension of max_batch_size when that is > 0
//                     (a batching network is compiled at its largest
//                     batch, see AddNetworkOptions::batching); every
//                     entry is checked against the added network
//                     (CheckNetworkAgainstConfig)
//   parameters        Glint's placement options, each as Triton's
//                     {"string_value": "..."} (or a bare string):
//                     partition_strategy (auto, whole, memory,
//                     load_balanced, user), plan_devices (N), replicas (N),
//                     input_shapes ("x=1,3,224,224;y=1,10"), max_dims
//                     ("seq=512;batch=8": bounds of dynamic dims), place
//                     ("PATTERN=DEVICE;..."; implies strategy user),
//                     reuse (match, override, moo, graph), user_config,
//                     precision (fp32, bf16: AddNetworkOptions::precision)
// Any other field, parameter or value is INVALID_ARGUMENT naming it, as is
// malformed JSON: Glint does not silently ignore a setting it would not
// honour. An empty `json` is the default configuration.
absl::StatusOr<TritonModelConfig> TritonModelConfigFromJson(
    absl::string_view json, absl::string_view model_name);

// OK when every input and output the configuration names exists in `info`
// with the configured datatype and dims (batch dimension first when
// max_batch_size > 0; -1 matches any size). INVALID_ARGUMENT naming the
// first difference otherwise.
absl::Status CheckNetworkAgainstConfig(const TritonModelConfig& config,
                                       const NetworkInfo& info);

// What RepositoryModelLoad asks for (OipModelLoadFromProto in
// proto/oip_convert.h reads it; serving/serving_core.h acts on it).
struct OipModelLoad {
  std::string name;
  // The model's ONNX bytes from parameter "file:1/model.onnx"; empty when
  // the request carries no file.
  std::string onnx_model;
  bool has_file = false;
  // Whether the request had a "config" parameter; `config` is the default
  // one when it had not.
  bool has_config = false;
  TritonModelConfig config;
};

}  // namespace glint

#endif  // GLINT_PROTO_OIP_TYPES_H_
