#include "runtime/host_manager.h"

#include <algorithm>
#include <optional>
#include <deque>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "core/digest.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "core/thread_name.h"
#include "devices/device_manager.h"
#include "devices/device_registry.h"
#include "devices/fault/fault_injecting_device.h"
#include "executor/executor.h"
#include "onnx/onnx_importer.h"
#include "partitioner/partitioner.h"
#include "provisioner/provisioner.h"
#include "runtime/batcher.h"
#include "runtime/statistics.h"

namespace glint {

// A network added to the HostManager. Shared by the map and by its runs, so
// RemoveNetwork can drop it from the map while runs finish.
struct NetworkEntry {
  // name, inputs and outputs never change; the rest (the plan) is replaced
  // under HostManager::mu_ when the network is re-provisioned.
  NetworkInfo info;
  // What it was added from, to re-provision it when a device dies.
  std::string model;
  AddNetworkOptions options;

  absl::Mutex mu;
  // Null while unavailable. Each run holds a reference (taken and dropped
  // under `mu`) until it ends, so re-provisioning can swap it under them
  // and wait for the old one's runs.
  std::shared_ptr<ExecutableNetwork> executable ABSL_GUARDED_BY(mu);
  // With dynamic batching, the network compiled at each preferred batch
  // size below max_batch_size (`executable` is the max_batch_size one),
  // replaced with it; batches' references are held like runs'.
  std::map<int, std::shared_ptr<ExecutableNetwork>> smaller
      ABSL_GUARDED_BY(mu);
  int in_flight ABSL_GUARDED_BY(mu) = 0;
  // Runs that arrived while every replica sat on a dead device, waiting
  // for the re-provisioned plan (or the network's removal, or shutdown) to
  // start them again.
  std::vector<std::function<void()>> parked ABSL_GUARDED_BY(mu);
  // Set when the network batches (AddNetworkOptions::batching); never
  // changes after the add, also across re-provisioning (same shapes).
  std::shared_ptr<Batcher> batcher;
  // In the journal (added with one); ReplaceNetwork's networks are not, and
  // RemoveNetwork then has nothing to erase there.
  bool journaled = false;

  // Its serving statistics (thread-safe on its own).
  NetworkStatsRecorder stats;
};

// A run's clock readings for its statistics: written by the steps of
// RunNetworkAsync in order (each step happens after the one before), read
// by FinishRun.
struct RunMeasures {
  absl::Duration arrived;    // MonotonicNow() when RunNetworkAsync began.
  absl::Duration queued;     // When it asked for admission.
  absl::Duration admitted;   // When it was admitted.
  RunTimings timings;        // The executor's (ExecutionRequest::timings).
  // A batched run: `admitted` and `timings` are its batch's, which counts
  // the execution (see HostManager::MakeBatcher); `batch_admitted` says
  // whether its batch was admitted (then the run counts in flight).
  bool batched = false;
  bool batch_admitted = false;
};

namespace {

// Whether every replica of `network` has a partition on a dead device.
bool NoHealthyReplica(const ExecutableNetwork& network) {
  for (const auto& replica : network.replicas) {
    bool healthy = true;
    for (const ProvisionedPartition& p : replica->partitions) {
      healthy = healthy && p.device->healthy();
    }
    if (healthy) return false;
  }
  return true;
}

// Starts runs parked on `entry` (see NetworkEntry::parked) again.
void Unpark(NetworkEntry& entry) {
  std::vector<std::function<void()>> parked;
  {
    absl::MutexLock lock(&entry.mu);
    parked.swap(entry.parked);
  }
  for (auto& run : parked) run();
}

// Waits for the runs of `entry`, which new runs can no longer find, then
// evicts its functions.
void Drain(NetworkEntry& entry) {
  // Parked runs learn now that it is gone, and waiting ones are batched
  // without further delay.
  Unpark(entry);
  if (entry.batcher != nullptr) entry.batcher->Flush();
  absl::MutexLock lock(&entry.mu);
  entry.mu.Await(absl::Condition(
      +[](int* n) { return *n == 0; }, &entry.in_flight));
  // Evict now rather than when the last reference goes: finished runs'
  // callbacks may still hold the entry for a moment, but never touch the
  // executable again, and the caller expects the memory back on return.
  entry.executable.reset();
  entry.smaller.clear();
}

// Whether any partition of `network` sits on `device`.
bool Uses(const ExecutableNetwork& network, const DeviceManager* device) {
  for (const auto& replica : network.replicas) {
    for (const ProvisionedPartition& p : replica->partitions) {
      if (p.device == device) return true;
    }
  }
  return false;
}

// The batch sizes a batching network is compiled at: each preferred size
// and max_batch_size, ascending (see runtime/batcher.h).
std::vector<int> CompiledBatchSizes(const DynamicBatching& batching) {
  std::vector<int> sizes = batching.preferred_batch_sizes;
  sizes.push_back(batching.max_batch_size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace

namespace {

NetworkInfo DescribeNetwork(absl::string_view name, const Dag& dag,
                            const ExecutableNetwork& network) {
  NetworkInfo info;
  info.name = std::string(name);
  info.inputs = network.inputs;
  info.outputs = network.outputs;
  info.strategy = dag.strategy;
  info.replicas = static_cast<int>(network.replicas.size());
  info.dot = DagToDot(dag, name);
  const auto& first = network.replicas.front()->partitions;
  for (size_t i = 0; i < first.size(); ++i) {
    const ProvisionedPartition& p = first[i];
    const DagNode& node = dag.nodes[i];
    PartitionInfo pi;
    pi.name = p.name;
    pi.device_id = p.device->id();
    pi.device_name = p.device->GetDeviceInfo().name;
    for (size_t r = 1; r < network.replicas.size(); ++r) {
      pi.replica_devices.push_back(
          network.replicas[r]->partitions[i].device->GetDeviceInfo().name);
    }
    const CompiledFunction& f = p.function->function();
    for (const ValueInfo& v : f.inputs()) pi.inputs.push_back(v.name);
    for (const ValueInfo& v : f.outputs()) pi.outputs.push_back(v.name);
    pi.num_nodes = p.num_nodes;
    pi.weight_bytes = f.constant_bytes();
    pi.activation_bytes = f.arena_bytes();
    pi.memory_bytes = node.memory_bytes;
    pi.input_bytes = node.input_bytes;
    pi.flops = f.flops();
    pi.estimated_seconds = node.estimated_seconds;
    pi.device_class = node.device_class;
    pi.placement_reason = node.placement_reason;
    info.partitions.push_back(std::move(pi));
  }
  return info;
}

// Matches the caller's named inputs to the network's, in network order.
absl::StatusOr<std::vector<Tensor>> BindInputs(
    const NetworkInfo& info, std::vector<NamedTensor> inputs) {
  std::vector<Tensor> bound(info.inputs.size());
  std::vector<bool> seen(info.inputs.size(), false);
  for (NamedTensor& in : inputs) {
    size_t i = 0;
    while (i < info.inputs.size() && info.inputs[i].name != in.name) ++i;
    if (i == info.inputs.size()) {
      std::vector<std::string> names;
      for (const ValueInfo& v : info.inputs) names.push_back(v.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "network '", Clip(info.name), "' has no input '", Clip(in.name),
          "' (inputs: ", absl::StrJoin(names, ", "), ")"));
    }
    if (seen[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", Clip(in.name), "' is given twice"));
    }
    const ValueInfo& want = info.inputs[i];
    if (in.tensor.dtype() != want.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in.name, "' has dtype ", DTypeName(in.tensor.dtype()),
          ", expected ", DTypeName(want.dtype)));
    }
    const int64_t max_batch = info.batching.max_batch_size;
    if (max_batch > 0) {
      // Batched: any rows from 1 to max_batch_size, the rest as declared.
      const Shape& got = in.tensor.shape();
      bool same = got.rank() == want.shape.rank() && got.rank() > 0;
      for (int d = 1; same && d < got.rank(); ++d) {
        same = got.dim(d) == want.shape.dim(d);
      }
      if (!same || got.dim(0) < 1 || got.dim(0) > max_batch) {
        Shape expected = want.shape;
        expected.mutable_dims()[0] = -1;
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", in.name, "' has shape ", got.ToString(), ", expected ",
            expected.ToString(), " with 1..", max_batch,
            " rows (max_batch_size)"));
      }
    } else if (in.tensor.shape() != want.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in.name, "' has shape ", in.tensor.shape().ToString(),
          ", expected ", want.shape.ToString()));
    }
    if (!in.tensor.valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", in.name, "' has no data"));
    }
    seen[i] = true;
    bound[i] = std::move(in.tensor);
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing input '", info.inputs[i].name, "' (",
                       DTypeName(info.inputs[i].dtype),
                       info.inputs[i].shape.ToString(), ")"));
    }
  }
  // A batched run's inputs are rows of one batch: the same count for all.
  for (size_t i = 1; info.batching.max_batch_size > 0 && i < bound.size();
       ++i) {
    if (bound[i].shape().dim(0) != bound[0].shape().dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", info.inputs[i].name, "' has ", bound[i].shape().dim(0),
          " rows but input '", info.inputs[0].name, "' has ",
          bound[0].shape().dim(0), ": a batched run's inputs share their "
          "first (batch) dimension"));
    }
  }
  return bound;
}

absl::StatusOr<std::vector<int>> BindOutputs(
    const NetworkInfo& info, const std::vector<std::string>& requested) {
  std::vector<int> indices;
  if (requested.empty()) {
    for (size_t i = 0; i < info.outputs.size(); ++i) {
      indices.push_back(static_cast<int>(i));
    }
    return indices;
  }
  for (const std::string& name : requested) {
    size_t i = 0;
    while (i < info.outputs.size() && info.outputs[i].name != name) ++i;
    if (i == info.outputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "network '", Clip(info.name), "' has no output '", Clip(name), "'"));
    }
    indices.push_back(static_cast<int>(i));
  }
  return indices;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HostManager>> HostManager::Create(
    HostManagerOptions options,
    std::vector<std::unique_ptr<DeviceManager>> devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("a HostManager needs a device");
  }
  if (options.max_active_requests < 1 || options.max_queue_size < 0 ||
      options.priority_aging < 1) {
    return absl::InvalidArgumentError(
        "max_active_requests and priority_aging must be positive and "
        "max_queue_size not negative");
  }
  return std::unique_ptr<HostManager>(
      new HostManager(options, std::move(devices)));
}

absl::StatusOr<std::unique_ptr<HostManager>> HostManager::CreateFromConfigs(
    HostManagerOptions options, const std::vector<DeviceConfig>& configs) {
  RegisterBuiltinDeviceTypes();
  // The fault-injecting type too, for drills (--devices=faulty:...).
  GLINT_RETURN_IF_ERROR(
      RegisterFaultInjectingDeviceType(DeviceRegistry::Global()));
  GLINT_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<DeviceManager>> devices,
                         DeviceRegistry::Global().CreateAll(configs));
  return Create(options, std::move(devices));
}

HostManager::HostManager(HostManagerOptions options,
                         std::vector<std::unique_ptr<DeviceManager>> devices)
    : options_(options),
      devices_(std::move(devices)),
      executor_(std::make_unique<Executor>()),
      batch_timer_(std::make_unique<BatchTimer>()) {
  for (const auto& device : devices_) {
    device_compute_[device->id()] = std::make_unique<DurationSeries>();
  }
  monitor_ = std::thread([this] {
    SetCurrentThreadName("glint-monitor");
    MonitorDevices();
  });
}

HostManager::~HostManager() {
  Shutdown();
  {
    absl::MutexLock lock(&monitor_mu_);
    monitor_stop_ = true;
  }
  monitor_.join();
  // No batcher wakes up any more (they are closed, their requests failed).
  batch_timer_.reset();
  absl::flat_hash_map<std::string, std::shared_ptr<NetworkEntry>> networks;
  {
    absl::MutexLock lock(&mu_);
    networks.swap(networks_);
  }
  // Evict every function now, while the devices exist: a finished run's
  // callback, still unwinding on some device's thread, may hold the last
  // reference to an entry, and must not be the one to touch a device that
  // is already gone. No run is active (Shutdown waited), so nothing uses
  // the executables any more.
  for (auto& [name, entry] : networks) {
    absl::MutexLock lock(&entry->mu);
    entry->executable.reset();
    entry->smaller.clear();
  }
  networks.clear();
}

absl::StatusOr<NetworkInfo> HostManager::AddNetwork(
    absl::string_view name, absl::string_view onnx_model,
    const AddNetworkOptions& options) {
  return Add(name, onnx_model, options, AddMode::kAdd);
}

absl::StatusOr<NetworkInfo> HostManager::ReplaceNetwork(
    absl::string_view name, absl::string_view onnx_model,
    const AddNetworkOptions& options) {
  return Add(name, onnx_model, options, AddMode::kReplace);
}

void HostManager::RequestDeviceCheck() {
  absl::MutexLock lock(&monitor_mu_);
  check_requested_ = true;
}

void HostManager::MonitorDevices() {
  for (;;) {
    {
      absl::MutexLock lock(&monitor_mu_);
      monitor_mu_.Await(absl::Condition(this, &HostManager::MonitorHasWork));
      if (monitor_stop_) return;
      check_requested_ = false;
    }
    std::vector<const DeviceManager*> dead;
    std::string dead_names;
    for (const auto& device : devices_) {
      if (device->healthy()) continue;
      dead.push_back(device.get());
      const DeviceInfo info = device->GetDeviceInfo();
      absl::StrAppend(&dead_names, dead_names.empty() ? "" : ", ", info.name);
      absl::MutexLock lock(&monitor_mu_);
      if (failed_devices_.insert(device.get()).second) {
        GLINT_LOG_ERROR("device {} failed ({}); re-provisioning its networks",
                        info.name, info.unhealthy_reason);
      }
    }
    // Every network still on a dead device, also one placed there in the
    // moment between the death and its discovery.
    std::vector<std::shared_ptr<NetworkEntry>> affected;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [name, entry] : networks_) {
        absl::MutexLock entry_lock(&entry->mu);
        if (entry->executable == nullptr) continue;
        bool uses = false;
        for (const DeviceManager* device : dead) {
          uses = uses || Uses(*entry->executable, device);
          for (const auto& [size, smaller] : entry->smaller) {
            uses = uses || Uses(*smaller, device);
          }
        }
        if (uses) affected.push_back(entry);
      }
    }
    for (const auto& entry : affected) Reprovision(entry, dead_names);
  }
}

void HostManager::Reprovision(const std::shared_ptr<NetworkEntry>& entry,
                              const std::string& failed_device) {
  // The same plan request on the healthy devices, with fewer replicas if
  // the requested number no longer fits.
  AddNetworkOptions options = entry->options;
  NetworkInfo info;
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> built =
      absl::UnavailableError("not tried");
  // The model: HostManager's copy, or read back from the journal when it
  // keeps it (see Add), held only for the rebuild.
  absl::string_view model = entry->model;
  std::string read_back;
  bool readable = true;
  if (entry->model.empty() && options_.journal != nullptr &&
      options_.journal->KeepsModels()) {
    absl::StatusOr<std::string> kept =
        options_.journal->LoadModel(entry->info.name);
    if (kept.ok()) {
      read_back = *std::move(kept);
      model = read_back;
    } else {
      readable = false;
      built = absl::Status(kept.status().code(),
                           absl::StrCat("its model cannot be read back: ",
                                        kept.status().message()));
    }
  }
  for (int replicas = std::max(1, options.partition.replicas);
       readable && replicas >= 1; --replicas) {
    options.partition.replicas = replicas;
    built = Build(entry->info.name, model, options, &info);
    if (built.ok() || !absl::IsResourceExhausted(built.status())) break;
  }
  // A batching network's other sizes, as many replicas: all or nothing.
  absl::StatusOr<std::map<int, std::shared_ptr<ExecutableNetwork>>> smaller;
  if (built.ok()) {
    smaller = BuildSmaller(entry->info.name, model, options);
    if (!smaller.ok()) built = smaller.status();
  }
  std::string().swap(read_back);  // Not held while the old plan drains.
  std::vector<std::shared_ptr<ExecutableNetwork>> old;
  {
    absl::MutexLock lock(&mu_);
    absl::MutexLock entry_lock(&entry->mu);
    old.push_back(std::move(entry->executable));
    for (auto& [size, executable] : entry->smaller) {
      old.push_back(std::move(executable));
    }
    entry->smaller.clear();
    if (built.ok()) {
      entry->executable = *std::move(built);
      entry->smaller = *std::move(smaller);
      info.unavailable_reason.clear();
      entry->info = std::move(info);
      GLINT_LOG_INFO(
          "network '{}' re-provisioned after {} failed ({} "
          "replicas)",
          entry->info.name, failed_device, entry->info.replicas);
    } else {
      entry->info.unavailable_reason =
          absl::StrCat("device ", failed_device,
                       " failed and the network fits no healthy devices: ",
                       built.status().message());
      GLINT_LOG_ERROR("network '{}' is unavailable: {}", entry->info.name,
                      entry->info.unavailable_reason);
    }
  }
  Unpark(*entry);
  // Runs already on the old plan end (those on the dead device fail fast);
  // then its partitions are unloaded.
  absl::MutexLock entry_lock(&entry->mu);
  entry->mu.Await(absl::Condition(
      +[](std::vector<std::shared_ptr<ExecutableNetwork>>* plans) {
        for (const auto& p : *plans) {
          if (p.use_count() > 1) return false;
        }
        return true;
      },
      &old));
  old.clear();
}

absl::StatusOr<std::map<int, std::shared_ptr<ExecutableNetwork>>>
HostManager::BuildSmaller(absl::string_view name, absl::string_view onnx_model,
                          const AddNetworkOptions& options) const {
  std::map<int, std::shared_ptr<ExecutableNetwork>> smaller;
  if (options.batching.max_batch_size <= 0) return smaller;
  for (int size : CompiledBatchSizes(options.batching)) {
    if (size == options.batching.max_batch_size) continue;
    AddNetworkOptions at = options;
    at.batching.max_batch_size = size;
    at.batching.preferred_batch_sizes.clear();
    NetworkInfo info;
    absl::StatusOr<std::unique_ptr<ExecutableNetwork>> built =
        Build(name, onnx_model, at, &info);
    if (!built.ok()) {
      return absl::Status(
          built.status().code(),
          absl::StrCat("at preferred batch size ", size, ": ",
                       built.status().message()));
    }
    smaller[size] = *std::move(built);
  }
  return smaller;
}

absl::StatusOr<std::unique_ptr<ExecutableNetwork>> HostManager::Build(
    absl::string_view name, absl::string_view onnx_model,
    const AddNetworkOptions& options, NetworkInfo* info,
    const CachedPlan* types, const CachedPlan* plan, CachedPlan* made) const {
  ImportOptions import;
  import.input_shapes = options.input_shapes;
  // A batching network is compiled at its largest batch (see batcher.h).
  import.batch_size = options.batching.max_batch_size;
  import.run_inference = options_.run_onnx_inference;
  std::string inferred;
  if (types != nullptr) {
    // Replayed: neither a helper process nor ONNX's inference runs. The
    // importer still checks that the reply fits the model.
    import.run_inference = [types](const std::string&) {
      return absl::StatusOr<std::string>(types->inferred_types);
    };
  } else if (made != nullptr) {
    // Kept for the cache: the same step, its reply recorded.
    InferenceRunner run = options_.run_onnx_inference;
    import.run_inference = [run, &inferred](const std::string& request) {
      absl::StatusOr<std::string> reply =
          run ? run(request) : RunOnnxInference(request);
      if (reply.ok()) inferred = *reply;
      return reply;
    };
  }
  import.is_supported = [this](absl::string_view op) {
    for (const auto& d : devices_) {
      if (d->backend().IsOpSupported(op)) return true;
    }
    return false;
  };
  const absl::Time start = absl::Now();
  GLINT_ASSIGN_OR_RETURN(Graph graph, ImportOnnxModel(onnx_model, import));
  const absl::Time imported = absl::Now();
  if (const int batch = options.batching.max_batch_size; batch > 0) {
    // Every output must carry the batch too, to be split back.
    if (graph.inputs.empty()) {
      return absl::InvalidArgumentError(
          "dynamic batching needs a network with inputs");
    }
    for (const ValueInfo& out : graph.outputs) {
      if (out.shape.rank() < 1 || !out.shape.IsStatic() ||
          out.shape.dim(0) != batch) {
        return absl::InvalidArgumentError(absl::StrCat(
            "output '", Clip(out.name), "' has shape ", out.shape.ToString(),
            " at max_batch_size ", batch,
            ": dynamic batching needs the batch dimension first in every "
            "input and output"));
      }
    }
  }
  // Only healthy devices are planned for and placed on.
  std::vector<DeviceInfo> infos;
  std::vector<DeviceManager*> devices;
  for (const auto& d : devices_) {
    DeviceInfo info = d->GetDeviceInfo();
    if (!info.unhealthy_reason.empty()) continue;
    infos.push_back(std::move(info));
    devices.push_back(d.get());
  }
  if (devices.empty()) {
    return absl::UnavailableError("no healthy device is left");
  }
  PartitionOptions partition = options.partition;
  if (plan != nullptr) partition.fixed_assignment = plan->assignment;
  GLINT_ASSIGN_OR_RETURN(Dag dag, Partition(graph, infos, partition));
  if (plan != nullptr) {
    dag.strategy = plan->strategy;
    dag.placement = plan->placement;
  }
  const absl::Time planned = absl::Now();
  GLINT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutableNetwork> executable,
                         Provisioner(std::move(devices))
                             .Provision(dag, CompileOptions{options.precision}));
  *info = DescribeNetwork(name, dag, *executable);
  info->batching = options.batching;
  info->precision = options.precision;
  GLINT_LOG_INFO(
      "network '{}' built in {}: import {}{}, partition {}{}, compile and "
      "load {}",
      Clip(name), absl::FormatDuration(absl::Now() - start),
      absl::FormatDuration(imported - start),
      types != nullptr ? " (cached types)" : "",
      absl::FormatDuration(planned - imported),
      plan != nullptr ? " (cached plan)" : "",
      absl::FormatDuration(absl::Now() - planned));
  if (made != nullptr) {
    made->inferred_types =
        types != nullptr ? types->inferred_types : std::move(inferred);
    made->strategy = dag.strategy;
    made->assignment = dag.assignment;
    made->placement = executable->placement;
  }
  return executable;
}

std::string HostManager::PlanKey(absl::string_view onnx_model,
                                 const AddNetworkOptions& options) const {
  // Everything a plan depends on, spelled out; its digest is the key.
  std::string what =
      absl::StrCat("glint-plan-v1;model=", Sha256Hex(onnx_model));
  for (const auto& [input, shape] : options.input_shapes) {
    absl::StrAppend(&what, ";shape:", input, "=", shape.ToString());
  }
  const PartitionOptions& p = options.partition;
  absl::StrAppend(&what, ";strategy=", static_cast<int>(p.strategy),
                  ";plan_devices=", p.plan_devices, ";replicas=", p.replicas);
  for (const UserPlacement& rule : p.user_plan) {
    absl::StrAppend(&what, ";place:", rule.pattern, "=", rule.logical_device);
  }
  absl::StrAppend(&what, ";user_config=", options.user_config);
  // Only the size matters to the plan: the network is compiled at it.
  if (options.batching.max_batch_size > 0) {
    absl::StrAppend(&what, ";batch=", options.batching.max_batch_size);
  }
  // Not part of the partitioning, but of what was compiled: a network
  // re-added at another precision must not match the plan made before.
  if (options.precision != Precision::kFloat32) {
    absl::StrAppend(&what, ";precision=", PrecisionName(options.precision));
  }
  for (const auto& d : devices_) {
    const DeviceInfo info = d->GetDeviceInfo();
    if (!info.unhealthy_reason.empty()) continue;
    absl::StrAppend(&what, ";device:", info.id, ",", info.type, ",",
                    info.memory_bytes, ",", info.compute_flops, ",",
                    info.link_bytes_per_second, ",",
                    absl::StrJoin(info.unsupported_ops, "+"));
  }
  return Sha256Hex(what);
}

absl::StatusOr<NetworkInfo> HostManager::RestoreNetwork(
    absl::string_view name, absl::string_view onnx_model,
    const AddNetworkOptions& options) {
  absl::StatusOr<NetworkInfo> info =
      Add(name, onnx_model, options, AddMode::kRestore);
  if (info.ok() || info.status().code() == absl::StatusCode::kAlreadyExists ||
      name.empty() || !IsValidUtf8(name)) {
    return info;
  }
  auto entry = std::make_shared<NetworkEntry>();
  entry->info.name = std::string(name);
  entry->info.unavailable_reason = std::string(info.status().message());
  entry->journaled = options_.journal != nullptr;
  absl::MutexLock lock(&mu_);
  if (!networks_.contains(name) && !adding_.contains(name)) {
    networks_[std::string(name)] = std::move(entry);
  }
  return info;
}

absl::StatusOr<NetworkInfo> HostManager::Add(absl::string_view name,
                                             absl::string_view onnx_model,
                                             const AddNetworkOptions& options,
                                             AddMode mode) {
  const bool record = mode == AddMode::kAdd;
  if (name.empty()) {
    return absl::InvalidArgumentError("a network needs a name");
  }
  if (!IsValidUtf8(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "network name '", Clip(absl::CHexEscape(name)), "' is not UTF-8"));
  }
  GLINT_RETURN_IF_ERROR(ValidateDynamicBatching(options.batching));
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) {
      return absl::UnavailableError("the host manager is shutting down");
    }
    auto it = networks_.find(name);
    if (adding_.contains(name) ||
        (it != networks_.end() &&
         (mode != AddMode::kReplace || it->second->journaled))) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a network named '", Clip(name), "' already exists",
          mode == AddMode::kReplace && !adding_.contains(name)
              ? " and is journaled (added through AddNetwork): "
                "ReplaceNetwork replaces only networks it added"
              : ""));
    }
    adding_[std::string(name)] = true;
  }
  absl::StatusOr<std::shared_ptr<NetworkEntry>> entry =
      [&]() -> absl::StatusOr<std::shared_ptr<NetworkEntry>> {
    auto entry = std::make_shared<NetworkEntry>();
    // The plan cache: what is kept for this name, whether it matches, and
    // what the policy lets this add reuse. ReplaceNetwork's networks have
    // no journal: their source (glintd's model repository) is their
    // durable copy.
    NetworkJournal* const journal =
        mode == AddMode::kReplace ? nullptr : options_.journal;
    entry->journaled = journal != nullptr;
    std::optional<CachedPlan> cached;
    std::string key;
    if (journal != nullptr) {
      key = PlanKey(onnx_model, options);
      absl::StatusOr<CachedPlan> kept = journal->LoadPlan(name);
      if (kept.ok()) {
        cached = *std::move(kept);
      } else if (!absl::IsNotFound(kept.status())) {
        GLINT_LOG_WARN("the cached plan of '{}' is unusable ({}); planning "
                       "anew",
                       Clip(name), kept.status().ToString());
      }
    }
    const bool match = cached.has_value() && cached->key == key;
    if (options.reuse == PlanReuse::kMatch && cached.has_value() && !match) {
      return absl::FailedPreconditionError(absl::StrCat(
          "network '", Clip(name),
          "' has a cached plan made for another model, options, user_config "
          "or device set, and reuse is MATCH; add it with reuse MOO or "
          "OVERRIDE to plan it anew"));
    }
    const bool reuse_types = match && options.reuse != PlanReuse::kOverride;
    const bool reuse_plan =
        match && (options.reuse == PlanReuse::kMatch ||
                  options.reuse == PlanReuse::kMatchOrOverride);
    CachedPlan made;
    absl::StatusOr<std::unique_ptr<ExecutableNetwork>> built;
    // A device that dies while the network is loading fails the load
    // UNAVAILABLE: plan again on the devices still healthy, as long as
    // each failure lost a device (so at most once per device).
    auto healthy = [this] {
      size_t n = 0;
      for (const auto& d : devices_) n += d->healthy() ? 1 : 0;
      return n;
    };
    for (size_t before = healthy();;) {
      built = Build(name, onnx_model, options, &entry->info,
                    reuse_types ? &*cached : nullptr,
                    reuse_plan ? &*cached : nullptr,
                    journal != nullptr ? &made : nullptr);
      if (built.ok() || !absl::IsUnavailable(built.status())) break;
      const size_t now = healthy();
      if (now >= before) break;
      before = now;
    }
    GLINT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutableNetwork> executable,
                           std::move(built));
    if (journal != nullptr && !reuse_plan) {
      made.key = key;
      // A plan not kept costs the next restart time, nothing else.
      if (absl::Status s = journal->SavePlan(name, made); !s.ok()) {
        GLINT_LOG_WARN("cannot keep the plan of '{}': {}", Clip(name),
                       s.ToString());
      }
    }
    // A journal that keeps the model gives it back for re-provisioning;
    // holding it here too would keep a second copy of the weights for the
    // network's lifetime.
    if (journal == nullptr || !journal->KeepsModels()) {
      entry->model = std::string(onnx_model);
    }
    entry->options = options;
    std::map<int, std::shared_ptr<ExecutableNetwork>> smaller;
    if (options.batching.max_batch_size > 0) {
      GLINT_ASSIGN_OR_RETURN(smaller,
                             BuildSmaller(name, onnx_model, options));
      GLINT_ASSIGN_OR_RETURN(entry->batcher, MakeBatcher(entry.get()));
    }
    absl::MutexLock lock(&entry->mu);
    entry->executable = std::move(executable);
    entry->smaller = std::move(smaller);
    return entry;
  }();
  // Durable before it is visible: once a client could see it, a restart
  // must not lose it. The name is still reserved, so no remove or add of
  // the same name interleaves with the journal.
  if (entry.ok() && record && options_.journal != nullptr) {
    if (absl::Status s = options_.journal->Record(name, onnx_model, options);
        !s.ok()) {
      absl::MutexLock lock(&(*entry)->mu);
      (*entry)->executable.reset();
      (*entry)->smaller.clear();
      entry = s;
    }
  }
  absl::ReleasableMutexLock lock(&mu_);
  adding_.erase(std::string(name));
  if (!entry.ok()) {
    GLINT_LOG_INFO("AddNetwork '{}' failed: {}", std::string(name),
                   entry.status().ToString());
    return entry.status();
  }
  std::shared_ptr<NetworkEntry> replaced =
      std::exchange(networks_[std::string(name)], *entry);
  const NetworkInfo info = (*entry)->info;
  GLINT_LOG_INFO("{} network '{}' ({} partitions)",
                 replaced != nullptr ? "replaced" : "added", std::string(name),
                 info.partitions.size());
  lock.Release();
  // New runs find the new entry from here on; those that started on the
  // old one finish on it, then its functions are evicted.
  if (replaced != nullptr) Drain(*replaced);
  return info;
}

absl::Status HostManager::RemoveNetwork(absl::string_view name) {
  std::shared_ptr<NetworkEntry> entry;
  {
    absl::MutexLock lock(&mu_);
    auto it = networks_.find(name);
    if (it == networks_.end() || adding_.contains(name)) {
      return absl::NotFoundError(
          absl::StrCat("no network named '", Clip(name), "'"));
    }
    if (options_.journal == nullptr || !it->second->journaled) {
      entry = std::move(it->second);
      networks_.erase(it);
    } else {
      // Held like a name being added while the journal forgets it: a
      // concurrent add or remove of the same name waits its turn by
      // failing, and runs go on until the network leaves the map.
      adding_[std::string(name)] = true;
    }
  }
  if (entry == nullptr) {
    const absl::Status erased = options_.journal->Erase(name);
    absl::MutexLock lock(&mu_);
    adding_.erase(std::string(name));
    if (!erased.ok()) {
      return absl::Status(erased.code(),
                          absl::StrCat("cannot remove network '", Clip(name),
                                       "': ", erased.message()));
    }
    auto it = networks_.find(name);
    entry = std::move(it->second);
    networks_.erase(it);
  }
  Drain(*entry);
  return absl::OkStatus();
}

std::vector<NetworkInfo> HostManager::ListNetworks() const {
  std::vector<NetworkInfo> list;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : networks_) list.push_back(entry->info);
  }
  std::sort(list.begin(), list.end(),
            [](const NetworkInfo& a, const NetworkInfo& b) {
              return a.name < b.name;
            });
  return list;
}

absl::StatusOr<NetworkInfo> HostManager::GetNetwork(
    absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = networks_.find(name);
  if (it == networks_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no network named '", Clip(name), "'"));
  }
  return it->second->info;
}

absl::StatusOr<NetworkStatistics> HostManager::GetStatistics(
    absl::string_view name) const {
  std::shared_ptr<NetworkEntry> entry;
  NetworkInfo info;
  {
    absl::MutexLock lock(&mu_);
    auto it = networks_.find(name);
    if (it == networks_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no network named '", Clip(name), "'"));
    }
    entry = it->second;
    info = entry->info;
  }
  // Outside mu_: a snapshot sorts the recent values of every series.
  return entry->stats.Snapshot(info);
}

std::vector<NetworkStatistics> HostManager::GetAllStatistics() const {
  std::vector<std::pair<std::shared_ptr<NetworkEntry>, NetworkInfo>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : networks_) {
      entries.emplace_back(entry, entry->info);
    }
  }
  std::vector<NetworkStatistics> all;
  for (const auto& [entry, info] : entries) {
    all.push_back(entry->stats.Snapshot(info));
  }
  std::sort(all.begin(), all.end(),
            [](const NetworkStatistics& a, const NetworkStatistics& b) {
              return a.name < b.name;
            });
  return all;
}

std::vector<DeviceStatistics> HostManager::GetDeviceStatistics() const {
  std::vector<DeviceStatistics> all;
  for (const auto& d : devices_) {
    DeviceStatistics stats;
    stats.device = d->GetDeviceInfo();
    stats.compute = device_compute_.at(d->id())->Snapshot();
    all.push_back(std::move(stats));
  }
  return all;
}

std::vector<DeviceInfo> HostManager::GetDevices() const {
  std::vector<DeviceInfo> infos;
  for (const auto& d : devices_) infos.push_back(d->GetDeviceInfo());
  return infos;
}

namespace {

// Ends a run's hold on its network: drops its reference to the executable
// and its in-flight count, which RemoveNetwork and re-provisioning wait for.
void LeaveNetwork(NetworkEntry& entry,
                  std::shared_ptr<ExecutableNetwork>& executable)
    ABSL_LOCKS_EXCLUDED(entry.mu) {
  absl::MutexLock lock(&entry.mu);
  executable.reset();
  --entry.in_flight;
}

// Drops a batch's reference to the plan it ran on, under entry.mu so that
// re-provisioning, which waits for the old plan's last user, sees it.
void LeaveNetworkPlan(NetworkEntry& entry,
                      std::shared_ptr<ExecutableNetwork>& executable)
    ABSL_LOCKS_EXCLUDED(entry.mu) {
  absl::MutexLock lock(&entry.mu);
  executable.reset();
}

// The executor's request for a run: the caller's inputs matched to the
// network's (dtypes and shapes checked), the requested outputs as indices,
// the run options.
absl::StatusOr<std::shared_ptr<ExecutionRequest>> BindRequest(
    const NetworkInfo& info, std::vector<NamedTensor> inputs,
    const RunOptions& options,
    std::shared_ptr<const CancellationToken> shutdown) {
  if (options.profile && options.trace == nullptr) {
    return absl::InvalidArgumentError(
        "RunOptions::profile records into RunOptions::trace, which is not "
        "set");
  }
  GLINT_ASSIGN_OR_RETURN(std::vector<Tensor> bound,
                         BindInputs(info, std::move(inputs)));
  GLINT_ASSIGN_OR_RETURN(std::vector<int> outputs,
                         BindOutputs(info, options.requested_outputs));
  auto request = std::make_shared<ExecutionRequest>();
  request->inputs = std::move(bound);
  if (!options.output_buffers.empty()) {
    request->output_destinations.resize(outputs.size());
    for (size_t r = 0; r < outputs.size(); ++r) {
      for (const RunOptions::OutputBuffer& b : options.output_buffers) {
        if (b.output == info.outputs[outputs[r]].name) {
          request->output_destinations[r] = b.memory;
        }
      }
    }
  }
  request->outputs = std::move(outputs);
  request->deadline = options.deadline;
  request->cancel = options.cancel;
  request->shutdown = std::move(shutdown);
  request->trace = options.trace;
  request->profile = options.profile;
  request->priority = options.priority;
  return request;
}

// A traced run's slice for its time in the admission queue, ended when the
// run starts or is refused; null when the run is not traced.
TraceSlice* TraceAdmission(const RunOptions& options) {
  if (options.trace == nullptr) return nullptr;
  TraceSlice slice;
  slice.name = "admission queue";
  slice.category = "host";
  slice.process_name = "host";
  slice.thread_name = "admission";
  slice.thread = 1;
  slice.begin = absl::Now();
  return options.trace->AddSlice(std::move(slice));
}

// Ends a run (HostManager::FinishRun): called exactly once, with the run's
// result once it ran, or with the refusal if it never started (then it
// holds no admission slot).
using RunFinish =
    std::function<void(absl::StatusOr<std::vector<Tensor>>, bool started)>;

// Starts an admitted run on the executor; a run that Shutdown took out of
// the admission queue (`admitted` false) is refused instead.
void StartRun(const Executor& executor, const ExecutableNetwork& executable,
              ExecutionRequest request, std::shared_ptr<RunFinish> finish,
              TraceSlice* queued, bool admitted) {
  if (queued != nullptr) queued->end = absl::Now();
  if (!admitted) {
    (*finish)(absl::UnavailableError("the host manager is shutting down"),
              false);
    return;
  }
  executor.Run(executable, std::move(request),
               [finish](absl::StatusOr<std::vector<Tensor>> result) {
                 (*finish)(std::move(result), true);
               });
}

}  // namespace

void HostManager::RunNetworkAsync(absl::string_view name,
                                  std::vector<NamedTensor> inputs,
                                  const RunOptions& options, RunCallback done) {
  auto measures = std::make_shared<RunMeasures>();
  measures->arrived = MonotonicNow();
  // The run's reference to the executable it runs on, dropped under
  // entry->mu when the run ends (see NetworkEntry::executable).
  auto executable = std::make_shared<std::shared_ptr<ExecutableNetwork>>();
  // 1. Find the network. A run parked for a re-provisioned plan takes its
  // arguments along to start again.
  absl::StatusOr<std::shared_ptr<NetworkEntry>> found = FindNetworkForRun(
      name, executable.get(), [&]() -> std::function<void()> {
        return [this, name = std::string(name), inputs = std::move(inputs),
                options, done = std::move(done)]() mutable {
          RunNetworkAsync(name, std::move(inputs), options, std::move(done));
        };
      });
  // Callbacks run without locks held: they may call back into the manager.
  if (!found.ok()) {
    done(found.status());
    return;
  }
  if (*found == nullptr) return;  // Parked.
  std::shared_ptr<NetworkEntry> entry = *std::move(found);

  // 2. Check the inputs (and requested outputs) against the network's.
  absl::StatusOr<std::shared_ptr<ExecutionRequest>> request =
      BindRequest(entry->info, std::move(inputs), options, shutdown_token_);
  if (!request.ok()) {
    entry->stats.RecordFailure(MonotonicNow() - measures->arrived);
    LeaveNetwork(*entry, *executable);
    done(request.status());
    return;
  }
  // Measured for the statistics; shares the measures' allocation.
  (*request)->timings =
      std::shared_ptr<RunTimings>(measures, &measures->timings);

  if (entry->batcher != nullptr) {
    EnqueueBatched(std::move(entry), std::move(executable),
                   *std::move(request), std::move(measures), options.priority,
                   std::move(done));
    return;
  }

  // 5. Finish: every path from here ends the run through it.
  auto finish = std::make_shared<RunFinish>(
      [this, entry, executable, measures, outputs = (*request)->outputs,
       done = std::move(done)](absl::StatusOr<std::vector<Tensor>> result,
                               bool started) {
        FinishRun(*entry, *executable, outputs, std::move(result), started,
                  *measures, done);
      });

  // 3. Admit: 4. start the run now, or once a running one ends.
  TraceSlice* queued = TraceAdmission(options);
  measures->queued = MonotonicNow();
  entry->stats.AddQueued(1);
  absl::Status admission = Admit(
      options.priority,
      [this, executable, entry, measures, request = *std::move(request),
       finish, queued](bool admitted) {
        entry->stats.AddQueued(-1);
        if (admitted) {
          measures->admitted = MonotonicNow();
          entry->stats.AddInFlight(1);
        }
        StartRun(*executor_, **executable, std::move(*request), finish,
                 queued, admitted);
      });
  if (!admission.ok()) {
    entry->stats.AddQueued(-1);
    (*finish)(admission, false);
  }
}

absl::StatusOr<std::shared_ptr<NetworkEntry>> HostManager::FindNetworkForRun(
    absl::string_view name, std::shared_ptr<ExecutableNetwork>* executable,
    absl::FunctionRef<std::function<void()>()> park) {
  std::shared_ptr<NetworkEntry> entry;
  absl::Status refused;
  bool parked = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = networks_.find(name);
    if (shutting_down_) {
      refused = absl::UnavailableError("the host manager is shutting down");
    } else if (it == networks_.end()) {
      refused = absl::NotFoundError(
          absl::StrCat("no network named '", Clip(name), "'"));
    } else {
      // Counted while the network is still in the map: RemoveNetwork, which
      // erases it under mu_ and then waits for in_flight to drain, can
      // never evict the executable under a run that found it.
      absl::MutexLock entry_lock(&it->second->mu);
      if (it->second->executable == nullptr) {
        refused = absl::UnavailableError(absl::StrCat(
            "network '", Clip(name),
            "' is unavailable: ", it->second->info.unavailable_reason));
      } else if (NoHealthyReplica(*it->second->executable)) {
        // A device it needs has died and the monitor is (or will be, once
        // asked) re-provisioning it: the run waits for the new plan rather
        // than fail on the dead device too.
        it->second->parked.push_back(park());
        parked = true;
      } else {
        // Through `it`, whose mu is the one held (the analysis cannot see
        // that `entry` aliases it).
        *executable = it->second->executable;
        ++it->second->in_flight;
        entry = it->second;
      }
    }
  }
  if (!refused.ok()) return refused;
  if (parked) RequestDeviceCheck();
  return entry;
}

void HostManager::FinishRun(NetworkEntry& entry,
                            std::shared_ptr<ExecutableNetwork>& executable,
                            const std::vector<int>& outputs,
                            absl::StatusOr<std::vector<Tensor>> result,
                            bool started, const RunMeasures& measures,
                            const RunCallback& done) {
  // Recorded before the caller hears of the run, so that statistics read
  // after an answer count it.
  const absl::Duration request = MonotonicNow() - measures.arrived;
  if (result.ok()) {
    NetworkStatsRecorder::Success success;
    success.request = request;
    success.queue = measures.admitted - measures.queued;
    success.compute_input = absl::Nanoseconds(measures.timings.input_ns);
    success.compute_infer = absl::Nanoseconds(measures.timings.compute_ns);
    success.compute_output = absl::Nanoseconds(measures.timings.output_ns);
    success.partition_ns = measures.timings.partition_ns;
    entry.stats.RecordSuccess(success);
    // A batched run's batch counts the execution and the devices' time.
    if (!measures.batched) {
      entry.stats.RecordExecution();
      RecordDeviceCompute(measures.timings);
    }
  } else {
    entry.stats.RecordFailure(request);
  }
  if (started || measures.batch_admitted) entry.stats.AddInFlight(-1);
  if (measures.batched && !measures.batch_admitted) {
    entry.stats.AddQueued(-1);
  }
  absl::StatusOr<std::vector<NamedTensor>> named;
  if (result.ok()) {
    std::vector<NamedTensor> list;
    for (size_t i = 0; i < outputs.size(); ++i) {
      list.push_back({entry.info.outputs[outputs[i]].name,
                      std::move((*result)[i])});
    }
    named = std::move(list);
  } else {
    named = result.status();
  }
  LeaveNetwork(entry, executable);
  if (started) Release();
  // A device that fails runs may have died: look at the devices.
  if (!named.ok() &&
      named.status().code() == absl::StatusCode::kUnavailable) {
    RequestDeviceCheck();
  }
  done(std::move(named));
}

absl::Status HostManager::Admit(int priority,
                                std::function<void(bool)> start) {
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) {
      return absl::UnavailableError("the host manager is shutting down");
    }
    if (active_ >= options_.max_active_requests) {
      if (static_cast<int>(pending_size_) >= options_.max_queue_size) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "too many requests: ", active_, " running and ", pending_size_,
            " queued (max_queue_size)"));
      }
      pending_[priority].push_back({std::move(start), next_seq_++, admitted_});
      ++pending_size_;
      return absl::OkStatus();
    }
    ++active_;
  }
  start(true);
  return absl::OkStatus();
}

std::function<void(bool)> HostManager::PopPending() {
  // The head of each priority's FIFO is its oldest, hence most aged, run:
  // the best of the heads is the best of all. Few distinct priorities wait
  // at once in practice; at worst this scans max_queue_size heads.
  auto best = pending_.end();
  int64_t best_rank = 0;
  uint64_t best_seq = 0;
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    const Queued& head = it->second.front();
    const int64_t rank =
        static_cast<int64_t>(it->first) +
        static_cast<int64_t>((admitted_ - head.enqueued) /
                             static_cast<uint64_t>(options_.priority_aging));
    if (best == pending_.end() || rank > best_rank ||
        (rank == best_rank && head.seq < best_seq)) {
      best = it;
      best_rank = rank;
      best_seq = head.seq;
    }
  }
  std::function<void(bool)> next = std::move(best->second.front().start);
  best->second.pop_front();
  if (best->second.empty()) pending_.erase(best);
  --pending_size_;
  ++admitted_;
  return next;
}

void HostManager::Release() {
  std::function<void(bool)> next;
  {
    absl::MutexLock lock(&mu_);
    --active_;
    if (pending_size_ == 0 || shutting_down_) return;
    next = PopPending();
    ++active_;
  }
  next(true);
}

absl::StatusOr<std::shared_ptr<Batcher>> HostManager::MakeBatcher(
    NetworkEntry* entry) {
  BatcherOptions options;
  options.batching = entry->options.batching;
  options.inputs = entry->info.inputs;
  options.outputs = entry->info.outputs;
  // One batch per pipeline stage of each replica, and one more ready
  // behind them, so that devices never wait for the host to form the next.
  options.max_in_flight =
      std::max(1, entry->info.replicas) *
          std::max<int>(1, static_cast<int>(entry->info.partitions.size())) +
      1;
  options.max_queue_size = options_.max_queue_size;
  options.sizes = CompiledBatchSizes(entry->options.batching);
  const int num_outputs = static_cast<int>(entry->info.outputs.size());
  // `entry` outlives every batch: a batch runs only for requests that hold
  // the entry until they are answered.
  BatchExecutor execute = [this, entry, num_outputs](BatchExecution batch,
                                                     BatchDone done) {
    // The batch's own reference to the plan, dropped under entry->mu when
    // it ends (as a run's, see NetworkEntry::executable).
    auto executable = std::make_shared<std::shared_ptr<ExecutableNetwork>>();
    {
      // The plan compiled at the batch's size (it is padded to one).
      absl::MutexLock lock(&entry->mu);
      auto it = entry->smaller.find(static_cast<int>(batch.size));
      if (it != entry->smaller.end()) {
        *executable = it->second;
      } else if (batch.size == entry->options.batching.max_batch_size) {
        *executable = entry->executable;
      }
    }
    if (*executable == nullptr) {
      done(absl::UnavailableError(
          absl::StrCat("network '", Clip(entry->info.name),
                       "' is unavailable: ", entry->info.unavailable_reason)));
      return;
    }
    std::shared_ptr<BatchMeasures> measures = batch.measures;
    ExecutionRequest request;
    request.inputs = std::move(batch.inputs);
    for (int i = 0; i < num_outputs; ++i) request.outputs.push_back(i);
    request.deadline = batch.deadline;
    request.shutdown = shutdown_token_;
    request.trace = std::move(batch.trace);
    request.profile = batch.profile;
    request.priority = batch.priority;
    request.timings =
        std::shared_ptr<RunTimings>(measures, &measures->timings);
    auto shared_done = std::make_shared<BatchDone>(std::move(done));
    const int members = batch.requests;
    absl::Status admission = Admit(
        batch.priority, [this, entry, executable, shared_done, measures,
                         members,
                         request = std::make_shared<ExecutionRequest>(
                             std::move(request))](bool admitted) {
          if (!admitted) {
            LeaveNetworkPlan(*entry, *executable);
            (*shared_done)(
                absl::UnavailableError("the host manager is shutting down"));
            return;
          }
          // Its members leave the queue for the devices together.
          measures->admitted = true;
          measures->admitted_at = MonotonicNow();
          entry->stats.AddQueued(-members);
          entry->stats.AddInFlight(members);
          executor_->Run(
              **executable, std::move(*request),
              [this, entry, executable, measures,
               shared_done](absl::StatusOr<std::vector<Tensor>> result) {
                // One execution however many requests it served.
                if (result.ok()) {
                  entry->stats.RecordExecution();
                  RecordDeviceCompute(measures->timings);
                }
                LeaveNetworkPlan(*entry, *executable);
                Release();
                if (!result.ok() && absl::IsUnavailable(result.status())) {
                  RequestDeviceCheck();
                }
                (*shared_done)(std::move(result));
              });
        });
    if (!admission.ok()) {
      LeaveNetworkPlan(*entry, *executable);
      (*shared_done)(admission);
    }
  };
  return Batcher::Create(std::move(options), std::move(execute),
                         batch_timer_.get());
}

void HostManager::EnqueueBatched(
    std::shared_ptr<NetworkEntry> entry,
    std::shared_ptr<std::shared_ptr<ExecutableNetwork>> executable,
    std::shared_ptr<ExecutionRequest> request,
    std::shared_ptr<RunMeasures> measures, int priority, RunCallback done) {
  // Each request ends as a run that was never admitted itself (its batch
  // holds the admission slot); waiting to be batched counts as queued.
  measures->batched = true;
  measures->queued = MonotonicNow();
  entry->stats.AddQueued(1);
  auto finish = std::make_shared<RunFinish>(
      [this, entry, executable, measures, outputs = request->outputs,
       done = std::move(done)](absl::StatusOr<std::vector<Tensor>> result,
                               bool started) {
        FinishRun(*entry, *executable, outputs, std::move(result), started,
                  *measures, done);
      });
  BatchRequest batched;
  batched.inputs = std::move(request->inputs);
  batched.outputs = request->outputs;
  batched.deadline = request->deadline;
  batched.cancel = request->cancel;
  batched.priority = priority;
  batched.trace = request->trace;
  batched.profile = request->profile;
  batched.done = [finish, measures](absl::StatusOr<std::vector<Tensor>> result,
                                    const BatchMeasures& batch) {
    measures->batch_admitted = batch.admitted;
    measures->admitted = batch.admitted_at;
    measures->timings = batch.timings;
    (*finish)(std::move(result), /*started=*/false);
  };
  absl::Status queued = entry->batcher->Enqueue(std::move(batched));
  if (!queued.ok()) (*finish)(queued, false);
}

void HostManager::RecordDeviceCompute(const RunTimings& timings) {
  for (size_t i = 0; i < timings.partition_device.size() &&
                     i < timings.partition_ns.size();
       ++i) {
    auto device = device_compute_.find(timings.partition_device[i]);
    if (device != device_compute_.end()) {
      device->second->Record(absl::Nanoseconds(timings.partition_ns[i]));
    }
  }
}

absl::StatusOr<std::vector<NamedTensor>> HostManager::RunNetwork(
    absl::string_view name, std::vector<NamedTensor> inputs,
    const RunOptions& options) {
  absl::Notification finished;
  absl::StatusOr<std::vector<NamedTensor>> result;
  RunNetworkAsync(name, std::move(inputs), options,
                  [&](absl::StatusOr<std::vector<NamedTensor>> r) {
                    result = std::move(r);
                    finished.Notify();
                  });
  finished.WaitForNotification();
  return result;
}

void HostManager::Shutdown() {
  std::map<int, std::deque<Queued>> refused;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    refused.swap(pending_);
    pending_size_ = 0;
  }
  shutdown_token_->Cancel();
  for (auto& [priority, queue] : refused) {
    for (Queued& run : queue) run.start(false);
  }
  std::vector<std::shared_ptr<NetworkEntry>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : networks_) entries.push_back(entry);
  }
  for (const auto& entry : entries) {
    Unpark(*entry);  // Refused now.
    if (entry->batcher != nullptr) {
      entry->batcher->Close(
          absl::UnavailableError("the host manager is shutting down"));
    }
  }
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* active) { return *active == 0; }, &active_));
}

}  // namespace glint
