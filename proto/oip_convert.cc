#include "proto/oip_convert.h"

#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/text.h"
#include "proto/oip_parameters.h"

namespace glint {
namespace {

using inference::InferParameter;
using inference::InferTensorContents;
using inference::ModelInferRequest;

// The typed-contents fields that hold values, as (name, count).
std::vector<std::pair<absl::string_view, int>> FilledFields(
    const InferTensorContents& c) {
  std::vector<std::pair<absl::string_view, int>> filled;
  auto add = [&](absl::string_view name, int n) {
    if (n > 0) filled.emplace_back(name, n);
  };
  add("bool_contents", c.bool_contents_size());
  add("int_contents", c.int_contents_size());
  add("int64_contents", c.int64_contents_size());
  add("uint_contents", c.uint_contents_size());
  add("uint64_contents", c.uint64_contents_size());
  add("fp32_contents", c.fp32_contents_size());
  add("fp64_contents", c.fp64_contents_size());
  add("bytes_contents", c.bytes_contents_size());
  return filled;
}

// The typed-contents field that carries `dtype`; empty for FP16 and BF16,
// which have none.
absl::string_view ContentsField(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "bool_contents";
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32: return "int_contents";
    case DType::kInt64: return "int64_contents";
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32: return "uint_contents";
    case DType::kUInt64: return "uint64_contents";
    case DType::kFloat32: return "fp32_contents";
    case DType::kFloat64: return "fp64_contents";
    default: return "";
  }
}

// Copies `values` into `out` as T, each checked to lie in [lo, hi].
template <typename T, typename Values>
absl::Status CopyNarrowing(const Values& values, int64_t lo, int64_t hi,
                           const std::string& what, Tensor* out) {
  T* data = out->data<T>();
  for (int i = 0; i < values.size(); ++i) {
    const int64_t v = static_cast<int64_t>(values.Get(i));
    if (v < lo || v > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": value ", v, " at ", i, " is outside [", lo,
                       ", ", hi, "]"));
    }
    data[i] = static_cast<T>(v);
  }
  return absl::OkStatus();
}

template <typename T, typename Values>
void Copy(const Values& values, Tensor* out) {
  T* data = out->data<T>();
  for (int i = 0; i < values.size(); ++i) data[i] = values.Get(i);
}

absl::StatusOr<Tensor> TensorFromContents(const InferTensorContents& c,
                                          DType dtype, Shape shape,
                                          const std::string& what) {
  const int64_t n = shape.NumElements();
  const absl::string_view field = ContentsField(dtype);
  const auto filled = FilledFields(c);
  if (field.empty() && n > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": datatype ", OipDatatype(dtype),
        " has no typed contents field; send it in raw_input_contents"));
  }
  for (const auto& [name, count] : filled) {
    if (name != field) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": contents.", name, " does not carry ", OipDatatype(dtype),
          field.empty() ? std::string()
                        : absl::StrCat(" (use contents.", field, ")")));
    }
    if (count != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": contents.", name, " holds ", count,
          " values; its shape needs ", n));
    }
  }
  if (filled.empty() && n > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " has no data: send contents.", field,
        " or raw_input_contents"));
  }
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, std::move(shape));
  if (!t.ok()) return t.status();
  if (n == 0) return t;
  absl::Status s;
  switch (dtype) {
    case DType::kBool: {
      uint8_t* data = t->data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) data[i] = c.bool_contents(i) ? 1 : 0;
      break;
    }
    case DType::kInt8:
      s = CopyNarrowing<int8_t>(c.int_contents(), -128, 127, what, &*t);
      break;
    case DType::kInt16:
      s = CopyNarrowing<int16_t>(c.int_contents(), -32768, 32767, what, &*t);
      break;
    case DType::kInt32: Copy<int32_t>(c.int_contents(), &*t); break;
    case DType::kInt64: Copy<int64_t>(c.int64_contents(), &*t); break;
    case DType::kUInt8:
      s = CopyNarrowing<uint8_t>(c.uint_contents(), 0, 255, what, &*t);
      break;
    case DType::kUInt16:
      s = CopyNarrowing<uint16_t>(c.uint_contents(), 0, 65535, what, &*t);
      break;
    case DType::kUInt32: Copy<uint32_t>(c.uint_contents(), &*t); break;
    case DType::kUInt64: Copy<uint64_t>(c.uint64_contents(), &*t); break;
    case DType::kFloat32: Copy<float>(c.fp32_contents(), &*t); break;
    case DType::kFloat64: Copy<double>(c.fp64_contents(), &*t); break;
    default:
      return absl::InternalError(absl::StrCat(what, ": unhandled datatype"));
  }
  if (!s.ok()) return s;
  return t;
}

// A protobuf parameter map as the transport-neutral parameter list.
OipParameters ParametersOf(
    const google::protobuf::Map<std::string, InferParameter>& map) {
  OipParameters parameters;
  parameters.reserve(map.size());
  for (const auto& [key, p] : map) {
    OipParameterValue value;
    switch (p.parameter_choice_case()) {
      case InferParameter::kBoolParam:
        value = p.bool_param();
        break;
      case InferParameter::kInt64Param:
        value = p.int64_param();
        break;
      case InferParameter::kUint64Param:
        value = p.uint64_param();
        break;
      case InferParameter::kDoubleParam:
        value = p.double_param();
        break;
      case InferParameter::kStringParam:
        value = p.string_param();
        break;
      case InferParameter::PARAMETER_CHOICE_NOT_SET:
        break;
    }
    parameters.push_back({key, std::move(value)});
  }
  return parameters;
}

void TensorMetadataToProto(
    const ValueInfo& v, bool batched,
    inference::ModelMetadataResponse::TensorMetadata* proto) {
  proto->set_name(v.name);
  proto->set_datatype(std::string(OipDatatype(v.dtype)));
  for (int64_t d : OipMetadataShape(v, batched)) proto->add_shape(d);
}

// The dims Triton's config lists: behind the batch dimension when batching.
template <typename Proto>
void ConfigTensorToProto(const ValueInfo& v, bool batched, Proto* proto) {
  proto->set_name(v.name);
  proto->set_data_type(
      static_cast<inference::DataType>(TritonDataType(v.dtype)));
  if (!v.shape.has_rank()) proto->add_dims(-1);  // As in the metadata.
  for (int i = batched ? 1 : 0; i < v.shape.rank(); ++i) {
    proto->add_dims(v.shape.dim(i) < 0 ? -1 : v.shape.dim(i));
  }
}

void DurationToProto(const DurationStats& d,
                     inference::StatisticDuration* proto) {
  proto->set_count(d.count);
  proto->set_ns(d.total_ns);
}

// Requires the repository to be Glint's one.
absl::Status CheckRepository(absl::string_view repository) {
  if (repository.empty()) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      "no repository named '", Clip(repository),
      "': glintd has one, named \"\""));
}

}  // namespace

namespace {

// An input's dtype and shape: a known datatype, no negative dimension,
// within the tensor ceilings.
absl::Status InputTypeAndShape(const ModelInferRequest::InferInputTensor& in,
                               const std::string& what, DType* dtype,
                               Shape* shape) {
  absl::StatusOr<DType> parsed = DTypeFromOipDatatype(in.datatype());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", parsed.status().message()));
  }
  for (int64_t d : in.shape()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": shape [", absl::StrJoin(in.shape(), ", "),
                       "] has a negative dimension"));
    }
  }
  *dtype = *parsed;
  *shape = Shape(std::vector<int64_t>(in.shape().begin(), in.shape().end()));
  return CheckTensorSize(*dtype, *shape, what);
}

// Input i of `request` into `call`: in its shared-memory `window`, or from
// raw_input_contents[*raw_index] (advanced) when `raw`, or from its typed
// contents.
absl::Status AddInput(const ModelInferRequest& request, int i,
                      std::optional<SharedMemoryRef> window, bool raw,
                      int* raw_index, OipInferCall* call) {
  const ModelInferRequest::InferInputTensor& in = request.inputs(i);
  const std::string what = absl::StrCat("input '", Clip(in.name()), "'");
  DType dtype = DType::kUndefined;
  Shape shape;
  if (absl::Status s = InputTypeAndShape(in, what, &dtype, &shape); !s.ok()) {
    return s;
  }
  const uint64_t bytes_needed =
      static_cast<uint64_t>(shape.NumElements()) * DTypeSize(dtype);
  if (window.has_value()) {
    if (!FilledFields(in.contents()).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          " has contents and a shared-memory window: use one or the other"));
    }
    if (window->byte_size != bytes_needed) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": shared_memory_byte_size is ", window->byte_size, "; ",
          in.datatype(), shape.ToString(), " needs ", bytes_needed));
    }
    call->shared_memory_inputs.push_back(
        {in.name(), dtype, std::move(shape), *std::move(window)});
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> tensor;
  if (raw) {
    if (!FilledFields(in.contents()).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " has contents while the request uses raw_input_contents: "
                "use one or the other for all inputs"));
    }
    const int index = (*raw_index)++;
    const std::string& bytes = request.raw_input_contents(index);
    if (bytes.size() != bytes_needed) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": raw_input_contents[", index, "] has ", bytes.size(),
          " bytes; ", in.datatype(), shape.ToString(), " needs ",
          bytes_needed));
    }
    tensor = Tensor::FromBytes(
        dtype, std::move(shape),
        absl::Span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  } else {
    tensor = TensorFromContents(in.contents(), dtype, std::move(shape), what);
  }
  if (!tensor.ok()) return tensor.status();
  call->inputs.push_back({in.name(), *std::move(tensor)});
  return absl::OkStatus();
}

// The requested outputs, in order, without duplicates, with their windows.
absl::Status AddRequestedOutputs(const ModelInferRequest& request,
                                 OipInferCall* call) {
  std::set<std::string> requested;
  for (const ModelInferRequest::InferRequestedOutputTensor& out :
       request.outputs()) {
    if (!requested.insert(out.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", Clip(out.name()), "' is requested twice"));
    }
    absl::StatusOr<std::optional<SharedMemoryRef>> window =
        ParseOipOutputParameters(
            ParametersOf(out.parameters()),
            absl::StrCat("output '", Clip(out.name()), "'"));
    if (!window.ok()) return window.status();
    if (window->has_value()) {
      call->output_windows.push_back({out.name(), *std::move(*window)});
    }
    call->options.requested_outputs.push_back(out.name());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OipInferCall> OipInferCallFromProto(
    const ModelInferRequest& request, absl::Time now,
    absl::Time grpc_deadline) {
  OipInferCall call;
  call.model_name = request.model_name();
  if (absl::Status s = CheckOipModelVersion(Clip(request.model_name()),
                                            request.model_version());
      !s.ok()) {
    return s;
  }
  // Inputs in shared memory take no raw_input_contents entry (as Triton):
  // the entries are those of the other inputs, in order.
  std::vector<std::optional<SharedMemoryRef>> windows;
  windows.reserve(request.inputs_size());
  int in_messages = 0;
  for (const ModelInferRequest::InferInputTensor& in : request.inputs()) {
    absl::StatusOr<std::optional<SharedMemoryRef>> window =
        ParseOipInputParameters(ParametersOf(in.parameters()),
                                absl::StrCat("input '", Clip(in.name()), "'"));
    if (!window.ok()) return window.status();
    if (!window->has_value()) ++in_messages;
    windows.push_back(*std::move(window));
  }
  const bool raw = request.raw_input_contents_size() > 0;
  if (raw && request.raw_input_contents_size() != in_messages) {
    return absl::InvalidArgumentError(absl::StrCat(
        "raw_input_contents has ", request.raw_input_contents_size(),
        " entries for ", in_messages,
        " inputs not in shared memory: it needs one per such input, in "
        "order"));
  }
  call.inputs.reserve(in_messages);
  int raw_index = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    if (absl::Status s = AddInput(request, i, std::move(windows[i]), raw,
                                  &raw_index, &call);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = AddRequestedOutputs(request, &call); !s.ok()) return s;
  if (absl::Status s = ApplyOipRequestParameters(
          ParametersOf(request.parameters()), now, grpc_deadline,
          &call.options);
      !s.ok()) {
    return s;
  }
  return call;
}

absl::Status OipInferResponseToProto(
    const ModelInferRequest& request, const std::vector<NamedTensor>& outputs,
    inference::ModelInferResponse* response,
    const std::vector<bool>& in_shared_memory) {
  response->set_model_name(request.model_name());
  response->set_model_version(std::string(kOipModelVersion));
  response->set_id(request.id());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedTensor& t = outputs[i];
    const absl::string_view datatype = OipDatatype(t.tensor.dtype());
    if (datatype.empty() || t.tensor.dtype() == DType::kString) {
      return absl::InternalError(absl::StrCat(
          "output '", Clip(t.name), "' is ", DTypeName(t.tensor.dtype()),
          ", which does not travel"));
    }
    if (!t.tensor.valid()) {
      return absl::InternalError(
          absl::StrCat("output '", Clip(t.name), "' has no data"));
    }
    inference::ModelInferResponse::InferOutputTensor* out =
        response->add_outputs();
    out->set_name(t.name);
    out->set_datatype(std::string(datatype));
    for (int64_t d : t.tensor.shape().dims()) out->add_shape(d);
    std::string* raw = response->add_raw_output_contents();
    if (i < in_shared_memory.size() && in_shared_memory[i]) continue;
    raw->assign(static_cast<const char*>(t.tensor.raw_data()),
                t.tensor.num_bytes());
  }
  return absl::OkStatus();
}

void SystemSharedMemoryStatusToProto(
    const std::vector<SharedMemoryRegionInfo>& regions,
    inference::SystemSharedMemoryStatusResponse* response) {
  for (const SharedMemoryRegionInfo& info : regions) {
    auto& status = (*response->mutable_regions())[info.name];
    status.set_name(info.name);
    status.set_key(info.key);
    status.set_offset(info.offset);
    status.set_byte_size(info.byte_size);
  }
}

void ModelMetadataToProto(const NetworkInfo& info,
                          inference::ModelMetadataResponse* response) {
  const bool batched = info.batching.max_batch_size > 0;
  response->set_name(info.name);
  response->add_versions(std::string(kOipModelVersion));
  response->set_platform(std::string(kOipPlatform));
  for (const ValueInfo& v : info.inputs) {
    TensorMetadataToProto(v, batched, response->add_inputs());
  }
  for (const ValueInfo& v : info.outputs) {
    TensorMetadataToProto(v, batched, response->add_outputs());
  }
}

void ModelConfigToProto(const NetworkInfo& info,
                        const std::vector<DeviceInfo>& devices,
                        inference::ModelConfig* config) {
  const DynamicBatching& batching = info.batching;
  const bool batched = batching.max_batch_size > 0;
  config->set_name(info.name);
  config->set_platform(std::string(kOipPlatform));
  config->set_backend(std::string(kOipBackend));
  config->set_max_batch_size(batching.max_batch_size);
  for (const ValueInfo& v : info.inputs) {
    ConfigTensorToProto(v, batched, config->add_input());
  }
  for (const ValueInfo& v : info.outputs) {
    ConfigTensorToProto(v, batched, config->add_output());
  }
  if (batched) {
    inference::ModelDynamicBatching* d = config->mutable_dynamic_batching();
    for (int size : batching.preferred_batch_sizes) {
      d->add_preferred_batch_size(size);
    }
    d->set_max_queue_delay_microseconds(
        absl::ToInt64Microseconds(batching.max_queue_delay));
  }
  size_t plan_devices = 0;
  for (int r = 0; r < info.replicas; ++r) {
    std::set<int> ids;
    for (const PartitionInfo& p : info.partitions) {
      if (r == 0) {
        ids.insert(p.device_id);
        continue;
      }
      if (static_cast<size_t>(r - 1) >= p.replica_devices.size()) continue;
      for (const DeviceInfo& d : devices) {
        if (d.name == p.replica_devices[r - 1]) ids.insert(d.id);
      }
    }
    if (r == 0) plan_devices = ids.size();
    inference::ModelInstanceGroup* group = config->add_instance_group();
    group->set_name(absl::StrCat(info.name, "_", r));
    group->set_count(1);
    group->set_kind(inference::ModelInstanceGroup::KIND_MODEL);
    for (int id : ids) group->add_gpus(id);
  }
  auto& parameters = *config->mutable_parameters();
  parameters["partition_strategy"].set_string_value(info.strategy);
  parameters["replicas"].set_string_value(absl::StrCat(info.replicas));
  parameters["plan_devices"].set_string_value(absl::StrCat(plan_devices));
  parameters["precision"].set_string_value(
      std::string(PrecisionName(info.precision)));
  // The bounds of the dynamic dims, as a config's parameters.max_dims sets
  // them (the protocol's dims say -1 and nothing more).
  if (!info.dynamic_dims.empty()) {
    parameters["max_dims"].set_string_value(
        OipMaxDimsParameter(info.dynamic_dims));
  }
}

void ModelStatisticsToProto(const NetworkStatistics& stats,
                            inference::ModelStatistics* proto) {
  proto->set_name(stats.name);
  proto->set_version(std::string(kOipModelVersion));
  proto->set_last_inference(
      stats.last_inference <= absl::UnixEpoch()
          ? 0
          : static_cast<uint64_t>(absl::ToUnixMillis(stats.last_inference)));
  proto->set_inference_count(stats.inference_count);
  proto->set_execution_count(stats.execution_count);
  inference::InferStatistics* s = proto->mutable_inference_stats();
  DurationToProto(stats.request, s->mutable_success());
  DurationToProto(stats.failed, s->mutable_fail());
  DurationToProto(stats.queue, s->mutable_queue());
  DurationToProto(stats.compute_input, s->mutable_compute_input());
  DurationToProto(stats.compute_infer, s->mutable_compute_infer());
  DurationToProto(stats.compute_output, s->mutable_compute_output());
}

void RepositoryIndexToProto(const std::vector<NetworkInfo>& networks,
                            bool ready_only,
                            inference::RepositoryIndexResponse* response) {
  for (const NetworkInfo& info : networks) {
    const bool ready = info.unavailable_reason.empty();
    if (ready_only && !ready) continue;
    inference::RepositoryIndexResponse::ModelIndex* m = response->add_models();
    m->set_name(info.name);
    m->set_version(std::string(kOipModelVersion));
    m->set_state(ready ? "READY" : "UNAVAILABLE");
    m->set_reason(info.unavailable_reason);
  }
}

absl::StatusOr<OipModelLoad> OipModelLoadFromProto(
    const inference::RepositoryModelLoadRequest& request) {
  if (absl::Status s = CheckRepository(request.repository_name()); !s.ok()) {
    return s;
  }
  if (request.model_name().empty()) {
    return absl::InvalidArgumentError("model_name is empty");
  }
  OipModelLoad load;
  load.name = request.model_name();
  std::string config_json;
  for (const auto& [key, value] : request.parameters()) {
    using inference::ModelRepositoryParameter;
    if (key == "config") {
      if (value.parameter_choice_case() !=
          ModelRepositoryParameter::kStringParam) {
        return absl::InvalidArgumentError(
            "parameter 'config' must be a string parameter (JSON)");
      }
      config_json = value.string_param();
      load.has_config = true;
    } else if (absl::StartsWith(key, "file:")) {
      if (key != "file:1/model.onnx") {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameter '", Clip(key),
            "': glintd takes one file, \"file:1/model.onnx\" (version 1, "
            "an ONNX model)"));
      }
      if (value.parameter_choice_case() !=
          ModelRepositoryParameter::kBytesParam) {
        return absl::InvalidArgumentError(
            "parameter 'file:1/model.onnx' must be a bytes parameter");
      }
      load.onnx_model = value.bytes_param();
      load.has_file = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown load parameter '", Clip(key),
          "' (glintd knows: config, file:1/model.onnx)"));
    }
  }
  absl::StatusOr<TritonModelConfig> config =
      TritonModelConfigFromJson(config_json, load.name);
  if (!config.ok()) return config.status();
  load.config = *std::move(config);
  return load;
}

absl::StatusOr<std::string> OipModelUnloadFromProto(
    const inference::RepositoryModelUnloadRequest& request) {
  if (absl::Status s = CheckRepository(request.repository_name()); !s.ok()) {
    return s;
  }
  if (request.model_name().empty()) {
    return absl::InvalidArgumentError("model_name is empty");
  }
  for (const auto& [key, value] : request.parameters()) {
    if (key == "unload_dependents" &&
        value.parameter_choice_case() ==
            inference::ModelRepositoryParameter::kBoolParam) {
      continue;  // Glint has no ensembles: nothing depends on a model.
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown unload parameter '", Clip(key),
        "' (glintd knows: unload_dependents, a bool)"));
  }
  return request.model_name();
}

}  // namespace glint
