// HostManager: the one entry point of the Glint runtime, used in-process by
// embedding programs and behind gRPC by glintd.
//
// AddNetwork imports an ONNX model, partitions it into a DAG of
// sub-functions, provisions them onto devices and keeps the result;
// RunNetwork executes a network on the devices. See docs/ARCHITECTURE.md.
//
// Thread-safe: every method may be called concurrently.
#ifndef GLINT_RUNTIME_HOST_MANAGER_H_
#define GLINT_RUNTIME_HOST_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/cancellation.h"
#include "core/device_info.h"
#include "core/graph.h"
#include "core/model_bytes.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "onnx/onnx_importer.h"
#include "runtime/journal.h"
#include "runtime/statistics.h"

namespace glint {

class AdmissionQueue;
class BatchTimer;
class Batcher;
class DeviceManager;
class DeviceMonitor;
class NetworkBuilder;
class Executor;
struct ExecutionRequest;
struct RunMeasures;
struct RunTimings;
struct ExecutableNetwork;
struct NetworkEntry;

struct HostManagerOptions {
  // Runs executing at once; further runs wait in the queue.
  int max_active_requests = 64;
  // Runs waiting for a slot; beyond it RunNetwork fails fast with
  // RESOURCE_EXHAUSTED rather than blocking.
  int max_queue_size = 1024;
  // The admission queue orders waiting runs by RunOptions::priority (larger
  // first), first come first served among equals, and a waiting run ages
  // by one priority every `priority_aging` admissions so that urgent runs
  // cannot starve the others (see AdmissionOptions in runtime/admission.h).
  // Must be >= 1.
  int priority_aging = 16;
  // Executions of each partition of a network (per replica, and per batch
  // size's plan with dynamic batching) that may be in flight at once, at
  // most. Their device memory is reserved when the network is added: as
  // many as fit, at least one, and beyond the first no more than half of
  // what a device has left (provisioner/provisioner.h ReserveExecutions).
  // A run holds one only while it is on that partition, so a pipeline
  // keeps a run on every stage. A network admits as many runs as its
  // partitions' executions sum to; further runs wait in the admission
  // queue for one to end, so a run admitted never fails for device memory
  // that other runs hold. Must be >= 1.
  int max_concurrent_executions = 8;
  // Where AddNetwork runs ONNX's checker and shape inference (see
  // ImportOptions::run_inference). Unset: in this process, trusting every
  // model; glintd runs them in a helper process (onnx/import_sandbox.h).
  InferenceRunner run_onnx_inference;
  // Where added networks are recorded to survive restarts; borrowed, must
  // outlive the HostManager. Unset: networks live as long as the process.
  NetworkJournal* journal = nullptr;
};

using RunCallback =
    std::function<void(absl::StatusOr<std::vector<NamedTensor>>)>;

class HostManager {
 public:
  // Takes ownership of `devices`, which must be initialised and distinct.
  // INVALID_ARGUMENT for nonsensical options or no device.
  static absl::StatusOr<std::unique_ptr<HostManager>> Create(
      HostManagerOptions options,
      std::vector<std::unique_ptr<DeviceManager>> devices);

  // Convenience: creates the devices from `configs` through the device
  // registry (NOT_FOUND for an unregistered type), then Create().
  static absl::StatusOr<std::unique_ptr<HostManager>> CreateFromConfigs(
      HostManagerOptions options, const std::vector<DeviceConfig>& configs);

  // Waits for in-flight runs, then releases every network and device.
  ~HostManager();

  HostManager(const HostManager&) = delete;
  HostManager& operator=(const HostManager&) = delete;

  // Errors: INVALID_ARGUMENT (empty name, malformed model, bad options),
  // UNIMPLEMENTED (an op or dtype Glint does not support; names op and
  // node), ALREADY_EXISTS (name taken), RESOURCE_EXHAUSTED (does not fit the
  // devices). A failed AddNetwork leaves no trace. `onnx_model` is bytes in
  // memory or a mapped file (core/model_bytes.h), whose pages the add drops
  // after each pass over them (its digest, the parse, the journal's copy)
  // so that the model is not resident beside what is built from it.
  absl::StatusOr<NetworkInfo> AddNetwork(absl::string_view name,
                                         const ModelBytes& onnx_model,
                                         const AddNetworkOptions& options);
  // AddNetwork of the ONNX file at `path`, mapped rather than read
  // (ModelBytes::MapFile; its errors too, e.g. NOT_FOUND); a path that is
  // not a regular file (a pipe) is read whole instead. The file must not
  // change until this returns (a file truncated while mapped faults the
  // process, as any mapped file does).
  absl::StatusOr<NetworkInfo> AddNetworkFromFile(
      absl::string_view name, const std::string& path,
      const AddNetworkOptions& options);

  // AddNetwork for a network the journal already holds (glintd's restore
  // at start): not recorded again. If it cannot be added, it stays listed,
  // unavailable with the reason (see NetworkInfo::unavailable_reason), so
  // that an operator sees it and can remove it; the error is returned too.
  absl::StatusOr<NetworkInfo> RestoreNetwork(absl::string_view name,
                                             const ModelBytes& onnx_model,
                                             const AddNetworkOptions& options);

  // A network the journal holds but cannot give back (glintd's restore at
  // start, for a record whose contents are corrupt): listed, unavailable
  // with `reason`, as RestoreNetwork lists one that no longer imports, so
  // that it never vanishes silently; RemoveNetwork erases it. Its runs fail
  // UNAVAILABLE. INVALID_ARGUMENT for a name AddNetwork would refuse,
  // ALREADY_EXISTS for one taken.
  absl::Status RestoreUnavailable(absl::string_view name,
                                  absl::string_view reason)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Adds `name`, or replaces the network of that name that an earlier
  // ReplaceNetwork added, without a gap: the new one is built while the
  // old one serves (so both must fit the devices for a moment), then runs
  // arriving from that instant use the new one while those in flight
  // finish on the old one, which is evicted once they are done (this call
  // waits for that). A failure (AddNetwork's codes) leaves the old one
  // serving untouched. Not journaled: for networks whose durable source is
  // elsewhere (glintd's --model_repository); RemoveNetwork removes them
  // like any other. ALREADY_EXISTS for a name taken by AddNetwork while a
  // journal is set, or being added or removed right now. The statistics
  // start afresh with the new network.
  absl::StatusOr<NetworkInfo> ReplaceNetwork(absl::string_view name,
                                             const ModelBytes& onnx_model,
                                             const AddNetworkOptions& options);

  // NOT_FOUND if unknown. Waits for the network's in-flight runs to finish;
  // runs arriving meanwhile fail with NOT_FOUND. With a journal, the
  // network is erased from it first; if that fails, it keeps serving.
  absl::Status RemoveNetwork(absl::string_view name);

  std::vector<NetworkInfo> ListNetworks() const;  // Sorted by name.
  absl::StatusOr<NetworkInfo> GetNetwork(absl::string_view name) const;

  // Runs `name` on `inputs` (each graph input exactly once, by name, with
  // the declared dtype and shape; else INVALID_ARGUMENT naming the input and
  // what was expected). `done` is called exactly once, possibly on another
  // thread, possibly before RunNetworkAsync returns. A network added with
  // dynamic batching takes 1..max_batch_size rows (the same number for
  // every input) and answers with as many; its runs are merged with others
  // (runtime/batcher.h). Runs waiting for admission go by
  // RunOptions::priority (see HostManagerOptions::priority_aging).
  void RunNetworkAsync(absl::string_view name, std::vector<NamedTensor> inputs,
                       const RunOptions& options, RunCallback done);
  // Blocking helper over RunNetworkAsync.
  absl::StatusOr<std::vector<NamedTensor>> RunNetwork(
      absl::string_view name, std::vector<NamedTensor> inputs,
      const RunOptions& options = {});

  std::vector<DeviceInfo> GetDevices() const;

  // Serving statistics of a network since it was added (see
  // NetworkStatistics in api/types.h): counts of answered requests and
  // executions, the durations of requests (successful and failed), of the
  // admission queue and of the input, compute and output phases on the
  // devices (of successful requests), the queue depth and runs in flight
  // now, and each partition's compute. Requests for a network not (or no
  // longer) added leave no trace. Cheap to call while serving: it never
  // blocks a run. NOT_FOUND if unknown.
  absl::StatusOr<NetworkStatistics> GetStatistics(absl::string_view name) const;
  // Every network's, sorted by name.
  std::vector<NetworkStatistics> GetAllStatistics() const;
  // Every device's, in GetDevices() order: its launches (of successful
  // runs) since the HostManager started, and its state now.
  std::vector<DeviceStatistics> GetDeviceStatistics() const;

  // Refuses new runs and adds (UNAVAILABLE), fails the queued runs, stops
  // the in-flight ones before their next launch or copy (UNAVAILABLE; a
  // partition already computing finishes) and waits for them. Called by
  // glintd on SIGINT/SIGTERM; idempotent.
  void Shutdown();

  // Cancelled when Shutdown begins, for work outside runs that should stop
  // then too (glintd's import helpers).
  std::shared_ptr<const CancellationToken> shutdown_token() const {
    return shutdown_token_;
  }

 private:
  HostManager(HostManagerOptions options,
              std::vector<std::unique_ptr<DeviceManager>> devices);

  // AddNetwork (journaled), RestoreNetwork (in the journal already) and
  // ReplaceNetwork (no journal; replaces a network it added).
  enum class AddMode { kAdd, kRestore, kReplace };
  absl::StatusOr<NetworkInfo> Add(absl::string_view name,
                                  const ModelBytes& onnx_model,
                                  const AddNetworkOptions& options,
                                  AddMode mode) ABSL_LOCKS_EXCLUDED(mu_);
  // Add's steps. Reserves `name` in adding_ (ALREADY_EXISTS when taken as
  // `mode` forbids, UNAVAILABLE when shutting down)...
  absl::Status Reserve(absl::string_view name, AddMode mode)
      ABSL_LOCKS_EXCLUDED(mu_);
  // ...then builds the network's entry (replaying the plan cache as the
  // options allow), not yet visible to runs. A plan made anew is left in
  // `new_plan` for Add to keep once the network is recorded.
  absl::StatusOr<std::shared_ptr<NetworkEntry>> BuildEntry(
      absl::string_view name, const ModelBytes& onnx_model,
      const AddNetworkOptions& options, AddMode mode,
      std::optional<CachedPlan>* new_plan) ABSL_LOCKS_EXCLUDED(mu_);

  // Device failure (the monitor's callback): re-provisions every network
  // with a partition on a `dead` device onto the healthy ones (fewer
  // replicas if all do not fit, runtime/reprovision.h), swapping it in
  // under its runs; a network that fits nowhere becomes unavailable,
  // saying why.
  void ReprovisionOnto(const std::vector<const DeviceManager*>& dead,
                       const std::string& names) ABSL_LOCKS_EXCLUDED(mu_);
  void Reprovision(const std::shared_ptr<NetworkEntry>& entry,
                   const std::string& failed_device) ABSL_LOCKS_EXCLUDED(mu_);

  // RunNetworkAsync's steps (find the network, check the inputs, admit,
  // start the run, finish it; the middle ones are in host_manager.cc).
  //
  // Finds the network `name` for a run. When it can run, counts the run in
  // flight on it, sets `*executable` to the run's reference to its plan
  // (see NetworkEntry::executable) and returns it. When every replica sits
  // on a dead device, parks `park()` (made only then) to start the run
  // again once the network is re-provisioned, asks for a device check and
  // returns null. Errors: UNAVAILABLE (shutting down, or the network is
  // unavailable), NOT_FOUND.
  absl::StatusOr<std::shared_ptr<NetworkEntry>> FindNetworkForRun(
      absl::string_view name, std::shared_ptr<ExecutableNetwork>* executable,
      absl::FunctionRef<std::function<void()>()> park)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Ends a run found by FindNetworkForRun: names its outputs (`outputs`
  // indexes the network's), records its statistics (`measures`), lets go of
  // the network, frees its admission slot if it was `started`, asks for a
  // device check if it failed UNAVAILABLE, and calls `done`.
  void FinishRun(NetworkEntry& entry,
                 std::shared_ptr<ExecutableNetwork>& executable,
                 const std::vector<int>& outputs,
                 absl::StatusOr<std::vector<Tensor>> result, bool started,
                 const RunMeasures& measures, const RunCallback& done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // RunNetworkAsync's path for a batching network, from step 3 (the request
  // is checked): queues it in the network's batcher
  // (runtime/network_batcher.h).
  void EnqueueBatched(std::shared_ptr<NetworkEntry> entry,
                      std::shared_ptr<std::shared_ptr<ExecutableNetwork>>
                          executable,
                      std::shared_ptr<ExecutionRequest> request,
                      std::shared_ptr<RunMeasures> measures, int priority,
                      RunCallback done);

  const HostManagerOptions options_;
  const std::vector<std::unique_ptr<DeviceManager>> devices_;
  // The parts (see each header).
  const std::unique_ptr<NetworkBuilder> builder_;
  const std::unique_ptr<Executor> executor_;
  const std::unique_ptr<AdmissionQueue> admission_;
  // Launches per device (of successful runs and batches).
  DeviceComputeStats device_compute_;

  // Lock order: mu_, then a NetworkEntry's mu. The parts' locks are never
  // held while these are taken.
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<NetworkEntry>> networks_
      ABSL_GUARDED_BY(mu_);
  // Names being added or removed: reserved so that a concurrent add or
  // remove of the same name fails.
  absl::flat_hash_map<std::string, bool> adding_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  const std::shared_ptr<CancellationToken> shutdown_token_ =
      std::make_shared<CancellationToken>();

  // Wakes the batchers of networks with dynamic batching (one thread for
  // all, started by the first that waits). Destroyed (its thread joined)
  // by the destructor before anything a batcher's wake-up could touch.
  std::unique_ptr<BatchTimer> batch_timer_;
  // Started by the constructor, once everything its callback uses exists;
  // stopped by the destructor first.
  std::unique_ptr<DeviceMonitor> monitor_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_HOST_MANAGER_H_
