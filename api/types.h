// Glint's API value types: what callers of HostManager (in-process, or
// through glintd and the client) pass in and get back. A leaf: it needs the
// core types only, so the client and the proto converters use it without
// linking the engine (partitioner, devices, kernels).
//
// Plain structs; thread-compatible.
#ifndef GLINT_API_TYPES_H_
#define GLINT_API_TYPES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "core/device_info.h"
#include "core/graph.h"
#include "core/precision.h"
#include "core/tensor.h"
#include "core/trace.h"

namespace glint {

// --- How a network is split over devices (the partitioner's options) ------

enum class PartitionStrategy {
  // Whole network on one device if it fits, else memory-constrained; with
  // plan_devices > 1, load-balanced over that many.
  kAuto,
  kWhole,         // One partition on one device.
  kMemory,        // The fewest partitions whose memory fits each device.
  kLoadBalanced,  // Pipeline stages minimising the most expensive stage.
  kUser,          // PartitionOptions::user_plan decides.
};

absl::string_view PartitionStrategyName(PartitionStrategy strategy);
// "auto", "whole", "memory", "load_balanced", "user"; INVALID_ARGUMENT else.
absl::StatusOr<PartitionStrategy> ParsePartitionStrategy(
    absl::string_view name);

// One rule of a user plan: nodes whose name matches `pattern` (exact, or a
// glob with * and ?) go to `logical_device`.
struct UserPlacement {
  std::string pattern;
  int logical_device = 0;
};

struct PartitionOptions {
  PartitionStrategy strategy = PartitionStrategy::kAuto;
  // Devices one copy of the network spans; 0 lets the strategy choose
  // (load-balanced: all devices available to one replica).
  int plan_devices = 0;
  // Copies of the network; each gets its own plan_devices devices.
  int replicas = 1;
  // For kUser: first matching rule wins; every node must match one.
  std::vector<UserPlacement> user_plan;
  // Replays a plan made before (Dag::assignment, from the plan cache): the
  // logical device of each node, in the graph's order. When set, the
  // strategy and user plan are not consulted; INVALID_ARGUMENT if it does
  // not give every node a logical device the replicas can have.
  std::vector<int> fixed_assignment;
};

// --- Adding and running networks --------------------------------------------

// Whether AddNetwork (and the restore at start) reuses a network's cached
// plan, Cube's reuse policies. A plan "matches" when it was made for the
// same model bytes, options, user_config, device set and Glint plan format.
enum class PlanReuse {
  kMatch,     // Reuse if it matches; FAILED_PRECONDITION if a plan is kept
              // that does not; plan (and keep) if none is.
  kOverride,  // Plan anew and replace what is kept.
  kMatchOrOverride,  // "MOO": reuse if it matches, else plan anew.
  kGraph,  // Reuse the inferred graph if it matches; always re-partition
           // and re-place.
};

// "match", "override", "moo" or "graph" (any case); INVALID_ARGUMENT else.
absl::StatusOr<PlanReuse> ParsePlanReuse(absl::string_view name);
absl::string_view PlanReuseName(PlanReuse reuse);

// Dynamic batching, as Triton's dynamic batcher: concurrent runs of one
// network whose inputs share every dimension but the first (the batch
// dimension) are merged, run once, and split back; each caller gets what
// an unbatched run would have given. Opt-in per network at AddNetwork.
struct DynamicBatching {
  // The most requests' rows one execution takes; 0 turns batching off.
  int max_batch_size = 0;
  // How long the first request of a forming batch may wait for others.
  absl::Duration max_queue_delay = absl::ZeroDuration();
  // Batch sizes to form in preference, when that many rows are waiting.
  std::vector<int> preferred_batch_sizes;
};

// The bounds AddNetwork (and the glint.v1 converter) enforce: max_batch_size
// in 0..kMaxBatchSize (0: off), max_queue_delay in 0..kMaxQueueDelay, each
// preferred size in 1..max_batch_size, and none of it without
// max_batch_size. INVALID_ARGUMENT naming the field otherwise.
inline constexpr int kMaxBatchSize = 1 << 16;
inline constexpr absl::Duration kMaxQueueDelay = absl::Seconds(10);
absl::Status ValidateDynamicBatching(const DynamicBatching& batching);

// --- Shapes per request ------------------------------------------------------

// An input dim the model leaves symbolic (ONNX dim_param: "batch", "seq")
// or unknown, and that AddNetworkOptions::input_shapes does not bind: each
// request brings its size, from 0 to `max`. Dims of one name are one size
// in a request, as ONNX means them.
struct DynamicDim {
  std::string input;
  int axis = 0;
  std::string name;  // The model's name for it; "" when it has none.
  int64_t max = 0;   // The largest size a request may give.

  // Its key in AddNetworkOptions::max_dims: `name`, or "INPUT:AXIS" for a
  // dim the model does not name.
  std::string Key() const;
};

// A dynamic dim's bound when AddNetworkOptions::max_dims gives none, before
// the provisioner lowers it: device memory is reserved for one run at the
// bounds, so the named dims the options leave unbounded are halved (a
// leading batch dim first, down to 8; provisioner/executable_network.h
// DimBounds) until such a run takes at most an eighth of a device's memory
// and half of what it has free
// (attention's [batch, heads, seq, seq] at 4096 would not fit). The bounds
// settled on are the network's (NetworkInfo::dynamic_dims) and are
// journaled with it as max_dims. Give bounds to serve more than that.
inline constexpr int64_t kDefaultMaxDim = 4096;
// The largest bound max_dims may set.
inline constexpr int64_t kMaxDimBound = int64_t{1} << 31;

struct AddNetworkOptions {
  // Binds graph inputs whose declared shape has symbolic or unknown
  // dimensions: input name → full static shape, for good (every request
  // must then send that shape). Dims left unbound are dynamic (DynamicDim):
  // each request brings its own size.
  std::map<std::string, Shape> input_shapes;
  // Bounds of dynamic dims, by DynamicDim::Key() ("seq" → 512): 1 to
  // kMaxDimBound each; kDefaultMaxDim, lowered to fit, for the others.
  // Device memory is reserved for a run at the bounds of the named dims
  // (RESOURCE_EXHAUSTED at AddNetwork, naming them, when it cannot be). A
  // key that names no dynamic dim of the model is INVALID_ARGUMENT at
  // AddNetwork.
  std::map<std::string, int64_t> max_dims;
  // How the network is split and copied over the devices.
  PartitionOptions partition;
  // The plan cache (with a journal only). MOO by default: a daemon whose
  // devices changed re-plans its networks rather than refuse them.
  PlanReuse reuse = PlanReuse::kMatchOrOverride;
  // Part of what a plan is made for: change it to force a new plan (e.g. a
  // digest of everything outside the model that should invalidate plans).
  std::string user_config;
  // Server-side merging of concurrent requests (off unless
  // max_batch_size > 0).
  DynamicBatching batching;
  // What MatMul/Gemm/Conv (and their fused forms) compute in: kBFloat16
  // rounds their operands to bfloat16 and accumulates in float32 (about
  // 3 significant digits, several times faster on CPUs with AMX/AVX-512
  // BF16); inputs, outputs and every other op stay float32. Part of the
  // plan: a network re-added at another precision is planned anew.
  Precision precision = Precision::kFloat32;
};

// A named tensor, as inputs and outputs of a run travel.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// One partition of a network as provisioned.
struct PartitionInfo {
  std::string name;
  int device_id = -1;
  std::string device_name;
  std::vector<std::string> inputs;   // Values crossing into the partition.
  std::vector<std::string> outputs;  // Values leaving it.
  // Devices holding this partition in replicas 1, 2... (replica 0's is
  // device_id/device_name).
  std::vector<std::string> replica_devices;
  int num_nodes = 0;
  uint64_t weight_bytes = 0;      // Constants resident on the device.
  uint64_t activation_bytes = 0;  // Planned arena of one execution.
  // Device memory one execution holds on the partition's device for the
  // values crossing into and out of it, reserved per execution (values of
  // dynamic shape at the dynamic dims' bounds; 0 for those no bound sizes:
  // runs allocate them).
  uint64_t execution_bytes = 0;
  // At the network's bounds (its dynamic_dims' max): the most device memory
  // one launch of the partition takes for its run-time values, reserved on
  // its device (which sets aside the largest of its partitions'), and how
  // many of its values no bound sizes: arithmetic the importer does not
  // follow, a Loop's or Scan's bodies (sizes the data decides, NonZero's or
  // the boxes NMS keeps, count at their bounds), that each run allocates
  // beyond the reservation, so a run may still fail RESOURCE_EXHAUSTED for
  // them. Both 0 where every value's shape is static.
  uint64_t launch_bytes = 0;
  int unsized_values = 0;
  // Executions of this partition (in replica 0) that may be in flight at
  // once, their memory reserved on its device
  // (HostManagerOptions::max_concurrent_executions). A run holds one only
  // while it is on this partition.
  int executions = 0;
  uint64_t memory_bytes = 0;      // Cost model: weights + peak activations.
  uint64_t input_bytes = 0;       // Cost model: bytes crossing in per run.
  double flops = 0;               // Estimated per run.
  double estimated_seconds = 0;   // Cost model: compute + transfer in.
  // The device class it was planned for and why there (capability,
  // memory, speed), from the partitioner.
  std::string device_class;
  std::string placement_reason;
};

struct NetworkInfo {
  std::string name;
  // Their dims are -1 where dynamic (see dynamic_dims), else as bound at
  // AddNetwork.
  std::vector<ValueInfo> inputs;
  // The inputs' dynamic dims with their bounds, in input and axis order.
  std::vector<DynamicDim> dynamic_dims;
  std::vector<ValueInfo> outputs;  // Dims may be unknown (data-dependent).
  std::vector<PartitionInfo> partitions;  // In topological order.
  std::string strategy;  // The partitioning strategy that made the plan.
  int replicas = 1;
  std::string dot;       // The DAG in Graphviz DOT.
  // Its dynamic batching, as added (max_batch_size 0: off). With batching,
  // the first dim of every input and output above is max_batch_size, and
  // a run may send 1..max_batch_size rows (the same number for all inputs).
  DynamicBatching batching;
  // Its precision, as added.
  Precision precision = Precision::kFloat32;
  // Empty while the network serves; otherwise why it cannot (a restored
  // network that no longer imports or fits, say), and its runs fail
  // UNAVAILABLE with this reason until it is removed.
  std::string unavailable_reason;
};

struct RunOptions {
  // Outputs to return, by name; empty means every graph output. Unknown
  // names are INVALID_ARGUMENT.
  std::vector<std::string> requested_outputs;
  // A run still unfinished then fails with DEADLINE_EXCEEDED; partitions
  // not yet started are skipped.
  absl::Time deadline = absl::InfiniteFuture();
  // Set it to cancel the run: partitions not yet started are skipped and
  // the run fails with CANCELLED. Optional.
  std::shared_ptr<const CancellationToken> cancel;
  // When set, the run records a trace into it (admission queue, enqueue,
  // and each partition, copy and wait on its device stream); read it with
  // RunTrace::ToChromeJson() once the run is done.
  std::shared_ptr<RunTrace> trace;
  // A per-op profile (ONNX Runtime's profiler, Glow's traces): with
  // `trace`, each partition's launch also records one slice per node it
  // executes, nested under the partition's slice: the node's name,
  // category "op" ("reorder" for the layout Transposes the CPU optimiser
  // inserts) and as args its op type, kernel and run-time shapes
  // (core/trace.h NodeSliceArgs). A control-flow node is one slice.
  // Summed by op type with core/op_profile.h. Without `trace` the run is
  // refused (INVALID_ARGUMENT): the slices would have nowhere to go. Off,
  // it costs nothing.
  bool profile = false;
  // Queueing priority: a larger number is more urgent; runs of equal
  // priority are admitted first come, first served. 0 is the default.
  int priority = 0;
  // Host memory the run may write outputs into instead of new tensors
  // (glintd's shared-memory windows), by output name: an output whose
  // bytes fit lands there straight from its device, and the tensor
  // returned for it is a view of that memory; otherwise it comes back in a
  // new tensor. Whether it went there is the caller's to check (the
  // returned tensor's data pointer). Ignored by dynamically batched runs,
  // for outputs that are network inputs or constants, and by devices that
  // do not support it. The memory must not overlap the run's inputs, and
  // is written while the run runs (also by a run that then fails).
  struct OutputBuffer {
    std::string output;
    Tensor memory;  // Its bytes are the buffer (e.g. uint8[n], borrowed).
  };
  std::vector<OutputBuffer> output_buffers;
};

// --- Statistics ----------------------------------------------------------------

// A duration series: how many, their total, and quantiles of the recent
// ones.
struct DurationStats {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// One partition's launches (replica 0's device, or all replicas summed).
struct PartitionStatistics {
  std::string name;
  std::string device_name;
  DurationStats compute;
};

// A network's serving statistics since it was added (Triton's
// InferStatistics plus Glint's own). Durations as Triton defines them:
// queue = waiting for admission (and for a batch), compute_input = inputs
// to the devices, compute_infer = the partitions, compute_output = outputs
// back to the host; request = the whole run as the caller saw it.
struct NetworkStatistics {
  std::string name;
  uint64_t success_count = 0;
  uint64_t failure_count = 0;
  // Requests answered (success or not), and executions of the network: with
  // dynamic batching one execution serves several requests.
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  absl::Time last_inference = absl::UnixEpoch();  // Epoch: never run.
  DurationStats request;  // Successful requests, end to end.
  DurationStats failed;   // Failed requests, end to end.
  DurationStats queue;
  DurationStats compute_input;
  DurationStats compute_infer;
  DurationStats compute_output;
  int queue_depth = 0;  // Runs waiting for admission now.
  int in_flight = 0;    // Runs admitted and not finished now.
  // Kernel builds that runs paid for shapes first met at run time, and
  // their total time, since the network's plans were built: a network with
  // dynamic dims builds a kernel's primitive the first time a run brings a
  // shape (docs/ARCHITECTURE.md, "Shapes per request"), so a run that
  // built is slower than a warm one. 0 for a network of static shapes.
  uint64_t shape_builds = 0;
  absl::Duration shape_build_time = absl::ZeroDuration();
  // Runs (with dynamic batching, batches) that waited in the admission
  // queue because every execution slot of their plan was taken (its
  // device memory reserved for that many runs, HostManagerOptions::
  // max_concurrent_executions), and how long, from asking to admission.
  DurationStats slot_wait;
  std::vector<PartitionStatistics> partitions;
};

// A device's share of the serving: the launches of every network's
// partitions on it since the daemon started, and its state now (memory
// total and available, loaded functions, health).
struct DeviceStatistics {
  DeviceInfo device;
  DurationStats compute;
};

// --- Shared-memory tensors -------------------------------------------------

// A window of a shared-memory region registered with glintd (Triton's
// system shared memory): a run's input or output lies there instead of in
// the message. `offset` counts from the region's start, not the object's.
struct SharedMemoryRef {
  std::string region;  // The name the region was registered under.
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// A run's input or output whose elements lie in `window` of a registered
// region: its header travels in the message, its bytes do not.
struct SharedMemoryTensor {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  SharedMemoryRef window;
};

// A registered region: `key` is the POSIX shared-memory object
// (shm_open's name, e.g. "/glint_in") and [offset, offset + byte_size) the
// part of it the region covers.
struct SharedMemoryRegionInfo {
  std::string name;
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

}  // namespace glint

#endif  // GLINT_API_TYPES_H_
