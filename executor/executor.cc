#include "executor/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace glint {
namespace {

// The phases RunTimings sums; kNone: between phases (waiting for another
// device's event, or done).
enum class Phase { kNone = -1, kInput = 0, kCompute = 1, kOutput = 2 };

// One stream's phase clock for a timed run: the phase open since
// `since_ns` and what each phase has summed so far. Touched only by that
// stream's host callbacks, which run one after another.
struct StreamClock {
  Phase open = Phase::kNone;
  int partition = -1;  // The launch being timed, while kCompute is open.
  int64_t since_ns = 0;
  int64_t phase_ns[3] = {0, 0, 0};
};

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Everything one run owns until its last stream reports back. Touched by
// the thread in Executor::Run until ArmCompletion hands it to the streams,
// then only by the callback of the last stream to drain (pending_streams
// decides which).
struct RunState {
  const ExecutableNetwork* network = nullptr;
  // Set once picked; the run counts as outstanding on it until it ends.
  Replica* replica = nullptr;
  ExecutionRequest request;
  ExecutionCallback done;

  // The run's view of a shared stream on every device of the replica, in
  // ReplicaRouting::devices order (its index is its track in a trace): the
  // run's own error scope on streams all runs share.
  std::vector<std::unique_ptr<Stream>> streams;
  // Its ticket on the replica and, per partition, the ring entry it holds
  // (TakeEntries), and the done-event version it recorded there (kept: a
  // later run re-records the entry's event).
  uint64_t ticket = 0;
  std::vector<PartitionExecution*> entries;
  std::vector<size_t> entry_index;  // In each partition's ring.
  std::vector<std::shared_ptr<EventMarker>> done_markers;
  std::vector<Tensor> outputs;  // Host copies.

  std::atomic<int> pending_streams{0};

  // Phase timing, when request.timings is set: a clock per stream (see
  // StreamClock), each partition's launch time (written only by its
  // stream's callbacks), and per stream the phase its enqueued work leaves
  // open (the enqueueing thread's own bookkeeping). Finish sums them once
  // every stream has drained.
  std::vector<StreamClock> clocks;
  std::vector<int64_t> partition_ns;
  std::vector<Phase> enqueued_phase;

  // A profiled run's tracks, one per view of a device's stream (indexed as
  // `streams`), which its launches record their node slices on; empty when
  // the run is not profiled. Lives until the run finishes, after the last
  // launch.
  std::vector<TraceTrack> profile_tracks;

  bool timed() const { return request.timings != nullptr; }
  const ReplicaRouting& routing() const { return replica->routing; }
  DeviceTensor* Slot(int slot) {
    const ReplicaRouting& r = routing();
    return &entries[r.slot_owner[slot]]->tensors[r.slot_index[slot]];
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

// The track of stream `device`'s slices (see StreamSlice).
void SetTrack(const RunState& run, int device, int* process,
              std::string* process_name, int* thread,
              std::string* thread_name) {
  DeviceManager* d = run.routing().devices[device];
  *process = d->id() + 1;
  *process_name = d->GetDeviceInfo().name;
  *thread = device;
  *thread_name = absl::StrCat("stream ", device);
}

// Brackets work enqueued on one of the run's streams with two host
// callbacks that time it into a trace slice. Does nothing when the run is
// not traced; the slice's name is only built when it is, so untraced runs
// pay no string formatting.
class StreamSlice {
 public:
  StreamSlice(RunState& run, int device, absl::FunctionRef<std::string()> name,
              const char* category)
      : stream_(*run.streams[device]) {
    RunTrace* trace = run.request.trace.get();
    if (trace == nullptr) return;
    TraceSlice s;
    s.name = name();
    s.category = category;
    SetTrack(run, device, &s.process, &s.process_name, &s.thread,
             &s.thread_name);
    slice_ = trace->AddSlice(std::move(s));
    TraceSlice* slice = slice_;
    stream_.EnqueueHostCallback([slice] {
      slice->begin = absl::Now();
      return absl::OkStatus();
    });
  }
  ~StreamSlice() {
    if (slice_ == nullptr) return;
    TraceSlice* slice = slice_;
    stream_.EnqueueHostCallback([slice] {
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

// On stream `d`'s clock: ends the open phase (adding its time) and opens
// `phase` (for kCompute, the launch of `partition`). In a host callback.
void Tick(RunState& run, int d, Phase phase, int partition = -1) {
  StreamClock& clock = run.clocks[d];
  const int64_t now = SteadyNowNs();
  if (clock.open != Phase::kNone) {
    const int64_t elapsed = now - clock.since_ns;
    clock.phase_ns[static_cast<int>(clock.open)] += elapsed;
    if (clock.open == Phase::kCompute) {
      run.partition_ns[clock.partition] += elapsed;
    }
  }
  clock.open = phase;
  clock.partition = partition;
  clock.since_ns = now;
}

// Enqueues a Tick to `phase` on stream `d` of a timed run: what is
// enqueued next on it is timed as `phase`. Free for untimed runs, and
// when nothing is open to end.
void MarkPhase(RunState& run, int d, Phase phase) {
  if (!run.timed()) return;
  if (phase == Phase::kNone && run.enqueued_phase[d] == Phase::kNone) return;
  run.enqueued_phase[d] = phase;
  run.streams[d]->EnqueueHostCallback([run = &run, d, phase] {
    Tick(*run, d, phase);
    return absl::OkStatus();
  });
}

// Hands a timed run's clocks to the caller's RunTimings.
void ReportTimings(RunState& run) {
  if (!run.timed() || run.clocks.empty()) return;
  RunTimings& timings = *run.request.timings;
  timings = RunTimings();
  for (const StreamClock& clock : run.clocks) {
    timings.input_ns += clock.phase_ns[static_cast<int>(Phase::kInput)];
    timings.compute_ns += clock.phase_ns[static_cast<int>(Phase::kCompute)];
    timings.output_ns += clock.phase_ns[static_cast<int>(Phase::kOutput)];
  }
  timings.partition_ns = run.partition_ns;
  for (const ProvisionedPartition& p : run.replica->partitions) {
    timings.partition_device.push_back(p.device->id());
  }
}

// The first failing partition in topological order is where the run broke;
// later ones only inherited the error through events.
absl::Status DescribeFailure(const RunState& run, absl::Status status) {
  for (size_t i = 0; i < run.done_markers.size(); ++i) {
    const std::shared_ptr<EventMarker>& m = run.done_markers[i];
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

// Every item of the run has finished (or none was enqueued): its views go.
void CloseStreams(RunState& run) { run.streams.clear(); }

// Undoes PickReplica's counts (step 1) once the run has ended.
void ReleaseReplica(Replica& replica) {
  for (DeviceManager* device : replica.routing.devices) {
    device->load().RemoveRun();
  }
  replica.outstanding.fetch_sub(1);
}

// A kept buffer may exceed what its last run used by this much (and twice
// that run's bytes) before the run's end frees it.
constexpr size_t kMaxSlackBytes = size_t{64} << 10;

// Once the run has ended: the buffers of the entries it held that are far
// larger than it used (kept from a larger request of a network with
// dynamic dims) are freed, so that one large request does not pin device
// memory for ever; so are, after a failed run, the buffers no reservation
// sized, so that a failed run leaves the devices' memory as it found it.
// Only entries no later run has taken since: one that has is that run's
// now (it reuses or frees the buffers as it needs).
void TrimEntries(RunState& run, bool failed) {
  if (run.entries.empty()) return;
  Replica& replica = *run.replica;
  const ReplicaRouting& routing = replica.routing;
  absl::MutexLock lock(&replica.ring_mu);
  for (size_t p = 0; p < run.entries.size(); ++p) {
    const PartitionRing& ring = replica.rings[p];
    const size_t e = run.entry_index[p];
    if (ring.holders[e] != run.ticket) continue;
    PartitionExecution& entry = *ring.entries[e];
    for (size_t i = 0; i < entry.tensors.size(); ++i) {
      DeviceTensor& t = entry.tensors[i];
      if (t.buffer == nullptr) continue;
      const size_t reserved = routing.slot_bytes[routing.owned_slots[p][i]];
      if (reserved > 0 && t.buffer->size() == reserved) continue;
      const size_t used = t.shape.IsStatic() ? t.num_bytes() : 0;
      if (failed || t.buffer->size() > 2 * used + kMaxSlackBytes) {
        t.buffer.reset();
      }
    }
  }
}

void Finish(std::shared_ptr<RunState> run) {
  absl::Status status;
  for (const std::unique_ptr<Stream>& stream : run->streams) {
    absl::Status s = stream->status();
    if (!s.ok() && status.ok()) status = s;
  }
  if (!status.ok()) status = DescribeFailure(*run, status);
  if (status.ok()) status = CheckRunnable(run->request);
  ReportTimings(*run);
  CloseStreams(*run);
  TrimEntries(*run, !status.ok());
  ReleaseReplica(*run->replica);
  ExecutionCallback done = std::move(run->done);
  if (status.ok()) {
    done(std::move(run->outputs));
  } else {
    done(status);
  }
}

// Ends a run that failed before anything was enqueued.
void FailEarly(std::shared_ptr<RunState> run, absl::Status status) {
  CloseStreams(*run);
  if (run->replica != nullptr) ReleaseReplica(*run->replica);
  ExecutionCallback done = std::move(run->done);
  done(std::move(status));
}

// Placement tickets: each pick takes the next one and stamps it on the
// devices it placed the run on (DeviceLoad::last_placed), so that among
// equally loaded replicas the one whose devices were placed on least
// recently takes the run: idle runs take turns over the devices, whatever
// network or plan they belong to.
std::atomic<uint64_t> next_placement_ticket{1};

// How busy a replica's devices are, as PickReplica compares them: the most
// runs on any of its devices (a run of a pipeline waits for its busiest
// stage), then their sum, then the latest placement on any of them.
struct ReplicaLoad {
  int max_runs = 0;
  int sum_runs = 0;
  uint64_t last_placed = 0;

  bool LessThan(const ReplicaLoad& other) const {
    if (max_runs != other.max_runs) return max_runs < other.max_runs;
    if (sum_runs != other.sum_runs) return sum_runs < other.sum_runs;
    return last_placed < other.last_placed;
  }
};

ReplicaLoad LoadOf(const Replica& replica) {
  ReplicaLoad load;
  for (const DeviceManager* device : replica.routing.devices) {
    const int runs = device->load().active_runs();
    load.max_runs = std::max(load.max_runs, runs);
    load.sum_runs += runs;
    load.last_placed = std::max(load.last_placed, device->load().last_placed());
  }
  return load;
}

// Step 1: the replica whose devices are least loaded takes the run (see
// ReplicaLoad), among those whose devices are all healthy if any is (a
// replica on a dead device would fail the run; the others keep serving),
// and among those the ones with fewer runs than entries to hold them
// (Replica::capacity) first: admission lets no more runs in than the
// network's replicas have together, so an admitted run finds room without
// waiting behind another run when any replica has it. Load is counted per
// device over every network and plan the executor runs there
// (DeviceManager::load), not per replica: with dynamic batching each batch
// size is a network of its own on the same devices. The run counts on the
// replica and its devices from here on (ReleaseReplica). Atomics only: two
// picks at once may see the same loads and choose alike.
void PickReplica(RunState& run) {
  const ExecutableNetwork& network = *run.network;
  auto healthy = [](const Replica& r) {
    for (const ProvisionedPartition& p : r.partitions) {
      if (!p.device->healthy()) return false;
    }
    return true;
  };
  std::vector<std::pair<ReplicaLoad, Replica*>> candidates;
  for (const auto& r : network.replicas) {
    if (healthy(*r)) candidates.emplace_back(LoadOf(*r), r.get());
  }
  if (candidates.empty()) {
    candidates.emplace_back(ReplicaLoad(), network.replicas.front().get());
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) {
                     return a.first.LessThan(b.first);
                   });
  Replica* replica = candidates.front().second;
  for (const auto& [load, r] : candidates) {
    if (r->outstanding.load() < r->capacity()) {
      replica = r;
      break;
    }
  }
  const uint64_t ticket = next_placement_ticket.fetch_add(1);
  for (DeviceManager* device : replica->routing.devices) {
    device->load().AddRun(ticket);
  }
  replica->outstanding.fetch_add(1);
  run.replica = replica;
}

// Step 2: on every device the replica uses, a view of the device's shared
// stream, with the run's priority. Runs share the stream (so a device's
// threads do not grow with the runs in flight) but each view is an error
// scope of its own, so one run's failure never poisons another's. Each
// view checks, right before each of its launches computes and each of its
// copies moves bytes, that the run is still wanted: work queued behind
// other runs' is skipped once this run is cancelled, late or shut down.
absl::Status OpenStreams(RunState& run) {
  const ReplicaRouting& routing = run.routing();
  run.streams.reserve(routing.devices.size());
  for (size_t d = 0; d < routing.devices.size(); ++d) {
    SharedStreamOptions options;
    options.priority = run.request.priority;
    options.work_check = [request = &run.request] {
      return CheckRunnable(*request);
    };
    absl::StatusOr<std::unique_ptr<Stream>> stream =
        routing.devices[d]->OpenSharedStream(std::move(options));
    if (!stream.ok()) {
      // Named after the first partition on the device, which needed it.
      size_t first = 0;
      while (routing.partition_device[first] != static_cast<int>(d)) ++first;
      return absl::Status(
          stream.status().code(),
          absl::StrCat("partition ", run.replica->partitions[first].name, ": ",
                       stream.status().message()));
    }
    // Nothing of the run starts before ArmCompletion: the device wakes once
    // for the run, not once per item enqueued.
    (*stream)->BeginBatch();
    run.streams.push_back(*std::move(stream));
  }
  return absl::OkStatus();
}

// Every requested output must come from somewhere; a plan that loses one
// is a bug, reported rather than crashed on.
absl::Status CheckOutputsRouted(const RunState& run) {
  for (int index : run.request.outputs) {
    if (run.routing().outputs[index].source == OutputRoute::Source::kNone) {
      return absl::InternalError(absl::StrCat("no partition produces output '",
                                              run.network->outputs[index].name,
                                              "'"));
    }
  }
  return absl::OkStatus();
}

// A timed run's clocks, one per view of a device's stream, all between
// phases.
void StartClocks(RunState& run) {
  if (!run.timed()) return;
  run.clocks.assign(run.streams.size(), StreamClock());
  run.enqueued_phase.assign(run.streams.size(), Phase::kNone);
  run.partition_ns.assign(run.replica->partitions.size(), 0);
}

// A profiled run's tracks for its launches' node slices: each stream's
// own, so that they nest under its partition slices.
void StartProfile(RunState& run) {
  if (!run.request.profile || run.request.trace == nullptr) return;
  run.profile_tracks.resize(run.streams.size());
  for (size_t d = 0; d < run.streams.size(); ++d) {
    TraceTrack& track = run.profile_tracks[d];
    track.trace = run.request.trace.get();
    SetTrack(run, static_cast<int>(d), &track.process, &track.process_name,
             &track.thread, &track.thread_name);
  }
}

// Ends the phase each stream's work leaves open, behind all of it.
void StopClocks(RunState& run) {
  for (size_t d = 0; d < run.streams.size(); ++d) {
    MarkPhase(run, static_cast<int>(d), Phase::kNone);
  }
}

// Whether the last holder of a ring entry is done with it on every device
// (or it never had one).
bool Idle(const PartitionExecution& entry) {
  for (const std::unique_ptr<Event>& released : entry.released) {
    if (!released->Query()) return false;
  }
  return true;
}

// The entry of `ring` a new run takes: an idle one if any, the one used
// last among them (its buffers are warm, and the others stay untouched
// when runs come one at a time); else the one whose holder came first,
// which is likely to be done first. Any choice is safe: the holder is an
// earlier run, already enqueued.
size_t ChooseEntry(const PartitionRing& ring) {
  size_t best = 0;
  bool best_idle = Idle(*ring.entries[0]);
  for (size_t e = 1; e < ring.entries.size(); ++e) {
    const bool idle = Idle(*ring.entries[e]);
    if (idle != best_idle) {
      if (idle) best = e, best_idle = true;
      continue;
    }
    if (idle ? ring.holders[e] > ring.holders[best]
             : ring.holders[e] < ring.holders[best]) {
      best = e;
    }
  }
  return best;
}

// Step 3, first: the run's ticket on its replica and, for each partition,
// the ring entry it takes (Replica::rings). Under ring_mu, with steps 3 and
// 4, so that tickets follow enqueue order: every entry's previous holder
// has enqueued all its work, and its events, before this run waits on
// them.
void TakeEntries(Replica& replica, RunState& run)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(replica.ring_mu) {
  run.ticket = replica.next_ticket++;
  run.entries.reserve(replica.rings.size());
  run.entry_index.reserve(replica.rings.size());
  for (PartitionRing& ring : replica.rings) {
    const size_t e = ChooseEntry(ring);
    ring.holders[e] = run.ticket;
    run.entries.push_back(ring.entries[e].get());
    run.entry_index.push_back(e);
  }
  run.done_markers.resize(replica.rings.size());
}

// Before partition `i` writes into its entry (on its device's view `d`):
// the entry's previous holder has finished every use of it, on every
// device, whether that run succeeded or not (WaitForCompletion takes no
// error). Its last uses recorded `released` behind them (Release); a
// never-recorded or completed event (a fresh entry, one its holder is done
// with) costs no item.
void AwaitEntry(RunState& run, size_t i, int d) {
  Stream& stream = *run.streams[d];
  bool waiting = false;
  for (const std::unique_ptr<Event>& released : run.entries[i]->released) {
    if (released->Query()) continue;
    if (!waiting) MarkPhase(run, d, Phase::kNone);  // Counts in no phase.
    waiting = true;
    stream.WaitForCompletion(*released);
  }
}

// After work on view `d` that used partition `owner`'s entry: the entry's
// release on that device follows it (re-recording keeps only the last).
void Release(RunState& run, int owner, int d) {
  run.streams[d]->Record(*run.entries[owner]->released[d]);
}

// Step 3: the whole DAG, in topological order, following the replica's
// routing: for each partition, on its device's stream, copy network inputs
// in or wait for a producer on another device and peer-copy its output in;
// check the run is still wanted; launch; record the done-event.
// Topological order makes every Wait refer to a producer's done-event
// recorded earlier in this call, so that each wait completes.
void EnqueuePartitions(RunState& run) {
  const ReplicaRouting& routing = run.routing();
  const std::vector<ProvisionedPartition>& partitions = run.replica->partitions;
  for (size_t i = 0; i < partitions.size(); ++i) {
    const ProvisionedPartition& p = partitions[i];
    const int d = routing.partition_device[i];
    DeviceManager* device = p.device;
    Stream& stream = *run.streams[d];
    AwaitEntry(run, i, d);
    // The entries this partition's launch uses on `d` (its own, and those
    // of earlier partitions there whose values it reads): released behind
    // it.
    absl::InlinedVector<int, 4> used = {static_cast<int>(i)};
    auto use = [&](int slot) {
      const int owner = routing.slot_owner[slot];
      if (std::find(used.begin(), used.end(), owner) == used.end()) {
        used.push_back(owner);
      }
    };
    std::vector<const DeviceTensor*> args;
    args.reserve(routing.inputs[i].size());
    for (const InputRoute& in : routing.inputs[i]) {
      DeviceTensor* tensor = run.Slot(in.tensor);
      args.push_back(tensor);
      use(in.tensor);
      switch (in.source) {
        case InputRoute::Source::kOnDevice:
          break;
        case InputRoute::Source::kNetworkInput: {
          MarkPhase(run, d, Phase::kInput);
          StreamSlice s(
              run, d,
              [&] { return absl::StrCat("copy ", in.value, " host->device"); },
              "copy");
          device->CopyToDevice(stream, &run.request.inputs[in.network_input],
                               tensor);
          break;
        }
        case InputRoute::Source::kPeer: {
          const ProvisionedPartition& producer = partitions[in.producer];
          MarkPhase(run, d, Phase::kNone);  // Waiting counts in no phase.
          {
            StreamSlice s(
                run, d, [&] { return absl::StrCat("wait ", producer.name); },
                "wait");
            stream.Wait(run.entries[in.producer]->done);
          }
          MarkPhase(run, d, Phase::kInput);
          StreamSlice s(
              run, d,
              [&] {
                return absl::StrCat("copy ", in.value, " ",
                                    producer.device->GetDeviceInfo().name,
                                    "->device");
              },
              "copy");
          device->CopyFromPeer(stream, run.Slot(in.producer_tensor), tensor);
          // The copy is the producer's entry's last use here: a pipeline's
          // stage is free for the next run once its results have moved on.
          Release(run, routing.slot_owner[in.producer_tensor], d);
          break;
        }
      }
    }
    std::vector<DeviceTensor*> results;
    results.reserve(routing.results[i].size());
    for (int slot : routing.results[i]) results.push_back(run.Slot(slot));
    {
      StreamSlice s(
          run, d, [&] { return absl::StrCat("partition ", p.name); },
          "compute");
      // The view's work check (OpenStreams) runs right before the launch
      // computes: a run cancelled or late by then skips this partition and
      // all after it. A timed run's launch is timed from here.
      if (run.timed()) {
        run.enqueued_phase[d] = Phase::kCompute;
        stream.EnqueueHostCallback([run = &run, d, i] {
          Tick(*run, d, Phase::kCompute, static_cast<int>(i));
          return absl::OkStatus();
        });
      }
      LaunchOptions launch;
      if (!run.profile_tracks.empty()) {
        launch.profile = &run.profile_tracks[d];
      }
      device->Launch(stream, *p.function, std::move(args), std::move(results),
                     launch);
    }
    PartitionExecution& entry = *run.entries[i];
    stream.Record(entry.done);
    run.done_markers[i] = entry.done.latest();
    for (int owner : used) Release(run, owner, d);
  }
}

// Step 4: requested outputs go back to the host on the stream of the
// partition producing them, right behind its launch. Outputs no partition
// computes are answered on the host, as copies: the caller owns what it
// gets back, and an input may be borrowed.
void EnqueueOutputs(RunState& run) {
  const ReplicaRouting& routing = run.routing();
  for (size_t r = 0; r < run.request.outputs.size(); ++r) {
    const int index = run.request.outputs[r];
    const OutputRoute& route = routing.outputs[index];
    switch (route.source) {
      case OutputRoute::Source::kConstant:
        run.outputs[r] =
            run.network->constant_outputs.at(run.network->outputs[index].name)
                .Clone();
        break;
      case OutputRoute::Source::kNetworkInput:
        run.outputs[r] = run.request.inputs[route.network_input].Clone();
        break;
      case OutputRoute::Source::kPartition: {
        const int d = routing.partition_device[route.producer];
        DeviceManager* device = routing.devices[d];
        MarkPhase(run, d, Phase::kOutput);
        StreamSlice s(
            run, d,
            [&] {
              return absl::StrCat("copy ", run.network->outputs[index].name,
                                  " device->host");
            },
            "copy");
        if (r < run.request.output_destinations.size() &&
            run.request.output_destinations[r].valid()) {
          device->CopyToHostInto(*run.streams[d], run.Slot(route.tensor),
                                 run.request.output_destinations[r],
                                 &run.outputs[r]);
        } else {
          device->CopyToHost(*run.streams[d], run.Slot(route.tensor),
                             &run.outputs[r]);
        }
        Release(run, routing.slot_owner[route.tensor], d);
        break;
      }
      case OutputRoute::Source::kNone:
        break;  // CheckOutputsRouted refused the run.
    }
  }
}

// The host's part of a traced run: from Run's call to the last enqueue.
void TraceEnqueue(const RunState& run, absl::Time begin) {
  RunTrace* trace = run.request.trace.get();
  if (trace == nullptr) return;
  TraceSlice enqueue;
  enqueue.name = "enqueue";
  enqueue.category = "host";
  enqueue.process_name = "host";
  enqueue.thread_name = "executor";
  enqueue.begin = begin;
  enqueue.end = absl::Now();
  trace->AddSlice(std::move(enqueue));
}

// Step 5: the last stream to drain finishes the run.
void ArmCompletion(std::shared_ptr<RunState> run) {
  // A network of no partition (outputs are inputs or constants) has no
  // stream to finish it: it is done already.
  if (run->streams.empty()) {
    Finish(std::move(run));
    return;
  }
  // One count per stream plus one held by this thread until its last
  // EndBatch: a view on a stopped stream runs its OnDone callback at once
  // (inline or on another thread), so the streams' callbacks alone could
  // finish the run, and close the views, before EndBatch reaches them.
  run->pending_streams.store(static_cast<int>(run->streams.size()) + 1);
  std::vector<Stream*> streams;
  for (const auto& stream : run->streams) streams.push_back(stream.get());
  for (Stream* stream : streams) {
    stream->OnDone([run](absl::Status) {
      if (run->pending_streams.fetch_sub(1) == 1) Finish(run);
    });
  }
  // The run's work starts; the views live at least until the count held
  // here is given back.
  for (Stream* stream : streams) stream->EndBatch();
  if (run->pending_streams.fetch_sub(1) == 1) Finish(std::move(run));
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

  if (absl::Status s = CheckRunnable(run->request); !s.ok()) {
    FailEarly(run, s);
    return;
  }
  PickReplica(*run);
  if (absl::Status s = OpenStreams(*run); !s.ok()) {
    FailEarly(run, s);
    return;
  }
  if (absl::Status s = CheckOutputsRouted(*run); !s.ok()) {
    FailEarly(run, s);
    return;
  }
  StartClocks(*run);
  StartProfile(*run);
  {
    Replica& replica = *run->replica;
    absl::MutexLock lock(&replica.ring_mu);
    TakeEntries(replica, *run);
    EnqueuePartitions(*run);
    EnqueueOutputs(*run);
  }
  StopClocks(*run);
  TraceEnqueue(*run, enqueue_start);
  ArmCompletion(std::move(run));
}

}  // namespace glint
