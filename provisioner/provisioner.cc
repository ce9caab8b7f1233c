#include "provisioner/provisioner.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "partitioner/validate.h"

namespace glint {
namespace {

bool CanRun(const DeviceManager& device, const DeviceInfo& model,
            const std::vector<const DagNode*>& partitions) {
  if (device.GetDeviceInfo().type != model.type) return false;
  for (const DagNode* node : partitions) {
    for (const Node& op : node->function.nodes) {
      if (!device.backend().IsOpSupported(op.op_type)) return false;
    }
  }
  return true;
}

// The tensor slots of a replica's runs as Route assigns them: one per
// (value, device) pair a run holds, each with its device's index in
// ReplicaRouting::devices and its bytes when the value's shape is static.
class SlotTable {
 public:
  explicit SlotTable(ReplicaRouting* routing) : routing_(routing) {}

  // The slot of `value` on `device` (already in routing->devices), made on
  // first use.
  int Slot(const ValueInfo& value, DeviceManager* device) {
    auto [it, added] =
        slots_.try_emplace({value.name, device}, routing_->num_tensors);
    if (!added) return it->second;
    ++routing_->num_tensors;
    const auto d =
        std::find(routing_->devices.begin(), routing_->devices.end(), device);
    routing_->slot_device.push_back(
        static_cast<int>(d - routing_->devices.begin()));
    routing_->slot_bytes.push_back(
        value.shape.IsStatic() ? static_cast<size_t>(value.shape.NumElements()) *
                                     DTypeSize(value.dtype)
                               : 0);
    routing_->slot_values.push_back(value);
    return it->second;
  }

 private:
  ReplicaRouting* const routing_;
  std::map<std::pair<std::string, DeviceManager*>, int> slots_;
};

// Where each value of a run comes from.
struct ValueSources {
  absl::flat_hash_map<std::string, int> producer;  // value → partition.
  // A value's type as its producer declares it (a peer copy's source slot
  // is the producer's).
  absl::flat_hash_map<std::string, ValueInfo> produced_info;
  absl::flat_hash_map<std::string, int> network_input;  // value → index.
};

ValueSources FindSources(const std::vector<ProvisionedPartition>& partitions,
                         const ExecutableNetwork& network) {
  ValueSources sources;
  for (size_t i = 0; i < partitions.size(); ++i) {
    for (const ValueInfo& out : partitions[i].function->function().outputs()) {
      sources.producer.emplace(out.name, static_cast<int>(i));
      sources.produced_info.emplace(out.name, out);
    }
  }
  for (size_t i = 0; i < network.inputs.size(); ++i) {
    sources.network_input.emplace(network.inputs[i].name, static_cast<int>(i));
  }
  return sources;
}

// Route's last step: where each network output comes from.
void RouteOutputs(const std::vector<ProvisionedPartition>& partitions,
                  const ExecutableNetwork& network,
                  const ValueSources& sources, SlotTable& slots,
                  ReplicaRouting* routing) {
  for (const ValueInfo& out : network.outputs) {
    OutputRoute& route = routing->outputs.emplace_back();
    auto ni = sources.network_input.find(out.name);
    auto pi = sources.producer.find(out.name);
    if (network.constant_outputs.count(out.name) > 0) {
      route.source = OutputRoute::Source::kConstant;
    } else if (ni != sources.network_input.end() &&
               pi == sources.producer.end()) {
      route.source = OutputRoute::Source::kNetworkInput;
      route.network_input = ni->second;
    } else if (pi != sources.producer.end()) {
      route.source = OutputRoute::Source::kPartition;
      route.producer = pi->second;
      route.tensor = slots.Slot(sources.produced_info.at(out.name),
                                partitions[pi->second].device);
    }
  }
}

// The routing of one replica's runs (ReplicaRouting): which device each
// value lives on and how it gets there, decided once here so that a run
// only follows it. Network inputs come from the host; a partition's
// outputs live on its device; an argument already on the device (produced
// there, or copied in for an earlier partition) moves no more.
ReplicaRouting Route(const std::vector<ProvisionedPartition>& partitions,
                     const ExecutableNetwork& network) {
  ReplicaRouting routing;
  SlotTable slots(&routing);
  const ValueSources sources = FindSources(partitions, network);
  // (value, device) pairs a run has made available on a device by then.
  absl::flat_hash_set<std::pair<std::string, DeviceManager*>> present;
  for (size_t i = 0; i < partitions.size(); ++i) {
    DeviceManager* device = partitions[i].device;
    auto known =
        std::find(routing.devices.begin(), routing.devices.end(), device);
    routing.partition_device.push_back(
        static_cast<int>(known - routing.devices.begin()));
    if (known == routing.devices.end()) routing.devices.push_back(device);

    const CompiledFunction& f = partitions[i].function->function();
    std::vector<InputRoute>& routes = routing.inputs.emplace_back();
    for (const ValueInfo& in : f.inputs()) {
      InputRoute& route = routes.emplace_back();
      route.value = in.name;
      route.tensor = slots.Slot(in, device);
      if (!present.insert({in.name, device}).second) continue;
      auto ni = sources.network_input.find(in.name);
      auto pi = sources.producer.find(in.name);
      if (ni != sources.network_input.end()) {
        route.source = InputRoute::Source::kNetworkInput;
        route.network_input = ni->second;
      } else if (pi != sources.producer.end() &&
                 partitions[pi->second].device != device) {
        route.source = InputRoute::Source::kPeer;
        route.producer = pi->second;
        route.producer_tensor = slots.Slot(sources.produced_info.at(in.name),
                                           partitions[pi->second].device);
      }
    }
    std::vector<int>& results = routing.results.emplace_back();
    for (const ValueInfo& out : f.outputs()) {
      results.push_back(slots.Slot(out, device));
      present.insert({out.name, device});
    }
  }
  RouteOutputs(partitions, network, sources, slots, &routing);
  return routing;
}

// Which partition owns each slot: the first, in topological order, to
// name it among its arguments or results. That is the one that writes it
// (a partition's results are its own; an argument is copied in by the
// first partition on its device to need it, the later ones find it there).
void AssignOwners(ReplicaRouting& routing) {
  routing.slot_owner.assign(routing.num_tensors, -1);
  routing.slot_index.assign(routing.num_tensors, -1);
  routing.owned_slots.assign(routing.inputs.size(), {});
  auto own = [&](int slot, size_t p) {
    if (slot < 0 || routing.slot_owner[slot] >= 0) return;
    routing.slot_owner[slot] = static_cast<int>(p);
    routing.slot_index[slot] = static_cast<int>(routing.owned_slots[p].size());
    routing.owned_slots[p].push_back(slot);
  };
  for (size_t p = 0; p < routing.inputs.size(); ++p) {
    for (const InputRoute& in : routing.inputs[p]) own(in.tensor, p);
    for (int slot : routing.results[p]) own(slot, p);
  }
  // Every output slot is a result of its producer, owned above.
}

// Each partition's execution_bytes: the reserved bytes of the slots it
// owns (its results, and its arguments copied in).
void SumExecutionBytes(Replica& replica) {
  const ReplicaRouting& routing = replica.routing;
  for (size_t i = 0; i < replica.partitions.size(); ++i) {
    uint64_t bytes = 0;
    for (int slot : routing.owned_slots[i]) {
      bytes = SaturatingAdd(bytes, routing.slot_bytes[slot]);
    }
    replica.partitions[i].execution_bytes = bytes;
  }
}

// "batch=8, seq=512": `bounds` as a message shows them.
std::string BoundsText(const std::map<std::string, int64_t>& bounds) {
  std::vector<std::string> parts;
  for (const auto& [name, max] : bounds) {
    parts.push_back(absl::StrCat(name, "=", max));
  }
  return absl::StrJoin(parts, ", ");
}

// What one run at `bounds` adds to what each device of `network` holds:
// its execution states' values, and the growth of the device's launch
// reserve to the largest launch peak there.
struct BoundsNeed {
  std::map<DeviceManager*, uint64_t> states;
  std::map<DeviceManager*, uint64_t> launch;
};

BoundsNeed NeedAt(ExecutableNetwork& network,
                  const std::map<std::string, int64_t>& bounds) {
  BoundsNeed need;
  for (const auto& replica : network.replicas) {
    SizeSlotsWithin(*replica, bounds);
    for (const ProvisionedPartition& p : replica->partitions) {
      need.states[p.device] =
          SaturatingAdd(need.states[p.device], p.execution_bytes);
      uint64_t& launch = need.launch[p.device];
      launch = std::max(
          launch,
          p.function->function().DynamicMemoryWithin(bounds).peak_bytes);
    }
  }
  return need;
}

// Settles `bounds` (lowering the defaulted ones while a run at them does
// not fit a device, DimBounds::defaulted), sizes every replica's slots at
// them and reserves each device's launch peak. RESOURCE_EXHAUSTED, naming
// the bounds, when a device cannot set that peak aside.
absl::Status ReserveForBounds(DimBounds bounds, ExecutableNetwork& network) {
  BoundsNeed need;
  for (;;) {
    need = NeedAt(network, bounds.max);
    bool fits = true;
    for (const auto& [device, states] : need.states) {
      const DeviceInfo info = device->GetDeviceInfo();
      const uint64_t launch = need.launch[device];
      const uint64_t more =
          SaturatingAdd(states, launch > info.launch_reserved_bytes
                                    ? launch - info.launch_reserved_bytes
                                    : 0);
      fits = fits && more <= std::min(info.available_memory_bytes / 2,
                                      info.memory_bytes / 8);
    }
    if (fits) break;
    // Halves the defaulted dims that lead an input (`leading`) or the
    // others, each down to `floor`; whether any was lowered.
    auto halve = [&bounds](bool leading, int64_t floor) {
      bool lowered = false;
      for (const std::string& name : bounds.defaulted) {
        int64_t& max = bounds.max[name];
        if (bounds.leading.count(name) == (leading ? 1 : 0) && max > floor) {
          max = std::max(floor, max / 2);
          lowered = true;
        }
      }
      return lowered;
    };
    if (!halve(/*leading=*/true, DimBounds::kBatchFloor) &&
        !halve(/*leading=*/false, 1) && !halve(/*leading=*/true, 1)) {
      break;
    }
  }
  network.dim_bounds = bounds.max;
  for (const auto& replica : network.replicas) {
    for (ProvisionedPartition& p : replica->partitions) {
      const DynamicMemory memory =
          p.function->function().DynamicMemoryWithin(bounds.max);
      p.launch_bytes = memory.peak_bytes;
      p.unsized_values = static_cast<int>(memory.unbounded.size());
      // Every replica runs the same partitions: the first one's say it.
      if (replica != network.replicas.front()) continue;
      for (const std::string& value : memory.unbounded) {
        network.unreserved.push_back(
            absl::StrCat(value, " of partition ", p.name));
      }
    }
  }
  for (const auto& replica : network.replicas) {
    // One reservation per device, at the largest peak there.
    std::map<DeviceManager*, uint64_t> peak;
    for (const ProvisionedPartition& p : replica->partitions) {
      peak[p.device] = need.launch[p.device];
    }
    for (const auto& [device, bytes] : peak) {
      if (bytes == 0) continue;
      absl::StatusOr<std::unique_ptr<LaunchReservation>> reserved =
          device->ReserveLaunchMemory(bytes);
      if (absl::IsResourceExhausted(reserved.status())) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "at the bounds of its dynamic dims (", BoundsText(bounds.max),
            "): ", reserved.status().message(), "; lower them with max_dims"));
      }
      if (!reserved.ok()) return reserved.status();
      replica->launch_reservations.push_back(*std::move(reserved));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void SizeSlotsWithin(Replica& replica,
                     const std::map<std::string, int64_t>& bounds) {
  ReplicaRouting& routing = replica.routing;
  for (size_t slot = 0; slot < routing.slot_values.size(); ++slot) {
    const ValueInfo& value = routing.slot_values[slot];
    if (value.shape.IsStatic()) continue;
    routing.slot_bytes[slot] = value.BytesWithin(bounds).value_or(0);
  }
  SumExecutionBytes(replica);
}

absl::Status ReserveExecutions(Replica& replica, int max_executions) {
  const ReplicaRouting& routing = replica.routing;
  const std::vector<ProvisionedPartition>& partitions = replica.partitions;
  // What one execution of every partition on a device holds there.
  std::vector<uint64_t> need(routing.devices.size(), 0);
  for (size_t p = 0; p < partitions.size(); ++p) {
    need[routing.partition_device[p]] += partitions[p].execution_bytes;
  }
  std::vector<int> executions(routing.devices.size(),
                              std::max(1, max_executions));
  for (size_t d = 0; d < routing.devices.size(); ++d) {
    if (need[d] == 0) continue;
    const uint64_t available = routing.devices[d]->AvailableMemory();
    if (need[d] > available) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "not even one execution fits on device ",
          routing.devices[d]->GetDeviceInfo().name, ": it needs ", need[d],
          " bytes for the values a run holds there, ", available,
          " of the device's memory are left after the weights"));
    }
    // Beyond the first, executions take at most half of what is left, so
    // that a network added later finds room for its own.
    const uint64_t more = (available - need[d]) / 2 / need[d];
    executions[d] = static_cast<int>(
        std::min<uint64_t>(static_cast<uint64_t>(executions[d]), 1 + more));
  }
  for (size_t p = 0; p < partitions.size(); ++p) {
    PartitionRing& ring = replica.rings[p];
    const int count = executions[routing.partition_device[p]];
    for (int e = 0; e < count; ++e) {
      std::unique_ptr<PartitionExecution> entry = replica.MakeExecution(p);
      for (size_t i = 0; i < routing.owned_slots[p].size(); ++i) {
        const int slot = routing.owned_slots[p][i];
        if (routing.slot_bytes[slot] == 0) continue;
        DeviceManager* device = routing.devices[routing.slot_device[slot]];
        absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
            device->Allocate(routing.slot_bytes[slot]);
        if (!buffer.ok()) {
          return absl::Status(
              buffer.status().code(),
              absl::StrCat("reserving execution ", e, " of partition ",
                           partitions[p].name, " on device ",
                           device->GetDeviceInfo().name, ": ",
                           buffer.status().message()));
        }
        entry->tensors[i].buffer = *std::move(buffer);
      }
      ring.entries.push_back(std::move(entry));
      ring.holders.push_back(0);
    }
  }
  return absl::OkStatus();
}

namespace {

// Whether device `a` suits a logical device planned on `model`, needing
// `want` bytes, better than `b`: one with room first, then one with the
// rates it was planned at (a heterogeneous plan put its heavy stages on the
// fast class), then the least loaded (fewest loaded functions), then the
// most free memory.
bool BetterDevice(const DeviceInfo& a, const DeviceInfo& b, uint64_t want,
                  const DeviceInfo& model) {
  const bool a_fits = a.available_memory_bytes >= want;
  const bool b_fits = b.available_memory_bytes >= want;
  if (a_fits != b_fits) return a_fits;
  auto same_rates = [&model](const DeviceInfo& d) {
    return d.compute_flops == model.compute_flops &&
           d.link_bytes_per_second == model.link_bytes_per_second;
  };
  if (same_rates(a) != same_rates(b)) return same_rates(a);
  if (a_fits && a.loaded_functions != b.loaded_functions) {
    return a.loaded_functions < b.loaded_functions;
  }
  return a.available_memory_bytes > b.available_memory_bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provisioner::Provision(
    const Dag& dag, const CompileOptions& options, int max_executions,
    const DimBounds& bounds) const {
  return Provision(dag, /*release=*/nullptr, options, max_executions, bounds);
}

absl::StatusOr<std::unique_ptr<ExecutableNetwork>>
Provisioner::ProvisionReleasingConstants(Dag* dag,
                                         const CompileOptions& options,
                                         int max_executions,
                                         const DimBounds& bounds) const {
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> network =
      Provision(*dag, dag, options, max_executions, bounds);
  // Also those a failure left (partitions not reached).
  for (DagNode& node : dag->nodes) node.function.initializers.clear();
  return network;
}

absl::StatusOr<std::unique_ptr<ExecutableNetwork>> Provisioner::Provision(
    const Dag& dag, Dag* release, const CompileOptions& options,
    int max_executions, const DimBounds& bounds) const {
  // Partition validates the Dags it makes, but callers may build their
  // own: device counts and logical device indices are checked, with the
  // partitioner's own validator, before anything indexes by them.
  GLINT_RETURN_IF_ERROR(
      ValidateDeviceCount(dag, static_cast<int>(devices_.size())));
  GLINT_ASSIGN_OR_RETURN(std::vector<std::vector<DeviceManager*>> physical,
                         Place(dag));
  auto network = std::make_unique<ExecutableNetwork>();
  network->inputs = dag.inputs;
  network->outputs = dag.outputs;
  network->constant_outputs = dag.constant_outputs;
  for (const auto& replica : physical) {
    std::vector<int>& ids = network->placement.emplace_back();
    for (DeviceManager* d : replica) ids.push_back(d->id());
  }
  // If anything fails, `network` is destroyed on return, evicting every
  // function this call loaded.
  GLINT_RETURN_IF_ERROR(Load(dag, release, physical, options, max_executions,
                             bounds, network.get()));
  return network;
}

absl::StatusOr<std::vector<std::vector<DeviceManager*>>> Provisioner::Place(
    const Dag& dag) const {
  const int logical_count = dag.num_logical_devices;
  const int needed = logical_count * dag.replicas;
  std::vector<std::vector<const DagNode*>> by_logical(logical_count);
  for (const DagNode& node : dag.nodes) {
    by_logical[node.logical_device].push_back(&node);
  }

  // Logical → physical, per replica: distinct capable devices. Among those
  // with room for the logical device's partitions, one with the rates it
  // was planned for, then the least loaded (fewest loaded functions), then
  // the most free memory; if none has room, the one with the most free
  // memory is tried (and Load reports it).
  std::vector<uint64_t> need(logical_count, 0);
  for (const DagNode& node : dag.nodes) {
    need[node.logical_device] += node.memory_bytes;
  }
  std::vector<DeviceInfo> infos;
  for (DeviceManager* d : devices_) infos.push_back(d->GetDeviceInfo());
  auto better = [&infos](int a, int b, uint64_t want,
                        const DeviceInfo& model) {
    return BetterDevice(infos[a], infos[b], want, model);
  };
  std::vector<std::vector<DeviceManager*>> physical(
      dag.replicas, std::vector<DeviceManager*>(logical_count, nullptr));
  std::vector<bool> taken(devices_.size(), false);
  // A replayed placement is kept where it still holds (the device exists,
  // is free in this plan and can run the partitions); elsewhere the usual
  // choice decides.
  auto replayed = [&](int r, int l) -> int {
    if (r >= static_cast<int>(dag.placement.size()) ||
        l >= static_cast<int>(dag.placement[r].size())) {
      return -1;
    }
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (devices_[d]->id() == dag.placement[r][l] && !taken[d] &&
          CanRun(*devices_[d], dag.logical_devices[l], by_logical[l])) {
        return static_cast<int>(d);
      }
    }
    return -1;
  };
  for (int r = 0; r < dag.replicas; ++r) {
    for (int l = 0; l < logical_count; ++l) {
      int best = replayed(r, l);
      if (best >= 0) {
        taken[best] = true;
        physical[r][l] = devices_[best];
        continue;
      }
      for (size_t d = 0; d < devices_.size(); ++d) {
        if (taken[d] ||
            !CanRun(*devices_[d], dag.logical_devices[l], by_logical[l])) {
          continue;
        }
        if (best < 0 || better(static_cast<int>(d), best, need[l],
                               dag.logical_devices[l])) {
          best = static_cast<int>(d);
        }
      }
      if (best < 0) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "no free device of type '", dag.logical_devices[l].type,
            "' can take logical device ", l, " of replica ", r, "; the plan "
            "needs ", needed, " devices"));
      }
      taken[best] = true;
      physical[r][l] = devices_[best];
    }
  }
  return physical;
}

absl::Status Provisioner::Load(
    const Dag& dag, Dag* release,
    const std::vector<std::vector<DeviceManager*>>& physical,
    const CompileOptions& options, int max_executions, const DimBounds& bounds,
    ExecutableNetwork* network) const {
  // Each partition compiles once per backend; replicas share the result.
  std::map<std::pair<size_t, const Backend*>,
           std::shared_ptr<const CompiledFunction>>
      compiled;
  // The compiles each partition still awaits (one per distinct backend its
  // replicas' devices have): at zero, `release` lets go of its constants.
  std::vector<int> compiles_left(dag.nodes.size(), 0);
  // The loads each compiled function still awaits: before its last, it may
  // let each host constant go as soon as it is on the device.
  std::map<std::pair<size_t, const Backend*>, int> loads_left;
  {
    std::set<std::pair<size_t, const Backend*>> needed;
    for (const auto& replica : physical) {
      for (size_t i = 0; i < dag.nodes.size(); ++i) {
        const Backend* backend =
            &replica[dag.nodes[i].logical_device]->backend();
        if (needed.insert({i, backend}).second) ++compiles_left[i];
        ++loads_left[{i, backend}];
      }
    }
  }
  for (int r = 0; r < dag.replicas; ++r) {
    std::vector<ProvisionedPartition> partitions;
    for (size_t i = 0; i < dag.nodes.size(); ++i) {
      const DagNode& node = dag.nodes[i];
      DeviceManager* device = physical[r][node.logical_device];
      std::shared_ptr<const CompiledFunction>& function =
          compiled[{i, &device->backend()}];
      if (function == nullptr) {
        if (release != nullptr && --compiles_left[i] == 0) {
          // The partition's last compile: the backend takes the only
          // reference to its constants and lets each go once its kernel
          // has packed it, so that the weights are never held plain and
          // packed in full at once.
          Graph partition = node.function;
          release->nodes[i].function.initializers.clear();
          GLINT_ASSIGN_OR_RETURN(function, device->backend().CompileConsuming(
                                               std::move(partition), options));
        } else {
          GLINT_ASSIGN_OR_RETURN(
              function, device->backend().Compile(node.function, options));
        }
      }
      if (--loads_left[{i, &device->backend()}] == 0) {
        function->ReleaseHostConstantsOnNextLoad();
      }
      absl::StatusOr<std::unique_ptr<LoadedFunction>> loaded =
          device->Load(function);
      if (!loaded.ok()) {
        return absl::Status(
            loaded.status().code(),
            absl::StrCat("loading partition ", node.name, " of replica ", r,
                         " on device ", device->GetDeviceInfo().name, ": ",
                         loaded.status().message()));
      }
      ProvisionedPartition p;
      p.name = node.name;
      p.device = device;
      p.function = *std::move(loaded);
      p.parents = node.parents;
      p.flops = function->flops();
      p.weight_bytes = function->constant_bytes();
      p.num_nodes = static_cast<int>(node.function.nodes.size());
      partitions.push_back(std::move(p));
    }
    ReplicaRouting routing = Route(partitions, *network);
    AssignOwners(routing);
    auto replica =
        std::make_unique<Replica>(std::move(partitions), std::move(routing));
    SumExecutionBytes(*replica);
    network->replicas.push_back(std::move(replica));
  }
  // Once every replica's weights are in: executions never take the room a
  // later replica's weights need. Held by `network`, so that a failure
  // frees what was reserved.
  GLINT_RETURN_IF_ERROR(ReserveForBounds(bounds, *network));
  int executions = 0;
  for (const auto& replica : network->replicas) {
    if (absl::Status s = ReserveExecutions(*replica, max_executions); !s.ok()) {
      if (network->dim_bounds.empty() || !absl::IsResourceExhausted(s)) {
        return s;
      }
      return absl::Status(s.code(),
                          absl::StrCat(s.message(),
                                       " (at the bounds of its dynamic "
                                       "dims: ",
                                       BoundsText(network->dim_bounds),
                                       "; lower them with max_dims)"));
    }
    executions += replica->capacity();
  }
  network->executions = executions;
  // Every replica is loaded: the devices hold the constants, and the host
  // copies would only double the network's footprint.
  for (const auto& [key, function] : compiled) function->ReleaseHostConstants();
  return absl::OkStatus();
}

}  // namespace glint
