#include "executor/executor.h"

#include <atomic>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runtime/status_macros.h"

namespace glint {
namespace {

// Everything one run owns until its last stream reports back.
struct RunState {
  const ExecutableNetwork* network = nullptr;
  Replica* replica = nullptr;
  ExecutionRequest request;
  ExecutionCallback done;

  // One stream per device the run touches, leased for the run.
  std::map<DeviceManager*, Stream*> streams;
  // Device-side tensors: (value name, device) → tensor. std::map keeps the
  // addresses stable while work holds pointers to them.
  std::map<std::pair<std::string, DeviceManager*>, DeviceTensor> tensors;
  std::vector<std::unique_ptr<Event>> done_events;  // One per partition.
  std::vector<Tensor> outputs;                      // Host copies.

  std::atomic<int> pending_streams{0};

  DeviceTensor* Slot(const std::string& value, DeviceManager* device) {
    return &tensors[{value, device}];
  }
};

// Whether the run may go on: fails (and so skips what follows on the
// stream, and everything waiting on it elsewhere) once the run is cancelled
// or past its deadline.
absl::Status CheckRunnable(const ExecutionRequest& request) {
  if (request.cancel != nullptr && request.cancel->cancelled()) {
    return absl::CancelledError("the run was cancelled");
  }
  if (absl::Now() > request.deadline) {
    return absl::DeadlineExceededError("the run missed its deadline");
  }
  return absl::OkStatus();
}

// The first failing partition in topological order is where the run broke;
// later ones only inherited the error through events.
absl::Status DescribeFailure(const RunState& run, absl::Status status) {
  for (size_t i = 0; i < run.replica->partitions.size(); ++i) {
    std::shared_ptr<EventMarker> m = run.done_events[i]->latest();
    if (m == nullptr || m->status().ok()) continue;
    const ProvisionedPartition& p = run.replica->partitions[i];
    return absl::Status(
        m->status().code(),
        absl::StrCat("partition ", p.name, " on device ",
                     p.device->GetDeviceInfo().name, ": ",
                     m->status().message()));
  }
  return status;
}

void Finish(std::shared_ptr<RunState> run) {
  absl::Status status;
  for (auto& [device, stream] : run->streams) {
    absl::Status s = stream->status();
    if (!s.ok() && status.ok()) status = s;
  }
  if (!status.ok()) status = DescribeFailure(*run, status);
  if (status.ok()) status = CheckRunnable(run->request);
  for (auto& [device, stream] : run->streams) {
    // Every item of this run has finished, so the stream can be reset for
    // the next run; a stopped device keeps refusing work anyway.
    (void)stream->ClearError();
    device->ReleaseStream(stream);
  }
  run->streams.clear();
  run->tensors.clear();  // Frees the run's device memory.
  run->replica->outstanding.fetch_sub(1);
  ExecutionCallback done = std::move(run->done);
  if (status.ok()) {
    done(std::move(run->outputs));
  } else {
    done(status);
  }
}

}  // namespace

void Executor::Run(const ExecutableNetwork& network, ExecutionRequest request,
                   ExecutionCallback done) const {
  auto run = std::make_shared<RunState>();
  run->network = &network;
  run->request = std::move(request);
  run->done = std::move(done);
  run->outputs.resize(run->request.outputs.size());

  if (absl::Status s = CheckRunnable(run->request); !s.ok()) {
    ExecutionCallback cb = std::move(run->done);
    cb(s);
    return;
  }

  // The replica with the least outstanding work takes the run.
  Replica* replica = network.replicas.front().get();
  for (const auto& r : network.replicas) {
    if (r->outstanding.load() < replica->outstanding.load()) {
      replica = r.get();
    }
  }
  replica->outstanding.fetch_add(1);
  run->replica = replica;
  const std::vector<ProvisionedPartition>& partitions = replica->partitions;

  // Lease a stream on every device the replica uses.
  for (const ProvisionedPartition& p : partitions) {
    if (run->streams.count(p.device) > 0) continue;
    absl::StatusOr<Stream*> stream = p.device->AcquireStream();
    if (!stream.ok()) {
      for (auto& [device, s] : run->streams) device->ReleaseStream(s);
      replica->outstanding.fetch_sub(1);
      ExecutionCallback cb = std::move(run->done);
      cb(absl::Status(stream.status().code(),
                      absl::StrCat("partition ", p.name, ": ",
                                   stream.status().message())));
      return;
    }
    run->streams[p.device] = *stream;
  }

  // Where each value lives: network inputs on the host, partition outputs
  // on the producing partition's device.
  absl::flat_hash_map<std::string, int> producer;  // value → partition.
  for (size_t i = 0; i < partitions.size(); ++i) {
    for (const ValueInfo& out : partitions[i].function->function().outputs()) {
      producer.emplace(out.name, static_cast<int>(i));
    }
  }
  absl::flat_hash_map<std::string, int> network_input;
  for (size_t i = 0; i < network.inputs.size(); ++i) {
    network_input.emplace(network.inputs[i].name, static_cast<int>(i));
  }

  // Every output must come from somewhere; a plan that loses one is a bug,
  // reported rather than crashed on.
  for (int index : run->request.outputs) {
    const std::string& name = network.outputs[index].name;
    if (producer.find(name) == producer.end() &&
        network_input.find(name) == network_input.end()) {
      for (auto& [device, s] : run->streams) device->ReleaseStream(s);
      replica->outstanding.fetch_sub(1);
      ExecutionCallback cb = std::move(run->done);
      cb(absl::InternalError(
          absl::StrCat("no partition produces output '", name, "'")));
      return;
    }
  }

  for (size_t i = 0; i < partitions.size(); ++i) {
    run->done_events.push_back(std::make_unique<Event>());
  }
  for (size_t i = 0; i < partitions.size(); ++i) {
    const ProvisionedPartition& p = partitions[i];
    DeviceManager* device = p.device;
    Stream& stream = *run->streams[device];
    const CompiledFunction& f = p.function->function();
    std::vector<const DeviceTensor*> args;
    for (const ValueInfo& in : f.inputs()) {
      DeviceTensor* slot = run->Slot(in.name, device);
      auto ni = network_input.find(in.name);
      auto pi = producer.find(in.name);
      if (ni != network_input.end()) {
        if (slot->buffer == nullptr && slot->dtype == DType::kUndefined) {
          slot->dtype = in.dtype;  // Marks the copy as enqueued.
          device->CopyToDevice(stream, &run->request.inputs[ni->second],
                               slot);
        }
      } else if (pi != producer.end()) {
        DeviceManager* source = partitions[pi->second].device;
        if (source != device && slot->dtype == DType::kUndefined) {
          slot->dtype = in.dtype;
          stream.Wait(*run->done_events[pi->second]);
          device->CopyFromPeer(stream, run->Slot(in.name, source), slot);
        }
      }
      args.push_back(slot);
    }
    std::vector<DeviceTensor*> results;
    for (const ValueInfo& out : f.outputs()) {
      results.push_back(run->Slot(out.name, device));
    }
    // Checked once the inputs are in, right before the launch: a run
    // cancelled or late by then skips this partition and all after it.
    const ExecutionRequest* request = &run->request;
    stream.Enqueue([request] { return CheckRunnable(*request); });
    device->Launch(stream, *p.function, std::move(args), std::move(results));
    stream.Record(*run->done_events[i]);
  }

  // Outputs go back to the host on the stream of the partition producing
  // them, right behind its launch.
  for (size_t r = 0; r < run->request.outputs.size(); ++r) {
    const ValueInfo& out = network.outputs[run->request.outputs[r]];
    auto ni = network_input.find(out.name);
    if (ni != network_input.end() && producer.find(out.name) == producer.end()) {
      run->outputs[r] = run->request.inputs[ni->second];
      continue;
    }
    DeviceManager* device = partitions[producer.at(out.name)].device;
    device->CopyToHost(*run->streams[device], run->Slot(out.name, device),
                       &run->outputs[r]);
  }

  // The last stream to drain finishes the run.
  run->pending_streams.store(static_cast<int>(run->streams.size()));
  std::vector<Stream*> streams;
  for (auto& [device, stream] : run->streams) streams.push_back(stream);
  for (Stream* stream : streams) {
    stream->OnDone([run](absl::Status) {
      if (run->pending_streams.fetch_sub(1) == 1) Finish(run);
    });
  }
}

}  // namespace glint
