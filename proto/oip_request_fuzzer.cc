// libFuzzer target for what glintd does with the inference protocol's
// untrusted input before the runtime sees it. Every input is tried two
// ways:
//  - as a serialized inference.ModelInferRequest → OipInferCallFromProto
//    (datatypes, shapes, raw vs typed contents, shared-memory windows,
//    parameters, outputs); every accepted input must be the request's
//    tensor (datatype, shape, and its raw bytes when sent raw) or its
//    window (of exactly its bytes), and sending the accepted tensors
//    back (OipInferResponseToProto) must give the same datatypes, shapes
//    and bytes;
//  - as the JSON `config` of RepositoryModelLoad →
//    TritonModelConfigFromJson; an accepted configuration must be one
//    HostManager can be given (replicas >= 1, preferred batch sizes within
//    max_batch_size, input shapes within the tensor ceilings).
// Refusals must be INVALID_ARGUMENT, NOT_FOUND (a version) or
// UNIMPLEMENTED (a feature Glint lacks), never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_check.h"
#include "proto/inference.pb.h"
#include "proto/oip_convert.h"
#include "proto/oip_types.h"

namespace {

bool ExpectedRefusal(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument ||
         s.code() == absl::StatusCode::kNotFound ||
         s.code() == absl::StatusCode::kUnimplemented;
}

void FuzzInferRequest(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  absl::StatusOr<glint::OipInferCall> call = glint::OipInferCallFromProto(
      request, absl::UnixEpoch(), absl::InfiniteFuture());
  if (!call.ok()) {
    FUZZ_CHECK(ExpectedRefusal(call.status()), call.status().ToString());
    return;
  }
  FUZZ_CHECK(static_cast<int>(call->inputs.size() +
                              call->shared_memory_inputs.size()) ==
                 request.inputs_size(),
             "one tensor or window per input");
  const bool raw = request.raw_input_contents_size() > 0;
  size_t next = 0, next_window = 0;  // In call->inputs, shared_memory_inputs.
  int raw_index = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& in = request.inputs(i);
    if (in.parameters().contains("shared_memory_region")) {
      FUZZ_CHECK(next_window < call->shared_memory_inputs.size(),
                 "a window per input in shared memory");
      const glint::SharedMemoryTensor& w =
          call->shared_memory_inputs[next_window++];
      FUZZ_CHECK(w.name == in.name(), "names kept");
      FUZZ_CHECK(
          w.window.byte_size == static_cast<uint64_t>(w.shape.NumElements()) *
                                    glint::DTypeSize(w.dtype),
          "a window holds its tensor's bytes");
      continue;
    }
    FUZZ_CHECK(next < call->inputs.size(), "a tensor per input in messages");
    const glint::Tensor& t = call->inputs[next].tensor;
    FUZZ_CHECK(call->inputs[next].name == in.name(), "names kept");
    ++next;
    absl::StatusOr<glint::DType> dtype =
        glint::DTypeFromOipDatatype(in.datatype());
    FUZZ_CHECK(dtype.ok() && *dtype == t.dtype(),
               absl::StrCat("input ", i, " has the request's datatype"));
    FUZZ_CHECK(t.shape().dims() ==
                   std::vector<int64_t>(in.shape().begin(), in.shape().end()),
               absl::StrCat("input ", i, " has the request's shape"));
    FUZZ_CHECK(t.valid(), "a converted tensor has data");
    if (raw) {
      FUZZ_CHECK(
          std::string(static_cast<const char*>(t.raw_data()), t.num_bytes()) ==
              request.raw_input_contents(raw_index++),
          absl::StrCat("input ", i, " is its raw bytes"));
    }
  }
  inference::ModelInferResponse response;
  absl::Status back =
      glint::OipInferResponseToProto(request, call->inputs, &response);
  FUZZ_CHECK(back.ok(), back.ToString());
  FUZZ_CHECK(response.id() == request.id(), "id echoed");
  for (size_t i = 0; i < call->inputs.size(); ++i) {
    const glint::Tensor& t = call->inputs[i].tensor;
    FUZZ_CHECK(response.outputs(i).datatype() == glint::OipDatatype(t.dtype()),
               "datatype travels back");
    FUZZ_CHECK(response.raw_output_contents(i) ==
                   std::string(static_cast<const char*>(t.raw_data()),
                               t.num_bytes()),
               "bytes travel back");
  }
}

void FuzzConfig(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<glint::TritonModelConfig> config =
      glint::TritonModelConfigFromJson(json, "model");
  if (!config.ok()) {
    FUZZ_CHECK(config.status().code() == absl::StatusCode::kInvalidArgument,
               config.status().ToString());
    return;
  }
  const glint::AddNetworkOptions& o = config->options;
  FUZZ_CHECK(o.partition.replicas >= 1, "replicas >= 1");
  FUZZ_CHECK(o.partition.plan_devices >= 0, "plan_devices >= 0");
  FUZZ_CHECK(o.batching.max_batch_size >= 0, "max_batch_size >= 0");
  FUZZ_CHECK(o.batching.max_queue_delay >= absl::ZeroDuration(),
             "queue delay >= 0");
  for (int s : o.batching.preferred_batch_sizes) {
    FUZZ_CHECK(s >= 1 && s <= o.batching.max_batch_size,
               "preferred sizes within max_batch_size");
  }
  for (const auto& [name, shape] : o.input_shapes) {
    FUZZ_CHECK(glint::CheckTensorSize(glint::DType::kUInt8, shape).ok(),
               absl::StrCat("input_shapes '", name, "' within the ceilings"));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzInferRequest(data, size);
  FuzzConfig(data, size);
  return 0;
}
