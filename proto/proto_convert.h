// Conversions between glint.v1 messages and Glint's domain types. This is
// the only code that knows both sides: the service handlers and the client
// library call it, the runtime core never sees a protobuf message.
//
// Every function is a pure function of its arguments (thread-safe).
#ifndef GLINT_PROTO_PROTO_CONVERT_H_
#define GLINT_PROTO_PROTO_CONVERT_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/device_info.h"
#include "core/dtype.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "proto/glint.pb.h"

namespace glint {

// DType and v1::DataType share ONNX's numbers, but not every number is a
// dtype Glint carries: string and anything unknown are INVALID_ARGUMENT
// (an open proto3 enum may hold any number a peer sent).
absl::StatusOr<DType> DTypeFromProto(int proto_dtype);
v1::DataType DTypeToProto(DType dtype);

// Validates and copies a wire tensor into an owned, aligned host tensor.
// The copy decouples the tensor's lifetime from the request and gives the
// kernels kTensorAlignment. INVALID_ARGUMENT (naming the tensor) for an
// unknown dtype, a negative dimension, an element count that overflows, or
// raw_data whose size is not product(shape) * sizeof(dtype), or a tensor
// that lies in shared memory (SharedMemoryTensorFromProto reads those).
absl::StatusOr<Tensor> TensorFromProto(const v1::Tensor& proto);
absl::StatusOr<NamedTensor> NamedTensorFromProto(const v1::Tensor& proto);
// As NamedTensorFromProto, but the tensor borrows `proto`'s raw_data (no
// copy, no alignment beyond the string's): `proto` must outlive the tensor
// and every copy of it, unchanged. For a server whose request outlives the
// run it feeds (glintd's RunNetwork: gRPC keeps the request until the
// call is finished, and the call finishes once the run has ended).
absl::StatusOr<NamedTensor> BorrowNamedTensorFromProto(
    const v1::Tensor& proto);
absl::StatusOr<std::vector<NamedTensor>> NamedTensorsFromProto(
    const google::protobuf::RepeatedPtrField<v1::Tensor>& protos);

// INVALID_ARGUMENT for a tensor without a buffer or of a dtype that cannot
// travel (undefined, string).
absl::Status TensorToProto(const NamedTensor& tensor, v1::Tensor* proto);

// Shared-memory tensors (Tensor.shared_memory set): the header, validated
// as TensorFromProto does, and the window, which must be exactly the
// tensor's bytes; raw_data must be empty. INVALID_ARGUMENT otherwise. The
// region itself is glintd's to check (serving/shared_memory.h).
absl::StatusOr<SharedMemoryTensor> SharedMemoryTensorFromProto(
    const v1::Tensor& proto);
void SharedMemoryTensorToProto(const SharedMemoryTensor& tensor,
                               v1::Tensor* proto);
SharedMemoryRef SharedMemoryRefFromProto(const v1::SharedMemoryRef& proto);
void SharedMemoryRefToProto(const SharedMemoryRef& ref,
                            v1::SharedMemoryRef* proto);
SharedMemoryRegionInfo SharedMemoryRegionFromProto(
    const v1::SharedMemoryRegion& proto);
void SharedMemoryRegionToProto(const SharedMemoryRegionInfo& info,
                               v1::SharedMemoryRegion* proto);

// AddNetwork options; negative dimensions are INVALID_ARGUMENT.
absl::StatusOr<AddNetworkOptions> AddNetworkOptionsFromProto(
    const v1::AddNetworkOptions& proto);
void AddNetworkOptionsToProto(const AddNetworkOptions& options,
                              v1::AddNetworkOptions* proto);

// glint.v1.DynamicBatching <-> DynamicBatching. INVALID_ARGUMENT (naming
// the field) out of the bounds of ValidateDynamicBatching.
absl::StatusOr<DynamicBatching> DynamicBatchingFromProto(
    const v1::DynamicBatching& proto);
void DynamicBatchingToProto(const DynamicBatching& batching,
                            v1::DynamicBatching* proto);

// Descriptions flow server → client; the reverse direction serves the
// client library, which hands domain types to its callers.
void ValueInfoToProto(const ValueInfo& info, v1::ValueInfo* proto);
// The DOT text can be large for big graphs: only copied when asked for.
void NetworkInfoToProto(const NetworkInfo& info, v1::NetworkInfo* proto,
                        bool include_dot = false);
void DeviceInfoToProto(const DeviceInfo& info, v1::DeviceInfo* proto);
// Unknown dtypes in a reply map to DType::kUndefined rather than failing:
// a newer server must not break an older client's `list` or `show`.
ValueInfo ValueInfoFromProto(const v1::ValueInfo& proto);
NetworkInfo NetworkInfoFromProto(const v1::NetworkInfo& proto);
DeviceInfo DeviceInfoFromProto(const v1::DeviceInfo& proto);

// Statistics, server → client and back (the client's `glint stats`).
// last_inference travels as Unix ns, 0 for never (absl::UnixEpoch()).
void DurationStatsToProto(const DurationStats& stats,
                          v1::DurationStats* proto);
DurationStats DurationStatsFromProto(const v1::DurationStats& proto);
void NetworkStatisticsToProto(const NetworkStatistics& stats,
                              v1::NetworkStatistics* proto);
NetworkStatistics NetworkStatisticsFromProto(
    const v1::NetworkStatistics& proto);
void DeviceStatisticsToProto(const DeviceStatistics& stats,
                             v1::DeviceStatistics* proto);
DeviceStatistics DeviceStatisticsFromProto(const v1::DeviceStatistics& proto);

}  // namespace glint

#endif  // GLINT_PROTO_PROTO_CONVERT_H_
