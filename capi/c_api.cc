// The C API over HostManager (include/glint/c_api.h): status, runtime,
// networks and runs; tensors are in c_api_tensors.cc, the handles in
// handles.h.
//
// Every exported function is a boundary: it checks its pointers and handle
// tags, converts, calls the C++ runtime, and turns every failure (an
// absl::Status, or an exception from the standard library or a callback)
// into a GlintStatus. Nothing below throws across the C ABI.
#include "glint/c_api.h"

#include <cerrno>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "capi/handles.h"
#include "core/cancellation.h"
#include "core/dtype.h"
#include "core/logging.h"
#include "core/model_bytes.h"
#include "core/op_profile.h"
#include "core/precision.h"
#include "core/tensor.h"
#include "core/text.h"
#include "core/trace.h"
#include "devices/device_spec.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"
#include "runtime/host_manager.h"

using glint::capi_internal::CheckHandle;
using glint::capi_internal::CheckNotNull;
using glint::capi_internal::Delete;
using glint::capi_internal::Error;
using glint::capi_internal::FromStatus;
using glint::capi_internal::Guard;
using glint::capi_internal::Is;
using glint::capi_internal::kAddOptionsTag;
using glint::capi_internal::kCancelTag;
using glint::capi_internal::kDeletedTag;
using glint::capi_internal::kNetworkListTag;
using glint::capi_internal::kProfileTag;
using glint::capi_internal::kRunOptionsTag;
using glint::capi_internal::kRuntimeTag;
using glint::capi_internal::MakeList;
using glint::capi_internal::MakeNetwork;
using glint::capi_internal::OutOfMemory;

namespace {

// Set while a run's completion callback runs on this thread: deleting the
// runtime there would wait for the very run that calls it.
thread_local int callback_depth = 0;

// Checks and converts a run's arguments.
GlintStatus* PrepareRun(const char* function, GlintRuntime* runtime,
                        const char* name, const GlintTensor* const* inputs,
                        size_t num_inputs, const GlintRunOptions* options,
                        std::vector<glint::NamedTensor>* tensors,
                        glint::RunOptions* run_options) {
  GLINT_C_CHECK(CheckHandle(function, "runtime", runtime));
  GLINT_C_CHECK(CheckNotNull(function, "name", name));
  if (num_inputs > 0) GLINT_C_CHECK(CheckNotNull(function, "inputs", inputs));
  for (size_t i = 0; i < num_inputs; ++i) {
    const std::string param = absl::StrCat("inputs[", i, "]");
    GLINT_C_CHECK(CheckHandle(function, param.c_str(), inputs[i]));
    tensors->push_back(inputs[i]->named);  // Shares the bytes.
  }
  if (options != nullptr) {
    GLINT_C_CHECK(CheckHandle(function, "options", options));
    *run_options = options->options;
    if (options->timeout_us > 0) {
      run_options->deadline =
          absl::Now() + absl::Microseconds(options->timeout_us);
    }
  }
  return nullptr;
}

// `model` is the model's bytes, or `path` names its file.
GlintStatus* Add(const char* function, GlintRuntime* runtime, const char* name,
                 absl::string_view model, const char* path,
                 const GlintAddOptions* options, GlintNetwork** out) {
  glint::AddNetworkOptions add;
  if (options != nullptr) {
    GLINT_C_CHECK(CheckHandle(function, "options", options));
    add = options->options;
  }
  // From a file: mapped, not read, and its pages dropped after each pass
  // over them, so a large model is not held beside the network built from
  // it.
  absl::StatusOr<glint::NetworkInfo> info =
      path != nullptr ? runtime->host->AddNetworkFromFile(name, path, add)
                      : runtime->host->AddNetwork(name, model, add);
  if (!info.ok()) return FromStatus(function, info.status());
  if (out != nullptr) *out = MakeNetwork(*std::move(info));
  return nullptr;
}

}  // namespace

extern "C" {

uint32_t glint_api_version(void) { return GLINT_C_API_VERSION; }

// ---- Status -------------------------------------------------------------

GlintCode glint_status_code(const GlintStatus* status) {
  if (status == nullptr) return GLINT_OK;
  if (!Is(status)) return GLINT_INVALID_ARGUMENT;
  return status->code;
}

const char* glint_status_message(const GlintStatus* status) {
  if (status == nullptr) return "";
  if (!Is(status)) {
    return "glint_status_message: not a GlintStatus (a handle of another "
           "kind, or one deleted)";
  }
  return status->message.c_str();
}

void glint_status_delete(GlintStatus* status) {
  if (status == OutOfMemory()) return;
  Delete(status);
}

const char* glint_code_name(GlintCode code) {
  switch (code) {
    case GLINT_OK: return "OK";
    case GLINT_CANCELLED: return "CANCELLED";
    case GLINT_UNKNOWN: return "UNKNOWN";
    case GLINT_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case GLINT_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case GLINT_NOT_FOUND: return "NOT_FOUND";
    case GLINT_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case GLINT_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case GLINT_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case GLINT_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case GLINT_ABORTED: return "ABORTED";
    case GLINT_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case GLINT_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case GLINT_INTERNAL: return "INTERNAL";
    case GLINT_UNAVAILABLE: return "UNAVAILABLE";
    case GLINT_DATA_LOSS: return "DATA_LOSS";
    case GLINT_UNAUTHENTICATED: return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

// ---- Runtime ------------------------------------------------------------

GlintStatus* glint_runtime_create(const char* device_spec,
                                  GlintRuntime** out) {
  static constexpr char kFn[] = "glint_runtime_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    absl::StatusOr<std::vector<glint::DeviceConfig>> configs =
        glint::ParseDeviceSpec(device_spec != nullptr
                                   ? absl::string_view(device_spec)
                                   : glint::kDefaultDeviceSpec);
    if (!configs.ok()) return FromStatus(kFn, configs.status());
    glint::ShareHostCores(
        static_cast<int>(std::thread::hardware_concurrency()), &*configs);
    absl::StatusOr<std::unique_ptr<glint::HostManager>> host =
        glint::HostManager::CreateFromConfigs({}, *configs);
    if (!host.ok()) return FromStatus(kFn, host.status());
    *out = new GlintRuntime{kRuntimeTag, *std::move(host)};
    return nullptr;
  });
}

GlintStatus* glint_runtime_delete(GlintRuntime* runtime) {
  static constexpr char kFn[] = "glint_runtime_delete";
  return Guard(kFn, [&]() -> GlintStatus* {
    if (runtime == nullptr) return nullptr;
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    if (callback_depth > 0) {
      return Error(GLINT_FAILED_PRECONDITION, kFn,
                   "called from a run's completion callback, which the "
                   "runtime would wait for; delete it from another thread");
    }
    runtime->tag = kDeletedTag;
    delete runtime;  // ~HostManager waits for the runs in flight.
    return nullptr;
  });
}

// ---- Networks -----------------------------------------------------------

GlintStatus* glint_add_options_create(GlintAddOptions** out) {
  static constexpr char kFn[] = "glint_add_options_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintAddOptions{kAddOptionsTag, {}};
    return nullptr;
  });
}

void glint_add_options_delete(GlintAddOptions* options) { Delete(options); }

GlintStatus* glint_add_options_set_strategy(GlintAddOptions* options,
                                            const char* strategy) {
  static constexpr char kFn[] = "glint_add_options_set_strategy";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "strategy", strategy));
    absl::StatusOr<glint::PartitionStrategy> parsed =
        glint::ParsePartitionStrategy(strategy);
    if (!parsed.ok()) return FromStatus(kFn, parsed.status());
    if (*parsed == glint::PartitionStrategy::kUser) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   "strategy \"user\" needs a user plan, which the C API "
                   "does not take; use \"auto\", \"whole\", \"memory\" or "
                   "\"load_balanced\"");
    }
    options->options.partition.strategy = *parsed;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_plan_devices(GlintAddOptions* options,
                                                int plan_devices) {
  static constexpr char kFn[] = "glint_add_options_set_plan_devices";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (plan_devices < 0) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("plan_devices is ", plan_devices,
                                "; it must be >= 0 (0: the strategy "
                                "chooses)"));
    }
    options->options.partition.plan_devices = plan_devices;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_replicas(GlintAddOptions* options,
                                            int replicas) {
  static constexpr char kFn[] = "glint_add_options_set_replicas";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (replicas < 1) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("replicas is ", replicas,
                                "; it must be >= 1"));
    }
    options->options.partition.replicas = replicas;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_precision(GlintAddOptions* options,
                                             const char* precision) {
  static constexpr char kFn[] = "glint_add_options_set_precision";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "precision", precision));
    absl::StatusOr<glint::Precision> parsed = glint::ParsePrecision(precision);
    if (!parsed.ok()) return FromStatus(kFn, parsed.status());
    options->options.precision = *parsed;
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_input_shape(GlintAddOptions* options,
                                               const char* input,
                                               const int64_t* dims,
                                               size_t rank) {
  static constexpr char kFn[] = "glint_add_options_set_input_shape";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "input", input));
    if (rank > 0) GLINT_C_CHECK(CheckNotNull(kFn, "dims", dims));
    if (rank > static_cast<size_t>(glint::kMaxTensorRank)) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("rank ", rank, " is over the limit of ",
                                glint::kMaxTensorRank));
    }
    glint::Shape shape(std::vector<int64_t>(dims, dims + rank));
    for (size_t i = 0; i < rank; ++i) {
      if (shape.dim(static_cast<int>(i)) < 0) {
        return Error(GLINT_INVALID_ARGUMENT, kFn,
                     absl::StrCat("dims[", i, "] is ", shape.dim(i),
                                  "; a bound shape is static (dims >= 0)"));
      }
    }
    options->options.input_shapes[input] = std::move(shape);
    return nullptr;
  });
}

GlintStatus* glint_add_options_set_max_dim(GlintAddOptions* options,
                                           const char* dim, int64_t max) {
  static constexpr char kFn[] = "glint_add_options_set_max_dim";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "dim", dim));
    if (max < 1 || max > glint::kMaxDimBound) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("max is ", max, "; a bound is 1..",
                                glint::kMaxDimBound));
    }
    options->options.max_dims[dim] = max;
    return nullptr;
  });
}

GlintStatus* glint_runtime_add_network(GlintRuntime* runtime, const char* name,
                                       const void* model, size_t model_size,
                                       const GlintAddOptions* options,
                                       GlintNetwork** out) {
  static constexpr char kFn[] = "glint_runtime_add_network";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    if (model_size > 0) GLINT_C_CHECK(CheckNotNull(kFn, "model", model));
    return Add(kFn, runtime, name,
               absl::string_view(static_cast<const char*>(model), model_size),
               /*path=*/nullptr, options, out);
  });
}

GlintStatus* glint_runtime_add_network_from_file(
    GlintRuntime* runtime, const char* name, const char* path,
    const GlintAddOptions* options, GlintNetwork** out) {
  static constexpr char kFn[] = "glint_runtime_add_network_from_file";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    GLINT_C_CHECK(CheckNotNull(kFn, "path", path));
    return Add(kFn, runtime, name, {}, path, options, out);
  });
}

GlintStatus* glint_runtime_remove_network(GlintRuntime* runtime,
                                          const char* name) {
  static constexpr char kFn[] = "glint_runtime_remove_network";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    return FromStatus(kFn, runtime->host->RemoveNetwork(name));
  });
}

GlintStatus* glint_runtime_get_network(GlintRuntime* runtime, const char* name,
                                       GlintNetwork** out) {
  static constexpr char kFn[] = "glint_runtime_get_network";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    absl::StatusOr<glint::NetworkInfo> info = runtime->host->GetNetwork(name);
    if (!info.ok()) return FromStatus(kFn, info.status());
    *out = MakeNetwork(*std::move(info));
    return nullptr;
  });
}

GlintStatus* glint_runtime_list_networks(GlintRuntime* runtime,
                                         GlintNetworkList** out) {
  static constexpr char kFn[] = "glint_runtime_list_networks";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "runtime", runtime));
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    auto list = std::make_unique<GlintNetworkList>();
    list->tag = kNetworkListTag;
    for (glint::NetworkInfo& info : runtime->host->ListNetworks()) {
      list->networks.push_back(std::unique_ptr<GlintNetwork>(
          MakeNetwork(std::move(info))));
    }
    *out = list.release();
    return nullptr;
  });
}

GlintStatus* glint_network_info(const GlintNetwork* network, const char** name,
                                size_t* num_inputs, size_t* num_outputs,
                                size_t* num_partitions, int* replicas,
                                const char** strategy) {
  static constexpr char kFn[] = "glint_network_info";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "network", network));
    const glint::NetworkInfo& info = network->info;
    if (name != nullptr) *name = info.name.c_str();
    if (num_inputs != nullptr) *num_inputs = info.inputs.size();
    if (num_outputs != nullptr) *num_outputs = info.outputs.size();
    if (num_partitions != nullptr) *num_partitions = info.partitions.size();
    if (replicas != nullptr) *replicas = info.replicas;
    if (strategy != nullptr) *strategy = info.strategy.c_str();
    return nullptr;
  });
}

namespace {

// Input (is_output 0) or output number `index` of `network` into `*value`;
// INVALID_ARGUMENT for a bad handle, OUT_OF_RANGE past the end.
GlintStatus* FindNetworkValue(const char* fn, const GlintNetwork* handle,
                              int is_output, size_t index,
                              const glint::ValueInfo** value) {
  GLINT_C_CHECK(CheckHandle(fn, "network", handle));
  const GlintNetwork& network = *handle;
  const std::vector<glint::ValueInfo>& values =
      is_output ? network.info.outputs : network.info.inputs;
  if (index >= values.size()) {
    return Error(
        GLINT_OUT_OF_RANGE, fn,
        absl::StrCat(is_output ? "output" : "input", " index ", index,
                     " is past network '", glint::Clip(network.info.name),
                     "''s ", values.size(),
                     is_output ? " outputs" : " inputs"));
  }
  *value = &values[index];
  return nullptr;
}

}  // namespace

GlintStatus* glint_network_value(const GlintNetwork* network, int is_output,
                                 size_t index, const char** name,
                                 GlintDType* dtype, const int64_t** dims,
                                 size_t* rank) {
  static constexpr char kFn[] = "glint_network_value";
  return Guard(kFn, [&]() -> GlintStatus* {
    const glint::ValueInfo* found = nullptr;
    GLINT_C_CHECK(FindNetworkValue(kFn, network, is_output, index, &found));
    const glint::ValueInfo& value = *found;
    if (name != nullptr) *name = value.name.c_str();
    if (dtype != nullptr) *dtype = static_cast<GlintDType>(value.dtype);
    const bool known = value.shape.has_rank();
    if (dims != nullptr) *dims = known ? value.shape.dims().data() : nullptr;
    if (rank != nullptr) {
      *rank = known ? static_cast<size_t>(value.shape.rank())
                    : GLINT_UNKNOWN_RANK;
    }
    return nullptr;
  });
}

GlintStatus* glint_network_value_dim_name(const GlintNetwork* network,
                                          int is_output, size_t index,
                                          size_t axis, const char** name) {
  static constexpr char kFn[] = "glint_network_value_dim_name";
  return Guard(kFn, [&]() -> GlintStatus* {
    const glint::ValueInfo* found = nullptr;
    GLINT_C_CHECK(FindNetworkValue(kFn, network, is_output, index, &found));
    const glint::ValueInfo& value = *found;
    if (!value.shape.has_rank() ||
        axis >= static_cast<size_t>(value.shape.rank())) {
      return Error(GLINT_OUT_OF_RANGE, kFn,
                   absl::StrCat("axis ", axis, " is past the rank of '",
                                glint::Clip(value.name), "' (",
                                value.shape.ToString(), ")"));
    }
    if (name != nullptr) *name = value.DimName(static_cast<int>(axis)).c_str();
    return nullptr;
  });
}

GlintStatus* glint_network_num_dynamic_dims(const GlintNetwork* network,
                                            size_t* count) {
  static constexpr char kFn[] = "glint_network_num_dynamic_dims";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "network", network));
    GLINT_C_CHECK(CheckNotNull(kFn, "count", count));
    *count = network->info.dynamic_dims.size();
    return nullptr;
  });
}

GlintStatus* glint_network_dynamic_dim(const GlintNetwork* network,
                                       size_t index, const char** input,
                                       int* axis, const char** name,
                                       int64_t* max) {
  static constexpr char kFn[] = "glint_network_dynamic_dim";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "network", network));
    const std::vector<glint::DynamicDim>& dims = network->info.dynamic_dims;
    if (index >= dims.size()) {
      return Error(GLINT_OUT_OF_RANGE, kFn,
                   absl::StrCat("dynamic dim index ", index, " is past network '",
                                glint::Clip(network->info.name), "''s ",
                                dims.size(), " dynamic dims"));
    }
    const glint::DynamicDim& d = dims[index];
    if (input != nullptr) *input = d.input.c_str();
    if (axis != nullptr) *axis = d.axis;
    if (name != nullptr) *name = d.name.c_str();
    if (max != nullptr) *max = d.max;
    return nullptr;
  });
}

void glint_network_delete(GlintNetwork* network) { Delete(network); }

GlintStatus* glint_network_list_size(const GlintNetworkList* list,
                                     size_t* size) {
  static constexpr char kFn[] = "glint_network_list_size";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "list", list));
    GLINT_C_CHECK(CheckNotNull(kFn, "size", size));
    *size = list->networks.size();
    return nullptr;
  });
}

GlintStatus* glint_network_list_get(const GlintNetworkList* list, size_t index,
                                    const GlintNetwork** network) {
  static constexpr char kFn[] = "glint_network_list_get";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "list", list));
    GLINT_C_CHECK(CheckNotNull(kFn, "network", network));
    if (index >= list->networks.size()) {
      return Error(GLINT_OUT_OF_RANGE, kFn,
                   absl::StrCat("index ", index, " is past the list's ",
                                list->networks.size(), " networks"));
    }
    *network = list->networks[index].get();
    return nullptr;
  });
}

void glint_network_list_delete(GlintNetworkList* list) { Delete(list); }

// ---- Runs ---------------------------------------------------------------

GlintStatus* glint_cancel_create(GlintCancel** out) {
  static constexpr char kFn[] = "glint_cancel_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintCancel{kCancelTag,
                           std::make_shared<glint::CancellationToken>()};
    return nullptr;
  });
}

GlintStatus* glint_cancel_trigger(GlintCancel* cancel) {
  static constexpr char kFn[] = "glint_cancel_trigger";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "cancel", cancel));
    cancel->token->Cancel();
    return nullptr;
  });
}

void glint_cancel_delete(GlintCancel* cancel) { Delete(cancel); }

GlintStatus* glint_run_options_create(GlintRunOptions** out) {
  static constexpr char kFn[] = "glint_run_options_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintRunOptions{kRunOptionsTag, {}, 0};
    return nullptr;
  });
}

void glint_run_options_delete(GlintRunOptions* options) { Delete(options); }

GlintStatus* glint_run_options_set_timeout_us(GlintRunOptions* options,
                                              int64_t timeout_us) {
  static constexpr char kFn[] = "glint_run_options_set_timeout_us";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (timeout_us <= 0) {
      return Error(GLINT_INVALID_ARGUMENT, kFn,
                   absl::StrCat("timeout_us is ", timeout_us,
                                "; it must be > 0"));
    }
    options->timeout_us = timeout_us;
    return nullptr;
  });
}

GlintStatus* glint_run_options_set_cancel(GlintRunOptions* options,
                                          GlintCancel* cancel) {
  static constexpr char kFn[] = "glint_run_options_set_cancel";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (cancel == nullptr) {
      options->options.cancel = nullptr;
      return nullptr;
    }
    GLINT_C_CHECK(CheckHandle(kFn, "cancel", cancel));
    options->options.cancel = cancel->token;
    return nullptr;
  });
}

GlintStatus* glint_run_options_set_priority(GlintRunOptions* options,
                                            int priority) {
  static constexpr char kFn[] = "glint_run_options_set_priority";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    options->options.priority = priority;
    return nullptr;
  });
}

GlintStatus* glint_run_options_add_output(GlintRunOptions* options,
                                          const char* name) {
  static constexpr char kFn[] = "glint_run_options_add_output";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    GLINT_C_CHECK(CheckNotNull(kFn, "name", name));
    options->options.requested_outputs.push_back(name);
    return nullptr;
  });
}

GlintStatus* glint_profile_create(GlintProfile** out) {
  static constexpr char kFn[] = "glint_profile_create";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckNotNull(kFn, "out", out));
    *out = new GlintProfile{kProfileTag, std::make_shared<glint::RunTrace>(),
                            std::string()};
    return nullptr;
  });
}

void glint_profile_delete(GlintProfile* profile) { Delete(profile); }

GlintStatus* glint_run_options_set_profile(GlintRunOptions* options,
                                           GlintProfile* profile) {
  static constexpr char kFn[] = "glint_run_options_set_profile";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "options", options));
    if (profile == nullptr) {
      options->options.trace = nullptr;
      options->options.profile = false;
      return nullptr;
    }
    GLINT_C_CHECK(CheckHandle(kFn, "profile", profile));
    options->options.trace = profile->trace;
    options->options.profile = true;
    return nullptr;
  });
}

GlintStatus* glint_profile_trace_json(GlintProfile* profile,
                                      const char** json) {
  static constexpr char kFn[] = "glint_profile_trace_json";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "profile", profile));
    GLINT_C_CHECK(CheckNotNull(kFn, "json", json));
    profile->text = profile->trace->ToChromeJson();
    *json = profile->text.c_str();
    return nullptr;
  });
}

GlintStatus* glint_profile_summary(GlintProfile* profile, int top,
                                   const char** text) {
  static constexpr char kFn[] = "glint_profile_summary";
  return Guard(kFn, [&]() -> GlintStatus* {
    GLINT_C_CHECK(CheckHandle(kFn, "profile", profile));
    GLINT_C_CHECK(CheckNotNull(kFn, "text", text));
    profile->text = glint::FormatOpProfile(
        glint::AggregateOpProfile(
            glint::OpSpansFromSlices(profile->trace->Slices())),
        top);
    *text = profile->text.c_str();
    return nullptr;
  });
}

GlintStatus* glint_runtime_run(GlintRuntime* runtime, const char* name,
                               const GlintTensor* const* inputs,
                               size_t num_inputs,
                               const GlintRunOptions* options,
                               GlintTensorList** outputs) {
  static constexpr char kFn[] = "glint_runtime_run";
  return Guard(kFn, [&]() -> GlintStatus* {
    std::vector<glint::NamedTensor> tensors;
    glint::RunOptions run_options;
    GLINT_C_CHECK(PrepareRun(kFn, runtime, name, inputs, num_inputs, options,
                             &tensors, &run_options));
    GLINT_C_CHECK(CheckNotNull(kFn, "outputs", outputs));
    absl::StatusOr<std::vector<glint::NamedTensor>> result =
        runtime->host->RunNetwork(name, std::move(tensors), run_options);
    if (!result.ok()) return FromStatus(kFn, result.status());
    *outputs = MakeList(*std::move(result)).release();
    return nullptr;
  });
}

GlintStatus* glint_runtime_run_async(GlintRuntime* runtime, const char* name,
                                     const GlintTensor* const* inputs,
                                     size_t num_inputs,
                                     const GlintRunOptions* options,
                                     GlintRunCallback callback,
                                     void* user_data) {
  static constexpr char kFn[] = "glint_runtime_run_async";
  return Guard(kFn, [&]() -> GlintStatus* {
    std::vector<glint::NamedTensor> tensors;
    glint::RunOptions run_options;
    GLINT_C_CHECK(PrepareRun(kFn, runtime, name, inputs, num_inputs, options,
                             &tensors, &run_options));
    if (callback == nullptr) {
      return Error(GLINT_INVALID_ARGUMENT, kFn, "callback is NULL");
    }
    runtime->host->RunNetworkAsync(
        name, std::move(tensors), run_options,
        [callback, user_data](
            absl::StatusOr<std::vector<glint::NamedTensor>> result) {
          GlintStatus* status = nullptr;
          GlintTensorList* list = nullptr;
          status = Guard("glint_runtime_run_async", [&]() -> GlintStatus* {
            if (!result.ok()) {
              return FromStatus("glint_runtime_run_async", result.status());
            }
            list = MakeList(*std::move(result)).release();
            return nullptr;
          });
          ++callback_depth;
          try {
            callback(user_data, status, list);
          } catch (...) {
            // A C++ callback that throws: the exception must not unwind
            // into Glint's threads.
            GLINT_LOG_ERROR(
                "glint_runtime_run_async: the completion callback threw; "
                "ignored");
          }
          --callback_depth;
        });
    return nullptr;
  });
}

}  // extern "C"
