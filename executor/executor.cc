#include "executor/executor.h"

#include <atomic>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "executor/execution_state.h"
#include "core/status_macros.h"

namespace glint {
namespace {

// Everything one run owns until its last stream reports back.
struct RunState {
  const ExecutableNetwork* network = nullptr;
  Replica* replica = nullptr;
  ExecutionRequest request;
  ExecutionCallback done;

  // One stream per device the run touches, leased for the run, with its
  // track number in a trace.
  std::map<DeviceManager*, Stream*> streams;
  std::unique_ptr<ExecutionState> state;  // From the replica's pool.
  std::vector<Tensor> outputs;            // Host copies.

  std::atomic<int> pending_streams{0};

  DeviceTensor* Slot(const std::string& value, DeviceManager* device) {
    return &state->tensors[{value, device}];
  }
};

// Whether the run may go on: fails (and so skips what follows on the
// stream, and everything waiting on it elsewhere) once the run is cancelled
// or past its deadline.
absl::Status CheckRunnable(const ExecutionRequest& request) {
  if (request.shutdown != nullptr && request.shutdown->cancelled()) {
    return absl::UnavailableError("the host manager is shutting down");
  }
  if (request.cancel != nullptr && request.cancel->cancelled()) {
    return absl::CancelledError("the run was cancelled");
  }
  if (absl::Now() > request.deadline) {
    return absl::DeadlineExceededError("the run missed its deadline");
  }
  return absl::OkStatus();
}

// Brackets work enqueued on a stream with two tiny items that time it into
// a trace slice. Does nothing when the run is not traced.
class StreamSlice {
 public:
  StreamSlice(RunTrace* trace, Stream& stream, DeviceManager* device,
              int track, std::string name, std::string category)
      : stream_(stream) {
    if (trace == nullptr) return;
    TraceSlice s;
    s.name = std::move(name);
    s.category = std::move(category);
    s.process = device->id() + 1;
    s.process_name = device->GetDeviceInfo().name;
    s.thread = track;
    s.thread_name = absl::StrCat("stream ", track);
    slice_ = trace->AddSlice(std::move(s));
    TraceSlice* slice = slice_;
    stream_.Enqueue([slice] {
      slice->begin = absl::Now();
      return absl::OkStatus();
    });
  }
  ~StreamSlice() {
    if (slice_ == nullptr) return;
    TraceSlice* slice = slice_;
    stream_.Enqueue([slice] {
      slice->end = absl::Now();
      return absl::OkStatus();
    });
  }
  StreamSlice(const StreamSlice&) = delete;
  StreamSlice& operator=(const StreamSlice&) = delete;

 private:
  Stream& stream_;
  TraceSlice* slice_ = nullptr;
};

// The first failing partition in topological order is where the run broke;
// later ones only inherited the error through events.
absl::Status DescribeFailure(const RunState& run, absl::Status status) {
  for (size_t i = 0; i < run.replica->partitions.size(); ++i) {
    std::shared_ptr<EventMarker> m = run.state->done_events[i]->latest();
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

void ReleaseStreams(RunState& run) {
  for (auto& [device, stream] : run.streams) {
    // Every item of this run has finished, so the stream can be reset for
    // the next run; a stopped device keeps refusing work anyway.
    (void)stream->ClearError();
    stream->SetLaunchCheck(nullptr);
    device->ReleaseStream(stream);
  }
  run.streams.clear();
}

void Finish(std::shared_ptr<RunState> run) {
  absl::Status status;
  for (auto& [device, stream] : run->streams) {
    absl::Status s = stream->status();
    if (!s.ok() && status.ok()) status = s;
  }
  if (!status.ok()) status = DescribeFailure(*run, status);
  if (status.ok()) status = CheckRunnable(run->request);
  ReleaseStreams(*run);
  // A state goes back to the pool, buffers and all, unless this run was its
  // first and failed: then its memory is freed, so a failed run leaves the
  // devices' memory as it found it.
  if (status.ok() || run->state->warm) {
    run->replica->states.Release(std::move(run->state));
  }
  run->state.reset();
  run->replica->outstanding.fetch_sub(1);
  ExecutionCallback done = std::move(run->done);
  if (status.ok()) {
    done(std::move(run->outputs));
  } else {
    done(status);
  }
}

// Ends a run that failed before anything was enqueued.
void FailEarly(std::shared_ptr<RunState> run, absl::Status status) {
  ReleaseStreams(*run);
  if (run->state != nullptr) {
    run->replica->states.Release(std::move(run->state));
  }
  if (run->replica != nullptr) run->replica->outstanding.fetch_sub(1);
  ExecutionCallback done = std::move(run->done);
  done(std::move(status));
}

}  // namespace

void Executor::Run(const ExecutableNetwork& network, ExecutionRequest request,
                   ExecutionCallback done) const {
  const absl::Time enqueue_start = absl::Now();
  auto run = std::make_shared<RunState>();
  run->network = &network;
  run->request = std::move(request);
  run->done = std::move(done);
  run->outputs.resize(run->request.outputs.size());
  RunTrace* trace = run->request.trace.get();

  if (absl::Status s = CheckRunnable(run->request); !s.ok()) {
    FailEarly(run, s);
    return;
  }

  // The replica with the least outstanding work takes the run, among
  // those whose devices are all healthy if any is (a replica on a dead
  // device would fail the run; the others keep serving).
  auto healthy = [](const Replica& r) {
    for (const ProvisionedPartition& p : r.partitions) {
      if (!p.device->healthy()) return false;
    }
    return true;
  };
  Replica* replica = nullptr;
  for (const auto& r : network.replicas) {
    if (!healthy(*r)) continue;
    if (replica == nullptr ||
        r->outstanding.load() < replica->outstanding.load()) {
      replica = r.get();
    }
  }
  if (replica == nullptr) replica = network.replicas.front().get();
  replica->outstanding.fetch_add(1);
  run->replica = replica;
  const std::vector<ProvisionedPartition>& partitions = replica->partitions;

  // Lease a stream on every device the replica uses.
  for (const ProvisionedPartition& p : partitions) {
    if (run->streams.count(p.device) > 0) continue;
    absl::StatusOr<Stream*> stream = p.device->AcquireStream();
    if (!stream.ok()) {
      FailEarly(run, absl::Status(stream.status().code(),
                                  absl::StrCat("partition ", p.name, ": ",
                                               stream.status().message())));
      return;
    }
    // Checked again right before each launch computes: a launch queued
    // behind other runs' work is skipped once this run is cancelled.
    (*stream)->SetLaunchCheck(
        [request = &run->request] { return CheckRunnable(*request); });
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
        network_input.find(name) == network_input.end() &&
        network.constant_outputs.count(name) == 0) {
      FailEarly(run, absl::InternalError(absl::StrCat(
                         "no partition produces output '", name, "'")));
      return;
    }
  }

  run->state = replica->states.Acquire();
  ExecutionState& state = *run->state;
  while (state.done_events.size() < partitions.size()) {
    state.done_events.push_back(std::make_unique<Event>());
  }
  // Track numbers of the streams in a trace: one per device here.
  absl::flat_hash_map<DeviceManager*, int> track;
  for (auto& [device, stream] : run->streams) {
    track.emplace(device, static_cast<int>(track.size()));
  }
  // (value, device) pairs this run has made available on a device.
  absl::flat_hash_set<std::pair<std::string, DeviceManager*>> present;

  for (size_t i = 0; i < partitions.size(); ++i) {
    const ProvisionedPartition& p = partitions[i];
    DeviceManager* device = p.device;
    Stream& stream = *run->streams[device];
    const CompiledFunction& f = p.function->function();
    std::vector<const DeviceTensor*> args;
    for (const ValueInfo& in : f.inputs()) {
      DeviceTensor* slot = run->Slot(in.name, device);
      args.push_back(slot);
      if (!present.insert({in.name, device}).second) continue;
      auto ni = network_input.find(in.name);
      auto pi = producer.find(in.name);
      if (ni != network_input.end()) {
        StreamSlice s(trace, stream, device, track[device],
                      absl::StrCat("copy ", in.name, " host->device"),
                      "copy");
        device->CopyToDevice(stream, &run->request.inputs[ni->second], slot);
      } else if (pi != producer.end()) {
        DeviceManager* source = partitions[pi->second].device;
        if (source == device) continue;  // Same stream: already in order.
        {
          StreamSlice s(trace, stream, device, track[device],
                        absl::StrCat("wait ", partitions[pi->second].name),
                        "wait");
          stream.Wait(*state.done_events[pi->second]);
        }
        StreamSlice s(trace, stream, device, track[device],
                      absl::StrCat("copy ", in.name, " ",
                                   source->GetDeviceInfo().name, "->device"),
                      "copy");
        device->CopyFromPeer(stream, run->Slot(in.name, source), slot);
      }
    }
    std::vector<DeviceTensor*> results;
    for (const ValueInfo& out : f.outputs()) {
      results.push_back(run->Slot(out.name, device));
      present.insert({out.name, device});
    }
    {
      StreamSlice s(trace, stream, device, track[device],
                    absl::StrCat("partition ", p.name), "compute");
      // Checked once the inputs are in, right before the launch: a run
      // cancelled or late by then skips this partition and all after it.
      const ExecutionRequest* request = &run->request;
      stream.Enqueue([request] { return CheckRunnable(*request); });
      device->Launch(stream, *p.function, std::move(args), std::move(results));
    }
    stream.Record(*state.done_events[i]);
  }

  // Outputs go back to the host on the stream of the partition producing
  // them, right behind its launch.
  for (size_t r = 0; r < run->request.outputs.size(); ++r) {
    const ValueInfo& out = network.outputs[run->request.outputs[r]];
    // Outputs no partition computes are answered on the host, as copies:
    // the caller owns what it gets back, and an input may be borrowed.
    auto constant = network.constant_outputs.find(out.name);
    if (constant != network.constant_outputs.end()) {
      run->outputs[r] = constant->second.Clone();
      continue;
    }
    auto ni = network_input.find(out.name);
    if (ni != network_input.end() && producer.find(out.name) == producer.end()) {
      run->outputs[r] = run->request.inputs[ni->second].Clone();
      continue;
    }
    DeviceManager* device = partitions[producer.at(out.name)].device;
    StreamSlice s(trace, *run->streams[device], device, track[device],
                  absl::StrCat("copy ", out.name, " device->host"), "copy");
    device->CopyToHost(*run->streams[device], run->Slot(out.name, device),
                       &run->outputs[r]);
  }

  if (trace != nullptr) {
    TraceSlice enqueue;
    enqueue.name = "enqueue";
    enqueue.category = "host";
    enqueue.process_name = "host";
    enqueue.thread_name = "executor";
    enqueue.begin = enqueue_start;
    enqueue.end = absl::Now();
    trace->AddSlice(std::move(enqueue));
  }

  // A network of no partition (outputs are inputs or constants) has no
  // stream to finish it: it is done already.
  if (run->streams.empty()) {
    Finish(run);
    return;
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
