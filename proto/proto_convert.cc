#include "proto/proto_convert.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/status_macros.h"

namespace glint {
namespace {

std::string DescribeTensor(const v1::Tensor& proto) {
  return proto.name().empty() ? std::string("tensor")
                              : absl::StrCat("tensor '", proto.name(), "'");
}

}  // namespace

absl::StatusOr<DType> DTypeFromProto(int proto_dtype) {
  const DType dtype = static_cast<DType>(proto_dtype);
  // DTypeSize is 0 exactly for the numbers Glint cannot hold in a Tensor
  // (undefined, string, and anything not in the DType enum).
  if (DTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported dtype ", proto_dtype,
        " (expected an ONNX TensorProto.DataType number of float32, float16, "
        "bfloat16, float64, int8, uint8, int16, uint16, int32, uint32, int64, "
        "uint64 or bool)"));
  }
  return dtype;
}

v1::DataType DTypeToProto(DType dtype) {
  // Same numbers by construction; see glint.proto.
  return static_cast<v1::DataType>(static_cast<int32_t>(dtype));
}

namespace {

// The dtype and shape of a wire tensor, checked, and its size in bytes.
struct TensorHeader {
  DType dtype;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
};

absl::StatusOr<TensorHeader> TensorHeaderFromProto(const v1::Tensor& proto) {
  TensorHeader header;
  absl::StatusOr<DType> dtype = DTypeFromProto(proto.dtype());
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeTensor(proto), ": ", dtype.status().message()));
  }
  header.dtype = *dtype;
  header.dims.assign(proto.shape().begin(), proto.shape().end());
  const std::vector<int64_t>& dims = header.dims;
  // Elements times element size must fit: a hostile shape must not wrap
  // around to a small byte count that happens to match raw_data.
  header.bytes = DTypeSize(*dtype);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeTensor(proto), ": dimension ", i, " is negative (",
          dims[i], ") in shape [", absl::StrJoin(dims, ", "), "]"));
    }
    if (__builtin_mul_overflow(header.bytes, static_cast<uint64_t>(dims[i]),
                               &header.bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeTensor(proto), ": shape [",
                       absl::StrJoin(dims, ", "), "] is too large"));
    }
  }
  return header;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const v1::Tensor& proto) {
  if (proto.has_shared_memory()) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeTensor(proto), " lies in shared-memory region '",
        proto.shared_memory().region(), "', which is not readable here"));
  }
  GLINT_ASSIGN_OR_RETURN(TensorHeader header, TensorHeaderFromProto(proto));
  if (header.bytes != proto.raw_data().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeTensor(proto), ": a ", DTypeName(header.dtype),
        " tensor of shape [", absl::StrJoin(header.dims, ", "), "] needs ",
        header.bytes, " bytes of raw_data, got ", proto.raw_data().size()));
  }
  const std::string& raw = proto.raw_data();
  return Tensor::FromBytes(
      header.dtype, Shape(std::move(header.dims)),
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()),
                                raw.size()));
}

absl::StatusOr<SharedMemoryTensor> SharedMemoryTensorFromProto(
    const v1::Tensor& proto) {
  if (!proto.has_shared_memory()) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeTensor(proto), " names no shared memory"));
  }
  if (!proto.raw_data().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeTensor(proto),
        " has both raw_data and shared_memory; give one of them"));
  }
  GLINT_ASSIGN_OR_RETURN(TensorHeader header, TensorHeaderFromProto(proto));
  SharedMemoryTensor tensor;
  tensor.name = proto.name();
  tensor.dtype = header.dtype;
  tensor.window = SharedMemoryRefFromProto(proto.shared_memory());
  if (header.bytes != tensor.window.byte_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeTensor(proto), ": a ", DTypeName(header.dtype),
        " tensor of shape [", absl::StrJoin(header.dims, ", "), "] is ",
        header.bytes, " bytes, but its shared-memory window holds ",
        tensor.window.byte_size));
  }
  tensor.shape = Shape(std::move(header.dims));
  return tensor;
}

void SharedMemoryTensorToProto(const SharedMemoryTensor& tensor,
                               v1::Tensor* proto) {
  proto->Clear();
  proto->set_name(tensor.name);
  proto->set_dtype(DTypeToProto(tensor.dtype));
  for (int64_t d : tensor.shape.dims()) proto->add_shape(d);
  SharedMemoryRefToProto(tensor.window, proto->mutable_shared_memory());
}

SharedMemoryRef SharedMemoryRefFromProto(const v1::SharedMemoryRef& proto) {
  return {proto.region(), proto.offset(), proto.byte_size()};
}

void SharedMemoryRefToProto(const SharedMemoryRef& ref,
                            v1::SharedMemoryRef* proto) {
  proto->set_region(ref.region);
  proto->set_offset(ref.offset);
  proto->set_byte_size(ref.byte_size);
}

SharedMemoryRegionInfo SharedMemoryRegionFromProto(
    const v1::SharedMemoryRegion& proto) {
  return {proto.name(), proto.key(), proto.offset(), proto.byte_size()};
}

void SharedMemoryRegionToProto(const SharedMemoryRegionInfo& info,
                               v1::SharedMemoryRegion* proto) {
  proto->set_name(info.name);
  proto->set_key(info.key);
  proto->set_offset(info.offset);
  proto->set_byte_size(info.byte_size);
}

absl::StatusOr<NamedTensor> BorrowNamedTensorFromProto(
    const v1::Tensor& proto) {
  // Validated as TensorFromProto does; only the bytes are not copied.
  if (proto.has_shared_memory()) return NamedTensorFromProto(proto);
  GLINT_ASSIGN_OR_RETURN(TensorHeader header, TensorHeaderFromProto(proto));
  if (header.bytes != proto.raw_data().size()) {
    return NamedTensorFromProto(proto);  // Refused with its message.
  }
  // Read only: the executor never writes a run's inputs.
  void* data = const_cast<char*>(proto.raw_data().data());
  return NamedTensor{
      proto.name(),
      Tensor::Borrow(header.dtype, Shape(std::move(header.dims)), data)};
}

absl::StatusOr<NamedTensor> NamedTensorFromProto(const v1::Tensor& proto) {
  absl::StatusOr<Tensor> tensor = TensorFromProto(proto);
  if (!tensor.ok()) return tensor.status();
  return NamedTensor{proto.name(), *std::move(tensor)};
}

absl::StatusOr<std::vector<NamedTensor>> NamedTensorsFromProto(
    const google::protobuf::RepeatedPtrField<v1::Tensor>& protos) {
  std::vector<NamedTensor> tensors;
  tensors.reserve(protos.size());
  for (const v1::Tensor& proto : protos) {
    absl::StatusOr<NamedTensor> t = NamedTensorFromProto(proto);
    if (!t.ok()) return t.status();
    tensors.push_back(*std::move(t));
  }
  return tensors;
}

absl::Status TensorToProto(const NamedTensor& tensor, v1::Tensor* proto) {
  const Tensor& t = tensor.tensor;
  if (DTypeSize(t.dtype()) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", tensor.name, "' has dtype ",
                     DTypeName(t.dtype()), ", which cannot be sent"));
  }
  if (!t.shape().IsStatic()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", tensor.name, "' has a non-static shape ",
                     t.shape().ToString()));
  }
  if (!t.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", tensor.name, "' has no data"));
  }
  proto->Clear();
  proto->set_name(tensor.name);
  proto->set_dtype(DTypeToProto(t.dtype()));
  for (int64_t d : t.shape().dims()) proto->add_shape(d);
  proto->set_raw_data(static_cast<const char*>(t.raw_data()), t.num_bytes());
  return absl::OkStatus();
}

absl::StatusOr<AddNetworkOptions> AddNetworkOptionsFromProto(
    const v1::AddNetworkOptions& proto) {
  AddNetworkOptions options;
  for (const auto& [name, shape] : proto.input_shapes()) {
    std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
    for (int64_t d : dims) {
      if (d < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input_shapes['", name, "'] = [", absl::StrJoin(dims, ", "),
            "] has a negative dimension; bound shapes must be static"));
      }
    }
    options.input_shapes[name] = Shape(std::move(dims));
  }
  options.max_dims.insert(proto.max_dims().begin(), proto.max_dims().end());
  PartitionOptions& partition = options.partition;
  if (!proto.partition_strategy().empty()) {
    GLINT_ASSIGN_OR_RETURN(partition.strategy,
                           ParsePartitionStrategy(proto.partition_strategy()));
  }
  if (proto.plan_devices() < 0 || proto.replicas() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan_devices (", proto.plan_devices(), ") and replicas (",
        proto.replicas(), ") must not be negative"));
  }
  partition.plan_devices = proto.plan_devices();
  partition.replicas = proto.replicas() == 0 ? 1 : proto.replicas();
  for (const v1::UserPlacement& rule : proto.user_plan()) {
    partition.user_plan.push_back({rule.pattern(), rule.logical_device()});
  }
  if (!proto.reuse().empty()) {
    GLINT_ASSIGN_OR_RETURN(options.reuse, ParsePlanReuse(proto.reuse()));
  }
  options.user_config = proto.user_config();
  GLINT_ASSIGN_OR_RETURN(options.batching,
                         DynamicBatchingFromProto(proto.batching()));
  GLINT_ASSIGN_OR_RETURN(options.precision, ParsePrecision(proto.precision()));
  return options;
}

absl::StatusOr<DynamicBatching> DynamicBatchingFromProto(
    const v1::DynamicBatching& proto) {
  // Bounded before it becomes a Duration, which would saturate.
  const int64_t max_delay_us = absl::ToInt64Microseconds(kMaxQueueDelay);
  if (proto.max_queue_delay_us() < 0 ||
      proto.max_queue_delay_us() > max_delay_us) {
    return absl::InvalidArgumentError(
        absl::StrCat("batching: max_queue_delay_us ",
                     proto.max_queue_delay_us(), " is not in 0..",
                     max_delay_us));
  }
  DynamicBatching batching;
  batching.max_batch_size = proto.max_batch_size();
  batching.max_queue_delay = absl::Microseconds(proto.max_queue_delay_us());
  batching.preferred_batch_sizes.assign(proto.preferred_batch_sizes().begin(),
                                        proto.preferred_batch_sizes().end());
  GLINT_RETURN_IF_ERROR(ValidateDynamicBatching(batching));
  return batching;
}

void DynamicBatchingToProto(const DynamicBatching& batching,
                            v1::DynamicBatching* proto) {
  proto->Clear();
  proto->set_max_batch_size(batching.max_batch_size);
  proto->set_max_queue_delay_us(
      absl::ToInt64Microseconds(batching.max_queue_delay));
  for (int size : batching.preferred_batch_sizes) {
    proto->add_preferred_batch_sizes(size);
  }
}

void AddNetworkOptionsToProto(const AddNetworkOptions& options,
                              v1::AddNetworkOptions* proto) {
  proto->Clear();
  for (const auto& [name, shape] : options.input_shapes) {
    v1::Shape& s = (*proto->mutable_input_shapes())[name];
    for (int64_t d : shape.dims()) s.add_dims(d);
  }
  proto->mutable_max_dims()->insert(options.max_dims.begin(),
                                    options.max_dims.end());
  const PartitionOptions& partition = options.partition;
  if (partition.strategy != PartitionStrategy::kAuto) {
    proto->set_partition_strategy(
        std::string(PartitionStrategyName(partition.strategy)));
  }
  proto->set_plan_devices(partition.plan_devices);
  proto->set_replicas(partition.replicas);
  for (const UserPlacement& rule : partition.user_plan) {
    v1::UserPlacement* r = proto->add_user_plan();
    r->set_pattern(rule.pattern);
    r->set_logical_device(rule.logical_device);
  }
  proto->set_reuse(std::string(PlanReuseName(options.reuse)));
  proto->set_user_config(options.user_config);
  if (options.batching.max_batch_size > 0) {
    DynamicBatchingToProto(options.batching, proto->mutable_batching());
  }
  if (options.precision != Precision::kFloat32) {
    proto->set_precision(std::string(PrecisionName(options.precision)));
  }
}

void ValueInfoToProto(const ValueInfo& info, v1::ValueInfo* proto) {
  proto->Clear();
  proto->set_name(info.name);
  proto->set_dtype(DTypeToProto(info.dtype));
  for (int64_t d : info.shape.dims()) proto->add_shape(d);
  if (!info.shape.has_rank()) proto->set_unknown_rank(true);
  if (info.HasDimNames()) {
    for (int axis = 0; axis < info.shape.rank(); ++axis) {
      proto->add_dim_names(info.DimName(axis));
    }
  }
}

void NetworkInfoToProto(const NetworkInfo& info, v1::NetworkInfo* proto,
                        bool include_dot) {
  proto->Clear();
  proto->set_name(info.name);
  proto->set_strategy(info.strategy);
  proto->set_replicas(info.replicas);
  if (include_dot) proto->set_dot(info.dot);
  proto->set_unavailable_reason(info.unavailable_reason);
  if (info.batching.max_batch_size > 0) {
    DynamicBatchingToProto(info.batching, proto->mutable_batching());
  }
  proto->set_precision(std::string(PrecisionName(info.precision)));
  for (const ValueInfo& v : info.inputs) ValueInfoToProto(v, proto->add_inputs());
  for (const DynamicDim& d : info.dynamic_dims) {
    v1::DynamicDim* dp = proto->add_dynamic_dims();
    dp->set_input(d.input);
    dp->set_axis(d.axis);
    dp->set_name(d.name);
    dp->set_max(d.max);
  }
  for (const ValueInfo& v : info.outputs) {
    ValueInfoToProto(v, proto->add_outputs());
  }
  for (const PartitionInfo& p : info.partitions) {
    v1::PartitionInfo* pp = proto->add_partitions();
    pp->set_name(p.name);
    pp->set_device_id(p.device_id);
    pp->set_device_name(p.device_name);
    for (const std::string& s : p.inputs) pp->add_inputs(s);
    for (const std::string& s : p.outputs) pp->add_outputs(s);
    pp->set_num_nodes(p.num_nodes);
    pp->set_weight_bytes(p.weight_bytes);
    pp->set_activation_bytes(p.activation_bytes);
    pp->set_execution_bytes(p.execution_bytes);
    pp->set_launch_bytes(p.launch_bytes);
    pp->set_unsized_values(p.unsized_values);
    pp->set_executions(p.executions);
    pp->set_flops(p.flops);
    pp->set_memory_bytes(p.memory_bytes);
    pp->set_input_bytes(p.input_bytes);
    pp->set_estimated_seconds(p.estimated_seconds);
    for (const std::string& d : p.replica_devices) pp->add_replica_devices(d);
    pp->set_device_class(p.device_class);
    pp->set_placement_reason(p.placement_reason);
  }
}

void DeviceInfoToProto(const DeviceInfo& info, v1::DeviceInfo* proto) {
  proto->Clear();
  proto->set_id(info.id);
  proto->set_type(info.type);
  proto->set_name(info.name);
  proto->set_memory_bytes(info.memory_bytes);
  proto->set_available_memory_bytes(info.available_memory_bytes);
  proto->set_peak_used_memory_bytes(info.peak_used_memory_bytes);
  proto->set_launch_reserved_bytes(info.launch_reserved_bytes);
  proto->set_compute_flops(info.compute_flops);
  proto->set_link_bytes_per_second(info.link_bytes_per_second);
  for (const std::string& op : info.unsupported_ops) {
    proto->add_unsupported_ops(op);
  }
  proto->set_loaded_functions(info.loaded_functions);
  proto->set_unhealthy_reason(info.unhealthy_reason);
  proto->set_launches_running(info.launches_running);
}

ValueInfo ValueInfoFromProto(const v1::ValueInfo& proto) {
  ValueInfo info;
  info.name = proto.name();
  absl::StatusOr<DType> dtype = DTypeFromProto(proto.dtype());
  info.dtype = dtype.ok() ? *dtype : DType::kUndefined;
  info.shape = proto.unknown_rank()
                   ? Shape::UnknownRank()
                   : Shape(std::vector<int64_t>(proto.shape().begin(),
                                                proto.shape().end()));
  // Names that do not fit the shape are dropped rather than trusted.
  if (info.shape.has_rank() && proto.dim_names_size() == info.shape.rank()) {
    info.dim_names.assign(proto.dim_names().begin(), proto.dim_names().end());
    if (!info.HasDimNames()) info.dim_names.clear();
  }
  return info;
}

NetworkInfo NetworkInfoFromProto(const v1::NetworkInfo& proto) {
  NetworkInfo info;
  info.name = proto.name();
  info.strategy = proto.strategy();
  info.replicas = proto.replicas();
  info.dot = proto.dot();
  info.unavailable_reason = proto.unavailable_reason();
  // A reply, not a request: shown as sent, not refused.
  info.batching.max_batch_size = proto.batching().max_batch_size();
  info.batching.max_queue_delay =
      absl::Microseconds(proto.batching().max_queue_delay_us());
  info.batching.preferred_batch_sizes.assign(
      proto.batching().preferred_batch_sizes().begin(),
      proto.batching().preferred_batch_sizes().end());
  // A name this client does not know (a newer glintd's) shows as fp32.
  info.precision =
      ParsePrecision(proto.precision()).value_or(Precision::kFloat32);
  for (const v1::ValueInfo& v : proto.inputs()) {
    info.inputs.push_back(ValueInfoFromProto(v));
  }
  for (const v1::ValueInfo& v : proto.outputs()) {
    info.outputs.push_back(ValueInfoFromProto(v));
  }
  for (const v1::DynamicDim& dp : proto.dynamic_dims()) {
    info.dynamic_dims.push_back({dp.input(), dp.axis(), dp.name(), dp.max()});
  }
  for (const v1::PartitionInfo& pp : proto.partitions()) {
    PartitionInfo p;
    p.name = pp.name();
    p.device_id = pp.device_id();
    p.device_name = pp.device_name();
    p.inputs.assign(pp.inputs().begin(), pp.inputs().end());
    p.outputs.assign(pp.outputs().begin(), pp.outputs().end());
    p.num_nodes = pp.num_nodes();
    p.weight_bytes = pp.weight_bytes();
    p.activation_bytes = pp.activation_bytes();
    p.execution_bytes = pp.execution_bytes();
    p.launch_bytes = pp.launch_bytes();
    p.unsized_values = pp.unsized_values();
    p.executions = pp.executions();
    p.flops = pp.flops();
    p.memory_bytes = pp.memory_bytes();
    p.input_bytes = pp.input_bytes();
    p.estimated_seconds = pp.estimated_seconds();
    p.replica_devices.assign(pp.replica_devices().begin(),
                             pp.replica_devices().end());
    p.device_class = pp.device_class();
    p.placement_reason = pp.placement_reason();
    info.partitions.push_back(std::move(p));
  }
  return info;
}

DeviceInfo DeviceInfoFromProto(const v1::DeviceInfo& proto) {
  DeviceInfo info;
  info.id = proto.id();
  info.type = proto.type();
  info.name = proto.name();
  info.memory_bytes = proto.memory_bytes();
  info.available_memory_bytes = proto.available_memory_bytes();
  info.peak_used_memory_bytes = proto.peak_used_memory_bytes();
  info.launch_reserved_bytes = proto.launch_reserved_bytes();
  info.compute_flops = proto.compute_flops();
  info.link_bytes_per_second = proto.link_bytes_per_second();
  info.unsupported_ops.assign(proto.unsupported_ops().begin(),
                              proto.unsupported_ops().end());
  info.loaded_functions = proto.loaded_functions();
  info.unhealthy_reason = proto.unhealthy_reason();
  info.launches_running = proto.launches_running();
  return info;
}

void DurationStatsToProto(const DurationStats& stats,
                          v1::DurationStats* proto) {
  proto->set_count(stats.count);
  proto->set_total_ns(stats.total_ns);
  proto->set_p50_us(stats.p50_us);
  proto->set_p99_us(stats.p99_us);
}

DurationStats DurationStatsFromProto(const v1::DurationStats& proto) {
  DurationStats stats;
  stats.count = proto.count();
  stats.total_ns = proto.total_ns();
  stats.p50_us = proto.p50_us();
  stats.p99_us = proto.p99_us();
  return stats;
}

void NetworkStatisticsToProto(const NetworkStatistics& stats,
                              v1::NetworkStatistics* proto) {
  proto->Clear();
  proto->set_name(stats.name);
  proto->set_success_count(stats.success_count);
  proto->set_failure_count(stats.failure_count);
  proto->set_inference_count(stats.inference_count);
  proto->set_execution_count(stats.execution_count);
  if (stats.last_inference > absl::UnixEpoch()) {
    proto->set_last_inference_unix_ns(absl::ToUnixNanos(stats.last_inference));
  }
  DurationStatsToProto(stats.request, proto->mutable_request());
  DurationStatsToProto(stats.failed, proto->mutable_failed());
  DurationStatsToProto(stats.queue, proto->mutable_queue());
  DurationStatsToProto(stats.compute_input, proto->mutable_compute_input());
  DurationStatsToProto(stats.compute_infer, proto->mutable_compute_infer());
  DurationStatsToProto(stats.compute_output, proto->mutable_compute_output());
  proto->set_queue_depth(stats.queue_depth);
  proto->set_in_flight(stats.in_flight);
  proto->set_shape_builds(stats.shape_builds);
  proto->set_shape_build_ns(absl::ToInt64Nanoseconds(stats.shape_build_time));
  DurationStatsToProto(stats.slot_wait, proto->mutable_slot_wait());
  for (const PartitionStatistics& p : stats.partitions) {
    v1::PartitionStatistics* out = proto->add_partitions();
    out->set_name(p.name);
    out->set_device_name(p.device_name);
    DurationStatsToProto(p.compute, out->mutable_compute());
  }
}

NetworkStatistics NetworkStatisticsFromProto(
    const v1::NetworkStatistics& proto) {
  NetworkStatistics stats;
  stats.name = proto.name();
  stats.success_count = proto.success_count();
  stats.failure_count = proto.failure_count();
  stats.inference_count = proto.inference_count();
  stats.execution_count = proto.execution_count();
  // Before the epoch is not a time a server reports: read as never.
  stats.last_inference =
      absl::FromUnixNanos(std::max<int64_t>(0, proto.last_inference_unix_ns()));
  stats.request = DurationStatsFromProto(proto.request());
  stats.failed = DurationStatsFromProto(proto.failed());
  stats.queue = DurationStatsFromProto(proto.queue());
  stats.compute_input = DurationStatsFromProto(proto.compute_input());
  stats.compute_infer = DurationStatsFromProto(proto.compute_infer());
  stats.compute_output = DurationStatsFromProto(proto.compute_output());
  stats.queue_depth = proto.queue_depth();
  stats.in_flight = proto.in_flight();
  stats.shape_builds = proto.shape_builds();
  // A negative time is no time a server reports: read as none.
  stats.shape_build_time =
      absl::Nanoseconds(std::max<int64_t>(0, proto.shape_build_ns()));
  stats.slot_wait = DurationStatsFromProto(proto.slot_wait());
  for (const v1::PartitionStatistics& p : proto.partitions()) {
    PartitionStatistics out;
    out.name = p.name();
    out.device_name = p.device_name();
    out.compute = DurationStatsFromProto(p.compute());
    stats.partitions.push_back(std::move(out));
  }
  return stats;
}

void DeviceStatisticsToProto(const DeviceStatistics& stats,
                             v1::DeviceStatistics* proto) {
  proto->Clear();
  DeviceInfoToProto(stats.device, proto->mutable_device());
  DurationStatsToProto(stats.compute, proto->mutable_compute());
}

DeviceStatistics DeviceStatisticsFromProto(const v1::DeviceStatistics& proto) {
  DeviceStatistics stats;
  stats.device = DeviceInfoFromProto(proto.device());
  stats.compute = DurationStatsFromProto(proto.compute());
  return stats;
}

}  // namespace glint
