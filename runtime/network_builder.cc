#include "runtime/network_builder.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "partitioner/partitioner.h"
#include "provisioner/provisioner.h"
#include "runtime/input_binding.h"

namespace glint {
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
    pi.execution_bytes = p.execution_bytes;
    pi.launch_bytes = p.launch_bytes;
    pi.unsized_values = p.unsized_values;
    pi.executions = static_cast<int>(network.replicas.front()->executions(i));
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

}  // namespace

std::vector<int> CompiledBatchSizes(const DynamicBatching& batching) {
  std::vector<int> sizes = batching.preferred_batch_sizes;
  sizes.push_back(batching.max_batch_size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

NetworkBuilder::NetworkBuilder(std::vector<DeviceManager*> devices,
                               InferenceRunner run_onnx_inference,
                               int max_executions)
    : devices_(std::move(devices)),
      run_onnx_inference_(std::move(run_onnx_inference)),
      max_executions_(max_executions) {}

std::vector<DeviceInfo> NetworkBuilder::HealthyDevices() const {
  std::vector<DeviceInfo> healthy;
  for (const DeviceManager* d : devices_) {
    DeviceInfo info = d->GetDeviceInfo();
    if (info.unhealthy_reason.empty()) healthy.push_back(std::move(info));
  }
  return healthy;
}

size_t NetworkBuilder::HealthyCount() const {
  size_t n = 0;
  for (const DeviceManager* d : devices_) n += d->healthy() ? 1 : 0;
  return n;
}

absl::StatusOr<Graph> NetworkBuilder::Import(const ModelBytes& onnx_model,
                                             const AddNetworkOptions& options,
                                             const CachedPlan* types,
                                             std::string* inferred) const {
  ImportOptions import;
  import.input_shapes = options.input_shapes;
  // A batching network is compiled at its largest batch (see batcher.h).
  import.batch_size = options.batching.max_batch_size;
  import.run_inference = run_onnx_inference_;
  if (types != nullptr) {
    // Replayed: neither a helper process nor ONNX's inference runs. The
    // importer still checks that the reply fits the model.
    import.run_inference = [types](const std::string&) {
      return absl::StatusOr<std::string>(types->inferred_types);
    };
}
else if (inferred != nullptr) {
  // Kept for the cache: the same step, its reply recorded.
  InferenceRunner run = run_onnx_inference_;
  import.run_inference = [ run, inferred ](const std::string& request) {
    absl::StatusOr<std::string> reply =
        run ? run(request) : RunOnnxInference(request);
  if (reply.ok()) *inferred = *reply;
  return reply;
};
  }
  import.is_supported = [this](absl::string_view op) {
    for (const DeviceManager* d : devices_) {
      if (d->backend().IsOpSupported(op)) return true;
    }
    return false;
  };
  // Parsed, the model's bytes are not read again by this build; a mapped
  // file's pages need not stay beside what is parsed from them.
  import.read_past = [&onnx_model](size_t offset, size_t length) {
    onnx_model.EvictRange(offset, length);
  }
  ;
  GLINT_ASSIGN_OR_RETURN(Graph graph,
                         ImportOnnxModel(onnx_model.view(), import));
  if (const int batch = options.batching.max_batch_size; batch > 0) {
    // Every output must carry the batch too, to be split back; its other
    // dims may depend on the run's (a sequence length).
    if (graph.inputs.empty()) {
      return absl::InvalidArgumentError(
          "dynamic batching needs a network with inputs");
    }
    for (const ValueInfo& out : graph.outputs) {
      if (out.shape.rank() < 1 || out.shape.dim(0) != batch) {
        return absl::InvalidArgumentError(absl::StrCat(
            "output '", Clip(out.name), "' has shape ", out.shape.ToString(),
            " at max_batch_size ", batch,
            ": dynamic batching needs the batch dimension first in every "
            "input and output"));
      }
    }
  }
  return graph;
}

absl::StatusOr<std::unique_ptr<ExecutableNetwork>> NetworkBuilder::Build(
    absl::string_view name, const ModelBytes& onnx_model,
    const AddNetworkOptions& options, NetworkInfo* info,
    const CachedPlan* types, const CachedPlan* plan, CachedPlan* made) const {
  std::string inferred;
  const absl::Time start = absl::Now();
  GLINT_ASSIGN_OR_RETURN(
      Graph graph,
      Import(onnx_model, options, types, made != nullptr ? &inferred : nullptr));
  const absl::Time imported = absl::Now();
  GLINT_ASSIGN_OR_RETURN(std::vector<DynamicDim> dynamic_dims,
                         ResolveDynamicDims(graph.inputs, options.max_dims));
  // Only healthy devices are planned for and placed on.
  std::vector<DeviceInfo> infos;
  std::vector<DeviceManager*> devices;
  for (DeviceManager* d : devices_) {
    DeviceInfo info = d->GetDeviceInfo();
    if (!info.unhealthy_reason.empty()) continue;
    infos.push_back(std::move(info));
    devices.push_back(d);
  }
  if (devices.empty()) {
    return absl::UnavailableError("no healthy device is left");
  }
  PartitionOptions partition = options.partition;
  if (plan != nullptr) partition.fixed_assignment = plan->assignment;
  GLINT_ASSIGN_OR_RETURN(Dag dag, Partition(graph, infos, partition));
  // The partitions share the constants' bytes; the whole graph is done
  // with. Provision then lets each partition's go once compiled: the model's
  // weights are not held beside the compiled and loaded ones.
  graph = Graph();
  if (plan != nullptr) {
    dag.strategy = plan->strategy;
    dag.placement = plan->placement;
  }
  const absl::Time planned = absl::Now();
  // Memory is reserved for the named dims' bounds; those the options do
  // not give may be lowered until a run at them fits.
  DimBounds bounds;
  for (const DynamicDim& d : dynamic_dims) {
    if (d.name.empty()) continue;
    bounds.max[d.name] = d.max;
    if (options.max_dims.count(d.Key()) == 0) bounds.defaulted.insert(d.name);
    if (d.axis == 0) bounds.leading.insert(d.name);
  }
  GLINT_ASSIGN_OR_RETURN(
      std::unique_ptr<ExecutableNetwork> executable,
      Provisioner(std::move(devices))
          .ProvisionReleasingConstants(&dag, CompileOptions{options.precision},
                                       max_executions_, bounds));
  for (DynamicDim& d : dynamic_dims) {
    auto it = executable->dim_bounds.find(d.name);
    if (!d.name.empty() && it != executable->dim_bounds.end()) {
      d.max = it->second;
    }
  }
  if (!executable->dim_bounds.empty()) {
    std::vector<std::string> bounds_text;
    for (const auto& [dim, max] : executable->dim_bounds) {
      bounds_text.push_back(absl::StrCat(dim, "=", max));
    }
    GLINT_LOG_INFO("network '{}': device memory reserved for its bounds {}",
                   Clip(name), Clip(absl::StrJoin(bounds_text, ", ")));
  }
  if (!executable->unreserved.empty()) {
    GLINT_LOG_INFO(
        "network '{}': {} values of run-time shape have no memory reserved "
        "(no bound sizes them), e.g. {}",
        Clip(name), executable->unreserved.size(),
        Clip(executable->unreserved.front()));
  }
  *info = DescribeNetwork(name, dag, *executable);
  info->dynamic_dims = std::move(dynamic_dims);
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

absl::StatusOr<std::map<int, std::shared_ptr<ExecutableNetwork>>>
NetworkBuilder::BuildSmaller(absl::string_view name,
                             const ModelBytes& onnx_model,
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

}  // namespace glint
